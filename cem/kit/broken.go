package kit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
// "logged N times: <the last such line>". Without such line kinds it always says "".
func (p *Plugin) watchBroken(r *Replica) (func() (string, error), error) {
	sl, ok := p.sys.(SyncLogger)
	var kinds []LineKind
	if ok {
		for _, k := range sl.SyncLines() {
			if k.Broken {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return func() (string, error) { return "", nil }, nil
	}
	from, err := logSize(r)
	if err != nil {
		return nil, err
	}
	return func() (string, error) { return brokenSince(r, from, kinds) }, nil
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

// brokenSince reads r's log from byte offset from on, and names the first of kinds whose
// lines it holds brokenRepeats times or more, with the last of them; "" when none does.
func brokenSince(r *Replica, from int64, kinds []LineKind) (string, error) {
	f, err := os.Open(r.LogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s's log: %w", r.Name, err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return "", fmt.Errorf("%s's log: %w", r.Name, err)
	}
	count, last := make([]int, len(kinds)), make([]string, len(kinds))
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for i, k := range kinds {
			if strings.Contains(sc.Text(), k.Text) {
				count[i]++
				last[i] = strings.TrimSpace(sc.Text())
			}
		}
	}
	for i, k := range kinds {
		if count[i] >= brokenRepeats {
			return fmt.Sprintf("%s: logged %q %d times, the last: %s", k.Kind, k.Text, count[i], last[i]), nil
		}
	}
	return "", nil
}

// brokenAlarm raises the alarm that replication to r is broken, as its system said (what), for
// the step's report; no wait is made for r's link again until it changes.
func (p *Plugin) brokenAlarm(r *Replica, what string) {
	r.broken = true
	p.act(r, "replication broken: %s", what)
	p.alarms = append(p.alarms, cem.Alarm{Replica: p.abstractOf(r.Index), What: what, Broken: true})
}
