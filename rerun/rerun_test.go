package rerun

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestRunRefuses checks what Run refuses before it starts anything; running schedules is
// tested on real clusters by `modulo replay` and `modulo shrink` (internal/cmd/shrink), and
// on an in-memory plugin by TestRunKeepsPasses.
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
		{"a step not observed then", 2, []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": "FULL"}}}, false},
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

// memPlugin is a plugin whose cluster is one log file and one map per replica, in memory: no
// process, no port. Every step writes one key to every replica, so that every run passes.
type memPlugin struct {
	dir  string
	data []map[string]string
}

func (p *memPlugin) Info(context.Context, []byte) (cem.Info, error) { return memInfo, nil }

var memInfo = cem.Info{Name: "mem", Version: "1", ServerVersion: "mem 1",
	Capabilities: cem.Capabilities{DRMs: []string{"ssr"}, PortsPerReplica: 1}}

func (p *memPlugin) Start(_ context.Context, spec cem.ClusterSpec) error {
	p.dir, p.data = spec.Dir, make([]map[string]string, spec.Replicas)
	for i := range p.data {
		p.data[i] = map[string]string{}
	}
	return os.WriteFile(filepath.Join(spec.Dir, "replica0.log"), []byte("ready\n"), 0o644)
}

func (p *memPlugin) Apply(_ context.Context, step cem.Step) (cem.StepReport, error) {
	key := fmt.Sprintf("key:%d", step.Index+1)
	for _, d := range p.data {
		d[key] = "v"
	}
	return cem.StepReport{
		Actions: []cem.Action{{Time: time.Now(), Replica: -1, What: "realise " + step.Transition}},
		Writes:  []cem.Write{{Key: key, Value: "v"}},
	}, nil
}

func (p *memPlugin) Read(context.Context) (cem.Snapshot, error) {
	var snap cem.Snapshot
	for _, d := range p.data {
		snap.Replicas = append(snap.Replicas, cem.ReplicaData{Data: maps.Clone(d)})
	}
	return snap, nil
}

func (p *memPlugin) Teardown(context.Context) error { return nil }
func (p *memPlugin) Exited() bool                   { return false }
func (p *memPlugin) Close() error                   { return nil }

// TestRunKeepsPasses: a run that passes keeps its actions, data and logs in its directory's
// passes/<ID>/ when Setup.KeepPasses says so (replay --keep), and only its record otherwise.
func TestRunKeepsPasses(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	s := all[0]
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep %v", keep), func(t *testing.T) {
			setup := Setup{
				Info: memInfo, Launch: func(context.Context) (executor.Plugin, error) { return &memPlugin{}, nil },
				BasePort: plugintest.ReservePorts(t, h.Params.Replicas), StepTimeout: time.Second, KeepPasses: keep,
			}
			dir := filepath.Join(t.TempDir(), "runs")
			res, err := Run(context.Background(), setup, h, s, Options{Repeat: 1, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) != 1 || res.Records[0].Verdict != oracle.Pass {
				t.Fatalf("records %+v, want one pass", res.Records)
			}
			folder := filepath.Join(dir, "1", results.PassesDir, s.ID)
			for _, name := range []string{results.ActionsText, results.ReplicasJSON, filepath.Join(results.LogsDir, "replica0.log")} {
				if _, err := os.Stat(filepath.Join(folder, name)); (err == nil) != keep {
					t.Errorf("%s kept: %v, want %v", name, err, keep)
				}
			}
		})
	}
}
