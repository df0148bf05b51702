//go:build linux

// Package plugintest is the conformance suite of modulo's DRM plugins. A plugin's own test
// calls Run with its plugin, and the suite drives real clusters through it:
//
//   - transitions: a few schedules of the DRM's model that together take every kind of
//     transition the model uses (Cover, Kinds), each realised on a fresh cluster, with every
//     step's actions checked and every replica's data converged at the end (diverged, for a
//     schedule that Config.Known keeps as the system's own failure);
//   - oracle: a schedule realised with the kit's break_realisation = "leave-behind", after which
//     the oracle's comparison (oracle.Compare) must report the replica left behind, and
//     every readable replica must hold the probe key written to the whole cluster before;
//   - lost write (quorum models whose system can delete a key, kit.Deleter): a schedule
//     realised with break_realisation = "lose-write", whose steps must report their writes, a
//     committed one acknowledged; the replicas must agree, and the oracle's durability check
//     (oracle.LostWrites) must report that write;
//   - teardown: Start fails with one line naming a busy port, and Teardown after it and after
//     a step is safe to call twice, leaves no pid file, no live process in any group that a
//     pid file ever named, and no mount (the same check ends every cluster of the suite);
//   - crashed server and hung server: after Start, the process group of a server that the
//     first step writes to is SIGKILLed (SIGSTOPped); some step, or the final comparison, must
//     report it, and no call may outlast the executor's call timeout;
//   - binary: when Config.Binary is set, a schedule realised through the built plugin binary,
//     started by cem.Launch as modulo starts it;
//   - plugin death: when Config.Binary is set, the plugin process is SIGKILLed, and then
//     SIGTERMed, with a replica failed by each failure kind of the DRM (and once SIGTERMed
//     during a step): every server's process group must die with it, and nothing of the
//     cluster (process, mount, namespace) be left once the executor swept it after SIGKILL,
//     or at all after SIGTERM.
package plugintest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/netns"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// DefaultStepTimeout is the clusters' step timeout when Config gives none: ample for a server
// that starts in seconds, and what the hung-server check waits at least once.
const DefaultStepTimeout = 10 * time.Second

// Params are a suite's schedule parameters (writes and replicas), aem.Params under a name of
// the suite's own, so that a plugin's test sets them without importing the models' package.
type Params = aem.Params

// Config says what to test.
type Config struct {
	// DRM is the short name of the DRM under test, such as "qce".
	DRM string
	// Params are the schedules' parameters. Each field that is zero takes its default: at most
	// 2 writes (the DRM's largest value up to 2), and the DRM's default replica count.
	Params Params
	// New returns a fresh plugin, in process; every check runs on it.
	New func() cem.CEM
	// Binary is the plugin's built binary (see Build). When set, one schedule is also realised
	// through it, started by cem.Launch.
	Binary string
	// PluginConfig is the plugin's TOML section, given to every cluster.
	PluginConfig []byte
	// StepTimeout is every cluster's step timeout; zero means DefaultStepTimeout.
	StepTimeout time.Duration
	// Loopback runs every cluster with network = "loopback" (every server on 127.0.0.1 at ports
	// of the cluster's block), where the plugin would run it in network namespaces: the
	// fallback's test. Otherwise the suite runs the clusters on the network the plugin's Info
	// names (cem.Capabilities.Network); in namespaces, the teardown and plugin-death parts
	// check that the cluster's network went with it, in place of a busy port.
	Loopback bool
	// NoServers says that the plugin's processes are stand-ins that start no real server (the
	// kit's in-memory system): the suite then runs under go test -short too.
	NoServers bool
	// Known maps the IDs of schedules that the system under test fails, every time, to the
	// file of the plugin's testdata that keeps the finding. A schedule the suite realises that
	// is known must end diverged where any other must converge: its steps are realised as
	// any other's, and a system fixed (or a plugin that stopped realising the failure) shows
	// as a known schedule that converged. A failure that shows only some of the time does not
	// belong here.
	Known map[string]string
}

// Build builds the plugin package pkg (such as ".", or the files of one program) into a
// directory of t's and returns the binary's path, for Config.Binary. Under -short it skips t,
// as Run would, before it spends a build on a binary that only runs servers.
func Build(t *testing.T, pkg ...string) string {
	t.Helper()
	Servers(t)
	bin := filepath.Join(t.TempDir(), "modulo-plugin")
	goBuild(t, bin, pkg...)
	return bin
}

// goBuild builds package pkg (or the files of one program) into the binary out, or fails t
// with the compiler's output.
func goBuild(t testing.TB, out string, pkg ...string) {
	t.Helper()
	if b, err := exec.Command("go", append([]string{"build", "-o", out}, pkg...)...).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(pkg, " "), err, b)
	}
}

type suite struct {
	cfg         Config
	drm         drms.DRM
	params      aem.Params
	info        cem.Info
	callTimeout time.Duration
	// refused are the prefixes of schedules that ended where a replica refused to restart:
	// realised again, they end there again.
	refused [][]aem.Transition
}

// Run runs the conformance suite, each part a subtest of t.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("plugintest: Config.New is nil")
	}
	if !cfg.NoServers {
		// Before Info, which runs the server binary for its version and makes a network
		// namespace to see whether the host can.
		Servers(t)
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = DefaultStepTimeout
	}
	if cfg.Loopback {
		cfg.PluginConfig = append(slices.Clip(cfg.PluginConfig), "\nnetwork = \"loopback\"\n"...)
	}
	s := &suite{cfg: cfg}
	s.info = s.checkInfo(t, cfg.New())
	d, err := s.lookup(cfg.DRM)
	if err != nil {
		t.Fatal(err)
	}
	partitions := d.Partitions()
	if partitions && !s.info.Capabilities.InNamespaces() {
		t.Skipf("DRM %s realises failures as partitions, which need network namespaces: %s", d.Name, s.info.Capabilities.Network)
	}
	s.drm, s.params = d, defaultParams(d, cfg.Params)
	s.checkDRM(t)
	s.callTimeout = cem.DefaultCallTimeout(cfg.StepTimeout, s.params.Replicas)
	plan, err := Cover(d.Model, s.params)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("transitions", func(t *testing.T) { s.transitions(t, plan) })
	t.Run("oracle", s.oracle)
	if d.Model.Rules().Quorum() {
		t.Run("lost write", func(t *testing.T) { s.lostWrite(t, plan) })
	}
	// A DRM whose failures all leave servers up (partitions, pauses) has no state all on disk
	// to save, and the executor shares no prefix of it.
	if s.info.Capabilities.Restore && !d.Partition && (!d.Model.Rules().Quorum() || slices.ContainsFunc(d.Kinds(), aem.Failure.Down)) {
		t.Run("restore", func(t *testing.T) { s.restore(t, plan) })
	}
	if partitions {
		t.Run("partition", func(t *testing.T) { s.partition(t, s.partitionSchedule(plan)) })
	}
	t.Run("teardown", func(t *testing.T) { s.teardown(t, plan.Schedules[0].Steps[0]) })
	t.Run("crashed server", func(t *testing.T) { s.fault(t, syscall.SIGKILL, plan.Schedules[0].Steps) })
	t.Run("hung server", func(t *testing.T) { s.fault(t, syscall.SIGSTOP, plan.Schedules[0].Steps) })
	if cfg.Binary != "" {
		t.Run("binary", func(t *testing.T) { s.binary(t, plan.Schedules[0].Steps) })
		t.Run("plugin death", func(t *testing.T) { s.pluginDeath(t, plan) })
	}
}

// defaultParams gives each zero field of p its default for DRM d: the largest number of
// writes d offers up to 2, and d's default replica count.
func defaultParams(d drms.DRM, p aem.Params) aem.Params {
	if p.Ops == 0 {
		p.Ops = 1
		for _, o := range d.Ops {
			if o <= 2 {
				p.Ops = max(p.Ops, o)
			}
		}
	}
	if p.Replicas == 0 {
		p.Replicas = d.Defaults.Replicas
	}
	return p
}

// lookup finds the DRM named name: one the plugin declares, else the catalogue's, composed
// with the failure kinds the name adds (drms.Compose).
func (s *suite) lookup(name string) (drms.DRM, error) {
	if d, ok, err := drms.Declared(name, s.info.Name, s.info.Capabilities.Declared); ok {
		return d, err
	}
	return drms.Lookup(name)
}

// base is the name of the suite's DRM without the failure kinds it adds.
func (s *suite) base() string {
	base, _, _ := drms.SplitName(s.drm.Name)
	return base
}

// checkInfo asks the plugin what it is; checkDRM checks that against the suite's DRM.
func (s *suite) checkInfo(t *testing.T, p cem.CEM) cem.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cem.DefaultStepTimeout)
	defer cancel()
	info, err := p.Info(ctx, s.cfg.PluginConfig)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	return info
}

func (s *suite) checkDRM(t *testing.T) {
	t.Helper()
	info := s.info
	switch {
	case info.Name != s.drm.Plugin:
		t.Fatalf("info: plugin %q, but the catalogue says the %s plugin realises %s", info.Name, s.drm.Plugin, s.drm.Name)
	case !slices.Contains(info.Capabilities.DRMs, s.base()):
		t.Fatalf("info: the plugin lists DRMs %v, not %s", info.Capabilities.DRMs, s.base())
	case info.Capabilities.PortsPerReplica < 1:
		t.Fatalf("info: %d ports per replica", info.Capabilities.PortsPerReplica)
	case info.ServerVersion == "" || info.Version == "":
		t.Fatalf("info: version %q, server version %q: both must be set", info.Version, info.ServerVersion)
	}
}

// transitions realises each schedule of the plan on a fresh cluster and checks that every kind
// of transition was realised.
func (s *suite) transitions(t *testing.T, plan Plan) {
	var realised []string
	cut := 0 // schedules that a replica's refusal to restart ended early
	for i, planned := range plan.Schedules {
		switch s.realiseSchedule(t, fmt.Sprintf("%d %s", i+1, schedules.Body(planned.Steps)), planned.Steps) {
		case realisedWhole:
			realised = append(realised, planned.Kinds...)
		case realisedCut:
			cut++
		}
	}
	if cut > 0 {
		realised = s.standIns(t, plan, realised)
	}
	for _, k := range plan.Kinds {
		if !slices.Contains(realised, k) {
			t.Errorf("transition kind %q was not realised", k)
		}
	}
	t.Logf("%s with %d writes and %d replicas: %d schedules take its %d kinds of transition: %s",
		s.drm.Name, s.params.Ops, s.params.Replicas, len(plan.Schedules), len(plan.Kinds), strings.Join(plan.Kinds, "; "))
}

// outcome is how a schedule of the transitions part ended.
type outcome int

const (
	realisedWhole  outcome = iota // every step, and the replicas converged
	realisedCut                   // a replica refused to restart and ended it (skipped)
	realisedFailed                // the subtest failed
)

// realiseSchedule realises steps on a fresh cluster in the subtest name and checks the end:
// converged (or diverged as Config.Known keeps it), every value one this schedule wrote.
func (s *suite) realiseSchedule(t *testing.T, name string, steps []aem.Transition) outcome {
	done := false
	ok := t.Run(name, func(t *testing.T) {
		defer func() { done = !t.Skipped() }()
		c, snap, _ := s.realise(t, s.cfg.New(), steps, s.cfg.PluginConfig)
		s.checkEnd(t, "", steps, snap)
		for i, r := range snap.Replicas {
			for k, v := range r.Data {
				if !strings.HasPrefix(v, c.spec.ScheduleID) {
					t.Errorf("replica %d holds %s = %q, which this schedule (%s) did not write", i, k, v, c.spec.ScheduleID)
				}
			}
		}
	})
	switch {
	case !ok:
		return realisedFailed
	case !done:
		return realisedCut
	}
	return realisedWhole
}

// standIns realises, for the kinds that planned schedules did not realise because a replica
// refused to restart and ended them (a system's answer to a broken disk, drawn from the
// schedule), other schedules that take them, the most kinds first, up to maxStandIns; it
// returns the kinds realised with theirs.
func (s *suite) standIns(t *testing.T, plan Plan, realised []string) []string {
	all, err := enumerate(s.drm.Model, s.params)
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]bool{}
	for _, p := range plan.Schedules {
		planned[string(schedules.Body(p.Steps))] = true
	}
	for n := 0; n < maxStandIns; n++ {
		best, gain := -1, 0
		for i, p := range all {
			k := 0
			for _, kind := range p.Kinds {
				if !slices.Contains(realised, kind) {
					k++
				}
			}
			if !planned[string(schedules.Body(p.Steps))] && k > gain && !s.endsRefused(p.Steps) {
				best, gain = i, k
			}
		}
		if best < 0 {
			break
		}
		p := all[best]
		planned[string(schedules.Body(p.Steps))] = true
		if s.realiseSchedule(t, fmt.Sprintf("stand-in %d %s", n+1, schedules.Body(p.Steps)), p.Steps) == realisedWhole {
			realised = append(realised, p.Kinds...)
		}
	}
	return realised
}

// endsRefused tells whether steps begin with a prefix that a replica's refusal ended.
func (s *suite) endsRefused(steps []aem.Transition) bool {
	for _, r := range s.refused {
		if len(r) <= len(steps) && slices.EqualFunc(r, steps[:len(r)], func(a, b aem.Transition) bool { return aem.Equal(&a, &b) }) {
			return true
		}
	}
	return false
}

// maxStandIns bounds the schedules standIns realises.
const maxStandIns = 8

// oracle realises a schedule that leaves a replica behind and checks that the oracle's
// comparison reports it.
func (s *suite) oracle(t *testing.T) {
	quorum := s.drm.Model.Rules().Quorum()
	planned, err := Shortest(s.drm.Model, s.params, func(end *aem.State) bool {
		if quorum {
			return true
		}
		for i, src := range end.Src { // leave-behind needs a replica that follows another
			if src != aem.NoSource && end.On[i] && end.On[src] {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	config := append([]byte(kit.BreakKey+" = \""+kit.BreakLeaveBehind+"\"\n"), s.cfg.PluginConfig...)
	_, snap, _ := s.realise(t, s.cfg.New(), planned.Steps, config)
	d := oracle.Compare(snap)
	if d.Converged() {
		t.Fatalf("the comparison found every replica the same after %s left a replica behind", kit.BreakLeaveBehind)
	}
	if len(d.Unreadable) == 0 && !slices.ContainsFunc(d.Keys, func(k oracle.KeyDiff) bool { return k.Key == kit.BehindKey }) {
		t.Errorf("the comparison reports %s, but neither an unreadable replica nor key %s", d.Line(), kit.BehindKey)
	}
	readable := 0
	for i, r := range snap.Replicas {
		if r.Err != "" {
			continue
		}
		readable++
		if _, ok := r.Data[kit.ProbeKey]; !ok {
			t.Errorf("replica %d does not hold %s, which was written to the whole cluster: does ReadAll read what the replica holds?", i, kit.ProbeKey)
		}
	}
	if readable == 0 {
		t.Errorf("no replica could be read: %s", d.Line())
	}
	t.Logf("reported: %s", d.Line())
}

// teardown checks Start with a busy port (on loopback), and Teardown after a failed Start and
// after a step.
func (s *suite) teardown(t *testing.T, first aem.Transition) {
	if !s.info.Capabilities.InNamespaces() { // else a replica's ports are its own: none can be busy
		s.busyPort(t)
	}
	c := s.newCluster(t, s.cfg.New(), s.cfg.PluginConfig, []aem.Transition{first})
	if err := c.start(t); err != nil {
		t.Fatalf("start: %v", err)
	}
	if _, err := c.apply(t, 0, &first); err != nil {
		t.Fatalf("step 1 %s: %v", first, err)
	}
	c.teardownChecked(t)
	if len(c.groups) == 0 {
		t.Error("the cluster directory never held a pid file: servers must be started with proc.StartProcess")
	}
}

// busyPort checks that Start with a port of the cluster's block in use fails with one line
// naming the port, and that Teardown after it leaves nothing.
func (s *suite) busyPort(t *testing.T) {
	c := s.newCluster(t, s.cfg.New(), s.cfg.PluginConfig, nil)
	busy := c.spec.BasePort + s.info.Capabilities.Ports(s.params.Replicas) - 1
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(busy)))
	if err != nil {
		t.Fatal(err)
	}
	err = c.start(t)
	ln.Close()
	switch {
	case err == nil:
		t.Errorf("start succeeded although port %d was in use", busy)
	case !strings.Contains(err.Error(), strconv.Itoa(busy)) || strings.Contains(err.Error(), "\n"):
		t.Errorf("start with port %d in use: error %q should be one line naming the port", busy, err)
	}
	c.teardownChecked(t)
}

// partitionSchedule is the plan's first schedule whose divergences cut a replica off.
func (s *suite) partitionSchedule(plan Plan) []aem.Transition {
	for _, sc := range plan.Schedules {
		state := s.drm.Model.Init(s.params)
		cut := make([]bool, s.params.Replicas)
		for i := range sc.Steps {
			_, next, _ := aem.Take(s.drm.Model, s.params, &state, &sc.Steps[i])
			cut = cutOff(s.drm.Model.Rules(), &state, &next, &sc.Steps[i], cut)
			state = next
			if slices.Contains(cut, true) {
				return sc.Steps
			}
		}
	}
	return plan.Schedules[0].Steps
}

// cutOff says which replicas a partition cuts off after step t took the model from prev to
// next, when before says which it cut off before: on the quorum rules, the replicas offline and
// not crashed; on the link rules, those whose link a divergence failed, until a convergence
// brings them back.
func cutOff(rules aem.Rules, prev, next *aem.State, t *aem.Transition, before []bool) []bool {
	cut := slices.Clone(before)
	for a := range cut {
		switch {
		case rules != aem.LinkRules:
			cut[a] = !next.On[a] && (next.Failed == nil || next.FailedAs(a) == aem.FailPartition)
		case t.Kind == aem.Divergence:
			cut[a] = cut[a] || prev.Src[a] != aem.NoSource && next.Src[a] == aem.NoSource
		default:
			cut[a] = cut[a] && !next.On[a]
		}
	}
	return cut
}

// partition realises a schedule of a partition DRM step by step: after each step every server
// but a crashed replica's is alive (a partitioned replica stays up), the observations of
// exactly the replicas the model has cut off (cutOff) say so, and the plugin reached every
// running replica to observe it. That a cut-off replica's peers cannot reach it is the
// network's (package cem/netns) to show; here it shows as the minority writes that did not
// commit.
func (s *suite) partition(t *testing.T, steps []aem.Transition) {
	c := s.newCluster(t, s.cfg.New(), s.cfg.PluginConfig, steps)
	if err := c.start(t); err != nil {
		t.Fatalf("start: %v", err)
	}
	state := s.drm.Model.Init(s.params)
	cut := make([]bool, s.params.Replicas)
	for i := range steps {
		rep, err := c.apply(t, i, &steps[i])
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, &steps[i], err)
		}
		_, next, _ := aem.Take(s.drm.Model, s.params, &state, &steps[i])
		cut = cutOff(s.drm.Model.Rules(), &state, &next, &steps[i], cut)
		state = next
		crashed := state.Crashed
		seen := map[int]map[string]string{}
		for _, o := range rep.Observations {
			seen[o.Replica] = o.Fields
		}
		running := 0
		for a := range state.On {
			if crashed(a) {
				continue
			}
			running++
			f, ok := seen[a]
			switch {
			case len(rep.Observations) == 0: // the plugin observes nothing
			case !ok:
				t.Errorf("after step %d %s: no observation of replica %d, which runs", i+1, &steps[i], a)
			case f["error"] != "":
				t.Errorf("after step %d %s: the plugin could not observe replica %d: %s", i+1, &steps[i], a, f["error"])
			case (f[cem.ObserveNetwork] == cem.CutOff) != cut[a]:
				t.Errorf("after step %d %s: replica %d is cut off=%v in the model but observed %s=%q", i+1, &steps[i], a, cut[a], cem.ObserveNetwork, f[cem.ObserveNetwork])
			}
		}
		files, err := proc.PidFiles(c.spec.Dir)
		if err != nil {
			t.Fatal(err)
		}
		alive := 0
		for _, f := range files {
			if _, replica := replicaIndex(f); replica && proc.Alive(f.Pid) {
				alive++
			}
		}
		if alive != running {
			t.Errorf("after step %d %s: %d servers run, want %d: a partition leaves its replica's server up, a crash none", i+1, &steps[i], alive, running)
		}
	}
	c.teardownChecked(t)
}

// fault sends sig to one server's process group after Start, then realises the schedule: some
// step, or the final comparison, must report the server, and no call may hang.
func (s *suite) fault(t *testing.T, sig syscall.Signal, steps []aem.Transition) {
	c := s.newCluster(t, s.cfg.New(), s.cfg.PluginConfig, steps)
	if err := c.start(t); err != nil {
		t.Fatalf("start: %v", err)
	}
	files, err := proc.PidFiles(c.spec.Dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("no pid file to find a server by (%v)", err)
	}
	victim := pickVictim(files, steps[0])
	if err := syscall.Kill(-victim.Pid, sig); err != nil {
		t.Fatalf("%s process group %d: %v", signalName(sig), victim.Pid, err)
	}
	t.Logf("%s process group %d (%s)", signalName(sig), victim.Pid, filepath.Base(victim.Path))
	for i := range steps {
		_, err := c.apply(t, i, &steps[i])
		if err == nil {
			continue
		}
		kind := "an error"
		if cem.IsNotReached(err) {
			kind = "not reached"
		}
		t.Logf("step %d %s reported it as %s: %v", i+1, steps[i], kind, err)
		return
	}
	d := oracle.Compare(c.read(t))
	switch {
	case d.Converged() && sig == syscall.SIGSTOP && !proc.Alive(victim.Pid):
		// The schedule failed the stopped server itself (a quorum divergence kills every
		// replica, and the kit may map the one it stopped anyway onto any of them): killed and
		// started again, it hangs no more, and no call hung meanwhile.
		t.Logf("the schedule killed the stopped server (pid %d) itself and started it again", victim.Pid)
	case d.Converged():
		t.Errorf("after %s of process group %d every step passed and every replica reads the same", signalName(sig), victim.Pid)
	default:
		t.Logf("the comparison reported it: %s", d.Line())
	}
}

// pickVictim picks the server to crash or suspend: one that the first step must write to, so
// that the plugin has to talk to it before it fails or suspends it itself (S/S/R resumes a
// replica it suspended, which would undo a SIGSTOP). Servers are found by the kit's naming,
// "<plugin>-<replica>" + proc.PidFileSuffix; a plugin that names them otherwise gets the first.
func pickVictim(files []proc.PidFile, first aem.Transition) proc.PidFile {
	slices.SortFunc(files, func(a, b proc.PidFile) int { return strings.Compare(a.Path, b.Path) })
	if first.Kind != aem.Divergence {
		return files[0]
	}
	top := first.WriteCount()
	for _, f := range files {
		i, ok := replicaIndex(f)
		if ok && i < len(first.Writes) && first.Writes[i] == top {
			return f
		}
	}
	return files[0]
}

// replicaIndex is the index of the replica whose server's pid file f is ("<plugin>-<i>"), and
// false for a service's ("<plugin>-<name>": kit.ServiceSpec), which runs whatever the schedule
// does.
func replicaIndex(f proc.PidFile) (int, bool) {
	name := strings.TrimSuffix(filepath.Base(f.Path), proc.PidFileSuffix)
	i, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return i, err == nil
}

// signalName is the name of each signal the suite sends.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return "SIGSTOP"
}

// launch starts the built plugin binary as modulo does, and closes it when t ends.
func (s *suite) launch(t *testing.T) *cem.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.callTimeout)
	defer cancel()
	var stderr strings.Builder // Launch serialises the writes; it is read after Close
	client, err := cem.Launch(ctx, s.cfg.Binary, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("plugin stderr:\n%s", stderr.String())
		}
	})
	return client
}

// binary realises steps through the built plugin binary, as modulo runs it.
func (s *suite) binary(t *testing.T, steps []aem.Transition) {
	client := s.launch(t)
	info := s.checkInfo(t, client)
	if info.Name != s.info.Name || !slices.Equal(info.Capabilities.DRMs, s.info.Capabilities.DRMs) ||
		info.Capabilities.PortsPerReplica != s.info.Capabilities.PortsPerReplica {
		t.Errorf("the binary says %+v, the plugin in process %+v", info, s.info)
	}
	_, snap, _ := s.realise(t, client, steps, s.cfg.PluginConfig)
	s.checkEnd(t, "through the binary", steps, snap)
}

// checkEnd checks the data that a run of steps (what, for messages) ended with: converged,
// or diverged for a schedule that Config.Known keeps.
func (s *suite) checkEnd(t *testing.T, what string, steps []aem.Transition, snap cem.Snapshot) {
	t.Helper()
	if what != "" {
		what += ": "
	}
	d := oracle.Compare(snap)
	id := schedules.ID(s.drm.Name, s.params, schedules.Body(steps))
	kept, known := s.cfg.Known[id]
	switch {
	case known && d.Converged():
		t.Errorf("%sschedule %s converged, but %s keeps it as a failure of %s: fixed, or no longer realised as it was", what, id, kept, s.drm.System)
	case known:
		t.Logf("%sthe replicas diverged, as %s keeps it: %s", what, kept, d.Line())
	case !d.Converged():
		t.Errorf("%sthe replicas did not converge: %s\n(the plugin says the cluster caught up too early, or %s itself has a convergence failure here)", what, d.Line(), s.drm.System)
	}
}

// pluginDeath ends the plugin process with a cluster running, by SIGKILL (modulo killed by a
// signal, the plugin by the OOM killer) and by SIGTERM (an operator, an engine ending a job):
// each time with a replica failed by each failure kind of the DRM (a paused server, a power
// loss's mounts, a cut-off namespace), and once by SIGTERM while a step is under way. Nothing
// may be left: after SIGKILL once the executor's sweep (proc.KillLeftovers) has run, after
// SIGTERM with no sweep at all, since the plugin tears its cluster down itself.
func (s *suite) pluginDeath(t *testing.T, plan Plan) {
	held, missing := s.failedBy(plan)
	for _, kind := range missing {
		t.Errorf("no planned schedule fails a replica by %s, a kind of %s", kind, s.drm.Name)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		for _, h := range held {
			t.Run(signalName(sig)+"/"+h.name, func(t *testing.T) { s.dieWith(t, sig, h.steps, nil) })
		}
	}
	// The step after the last kind's failure is, in the quorum models, the convergence that
	// recovers it, which waits for the cluster (a restart, a detection time): the signal comes
	// while the plugin waits. Elsewhere it is whatever step comes next.
	h := held[len(held)-1]
	if k := len(h.steps); k > 0 && k < len(h.whole) {
		t.Run("SIGTERM/during a step", func(t *testing.T) { s.dieWith(t, syscall.SIGTERM, h.steps, &h.whole[k]) })
	}
}

// heldFailure is a prefix of a planned schedule (steps, of whole) after which a replica is
// failed by the kind that name says; no steps for a cluster that just started.
type heldFailure struct {
	name         string
	steps, whole []aem.Transition
}

// failedBy finds, for each failure kind of the DRM, the shortest prefix of a planned schedule
// that ends with a replica failed by it, and the kinds no planned schedule gives; for a DRM
// whose replicas fail by no kind (link failures), the cluster as it starts.
func (s *suite) failedBy(plan Plan) (held []heldFailure, missing []aem.Failure) {
	kinds := s.drm.Kinds()
	// How a replica that went offline failed: a model of one kind that does not say (S/S/R's
	// suspensions) fails every replica by it.
	kindOf := func(state *aem.State, a int) aem.Failure {
		if k := s.drm.KindOf(state.FailedAs(a)); k != aem.NotInLayout || len(kinds) != 1 {
			return k
		}
		return kinds[0]
	}
	for _, kind := range kinds {
		var best *heldFailure
		for _, p := range plan.Schedules {
			state := s.drm.Model.Init(s.params)
			for i := range p.Steps {
				_, next, ok := aem.Take(s.drm.Model, s.params, &state, &p.Steps[i])
				if !ok {
					break
				}
				failed := false
				for a := range s.params.Replicas {
					failed = failed || state.On[a] && !next.On[a] && kindOf(&next, a) == kind
				}
				state = next
				if failed {
					if best == nil || i+1 < len(best.steps) {
						best = &heldFailure{name: "a replica failed by " + kind.String(), steps: p.Steps[:i+1], whole: p.Steps}
					}
					break
				}
			}
		}
		if best != nil {
			held = append(held, *best)
		} else {
			missing = append(missing, kind)
		}
	}
	if len(held) == 0 {
		held = append(held, heldFailure{name: "a cluster running"})
	}
	return held, missing
}

// dieWith realises steps through the plugin binary, starts step during (if any) without
// waiting for it, sends sig to the plugin and checks that nothing of the cluster is left.
func (s *suite) dieWith(t *testing.T, sig syscall.Signal, steps []aem.Transition, during *aem.Transition) {
	client := s.launch(t)
	c := s.newCluster(t, client, s.cfg.PluginConfig, steps)
	if err := c.start(t); err != nil {
		t.Fatalf("start: %v", err)
	}
	if len(c.groups) == 0 {
		t.Fatal("the cluster directory holds no pid file: servers must be started with proc.StartProcess")
	}
	for i := range steps {
		if _, err := c.apply(t, i, &steps[i]); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	if during != nil {
		ended := make(chan struct{})
		go func() { // it fails, or ends, when the plugin does; what it says does not matter
			_, _ = client.Apply(context.Background(), cem.Step{Index: len(steps), Transition: during.String()})
			close(ended)
		}()
		time.Sleep(duringDelay)
		select {
		case <-ended:
			t.Logf("step %s ended within %v, before the signal: the plugin is ended between steps", during, duringDelay)
		default:
		}
	}
	if err := syscall.Kill(client.Pid(), sig); err != nil {
		t.Fatal(err)
	}
	c.tornDown = true // nobody is left to tear it down: that is the point
	servers, bound := "every server to die with the plugin", pluginDeathTimeout
	if sig == syscall.SIGTERM {
		servers, bound = "the plugin to tear its cluster down and exit", pluginTermTimeout
	}
	err := proc.WaitFor(context.Background(), bound, servers, func(context.Context) (bool, error) {
		if sig == syscall.SIGTERM && !client.Exited() {
			return false, nil
		}
		for _, g := range c.groups {
			if proc.Alive(g.Pid) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("after %s of the plugin (pid %d): %v", signalName(sig), client.Pid(), err)
	}
	if sig == syscall.SIGKILL {
		// What the servers started outlives them (a child in a session of its own), and the
		// plugin's mounts their server: the executor sweeps the cluster directory, which must
		// end both.
		if err := proc.KillLeftovers(c.spec.Dir); err != nil {
			t.Errorf("sweep after the plugin died: %v", err)
		}
	}
	for _, g := range c.groups {
		if alive, err := g.GroupAlive(); alive || err != nil {
			t.Errorf("server %s (pid %d) left processes alive: %v", g.Path, g.Pid, err)
		}
	}
	for _, l := range ProcessesUnder(t, c.spec.Dir) {
		t.Errorf("left: %s", l)
	}
	if mounts, err := proc.MountsUnder(c.spec.Dir); err != nil || len(mounts) > 0 {
		t.Errorf("left mounted: %v %v", mounts, err)
	}
	if s.info.Capabilities.InNamespaces() {
		// The namespaces were held by the plugin and its servers, all gone now.
		if err := proc.WaitFor(context.Background(), pluginDeathTimeout, "the cluster's network to go with its plugin", func(context.Context) (bool, error) {
			return !linkExists(netns.UplinkName(c.spec.Dir)), nil
		}); err != nil {
			t.Error(err)
		}
	}
}

// duringDelay is how long dieWith lets a step run before the signal: long enough for the
// call to reach the plugin on a loaded machine, short of any convergence of a real server (a
// restart, a detection time of a second or more).
const duringDelay = 500 * time.Millisecond

// pluginDeathTimeout bounds how long servers may outlive their plugin: the kernel sends them
// SIGKILL (their parent-death signal) at once.
const pluginDeathTimeout = 10 * time.Second

// pluginTermTimeout bounds how long a plugin sent SIGTERM may take to end the step under way,
// tear its cluster down and exit: more than the 20 s within which cem.Serve exits anyway.
const pluginTermTimeout = 40 * time.Second

// lostWrite realises a schedule whose first divergence commits a write, with the kit's
// break_realisation = "lose-write", and checks that the durability check reports that write.
func (s *suite) lostWrite(t *testing.T, plan Plan) {
	quorum := s.params.Replicas/2 + 1
	k := slices.IndexFunc(plan.Schedules, func(p Planned) bool {
		return slices.ContainsFunc(p.Steps, func(tr aem.Transition) bool {
			return tr.Kind == aem.Divergence && tr.WriteCount() > 0 &&
				len(slices.DeleteFunc(slices.Clone(tr.Writes), func(w int) bool { return w < 1 })) >= quorum
		})
	})
	if k < 0 {
		t.Fatal("no schedule of the plan commits a write")
	}
	config := append([]byte(kit.BreakKey+" = \""+kit.BreakLoseWrite+"\"\n"), s.cfg.PluginConfig...)
	steps := plan.Schedules[k].Steps
	c := s.newCluster(t, s.cfg.New(), config, steps)
	if err := c.start(t); err != nil {
		if strings.Contains(err.Error(), "kit.Deleter") {
			t.Skipf("the plugin cannot lose a write: %v", err)
		}
		t.Fatalf("start: %v", err)
	}
	writes := s.applyAll(t, c, steps)
	snap := c.read(t)
	acked := slices.IndexFunc(writes, func(w cem.Write) bool { return w.Acked })
	if acked < 0 {
		t.Fatalf("the steps reported writes %+v, none acknowledged, although a write reached a quorum", writes)
	}
	if d := oracle.Compare(snap); !d.Converged() {
		t.Fatalf("the replicas should agree after %s: %s", kit.BreakLoseWrite, d.Line())
	}
	group := make([]int, len(snap.Replicas))
	lost := oracle.LostWrites(writes, snap, group)
	if !slices.ContainsFunc(lost, func(l oracle.Lost) bool { return l.Key == writes[acked].Key }) {
		t.Fatalf("the durability check reports %v, not the lost write %s", lost, writes[acked].Key)
	}
	t.Logf("reported: %s", oracle.LostLine(lost))
}

// realise runs steps on a fresh cluster of p and returns every replica's data and the writes
// the steps reported.
func (s *suite) realise(t *testing.T, p cem.CEM, steps []aem.Transition, config []byte) (*cluster, cem.Snapshot, []cem.Write) {
	t.Helper()
	c := s.newCluster(t, p, config, steps)
	if err := c.start(t); err != nil {
		t.Fatalf("start: %v", err)
	}
	writes := s.applyAll(t, c, steps)
	return c, c.read(t), writes
}

// applyAll realises steps on c, logging each step's actions, and returns the writes the steps
// reported.
func (s *suite) applyAll(t *testing.T, c *cluster, steps []aem.Transition) []cem.Write {
	t.Helper()
	var writes []cem.Write
	for i := range steps {
		rep, err := c.apply(t, i, &steps[i])
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, steps[i], err)
		}
		var b strings.Builder
		for _, a := range rep.Actions {
			fmt.Fprintf(&b, "\n  %s replica %2d: %s", a.Time.Format("15:04:05.000"), a.Replica, a.What)
		}
		t.Logf("step %d %s:%s", i+1, steps[i], b.String())
		writes = append(writes, rep.Writes...)
	}
	if c.refused != "" { // its data cannot be judged as a converged cluster's
		t.Skipf("the schedule ended at its last step: %s", c.refused)
	}
	return writes
}
