package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/oracle"
)

func TestMainCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"no error", nil, ExitOK},
		{"cobra's own (not marked)", errors.New(`unknown command "frob" for "modulo"`), ExitUsage},
		{"a command's plain error", &RanError{Err: errors.New("disk full")}, ExitUsage},
		{"a command's usage error", &RanError{Err: Usagef("bad file")}, ExitUsage},
		{"a command's incomplete", &RanError{Err: &ExitError{Code: ExitIncomplete, Err: errors.New("1 incomplete")}}, ExitIncomplete},
		{"a set-up problem", &RanError{Err: fmt.Errorf("prepare: %w", &executor.SetupError{Err: errors.New("no plugin")})}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MainCode(tt.err); got != tt.want {
				t.Errorf("MainCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		code int
		msg  string
	}{
		{"all passed", Outcome{Tally: oracle.Tally{Pass: 2}, Noun: "run"}, ExitOK, ""},
		{"a fail wins", Outcome{Tally: oracle.Tally{Fail: 1, Error: 1}, Noun: "schedule", See: "F"}, ExitFailed, "1 of 2 schedules failed to converge: see F"},
		{"missing runs", Outcome{Tally: oracle.Tally{Pass: 1}, Noun: "run", Missing: 1, NotRun: "not made"}, ExitIncomplete, "no run failed, but 1 not made"},
		{"errors point at the records", Outcome{Tally: oracle.Tally{Error: 1}, Noun: "schedule", See: "F"}, ExitIncomplete, "no schedule failed, but 1 with errors: see F"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Err()
			if Code(err) != tt.code || err != nil && err.Error() != tt.msg {
				t.Errorf("Err() = %v (exit %d), want %q (exit %d)", err, Code(err), tt.msg, tt.code)
			}
		})
	}
}
