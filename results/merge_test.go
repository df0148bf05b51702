package results_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// shardFile is a real schedule file (24 schedules), cut into three shards by the tests.
const shardFile = "../schedules/testdata/ssr-1x3.sched"

// shardsOf returns the IDs of each of the n shards of shardFile, and the campaign of shard k.
func shardsOf(t *testing.T, n int) ([][]string, func(k int) results.Campaign) {
	t.Helper()
	h, all, err := schedules.ReadAll(shardFile)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := fsutil.FileSHA256(shardFile)
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := schedules.Partition(h.DRM.Model, h.Params, schedules.Stream(all), n)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([][]string, n)
	for k, r := range ranges {
		for _, s := range all[r.First:r.End] {
			ids[k] = append(ids[k], s.ID)
		}
	}
	return ids, func(k int) results.Campaign {
		c := campaign
		c.ScheduleFile, c.ScheduleSHA256, c.Schedules = shardFile, sum, uint64(ranges[k].Len())
		c.Shard = &results.ShardOf{Shard: schedules.Shard{Index: k, Count: n}, Partition: schedules.PartitionVersion,
			First: ranges[k].First, FileSchedules: h.Count}
		return c
	}
}

// writeShard writes a shard's campaign directory with a record of each of ids, passing but
// for those in fail, which get a failure folder too.
func writeShard(t *testing.T, dir string, c results.Campaign, ids []string, fail ...string) string {
	t.Helper()
	st, err := results.Open(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		v := oracle.Pass
		if slices.Contains(fail, id) {
			v = oracle.Fail
			if err := os.MkdirAll(st.FailureDir(id), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(st.FailureDir(id), "verdict.txt"), []byte("fail in "+dir), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Append(record(id, v)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMergeRefusesMismatches(t *testing.T) {
	ids, camp := shardsOf(t, 3)
	root := t.TempDir()
	first := writeShard(t, filepath.Join(root, "a"), camp(0), ids[0])
	notShard := campaign
	tests := []struct {
		name   string
		change func(*results.Campaign)
		want   string
	}{
		{"another DRM", func(c *results.Campaign) { c.DRM = "slr" }, "ran slr ops=1 replicas=3, not ssr ops=1 replicas=3"},
		{"another schedule file", func(c *results.Campaign) { c.ScheduleFile, c.ScheduleSHA256 = "other.sched", "cd" },
			"ran schedule file other.sched (SHA-256 cd), not " + shardFile},
		{"another plugin version", func(c *results.Campaign) { c.PluginVersion = "0.2.0" }, "ran plugin redis version 0.2.0, not 0.1.0"},
		{"another server", func(c *results.Campaign) { c.ServerVersion = "2.8.0" }, "ran server 2.8.0, not 7.0.15"},
		{"another plugin configuration", func(c *results.Campaign) { c.PluginConfig = "preset = 'paper'" }, `ran plugin configuration "preset = 'paper'", not ""`},
		{"another shard count", func(c *results.Campaign) { c.Shard.Count = 4 }, "ran shard 2/4 of 4 shards, not of 3"},
		{"another partition", func(c *results.Campaign) { c.Shard.Partition = "even/0" }, "ran shards cut by partition even/0, not " + schedules.PartitionVersion},
		{"not a shard", func(c *results.Campaign) { *c = notShard }, "it ran the whole schedule file, not a shard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := camp(1)
			shard := *c.Shard
			c.Shard = &shard
			tt.change(&c)
			other := writeShard(t, filepath.Join(t.TempDir(), "b"), c, ids[1])
			out := filepath.Join(t.TempDir(), "merged")
			_, err := results.Merge(out, []string{first, other}, "")
			if !errors.Is(err, results.ErrMismatch) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want ErrMismatch saying %q", err, tt.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused merge left %s", out)
			}
		})
	}
	t.Run("not a campaign", func(t *testing.T) {
		_, err := results.Merge(filepath.Join(t.TempDir(), "m"), []string{first, t.TempDir()}, "")
		if !errors.Is(err, results.ErrNotCampaign) {
			t.Errorf("error %v, want ErrNotCampaign", err)
		}
	})
	t.Run("no such directory", func(t *testing.T) {
		_, err := results.Merge(filepath.Join(t.TempDir(), "m"), []string{first, filepath.Join(root, "nope")}, "")
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v, want ErrNotExist", err)
		}
	})
	t.Run("a shard still running", func(t *testing.T) {
		st, err := results.Open(first, camp(0)) // holds the lock, as a running modulo does
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, err = results.Merge(filepath.Join(t.TempDir(), "m"), []string{first}, "")
		if err == nil || !strings.Contains(err.Error(), first+" is in use by a modulo run") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("a shard given twice", func(t *testing.T) {
		_, err := results.Merge(filepath.Join(t.TempDir(), "m"), []string{first, first + "/"}, "")
		if err == nil || !strings.Contains(err.Error(), "is given twice") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("output is a shard", func(t *testing.T) {
		_, err := results.Merge(first, []string{first}, "")
		if err == nil || !strings.Contains(err.Error(), "is both a shard and the output") {
			t.Errorf("error %v", err)
		}
	})
}

// TestMergeDuplicates: shard 1 was run twice, in two places; one of its schedules failed in
// one run only. Every schedule is kept once but that one, which keeps both records, the
// failure last, labelled flaky.
func TestMergeDuplicates(t *testing.T) {
	ids, camp := shardsOf(t, 3)
	root := t.TempDir()
	flaky := ids[0][1]
	dirs := []string{
		writeShard(t, filepath.Join(root, "a"), camp(0), ids[0]),
		writeShard(t, filepath.Join(root, "a-again"), camp(0), ids[0], flaky),
		writeShard(t, filepath.Join(root, "b"), camp(1), ids[1]),
		writeShard(t, filepath.Join(root, "c"), camp(2), ids[2]),
	}
	out := filepath.Join(root, "merged")
	rep, err := results.Merge(out, dirs, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 25 || rep.Done != 24 || rep.Missing != 0 || len(rep.Duplicates) != len(ids[0]) {
		t.Fatalf("report %+v", rep)
	}
	for _, d := range rep.Duplicates {
		if d.Flaky != (d.ID == flaky) || len(d.Verdicts) != 2 {
			t.Errorf("duplicate %+v", d)
		}
	}
	s, err := results.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Counts(); n.Pass != 23 || n.Flaky != 1 || n.Fail != 0 || s.Total != 24 {
		t.Errorf("merged counts %+v of %d", n, s.Total)
	}
	np := s.NotPassed()
	if len(np) != 1 || np[0].ID != flaky || s.Label(np[0]) != results.FlakyLabel {
		t.Fatalf("not passed: %+v", np)
	}
	var text strings.Builder
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "[recorded twice: pass in shard 1/3 (" + dirs[0] + "), fail in shard 1/3 (" + dirs[1] + ")]"
	if !strings.Contains(text.String(), want) {
		t.Errorf("results do not say %q:\n%s", want, text.String())
	}
	if b, err := os.ReadFile(filepath.Join(out, results.FailuresDir, flaky, "verdict.txt")); err != nil || string(b) != "fail in "+dirs[1] {
		t.Errorf("failure folder: %q, %v", b, err)
	}
}

// TestMergeMissing: shard 2 was never given, and shard 3 lost a schedule; both are counted,
// and named by shard from the schedule file.
func TestMergeMissing(t *testing.T) {
	ids, camp := shardsOf(t, 3)
	root := t.TempDir()
	dirs := []string{
		writeShard(t, filepath.Join(root, "a"), camp(0), ids[0]),
		writeShard(t, filepath.Join(root, "c"), camp(2), ids[2][1:]),
	}
	out := filepath.Join(root, "merged")
	rep, err := results.Merge(out, dirs, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.AbsentShards) != 1 || rep.AbsentShards[0] != (schedules.Shard{Index: 1, Count: 3}) {
		t.Errorf("absent shards %v", rep.AbsentShards)
	}
	if want := uint64(len(ids[1]) + 1); rep.Missing != want || rep.Unnamed != "" {
		t.Errorf("missing %d (%s), want %d", rep.Missing, rep.Unnamed, want)
	}
	if got := rep.MissingIDs[schedules.Shard{Index: 1, Count: 3}]; !slices.Equal(got, ids[1]) {
		t.Errorf("missing of shard 2: %v, want %v", got, ids[1])
	}
	if got := rep.MissingIDs[schedules.Shard{Index: 2, Count: 3}]; !slices.Equal(got, ids[2][:1]) {
		t.Errorf("missing of shard 3: %v, want %v", got, ids[2][:1])
	}
	// Without the schedule file, only counted.
	rep, err = results.Merge(out, dirs, filepath.Join(root, "nowhere.sched"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Missing != uint64(len(ids[1])+1) || !strings.Contains(rep.Unnamed, "nowhere.sched cannot be read") || len(rep.MissingIDs) != 0 {
		t.Errorf("without the file: %+v", rep)
	}
}

// TestMergeTruncatedRecords: a shard whose records file has a line that is not a record and
// a last line cut short keeps its good records; both bad lines are named.
func TestMergeTruncatedRecords(t *testing.T) {
	ids, camp := shardsOf(t, 3)
	root := t.TempDir()
	dirs := []string{
		writeShard(t, filepath.Join(root, "a"), camp(0), ids[0]),
		writeShard(t, filepath.Join(root, "b"), camp(1), ids[1]),
		writeShard(t, filepath.Join(root, "c"), camp(2), ids[2]),
	}
	path := filepath.Join(dirs[1], results.RecordsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	n := len(lines)
	lines[1] = "{\"id\": garbage\n"
	lines[n-1] = lines[n-1][:len(lines[n-1])/2] // killed while writing it
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := results.Merge(filepath.Join(root, "merged"), dirs, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Done != 22 || rep.Missing != 2 {
		t.Errorf("done %d, missing %d; want 22 and 2", rep.Done, rep.Missing)
	}
	if len(rep.Dropped) != 2 || !strings.HasPrefix(rep.Dropped[0], path+":2: not a record") ||
		rep.Dropped[1] != path+":"+strconv.Itoa(n)+": cut short (its run was killed while writing it), dropped" {
		t.Errorf("dropped %q", rep.Dropped)
	}
	if got := rep.MissingIDs[schedules.Shard{Index: 1, Count: 3}]; !slices.Equal(got, []string{ids[1][1], ids[1][n-1]}) {
		t.Errorf("missing %v, want the two bad lines' schedules", got)
	}
}

// TestMergeOutput: the output directory is new, or an earlier merge, which is replaced;
// anything else, or a merge that a run has resumed since, is refused.
func TestMergeOutput(t *testing.T) {
	ids, camp := shardsOf(t, 1)
	root := t.TempDir()
	dirs := []string{writeShard(t, filepath.Join(root, "a"), camp(0), ids[0])}
	out := filepath.Join(root, "merged")
	if _, err := results.Merge(out, dirs, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Merge(out, dirs, ""); err != nil {
		t.Errorf("merging again over a merge: %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 2 {
		t.Errorf("merge left %v in %s", entries, root)
	}

	other := filepath.Join(root, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Merge(other, dirs, ""); err == nil || !strings.Contains(err.Error(), "holds something other than a merge") {
		t.Errorf("merging over another directory: %v", err)
	}

	// A run resumed the merge: its records would be lost.
	whole := camp(0)
	whole.Shard, whole.Schedules = nil, 24
	st, err := results.Open(out, whole)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(record(ids[0][0], oracle.Fail)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	c, err := results.ReadCampaign(filepath.Join(out, results.CampaignFile))
	if err != nil || c.Merged == nil {
		t.Fatalf("a resumed merge forgot it was merged: %+v, %v", c, err)
	}
	if _, err := results.Merge(out, dirs, ""); err == nil || !strings.Contains(err.Error(), "was resumed by modulo run after it was merged") {
		t.Errorf("merging over a resumed merge: %v", err)
	}
}

// TestMergeOutputKept: an empty directory the user made, or a link to one, is filled and kept
// (its inode, mode and the link), never removed or renamed over; a file, a FIFO and - are
// refused, and stay what they were.
func TestMergeOutputKept(t *testing.T) {
	ids, camp := shardsOf(t, 1)
	root := t.TempDir()
	dirs := []string{writeShard(t, filepath.Join(root, "a"), camp(0), ids[0])}
	empty, link := filepath.Join(root, "empty"), filepath.Join(root, "link")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("empty", link); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := results.Merge(link, dirs, ""); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(empty)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Mode() != before.Mode() {
		t.Errorf("the output directory was replaced: mode %v, was %v", after.Mode(), before.Mode())
	}
	if to, err := os.Readlink(link); err != nil || to != "empty" {
		t.Errorf("the link now points to %q (%v)", to, err)
	}
	if _, err := results.ReadSummary(empty); err != nil {
		t.Errorf("the merge is not in the directory: %v", err)
	}
	entries, _ := os.ReadDir(empty)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("the merge left %s in its output", e.Name())
		}
	}

	file, fifo := filepath.Join(root, "file"), filepath.Join(root, "fifo")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ out, want string }{
		{file, "merge: " + file + " is not a directory: the output is a campaign directory"},
		{fifo, "merge: " + fifo + " is not a directory: the output is a campaign directory"},
		{"-", "merge: the output is a campaign directory, not a stream: name a directory, not -"},
	} {
		if _, err := results.Merge(tt.out, dirs, ""); err == nil || err.Error() != tt.want {
			t.Errorf("Merge(%s) = %v, want %q", tt.out, err, tt.want)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Errorf("the file holds %q", b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO is %v now (%v)", st.Mode(), err)
	}
}
