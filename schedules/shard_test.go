package schedules_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/schedules"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want schedules.Shard
		err  string
	}{
		{"1/4", schedules.Shard{Index: 0, Count: 4}, ""},
		{"4/4", schedules.Shard{Index: 3, Count: 4}, ""},
		{"1/1", schedules.Shard{Index: 0, Count: 1}, ""},
		{"0/4", schedules.Shard{}, "K must be from 1 to N"},
		{"5/4", schedules.Shard{}, "K must be from 1 to N"},
		{"1/0", schedules.Shard{}, "K must be from 1 to N"},
		{"2", schedules.Shard{}, "want K/N"},
		{"a/b", schedules.Shard{}, "want K/N"},
	}
	for _, tt := range tests {
		got, err := schedules.ParseShard(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseShard(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.in {
			t.Errorf("ParseShard(%q) = %v (%q), %v; want %v", tt.in, got, got, err, tt.want)
		}
	}
}

// partitionCases are the files the partition is tested on: one with restore points (Q/C/Z),
// Redis's without, a tiny one with fewer schedules than shards.
var partitionCases = []struct {
	drm string
	p   aem.Params
}{
	{"qcz", aem.Params{Ops: 3, Replicas: 3}},
	{"qcz", aem.Params{Ops: 1, Replicas: 3}},
	{"slr", aem.Params{Ops: 2, Replicas: 3}},
	{"ssr", aem.Params{Ops: 2, Replicas: 3}},
	{"sclr", aem.Params{Ops: 2, Replicas: 2}},
}

func partition(t *testing.T, ss []schedules.Schedule, m aem.Model, p aem.Params, n int) []schedules.Range {
	t.Helper()
	rs, err := schedules.Partition(m, p, schedules.Stream(ss), n)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestPartition: for n = 1..16, every schedule is in exactly one shard; a shard's work is what
// Plan counts for its schedules; shards are balanced; the schedules that share their first
// restore point stay together wherever that keeps the balance.
func TestPartition(t *testing.T) {
	for _, c := range partitionCases {
		d, ss := generated(t, c.drm, c.p)
		whole := schedules.Plan(d.Model, c.p, [][]schedules.Schedule{ss}, true)
		total := int64(whole.Steps + whole.Starts)
		var biggest int64
		for _, s := range ss {
			biggest = max(biggest, int64(len(s.Steps)+1))
		}
		for n := 1; n <= 16; n++ {
			name := fmt.Sprintf("%s-%dx%d/n=%d", c.drm, c.p.Ops, c.p.Replicas, n)
			rs := partition(t, ss, d.Model, c.p, n)
			if len(rs) != n {
				t.Fatalf("%s: %d ranges", name, len(rs))
			}
			next := 0
			var sum int64
			for k, r := range rs {
				if r.First != next || r.End < r.First {
					t.Fatalf("%s: shard %d is %d-%d after %d: not contiguous", name, k+1, r.First, r.End, next)
				}
				next = r.End
				w := schedules.Plan(d.Model, c.p, [][]schedules.Schedule{ss[r.First:r.End]}, true)
				if r.Work != int64(w.Steps+w.Starts) {
					t.Errorf("%s: shard %d: work %d, Plan says %d steps and %d starts", name, k+1, r.Work, w.Steps, w.Starts)
				}
				sum += r.Work
				// Each boundary lands within a schedule of its aim, and the shard after one
				// inside a shared prefix runs that prefix again.
				if dev := abs(r.Work - total/int64(n)); dev > 2*biggest+1 {
					t.Errorf("%s: shard %d has work %d, %d from the mean %d", name, k+1, r.Work, dev, total/int64(n))
				}
			}
			if next != len(ss) {
				t.Fatalf("%s: shards end at %d of %d schedules", name, next, len(ss))
			}
			// Cutting costs at most the prefixes run again, one per boundary.
			if sum < total || sum > total+int64(n-1)*biggest {
				t.Errorf("%s: shards' work sums to %d, the whole file's is %d", name, sum, total)
			}
		}
	}
}

// TestPartitionCostsLittle: Q/C/Z ops=3 (1,035 schedules, 16 first divergences of very
// different sizes): the prefixes that boundaries split cost little, and the largest shard,
// which sets a campaign's wall time, is close to the mean.
func TestPartitionCostsLittle(t *testing.T) {
	p := aem.Params{Ops: 3, Replicas: 3}
	d, ss := generated(t, "qcz", p)
	whole := schedules.Plan(d.Model, p, [][]schedules.Schedule{ss}, true)
	total := int64(whole.Steps + whole.Starts)
	for n := 2; n <= 16; n++ {
		var sum, largest int64
		for _, r := range partition(t, ss, d.Model, p, n) {
			sum += r.Work
			largest = max(largest, r.Work)
		}
		if sum > total*1025/1000 {
			t.Errorf("n=%d: the shards' work is %d, more than 2.5%% above the file's %d", n, sum, total)
		}
		if mean := total / int64(n); largest > mean*107/100 {
			t.Errorf("n=%d: the largest shard's work is %d, more than 7%% above the mean %d", n, largest, mean)
		}
	}
}

// TestPartitionStable: the shards of generated files, as testdata/partition.golden pins them,
// so that a change of the partition (or of the generator's order) cannot pass unnoticed: the
// shards of a campaign must be the same on every machine and in every version that records
// the same schedules.PartitionVersion.
func TestPartitionStable(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", schedules.PartitionVersion)
	for _, c := range partitionCases {
		d, ss := generated(t, c.drm, c.p)
		for _, n := range []int{2, 3, 4, 7, 16} {
			fmt.Fprintf(&b, "%s ops=%d replicas=%d n=%d:", c.drm, c.p.Ops, c.p.Replicas, n)
			for _, r := range partition(t, ss, d.Model, c.p, n) {
				first := "-"
				if r.Len() > 0 {
					first = ss[r.First].ID
				}
				fmt.Fprintf(&b, " %d+%d(%s)", r.First, r.Len(), first)
			}
			b.WriteByte('\n')
		}
	}
	golden := filepath.Join("testdata", "partition.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestPartitionStable -update writes it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the partition changed: a new algorithm needs a new schedules.PartitionVersion and golden file\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
