package replay_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/cmd/replay"
	"github.com/modulo-testing/modulo/internal/cmd/run"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestReplayAsksTheCampaignsServer: a campaign whose plugin table names another server than
// the plugin's default (Redis 4.0.2 built from source, where the default is Debian's 7.0) is
// replayed, without a configuration file, on that server, and says so: the plugin's Info sees
// the campaign's table, as the runs do.
func TestReplayAsksTheCampaignsServer(t *testing.T) {
	plugintest.Servers(t)
	server := plugintest.CachedServer(t, filepath.Join("redis", "4.0.2", "redis-server"))
	pluginDir := plugintest.BuildPlugin(t, "redis", "github.com/modulo-testing/modulo/plugins/redis")
	dir := t.TempDir()
	file, cfgFile := filepath.Join(dir, "slr.sched"), filepath.Join(dir, "old.toml")
	d, err := drms.Lookup("slr")
	if err != nil {
		t.Fatal(err)
	}
	var sched bytes.Buffer
	if _, err := schedules.Generate(&sched, d, aem.Params{Ops: 1, Replicas: 3}, "modulo test", 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, sched.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var id string // the file's first schedule
	for _, line := range strings.Split(sched.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			id, _, _ = strings.Cut(line, " ")
			break
		}
	}
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf("[redis]\nserver = %q\n", server)), 0o644); err != nil {
		t.Fatal(err)
	}
	resultsDir, workers, timeout := filepath.Join(dir, "results"), 1, 10*time.Second
	overrides := config.Overrides{PluginDir: &pluginDir, StepTimeout: &timeout}
	runOverrides := overrides
	runOverrides.ResultsDir, runOverrides.Workers = &resultsDir, &workers
	var out bytes.Buffer
	err = run.Run(&run.Options{Out: &out, ErrOut: &out, File: file, IDs: []string{id}, ConfigFile: cfgFile, Overrides: runOverrides})
	if code := cmdutil.Code(err); code != cmdutil.ExitOK && code != cmdutil.ExitFailed {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	campaign := filepath.Join(resultsDir, "slr")
	out.Reset()
	// No step timeout given: the replay's steps get the campaign's 10 s, not the default 30 s.
	replayOverrides := config.Overrides{PluginDir: &pluginDir}
	err = replay.Run(&replay.Options{Out: &out, ErrOut: &out, Dir: campaign, ID: id, Repeat: 1, Settings: cmdutil.Settings{Overrides: replayOverrides}})
	if code := cmdutil.Code(err); code != cmdutil.ExitOK && code != cmdutil.ExitFailed {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), ", server 4.0.2; plugin config (the campaign's)") || strings.Contains(out.String(), "note: the campaign ran") {
		t.Errorf("replay does not say it runs the campaign's server 4.0.2:\n%s", out.String())
	}
	reps, err := results.ReadReproductions(campaign)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].ServerVersion != "4.0.2" {
		t.Fatalf("reproductions %+v, want one on server 4.0.2", reps)
	}
	runs, err := filepath.Glob(filepath.Join(campaign, "replays", id, "*", "1", results.CampaignFile))
	if err != nil || len(runs) != 1 {
		t.Fatalf("the replay's run: %v, %v; want one campaign file", runs, err)
	}
	for _, f := range []string{filepath.Join(campaign, results.CampaignFile), runs[0]} {
		c, err := results.ReadCampaign(f)
		if err != nil || c.StepTimeout != "10s" {
			t.Errorf("%s: step_timeout %q, %v; want the campaign's 10s", f, c.StepTimeout, err)
		}
	}
}
