package run

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/oracle"
)

func TestProgressText(t *testing.T) {
	tests := []struct {
		name        string
		s           executor.Summary
		expectSkips int
		elapsed     time.Duration
		want        string
	}{
		{"nothing yet", executor.Summary{Total: 100}, 0, 0,
			"0/100 (0.0%), pass 0, fail 0, incomplete 0, error 0"},
		{"rate and ETA", executor.Summary{Total: 100, Tally: oracle.Tally{Pass: 18, Fail: 2}}, 0, 10 * time.Second,
			"20/100 (20.0%), 2.0/s, ETA 40s, pass 18, fail 2, incomplete 0, error 0"},
		{"slow runs count per minute", executor.Summary{Total: 10, Tally: oracle.Tally{Pass: 1, Incomplete: 1}}, 0, 4 * time.Minute,
			"2/10 (20.0%), 0.5/min, ETA 16m0s, pass 1, fail 0, incomplete 1, error 0"},
		{"skipped schedules take no time", executor.Summary{Total: 100, Tally: oracle.Tally{Pass: 30, Error: 10}, Skipped: 30}, 50, 10 * time.Second,
			"40/100 (40.0%), 1.0/s, ETA 40s, pass 30, fail 0, incomplete 0, error 10 (30 recorded before)"},
		{"only skips so far", executor.Summary{Total: 100, Tally: oracle.Tally{Pass: 30}, Skipped: 30}, 50, time.Second,
			"30/100 (30.0%), pass 30, fail 0, incomplete 0, error 0 (30 recorded before)"},
		{"done", executor.Summary{Total: 4, Tally: oracle.Tally{Pass: 4}}, 0, time.Second,
			"4/4 (100.0%), 4.0/s, ETA 0s, pass 4, fail 0, incomplete 0, error 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressText(tt.s, tt.expectSkips, tt.elapsed); got != tt.want {
				t.Errorf("progressText =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestBar(t *testing.T) {
	tests := []struct {
		s    executor.Summary
		want string
	}{
		{executor.Summary{Total: 10}, "[..............................]"},
		{executor.Summary{Total: 10, Tally: oracle.Tally{Pass: 5}}, "[###############...............]"},
		{executor.Summary{Total: 3, Tally: oracle.Tally{Fail: 3}}, "[##############################]"},
		{executor.Summary{}, "[##############################]"},
	}
	for _, tt := range tests {
		if got := bar(tt.s); got != tt.want {
			t.Errorf("bar(%+v) = %s, want %s", tt.s, got, tt.want)
		}
	}
}

// TestProgressTerminal checks that a message written during a run lands above the bar, which
// is redrawn after it, and that finish leaves the final bar on a line of its own.
func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true, 2)
	p.start(0)
	p.update(executor.Summary{Total: 2, Tally: oracle.Tally{Pass: 1}})
	if _, err := p.Write([]byte("plugin: warning\n")); err != nil {
		t.Fatal(err)
	}
	p.finish()
	out := b.String()
	const clear = "\r\033[K"
	want := clear + "[###############...............] 1/2 (50.0%)"
	if len(out) < len(want) || out[:len(want)] != want {
		t.Fatalf("output starts %q, want %q", out, want)
	}
	if !strings.Contains(out, clear+"plugin: warning\n"+clear+"[###############") {
		t.Errorf("message not written over the bar and the bar redrawn: %q", out)
	}
	if out[len(out)-1] != '\n' {
		t.Errorf("finish left no newline: %q", out)
	}
}
