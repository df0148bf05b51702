package main

import (
	"context"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"maps"
	"os/exec"
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

// testSpec is a Q/C/Z cluster spec for a test: a fresh directory and free ports.
func testSpec(t testing.TB, ops, n int, id, config string) cem.ClusterSpec {
	t.Helper()
	return cem.ClusterSpec{
		DRM: "qcz", Ops: ops, Replicas: n,
		Dir:         t.TempDir(),
		BasePort:    plugintest.FreePorts(t, n*portsPerReplica),
		ScheduleID:  id,
		Config:      []byte(config),
		StepTimeout: 30 * time.Second,
	}
}

// startCluster starts a cluster and tears it down when the test ends, whatever happens.
func startCluster(t testing.TB, spec cem.ClusterSpec) *Plugin {
	t.Helper()
	p := NewPlugin()
	t.Cleanup(func() {
		if err := p.Teardown(context.Background()); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	if err := p.Start(context.Background(), spec); err != nil {
		t.Fatalf("start: %v", err)
	}
	return p
}

// qczSchedules returns every Q/C/Z schedule for ops and n, in canonical order.
func qczSchedules(t testing.TB, ops, n int) []schedules.Schedule {
	t.Helper()
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	p := aem.Params{Ops: ops, Replicas: n}
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		t.Fatal(err)
	}
	v := &collector{drm: d.Name, p: p}
	if err := g.Walk(v); err != nil {
		t.Fatal(err)
	}
	return v.out
}

// collector gathers a walk's schedules.
type collector struct {
	drm   string
	p     aem.Params
	stack []aem.Transition
	out   []schedules.Schedule
}

func (v *collector) Push(e *aem.Edge) { v.stack = append(v.stack, e.T) }
func (v *collector) Pop()             { v.stack = v.stack[:len(v.stack)-1] }
func (v *collector) Leaf() error {
	steps := append([]aem.Transition(nil), v.stack...)
	v.out = append(v.out, schedules.Schedule{ID: schedules.ID(v.drm, v.p, schedules.Body(steps)), Steps: steps})
	return nil
}

// outcome is what running one schedule gave.
type outcome struct {
	snap    cem.Snapshot
	reports []cem.StepReport
	differ  bool   // the replicas' data differ (or a replica could not be read)
	why     string // how they differ
}

// compare tells whether the replicas hold different data, and how.
func compare(snap cem.Snapshot) (bool, string) {
	for i, r := range snap.Replicas {
		if r.Err != "" {
			return true, "replica " + strconv.Itoa(i) + " unreadable: " + r.Err
		}
	}
	for i := 1; i < len(snap.Replicas); i++ {
		if !maps.Equal(snap.Replicas[0].Data, snap.Replicas[i].Data) {
			return true, "replica 0 " + dataText(snap.Replicas[0].Data) + " vs replica " + strconv.Itoa(i) + " " + dataText(snap.Replicas[i].Data)
		}
	}
	return false, ""
}

func dataText(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func actionsText(rep cem.StepReport) string {
	var b strings.Builder
	for _, a := range rep.Actions {
		b.WriteString("\n  " + a.Time.Format("15:04:05.000") + " " + a.What)
	}
	return b.String()
}

// assertNoJVMs fails the test if a ZooKeeper JVM is still running anywhere on the machine.
func assertNoJVMs(t testing.TB) {
	t.Helper()
	out, err := exec.Command("pgrep", "-af", "QuorumPeerMain").Output()
	if err == nil && len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("ZooKeeper JVMs left running:\n%s", out)
	}
}
