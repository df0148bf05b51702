//go:build linux

package plugintest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/netns"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/schedules"
)

// Ports are taken from [portLow, portHigh) unless $MODULO_TEST_PORTS says another range
// (LOW-HIGH): below Linux's ephemeral range (32768 and up), so that no outgoing connection
// holds one of them.
const (
	portLow  = 10000
	portHigh = 30000
	// PortsEnv names the environment variable that moves the range.
	PortsEnv = "MODULO_TEST_PORTS"
)

// portRange is the range ports are taken from: $MODULO_TEST_PORTS, or the default.
func portRange() (low, high int, err error) {
	v := os.Getenv(PortsEnv)
	if v == "" {
		return portLow, portHigh, nil
	}
	lo, hi, ok := strings.Cut(v, "-")
	low, err1 := strconv.Atoi(lo)
	high, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || low < 1024 || high > 65536 || high-low < portBlock {
		return 0, 0, fmt.Errorf("%s=%q: want LOW-HIGH, such as 40000-45000, at least %d ports between 1024 and 65536", PortsEnv, v, portBlock)
	}
	return low, high, nil
}

// cluster is one cluster of the suite: its spec, its plugin, and every process group that a
// pid file in its directory named while it ran.
type cluster struct {
	s        *suite
	p        cem.CEM
	spec     cem.ClusterSpec
	groups   []proc.PidFile
	tornDown bool
	// strayPorts are the ports outside the cluster's that a server was found listening on.
	strayPorts map[int]bool
	// shm are the files under /dev/shm that a server was found to map or hold open.
	shm []string
	// state is the model's state after the steps applied; refused says which replica's server
	// refused to restart after a failure that broke its disk, which ends the schedule.
	state   aem.State
	applied []aem.Transition
	refused string
}

// newCluster prepares a cluster of p in a directory of t's, on free ports, for the schedule
// steps. When t ends it is torn down and checked (see teardownChecked), and whatever a pid file
// names is killed.
func (s *suite) newCluster(t *testing.T, p cem.CEM, config []byte, steps []aem.Transition) *cluster {
	t.Helper()
	n := s.info.Capabilities.Ports(s.params.Replicas)
	c := &cluster{s: s, p: p, strayPorts: map[int]bool{}, state: s.drm.Model.Init(s.params), spec: cem.ClusterSpec{
		DRM:         s.drm.Name,
		Ops:         s.params.Ops,
		Replicas:    s.params.Replicas,
		Dir:         ClusterDir(t),
		BasePort:    s.ports(t, n),
		ScheduleID:  schedules.ID(s.drm.Name, s.params, schedules.Body(steps)),
		Config:      config,
		StepTimeout: s.cfg.StepTimeout,
	}}
	t.Cleanup(func() {
		if !c.tornDown {
			c.teardownChecked(t)
		}
		if err := proc.KillLeftovers(c.spec.Dir); err != nil {
			t.Errorf("kill leftovers: %v", err)
		}
	})
	return c
}

// ClusterDir makes a directory of t's for a cluster, which any user can enter: a plugin may run
// its servers as another user (PostgreSQL refuses root), and may not change a directory above
// its cluster's. The testing package makes t's directories 0700; both levels are t's own.
func ClusterDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// BuildPlugin builds the Go package pkg (an import path) as cem.PluginPrefix+name in a directory
// of t's and returns the directory, for tests that launch a plugin as modulo run does.
func BuildPlugin(t testing.TB, name, pkg string) string {
	t.Helper()
	dir := t.TempDir()
	goBuild(t, filepath.Join(dir, cem.PluginPrefix+name), pkg)
	return dir
}

// FreePorts returns the first of n consecutive ports on 127.0.0.1, below the ephemeral range,
// reserved for t: test binaries of several packages run at once, so a range is claimed with a
// lock file in the temporary directory, held until t ends, before its ports are checked free.
//
// It is also the project's one rule for tests that start servers: every such test reserves its
// ports here, and under `go test -short` FreePorts skips it, so that -short needs no server.
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	if testing.Short() {
		t.Skip("starts servers (ports reserved with plugintest.FreePorts); run without -short")
	}
	return ReservePorts(t, n)
}

// ports reserves a cluster's ports: with FreePorts, unless the plugin starts no real server.
func (s *suite) ports(t *testing.T, n int) int {
	t.Helper()
	switch {
	case s.cfg.NoServers:
		return ReservePorts(t, n)
	case s.info.Capabilities.InNamespaces(): // every replica listens on the system's ports, in a network of its own
		Servers(t)
		return 0
	}
	return FreePorts(t, n)
}

// Servers skips t under go test -short: it starts servers, or runs a server's binary at all
// (for its version too), or makes network namespaces, none of which the short suite does
// (internal/shortsuite proves it). A test whose servers run each in a network namespace of its
// own, on its system's ordinary ports, needs no ports reserved (FreePorts, which skips too).
func Servers(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts servers; run without -short")
	}
}

// ReservePorts is FreePorts under -short too: for processes that are stand-ins and start no
// real server (the kit's in-memory system).
func ReservePorts(t testing.TB, n int) int {
	t.Helper()
	blocks := (n + portBlock - 1) / portBlock
	dir := filepath.Join(os.TempDir(), "modulo-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("port reservations: %v", err)
	}
	low, high, err := portRange()
	if err != nil {
		t.Fatal(err)
	}
	count := (high - low) / portBlock
	if blocks > count {
		t.Fatalf("%d consecutive ports do not fit in %d..%d ($%s)", n, low, high, PortsEnv)
	}
	for range 200 {
		first := rand.IntN(count - blocks + 1)
		locks, ok := lockBlocks(dir, low+first*portBlock, blocks)
		if !ok {
			continue
		}
		// Every port of the blocks, not only the n asked for: whatever a test's processes bind
		// in its blocks is theirs, and a port already bound in a block nobody holds is another
		// program's (or a process that outlived the test that held the block): the block is
		// skipped, as the port would be busy when a server of this test wants it.
		base := low + first*portBlock
		if err := proc.CheckPortsFree(base, blocks*portBlock); err != nil {
			t.Logf("ports %d-%d skipped: %v", base, base+blocks*portBlock-1, err)
			closeAll(locks)
			continue
		}
		t.Cleanup(func() { release(t, locks, base, blocks*portBlock) })
		return base
	}
	t.Fatalf("no %d free consecutive ports in %d..%d (set $%s to move the range)", n, low, high, PortsEnv)
	return 0
}

// portBlock is the unit of port reservations.
const portBlock = 100

// lockBlocks takes the lock files of the k blocks from port base, all or none; a block's lock
// file is named after its first port, so that suites with other ranges exclude each other.
func lockBlocks(dir string, base, k int) ([]*os.File, bool) {
	var locks []*os.File
	for b := range k {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(base+b*portBlock)), os.O_CREATE|os.O_RDWR, 0o666)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			closeAll(locks)
			return nil, false
		}
		locks = append(locks, f)
	}
	return locks, true
}

// releaseWait bounds how long a reservation waits at its end for its ports to be free: a
// SIGKILLed server's sockets close as it exits, which takes a moment for a large JVM.
const releaseWait = 30 * time.Second

// release ends a reservation once no process listens on any of its count ports from base: a
// server that outlived its test, still listening when the lock is released, would make the
// next holder of the block find a port busy (the suite's "port ... is already in use" on a
// fresh machine). A port still busy after releaseWait fails the test, naming the process,
// and the block stays locked until the test binary exits.
func release(t testing.TB, locks []*os.File, base, count int) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	var busy error
	err := proc.WaitFor(ctx, releaseWait, fmt.Sprintf("ports %d-%d to be free", base, base+count-1), func(context.Context) (bool, error) {
		busy = proc.CheckPortsFree(base, count)
		return busy == nil, nil
	})
	if err != nil {
		t.Errorf("at the end of the test, %v after its processes were ended: a process it started outlives it; ports %d-%d stay reserved", busy, base, base+count-1)
		outlived.Lock()
		outlived.locks = append(outlived.locks, locks...) // reachable, so never closed by the GC
		outlived.Unlock()
		return
	}
	closeAll(locks)
}

// outlived holds the locks of reservations whose ports a process still held at their end,
// until the test binary exits.
var outlived struct {
	sync.Mutex
	locks []*os.File
}

// closeAll closes lock files, which releases their locks.
func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// call runs f within the executor's call timeout: a call that outlasts it would have the
// executor take the plugin for hung.
func (c *cluster) call(t *testing.T, what string, f func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.s.callTimeout)
	defer cancel()
	err := f(ctx)
	if ctx.Err() != nil {
		t.Fatalf("%s did not return within %v, the executor's call timeout for a step timeout of %v: %v",
			what, c.s.callTimeout, c.spec.StepTimeout, err)
	}
	c.record(t)
	return err
}

func (c *cluster) start(t *testing.T) error {
	t.Helper()
	return c.call(t, "start", func(ctx context.Context) error { return c.p.Start(ctx, c.spec) })
}

// apply realises step i and checks its report: at least one action, each within the step's
// time and about a replica of the cluster or none.
//
// A replica whose disk broke (a disk error, a corruption) may refuse to restart: the system
// cannot recover it from what its disk holds, which a campaign judges unrecoverable and where
// it ends the schedule. So does the suite: the step after such a refusal skips t, saying so.
func (c *cluster) apply(t *testing.T, i int, tr *aem.Transition) (cem.StepReport, error) {
	t.Helper()
	if c.refused != "" {
		t.Skipf("the schedule ends before step %d %s: %s", i+1, tr, c.refused)
	}
	var rep cem.StepReport
	before := time.Now()
	err := c.call(t, "step "+tr.String(), func(ctx context.Context) (err error) {
		rep, err = c.p.Apply(ctx, cem.Step{Index: i, Transition: tr.String()})
		return err
	})
	after := time.Now()
	if err != nil {
		return rep, err
	}
	prev := c.state
	if _, next, ok := aem.Take(c.s.drm.Model, c.s.params, &c.state, tr); ok {
		c.state = next
	}
	c.applied = append(c.applied, *tr)
	for _, a := range rep.Alarms {
		if f := c.s.drm.KindOf(prev.FailedAs(a.Replica)); a.Unrecoverable && f.Disk() {
			c.refused = fmt.Sprintf("%s refused to restart replica %d after a %s (unrecoverable, as a campaign judges it): %s", c.s.drm.System, a.Replica, f, a.What)
			t.Log(c.refused)
			c.s.refused = append(c.s.refused, slices.Clone(c.applied))
		}
	}
	if len(rep.Actions) == 0 {
		t.Errorf("step %d %s reported no action", i+1, tr)
	}
	for _, a := range rep.Actions {
		switch {
		case a.What == "":
			t.Errorf("step %d %s: an action with no description", i+1, tr)
		case a.Replica < -1 || a.Replica >= c.spec.Replicas:
			t.Errorf("step %d %s: action %q concerns replica %d", i+1, tr, a.What, a.Replica)
		case a.Time.Before(before.Round(0)) || a.Time.After(after.Round(0)):
			t.Errorf("step %d %s: action %q at %v, outside the step (%v to %v)", i+1, tr, a.What, a.Time, before, after)
		}
	}
	return rep, nil
}

// read returns every replica's data; it must have one entry per replica.
func (c *cluster) read(t *testing.T) cem.Snapshot {
	t.Helper()
	var snap cem.Snapshot
	err := c.call(t, "read", func(ctx context.Context) (err error) {
		snap, err = c.p.Read(ctx)
		return err
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(snap.Replicas) != c.spec.Replicas {
		t.Fatalf("read returned %d replicas' data, want %d", len(snap.Replicas), c.spec.Replicas)
	}
	return snap
}

// record adds the process groups that the cluster directory's pid files name now.
func (c *cluster) record(t *testing.T) {
	t.Helper()
	files, err := proc.PidFiles(c.spec.Dir)
	if err != nil {
		t.Error(err)
	}
	for _, f := range files {
		if !slices.ContainsFunc(c.groups, func(g proc.PidFile) bool { return g.Pid == f.Pid && g.Start == f.Start }) {
			c.groups = append(c.groups, f)
		}
	}
	c.checkPorts(t, files)
	c.recordShm(t, files)
}

// groups lists the process groups that files name, but those whose pid is another process's
// now (and so its group too).
func groups(files []proc.PidFile) []int {
	var pgids []int
	for _, f := range files {
		if start, err := proc.StartTime(f.Pid); err == nil && start != f.Start {
			continue
		}
		pgids = append(pgids, f.Pid)
	}
	return pgids
}

// recordShm adds the files under /dev/shm that the servers of files map or hold open now:
// teardownChecked fails a teardown that leaves one.
func (c *cluster) recordShm(t *testing.T, files []proc.PidFile) {
	t.Helper()
	shm, err := proc.GroupSharedMemory(groups(files)...)
	if err != nil {
		t.Error(err)
	}
	for _, f := range shm {
		if !slices.Contains(c.shm, f) {
			c.shm = append(c.shm, f)
		}
	}
}

// checkPorts fails t for every port a server of the cluster listens on outside the cluster's
// ports: a port of its own choosing (an admin console, a metrics endpoint) is another
// cluster's, or another test's, and two clusters side by side would collide on it.
func (c *cluster) checkPorts(t *testing.T, files []proc.PidFile) {
	t.Helper()
	strays, err := c.strays(files)
	if err != nil {
		t.Error(err)
	}
	for _, s := range strays {
		t.Error(s)
	}
}

// strays says, once each, which ports outside the cluster's the process groups of files listen
// on.
func (c *cluster) strays(files []proc.PidFile) ([]string, error) {
	if c.s.info.Capabilities.InNamespaces() { // no port of a replica's namespace is anyone else's
		return nil, nil
	}
	first, last := c.spec.BasePort, c.spec.BasePort+c.s.info.Capabilities.Ports(c.spec.Replicas)-1
	listens, err := proc.GroupListens(groups(files)...)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for _, p := range listens[f.Pid] {
			if (p < first || p > last) && !c.strayPorts[p] {
				c.strayPorts[p] = true
				out = append(out, fmt.Sprintf("%s (process group %d) listens on port %d, outside the cluster's ports %d-%d: every port a server opens must be one the kit gave it", f.Path, f.Pid, p, first, last))
			}
		}
	}
	return out, nil
}

// teardownChecked tears the cluster down twice, which must succeed both times, and checks that
// no pid file is left, that no process group the cluster ever had is alive, that no process
// works in the cluster's directory (a server's child that left its group, say), and that no
// file a server held under /dev/shm is left.
func (c *cluster) teardownChecked(t *testing.T) {
	t.Helper()
	c.tornDown = true
	for k := 1; k <= 2; k++ {
		ctx, cancel := context.WithTimeout(context.Background(), c.s.callTimeout)
		err := c.p.Teardown(ctx)
		cancel()
		if err != nil {
			t.Errorf("teardown %d: %v", k, err)
		}
	}
	files, err := proc.PidFiles(c.spec.Dir)
	if err != nil {
		t.Error(err)
	}
	for _, f := range files {
		t.Errorf("teardown left pid file %s (pid %d)", f.Path, f.Pid)
	}
	for _, g := range c.groups {
		alive, err := g.GroupAlive()
		if err != nil {
			t.Error(err)
		}
		if alive {
			t.Errorf("teardown left process group %d (%s) alive", g.Pid, g.Path)
		}
	}
	for _, l := range ProcessesUnder(t, c.spec.Dir) {
		t.Errorf("teardown left %s", l)
	}
	mounts, err := proc.MountsUnder(c.spec.Dir)
	if err != nil {
		t.Error(err)
	}
	for _, m := range mounts {
		t.Errorf("teardown left a mount at %s", m)
	}
	if up := netns.UplinkName(c.spec.Dir); linkExists(up) {
		t.Errorf("teardown left the cluster's network (its uplink %s)", up)
	}
	for _, f := range c.shm {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("teardown left %s, shared memory a server of the cluster held: a killed server removes nothing there, and the host's memory fills with campaigns (give the server a file in its own directory)", f)
		}
	}
}

// ProcessesUnder lists the live processes whose working directory is dir or under it, or whose
// command line names a path under it: what a cluster's servers started, whatever group or
// session they moved to, and a plugin binary kept there.
func ProcessesUnder(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !proc.Alive(pid) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) || strings.Contains(cmdline, dir) {
			left = append(left, fmt.Sprintf("pid %d (%s) in %s", pid, cmdline, cwd))
		}
	}
	return left
}

// BuildModulo builds modulo and the named plugins of this repository (plugins/<name>) into one
// directory of t's, as scripts/setup builds them into bin, and returns it: for tests that run
// modulo as its users do.
func BuildModulo(t testing.TB, plugins ...string) string {
	t.Helper()
	dir := t.TempDir()
	const module = "github.com/modulo-testing/modulo"
	goBuild(t, filepath.Join(dir, "modulo"), module+"/cmd/modulo")
	for _, name := range plugins {
		goBuild(t, filepath.Join(dir, cem.PluginPrefix+name), module+"/plugins/"+name)
	}
	return dir
}

// linkExists tells whether the plugin's namespace has a link of that name.
func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}
