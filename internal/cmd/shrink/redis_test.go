package shrink_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/cmd/replay"
	"github.com/modulo-testing/modulo/internal/cmd/run"
	"github.com/modulo-testing/modulo/internal/cmd/shrink"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// These tests replay and shrink real failures on real redis-server clusters: a campaign runs
// S/L/R schedules (ops=2, 3 replicas) through the Redis plugin built from plugins/redis with
// its testing-only break_realisation = "skip-relink", which leaves recovering replicas
// unlinked, so that their replicas really end up with different data.

// campaignIDs are S/L/R ops=2 schedules on 3 replicas run by the campaign: three that the
// broken realisation makes fail (one of 5 steps, one whose divergence writes twice), and one it
// does not.
// stepTimeout bounds each step's wait. A replica the broken realisation leaves unlinked never
// receives what the plugin waits for after a convergence, so every such wait lasts this long;
// a correct step here takes well under a second.
const stepTimeout = 4 * time.Second

var campaignIDs = []string{"f7c59592e5c11b1d", "14d0a2cec64cc273", "579dccc2518cb440", "7c77ccb06bc366b1"}

// buildRedisPlugin builds plugins/redis as modulo-plugin-redis into a directory of t's; under
// -short it skips t, which runs redis-server.
func buildRedisPlugin(t *testing.T) string {
	t.Helper()
	plugintest.Servers(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	return plugintest.BuildPlugin(t, "redis", "github.com/modulo-testing/modulo/plugins/redis")
}

type env struct {
	dir, campaign string
	settings      cmdutil.Settings
	plain         string // a configuration file with no [redis] table: a correct realisation
}

// brokenCampaign runs campaignIDs with the broken realisation and returns where it is.
func brokenCampaign(t *testing.T) env {
	t.Helper()
	pluginDir := buildRedisPlugin(t)
	dir := t.TempDir()
	t.Cleanup(func() {
		if left := plugintest.ProcessesUnder(t, dir); len(left) > 0 {
			t.Errorf("processes left running:\n%s", strings.Join(left, "\n"))
		}
	})
	d, err := drms.Lookup("slr")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "slr.sched")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schedules.Generate(f, d, aem.Params{Ops: 2, Replicas: 3}, "modulo test", 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	broken, plain := filepath.Join(dir, "broken.toml"), filepath.Join(dir, "plain.toml")
	// Judged at the end, as the paper did: a skipped relink a later step heals is then a pass,
	// which the replay tests need as well as failures.
	for path, text := range map[string]string{broken: "check = \"end\"\n[redis]\nbreak_realisation = \"skip-relink\"\n", plain: "check = \"end\"\n# the plugin's defaults\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resultsDir, workers, timeout := filepath.Join(dir, "results"), 2, stepTimeout
	var out, errOut bytes.Buffer
	err = run.Run(&run.Options{Out: &out, ErrOut: &errOut, File: file, IDs: campaignIDs, ConfigFile: broken, Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: &workers, StepTimeout: &timeout}})
	if code := cmdutil.Code(err); code != cmdutil.ExitFailed {
		t.Fatalf("campaign: exit status %d (%v), want %d (failures)\n%s%s", code, err, cmdutil.ExitFailed, out.String(), errOut.String())
	}
	return env{
		dir: dir, campaign: filepath.Join(resultsDir, "slr"), plain: plain,
		settings: cmdutil.Settings{Overrides: config.Overrides{PluginDir: &pluginDir, StepTimeout: &timeout}},
	}
}

// failures returns the campaign's failures, longest first.
func failures(t *testing.T, e env) (*results.Summary, []results.Record) {
	t.Helper()
	s, err := results.ReadSummary(e.campaign)
	if err != nil {
		t.Fatal(err)
	}
	var fs []results.Record
	steps := map[string]int{}
	for _, r := range s.NotPassed() {
		if r.Verdict != oracle.Fail {
			t.Fatalf("schedule %s: %s (%s), want fail or pass", r.ID, r.Verdict, r.Detail)
		}
		steps[r.ID] = len(r.StepsMS)
		fs = append(fs, r)
	}
	if len(fs) < 2 || len(s.Latest) != len(campaignIDs) {
		t.Fatalf("%d failures of %d schedules: the broken realisation should fail at least 2", len(fs), len(s.Latest))
	}
	slices.SortStableFunc(fs, func(a, b results.Record) int { return steps[b.ID] - steps[a.ID] })
	return s, fs
}

// TestRedisReplay replays a real failure three times, printing every action, and finds that it
// reproduces every time; replayed with a correct realisation, it does not, and `modulo results`
// labels it flaky.
func TestRedisReplay(t *testing.T) {
	e := brokenCampaign(t)
	_, fs := failures(t, e)
	target, err := results.ReadFailure(e.campaign, fs[0].ID)
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	err = replay.Run(&replay.Options{Out: &out, ErrOut: &out, Dir: e.campaign, ID: fs[0].ID, Repeat: 3, Settings: e.settings})
	t.Logf("replay:\n%s", out.String())
	if code := cmdutil.Code(err); code != cmdutil.ExitFailed {
		t.Errorf("exit status %d (%v), want %d", code, err, cmdutil.ExitFailed)
	}
	text := out.String()
	for k := 1; k <= 3; k++ {
		if !strings.Contains(text, fmt.Sprintf("run %d of 3\n", k)) {
			t.Errorf("no run %d of 3", k)
		}
	}
	for i, st := range target.Schedule.Steps {
		if n := strings.Count(text, fmt.Sprintf("  step %d %s\n", i+1, st.String())); n != 3 {
			t.Errorf("step %d shown %d times, want 3", i+1, n)
		}
	}
	// The concrete actions, each with its time and replica, after the step that took them.
	actions := regexp.MustCompile(`(?m)^  step \d+ \S+\n(    \d\d:\d\d:\d\d\.\d{6}  replica \d+ +\S.*\n)+`)
	if n := len(actions.FindAllString(text, -1)); n < 3*len(target.Schedule.Steps)/2 {
		t.Errorf("%d steps shown with their actions in 3 runs of %d steps", n, len(target.Schedule.Steps))
	}
	if !strings.Contains(text, "REPLICAOF") || strings.Count(text, "  verdict: fail: ") != 3 {
		t.Errorf("output lacks the replication commands or the verdicts")
	}
	if !strings.HasSuffix(text, "reproduced fail in 3 of 3 runs (fail 3)\n") {
		t.Errorf("output does not end with the reproduction")
	}
	reps, err := results.ReadReproductions(e.campaign)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].ID != fs[0].ID || reps[0].Rate() != "3/3" || reps[0].By != "replay" {
		t.Fatalf("reproductions %+v", reps)
	}
	// Each run kept its own results, a failure folder with the actions and the data.
	for k := 1; k <= 3; k++ {
		fd := filepath.Join(e.campaign, reps[0].Dir, strconv.Itoa(k), results.FailuresDir, fs[0].ID)
		if _, err := results.ReadFailure(filepath.Dir(filepath.Dir(fd)), fs[0].ID); err != nil {
			t.Errorf("run %d: %v", k, err)
		}
	}

	// With a correct realisation the schedule converges: 0 of 2, flaky.
	out.Reset()
	plain := e.settings
	plain.ConfigFile = e.plain
	err = replay.Run(&replay.Options{Out: &out, ErrOut: &out, Dir: e.campaign, ID: fs[0].ID, Repeat: 2, Settings: plain})
	if err != nil {
		t.Errorf("replay with a correct realisation: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "reproduced fail in 0 of 2 runs (pass 2): flaky") {
		t.Errorf("output:\n%s", out.String())
	}
	s, err := results.ReadSummary(e.campaign)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Flaky(fs[0].ID) || s.Counts().Flaky != 1 {
		t.Errorf("%s not labelled flaky: %+v", fs[0].ID, s.Counts())
	}
	var summary bytes.Buffer
	if err := s.WriteText(&summary); err != nil {
		t.Fatal(err)
	}
	// Its line: ID, label, group, replayed.
	if !regexp.MustCompile(`\n` + fs[0].ID + `  flaky \(divergence\)  \d+ +0/2 `).MatchString(summary.String()) {
		t.Errorf("summary:\n%s", summary.String())
	}

	// A schedule that passed is found by its ID alone, and passes again.
	pass := slices.IndexFunc(s.Latest, func(r results.Record) bool { return r.Verdict == oracle.Pass })
	out.Reset()
	if err := replay.Run(&replay.Options{Out: &out, ErrOut: &out, Dir: e.campaign, ID: s.Latest[pass].ID, Repeat: 1, Settings: e.settings}); err != nil {
		t.Errorf("replay of a pass: %v\n%s", err, out.String())
	}
}

// TestRedisShrink shrinks real failures of ops=2 to smaller ones that still fail on the
// cluster: by dropping transitions, and by lowering a divergence's write count.
func TestRedisShrink(t *testing.T) {
	e := brokenCampaign(t)
	s, fs := failures(t, e)
	// The longest failure, and the shortest (a single divergence that writes twice).
	for _, r := range []results.Record{fs[0], fs[len(fs)-1]} {
		t.Run(r.ID, func(t *testing.T) {
			var out bytes.Buffer
			err := shrink.Run(&shrink.Options{Out: &out, ErrOut: &out, Dir: e.campaign, ID: r.ID, Repeat: 2, MaxTries: 50, Settings: e.settings})
			t.Logf("shrink:\n%s", out.String())
			if err != nil {
				t.Fatal(err)
			}
			all, err := results.ReadShrunk(e.campaign)
			if err != nil {
				t.Fatal(err)
			}
			sh, ok := all[r.ID]
			if !ok {
				t.Fatal("no shrink recorded")
			}
			if sh.Of.Ops != s.Header.Params.Ops || sh.Smallest.Ops >= sh.Of.Ops || sh.Smallest.Steps > sh.Of.Steps {
				t.Errorf("shrunk %+v to %+v: want fewer writes, no more steps", sh.Of, sh.Smallest)
			}
			if sh.Repeat != 2 || sh.Reproduced == 0 {
				t.Errorf("smallest fails in %s runs", sh.Rate())
			}
			if !slices.ContainsFunc(sh.Tries, func(tr results.ShrinkTry) bool { return tr.Failed && tr.ID == sh.Smallest.ID }) {
				t.Errorf("the smallest is not among the tries that failed: %+v", sh.Tries)
			}
			// The smallest, as a schedule file of its own: valid under its write count.
			h, got, err := schedules.ReadAll(filepath.Join(results.ShrunkPath(e.campaign, r.ID), results.ShrunkSched))
			if err != nil {
				t.Fatal(err)
			}
			if h.Params.Ops != sh.Smallest.Ops || len(got) != 1 || got[0].ID != sh.Smallest.ID || len(got[0].Steps) != sh.Smallest.Steps {
				t.Errorf("schedule file: %+v %+v", h, got)
			}
			// It replays by its ID, and fails.
			out.Reset()
			err = replay.Run(&replay.Options{Out: &out, ErrOut: &out, Dir: e.campaign, ID: sh.Smallest.ID, Repeat: 1, Settings: e.settings})
			if code := cmdutil.Code(err); code != cmdutil.ExitFailed {
				t.Errorf("replay of the smallest: exit status %d (%v)\n%s", code, err, out.String())
			}
		})
	}
}
