package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/modulo-testing/modulo/oracle"
)

// Outcome is what a command that runs schedules ran: the verdicts it counted, for its exit
// status and last message.
type Outcome struct {
	Tally oracle.Tally
	// Noun is what was run: "schedule" (run), "run" (replay).
	Noun string
	// Missing counts what was to run and did not, described as NotRun ("not run", "not made").
	Missing int
	NotRun  string
	// See, when set, is where the records of what did not pass are kept.
	See string
}

// Err is the outcome's exit status as an error: 1 (ExitFailed) when something failed, 3
// (ExitIncomplete) when nothing failed but something was incomplete, an error or missing, nil
// when everything passed.
func (o Outcome) Err() error {
	t := o.Tally
	see := ""
	if o.See != "" {
		see = ": see " + o.See
	}
	if t.Fail > 0 {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d %ss failed to converge%s", t.Fail, t.Total(), o.Noun, see)}
	}
	var probs []string
	if t.Incomplete > 0 {
		probs = append(probs, fmt.Sprintf("%d incomplete", t.Incomplete))
	}
	if t.Error > 0 {
		probs = append(probs, fmt.Sprintf("%d with errors", t.Error))
	}
	if t.Nonconformant > 0 {
		probs = append(probs, fmt.Sprintf("%d where modulo's realisation left the model", t.Nonconformant))
	}
	if t.Unrealisable > 0 {
		probs = append(probs, fmt.Sprintf("%d the plugin cannot realise", t.Unrealisable))
	}
	if o.Missing > 0 {
		probs = append(probs, fmt.Sprintf("%d %s", o.Missing, o.NotRun))
	}
	if len(probs) == 0 {
		return nil
	}
	msg := "no " + o.Noun + " failed, but " + strings.Join(probs, ", ")
	if t.Incomplete+t.Error+t.Nonconformant+t.Unrealisable > 0 {
		msg += see
	}
	return &ExitError{Code: ExitIncomplete, Err: errors.New(msg)}
}
