package run

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestShardOf(t *testing.T) {
	slurm := func(id, min, max, count string) map[string]string {
		return map[string]string{envSlurmID: id, envSlurmMin: min, envSlurmMax: max, envSlurmCount: count}
	}
	tests := []struct {
		name   string
		flag   string
		count  int
		env    map[string]string
		want   string // the shard, "" for the whole file
		source string // what the run says it used, or the error
		err    bool
	}{
		{"nothing: the whole file", "", 0, nil, "", "", false},
		{"--shard", "2/4", 0, nil, "2/4", "--shard 2/4", false},
		{"--shard wins over the engine", "1/2", 0, slurm("3", "0", "3", "4"), "1/2", "--shard 1/2", false},
		{"--shard and --shard-count agree", "2/4", 4, nil, "2/4", "--shard 2/4", false},
		{"--shard and --shard-count disagree", "2/4", 3, nil, "", "--shard 2/4 and --shard-count 3 disagree", true},
		{"bad --shard", "5/4", 0, nil, "", "--shard: shard 5/4: K must be from 1 to N", true},
		{"Slurm from 0", "", 0, slurm("0", "0", "3", "4"), "1/4", "the Slurm array task (SLURM_ARRAY_TASK_ID=0, SLURM_ARRAY_TASK_MIN=0, SLURM_ARRAY_TASK_COUNT=4)", false},
		{"Slurm from 1", "", 0, slurm("4", "1", "4", "4"), "4/4", "the Slurm array task (SLURM_ARRAY_TASK_ID=4, SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_COUNT=4)", false},
		{"Slurm without MIN and MAX", "", 0, map[string]string{envSlurmID: "2", envSlurmCount: "3"}, "3/3", "the Slurm array task (SLURM_ARRAY_TASK_ID=2, SLURM_ARRAY_TASK_MIN=0, SLURM_ARRAY_TASK_COUNT=3)", false},
		{"Slurm with gaps", "", 0, slurm("4", "0", "6", "3"), "", "the Slurm array (SLURM_ARRAY_TASK_MIN=0, SLURM_ARRAY_TASK_MAX=6, SLURM_ARRAY_TASK_COUNT=3) has gaps: modulo's shards need --array=FIRST-LAST, every index between", true},
		{"Slurm with a step", "", 0, map[string]string{envSlurmID: "2", envSlurmMin: "0", envSlurmMax: "2", envSlurmCount: "3", envSlurmStep: "2"}, "", "has gaps", true},
		{"Slurm without a count", "", 0, map[string]string{envSlurmID: "2"}, "", "SLURM_ARRAY_TASK_ID=2, but SLURM_ARRAY_TASK_COUNT is not set: run as a Slurm array job (sbatch --array=0-N)", true},
		{"Slurm count against --shard-count", "", 5, slurm("0", "0", "3", "4"), "", "--shard-count 5, but the Slurm array has 4 tasks", true},
		{"Slurm not a number", "", 0, slurm("x", "0", "3", "4"), "", `SLURM_ARRAY_TASK_ID="x" is not a number`, true},
		{"Indexed Job with MODULO_SHARD_COUNT", "", 0, map[string]string{envK8sIndex: "2", envShardCount: "4"}, "3/4", "the Kubernetes Indexed Job (JOB_COMPLETION_INDEX=2, MODULO_SHARD_COUNT=4)", false},
		{"Indexed Job with --shard-count", "", 4, map[string]string{envK8sIndex: "0", envShardCount: "9"}, "1/4", "the Kubernetes Indexed Job (JOB_COMPLETION_INDEX=0, --shard-count=4)", false},
		{"Indexed Job without a count", "", 0, map[string]string{envK8sIndex: "2"}, "", "JOB_COMPLETION_INDEX=2, but no shard count: set MODULO_SHARD_COUNT to the Job's completions, or give --shard-count", true},
		{"Indexed Job beyond its count", "", 0, map[string]string{envK8sIndex: "4", envShardCount: "4"}, "", "Kubernetes Indexed Job JOB_COMPLETION_INDEX=4 of 4: shard 5/4: K must be from 1 to N", true},
		{"--shard-count alone", "", 4, nil, "", "--shard-count 4 needs a shard index: --shard K/N, or an engine's (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh, source, err := shardOf(tt.flag, tt.count, env(tt.env))
			if tt.err {
				if err == nil || !strings.Contains(err.Error(), tt.source) {
					t.Fatalf("shard %v, error %v; want an error saying %q", sh, err, tt.source)
				}
				return
			}
			got := ""
			if sh != nil {
				got = sh.String()
			}
			if err != nil || got != tt.want || source != tt.source {
				t.Errorf("shard %q from %q, %v; want %q from %q", got, source, err, tt.want, tt.source)
			}
		})
	}
}

func TestCampaignName(t *testing.T) {
	tests := []struct {
		sh   *schedules.Shard
		want string
	}{
		{nil, "slr"},
		{&schedules.Shard{Index: 0, Count: 4}, "slr.shard-1-of-4"},
		{&schedules.Shard{Index: 1, Count: 16}, "slr.shard-02-of-16"},
	}
	for _, tt := range tests {
		if got := campaignName("dir/slr.sched", tt.sh); got != tt.want {
			t.Errorf("campaignName(%v) = %q, want %q", tt.sh, got, tt.want)
		}
	}
}

// TestRunShards runs the three shards of a file through a real plugin process, each told its
// shard another way (the flag, a Slurm array task, a Kubernetes Indexed Job), merges them,
// and finds every schedule of the file recorded exactly once, as one run of the whole file
// records them.
func TestRunShards(t *testing.T) {
	base := plugintest.FreePorts(t, 10) // first: under -short it skips before the build
	pluginDir := buildTestPlugin(t, "redis")
	resultsDir := t.TempDir()
	_, all, err := schedules.ReadAll(ssrFile)
	if err != nil {
		t.Fatal(err)
	}
	engines := []struct {
		flag   string
		env    map[string]string
		source string
	}{
		{"1/3", nil, "--shard 1/3"},
		{"", map[string]string{envSlurmID: "6", envSlurmMin: "5", envSlurmMax: "7", envSlurmCount: "3"}, "the Slurm array task"},
		{"", map[string]string{envK8sIndex: "2", envShardCount: "3"}, "the Kubernetes Indexed Job"},
	}
	var dirs []string
	for k, e := range engines {
		var out, errOut bytes.Buffer
		err := Run(&Options{Out: &out, ErrOut: &errOut, File: ssrFile, Shard: e.flag, Getenv: env(e.env),
			Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: ptr(2), BasePort: &base}})
		if cmdutil.Code(err) != cmdutil.ExitFailed { // the test plugin's replicas always differ
			t.Fatalf("shard %d: %v\n%s", k+1, err, errOut.String())
		}
		dir := filepath.Join(resultsDir, fmt.Sprintf("ssr-1x3.shard-%d-of-3", k+1))
		said := regexp.MustCompile(fmt.Sprintf(`modulo: shard %d/3, schedules (\d+) to (\d+) of the file's 24 \(partition %s\), as %s`,
			k+1, regexp.QuoteMeta(schedules.PartitionVersion), regexp.QuoteMeta(e.source)))
		if !said.MatchString(errOut.String()) || !strings.Contains(errOut.String(), "results in "+dir) {
			t.Errorf("shard %d: stderr %q does not say the shard, its source and %s", k+1, errOut.String(), dir)
		}
		c, err := results.ReadCampaign(filepath.Join(dir, results.CampaignFile))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		if c.Shard == nil || c.Shard.Index != k || c.Shard.Count != 3 || c.Shard.FileSchedules != 24 ||
			c.Shard.Partition != schedules.PartitionVersion || int(c.Schedules) != len(recs) {
			t.Errorf("shard %d: campaign.json says shard %+v of %d schedules; %d records", k+1, c.Shard, c.Schedules, len(recs))
		}
		var got, want []string // a shard is its part of the file
		for i, r := range recs {
			got, want = append(got, r.ID), append(want, all[c.Shard.First+i].ID)
		}
		if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("shard %d recorded %v, want %v", k+1, got, want)
		}
		dirs = append(dirs, dir)
	}

	// The same shard again resumes it; another shard's run into its directory is refused.
	var out, errOut bytes.Buffer
	err = Run(&Options{Out: &out, ErrOut: &errOut, File: ssrFile, Shard: "1/3", Getenv: env(nil),
		Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: ptr(2), BasePort: &base}})
	if cmdutil.Code(err) != cmdutil.ExitFailed || !strings.Contains(errOut.String(), "modulo: skipped") {
		t.Errorf("shard 1 again: %v\n%s", err, errOut.String())
	}

	merged := filepath.Join(resultsDir, "ssr-1x3")
	rep, err := results.Merge(merged, dirs, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Missing != 0 || len(rep.Duplicates) != 0 || len(rep.Dropped) != 0 || rep.Records != 24 || rep.Done != 24 {
		t.Errorf("merge report %+v", rep)
	}
	s, err := results.ReadSummary(merged)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range s.Latest {
		ids = append(ids, r.ID)
	}
	var want []string
	for _, sc := range all {
		want = append(want, sc.ID)
	}
	if slices.Sort(ids); !slices.Equal(ids, slices.Sorted(slices.Values(want))) || s.Total != 24 || s.Counts().Fail != 24 {
		t.Errorf("merged: %d schedules of %d, %+v; want the file's 24, each once", len(ids), s.Total, s.Counts())
	}

	// The whole file run where the merge is resumes it: nothing is left to run.
	out.Reset()
	errOut.Reset()
	err = Run(&Options{Out: &out, ErrOut: &errOut, File: ssrFile, Getenv: env(nil),
		Overrides: config.Overrides{PluginDir: &pluginDir, ResultsDir: &resultsDir, Workers: ptr(2), BasePort: &base}})
	if cmdutil.Code(err) != cmdutil.ExitFailed || !strings.Contains(errOut.String(), "modulo: skipped 24 schedules recorded by earlier runs") {
		t.Errorf("the whole file over the merge: %v\n%s", err, errOut.String())
	}
}
