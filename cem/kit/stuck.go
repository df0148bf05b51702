package kit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
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
func (p *Plugin) deadlineAlarms(err error, next *aem.State, stuck, broken []LineKind, from map[int]int64) []cem.Alarm {
	var nr *cem.NotReachedError
	if !errors.As(err, &nr) {
		return nil
	}
	var alarms []cem.Alarm
	for _, r := range p.c.Replicas {
		if len(stuck)+len(broken) == 0 || !r.running() {
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
	if len(alarms) == 0 {
		alarms = p.stalled(nr, next)
	}
	return alarms
}

// stalled asks a Staller, at the deadline of a step's wait (nr), whether the system says it is
// making no progress, when every replica the step brings online (next) is up: an alarm of class
// liveness on the first of them, naming the system's words and what the wait awaited.
func (p *Plugin) stalled(nr *cem.NotReachedError, next *aem.State) []cem.Alarm {
	st, ok := p.sys.(Staller)
	if !ok {
		return nil
	}
	var online []*Replica
	for a, on := range next.On {
		if !on {
			continue
		}
		r := p.replica(a)
		if !r.running() {
			return nil // a server is down: the system cannot be at fault for waiting
		}
		online = append(online, r)
	}
	if len(online) == 0 {
		return nil
	}
	// The step's own context has ended; the question is a short one of its own.
	ctx, cancel := context.WithTimeout(context.Background(), stalledAsk)
	defer cancel()
	var what string
	err := p.call(ctx, "ask whether the system is stalled", func(ctx context.Context) (err error) {
		what, err = st.Stalled(ctx, p.c, online)
		return err
	})
	if err != nil {
		p.act(nil, "could not ask whether the system is stalled: %v", err)
		return nil
	}
	if what == "" {
		return nil
	}
	what = fmt.Sprintf("every online server up, %s, and the step's wait ended at its deadline: %s", what, nr.Awaited)
	p.act(nil, "stalled: %s", what)
	return []cem.Alarm{{Replica: p.abstractOf(online[0].Index), What: what, Stuck: true}}
}

// stalledAsk bounds the question to a Staller at a step's deadline.
const stalledAsk = 10 * time.Second

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
