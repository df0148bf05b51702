package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"

	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/results"
)

const (
	ssrFile = "../../../schedules/testdata/ssr-1x3.sched" // 24 schedules
	qczFile = "../../../schedules/testdata/qcz-1x3.sched"
)

func ptr[T any](v T) *T { return &v }

func TestNewCmd(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(*Options) bool
	}{
		{"file only", []string{"f.sched"}, func(o *Options) bool {
			return o.File == "f.sched" && o.DRM == "" && o.IDs == nil && o.Workers == nil && o.BasePort == nil && o.Preset == "" &&
				o.StepTimeout == nil && o.ResultsDir == nil && o.PluginDir == nil && o.Context != nil && o.ErrOut != nil
		}},
		{"every flag", []string{"f.sched", "--drm", "ssr", "--ids", "a,b", "--ids", "c", "--config", "m.toml", "--workers", "4",
			"--base-port", "30000", "--step-timeout", "5s", "--results-dir", "out", "--plugin-dir", "bin", "--preset", "paper"}, func(o *Options) bool {
			return o.DRM == "ssr" && strings.Join(o.IDs, " ") == "a b c" && o.ConfigFile == "m.toml" && *o.Workers == 4 && o.Preset == "paper" &&
				*o.BasePort == 30000 && *o.StepTimeout == 5*time.Second && *o.ResultsDir == "out" && *o.PluginDir == "bin"
		}},
		{"zero overrides are still overrides", []string{"f.sched", "--workers", "0"}, func(o *Options) bool {
			return o.Workers != nil && *o.Workers == 0
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
				t.Errorf("options = %+v", got)
			}
		})
	}
}

func TestRunBadInput(t *testing.T) {
	emptyDir := t.TempDir()
	t.Setenv("PATH", emptyDir) // no plugin on $PATH
	badConfig := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(badConfig, []byte("wokers = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The schedule file without its last line: refused before any schedule runs (there is no
	// plugin to run one).
	whole, err := os.ReadFile(ssrFile)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "truncated.sched")
	cut := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	if err := os.WriteFile(truncated, whole[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(whole[:cut], []byte("\n"))
	notExec := t.TempDir()
	if err := os.WriteFile(filepath.Join(notExec, "modulo-plugin-redis"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no such file", Options{File: "missing.sched"}, "open schedule file: open missing.sched: no such file or directory"},
		{"unknown drm", Options{File: ssrFile, DRM: "raft"}, `unknown DRM "raft" (known: qce, qcm, qcne, qcnz, qcz, qne, qnz, qpe, qpz, sclr, slr, snr, ssr)`},
		{"drm differs from the file's", Options{File: ssrFile, DRM: "S/L/R"}, ssrFile + " holds ssr schedules, not slr"},
		{"unknown id", Options{File: ssrFile, IDs: []string{"9e00953181d87464", "ffffffffffffffff", "0000000000000000"}},
			ssrFile + ": no schedule with ID 0000000000000000, ffffffffffffffff"},
		{"shard and ids", Options{File: ssrFile, Shard: "1/2", IDs: []string{"9e00953181d87464"}}, errShardWithIDs.Error()},
		{"bad shard", Options{File: ssrFile, Shard: "3/2"}, "--shard: shard 3/2: K must be from 1 to N, and N at least 1"},
		{"bad config", Options{File: ssrFile, ConfigFile: badConfig}, badConfig + `: unknown key "wokers" (settings: results_dir, base_port, workers, step_timeout, plugin_dir, check, allow_ephemeral_ports, share_prefixes, share_budget_mb, failure_budget_mb, min_free_mb; plugin tables: etcd, mongodb, redis, zookeeper)`},
		{"bad override", Options{File: ssrFile, Overrides: config.Overrides{Workers: ptr(0)}}, "workers must be between 1 and 256, got 0"},
		{"plugin not executable", Options{File: ssrFile, Overrides: config.Overrides{PluginDir: ptr(notExec)}},
			"plugin " + filepath.Join(notExec, "modulo-plugin-redis") + " is not executable (mode -rw-r--r--): chmod +x it, or build it again"},
		{"truncated file", Options{File: truncated, Overrides: config.Overrides{PluginDir: ptr(emptyDir)}},
			fmt.Sprintf("%s:%d: file ends after 23 schedules, header says 24 (truncated?)", truncated, lines)},
		{"no plugin", Options{File: ssrFile, Overrides: config.Overrides{PluginDir: ptr(emptyDir)}},
			fmt.Sprintf("plugin modulo-plugin-redis not found in plugin_dir %s, %s (next to modulo) or on $PATH; build it with 'go build -o bin/modulo-plugin-redis ./plugins/redis' in modulo's source tree and pass --plugin-dir bin",
				emptyDir, filepath.Dir(exe))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			tt.opts.Out, tt.opts.ErrOut = &out, &errOut
			err := Run(&tt.opts)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error = %v\nwant    %s", err, tt.wantErr)
			}
			if code := cmdutil.Code(err); code != cmdutil.ExitUsage {
				t.Errorf("exit status %d, want %d", code, cmdutil.ExitUsage)
			}
			if out.Len() != 0 {
				t.Errorf("output %q", out.String())
			}
		})
	}
}

func TestVerdictError(t *testing.T) {
	tests := []struct {
		name string
		s    executor.Summary
		code int
		msg  string
	}{
		{"all pass", executor.Summary{Total: 3, Tally: oracle.Tally{Pass: 3}}, cmdutil.ExitOK, ""},
		{"no schedules", executor.Summary{}, cmdutil.ExitOK, ""},
		{"a fail wins", executor.Summary{Total: 5, Tally: oracle.Tally{Pass: 1, Fail: 2, Incomplete: 1, Error: 1}}, cmdutil.ExitFailed, "2 of 5 schedules failed to converge: see F"},
		{"incomplete", executor.Summary{Total: 2, Tally: oracle.Tally{Pass: 1, Incomplete: 1}}, cmdutil.ExitIncomplete, "no schedule failed, but 1 incomplete: see F"},
		{"error", executor.Summary{Total: 2, Tally: oracle.Tally{Pass: 1, Error: 1}}, cmdutil.ExitIncomplete, "no schedule failed, but 1 with errors: see F"},
		{"interrupted", executor.Summary{Total: 9, Tally: oracle.Tally{Pass: 4}, Interrupted: true}, cmdutil.ExitIncomplete, "no schedule failed, but 5 not run"},
		{"interrupted with a fail", executor.Summary{Total: 9, Tally: oracle.Tally{Fail: 1}, Interrupted: true}, cmdutil.ExitFailed, "1 of 1 schedules failed to converge: see F"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := outcome(tt.s, "F").Err()
			if code := cmdutil.Code(err); code != tt.code {
				t.Errorf("exit status %d, want %d", code, tt.code)
			}
			if err != nil && err.Error() != tt.msg {
				t.Errorf("message %q, want %q", err, tt.msg)
			}
		})
	}
}

// buildTestPlugin builds cem's test plugin, a real plugin process whose replicas are maps in
// its memory, under the name modulo-plugin-<name> in a directory of t's. Its replicas differ
// in one key, spec.port (each holds its own port), so every schedule fails through it.
func buildTestPlugin(t *testing.T, name string) string {
	t.Helper()
	return plugintest.BuildPlugin(t, name, "github.com/modulo-testing/modulo/cem/internal/testplugin")
}

func TestRunThroughPluginProcess(t *testing.T) {
	base := plugintest.FreePorts(t, 20) // first: under -short it skips before the build
	pluginDir := buildTestPlugin(t, "redis")
	resultsDir := t.TempDir()
	run := func() (string, string, error) {
		var out, errOut bytes.Buffer
		// Judged at the end: the test plugin's replicas hold each their own ports, which the
		// detail then names for all three.
		err := Run(&Options{Out: &out, ErrOut: &errOut, File: ssrFile, DRM: "ssr", Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: ptr(2), BasePort: &base, Check: ptr(oracle.End)}})
		return out.String(), errOut.String(), err
	}

	out, errOut, err := run()
	campaignDir := filepath.Join(resultsDir, "ssr-1x3")
	wantErr := "24 of 24 schedules failed to converge: see " + filepath.Join(campaignDir, "failures")
	if err == nil || err.Error() != wantErr || cmdutil.Code(err) != cmdutil.ExitFailed {
		t.Fatalf("error = %v (exit %d), want %q\nstderr:\n%s", err, cmdutil.Code(err), wantErr, errOut)
	}
	if out != "schedules: 24, pass: 0, fail: 24, incomplete: 0, error: 0\n" {
		t.Errorf("stdout = %q", out)
	}
	wantStderr := regexp.MustCompile(`^modulo: 24 ssr schedules \(ops=1, replicas=3\) of ` + regexp.QuoteMeta(ssrFile) +
		` on testplugin 1\.2\.3 with memory 0, 2 workers; results in ` + regexp.QuoteMeta(campaignDir) + "\n" +
		`progress: 24/24 \(100\.0%\), [0-9.]+/(s|min), ETA 0s, pass 0, fail 24, incomplete 0, error 0\n` +
		`modulo: next: modulo results \S+ \(verdicts, failures\); modulo report \S+ -o report\.html \(a page with timelines\)\n$`)
	if !wantStderr.MatchString(errOut) {
		t.Errorf("stderr = %q, want it to match %s", errOut, wantStderr)
	}
	recs, err := results.ReadRecords(filepath.Join(campaignDir, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 24 {
		t.Fatalf("%d records, want 24", len(recs))
	}
	// Each worker's cluster has its own ports: worker 0 from base, worker 1 from base+10
	// (3 replicas of 2 ports each, rounded up to 10).
	for _, r := range recs {
		w0 := fmt.Sprintf(`spec.port (r0="%d" r1="%d" r2="%d")`, base, base+2, base+4)
		w1 := fmt.Sprintf(`spec.port (r0="%d" r1="%d" r2="%d")`, base+10, base+12, base+14)
		if r.Verdict != oracle.Fail || !strings.Contains(r.Detail, w0) && !strings.Contains(r.Detail, w1) {
			t.Errorf("record %s: %s %q", r.ID, r.Verdict, r.Detail)
		}
		if r.Plugin != "testplugin" || r.PluginVersion != "1.2.3" || r.ServerVersion != "memory 0" || len(r.StepsMS) != 3 {
			t.Errorf("record %+v", r)
		}
	}
	c, err := results.ReadCampaign(filepath.Join(campaignDir, results.CampaignFile))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := fsutil.FileSHA256(ssrFile)
	if err != nil {
		t.Fatal(err)
	}
	if c.DRM != "ssr" || c.Ops != 1 || c.Replicas != 3 || c.ScheduleFile != ssrFile || c.ScheduleSHA256 != sum || c.Plugin != "testplugin" || c.Started.IsZero() {
		t.Errorf("campaign.json = %+v", c)
	}

	// The same campaign again: everything is recorded, nothing runs, the verdicts stand.
	out, errOut, err = run()
	if cmdutil.Code(err) != cmdutil.ExitFailed || out != "schedules: 24, pass: 0, fail: 24, incomplete: 0, error: 0\n" {
		t.Errorf("rerun: %v, stdout %q", err, out)
	}
	if !strings.Contains(errOut, "modulo: resuming: 24 schedules already recorded with these versions are skipped\n") ||
		!strings.Contains(errOut, "modulo: skipped 24 schedules recorded by earlier runs\n") {
		t.Errorf("rerun stderr = %q", errOut)
	}
	if recs, err := results.ReadRecords(filepath.Join(campaignDir, results.RecordsFile)); err != nil || len(recs) != 24 {
		t.Errorf("after the rerun: %d records, %v", len(recs), err)
	}
}

func TestRunPluginProbe(t *testing.T) {
	tests := []struct {
		name    string
		plugin  string
		file    string
		env     string
		wantErr string
	}{
		{"server binary missing", "redis", ssrFile, "/usr/bin/redis-server-7: no such file",
			"plugin Info: /usr/bin/redis-server-7: no such file"},
		{"plugin does not realise the DRM", "zookeeper", qczFile, "",
			"plugin testplugin 1.2.3 does not realise qcz (it realises: ssr, slr)"},
	}
	// One build, linked under each case's plugin name.
	built := filepath.Join(buildTestPlugin(t, "redis"), cem.PluginPrefix+"redis")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Link(built, filepath.Join(dir, cem.PluginPrefix+tt.plugin)); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TESTPLUGIN_INFO_ERROR", tt.env)
			resultsDir := t.TempDir()
			var out, errOut bytes.Buffer
			err := Run(&Options{Out: &out, ErrOut: &errOut, File: tt.file, Overrides: config.Overrides{PluginDir: &dir, ResultsDir: &resultsDir}})
			if err == nil || err.Error() != tt.wantErr || cmdutil.Code(err) != cmdutil.ExitUsage {
				t.Fatalf("error = %v (exit %d), want %q", err, cmdutil.Code(err), tt.wantErr)
			}
			if entries, _ := os.ReadDir(resultsDir); len(entries) != 0 {
				t.Errorf("a results directory was made: %v", entries)
			}
		})
	}
}

func TestRunIDs(t *testing.T) {
	base := plugintest.FreePorts(t, 10) // first: under -short it skips before the build
	pluginDir := buildTestPlugin(t, "redis")
	resultsDir := t.TempDir()
	ids := []string{"9e00953181d87464", "6dcc0d6bc0b18a81"}
	var out, errOut bytes.Buffer
	err := Run(&Options{Out: &out, ErrOut: &errOut, File: ssrFile, DRM: "S/S/R", IDs: ids, Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: ptr(1), BasePort: &base}})
	if cmdutil.Code(err) != cmdutil.ExitFailed || out.String() != "schedules: 2, pass: 0, fail: 2, incomplete: 0, error: 0\n" {
		t.Fatalf("error %v, stdout %q\nstderr:\n%s", err, out.String(), errOut.String())
	}
	recs, err := results.ReadRecords(filepath.Join(resultsDir, "ssr-1x3", results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range recs {
		got[r.ID] = true
	}
	if len(recs) != 2 || !got[ids[0]] || !got[ids[1]] {
		t.Errorf("recorded %v, want %v", got, ids)
	}
}

// TestSelectCoverageOrder: --order coverage runs every schedule of the file once, in another
// order than the file's.
func TestSelectCoverageOrder(t *testing.T) {
	var ids [2][]string
	for k, order := range []string{OrderFile, OrderCoverage} {
		r, f, err := schedules.Open(ssrFile)
		if err != nil {
			t.Fatal(err)
		}
		next, total, err := selectSchedules(r, ssrFile, nil, order, nil)
		if err != nil {
			t.Fatal(err)
		}
		for {
			s, err := next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			ids[k] = append(ids[k], s.ID)
		}
		f.Close()
		if uint64(len(ids[k])) != total || total != 24 {
			t.Fatalf("order %s: %d schedules, total %d, want 24", order, len(ids[k]), total)
		}
	}
	if slices.Equal(ids[0], ids[1]) || !slices.Equal(slices.Sorted(slices.Values(ids[0])), slices.Sorted(slices.Values(ids[1]))) {
		t.Errorf("coverage order %v is not another order of the file's %v", ids[1], ids[0])
	}
}
