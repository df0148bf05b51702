package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// testSpec is a cluster spec for a test: a fresh directory and free ports on 127.0.0.1. These
// tests observe the servers apart from the plugin, by their ports on 127.0.0.1 (connect,
// serversOn, MONITOR), so they run on the kit's loopback network, and test it; the conformance
// suite and the campaigns run in network namespaces.
func testSpec(t testing.TB, drm string, ops, n int, config string) cem.ClusterSpec {
	t.Helper()
	return cem.ClusterSpec{
		DRM: drm, Ops: ops, Replicas: n,
		Dir:         t.TempDir(),
		BasePort:    plugintest.FreePorts(t, n),
		ScheduleID:  "test",
		Config:      []byte(config + "\nnetwork = \"loopback\"\n"),
		StepTimeout: 20 * time.Second,
	}
}

func newPlugin() *kit.Plugin { return kit.New(about, &system{}) }

// startCluster starts a cluster and tears it down when the test ends.
func startCluster(t testing.TB, spec cem.ClusterSpec) *kit.Plugin {
	t.Helper()
	p := newPlugin()
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

// connect opens a client of replica i's server (database 0) for a test to observe it on its
// own, apart from the plugin.
func connect(t testing.TB, spec cem.ClusterSpec, i int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(spec.BasePort+i), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// infoField reads one field of replica i's INFO section.
func infoField(t testing.TB, spec cem.ClusterSpec, i int, section, field string) string {
	t.Helper()
	text, err := connect(t, spec, i).Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("replica %d: INFO %s: %v", i, section, err)
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// serverPid reads the pid of replica i's server from the pid file the kit keeps.
func serverPid(t testing.TB, spec cem.ClusterSpec, i int) int {
	t.Helper()
	files, err := proc.PidFiles(spec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	name := about.Name + "-" + strconv.Itoa(i) + proc.PidFileSuffix
	for _, f := range files {
		if filepath.Base(f.Path) == name {
			return f.Pid
		}
	}
	t.Fatalf("no pid file %s in %s", name, spec.Dir)
	return 0
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

// parseSchedule reads a schedule's transitions from their text, as a schedule file has them.
func parseSchedule(t testing.TB, text string) schedule {
	t.Helper()
	steps, err := schedules.ParseBody(text)
	if err != nil {
		t.Fatal(err)
	}
	return schedule{id: "test", steps: steps}
}

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

// finalLinks are the model's links after the schedule of spec.
func finalLinks(t testing.TB, spec cem.ClusterSpec, s schedule) []int {
	t.Helper()
	d, err := drms.Lookup(spec.DRM)
	if err != nil {
		t.Fatal(err)
	}
	params := aem.Params{Ops: spec.Ops, Replicas: spec.Replicas}
	state := d.Model.Init(params)
	for i := range s.steps {
		state = d.Model.Apply(params, &state, &s.steps[i])
	}
	return state.Src
}

// runResult is what a schedule's run did: Start's actions are not reported, each step's are;
// and the data read at the end.
type runResult struct {
	reports []cem.StepReport
	snap    cem.Snapshot
}

// actions lists what the steps did, one "replica what" an entry.
func (r *runResult) actions() []string {
	var out []string
	for _, rep := range r.reports {
		for _, a := range rep.Actions {
			out = append(out, strconv.Itoa(a.Replica)+" "+a.What)
		}
	}
	return out
}

// runSchedule runs schedule s on a fresh cluster of p, reads it, calls inspect (if any) with
// the servers still up, and tears the cluster down.
func runSchedule(t testing.TB, p cem.CEM, spec cem.ClusterSpec, s schedule, inspect func(r *runResult)) (r *runResult, err error) {
	t.Helper()
	ctx := context.Background()
	spec.ScheduleID = s.id
	defer func() { err = errors.Join(err, p.Teardown(ctx)) }()
	r = &runResult{}
	if err := p.Start(ctx, spec); err != nil {
		return r, err
	}
	for i, st := range s.steps {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: st.String()})
		r.reports = append(r.reports, rep)
		if err != nil {
			return r, fmt.Errorf("step %d %s: %w", i+1, st, err)
		}
	}
	if r.snap, err = p.Read(ctx); err != nil {
		return r, err
	}
	if inspect != nil {
		inspect(r)
	}
	return r, nil
}
