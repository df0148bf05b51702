package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
)

// defaultStepTimeout bounds each wait when the spec gives no step timeout.
const defaultStepTimeout = 30 * time.Second

// workloadParent is the znode under which every write of a schedule lives: abstract write j of
// step s creates workloadParent/k<s>.<j>.
const workloadParent = "/modulo"

// roundTripTimeout bounds the session and sync that prove a new leader serves requests: they
// go to a server that srvr just showed serving, and take milliseconds.
const roundTripTimeout = 2 * time.Second

// cluster is one ensemble and the schedule it is driven through.
type cluster struct {
	spec      cem.ClusterSpec
	cfg       Config
	install   *install
	cdsFlags  []string // start replicas with the AppCDS archive
	log4jFile string
	timeout   time.Duration
	replicas  []*replica // by concrete index

	model  aem.Model
	params aem.Params
	state  aem.State // the abstract state after the last step
	// conc[a] is the concrete replica that realises abstract replica a. Divergences permute
	// online replicas (which are abstractly equal) so that the abstract replica receiving the
	// most writes is the real leader; the mapping then holds for the rest of the schedule.
	conc []int
	// failed is set once a step failed: the cluster's state is then unknown, and later steps
	// are refused.
	failed error

	timings timings
}

// timings adds up where a schedule's time goes, for the benchmark's breakdown.
type timings struct {
	jvm      time.Duration // from forking replicas to the last of them answering srvr
	election time.Duration // from then to the last of them logging LEADING or FOLLOWING
	resync   time.Duration // from then until every online replica serves with the same data
	writes   time.Duration // divergences: crashes, writes and their confirmation on disk
	check    time.Duration // the final read of every replica
}

func newCluster(spec cem.ClusterSpec, cfg Config) (*cluster, error) {
	d, err := drms.Lookup(spec.DRM)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	if d.Name != "qcz" {
		return nil, fmt.Errorf("zookeeper: the plugin realises qcz, not %s", d.Name)
	}
	params := aem.Params{Ops: spec.Ops, Replicas: spec.Replicas}
	if err := params.Validate(); err != nil {
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	if spec.Dir == "" {
		return nil, errors.New("zookeeper: the cluster spec has no directory")
	}
	in, err := findInstall(&cfg)
	if err != nil {
		return nil, err
	}
	c := &cluster{
		spec: spec, cfg: cfg, install: in, timeout: spec.StepTimeout,
		log4jFile: filepath.Join(spec.Dir, "log4j.properties"),
		model:     d.Model, params: params, state: d.Model.Init(params),
	}
	if c.timeout <= 0 {
		c.timeout = defaultStepTimeout
	}
	for i := range spec.Replicas {
		c.replicas = append(c.replicas, newReplica(spec.Dir, i, spec.BasePort))
		c.conc = append(c.conc, i)
	}
	return c, nil
}

// start starts every replica and waits until they serve under one leader, then creates the
// workload's parent znode on all of them.
func (c *cluster) start(ctx context.Context) error {
	if err := cem.CheckPortsFree(c.spec.BasePort, portsPerReplica*len(c.replicas)); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	if err := os.MkdirAll(c.spec.Dir, 0o755); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	if err := os.WriteFile(c.log4jFile, []byte(log4jProperties), 0o644); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	c.cdsFlags = c.prepareCDS(ctx)
	for _, r := range c.replicas {
		if err := r.prepare(&c.cfg, c.replicas); err != nil {
			return fmt.Errorf("zookeeper: %w", err)
		}
	}
	if err := c.startReplicas(c.replicas, nil); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	leader, err := c.awaitSynced(ctx, -1, c.replicas, c.replicas, true, nil)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := openSession(wctx, leader.clientAddr())
	if err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	defer s.close()
	if err := s.create(wctx, workloadParent, []byte(c.spec.ScheduleID)); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	if _, err := c.awaitInLogs(ctx, -1, c.replicas, leader, workloadParent, []byte(c.spec.ScheduleID), false); err != nil {
		return err
	}
	_, err = c.awaitSynced(ctx, -1, c.replicas, nil, false, nil)
	return err
}

// startReplicas forks the given replicas' JVMs at once (they start in parallel), and records
// each start as an action when rep is not nil.
func (c *cluster) startReplicas(rs []*replica, rep *report) error {
	for _, r := range rs {
		if err := r.start(c); err != nil {
			return err
		}
		if rep != nil {
			mode := ""
			if r.standalone {
				mode = " as a standalone server (break_realisation)"
			}
			rep.add(c.abstractOf(r.index), "start %s%s (pid %d, client port %d)", r.name, mode, r.proc.Pid, r.clientPort)
		}
	}
	return nil
}

// abstractOf returns the abstract replica that concrete replica i realises.
func (c *cluster) abstractOf(i int) int { return slices.Index(c.conc, i) }

// online returns the concrete replicas of the online abstract replicas.
func (c *cluster) online() []*replica {
	var rs []*replica
	for a, on := range c.state.On {
		if on {
			rs = append(rs, c.replicas[c.conc[a]])
		}
	}
	return rs
}

// notReached turns a wait's timeout into the error the executor expects: a *NotReachedError
// for a step, a plain error for Start (step -1).
func (c *cluster) notReached(step int, err error) error {
	var wt *cem.WaitTimeoutError
	if !errors.As(err, &wt) {
		if err != nil {
			return fmt.Errorf("zookeeper: %w", err)
		}
		return nil
	}
	if step < 0 {
		return fmt.Errorf("zookeeper: start: %w", err)
	}
	return &cem.NotReachedError{Step: step, Awaited: wt.What}
}

// observation is what one poll of awaitSynced saw, for the message when the wait times out.
type observation []string

func (o observation) String() string { return strings.Join(o, ", ") }

// awaitSynced waits until the online replicas are in the state a step must leave them in:
// every one serving, those of the ensemble under exactly one leader that sees all of them as
// synced followers, with the same zxid and node count; a standalone replica (break_realisation)
// serving standalone. After a new epoch it also proves that the leader serves requests with a
// sync round trip. It returns the leader.
//
// started lists the replicas started for this wait, whose start-up it times. When rep is not
// nil, the round trip and the state reached are recorded in it.
func (c *cluster) awaitSynced(ctx context.Context, step int, online, started []*replica, newEpoch bool, rep *report) (*replica, error) {
	var names []string
	for _, r := range online {
		names = append(names, r.name)
	}
	what := strings.Join(names, ", ") + " serving under one leader with the same zxid"
	if newEpoch {
		what += ", and a sync round trip through the new leader"
	}
	var leader *replica
	var last observation
	begin := time.Now()
	up := map[*replica]time.Time{} // when each started replica first answered srvr
	err := cem.WaitFor(ctx, c.timeout, what, func(ctx context.Context) (bool, error) {
		l, obs, err := c.synced(ctx, online, up)
		last = obs
		if err != nil || l == nil {
			return false, err
		}
		if newEpoch {
			if err := roundTrip(ctx, l); err != nil {
				last = append(last, "round trip: "+err.Error())
				return false, nil
			}
			if rep != nil {
				rep.add(c.abstractOf(l.index), "session and sync / through new leader %s: answered", l.name)
			}
		}
		leader = l
		return true, nil
	})
	if err != nil {
		var wt *cem.WaitTimeoutError
		if errors.As(err, &wt) {
			wt.What += " (last seen: " + last.String() + ")"
		}
		return nil, c.notReached(step, err)
	}
	c.recordStartTimings(started, up, begin)
	if rep != nil {
		rep.add(-1, "synced: %s", last)
	}
	return leader, nil
}

// synced is one poll of awaitSynced: it returns the leader when the replicas are synced, and
// what it saw of each. A replica whose JVM has exited is an error at once.
func (c *cluster) synced(ctx context.Context, online []*replica, up map[*replica]time.Time) (*replica, observation, error) {
	var obs observation
	status := map[*replica]srvrStatus{}
	var leader *replica
	ready := true
	for _, r := range online {
		if r.proc == nil {
			return nil, obs, fmt.Errorf("%s should be online but was never restarted", r.name)
		}
		if err := r.exitedError(); err != nil {
			return nil, obs, err
		}
		st, err := srvr(ctx, r.clientAddr())
		if err != nil {
			obs = append(obs, r.name+" not answering")
			ready = false
			continue
		}
		if _, ok := up[r]; !ok {
			up[r] = time.Now()
		}
		if !st.Serving {
			obs = append(obs, r.name+" not serving")
			ready = false
			continue
		}
		obs = append(obs, fmt.Sprintf("%s %s %s", r.name, st.Mode, zxidString(st.Zxid)))
		status[r] = st
		switch {
		case r.standalone && st.Mode != "standalone", !r.standalone && st.Mode != "leader" && st.Mode != "follower":
			ready = false
		case st.Mode == "leader":
			if leader != nil {
				ready = false // two leaders: the old one has not noticed yet
			}
			leader = r
		}
	}
	if !ready || leader == nil {
		return nil, obs, nil
	}
	lz := status[leader].Zxid
	// A leader that has committed nothing in its epoch reports the epoch's first zxid (counter
	// 0); its followers report the last transaction they synced, which is the last one on the
	// leader's disk, or that same first zxid when they synced from its snapshot.
	diskZxid := int64(-1)
	if zxidCounter(lz) == 0 {
		z, err := lastZxidOnDisk(leader.dataDir)
		if err != nil {
			return nil, obs, err
		}
		diskZxid = z
	}
	followers := 0
	for r, st := range status {
		if r.standalone || r == leader {
			continue
		}
		followers++
		if st.Zxid != lz && st.Zxid != diskZxid {
			return nil, obs, nil
		}
		if st.Nodes != status[leader].Nodes {
			return nil, obs, nil
		}
	}
	m, err := mntr(ctx, leader.clientAddr())
	if err != nil {
		return nil, obs, nil
	}
	if m["zk_peer_state"] != "leading - broadcast" || m["zk_synced_followers"] != fmt.Sprint(followers) {
		obs = append(obs, fmt.Sprintf("leader %s: %q, %s synced followers", leader.name, m["zk_peer_state"], m["zk_synced_followers"]))
		return nil, obs, nil
	}
	return leader, obs, nil
}

// roundTrip proves that a leader serves requests: a session to it and a sync through it.
func roundTrip(ctx context.Context, leader *replica) error {
	ctx, cancel := context.WithTimeout(ctx, roundTripTimeout)
	defer cancel()
	s, err := openSession(ctx, leader.clientAddr())
	if err != nil {
		return err
	}
	defer s.close()
	return s.sync(ctx, "/")
}

// recordStartTimings adds the JVM start, election and resync phases of the replicas started
// for this wait to the timings; the election's end is read from their logs. A wait that
// started nothing is all resync.
func (c *cluster) recordStartTimings(started []*replica, up map[*replica]time.Time, begin time.Time) {
	var forked, answered, elected time.Time
	for _, r := range started {
		if forked.IsZero() || r.startedAt.Before(forked) {
			forked = r.startedAt
		}
		answered = later(answered, up[r])
		elected = later(elected, electedAt(r.proc.LogPath, r.startedAt))
	}
	if forked.IsZero() {
		c.timings.resync += time.Since(begin)
		return
	}
	elected = later(elected, answered) // log times have millisecond resolution
	c.timings.jvm += answered.Sub(forked)
	c.timings.election += elected.Sub(answered)
	c.timings.resync += time.Since(elected)
}

// killAll SIGKILLs every running replica at once.
func (c *cluster) killAll(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.replicas))
	for i, r := range c.replicas {
		if r.proc == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.kill(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// teardown kills every replica and then whatever a pid file in the cluster's directory names.
func (c *cluster) teardown(ctx context.Context) error {
	err := c.killAll(ctx)
	if lerr := cem.KillLeftovers(c.spec.Dir); lerr != nil {
		err = errors.Join(err, lerr)
	}
	if err != nil {
		return fmt.Errorf("zookeeper: teardown: %w", err)
	}
	return nil
}

// log4jURL is the -Dlog4j.configuration value for a file.
func log4jURL(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
