package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// roots names each replica's replication tree by its root in links.
func roots(links []int) []int {
	out := make([]int, len(links))
	for i := range links {
		r := i
		for k := 0; links[r] >= 0 && k < len(links); k++ {
			r = links[r]
		}
		out[i] = r
	}
	return out
}

// groupsOff says how the snapshot's groups differ from the trees of the model's final links,
// or returns "" when each replica's Group is the root of its tree.
func groupsOff(snap cem.Snapshot, links []int) string {
	var b strings.Builder
	for i, root := range roots(links) {
		if g := snap.Replicas[i].Group; g != root {
			fmt.Fprintf(&b, "replica %d in group %d, its tree's root is %d; ", i, g, root)
		}
	}
	return b.String()
}

// groupDifferences describes the unreadable replicas and those that differ from the first of
// their group, or returns "" when every replica was read and every group holds one data set.
func groupDifferences(snap cem.Snapshot) string {
	var b strings.Builder
	first := map[int]int{} // group -> its first readable replica
	for i, r := range snap.Replicas {
		if r.Err != "" {
			fmt.Fprintf(&b, "replica %d unreadable: %s; ", i, r.Err)
			continue
		}
		f, ok := first[r.Group]
		if !ok {
			first[r.Group] = i
			continue
		}
		if want := snap.Replicas[f].Data; !maps.Equal(want, r.Data) {
			fmt.Fprintf(&b, "replica %d %v differs from replica %d %v (group %d); ", i, slices.Sorted(maps.Keys(r.Data)), f, slices.Sorted(maps.Keys(want)), r.Group)
		}
	}
	return b.String()
}

// groupCount is how many groups the snapshot has.
func groupCount(snap cem.Snapshot) int {
	gs := map[int]bool{}
	for _, r := range snap.Replicas {
		gs[r.Group] = true
	}
	return len(gs)
}

// TestSchedules runs every schedule of each DRM on real servers through the cem.CEM interface
// and checks that the replicas converged within their groups, and that the groups are the
// replication trees of the model's final links: Redis replicates only along links, so
// replicas the model leaves in separate trees (S/CL/R recoveries that keep no link, so that
// two primaries stand) are compared only within their trees.
func TestSchedules(t *testing.T) {
	plugintest.Servers(t) // every schedule on real servers
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
			several := 0
			for _, s := range all {
				spec := testSpec(t, tt.drm, tt.ops, tt.n, "")
				start := time.Now()
				out, err := runSchedule(t, newPlugin(), spec, s, nil)
				durations = append(durations, time.Since(start))
				if err != nil {
					t.Errorf("%s: %v", s, err)
					continue
				}
				if left := serversOn(t, spec.BasePort, tt.n); len(left) > 0 {
					t.Errorf("%s: servers left after Teardown: %v", s, left)
				}
				links := finalLinks(t, spec, s)
				if d := groupsOff(out.snap, links); d != "" {
					t.Errorf("%s: groups are not the model's trees (links %v): %s", s, links, d)
				}
				if d := groupDifferences(out.snap); d != "" {
					t.Errorf("%s: replicas of one group differ (links %v): %s", s, links, d)
				}
				if groupCount(out.snap) > 1 {
					several++
				}
			}
			slices.Sort(durations)
			t.Logf("%d schedules, %d ending in one tree, %d in several (each converged within its tree); median %v per schedule",
				len(all), len(all)-several, several, durations[len(durations)/2].Round(time.Millisecond))
		})
	}
}

// TestBrokenRealisationDiverges proves that the check above can fail: with the realisation
// deliberately skipping the relinks of recovering replicas, some schedule ends with replicas of
// one tree holding different data.
func TestBrokenRealisationDiverges(t *testing.T) {
	plugintest.Servers(t) // schedules on real servers
	diverged, skipped, unprobed := 0, 0, 0
	all := allSchedules(t, "slr", 1, 3)
	for _, s := range all {
		spec := testSpec(t, "slr", 1, 3, `break_realisation = "skip-relink"`)
		out, err := runSchedule(t, newPlugin(), spec, s, nil)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		for _, rep := range out.reports {
			for _, a := range rep.Actions {
				switch {
				case strings.Contains(a.What, ": skipped: follow "):
					skipped++
				case strings.Contains(a.What, ": probe skipped: "):
					unprobed++
				}
			}
		}
		if d := groupDifferences(out.snap); d != "" {
			diverged++
			t.Logf("%s: %s", s, d)
		}
	}
	if skipped == 0 {
		t.Error("no action says a relink was skipped")
	}
	if unprobed == 0 {
		t.Error("no action says the probe left a tree alone whose replicas differ")
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
		if _, err := runSchedule(b, newPlugin(), spec, s, nil); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Milliseconds()), "median-ms/schedule")
}
