package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
)

// report collects a step's actions as they happen.
type report struct{ actions []cem.Action }

// add records one action; replica is the abstract replica it concerns, or -1.
func (r *report) add(replica int, format string, args ...any) {
	r.actions = append(r.actions, cem.Action{Time: time.Now(), Replica: replica, What: fmt.Sprintf(format, args...)})
}

// apply realises one transition and moves the abstract state along.
func (c *cluster) apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	if c.failed != nil {
		return cem.StepReport{}, fmt.Errorf("zookeeper: step %d: an earlier step failed: %w", step.Index+1, c.failed)
	}
	t, err := aem.ParseTransition(step.Transition)
	if err != nil {
		return cem.StepReport{}, fmt.Errorf("zookeeper: step %d: %w", step.Index+1, err)
	}
	enabled := c.model.Next(c.params, &c.state, nil)
	if !slices.ContainsFunc(enabled, func(e aem.Transition) bool { return aem.Equal(&e, &t) }) {
		return cem.StepReport{}, fmt.Errorf("zookeeper: step %d: %s is not enabled in state %s", step.Index+1, step.Transition, c.state.String())
	}
	rep := &report{}
	switch t.Kind {
	case aem.Divergence:
		begin := time.Now()
		err = c.diverge(ctx, step.Index, &t, rep)
		c.timings.writes += time.Since(begin)
	case aem.Convergence:
		err = c.converge(ctx, step.Index, &t, rep)
	}
	if err != nil {
		c.failed = err
		return cem.StepReport{Actions: rep.actions}, err
	}
	c.state = c.model.Apply(c.params, &c.state, &t)
	return cem.StepReport{Actions: rep.actions}, nil
}

// currentLeader asks every online replica for its mode and returns the one leader.
func (c *cluster) currentLeader(ctx context.Context, step int) (*replica, error) {
	var leaders []*replica
	for _, r := range c.online() {
		st, err := srvr(ctx, r.clientAddr())
		if err != nil {
			return nil, fmt.Errorf("zookeeper: step %d: srvr %s: %w", step+1, r.name, err)
		}
		if st.Mode == "leader" {
			leaders = append(leaders, r)
		}
	}
	if len(leaders) != 1 {
		return nil, &cem.NotReachedError{Step: step, Awaited: fmt.Sprintf("one leader among the online replicas (found %d)", len(leaders))}
	}
	return leaders[0], nil
}

// placeLeader permutes the mapping so that an abstract replica that receives the most writes
// of the divergence is realised by the real leader: every write goes through the leader, so it
// receives all of them. Online abstract replicas are equal when a divergence starts, so
// exchanging two of them changes nothing abstract.
func (c *cluster) placeLeader(writes []int, leader *replica, rep *report) {
	top := slices.Max(writes)
	la := c.abstractOf(leader.index)
	if writes[la] == top {
		return
	}
	for a, w := range writes {
		if w == top && c.state.On[a] {
			c.conc[a], c.conc[la] = c.conc[la], c.conc[a]
			rep.add(-1, "map abstract replica %d to %s (the leader) and abstract replica %d to %s",
				a, c.replicas[c.conc[a]].name, la, c.replicas[c.conc[la]].name)
			return
		}
	}
}

// diverge realises D v: write j reaches exactly the replicas with v[i] >= j, and those with
// v[i] = j-1 are crashed just before it; at the end every replica is crashed.
//
// A write that reaches a majority is sent synchronously: it has committed when the call
// returns. A write that reaches only a minority can never commit, yet must be on the minority's
// disks before they crash. Its non-receivers are therefore first suspended (SIGSTOP, waiting
// until every thread has stopped), not killed: their connections to the leader stay open, so
// the leader keeps its quorum for sync_limit ticks after their last answer, and a suspended
// follower cannot log the proposal the leader sends it. SIGKILLed followers would be noticed at
// once (their connections close) and the leader would give up within a tick, possibly before
// the write reached it. The write is then sent asynchronously, and the plugin reads the
// receivers' transaction logs until the write is there (or the leader has stopped leading
// without it, which fails the step). The suspended replicas are SIGKILLed with everyone else
// at the end of the step; they never ran again after missing the write, so to them it is a
// crash before it.
func (c *cluster) diverge(ctx context.Context, step int, t *aem.Transition, rep *report) error {
	leader, err := c.currentLeader(ctx, step)
	if err != nil {
		return err
	}
	c.placeLeader(t.Writes, leader, rep)
	s, err := openSession(ctx, leader.clientAddr())
	if err != nil {
		return fmt.Errorf("zookeeper: step %d: %w", step+1, err)
	}
	// The session closes after the leader is killed: closing it first would send its leader a
	// closeSession, a transaction of its own when sessions are global.
	defer s.close()
	n := len(c.replicas)
	quorum := n/2 + 1
	for j := 1; j <= t.WriteCount(); j++ {
		var crash, receivers []*replica
		for a, w := range t.Writes {
			if !c.state.On[a] {
				continue
			}
			r := c.replicas[c.conc[a]]
			switch {
			case w == j-1:
				crash = append(crash, r)
			case w >= j:
				receivers = append(receivers, r)
			}
		}
		path := fmt.Sprintf("%s/k%d.%d", workloadParent, step+1, j)
		value := []byte(fmt.Sprintf("%s:%d.%d", c.spec.ScheduleID, step+1, j))
		minority := len(receivers) < quorum
		if minority {
			for _, r := range crash {
				if err := r.suspend(ctx, c.timeout); err != nil {
					return c.notReached(step, err)
				}
				rep.add(c.abstractOf(r.index), "SIGSTOP %s (pid %d): misses write %d (crashed with the rest at the end of the step)", r.name, r.proc.Pid, j)
			}
			s.createAsync(path, value) // never answered: the leader cannot commit it
			rep.add(c.abstractOf(leader.index), "create %s = %q on leader %s (sent; cannot commit, %d of %d replicas receive it)",
				path, value, leader.name, len(receivers), n)
		} else {
			for _, r := range crash {
				pid := r.proc.Pid
				if err := r.kill(ctx); err != nil {
					return fmt.Errorf("zookeeper: step %d: %w", step+1, err)
				}
				rep.add(c.abstractOf(r.index), "SIGKILL %s (pid %d): misses write %d", r.name, pid, j)
			}
			wctx, cancel := context.WithTimeout(ctx, c.timeout)
			err := s.create(wctx, path, value)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return &cem.NotReachedError{Step: step, Awaited: fmt.Sprintf("commit of %s on leader %s", path, leader.name)}
			}
			if err != nil {
				return fmt.Errorf("zookeeper: step %d: %w", step+1, err)
			}
			rep.add(c.abstractOf(leader.index), "create %s = %q on leader %s: committed", path, value, leader.name)
		}
		zxid, err := c.awaitInLogs(ctx, step, receivers, leader, path, value, minority)
		if err != nil {
			return err
		}
		rep.add(-1, "write %s has zxid %s in the txn logs of %s", path, zxidString(zxid), replicaNames(receivers))
	}
	for _, r := range c.online() {
		if r.proc == nil {
			continue
		}
		pid := r.proc.Pid
		if err := r.kill(ctx); err != nil {
			return fmt.Errorf("zookeeper: step %d: %w", step+1, err)
		}
		rep.add(c.abstractOf(r.index), "SIGKILL %s (pid %d): end of divergence", r.name, pid)
	}
	return nil
}

// awaitInLogs waits until every receiver's transaction log on disk holds the transaction that
// created path with value, and returns its zxid. For a minority write it fails as soon as the
// leader has stopped leading without logging it: the write can then never arrive.
func (c *cluster) awaitInLogs(ctx context.Context, step int, receivers []*replica, leader *replica, path string, value []byte, minority bool) (int64, error) {
	var zxid int64
	what := fmt.Sprintf("write %s in the txn logs of %s", path, replicaNames(receivers))
	var lost error
	err := cem.WaitFor(ctx, c.timeout, what, func(ctx context.Context) (bool, error) {
		missing := false
		for _, r := range receivers {
			z, ok, err := findWrite(r.dataDir, path, value)
			if err != nil {
				return false, err
			}
			if !ok && r == leader && minority {
				if st, err := srvr(ctx, leader.clientAddr()); err == nil && st.Mode != "leader" {
					// Read the log once more: the write may have landed just before.
					if z, ok, err = findWrite(r.dataDir, path, value); err != nil {
						return false, err
					}
					if !ok {
						lost = fmt.Errorf("%s stopped leading before it logged %s", leader.name, path)
						return false, lost
					}
				}
			}
			if !ok {
				missing = true
				continue
			}
			if zxid != 0 && z != zxid {
				return false, fmt.Errorf("%s has zxid %s in %s's log but %s elsewhere", path, zxidString(z), r.name, zxidString(zxid))
			}
			zxid = z
		}
		return !missing, nil
	})
	if lost != nil {
		return 0, &cem.NotReachedError{Step: step, Awaited: what + ": " + lost.Error()}
	}
	return zxid, c.notReached(step, err)
}

// converge realises C S: the group's replicas restart, in parallel, and the online replicas
// resync. With break_realisation, the schedule's last step brings one of them back as a
// standalone server instead.
func (c *cluster) converge(ctx context.Context, step int, t *aem.Transition, rep *report) error {
	quorum := len(c.replicas)/2 + 1
	newEpoch := c.state.Online() < quorum
	var group []*replica
	for _, a := range t.Group {
		group = append(group, c.replicas[c.conc[a]])
	}
	if c.cfg.BreakRealisation == breakStandalone {
		if r := c.standaloneCandidate(t); r != nil {
			if err := r.makeStandalone(&c.cfg); err != nil {
				return fmt.Errorf("zookeeper: step %d: %w", step+1, err)
			}
		}
	}
	if err := c.startReplicas(group, rep); err != nil {
		return fmt.Errorf("zookeeper: step %d: %w", step+1, err)
	}
	online := append(c.online(), group...)
	_, err := c.awaitSynced(ctx, step, online, group, newEpoch, rep)
	return err
}

// standaloneCandidate picks the replica break_realisation turns standalone: at the schedule's
// last step, the recovering replica with the fewest writes, provided the others still form a
// quorum without it. It returns nil at any other step.
func (c *cluster) standaloneCandidate(t *aem.Transition) *replica {
	next := c.model.Apply(c.params, &c.state, t)
	if next.Left > 0 || !next.AllOnline() {
		return nil // not the last step: schedules end fully online with every write injected
	}
	if len(c.replicas)-1 < len(c.replicas)/2+1 {
		return nil // without it the rest would have no quorum
	}
	best := -1
	for _, a := range t.Group {
		if best < 0 || c.state.RS[a] < c.state.RS[best] {
			best = a
		}
	}
	return c.replicas[c.conc[best]]
}

// makeStandalone turns a crashed replica into a standalone server with a copy of its data
// directory, on its own client port, in a directory of its own.
func (r *replica) makeStandalone(cfg *Config) error {
	dir := r.dir + "-standalone"
	if err := copyTree(r.dataDir, filepath.Join(dir, "data")); err != nil {
		return fmt.Errorf("copy %s's data: %w", r.name, err)
	}
	r.name += "-standalone"
	r.dir = dir
	r.dataDir = filepath.Join(dir, "data")
	r.standalone = true
	return os.WriteFile(r.configPath(), []byte(zooCfg(cfg, r, nil)), 0o644)
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// read returns every replica's workload data, by abstract replica: each read through a session
// with that replica alone, after a sync.
func (c *cluster) read(ctx context.Context) cem.Snapshot {
	begin := time.Now()
	defer func() { c.timings.check += time.Since(begin) }()
	snap := cem.Snapshot{Replicas: make([]cem.ReplicaData, len(c.replicas))}
	var wg sync.WaitGroup
	for a := range c.replicas {
		r := c.replicas[c.conc[a]]
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := c.readReplica(ctx, r)
			if err != nil {
				snap.Replicas[a] = cem.ReplicaData{Err: err.Error()}
				return
			}
			snap.Replicas[a] = cem.ReplicaData{Data: data}
		}()
	}
	wg.Wait()
	return snap
}

func (c *cluster) readReplica(ctx context.Context, r *replica) (map[string]string, error) {
	if !r.running() {
		return nil, fmt.Errorf("%s is not running", r.name)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := openSession(ctx, r.clientAddr())
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := s.sync(ctx, workloadParent); err != nil {
		return nil, err
	}
	return s.readChildren(ctx, workloadParent)
}

// replicaNames lists replicas' names for messages.
func replicaNames(rs []*replica) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.name
	}
	return strings.Join(names, ", ")
}
