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
	// Nonconformant: after a step the cluster was not where the model has it, through the
	// realisation's doing (a server running that the model has down, a write that reached a
	// replica the model keeps it from): modulo's fault, with the check that caught it, counted
	// apart from the system's fails and never a finding.
	Nonconformant Verdict = "nonconformant"
)

// Verdicts lists the verdicts, the most telling first.
var Verdicts = []Verdict{Fail, Pass, Incomplete, Error, Nonconformant, Unrealisable}

// Tally counts verdicts.
type Tally struct{ Pass, Fail, Incomplete, Error, Nonconformant, Unrealisable int }

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
	case Nonconformant:
		t.Nonconformant++
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
	case Nonconformant:
		return t.Nonconformant
	}
	return t.Error
}

// Total is how many verdicts were counted.
func (t Tally) Total() int {
	return t.Pass + t.Fail + t.Incomplete + t.Error + t.Nonconformant + t.Unrealisable
}

// Apart is what a line that counts pass, fail, incomplete and error adds for the verdicts that
// are neither the system's nor the harness's errors: ", nonconformant N, unrealisable M" (sep
// between a name and its count), each only when there are some, as a realisation that conforms
// and gives every schedule has none.
func (t Tally) Apart(sep string) string {
	var b strings.Builder
	for _, v := range []Verdict{Nonconformant, Unrealisable} {
		if n := t.Of(v); n > 0 {
			fmt.Fprintf(&b, ", %s%s%d", v, sep, n)
		}
	}
	return b.String()
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
