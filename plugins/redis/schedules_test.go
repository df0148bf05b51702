package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
)

// trees groups the replicas by the replication tree the model's final links put them in.
func trees(links []int) [][]int {
	root := func(i int) int {
		for k := 0; links[i] >= 0 && k < len(links); k++ {
			i = links[i]
		}
		return i
	}
	byRoot := map[int][]int{}
	for i := range links {
		byRoot[root(i)] = append(byRoot[root(i)], i)
	}
	var out [][]int
	for _, r := range slices.Sorted(maps.Keys(byRoot)) {
		out = append(out, byRoot[r])
	}
	return out
}

// treeDifferences describes the replicas that differ from the others of their tree, or returns
// "" when every tree holds one data set.
func treeDifferences(snap cem.Snapshot, links []int) string {
	var b strings.Builder
	for _, tree := range trees(links) {
		first := snap.Replicas[tree[0]].Data
		for _, i := range tree[1:] {
			if !maps.Equal(first, snap.Replicas[i].Data) {
				fmt.Fprintf(&b, "replica %d %v differs from replica %d %v; ", i, slices.Sorted(maps.Keys(snap.Replicas[i].Data)), tree[0], slices.Sorted(maps.Keys(first)))
			}
		}
	}
	return b.String()
}

// TestSchedules runs every schedule of each DRM on real servers through the cem.CEM interface
// and checks that the replicas converged. Replicas that the model's final links leave in
// separate trees (S/CL/R recoveries that keep no link, so that two primaries stand) cannot
// converge in Redis, which replicates only along links, although the model counts them as
// resynced; those schedules are reported, not failed.
func TestSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every schedule on real servers")
	}
	tests := []struct {
		drm    string
		ops, n int
	}{
		{"ssr", 1, 3},
		{"slr", 1, 3},
		{"sclr", 1, 2},
		{"sclr", 2, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/ops=%d/n=%d", tt.drm, tt.ops, tt.n), func(t *testing.T) {
			all := allSchedules(t, tt.drm, tt.ops, tt.n)
			var durations []time.Duration
			separate := 0
			for _, s := range all {
				spec := testSpec(t, tt.drm, tt.ops, tt.n, "")
				start := time.Now()
				out, err := runSchedule(t, spec, s)
				durations = append(durations, time.Since(start))
				if err != nil {
					t.Errorf("%s: %v", s, err)
					continue
				}
				if left := serversOn(t, spec.BasePort, tt.n); len(left) > 0 {
					t.Errorf("%s: servers left after Teardown: %v", s, left)
				}
				if d := treeDifferences(out.snap, out.links); d != "" || hasErr(out.snap) {
					t.Errorf("%s: replicas of one tree differ (links %v): %s %s", s, out.links, d, differences(out.snap))
					continue
				}
				if d := differences(out.snap); d != "" {
					separate++
					t.Logf("%s: the model leaves separate trees (links %v): %s", s, out.links, d)
				}
			}
			slices.Sort(durations)
			t.Logf("%d schedules, %d converged in one data set, %d end in separate trees; median %v per schedule",
				len(all), len(all)-separate, separate, durations[len(durations)/2].Round(time.Millisecond))
		})
	}
}

func hasErr(snap cem.Snapshot) bool {
	return slices.ContainsFunc(snap.Replicas, func(r cem.ReplicaData) bool { return r.Err != "" })
}

// TestBrokenRealisationDiverges proves that the check above can fail: with the realisation
// deliberately skipping the relinks of recovering replicas, some schedule ends with replicas of
// one tree holding different data.
func TestBrokenRealisationDiverges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs schedules on real servers")
	}
	diverged, skipped := 0, 0
	all := allSchedules(t, "slr", 1, 3)
	for _, s := range all {
		spec := testSpec(t, "slr", 1, 3, `break_realisation = "skip-relink"`)
		out, err := runSchedule(t, spec, s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		for _, rep := range out.reports {
			for _, a := range rep.Actions {
				if strings.HasPrefix(a.What, "skipped REPLICAOF") {
					skipped++
				}
			}
		}
		if d := treeDifferences(out.snap, out.links); d != "" {
			diverged++
			t.Logf("%s: %s", s, d)
		}
	}
	if skipped == 0 {
		t.Error("no action says a relink was skipped")
	}
	if diverged == 0 {
		t.Errorf("all %d schedules converged although the realisation skipped %d relinks", len(all), skipped)
	}
}

// BenchmarkScheduleSLR measures the time to run one schedule of S/L/R with ops=2 and n=3 from
// Start to Teardown, cycling through all of them, and reports the median.
func BenchmarkScheduleSLR(b *testing.B) {
	all := allSchedules(b, "slr", 2, 3)
	var durations []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := all[i%len(all)]
		spec := testSpec(b, "slr", 2, 3, "")
		start := time.Now()
		if _, err := runSchedule(b, spec, s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Milliseconds()), "median-ms/schedule")
}
