package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// These tests drive real ZooKeeper ensembles (Debian's, from /usr/share/java).

// ownerEnv marks the environment of every process this test binary starts, and of theirs: a
// JVM that holds it is this binary's, where a campaign's or another test binary's on the same
// machine is not.
const ownerEnv = "MODULO_ZOOKEEPER_TESTS"

func TestMain(m *testing.M) {
	owner := ownerEnv + "=" + strconv.Itoa(os.Getpid())
	os.Setenv(ownerEnv, strconv.Itoa(os.Getpid()))
	code := m.Run()
	// No test may leave a JVM behind, whatever it did.
	if left := ownJVMs(owner); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "ZooKeeper JVMs left running after the tests:\n%s\n", strings.Join(left, "\n"))
		code = 1
	}
	os.Exit(code)
}

// ownJVMs lists the ZooKeeper servers (QuorumPeerMain) whose environment holds owner, each as
// its pid and command line. It reads /proc rather than run pgrep: TestMain runs in the short
// suite too, which starts no program but the toolchain's and its stand-ins.
func ownJVMs(owner string) []string {
	entries, _ := os.ReadDir("/proc")
	var own []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "QuorumPeerMain") {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), owner) {
			own = append(own, e.Name()+" "+strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
		}
	}
	return own
}

// TestConformance runs modulo's conformance suite on real ensembles: in process, and through
// the plugin binary as modulo runs it.
func TestConformance(t *testing.T) {
	plugintest.Servers(t)
	plugintest.Run(t, plugintest.Config{
		DRM:    "qcz",
		New:    func() cem.CEM { return kit.New(about, &system{}) },
		Binary: plugintest.Build(t, "."),
	})
}

// TestSchedules runs Q/C/Z schedules and checks after every divergence, in the servers'
// transaction logs, that each write reached exactly the replicas the transition says, and at
// the end whether the replicas converged, as ZooKeeper 3.8.0 does on all but a few schedules.
func TestSchedules(t *testing.T) {
	body := func(want string) func(int, schedules.Schedule) bool {
		return func(_ int, sc schedules.Schedule) bool { return string(schedules.Body(sc.Steps)) == want }
	}
	tests := []struct {
		name     string
		ops, n   int
		pick     func(i int, sc schedules.Schedule) bool
		want     int
		minority bool // some write of the picked schedules reaches only a minority
		diverges bool
	}{
		{"ops1 all", 1, 3, func(int, schedules.Schedule) bool { return true }, 6, true, false},
		{"ops2 every eighth", 2, 3, func(i int, _ schedules.Schedule) bool { return i%8 == 0 }, 10, true, false},
		// The write reaches the leader and a follower, a minority of four: the follower's log
		// must hold it too.
		{"ops1 n4 minority follower", 1, 4, func(_ int, sc schedules.Schedule) bool { return sc.Steps[0].String() == "D[0,0,1,1]" }, 3, true, false},
		// A convergence failure of ZooKeeper 3.8.0: at C[0,2] the new leader (replica 0) has an
		// empty log and tells replica 2 to truncate to zxid 0, but replica 2's log keeps its
		// first transaction, the uncommitted k1.1, which it then serves for good.
		{"truncation to zxid 0", 2, 3, body("D[0,0,1] C[0,1] D[0,1,0] C[0,2] C[1]"), 1, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var picked []schedules.Schedule
			minority := false
			for i, sc := range qczSchedules(t, tt.ops, tt.n) {
				if tt.pick(i, sc) {
					picked = append(picked, sc)
					minority = minority || hasMinorityWrite(sc, tt.n)
				}
			}
			if len(picked) != tt.want || minority != tt.minority {
				t.Fatalf("picked %d schedules (minority writes: %v), want %d (%v)", len(picked), minority, tt.want, tt.minority)
			}
			for _, sc := range picked {
				t.Run(sc.ID, func(t *testing.T) {
					_, snap := run(t, sc, aem.Params{Ops: tt.ops, Replicas: tt.n}, checkDivergence)
					if d := oracle.Compare(snap); d.Converged() == tt.diverges {
						t.Errorf("%s: converged %v, want %v: %s", schedules.Body(sc.Steps), d.Converged(), !tt.diverges, d.Line())
					} else if tt.diverges {
						t.Logf("%s: %s", schedules.Body(sc.Steps), d.Line())
					}
				})
			}
		})
	}
}

// TestPartitions runs the conformance suite on Q/N/Z, whose crashes are partitions, and on
// Q/CN/Z, whose failing replicas are either: every replica in a network namespace of its own,
// listening on ZooKeeper's own ports (2181, 2888, 3888) at its own address, as every test here
// but TestVersion runs it.
func TestPartitions(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, ".")
	for _, drm := range []string{"qnz", "qcnz"} {
		t.Run(drm, func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{DRM: drm, New: func() cem.CEM { return kit.New(about, &system{}) }, Binary: bin})
		})
	}
}

// TestConformanceCorruption runs the suite on Q/C/Z with corruption, each failing server crashed
// or killed with one file of its state corrupted (a flipped bit or a truncation), a minority's
// disks at most broken at once, on 3.9.5; a server that refuses to restart (ZooKeeper checks
// its files' CRCs) ends its schedule, and the suite says which. Disk errors are not in this
// suite: ZooKeeper fails the schedules that take them, as TestEmptyLogAfterDiskError (3.8.0)
// and TestAckedInDeletedLog (3.9.5) keep.
func TestConformanceCorruption(t *testing.T) {
	plugintest.Servers(t)
	plugintest.Run(t, plugintest.Config{
		DRM:          "qcz+corruption",
		New:          func() cem.CEM { return kit.New(about, &system{}) },
		Binary:       plugintest.Build(t, "."),
		PluginConfig: jarDirConfig(builtJarDir(t, "3.9.5")),
	})
}

// TestConformancePause runs the suite on Q/C/Z+pause, each failing server crashed or paused
// (SIGSTOP until the convergence that brings it back, its JVM keeping what it held).
func TestConformancePause(t *testing.T) {
	plugintest.Servers(t)
	plugintest.Run(t, plugintest.Config{DRM: "qcz+pause", New: func() cem.CEM { return kit.New(about, &system{}) }, Binary: plugintest.Build(t, ".")})
}

// TestVersion: the version read from zookeeper.jar is the one the running server reports.
func TestVersion(t *testing.T) {
	plugintest.Servers(t)
	p := kit.New(about, &system{})
	info, err := p.Info(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// On the loopback network (the fallback where namespaces cannot be made), a replica's
	// client port is the first of its block.
	spec := testSpec(t, aem.Params{Ops: 1, Replicas: 3}, "version", []byte(`network = "loopback"`))
	spec.BasePort = plugintest.FreePorts(t, spec.Replicas*about.PortsPerReplica)
	start(t, p, spec)
	reply, err := fourLetter(context.Background(), "127.0.0.1:"+strconv.Itoa(spec.BasePort), "srvr")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply, "Zookeeper version: "+info.ServerVersion+"-") {
		t.Errorf("ServerVersion %q, but the server says %q", info.ServerVersion, firstLineOf(reply))
	}
}

// testSpec is a Q/C/Z cluster spec for a test: a fresh directory; its replicas each get a
// network namespace and ZooKeeper's own ports.
func testSpec(t testing.TB, p aem.Params, id string, config []byte) cem.ClusterSpec {
	t.Helper()
	plugintest.Servers(t)
	return cem.ClusterSpec{
		DRM: "qcz", Ops: p.Ops, Replicas: p.Replicas,
		Dir:         t.TempDir(),
		ScheduleID:  id,
		Config:      config,
		StepTimeout: 30 * time.Second,
	}
}

// start starts p's cluster and tears it down when the test ends, whatever happens.
func start(t testing.TB, p cem.CEM, spec cem.ClusterSpec) {
	t.Helper()
	t.Cleanup(func() {
		if err := p.Teardown(context.Background()); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	if err := p.Start(context.Background(), spec); err != nil {
		t.Fatalf("start: %v", err)
	}
}

// afterStep checks what step i (tr) did, knowing which server realises each abstract replica.
type afterStep func(t testing.TB, spec cem.ClusterSpec, i int, tr aem.Transition, servers []int)

// run realises sc on a fresh cluster, calling check after every step when it is not nil, and
// returns the plugin, with the cluster still up, and every replica's data.
func run(t testing.TB, sc schedules.Schedule, params aem.Params, check afterStep) (cem.CEM, cem.Snapshot) {
	t.Helper()
	p := kit.New(about, &system{})
	spec := testSpec(t, params, sc.ID, nil)
	start(t, p, spec)
	servers := make([]int, params.Replicas) // servers[a] realises abstract replica a
	for a := range servers {
		servers[a] = a
	}
	ctx := context.Background()
	for i, tr := range sc.Steps {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: tr.String()})
		if err != nil {
			t.Fatalf("%s: step %d %s: %v", schedules.Body(sc.Steps), i+1, tr, err)
		}
		// An action about abstract replica a names its server first: "zookeeper-<i>: ...".
		for _, a := range rep.Actions {
			name, _, _ := strings.Cut(a.What, ": ")
			if k, err := strconv.Atoi(strings.TrimPrefix(name, about.Name+"-")); err == nil && a.Replica >= 0 {
				servers[a.Replica] = k
			}
		}
		if check != nil {
			check(t, spec, i, tr, servers)
		}
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatalf("%s: read: %v", schedules.Body(sc.Steps), err)
	}
	return p, snap
}

// checkDivergence verifies, independently of the kit's own confirmation, what a divergence
// left on the servers' disks: write j of step i is in the transaction log of exactly the
// abstract replicas with Writes[a] >= j.
func checkDivergence(t testing.TB, spec cem.ClusterSpec, i int, tr aem.Transition, servers []int) {
	t.Helper()
	if tr.Kind != aem.Divergence {
		return
	}
	for a, w := range tr.Writes {
		name := about.Name + "-" + strconv.Itoa(servers[a])
		recs, err := readTxnLogs(filepath.Join(spec.Dir, name, "data"))
		if err != nil {
			t.Fatal(err)
		}
		for j := 1; j <= tr.WriteCount(); j++ {
			path := fmt.Sprintf("/k%d.%d", i+1, j)
			found := false
			for _, rec := range recs {
				found = found || rec.Path == path
			}
			if want := w >= j; found != want {
				t.Errorf("step %d %s: %s in the log of replica %d (%s): %v, want %v", i+1, tr, path, a, name, found, want)
			}
		}
	}
}

// qczSchedules returns every Q/C/Z schedule for ops and n, in canonical order.
func qczSchedules(t testing.TB, ops, n int) []schedules.Schedule {
	t.Helper()
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := schedules.Generate(&buf, d, aem.Params{Ops: ops, Replicas: n}, "test", 0); err != nil {
		t.Fatal(err)
	}
	r, err := schedules.NewReader(&buf, "qcz")
	if err != nil {
		t.Fatal(err)
	}
	var all []schedules.Schedule
	for {
		sc, err := r.Next()
		if err == io.EOF {
			return all
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sc)
	}
}

// hasMinorityWrite tells whether a schedule has a write that reaches fewer than a quorum.
func hasMinorityWrite(sc schedules.Schedule, n int) bool {
	for _, tr := range sc.Steps {
		for j := 1; tr.Kind == aem.Divergence && j <= tr.WriteCount(); j++ {
			k := 0
			for _, w := range tr.Writes {
				if w >= j {
					k++
				}
			}
			if k < n/2+1 {
				return true
			}
		}
	}
	return false
}

// TestTruncationSeenAfterItsConvergence: the convergence failure of TestSchedules shows as soon
// as the convergence that causes it (C[0,2], step 4) has settled, between the replicas online
// then, and the step's observations say how: replica 2 was told to truncate its log.
func TestTruncationSeenAfterItsConvergence(t *testing.T) {
	const body = "D[0,0,1] C[0,1] D[0,1,0] C[0,2] C[1]"
	params := aem.Params{Ops: 2, Replicas: 3}
	i := slices.IndexFunc(qczSchedules(t, params.Ops, params.Replicas), func(sc schedules.Schedule) bool { return string(schedules.Body(sc.Steps)) == body })
	if i < 0 {
		t.Fatalf("no schedule %s", body)
	}
	sc := qczSchedules(t, params.Ops, params.Replicas)[i]
	p := kit.New(about, &system{})
	start(t, p, testSpec(t, params, sc.ID, nil))
	ctx := context.Background()
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	model := d.Model
	state := model.Init(params)
	var sync string
	for i, tr := range sc.Steps[:4] {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: tr.String()})
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, tr, err)
		}
		state = model.Apply(params, &state, &tr)
		for _, o := range rep.Observations {
			if i == 3 && o.Replica == 2 {
				sync = o.Fields[cem.ObserveSync]
			}
		}
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	div := oracle.CompareGroups(snap, oracle.Promised(&state))
	if div.Converged() || len(div.Keys) != 1 || div.Keys[0].Key != "k1.1" {
		t.Fatalf("after step 4: %s; want replicas 0 and 2 to differ on k1.1", div.Line())
	}
	if !strings.Contains(sync, "TRUNC") {
		t.Errorf("replica 2's observed sync after step 4 is %q, want a TRUNC", sync)
	}
	t.Logf("after step 4: %s; replica 2 synced by %s", div.Line(), sync)
}
