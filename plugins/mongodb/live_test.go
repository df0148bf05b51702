package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"

	"github.com/modulo-testing/modulo/cem"
)

// The tests in this file drive a real replica set of mongod processes. They run whenever a
// mongod is configured ($MODULO_MONGOD or PATH) and are skipped, saying so, when none is:
// MongoDB is not in Debian and cannot be downloaded on the machines this repository is
// developed on, so these tests have never run there.

// liveMongod returns the mongod the live tests use, or skips the test.
func liveMongod(t *testing.T) string {
	t.Helper()
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	path, err := c.mongodPath()
	if err != nil {
		t.Skip("no mongod: set MODULO_MONGOD or put mongod on PATH")
	}
	return path
}

// liveSpec is a cluster spec with a fresh directory and free ports.
func liveSpec(t *testing.T, ops, n int, id string) cem.ClusterSpec {
	t.Helper()
	return cem.ClusterSpec{
		DRM: "qcm", Ops: ops, Replicas: n,
		Dir:         t.TempDir(),
		BasePort:    plugintest.FreePorts(t, n),
		ScheduleID:  id,
		StepTimeout: 30 * time.Second,
	}
}

// mongodsOn lists the mongod processes that listen on any of the given ports, read from their
// command lines ("... --port 23001 ...").
func mongodsOn(t *testing.T, base, n int) []string {
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
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "mongod") {
			continue
		}
		if i := slices.Index(args, "--port"); i >= 0 && i+1 < len(args) {
			if port, err := strconv.Atoi(args[i+1]); err == nil && port >= base && port < base+n {
				found = append(found, e.Name()+" "+strings.Join(args, " "))
			}
		}
	}
	return found
}

// checkNothingLeft fails the test when a mongod of the cluster or a pid file is left.
func checkNothingLeft(t *testing.T, spec cem.ClusterSpec) {
	t.Helper()
	if left := mongodsOn(t, spec.BasePort, spec.Replicas); len(left) > 0 {
		t.Errorf("mongod processes left after Teardown: %v", left)
	}
	_ = filepath.WalkDir(spec.Dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, proc.PidFileSuffix) {
			t.Errorf("pid file left after Teardown: %s", path)
		}
		return nil
	})
}

func TestLiveInfo(t *testing.T) {
	liveMongod(t)
	info, err := New().Info(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "mongodb" || info.ServerVersion == "" || !slices.Equal(info.Capabilities.DRMs, []string{"qcm"}) || info.Capabilities.PortsPerReplica != 1 {
		t.Errorf("Info = %+v", info)
	}
	t.Logf("mongod %s", info.ServerVersion)
}

// TestLiveStartTeardown starts a replica set and checks that it is in sync with member 0
// primary, that every member answers as itself, and that Teardown leaves nothing behind.
func TestLiveStartTeardown(t *testing.T) {
	liveMongod(t)
	ctx := context.Background()
	spec := liveSpec(t, 1, 3, "start")
	p := New()
	defer checkNothingLeft(t, spec)
	defer func() {
		if err := p.Teardown(ctx); err != nil {
			t.Error(err)
		}
	}()
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if p.primary != 0 {
		t.Errorf("member %d is primary after Start, want 0", p.primary)
	}
	vs, err := p.views(ctx, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if ok, primary, why := inSync(vs, 0); !ok || primary != 0 {
		t.Errorf("after Start: in sync %v, primary %d: %s", ok, primary, why)
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range snap.Replicas {
		if r.Err != "" || len(r.Data) != 0 {
			t.Errorf("replica %d after Start: data %v, error %q; want no data", i, r.Data, r.Err)
		}
	}
}

// TestLiveQCM runs every Q/C/M schedule of ops=1 with 3 replicas, each on a fresh replica set,
// and checks the outcome: every replica is read and all hold the same data, and the one write
// is there exactly when the model keeps it (see TestPlanFirstWriteSurvives).
func TestLiveQCM(t *testing.T) {
	liveMongod(t)
	const ops, n = 1, 3
	all := qcmSchedules(t, ops, n)
	if len(all) != 6 {
		t.Fatalf("%d schedules of Q/C/M ops=1 n=3, want 6", len(all))
	}
	for _, sched := range all {
		t.Run(sched.String(), func(t *testing.T) {
			ctx := context.Background()
			spec := liveSpec(t, ops, n, sched.id)
			var c cem.CEM = New()
			defer checkNothingLeft(t, spec)
			defer func() {
				if err := c.Teardown(ctx); err != nil {
					t.Error(err)
				}
			}()
			if err := c.Start(ctx, spec); err != nil {
				t.Fatal(err)
			}
			for i, st := range sched.steps {
				rep, err := c.Apply(ctx, cem.Step{Index: i, Transition: st.String()})
				for _, a := range rep.Actions {
					t.Logf("step %d %s: replica %d: %s", i+1, st, a.Replica, a.What)
				}
				if err != nil {
					t.Fatalf("step %d %s: %v", i+1, st, err)
				}
				if len(rep.Actions) == 0 {
					t.Errorf("step %d %s reported no actions", i+1, st)
				}
			}
			snap, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Replicas) != n {
				t.Fatalf("read %d replicas, want %d", len(snap.Replicas), n)
			}
			d, first := sched.steps[0], sched.steps[1]
			want := map[string]string{}
			if slices.ContainsFunc(first.Group, func(i int) bool { return d.Writes[i] > 0 }) {
				want["k1.1"] = sched.id + ":1.1"
			}
			for i, r := range snap.Replicas {
				if r.Err != "" {
					t.Errorf("replica %d unreadable: %s", i, r.Err)
					continue
				}
				if !maps.Equal(r.Data, want) {
					t.Errorf("replica %d holds %v, want %v", i, r.Data, want)
				}
			}
		})
	}
}

// TestLiveMemberCrashNotReached kills a secondary behind the plugin's back and checks that the
// next step that waits for it reports the crash as not reached, naming the member and its log,
// instead of waiting out the deadline.
func TestLiveMemberCrashNotReached(t *testing.T) {
	liveMongod(t)
	ctx := context.Background()
	spec := liveSpec(t, 1, 3, "crash")
	p := New()
	defer checkNothingLeft(t, spec)
	defer func() {
		if err := p.Teardown(ctx); err != nil {
			t.Error(err)
		}
	}()
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// D[0,1,1] with member 0 primary puts replica 1 on member 1, which must then hold the
	// write; SIGKILL it first, as a crash of mongod would.
	victim := p.members[1]
	if err := syscall.Kill(-victim.proc.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.proc.Exited()
	start := time.Now()
	_, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,1,1]"})
	if !cem.IsNotReached(err) || !strings.Contains(err.Error(), "member 1's mongod") || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("Apply = %v, want a not-reached error saying member 1's mongod exited", err)
	}
	if took := time.Since(start); took > spec.StepTimeout {
		t.Errorf("the crash was reported after %v, beyond the step timeout %v", took, spec.StepTimeout)
	}
	t.Log(err)
}

// TestLiveReadIsPerMember checks that Read reads each member on its own: a write that only
// the primary holds shows on its replica alone.
func TestLiveReadIsPerMember(t *testing.T) {
	liveMongod(t)
	ctx := context.Background()
	spec := liveSpec(t, 1, 3, "read")
	p := New()
	defer checkNothingLeft(t, spec)
	defer func() {
		if err := p.Teardown(ctx); err != nil {
			t.Error(err)
		}
	}()
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// Kill both secondaries, write to the primary alone, and read before anything else.
	for _, i := range []int{1, 2} {
		if err := p.members[i].kill(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.members[0].write(ctx, "only", "primary"); err != nil {
		t.Fatal(err)
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(snap.Replicas[0].Data)
	if got != "map[only:primary]" || snap.Replicas[1].Err == "" || snap.Replicas[2].Err == "" {
		t.Errorf("Read = %+v; want replica 0 holding only=primary and replicas 1, 2 unreadable (down)", snap.Replicas)
	}
}
