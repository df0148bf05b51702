package rerun

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestRunRefuses checks what Run refuses before it starts anything; running schedules is
// tested on real clusters by `modulo replay` and `modulo shrink` (internal/cmd/shrink).
func TestRunRefuses(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no runs", Options{Repeat: 0, Dir: filepath.Join(t.TempDir(), "r")}, "repeat 0 times: must be at least 1"},
		{"a directory in use", Options{Repeat: 1, Dir: used}, "file exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Setup{}, h, all[0], tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), all[0].ID) {
				t.Fatalf("error = %v, want one naming %s and containing %q", err, all[0].ID, tt.want)
			}
		})
	}
}

// TestCourse: a run is on the recorded course after a step while its observations of the
// course's fields equal the recorded ones for that step (a term or a plugin's own field may
// differ); a step the recorded run observed nothing after keeps it on.
func TestCourse(t *testing.T) {
	recorded := []results.StepObservations{{Step: 1, Replicas: []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "SST"}}}}}
	follow := course(recorded)
	tests := []struct {
		name string
		step int
		got  []cem.Observation
		left bool
	}{
		{"the same", 1, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "SST"}}}, false},
		{"another sync", 1, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "SST,IST"}}}, true},
		{"a replica more", 1, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "SST"}}, {Replica: 1, Fields: map[string]string{"sync": "IST"}}}, true},
		{"a step not observed then", 0, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "FULL"}}}, false},
		{"another term and a plugin's own field", 1, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "SST", "epoch": "7", "meta": "nats-2"}}}, false},
		{"another role", 1, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "SST", "role": "leader"}}}, true},
	}
	for _, tt := range tests {
		d := follow(tt.step, tt.got)
		if (d != "") != tt.left {
			t.Errorf("%s: %q, want left the course %v", tt.name, d, tt.left)
		}
	}
	r := Result{Records: []results.Record{{Verdict: "fail"}, {Verdict: "incomplete", Departed: "step 1: ..."}, {Verdict: "pass"}}}
	on := r.OnCourse()
	if len(on.Records) != 2 || on.Count("fail") != 1 || on.Count("incomplete") != 0 || len(r.Records) != 3 {
		t.Errorf("on course %d, fail %d, incomplete %d, all %d; want 2, 1, 0, 3", len(on.Records), on.Count("fail"), on.Count("incomplete"), len(r.Records))
	}
}

// plainPlugin is a plugin that does nothing, and restorer one that restores too: what show
// wraps, calls to neither are made.
type plainPlugin struct{ executor.Plugin }

type restorer struct {
	plainPlugin
	cem.Restorer
}

// TestShowKeepsRestorer: the plugin replay shows keeps restoring saved prefixes where the
// plugin can (replay --from-prefix restores through a cem.Restorer), and gains nothing where it
// cannot.
func TestShowKeepsRestorer(t *testing.T) {
	for _, tt := range []struct {
		name     string
		p        executor.Plugin
		restores bool
	}{
		{"restores", restorer{}, true},
		{"does not", plainPlugin{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := show(tt.p, io.Discard, true).(cem.Restorer); ok != tt.restores {
				t.Errorf("shown plugin restores: %v, want %v", ok, tt.restores)
			}
		})
	}
}
