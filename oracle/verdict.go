// Package oracle judges a schedule's run: the verdicts a run can end with, the comparison of
// the replicas' data that decides between pass and fail, and the tally of verdicts that run,
// results, replay and the report share. It knows nothing of how a run is made: the executor,
// the report, the results store and the conformance suite all import it.
package oracle

import (
	"fmt"
	"strings"
)

// Verdict is what a schedule's run concluded.
type Verdict string

// The verdicts.
const (
	// Pass: every replica holds the same data.
	Pass Verdict = "pass"
	// Fail: the replicas differ, or one could not be read: a convergence failure.
	Fail Verdict = "fail"
	// Incomplete: the cluster never reached the state a step needed before its deadline.
	Incomplete Verdict = "incomplete"
	// Error: a fault of the harness, such as a dead plugin or a busy port.
	Error Verdict = "error"
	// Unrealisable: the plugin cannot make its system do what a step asks, a schedule the
	// model allows and this realisation cannot give; neither the system's failure nor the
	// harness's, and never retried as an error.
	Unrealisable Verdict = "unrealisable"
)

// Verdicts lists the verdicts, the most telling first.
var Verdicts = []Verdict{Fail, Pass, Incomplete, Error, Unrealisable}

// Tally counts verdicts.
type Tally struct{ Pass, Fail, Incomplete, Error, Unrealisable int }

// Add counts one verdict; anything that is not one of the others counts as an error.
func (t *Tally) Add(v Verdict) {
	switch v {
	case Pass:
		t.Pass++
	case Fail:
		t.Fail++
	case Incomplete:
		t.Incomplete++
	case Unrealisable:
		t.Unrealisable++
	default:
		t.Error++
	}
}

// Of returns the count of verdict v.
func (t Tally) Of(v Verdict) int {
	switch v {
	case Pass:
		return t.Pass
	case Fail:
		return t.Fail
	case Incomplete:
		return t.Incomplete
	case Unrealisable:
		return t.Unrealisable
	}
	return t.Error
}

// Total is how many verdicts were counted.
func (t Tally) Total() int { return t.Pass + t.Fail + t.Incomplete + t.Error + t.Unrealisable }

// UnrealisableSuffix is what a line that counts pass, fail, incomplete and error adds for the
// unrealisable schedules: ", unrealisable N" (sep between the name and the count), or nothing
// when there are none, as a realisation that gives every schedule has none.
func (t Tally) UnrealisableSuffix(sep string) string {
	if t.Unrealisable == 0 {
		return ""
	}
	return fmt.Sprintf(", unrealisable%s%d", sep, t.Unrealisable)
}

// String names the verdicts counted, the most telling first: "fail 2, pass 1", or "no verdict".
func (t Tally) String() string {
	var parts []string
	for _, v := range Verdicts {
		if n := t.Of(v); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, n))
		}
	}
	if len(parts) == 0 {
		return "no verdict"
	}
	return strings.Join(parts, ", ")
}
