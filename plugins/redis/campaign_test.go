package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/cmd/run"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestPaperPresetCampaigns runs whole campaigns as `modulo run --preset paper` does, through
// the executor and the built plugin binary on Debian's redis-server: every schedule of S/L/R
// and S/S/R with one write and three replicas, and of S/CL/R with one and two writes and two
// replicas (the paper's Table 3 parameters for S/L/R and S/CL/R). Every schedule must get a
// verdict that is not a harness error; the verdicts are logged.
func TestPaperPresetCampaigns(t *testing.T) {
	plugintest.Servers(t) // 134 schedules on real servers
	pluginDir := plugintest.BuildPlugin(t, "redis", "github.com/modulo-testing/modulo/plugins/redis")
	tests := []struct {
		drm    string
		ops, n int
	}{
		{"slr", 1, 3},
		{"ssr", 1, 3},
		{"sclr", 1, 2},
		{"sclr", 2, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/ops=%d/n=%d", tt.drm, tt.ops, tt.n), func(t *testing.T) {
			dir := t.TempDir()
			file, total := writeScheduleFile(t, dir, tt.drm, tt.ops, tt.n)
			resultsDir := filepath.Join(dir, "results")
			// The paper's fixed waits leave the servers idle: more workers than cores.
			workers := 6
			var out, errOut bytes.Buffer
			err := run.Run(&run.Options{Out: &out, ErrOut: &errOut, Context: context.Background(), File: file, Preset: "paper", Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: &workers}})
			recs, rerr := results.ReadRecords(filepath.Join(resultsDir, strings.TrimSuffix(filepath.Base(file), ".sched"), results.RecordsFile))
			if rerr != nil {
				t.Fatalf("%v (run: %v)\n%s", rerr, err, errOut.String())
			}
			if uint64(len(recs)) != total {
				t.Fatalf("%d records, want %d (run: %v)\n%s", len(recs), total, err, errOut.String())
			}
			counts := map[oracle.Verdict]int{}
			waited := 0
			for _, rec := range recs {
				counts[rec.Verdict]++
				if rec.Verdict != oracle.Pass {
					t.Logf("%s %s: %s", rec.ID, rec.Verdict, rec.Detail)
				}
				if rec.Verdict == oracle.Error {
					t.Errorf("schedule %s: harness error: %s", rec.ID, rec.Detail)
				}
				// S/L/R's preset waits 8 s before the writes of a divergence that broke a
				// link, as the first divergence always does there.
				if len(rec.StepsMS) > 0 && rec.StepsMS[0] >= 8000 {
					waited++
				}
			}
			if want := map[bool]int{true: len(recs)}[tt.drm == "slr"]; waited != want {
				t.Errorf("%d of %d schedules waited 8 s in their first divergence, want %d: was the preset for %s applied?", waited, len(recs), want, tt.drm)
			}
			want := cmdutil.ExitOK
			switch {
			case counts[oracle.Fail] > 0:
				want = cmdutil.ExitFailed
			case counts[oracle.Incomplete]+counts[oracle.Error] > 0:
				want = cmdutil.ExitIncomplete
			}
			if code := cmdutil.Code(err); code != want {
				t.Errorf("exit status %d (%v), want %d", code, err, want)
			}
			if left := plugintest.ProcessesUnder(t, dir); len(left) > 0 {
				t.Errorf("servers left: %v", left)
			}
			t.Logf("%s ops=%d replicas=%d, paper preset: %s", tt.drm, tt.ops, tt.n, strings.TrimSpace(out.String()))
		})
	}
}

// writeScheduleFile writes every schedule of drm with ops and replicas to a file in dir.
func writeScheduleFile(t *testing.T, dir, drm string, ops, replicas int) (string, uint64) {
	t.Helper()
	d, err := drms.Lookup(drm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%dx%d.sched", drm, ops, replicas))
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
