package main

import (
	"context"
	"fmt"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// testSpec is a cluster spec for a test: a fresh directory and free ports.
func testSpec(t testing.TB, drm string, ops, n int, config string) cem.ClusterSpec {
	t.Helper()
	return cem.ClusterSpec{
		DRM: drm, Ops: ops, Replicas: n,
		Dir:         t.TempDir(),
		BasePort:    plugintest.FreePorts(t, n),
		ScheduleID:  "test",
		Config:      []byte(config),
		StepTimeout: 20 * time.Second,
	}
}

// startCluster starts a cluster and tears it down when the test ends.
func startCluster(t testing.TB, spec cem.ClusterSpec) *Plugin {
	t.Helper()
	p := New()
	t.Cleanup(func() {
		if err := p.Teardown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := p.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	return p
}

// serversOn lists the redis-server processes that listen on any of the given ports, read from
// the process titles ("redis-server 127.0.0.1:21000").
func serversOn(t testing.TB, base, n int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		f := strings.Fields(strings.ReplaceAll(string(b), "\x00", " "))
		if len(f) < 2 || filepath.Base(f[0]) != "redis-server" {
			continue
		}
		for port := base; port < base+n; port++ {
			if strings.HasSuffix(f[1], ":"+strconv.Itoa(port)) {
				found = append(found, e.Name()+" "+strings.Join(f, " "))
			}
		}
	}
	return found
}

// schedule is one generated schedule.
type schedule struct {
	id    string
	steps []aem.Transition
}

func (s schedule) String() string { return string(schedules.Body(s.steps)) }

// collector gathers every schedule of a walk.
type collector struct {
	drm  string
	p    aem.Params
	path []aem.Transition
	out  []schedule
}

func (c *collector) Push(e *aem.Edge) { c.path = append(c.path, e.T) }
func (c *collector) Pop()             { c.path = c.path[:len(c.path)-1] }
func (c *collector) Leaf() error {
	steps := slices.Clone(c.path)
	c.out = append(c.out, schedule{id: schedules.ID(c.drm, c.p, schedules.Body(steps)), steps: steps})
	return nil
}

// allSchedules generates every schedule of a DRM.
func allSchedules(t testing.TB, drm string, ops, n int) []schedule {
	t.Helper()
	d, err := drms.Lookup(drm)
	if err != nil {
		t.Fatal(err)
	}
	p := aem.Params{Ops: ops, Replicas: n}
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{drm: d.Name, p: p}
	if err := g.Walk(c); err != nil {
		t.Fatal(err)
	}
	return c.out
}

// outcome is what running one schedule gave.
type outcome struct {
	snap    cem.Snapshot
	reports []cem.StepReport
	links   []int // the model's links at the end
}

// runSchedule runs one schedule on a fresh cluster through the cem.CEM interface and tears the
// cluster down.
func runSchedule(t testing.TB, spec cem.ClusterSpec, s schedule) (outcome, error) {
	t.Helper()
	return runScheduleOn(t, New(), spec, s)
}

// runScheduleOn runs one schedule on c and tears the cluster down. The final links are the
// model's, read from the plugin when c is one.
func runScheduleOn(t testing.TB, c cem.CEM, spec cem.ClusterSpec, s schedule) (outcome, error) {
	t.Helper()
	ctx := context.Background()
	spec.ScheduleID = s.id
	defer func() {
		if err := c.Teardown(ctx); err != nil {
			t.Error(err)
		}
	}()
	var out outcome
	if err := c.Start(ctx, spec); err != nil {
		return out, err
	}
	for i, st := range s.steps {
		rep, err := c.Apply(ctx, cem.Step{Index: i, Transition: st.String()})
		out.reports = append(out.reports, rep)
		if err != nil {
			return out, err
		}
	}
	if p, ok := c.(*Plugin); ok {
		out.links = slices.Clone(p.state.Src)
	}
	snap, err := c.Read(ctx)
	out.snap = snap
	return out, err
}

// differences describes how the replicas' data differ, or returns "" when every replica was
// read and all hold the same data.
func differences(snap cem.Snapshot) string {
	var b strings.Builder
	for i, r := range snap.Replicas {
		if r.Err != "" {
			fmt.Fprintf(&b, "replica %d unreadable: %s; ", i, r.Err)
		}
	}
	if b.Len() > 0 {
		return b.String()
	}
	first := snap.Replicas[0].Data
	same := true
	for _, r := range snap.Replicas[1:] {
		same = same && maps.Equal(first, r.Data)
	}
	if same {
		return ""
	}
	for i, r := range snap.Replicas {
		keys := slices.Sorted(maps.Keys(r.Data))
		fmt.Fprintf(&b, "replica %d: %v; ", i, keys)
	}
	return b.String()
}
