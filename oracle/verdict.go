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

// The four verdicts.
const (
	// Pass: every replica holds the same data.
	Pass Verdict = "pass"
	// Fail: the replicas differ, or one could not be read: a convergence failure.
	Fail Verdict = "fail"
	// Incomplete: the cluster never reached the state a step needed before its deadline.
	Incomplete Verdict = "incomplete"
	// Error: a fault of the harness, such as a dead plugin or a busy port.
	Error Verdict = "error"
)

// Verdicts lists the four verdicts, the most telling first.
var Verdicts = []Verdict{Fail, Pass, Incomplete, Error}

// Tally counts verdicts.
type Tally struct{ Pass, Fail, Incomplete, Error int }

// Add counts one verdict; anything that is not pass, fail or incomplete counts as an error.
func (t *Tally) Add(v Verdict) {
	switch v {
	case Pass:
		t.Pass++
	case Fail:
		t.Fail++
	case Incomplete:
		t.Incomplete++
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
	}
	return t.Error
}

// Total is how many verdicts were counted.
func (t Tally) Total() int { return t.Pass + t.Fail + t.Incomplete + t.Error }

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
