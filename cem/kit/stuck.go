package kit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/modulo-testing/modulo/cem"
)

// logSizes is how many bytes each replica's server has logged so far, by concrete index.
func (p *Plugin) logSizes() (map[int]int64, error) {
	sizes := map[int]int64{}
	for _, r := range p.c.Replicas {
		n, err := logSize(r)
		if err != nil {
			return nil, err
		}
		sizes[r.Index] = n
	}
	return sizes, nil
}

// deadlineAlarms says, for a step whose wait ended at its deadline (err a *cem.NotReachedError),
// which running servers said since from, in their logs, that the system cannot go on: a line
// the system names as stuck (LineKind.Stuck), once, or one it names as broken replication
// (LineKind.Broken) brokenRepeats times, wherever the wait was (a standby that never serves
// because it cannot follow its primary). One alarm each, naming the line and what the wait
// awaited. None for any other end of a step, or where no such line was logged.
func (p *Plugin) deadlineAlarms(err error, stuck, broken []LineKind, from map[int]int64) []cem.Alarm {
	var nr *cem.NotReachedError
	if len(stuck)+len(broken) == 0 || !errors.As(err, &nr) {
		return nil
	}
	var alarms []cem.Alarm
	for _, r := range p.c.Replicas {
		if !r.running() {
			continue
		}
		lines, _, lerr := logLinesFrom(r, from[r.Index])
		if lerr != nil {
			p.act(r, "its log cannot be read for the system's word that it cannot go on: %v", lerr)
			continue
		}
		if what := stuckLine(lines, stuck); what != "" {
			what = fmt.Sprintf("%s, up, logged %s, and the step's wait ended at its deadline: %s", r.Name, what, nr.Awaited)
			p.act(r, "stuck: %s", what)
			alarms = append(alarms, cem.Alarm{Replica: p.abstractOf(r.Index), What: what, Stuck: true})
			continue
		}
		if r.broken {
			continue // its alarm was raised while the kit waited for it to sync
		}
		if what := repeatedLine(lines, broken, make([]int, len(broken)), make([]string, len(broken))); what != "" {
			alarms = append(alarms, p.brokenAlarm(r, fmt.Sprintf("%s, and the step's wait ended at its deadline: %s", what, nr.Awaited)))
		}
	}
	return alarms
}

// stuckLine is the first of lines that contains the text of one of kinds: `KIND "LINE"`.
func stuckLine(lines []string, kinds []LineKind) string {
	for _, line := range lines {
		for _, k := range kinds {
			if strings.Contains(line, k.Text) {
				return fmt.Sprintf("%s %q", k.Kind, strings.TrimSpace(line))
			}
		}
	}
	return ""
}
