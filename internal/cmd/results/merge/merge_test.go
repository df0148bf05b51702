package merge

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

func TestNewCmd(t *testing.T) {
	var got *Options
	cmd := NewCmd(&bytes.Buffer{}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"a", "b", "-o", "m", "--schedules", "f.sched"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Dirs, " ") != "a b" || got.Output != "m" || got.Schedules != "f.sched" {
		t.Errorf("options %+v", got)
	}
	cmd = NewCmd(&bytes.Buffer{}, func(o *Options) error { t.Error("ran without -o"); return nil })
	cmd.SetArgs([]string{"a"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); cmdutil.Code(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "-o DIR is required") {
		t.Errorf("without -o: %v", err)
	}
}

// shard writes shard k of 2 of a campaign of four schedules, recording ids.
func shard(t *testing.T, dir string, k int, server string, ids ...string) string {
	t.Helper()
	st, err := results.Open(dir, results.Campaign{
		DRM: "ssr", Ops: 1, Replicas: 3, ScheduleFile: "ssr.sched", ScheduleSHA256: "ab",
		Plugin: "redis", PluginVersion: "0.1.0", ServerVersion: server, Started: time.Now().UTC(), Schedules: 2,
		Shard: &results.ShardOf{Shard: schedules.Shard{Index: k, Count: 2}, Partition: schedules.PartitionVersion, First: 2 * k, FileSchedules: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		if err := st.Append(results.Record{ID: id, DRM: "ssr", Verdict: oracle.Pass, Plugin: "redis", PluginVersion: "0.1.0", ServerVersion: server}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRun(t *testing.T) {
	root := t.TempDir()
	a := shard(t, filepath.Join(root, "a"), 0, "7.0.15", "0000000000000001", "0000000000000002")
	b := shard(t, filepath.Join(root, "b"), 1, "7.0.15", "0000000000000003", "0000000000000004")
	short := shard(t, filepath.Join(root, "short"), 1, "7.0.15", "0000000000000003")
	other := shard(t, filepath.Join(root, "other"), 1, "2.8.0", "0000000000000003", "0000000000000004")
	out := filepath.Join(root, "merged")
	tests := []struct {
		name string
		dirs []string
		code int
		say  []string
	}{
		{"complete", []string{a, b}, cmdutil.ExitOK, []string{"merged 2 directories of ssr.sched (ssr ops=1 replicas=3) into " + out + ": 4 records, 4 of 4 schedules with a verdict\n"}},
		{"a schedule missing", []string{a, short}, cmdutil.ExitIncomplete, []string{
			"3 of 4 schedules with a verdict",
			"missing: 1 schedule has no verdict; not named: the schedule file ssr.sched cannot be read",
		}},
		{"a shard missing", []string{a}, cmdutil.ExitIncomplete, []string{"missing: shard 2/2: no directory given\n"}},
		{"another server", []string{a, other}, cmdutil.ExitUsage, []string{"ran server 2.8.0, not 7.0.15"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Run(&Options{Out: &buf, Dirs: tt.dirs, Output: out})
			text := buf.String()
			if err != nil {
				text += err.Error()
			}
			if cmdutil.Code(err) != tt.code {
				t.Errorf("exit %d (%v), want %d", cmdutil.Code(err), err, tt.code)
			}
			for _, s := range tt.say {
				if !strings.Contains(text, s) {
					t.Errorf("output %q does not say %q", text, s)
				}
			}
		})
	}
}
