package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/rerun"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// campaign is a real campaign recorded in results/testdata (see its README).
const campaign = "../../../results/testdata/campaigns/slr-2x3-broken"

func TestNewCmd(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(*Options) bool
	}{
		{"defaults", []string{"dir", "0123456789abcdef"}, func(o *Options) bool {
			return o.Dir == "dir" && o.ID == "0123456789abcdef" && o.Repeat == 1 && o.ConfigFile == "" &&
				o.PluginDir == nil && o.BasePort == nil && o.StepTimeout == nil && o.Context != nil && o.ErrOut != nil
		}},
		{"every flag", []string{"dir", "id", "--repeat", "5", "--config", "m.toml", "--plugin-dir", "bin", "--base-port", "30000", "--step-timeout", "5s"}, func(o *Options) bool {
			return o.Repeat == 5 && o.ConfigFile == "m.toml" && *o.PluginDir == "bin" && *o.BasePort == 30000 && *o.StepTimeout == 5*time.Second
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *Options
			cmd := NewCmd(&bytes.Buffer{}, func(o *Options) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Errorf("options %+v", got)
			}
		})
	}
}

// TestRunBadInput checks what is refused before any plugin starts: each a usage error in one
// line that names the problem.
func TestRunBadInput(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty) // no plugin on $PATH
	edited := t.TempDir()
	if err := os.CopyFS(edited, os.DirFS(campaign)); err != nil {
		t.Fatal(err)
	}
	sched := filepath.Join(edited, results.FailuresDir, "0b98d909dcdb6ee8", results.ScheduleText)
	b, err := os.ReadFile(sched)
	if err != nil {
		t.Fatal(err)
	}
	// The same ID over another schedule of the model: not what was recorded.
	b = []byte(strings.Replace(string(b), "C[0,2]<2,0,->", "C[0,2]<-,0,0>", 1))
	otherID := schedules.ID("slr", aem.Params{Ops: 2, Replicas: 3}, []byte("D[1,1,0] C[0,2]<-,0,0> D[1,1,0] C[0,2]<-,0,0>"))
	if err := os.WriteFile(sched, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A campaign whose records observed nothing, as those of a plugin that observes nothing.
	unobserved := t.TempDir()
	if err := os.CopyFS(unobserved, os.DirFS(campaign)); err != nil {
		t.Fatal(err)
	}
	recs, err := results.ReadRecords(filepath.Join(unobserved, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range recs {
		r.Observations = nil
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
	}
	if err := os.WriteFile(filepath.Join(unobserved, results.RecordsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
		code int
	}{
		{"repeat 0", Options{Dir: campaign, ID: "0b98d909dcdb6ee8"}, "--repeat must be at least 1, got 0", cmdutil.ExitUsage},
		{"tries without follow", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", Repeat: 1, Tries: 4}, "--tries bounds the runs of --follow: add --follow, or drop --tries", cmdutil.ExitUsage},
		{"follow and keep", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", Repeat: 1, Follow: true, Keep: true}, "--keep keeps the cluster of one run: drop --follow", cmdutil.ExitUsage},
		{"fewer tries than runs", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", Repeat: 3, Follow: true, Tries: 2}, "--tries 2 is fewer than the 3 runs --repeat asks to follow the course", cmdutil.ExitUsage},
		{"nothing observed to follow", Options{Dir: unobserved, ID: "0b98d909dcdb6ee8", Repeat: 1, Follow: true},
			"--follow follows the observations of the recorded run, and schedule 0b98d909dcdb6ee8's record has none (its plugin observes nothing)", cmdutil.ExitUsage},
		{"from a prefix the run did not restore", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", Repeat: 1, FromPrefix: true},
			"--from-prefix restores the prefix the recorded run restored, and schedule 0b98d909dcdb6ee8's run started afresh: drop --from-prefix", cmdutil.ExitUsage},
		{"not a campaign", Options{Dir: empty, ID: "0b98d909dcdb6ee8", Repeat: 1}, empty + ": not a campaign's results directory: no campaign.json", cmdutil.ExitUsage},
		{"unknown ID", Options{Dir: campaign, ID: "ffffffffffffffff", Repeat: 1},
			campaign + ": no schedule ffffffffffffffff was recorded ('modulo results " + campaign + "' lists those that did not pass)", cmdutil.ExitUsage},
		{"edited folder", Options{Dir: edited, ID: "0b98d909dcdb6ee8", Repeat: 1},
			"schedule 0b98d909dcdb6ee8: its transitions have ID " + otherID + ": edited by hand?", cmdutil.ExitUsage},
		{"no plugin", Options{Dir: campaign, ID: "0b98d909dcdb6ee8", Repeat: 1, Settings: cmdutil.Settings{Overrides: config.Overrides{PluginDir: &empty}}},
			"plugin modulo-plugin-redis not found in plugin_dir " + empty, cmdutil.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out, tt.opts.ErrOut = &out, &out
			err := Run(&tt.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error = %v\nwant    %s", err, tt.want)
			}
			if code := cmdutil.Code(err); code != tt.code {
				t.Errorf("exit status %d, want %d", code, tt.code)
			}
			if out.Len() != 0 {
				t.Errorf("output %q", out.String())
			}
		})
	}
}

// TestExplainRestoredRun: a replay whose verdict differs from a run that restored a shared
// prefix says that the recorded run restored it and that the replay ran every step, unless the
// replay restored it too.
func TestExplainRestoredRun(t *testing.T) {
	recorded := results.Record{ID: "9f04dcda77776788", Verdict: oracle.Fail, Class: oracle.Diverged,
		Restored: &results.Restored{Steps: 3, From: "e244af80baa7ba59", Digest: "bca54e48"}}
	target := &rerun.Target{Summary: &results.Summary{Latest: []results.Record{recorded}}, Schedule: schedules.Schedule{ID: recorded.ID}}
	tests := []struct {
		name    string
		replays []results.Record
		want    string
	}{
		{"same verdict", []results.Record{{Verdict: oracle.Fail, Class: oracle.Diverged}}, ""},
		{"other verdict", []results.Record{{Verdict: oracle.Fail, Class: oracle.Diverged}, {Verdict: oracle.Pass}},
			"the recorded run restored its first 3 steps from the cluster that schedule e244af80baa7ba59's run saved (sha256 bca54e48); a replay runs every step from scratch, unless --from-prefix restores that cluster\n"},
		{"other verdict, restored too (--from-prefix)", []results.Record{{Verdict: oracle.Pass, Restored: recorded.Restored}}, ""},
	}
	for _, tt := range tests {
		var b strings.Builder
		explainDifferences(&b, target, tt.replays)
		if b.String() != tt.want {
			t.Errorf("%s: printed %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}

// TestHoldSaysWhereServersListen checks the --keep lines: a cluster in network namespaces is
// reached through each server's namespace, one on loopback at its ports.
func TestHoldSaysWhereServersListen(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "r0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r0", "redis"+proc.PidFileSuffix), []byte("4242 17\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kept       executor.Kept
		want, dont []string
	}{
		{"namespaces", executor.Kept{Dir: dir, Namespaces: true, BasePort: 20000, Ports: 3},
			[]string{"network namespace of its own", "redis: pid 4242", "nsenter --net=/proc/4242/ns/net"}, []string{"127.0.0.1", "20000"}},
		{"loopback", executor.Kept{Dir: dir, BasePort: 20000, Ports: 3},
			[]string{"on ports 20000-20002 of 127.0.0.1", "redis: pid 4242"}, []string{"nsenter", "namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Ctrl-C already pressed: hold returns once it has said where the servers are
			var out bytes.Buffer
			hold(ctx, &out, tt.kept)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("hold printed %q, want %q in it", out.String(), w)
				}
			}
			for _, d := range tt.dont {
				if strings.Contains(out.String(), d) {
					t.Errorf("hold printed %q, which should not say %q", out.String(), d)
				}
			}
		})
	}
}

// TestExplainOtherClass: a run that fails with another class than the recorded run says both
// classes, not "fail, not fail", and the first observation in which it departed.
func TestExplainOtherClass(t *testing.T) {
	obs := func(sync string) []results.StepObservations {
		return []results.StepObservations{{Step: 1, Replicas: []cem.Observation{{Replica: 0, Fields: map[string]string{"sync": sync}}}}}
	}
	recorded := results.Record{ID: "9f04dcda77776788", Verdict: oracle.Fail, Class: oracle.Diverged, Observations: obs("PARTIAL")}
	target := &rerun.Target{Summary: &results.Summary{Latest: []results.Record{recorded}}, Schedule: schedules.Schedule{ID: recorded.ID}}
	tests := []struct {
		name   string
		replay results.Record
		want   string
	}{
		{"another class", results.Record{Verdict: oracle.Fail, Class: oracle.LostWrite, Observations: obs("FULL")},
			"run 1: fail (lost-write), where the recorded run had fail (divergence): "},
		{"a pass", results.Record{Verdict: oracle.Pass, Observations: obs("FULL")},
			"run 1: pass, where the recorded run had fail (divergence): "},
		{"the same", results.Record{Verdict: oracle.Fail, Class: oracle.Diverged, Observations: obs("FULL")}, ""},
	}
	for _, tt := range tests {
		var b strings.Builder
		explainDifferences(&b, target, []results.Record{tt.replay})
		if !strings.HasPrefix(b.String(), tt.want) || (tt.want == "") != (b.Len() == 0) {
			t.Errorf("%s: printed %q, want it to begin %q", tt.name, b.String(), tt.want)
		}
		if tt.want != "" && !strings.Contains(b.String(), "PARTIAL") {
			t.Errorf("%s: printed %q, which does not say the recorded observation", tt.name, b.String())
		}
	}
}

// TestKeptFolder: a --keep run names where its actions, data and logs are: passes/ID/ for a
// pass, its failure folder for any other verdict.
func TestKeptFolder(t *testing.T) {
	const id = "9f04dcda77776788"
	tests := []struct {
		verdict oracle.Verdict
		want    string
	}{
		{oracle.Pass, filepath.Join("run", results.PassesDir, id)},
		{oracle.Fail, filepath.Join("run", results.FailuresDir, id)},
		{oracle.Incomplete, filepath.Join("run", results.FailuresDir, id)},
		{oracle.Error, filepath.Join("run", results.FailuresDir, id)},
	}
	for _, tt := range tests {
		if got := keptFolder("run", results.Record{ID: id, Verdict: tt.verdict}); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.verdict, got, tt.want)
		}
	}
}
