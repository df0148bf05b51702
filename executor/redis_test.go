package executor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/cmd/run"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// These tests run `modulo run` end to end on real redis-server clusters through the Redis
// plugin, built from plugins/redis.

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

// writeSchedules writes every schedule of drm with ops and replicas to a file in dir.
func writeSchedules(t *testing.T, dir, drm string, ops, replicas int) (string, uint64) {
	t.Helper()
	d, err := drms.Lookup(drm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, drm+".sched")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := schedules.Generate(f, d, aem.Params{Ops: ops, Replicas: replicas}, "modulo test", 0)
	if err != nil {
		t.Fatal(err)
	}
	return path, n
}

type redisRun struct {
	out, errOut string
	err         error
	campaign    string // the campaign's results directory
}

func runRedis(t *testing.T, ctx context.Context, file, pluginDir, resultsDir string) redisRun {
	t.Helper()
	var out, errOut bytes.Buffer
	workers := 2
	err := run.Run(&run.Options{Out: &out, ErrOut: &errOut, Context: ctx, File: file, Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: &workers}})
	return redisRun{out.String(), errOut.String(), err,
		filepath.Join(resultsDir, strings.TrimSuffix(filepath.Base(file), ".sched"))}
}

// checkRun checks what a finished run must show whatever the verdicts: a record per schedule,
// the summary line matching them, the exit status they call for, a complete failure folder
// for every non-pass, and no server left.
func checkRun(t *testing.T, r redisRun, total uint64, resultsDir string) []results.Record {
	t.Helper()
	recs, err := results.ReadRecords(filepath.Join(r.campaign, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(recs)) != total {
		t.Fatalf("%d records, want %d\nstderr:\n%s", len(recs), total, r.errOut)
	}
	s := executor.Summary{Total: total}
	for _, rec := range recs {
		switch rec.Verdict {
		case oracle.Pass:
			s.Pass++
		case oracle.Fail:
			s.Fail++
		case oracle.Incomplete:
			s.Incomplete++
		case oracle.Error:
			s.Error++
		}
		if rec.Verdict == oracle.Pass {
			continue
		}
		t.Logf("schedule %s: %s: %s", rec.ID, rec.Verdict, rec.Detail)
		fd := filepath.Join(r.campaign, results.FailuresDir, rec.ID)
		names := []string{results.ScheduleText, results.VerdictText, results.ActionsText}
		if rec.Verdict != oracle.Error { // the servers ran, and logged
			names = append(names, results.LogsDir, results.ClusterDir)
		}
		if rec.Verdict == oracle.Fail {
			names = append(names, results.ReplicasJSON)
		}
		for _, name := range names {
			if _, err := os.Stat(filepath.Join(fd, name)); err != nil {
				t.Errorf("schedule %s: failure folder: %v", rec.ID, err)
			}
		}
	}
	if lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n"); lines[len(lines)-1] != s.String() {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], s.String())
	}
	want := cmdutil.ExitOK
	switch {
	case s.Fail > 0:
		want = cmdutil.ExitFailed
	case s.Incomplete+s.Error > 0:
		want = cmdutil.ExitIncomplete
	}
	if code := cmdutil.Code(r.err); code != want {
		t.Errorf("exit status %d (%v), want %d", code, r.err, want)
	}
	if left := plugintest.ProcessesUnder(t, resultsDir); len(left) > 0 {
		t.Errorf("processes left running:\n%s", strings.Join(left, "\n"))
	}
	return recs
}

func TestRedisEndToEnd(t *testing.T) {
	pluginDir := buildRedisPlugin(t)
	for _, drm := range []string{"slr", "ssr"} {
		t.Run(drm, func(t *testing.T) {
			dir := t.TempDir()
			file, total := writeSchedules(t, dir, drm, 1, 3)
			resultsDir := filepath.Join(dir, "results")
			r := runRedis(t, context.Background(), file, pluginDir, resultsDir)
			recs := checkRun(t, r, total, resultsDir)
			// A harness fault on real servers, with nothing else running, is a bug.
			for _, rec := range recs {
				if rec.Verdict == oracle.Error {
					t.Errorf("schedule %s: error: %s", rec.ID, rec.Detail)
				}
				if rec.PluginVersion == "" || !strings.Contains(rec.ServerVersion, "7.0") {
					t.Errorf("schedule %s: plugin version %q, server version %q", rec.ID, rec.PluginVersion, rec.ServerVersion)
				}
			}
		})
	}
}

// TestRedisLoopback runs a campaign on the loopback fallback, which a plugin's table asks for:
// every server on 127.0.0.1 at a port of its worker's block, and the run says so and why.
func TestRedisLoopback(t *testing.T) {
	pluginDir := buildRedisPlugin(t)
	dir := t.TempDir()
	file, total := writeSchedules(t, dir, "slr", 1, 3)
	cfgFile := filepath.Join(dir, "loopback.toml")
	if err := os.WriteFile(cfgFile, []byte("[redis]\nnetwork = \"loopback\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resultsDir, workers, base := filepath.Join(dir, "results"), 2, plugintest.FreePorts(t, 20)
	var out, errOut bytes.Buffer
	err := run.Run(&run.Options{Out: &out, ErrOut: &errOut, Context: context.Background(), File: file, ConfigFile: cfgFile,
		Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: &workers, BasePort: &base}})
	r := redisRun{out.String(), errOut.String(), err, filepath.Join(resultsDir, "slr")}
	checkRun(t, r, total, resultsDir)
	want := fmt.Sprintf(`modulo: plugin redis: servers listen on 127.0.0.1, each worker's at ports from %d, not in network namespaces of their own: the table sets network = "loopback"`, base)
	if !strings.Contains(r.errOut, want+"\n") {
		t.Errorf("stderr:\n%s\nwant a line %q", r.errOut, want)
	}
}

// TestRedisInterrupt stops a run as Ctrl-C does once a schedule is recorded: no server may
// be left, and running again must run exactly the schedules not recorded.
func TestRedisInterrupt(t *testing.T) {
	pluginDir := buildRedisPlugin(t)
	dir := t.TempDir()
	file, total := writeSchedules(t, dir, "ssr", 1, 3)
	resultsDir := filepath.Join(dir, "results")
	records := filepath.Join(resultsDir, "ssr", results.RecordsFile)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Poll for the first record: the file is what a run exposes as it goes.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if b, err := os.ReadFile(records); err == nil && bytes.Count(b, []byte{'\n'}) >= 1 {
				cancel()
				return
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	first := runRedis(t, ctx, file, pluginDir, resultsDir)
	if left := plugintest.ProcessesUnder(t, resultsDir); len(left) > 0 {
		t.Errorf("processes left running after the interrupt:\n%s", strings.Join(left, "\n"))
	}
	recs, err := results.ReadRecords(records)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || uint64(len(recs)) >= total {
		t.Fatalf("interrupted run recorded %d of %d schedules (error %v)", len(recs), total, first.err)
	}
	if code := cmdutil.Code(first.err); code != cmdutil.ExitIncomplete && code != cmdutil.ExitFailed {
		t.Errorf("interrupted run: exit status %d (%v)", code, first.err)
	}
	if !strings.Contains(first.errOut, "modulo: interrupted: ") {
		t.Errorf("interrupted run's stderr:\n%s", first.errOut)
	}

	second := runRedis(t, context.Background(), file, pluginDir, resultsDir)
	if want := "modulo: skipped " + strconv.Itoa(len(recs)) + " schedules recorded by earlier runs\n"; !strings.Contains(second.errOut, want) {
		t.Errorf("resumed run's stderr lacks %q:\n%s", want, second.errOut)
	}
	checkRun(t, second, total, resultsDir)
}

// TestRedisPluginDies kills one of the run's plugin processes once a schedule is recorded: it
// must cost exactly one schedule, an error, and leave no server behind.
func TestRedisPluginDies(t *testing.T) {
	pluginDir := buildRedisPlugin(t)
	dir := t.TempDir()
	file, total := writeSchedules(t, dir, "ssr", 1, 3)
	resultsDir := filepath.Join(dir, "results")
	records := filepath.Join(resultsDir, "ssr", results.RecordsFile)

	killed := make(chan string, 1)
	go func() {
		defer close(killed)
		// Poll for the first record, then for a plugin process to kill.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(time.Minute)
		for {
			select {
			case <-tick.C:
			case <-deadline:
				return
			}
			if b, err := os.ReadFile(records); err != nil || bytes.Count(b, []byte{'\n'}) < 1 {
				continue
			}
			for _, p := range plugintest.ProcessesUnder(t, pluginDir) {
				var pid int
				fmt.Sscanf(p, "pid %d", &pid) // ProcessesUnder's lines start so
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed <- p
					return
				}
			}
		}
	}()
	r := runRedis(t, context.Background(), file, pluginDir, resultsDir)
	victim, ok := <-killed
	if !ok {
		t.Fatal("no plugin process was found to kill")
	}
	t.Logf("killed %s", victim)
	recs := checkRun(t, r, total, resultsDir)
	var errs []results.Record
	for _, rec := range recs {
		if rec.Verdict == oracle.Error {
			errs = append(errs, rec)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "plugin") {
		t.Errorf("%d error verdicts, want one naming the plugin: %+v", len(errs), errs)
	}
}
