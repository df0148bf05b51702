package kit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/cem"
)

// brokenRepeats is how many times a replica's server must log a line that its system names as
// broken replication (LineKind.Broken), during one wait for it to sync, before the kit takes
// the system at its word: PostgreSQL logs "record with incorrect prev-link" once, harmlessly,
// where the WAL it recovered ends, and again and again only when it cannot follow its source.
const brokenRepeats = 3

// watchBroken returns a function that says which line the system names as broken replication
// r's server has logged brokenRepeats times since watchBroken was called ("" while none has):
// "KIND: logged TEXT N times, the last: LINE". Each call reads only what the server logged
// since the call before. Without such line kinds it always says "".
func (p *Plugin) watchBroken(r *Replica) (func() (string, error), error) {
	kinds := p.lineKinds(func(k LineKind) bool { return k.Broken })
	if len(kinds) == 0 {
		return func() (string, error) { return "", nil }, nil
	}
	from, err := logSize(r)
	if err != nil {
		return nil, err
	}
	count, last := make([]int, len(kinds)), make([]string, len(kinds))
	return func() (string, error) {
		lines, end, err := logLinesFrom(r, from)
		if err != nil {
			return "", err
		}
		from = end
		return repeatedLine(lines, kinds, count, last), nil
	}, nil
}

// repeatedLine counts in count, by kind, the lines of kinds among lines, and keeps the last
// of each in last; it says which kind has been logged brokenRepeats times ("" while none has):
// "KIND: logged TEXT N times, the last: LINE".
func repeatedLine(lines []string, kinds []LineKind, count []int, last []string) string {
	for _, line := range lines {
		for i, k := range kinds {
			if strings.Contains(line, k.Text) {
				count[i]++
				last[i] = strings.TrimSpace(line)
			}
		}
	}
	for i, k := range kinds {
		if count[i] >= brokenRepeats {
			return fmt.Sprintf("%s: logged %q %d times, the last: %s", k.Kind, k.Text, count[i], last[i])
		}
	}
	return ""
}

// lineKinds are the line kinds of the system's SyncLines that keep keeps; none for a system
// that names no lines.
func (p *Plugin) lineKinds(keep func(LineKind) bool) []LineKind {
	sl, ok := p.sys.(SyncLogger)
	if !ok {
		return nil
	}
	// A copy: DeleteFunc would write over a slice the system may keep.
	return slices.DeleteFunc(slices.Clone(sl.SyncLines()), func(k LineKind) bool { return !keep(k) })
}

// logSize is how many bytes r's server has logged so far.
func logSize(r *Replica) (int64, error) {
	fi, err := os.Stat(r.LogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s's log: %w", r.Name, err)
	}
	return fi.Size(), nil
}

// unrecoverable raises the alarm of a server that a convergence restarted and that exited
// before the cluster caught up: the system's failure to recover, not the harness's. The step
// ends there; the replica stays down, so a later step finds the cluster out of step.
func (p *Plugin) unrecoverable(r *Replica) {
	what := fmt.Sprintf("%s exited at its restart; its log says: %s", r.Name, exitEvidence(r))
	p.act(r, "unrecoverable: %s", what)
	p.alarms = append(p.alarms, cem.Alarm{Replica: p.abstractOf(r.Index), What: what, Unrecoverable: true})
}

// exitedAlarm is the alarm of a server that, during a step, exited of its own accord (an exit
// status, an abort, a crash) though the kit did not stop it: the system's failure, with its
// last error lines, where it would otherwise end the schedule as a harness error. None for
// any other error, or for a server that another process killed (exitedErr.ownAccord).
func (p *Plugin) exitedAlarm(err error) (cem.Alarm, bool) {
	var ee *exitedErr
	if !errors.As(err, &ee) || !ee.ownAccord() {
		return cem.Alarm{}, false
	}
	what := fmt.Sprintf("%s exited on its own (%v) during step %d; its log says: %s", ee.r.Name, ee.status, p.step+1, exitEvidence(ee.r))
	p.act(ee.r, "exited: %s", what)
	return cem.Alarm{Replica: p.abstractOf(ee.r.Index), What: what, Unrecoverable: true}, true
}

// exitEvidence is what an alarm quotes of a server that exited: the last three lines of its
// log that say why (ErrorLines).
func exitEvidence(r *Replica) string {
	return strings.Join(ErrorLines(lastLogLines(r.proc.LogPath, logLines), 3), " | ")
}

// ErrorLines returns the last n of lines that say why a server stopped (a plugin quotes with it
// the output of a system's tool that failed): those that report a
// fatal error (an exception's cause, a fatal line, a panic), else those that report an error,
// else the last n lines. A log of JSON lines names "error" in lines of every level (etcd's
// "failed to detect default host" at info), so the fatal ones come first; a line that says it
// is of a lower level (MariaDB's "[Warning] Aborted connection ... (Got an error reading
// communication packets)", logged after the server's real error) is none of them.
func ErrorLines(lines []string, n int) []string {
	var found []string
	for _, re := range []*regexp.Regexp{fatalLine, errorLine} {
		for _, l := range lines {
			if re.MatchString(l) && !lowerLevel.MatchString(l) {
				found = append(found, strings.TrimSpace(l))
			}
		}
		if len(found) > 0 {
			break
		}
	}
	if len(found) == 0 {
		found = lines
	}
	return found[max(0, len(found)-n):]
}

var (
	fatalLine = regexp.MustCompile(`(?i)caused by|fatal|panic`)
	errorLine = regexp.MustCompile(`(?i)error`)
	// lowerLevel is a line's own word that it is a warning, a note or information.
	lowerLevel = regexp.MustCompile(`\[(Warning|Note|Info)\]|"level":"(warn|info|debug)"`)
)

// brokenAlarm is the alarm that replication to r is broken, as its system said (what); no
// wait is made for r's link again until it changes.
func (p *Plugin) brokenAlarm(r *Replica, what string) cem.Alarm {
	r.broken = true
	p.act(r, "replication broken: %s", what)
	return cem.Alarm{Replica: p.abstractOf(r.Index), What: what, Broken: true}
}
