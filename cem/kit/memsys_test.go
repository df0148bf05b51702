package kit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// memSystem is an in-memory kit.System that realises both families of models, so that the
// kit's engines are tested in seconds, without a real server. Each replica's data is a log of
// writes held in this test process; its server is a stand-in process (this test binary, run
// again, see TestMain) that answers one byte on its port. So the kit starts, SIGKILLs, SIGSTOPs
// and SIGCONTs real process groups, and the system sees what a client of a real server sees: a
// killed server refuses connections, a stopped one accepts and never answers.
//
// Replication is pulled: whenever the system is called, every replica that serves takes the
// entries of its source (its link, or the leader) that have been there for at least lag_ms, or,
// when it must resync in full, its source's whole log once lag_ms have passed since the
// resync began. A quorum write commits once a majority holds it; elections pick the longest
// log, and every follower then resyncs from the leader in full, so the system always converges
// when the kit waits where it must. With a lag, a wait that the kit leaves out shows as
// replicas that differ.
type memSystem struct {
	mu  sync.Mutex
	cfg struct {
		LagMS int `toml:"lag_ms"`
		// RelinkByRestart makes the system a PostgreSQL's: a server changes its source only
		// by a restart (Follow and Unfollow ask for a stop, Relink rewinds the log to where it
		// and its new source's part), and a follower whose source's history was rewritten
		// stops replicating until it is relinked, where a Redis replica resyncs in full.
		RelinkByRestart bool `toml:"relink_by_restart"`
		// WrongRewind makes Relink never rewind, as pg_rewind does when it takes two histories
		// for one: a follower that held entries its new source lacks then cannot replicate,
		// and its server logs brokenLine at every replication pass.
		WrongRewind bool `toml:"wrong_rewind"`
		// LiveUnfollow makes Unfollow live and for good with relink_by_restart, as a
		// PostgreSQL promotion: the server follows nobody, and nobody after a restart.
		LiveUnfollow bool `toml:"live_unfollow"`
		// ResumesLinks makes a live Follow outlive a restart, as MariaDB's master.info does: a
		// server resumes its last source when it starts, unless Command starts it with that
		// off (--skip-slave-start), which it does where the kit's StartSource is nobody, but
		// with ignore_start_source.
		ResumesLinks      bool `toml:"resumes_links"`
		IgnoreStartSource bool `toml:"ignore_start_source"`
		// RefusesAhead makes a follower that holds entries its source lacks refuse to follow
		// it (kit.ErrRefused), as MariaDB refuses a GTID its new primary does not hold, where
		// it would resync in full.
		RefusesAhead bool `toml:"refuses_ahead"`
		// BrokenStatus makes a follower that cannot replicate (wrong_rewind) say so in
		// InSync's answer (kit.ErrBroken), as MariaDB's stopped replication thread does, where
		// it would log brokenLine.
		BrokenStatus bool `toml:"broken_status"`
		// BrokenFollow makes a replica that holds entries refuse every live order to follow
		// (kit.ErrBroken), as MariaDB refuses CHANGE MASTER TO when a power loss left its
		// master.info empty.
		BrokenFollow bool `toml:"broken_follow"`
		// InitialKeys makes the system a kit.Seeder of that many keys.
		InitialKeys int `toml:"initial_keys"`
		// Preset names one of memPresets, which set only the kit's keys.
		Preset string `toml:"preset"`
		// Bootstrap makes the system a Galera's: a started server joins a peer that has
		// joined and serves, and none when every server went down, unless its start
		// bootstrapped it, as StartGroup decides: the one of the longest log among those
		// down, started first. Only joined replicas are elected. IgnoreGroup makes
		// StartGroup decide nothing, as a kit that starts each server alone would.
		Bootstrap   bool `toml:"bootstrap"`
		IgnoreGroup bool `toml:"ignore_group"`
		// StuckJoin makes a restarted server that is not bootstrapped (with bootstrap) log
		// stuckLine and never join, as a Galera joiner whose IST failed says "node restart
		// required" and neither exits nor rejoins; with stuck_quiet it logs nothing.
		StuckJoin  bool `toml:"stuck_join"`
		StuckQuiet bool `toml:"stuck_quiet"`
		// StuckBroken makes that server log brokenLine at every pass instead, as a PostgreSQL
		// standby that cannot follow its primary's WAL logs "record with incorrect prev-link"
		// again and again and never serves.
		StuckBroken bool `toml:"stuck_broken"`
		// SaysStalled makes the system answer, when the kit asks at a step's deadline, that it
		// has no leader (kit.Staller), as NATS's servers name none for a group stuck in its
		// elections.
		SaysStalled bool `toml:"says_stalled"`
		// AcksEarly makes a quorum write return once the leader logged it, as an
		// asynchronously replicated PostgreSQL's commit does, where it would wait until a
		// majority holds it; DeclaresAsync makes the system say so (kit.Asynchronous).
		AcksEarly     bool `toml:"acks_early"`
		DeclaresAsync bool `toml:"declares_async"`
		// RefusesAlone makes a quorum write that a majority does not hold within refuseAfter
		// fail, as a primary that requires a number of replicas to be connected refuses. Its
		// log shows the write (Logged) only refuseGrace after the refusal: the kit counts a
		// refusal as the system's only when it came before the kit failed every replica, which
		// it does once the write is logged, and a refusal racing the failures would make the
		// answer the machine's timing (TestMinorityAnswers failed so under load).
		RefusesAlone bool `toml:"refuses_alone"`
		// LogsOnLeader makes Logged refuse to say whether a write reached any replica but the
		// leader it went through (kit.ErrUnrealisable), as Galera holds a write its primary
		// component has not ordered on the node that executes it alone.
		LogsOnLeader bool `toml:"logs_on_leader"`
	}
	// answered is when Write returned, by key and value, for RefusesAlone's Logged.
	answered map[memEntryID]time.Time
	lag      time.Duration
	quorum   bool
	c        *kit.Cluster
	reps     []*memReplica
	leader   *kit.Replica // quorum models: nil until elected, and after the leader restarts
	epochs   int          // source of memReplica.epoch values
	// bootstrap is the replica whose next start bootstraps it (cfg.Bootstrap), and groups
	// what StartGroup was asked: "group | running" by names.
	bootstrap *kit.Replica
	groups    []string
}

// memReplica is one replica's state.
type memReplica struct {
	log    []memEntry
	epoch  int // changes whenever the log is replaced as a whole, or its replica is elected
	starts int // the kit's Starts when last seen: it differs after a restart
	// What it replicates from: src (nil for none), the epoch of src's log it took entries of,
	// how many it took, and from when a full resync may complete (full: one is due).
	src      *kit.Replica
	srcEpoch int
	taken    int
	full     bool
	syncAt   time.Time
	// configured is the source a restart-only system (relink_by_restart) follows from its
	// start: the one its last Relink set.
	configured *kit.Replica
	// resumes is the source of its last live Follow, which a resumes_links server follows
	// again when it starts, unless resumeOff (its Command started it with that off).
	resumes   *kit.Replica
	resumeOff bool
	// startedWith is the source the server followed when it last started.
	startedWith *kit.Replica
	// joined: the server has joined the cluster since it last started (cfg.Bootstrap);
	// stuck: it never will (cfg.StuckJoin); wasJoined: it joined in an earlier start.
	joined, stuck, wasJoined bool
}

// memEntry is one write in a replica's log, with when it entered that log.
type memEntry struct {
	key, value string
	at         time.Time
}

// placeholderEnv carries the address a stand-in server listens on; childEnv marks the child
// that each stand-in starts in a session of its own.
const (
	placeholderEnv = "MODULO_KIT_TEST_PLACEHOLDER"
	childEnv       = "MODULO_KIT_TEST_SETSID_CHILD"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		select {} // a helper that left the server's process group, as PostgreSQL's backends do
	}
	if addr := os.Getenv(placeholderEnv); addr != "" {
		placeholder(addr)
		return
	}
	if addr := os.Getenv(dialEnv); addr != "" {
		if !answers(addr, 200*time.Millisecond) {
			fmt.Fprintln(os.Stderr, "no answer from", addr)
			os.Exit(3)
		}
		return
	}
	os.Exit(m.Run())
}

// placeholder is a stand-in server: it starts a child that calls setsid (a server is everything
// it started: the kit must suspend and kill it too), then writes one byte to every connection.
func placeholder(addr string) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"=1")
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "serving on", addr)
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Write([]byte{'+'})
		c.Close()
	}
}

// serving tells whether r's stand-in answers now.
func serving(r *kit.Replica, wait time.Duration) bool { return answers(r.Addr(0), wait) }

// answers tells whether the stand-in at addr answers within wait.
func answers(addr string, wait time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(wait))
	_, err = c.Read(make([]byte, 1))
	return err == nil
}

// tickWait is how long a replication pass waits for a stand-in's answer: a stopped one never
// answers, and a late answer only delays replication to the next pass.
const tickWait = 20 * time.Millisecond

// awaitServing waits until r serves, as a client of a real server waits for its answer.
func awaitServing(ctx context.Context, r *kit.Replica) error {
	for !serving(r, 200*time.Millisecond) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not answer: %w", r.Name, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// memPresets set the kit's own keys (kit.Presetter); the kit applies them.
var memPresets = kit.Presets{"updates": {"qce": `workload = "update"`}}

func (s *memSystem) Presets() kit.Presets { return memPresets }

func (s *memSystem) Configure(decode func(any) error) error {
	s.cfg.LagMS, s.cfg.InitialKeys, s.cfg.Preset = 0, 0, ""
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if err := memPresets.Decode(s.cfg.Preset, "", nil); s.cfg.Preset != "" && err != nil {
		return err
	}
	if s.cfg.LagMS < 0 {
		return fmt.Errorf("lag_ms must be at least 0, got %d", s.cfg.LagMS)
	}
	s.lag = time.Duration(s.cfg.LagMS) * time.Millisecond
	return nil
}

func (s *memSystem) Version(context.Context) (string, error) { return "memsys 1", nil }

func (s *memSystem) InitialData(c *kit.Cluster) []kit.KeyValue {
	var data []kit.KeyValue
	for i := range s.cfg.InitialKeys {
		data = append(data, kit.KeyValue{Key: fmt.Sprintf("init.%d", i), Value: fmt.Sprintf("%s:initial %d", c.Spec.ScheduleID, i)})
	}
	return data
}

func (s *memSystem) Prepare(_ context.Context, c *kit.Cluster) error {
	d, err := drms.Lookup(c.Spec.DRM)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quorum = d.Model.Rules() == aem.QuorumRules
	s.c, s.reps, s.leader = c, make([]*memReplica, len(c.Replicas)), nil
	for i := range s.reps {
		s.reps[i] = &memReplica{epoch: s.epoch()}
	}
	return nil
}

func (s *memSystem) epoch() int { s.epochs++; return s.epochs }

func (s *memSystem) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	self, err := os.Executable()
	if err != nil {
		return kit.Command{}, err
	}
	s.mu.Lock()
	s.reps[r.Index].resumeOff = c.StartSource(r) == nil && !s.cfg.IgnoreStartSource
	s.mu.Unlock()
	return kit.Command{Path: self, Args: []string{"-test.run=^$"}, Env: append(os.Environ(), placeholderEnv+"="+r.Addr(0))}, nil
}

// rep returns r's state, after what a restart does: a server of a link model starts
// replicating from nobody; in a quorum model a restarted leader leads no more, and a restarted
// follower resyncs from the leader.
func (s *memSystem) rep(r *kit.Replica) *memReplica {
	m := s.reps[r.Index]
	if m.starts != r.Starts {
		m.starts, m.src, m.full = r.Starts, m.configured, false
		if s.cfg.ResumesLinks && m.src == nil && !m.resumeOff {
			m.src = m.resumes
		}
		m.startedWith = m.src
		m.wasJoined = m.wasJoined || m.joined
		m.joined = s.bootstrap == r
		m.stuck = s.cfg.StuckJoin && m.wasJoined && !m.joined
		if m.stuck && !s.cfg.StuckQuiet && !s.cfg.StuckBroken {
			logLine(r, stuckLine)
		}
		if m.joined {
			s.bootstrap = nil
		}
		if s.leader == r {
			s.leader = nil
		}
		if s.quorum && s.leader != nil {
			s.resync(m, s.leader)
		}
	}
	return m
}

// StartGroup decides the starts of group, with cfg.Bootstrap: where no running server has
// joined, the one of the longest log among those of group that are down bootstraps, first,
// and each of the others starts once the one before serves.
func (s *memSystem) StartGroup(_ context.Context, c *kit.Cluster, group, running []*kit.Replica) ([]*kit.Replica, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = append(s.groups, memNames(group)+" | "+memNames(running))
	if !s.cfg.Bootstrap || s.cfg.IgnoreGroup || slices.ContainsFunc(running, func(r *kit.Replica) bool { return s.reps[r.Index].joined }) {
		return group, false, nil
	}
	var first *kit.Replica
	for _, r := range group {
		if !slices.Contains(running, r) && (first == nil || len(s.reps[r.Index].log) > len(s.reps[first.Index].log)) {
			first = r
		}
	}
	if first == nil {
		return group, false, nil
	}
	s.bootstrap = first
	order := []*kit.Replica{first}
	for _, r := range group {
		if r != first {
			order = append(order, r)
		}
	}
	return order, true, nil
}

func memNames(rs []*kit.Replica) string {
	var ns []string
	for _, r := range rs {
		ns = append(ns, r.Name)
	}
	return strings.Join(ns, " ")
}

// resync makes m replicate from src, in full first.
func (s *memSystem) resync(m *memReplica, src *kit.Replica) {
	m.src, m.full, m.syncAt = src, true, time.Now().Add(s.lag)
}

// tick is one pass of replication over every replica that serves.
func (s *memSystem) tick() {
	up := make([]bool, len(s.c.Replicas))
	for i, r := range s.c.Replicas {
		up[i] = serving(r, tickWait)
		s.rep(r)
	}
	if s.cfg.Bootstrap {
		sponsor := slices.ContainsFunc(s.c.Replicas, func(r *kit.Replica) bool { return up[r.Index] && s.reps[r.Index].joined })
		for i, m := range s.reps {
			m.joined = m.joined || sponsor && up[i] && !m.stuck
		}
	}
	// A replica takes what its source took in this pass too: sources first, as far as chains go.
	for range s.c.Replicas {
		for i, m := range s.reps {
			if m.src != nil && up[i] && up[m.src.Index] {
				s.pull(m, s.reps[m.src.Index])
			}
		}
	}
	for i, m := range s.reps {
		if s.cfg.WrongRewind && !s.cfg.BrokenStatus && m.src != nil && m.srcEpoch == wrongEpoch && up[i] ||
			m.stuck && s.cfg.StuckBroken && up[i] {
			logLine(s.c.Replicas[i], brokenLine)
		}
	}
}

// wrongEpoch is the source epoch of a follower that a wrong rewind left holding entries its
// source lacks (epochs are positive); brokenLine is what its server then logs.
const (
	wrongEpoch = -1
	brokenLine = "memsys: this replica's history is not its source's"
	// followRefusal is what a broken_follow replica answers an order to follow.
	followRefusal = "memsys: cannot read its own source's record"
	// stuckLine is what a restarted server that will never join logs (stuck_join).
	stuckLine = "memsys: joining failed, node restart required"
)

// logLine appends line to r's server's log, as the server would.
func logLine(r *kit.Replica, line string) {
	f, err := os.OpenFile(r.LogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		panic(err) // the kit made the log when it started the server
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// Stalled says the system has no leader, with says_stalled, while a restarted server never
// joins (stuck_join).
func (s *memSystem) Stalled(_ context.Context, _ *kit.Cluster, online []*kit.Replica) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.SaysStalled || !slices.ContainsFunc(online, func(r *kit.Replica) bool { return s.reps[r.Index].stuck }) {
		return "", nil
	}
	return stalledWords, nil
}

// stalledWords is what the system answers with says_stalled.
const stalledWords = "memsys: no leader"

// SyncLines names the line a follower that cannot replicate logs (wrong_rewind), and the one a
// server that will never join logs (stuck_join).
func (s *memSystem) SyncLines() []kit.LineKind {
	return []kit.LineKind{{Text: brokenLine, Kind: "NOT-ITS-HISTORY", Broken: true}, {Text: stuckLine, Kind: "RESTART-REQUIRED", Stuck: true}}
}

// pull makes m take from its source's log what replication has brought by now.
func (s *memSystem) pull(m, src *memReplica) {
	now := time.Now()
	if s.cfg.RelinkByRestart && !m.full && m.srcEpoch != src.epoch {
		return // the source's history is not the one m holds part of: m must be rewound
	}
	if s.cfg.RefusesAhead && aheadOf(m, src) {
		return // InSync says it refuses
	}
	if m.full || m.srcEpoch != src.epoch {
		if now.Before(m.syncAt) {
			return
		}
		m.log = make([]memEntry, len(src.log))
		for i, e := range src.log {
			m.log[i] = memEntry{e.key, e.value, now}
		}
		m.full, m.srcEpoch, m.taken, m.epoch = false, src.epoch, len(src.log), s.epoch()
		return
	}
	for ; m.taken < len(src.log) && !now.Before(src.log[m.taken].at.Add(s.lag)); m.taken++ {
		e := src.log[m.taken]
		m.log = append(m.log, memEntry{e.key, e.value, now})
	}
}

// aheadOf tells whether m holds an entry that src's log lacks at its place.
func aheadOf(m, src *memReplica) bool {
	for i, e := range m.log {
		if i >= len(src.log) || src.log[i].key != e.key || src.log[i].value != e.value {
			return true
		}
	}
	return false
}

// inSync tells whether m holds all of src's log.
func inSync(m, src *memReplica) bool {
	return !m.full && m.srcEpoch == src.epoch && m.taken == len(src.log)
}

func (m *memReplica) data() map[string]string {
	d := map[string]string{}
	for _, e := range m.log {
		if e.value == deleted {
			delete(d, e.key)
			continue
		}
		d[e.key] = e.value
	}
	return d
}

// Write appends to r's log; a quorum write then waits until a majority holds it. The kit
// must write only through the leader, or into a replica that follows nobody.
func (s *memSystem) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	if err := awaitServing(ctx, r); err != nil {
		return err
	}
	s.mu.Lock()
	s.tick()
	m := s.rep(r)
	switch {
	case s.quorum && s.leader != r:
		s.mu.Unlock()
		return fmt.Errorf("%s is not the leader", r.Name)
	case !s.quorum && m.src != nil:
		s.mu.Unlock()
		return fmt.Errorf("%s follows %s: a write into it would not replicate", r.Name, m.src.Name)
	}
	m.log = append(m.log, memEntry{key, value, time.Now()})
	at, epoch, sent := len(m.log), m.epoch, time.Now()
	s.mu.Unlock()
	if s.cfg.RefusesAlone {
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.answered == nil {
				s.answered = map[memEntryID]time.Time{}
			}
			s.answered[memEntryID{key, value}] = time.Now()
		}()
	}
	for s.quorum && !s.cfg.AcksEarly {
		s.mu.Lock()
		s.tick()
		held := 0
		for _, f := range s.reps {
			if f == m && m.epoch == epoch || f.src == r && f.srcEpoch == epoch && f.taken >= at {
				held++
			}
		}
		s.mu.Unlock()
		if held > len(s.reps)/2 {
			return nil
		}
		if s.cfg.RefusesAlone && time.Since(sent) > refuseAfter {
			return fmt.Errorf("write %s held by %d of %d replicas: not enough replicas", key, held, len(s.reps))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("write %s held by %d of %d replicas: %w", key, held, len(s.reps), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// refuseAfter is how long a refuses_alone write waits for a majority, and refuseGrace how long
// after its answer its log shows it.
const (
	refuseAfter = 20 * time.Millisecond
	refuseGrace = 250 * time.Millisecond
)

// memEntryID names a write by its key and value.
type memEntryID struct{ key, value string }

// AcksBeforeReplicating is what the configuration declares (declares_async), whether or not
// the system does so (acks_early).
func (s *memSystem) AcksBeforeReplicating(*kit.Cluster) bool { return s.cfg.DeclaresAsync }

// Delete appends a deletion to the leader's log, which replicates as writes do.
func (s *memSystem) Delete(ctx context.Context, r *kit.Replica, key string) error {
	return s.Write(ctx, r, key, deleted)
}

// deleted is the value of a deletion in a log: data() drops the key.
const deleted = "\x00deleted"

func (s *memSystem) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	if err := awaitServing(ctx, r); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	return s.rep(r).data(), nil
}

// Leader keeps a leader that serves; else, when every online replica serves and they are a
// majority, it elects the one with the longest log, and every other replica resyncs from it.
func (s *memSystem) Leader(_ context.Context, _ *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	for _, r := range online {
		if !serving(r, tickWait) {
			return nil, r.Name + " does not answer", nil
		}
	}
	for _, r := range online {
		if s.cfg.Bootstrap && !s.rep(r).joined {
			return nil, r.Name + " has joined no cluster", nil
		}
	}
	if s.leader != nil && slices.Contains(online, s.leader) {
		return s.leader, "", nil
	}
	if len(online) <= len(s.reps)/2 {
		return nil, fmt.Sprintf("%d of %d replicas online: no quorum", len(online), len(s.reps)), nil
	}
	best := online[0]
	for _, r := range online {
		if len(s.rep(r).log) > len(s.rep(best).log) {
			best = r
		}
	}
	s.leader = best
	lm := s.rep(best)
	lm.src, lm.full, lm.epoch = nil, false, s.epoch()
	for _, r := range s.c.Replicas {
		if r != best {
			s.resync(s.rep(r), best)
		}
	}
	return best, "", nil
}

// CaughtUp: for a quorum model, every online replica holds the leader's whole log; for a link
// model (whose links the kit awaited with InSync), every online replica serves.
func (s *memSystem) CaughtUp(ctx context.Context, c *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	if !s.quorum {
		for _, r := range online {
			if !serving(r, tickWait) {
				return false, r.Name + " does not answer", nil
			}
		}
		return true, "", nil
	}
	leader, seen, err := s.Leader(ctx, c, online)
	if leader == nil {
		return false, seen, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	for _, r := range online {
		if r != leader && !inSync(s.rep(r), s.rep(leader)) {
			return false, fmt.Sprintf("%s holds %d entries of leader %s's %d", r.Name, s.rep(r).taken, leader.Name, len(s.rep(leader).log)), nil
		}
	}
	return true, "", nil
}

// Logged: the write is in r's log.
func (s *memSystem) Logged(_ context.Context, r *kit.Replica, key, value string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	if at, ok := s.answered[memEntryID{key, value}]; s.cfg.RefusesAlone && (!ok || time.Since(at) < refuseGrace) {
		return false, nil
	}
	if s.cfg.LogsOnLeader && r != s.leader {
		return false, fmt.Errorf("write %s reaches %s, which is not the leader it went through: %w", key, r.Name, kit.ErrUnrealisable)
	}
	return slices.ContainsFunc(s.rep(r).log, func(e memEntry) bool { return e.key == key && e.value == value }), nil
}

func (s *memSystem) Follow(_ context.Context, r, src *kit.Replica) error {
	if s.cfg.RelinkByRestart {
		return kit.ErrNeedsStop
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.rep(r)
	if s.cfg.BrokenFollow && len(m.log) > 0 {
		return fmt.Errorf("%w: %s", kit.ErrBroken, followRefusal)
	}
	s.resync(m, src)
	m.resumes = src
	return nil
}

func (s *memSystem) Unfollow(_ context.Context, r *kit.Replica) error {
	if s.cfg.RelinkByRestart && !s.cfg.LiveUnfollow {
		return kit.ErrNeedsStop
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.rep(r)
	m.src, m.configured, m.resumes = nil, nil, nil
	return nil
}

// Relink rewinds r's log to the longest prefix it shares with src's and makes r follow src from
// its next start, as pg_rewind and a standby's configuration do; without src, r will follow
// nobody. A rewind that drops entries rewrites r's history: r's log gets a new epoch, so that
// its followers stop replicating until they are relinked.
func (s *memSystem) Relink(_ context.Context, _ *kit.Cluster, r, src *kit.Replica) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.rep(r)
	m.configured, m.src = src, src
	if src == nil {
		return false, nil
	}
	sm := s.rep(src)
	k := 0
	for k < len(m.log) && k < len(sm.log) && m.log[k].key == sm.log[k].key && m.log[k].value == sm.log[k].value {
		k++
	}
	rewritten := k < len(m.log)
	if rewritten && s.cfg.WrongRewind {
		m.full, m.srcEpoch, m.taken = false, wrongEpoch, k
		return false, nil
	}
	if rewritten {
		m.log, m.epoch = m.log[:k], s.epoch()
	}
	m.full, m.srcEpoch, m.taken = false, sm.epoch, k
	return rewritten, nil
}

func (s *memSystem) InSync(_ context.Context, r, src *kit.Replica) (bool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	m, sm := s.rep(r), s.rep(src)
	if m.src != src {
		return false, fmt.Sprintf("%s does not follow %s", r.Name, src.Name), nil
	}
	if s.cfg.RefusesAhead && aheadOf(m, sm) {
		return false, "", fmt.Errorf("%w: %s holds entries %s lacks", kit.ErrRefused, r.Name, src.Name)
	}
	if s.cfg.BrokenStatus && m.srcEpoch == wrongEpoch {
		return false, "", fmt.Errorf("%w: %s", kit.ErrBroken, brokenLine)
	}
	return inSync(m, sm), fmt.Sprintf("%s took %d of %s's %d entries", r.Name, m.taken, src.Name, len(sm.log)), nil
}

// CopySnapshot gives the crashed replica to a copy of from's log; with relink_by_restart the
// copy starts following from.
func (s *memSystem) CopySnapshot(_ context.Context, _ *kit.Cluster, from, to *kit.Replica) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fm, tm := s.rep(from), s.rep(to)
	tm.log, tm.epoch, tm.src, tm.configured, tm.resumes = slices.Clone(fm.log), s.epoch(), nil, nil, nil
	if s.cfg.RelinkByRestart { // a PostgreSQL base backup starts in recovery, following from
		tm.configured, tm.srcEpoch, tm.taken = from, fm.epoch, len(fm.log)
		return true, nil
	}
	return false, nil
}

// memAbout names the catalogue's plugin of a DRM, as the kit and the suite require.
func memAbout(drm string) kit.About {
	d, err := drms.Lookup(drm)
	if err != nil {
		panic(err)
	}
	base, _, _ := drms.SplitName(drm)
	return kit.About{Name: d.Plugin, DRMs: []string{base}, PortsPerReplica: 1}
}

// TestMemSystemConformance runs the conformance suite on the in-memory system, for a quorum
// model and the three link models, with replication lagging so that every wait of the kit's
// engines is needed.
func TestMemSystemConformance(t *testing.T) {
	for _, drm := range []string{"qce", "qce+pause", "ssr", "slr", "sclr"} {
		t.Run(drm, func(t *testing.T) {
			t.Parallel()
			plugintest.Run(t, plugintest.Config{
				DRM:          drm,
				New:          func() cem.CEM { return kit.New(memAbout(drm), &memSystem{}) },
				PluginConfig: []byte("lag_ms = 100"),
				StepTimeout:  6 * time.Second, // ample on a loaded machine; the hung-server part waits it out once
				NoServers:    true,
			})
		})
	}
}

// TestInitialData: a quorum system's initial data is on every replica when the first step
// starts, and the suite passes with it (the comparisons cover it).
func TestInitialData(t *testing.T) {
	p := kit.New(memAbout("qce"), &memSystem{})
	spec := cem.ClusterSpec{DRM: "qce", Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, 3),
		ScheduleID: "0123456789abcdef", Config: []byte("lag_ms = 50\ninitial_keys = 3"), StepTimeout: 6 * time.Second}
	if err := p.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(context.Background()) })
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range snap.Replicas {
		if r.Data["init.0"] != "0123456789abcdef:initial 0" || r.Data["init.2"] != "0123456789abcdef:initial 2" || len(r.Data) != 3 {
			t.Errorf("replica %d holds %v after the start, want the three initial keys", i, r.Data)
		}
	}
	plugintest.Run(t, plugintest.Config{
		DRM:          "qce",
		New:          func() cem.CEM { return kit.New(memAbout("qce"), &memSystem{}) },
		PluginConfig: []byte("lag_ms = 50\ninitial_keys = 3"),
		StepTimeout:  6 * time.Second,
		NoServers:    true,
	})
}

// TestRelinkByRestart: a system whose servers change their source only by a restart, and whose
// followers stop replicating when their source's history is rewritten (PostgreSQL's standbys
// after a pg_rewind of their upstream), passes the suite on S/CL/R with three replicas, where a
// rewound replica can have followers: the kit stops, prepares and restarts each relinked
// server, and relinks the followers of a rewritten one in turn.
func TestRelinkByRestart(t *testing.T) {
	plugintest.Run(t, plugintest.Config{
		DRM:          "sclr",
		Params:       aem.Params{Ops: 2, Replicas: 3},
		New:          func() cem.CEM { return kit.New(memAbout("sclr"), &memSystem{}) },
		PluginConfig: []byte("lag_ms = 20\nrelink_by_restart = true"),
		StepTimeout:  6 * time.Second,
		NoServers:    true,
	})
}

// TestSkipWaitHealedDivergence: with break_realisation = "skip-wait", a check right after a
// convergence that is not the last sees replicas that differ (the in-memory system lags), and
// the end, whose convergence waits, sees them agree: the divergence that only a check after
// every convergence catches.
func TestSkipWaitHealedDivergence(t *testing.T) {
	for _, drm := range []string{"qce", "slr"} {
		t.Run(drm, func(t *testing.T) {
			d, err := drms.Lookup(drm)
			if err != nil {
				t.Fatal(err)
			}
			params := aem.Params{Ops: 2, Replicas: 3}
			var file bytes.Buffer
			if _, err := schedules.Generate(&file, d, params, "test", 0); err != nil {
				t.Fatal(err)
			}
			r, err := schedules.NewReader(&file, drm)
			if err != nil {
				t.Fatal(err)
			}
			var steps []aem.Transition
			mid := -1
			for {
				s, err := r.Next()
				if err != nil {
					break
				}
				// A convergence before the last step whose replicas online after it held
				// different versions before it: one of them has something to catch up on.
				st := d.Model.Init(params)
				for i := range s.Steps[:len(s.Steps)-1] {
					next := d.Model.Apply(params, &st, &s.Steps[i])
					var versions []int
					for r, on := range next.On {
						if on {
							versions = append(versions, st.RS[r])
						}
					}
					if s.Steps[i].Kind == aem.Convergence && slices.Min(versions) != slices.Max(versions) {
						steps, mid = s.Steps, i
						break
					}
					st = next
				}
				if mid >= 0 {
					break
				}
			}
			if mid < 0 {
				t.Fatal("no schedule has a convergence before its last step that brings back a replica behind")
			}
			p := kit.New(memAbout(drm), &memSystem{})
			spec := cem.ClusterSpec{DRM: drm, Ops: params.Ops, Replicas: params.Replicas, Dir: t.TempDir(),
				BasePort: plugintest.ReservePorts(t, params.Replicas), ScheduleID: "skipwait", StepTimeout: 3 * time.Second,
				Config: []byte("lag_ms = 300\n" + kit.BreakKey + " = \"" + kit.BreakSkipWait + "\"\n")}
			ctx := context.Background()
			if err := p.Start(ctx, spec); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Teardown(context.Background()) })
			state := d.Model.Init(params)
			for i := range steps {
				if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: steps[i].String()}); err != nil {
					t.Fatalf("step %d %s: %v", i+1, steps[i], err)
				}
				_, state, _ = aem.Take(d.Model, params, &state, &steps[i]) // Apply took it
				if i != mid {
					continue
				}
				snap, err := p.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if div := oracle.CompareGroups(snap, oracle.Promised(&state)); div.Converged() {
					t.Errorf("after step %d %s, not waited for, the replicas agree", i+1, steps[i])
				} else {
					t.Logf("after step %d %s: %s", i+1, steps[i], div.Line())
				}
			}
			snap, err := p.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if div := oracle.Compare(snap); !div.Converged() {
				t.Errorf("at the end of %s the replicas differ: %s", schedules.Body(steps), div.Line())
			}
		})
	}
}

// startSCLR starts an in-memory S/CL/R cluster of n replicas for schedules of ops writes, with
// the memSystem configuration config and step timeout timeout; t's cleanup tears it down.
func startSCLR(t *testing.T, ops, n int, config string, timeout time.Duration) (cem.CEM, *memSystem) {
	t.Helper()
	sys := &memSystem{}
	p := kit.New(memAbout("sclr"), sys)
	spec := cem.ClusterSpec{DRM: "sclr", Ops: ops, Replicas: n, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, n),
		ScheduleID: "0123456789abcdef", Config: []byte(config), StepTimeout: timeout}
	if err := p.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(context.Background()) })
	return p, sys
}

// TestRewrittenHistoryRelinksFollowers: in a system whose relinks need a restart, a follower of
// a replica whose history was rewritten (a snapshot copied in, a rewind) is relinked, in order,
// and the cluster converges; without that rule each of these schedules waits forever for a
// follower holding a history its source no longer has.
func TestRewrittenHistoryRelinksFollowers(t *testing.T) {
	tests := []struct{ name, schedule string }{
		{"snapshot copied into a source", "D[1,0,0](n,c,c) D[1,0,0](n,-,-) C[1]<-,-,->off1 C[1]<-,0,-> C[2]<-,0,1>"},
		{"source rewound", "D[1,0,0](n,c,c) C[1]<-,0,-> D[1,0,0](n,c,-) C[1]<-,0,-> C[2]<2,0,->"},
		{"source rewound after an offline resync", "D[1,0,0](n,c,c) C[1]<-,0,-> D[1,0,0](n,c,-) C[1]<-,-,->off1 C[1]<1,-,-> C[2]<1,2,->"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := schedules.ParseBody(tt.schedule)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := startSCLR(t, 2, 3, "lag_ms = 20\nrelink_by_restart = true", 3*time.Second)
			ctx := context.Background()
			relinked := false
			for i := range steps {
				rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: steps[i].String()})
				if err != nil {
					t.Fatalf("step %d %s: %v", i+1, steps[i], err)
				}
				relinked = relinked || slices.ContainsFunc(rep.Actions, func(a cem.Action) bool { return strings.Contains(a.What, "was rewritten") })
			}
			snap, err := p.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := oracle.Compare(snap); !d.Converged() || !relinked {
				t.Errorf("converged: %s; a rewritten history relinked a follower: %v", d.Line(), relinked)
			}
		})
	}
}

// TestPromotedStaysPrimary: a copy that starts following its source (a PostgreSQL base
// backup) and is then promoted for OFFLINE_2 (a live Unfollow, for good) starts as a primary
// after a crash, so that the kit relinks it when the model links it to its old source again;
// the kit once restarted it believing it still followed that source, and waited for it to
// sync until the step timeout.
func TestPromotedStaysPrimary(t *testing.T) {
	p, _ := startSCLR(t, 2, 2, "lag_ms = 20\nrelink_by_restart = true\nlive_unfollow = true", 3*time.Second)
	ctx := context.Background()
	for i, step := range []string{"D[1,0](n,c)", "C[1]<-,->off2", "D[0,1](-,c)", "C[0,1]<-,0>"} {
		if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: step}); err != nil {
			t.Fatalf("step %d %s: %v", i+1, step, err)
		}
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := oracle.Compare(snap); !d.Converged() {
		t.Errorf("the replicas differ: %s", d.Line())
	}
}

// TestBrokenReplication: when a relink leaves a replica holding a history its source lacks
// (wrong_rewind, as pg_rewind's "no rewind required" for two histories on one timeline), the
// replica's server says again and again that it cannot follow, or InSync says that replication
// is broken (kit.ErrBroken, as MariaDB's stopped thread); or the replica refuses the order to
// follow itself (kit.ErrBroken from Follow, as MariaDB that cannot read its master.info): the
// step ends with an alarm of class broken-replication that names what the system said, in place
// of a wait to the step timeout or an error of the harness, and the schedule runs on to its
// end. With a rewind that rewinds, the same schedule converges.
func TestBrokenReplication(t *testing.T) {
	tests := []struct {
		name, config string
		wantAlarm    []string // what the alarm's line names; none for no alarm
	}{
		{"wrong rewind", "lag_ms = 20\nrelink_by_restart = true\nwrong_rewind = true",
			[]string{`NOT-ITS-HISTORY: logged "` + brokenLine + `" 3 times`, "while it should sync with redis-1"}},
		{"wrong rewind, said by InSync", "lag_ms = 20\nrelink_by_restart = true\nwrong_rewind = true\nbroken_status = true",
			[]string{"replication is broken: " + brokenLine, "while it should sync with redis-1"}},
		{"order refused, said by Follow", "lag_ms = 20\nbroken_follow = true",
			[]string{"redis-0 to follow redis-1: replication is broken: " + followRefusal}},
		{"rewind", "lag_ms = 20\nrelink_by_restart = true", nil},
	}
	schedule := []string{"D[1,0](n,c)", "C[1]<1,->"} // replica 0 takes a write, then follows 1, which lacks it
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := startSCLR(t, 1, 2, tt.config, 5*time.Second)
			ctx := context.Background()
			var alarms []cem.Alarm
			for i, step := range schedule {
				rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: step})
				if err != nil {
					t.Fatalf("step %d %s: %v", i+1, step, err)
				}
				alarms = append(alarms, rep.Alarms...)
			}
			if len(tt.wantAlarm) == 0 {
				if len(alarms) > 0 {
					t.Errorf("alarms %v, want none", alarms)
				}
				return
			}
			class, line := oracle.Alarms(alarms)
			if class != oracle.BrokenReplication || len(alarms) != 1 || alarms[0].Replica != 0 ||
				slices.ContainsFunc(tt.wantAlarm, func(w string) bool { return !strings.Contains(line, w) }) {
				t.Errorf("alarms %v: class %s, %q; want one of class %s on replica 0 naming the line", alarms, class, line, oracle.BrokenReplication)
			}
			snap, err := p.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if oracle.Compare(snap).Converged() {
				t.Error("the replicas agree, though replica 0 could not follow replica 1")
			}
		})
	}
}

// TestRestartFollowsStartSource: a server that would resume its last live link when it starts
// (resumes_links, MariaDB's master.info) and that Command starts with that off where the kit's
// StartSource is nobody (MariaDB's --skip-slave-start) comes back from a crash following
// nobody, as the kit believes: in D[1,0](n,c) C[1]<1,->, replica 1 restarts without write 1,
// and replica 0, which holds it, then follows replica 1. A server that resumes its link
// regardless comes back following replica 0, and fetches write 1 before the kit links replica
// 0 to it: the schedule would no longer be the one the model wrote.
func TestRestartFollowsStartSource(t *testing.T) {
	tests := []struct {
		name, config string
		want         int // the source replica 1's server follows when it restarts; -1 for none
	}{
		{"started following nobody", "lag_ms = 20\nresumes_links = true", -1},
		{"resuming its last link", "lag_ms = 20\nresumes_links = true\nignore_start_source = true", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sys := startSCLR(t, 1, 2, tt.config, 2*time.Second)
			ctx := context.Background()
			var err error
			for i, step := range []string{"D[1,0](n,c)", "C[1]<1,->"} {
				if _, err = p.Apply(ctx, cem.Step{Index: i, Transition: step}); err != nil {
					break
				}
			}
			sys.mu.Lock()
			got := -1
			if src := sys.reps[1].startedWith; src != nil {
				got = src.Index
			}
			sys.mu.Unlock()
			if got != tt.want {
				t.Errorf("replica 1 restarted following %d, want %d", got, tt.want)
			}
			if tt.want < 0 && err != nil {
				t.Errorf("the schedule: %v", err)
			}
		})
	}
}

// TestRefusedLinkCopiedAfresh: where the system refuses a link (kit.ErrRefused: replica 0 holds
// write 1, which its new source lacks, as MariaDB refuses a GTID its new primary does not
// hold), the kit stops the replica, copies a snapshot of the source into it, starts it, links
// it again, and records why; the cluster converges.
func TestRefusedLinkCopiedAfresh(t *testing.T) {
	p, _ := startSCLR(t, 1, 2, "lag_ms = 20\nrefuses_ahead = true", 5*time.Second)
	ctx := context.Background()
	var actions []string
	for i, step := range []string{"D[1,0](n,c)", "C[1]<1,->"} {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: step})
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, step, err)
		}
		for _, a := range rep.Actions {
			actions = append(actions, a.What)
		}
	}
	want := []string{"refused to follow redis-1, so copied afresh: the system refuses the link: redis-0 holds entries redis-1 lacks",
		"copied a snapshot of redis-1 into its directory", "follow redis-1"}
	at := 0
	for _, a := range actions {
		if at < len(want) && strings.Contains(a, want[at]) {
			at++
		}
	}
	if at < len(want) {
		t.Errorf("actions %q: want, in order, %q", actions, want)
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := oracle.Compare(snap); !d.Converged() {
		t.Errorf("the replicas differ: %s", d.Line())
	}
}

// TestUpdateWorkload: with workload = "update", the suite passes, and the writes of a step set
// initial keys in turn (write j of step s sets key (s+j-1) mod n), each value the write's own
// name, also when a preset sets the workload; a configuration that cannot update is refused at
// the start, naming why.
func TestUpdateWorkload(t *testing.T) {
	ctx := context.Background()
	// The workload comes from the preset: the kit applies a Presetter's settings of its keys.
	p := kit.New(memAbout("qce"), &memSystem{})
	spec := cem.ClusterSpec{DRM: "qce", Ops: 2, Replicas: 3, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, 3),
		ScheduleID: "0123456789abcdef", Config: []byte("lag_ms = 50\ninitial_keys = 2\npreset = \"updates\""), StepTimeout: 6 * time.Second}
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(context.Background()) })
	plugintest.Run(t, plugintest.Config{
		DRM:          "qce",
		New:          func() cem.CEM { return kit.New(memAbout("qce"), &memSystem{}) },
		PluginConfig: []byte("lag_ms = 50\ninitial_keys = 3\nworkload = \"update\""),
		StepTimeout:  6 * time.Second,
		NoServers:    true,
	})
	var writes []cem.Write
	for i, step := range []string{"D[0,2,2]", "C[0,1,2]"} {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: step})
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, step, err)
		}
		writes = append(writes, rep.Writes...)
	}
	want := []cem.Write{
		{Key: "init.0", Value: "0123456789abcdef:k1.1", Acked: true},
		{Key: "init.1", Value: "0123456789abcdef:k1.2", Acked: true},
	}
	if !slices.Equal(writes, want) {
		t.Errorf("writes %v, want %v", writes, want)
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range snap.Replicas {
		if len(r.Data) != 2 || r.Data["init.0"] != want[0].Value || r.Data["init.1"] != want[1].Value {
			t.Errorf("replica %d holds %v, want the two initial keys with the writes' values", i, r.Data)
		}
	}

	refused := []struct{ name, drm, config, want string }{ // want "": not refused
		{"no initial data", "qce", `workload = "update"`, `workload = "update" updates initial keys, and the etcd plugin's settings make none`},
		{"link model", "slr", `workload = "update"`, `workload = "update" is for quorum models; DRM slr has a link model`},
		{"unknown workload", "qce", `workload = "delete"`, `workload must be "create" or "update", got "delete"`},
		{"the section wins over its preset", "qce", "preset = \"updates\"\nworkload = \"create\"\ninitial_keys = 1", ""},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			p := kit.New(memAbout(tt.drm), &memSystem{})
			spec := cem.ClusterSpec{DRM: tt.drm, Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, 3),
				ScheduleID: "0123456789abcdef", Config: []byte(tt.config), StepTimeout: 6 * time.Second}
			err := p.Start(ctx, spec)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Teardown(context.Background()) })
				rep, err := p.Apply(ctx, cem.Step{Transition: "D[0,1,1]"})
				if err != nil || len(rep.Writes) != 1 || rep.Writes[0].Key != "k1.1" {
					t.Errorf("D[0,1,1] wrote %v (%v), want a new key k1.1", rep.Writes, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestNetworkRefused: network = "namespaces" needs a plugin that names its system's ports,
// and an unknown network is refused; each says so in one line.
func TestNetworkRefused(t *testing.T) {
	for _, tt := range []struct{ config, want string }{
		{`network = "namespaces"`, `network = "namespaces": the etcd plugin names no ports of its own (kit.About.Ports)`},
		{`network = "bridge"`, `network must be "loopback" or "namespaces", got "bridge"`},
	} {
		t.Run(tt.config, func(t *testing.T) {
			p := kit.New(memAbout("qce"), &memSystem{})
			spec := cem.ClusterSpec{DRM: "qce", Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, 3),
				ScheduleID: "0123456789abcdef", Config: []byte(tt.config), StepTimeout: 6 * time.Second}
			err := p.Start(context.Background(), spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Start: %v, want one line saying %q", err, tt.want)
			}
		})
	}
}

// TestInfoNetwork: Info says which network a cluster gets under the table, and why not
// namespaces.
func TestInfoNetwork(t *testing.T) {
	withPorts := memAbout("qce")
	withPorts.Ports = []int{7000}
	twoPorts := memAbout("qce")
	twoPorts.Ports = []int{7000, 7001}
	for _, tt := range []struct {
		name   string
		about  kit.About
		config string
		want   string // the network, or the error's text
	}{
		{"no ports", memAbout("qce"), ``, `loopback: the etcd plugin names no ports of its own (kit.About.Ports)`},
		{"table says loopback", withPorts, `network = "loopback"`, `loopback: the table sets network = "loopback"`},
		{"table says namespaces", memAbout("qce"), `network = "namespaces"`, `namespaces`},
		{"ports not one per replica", twoPorts, ``, `About names 2 ports (Ports), not its 1 per replica`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info, err := kit.New(tt.about, &memSystem{}).Info(context.Background(), []byte(tt.config))
			got := info.Capabilities.Network
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("Info: network %q (error %v), want %q", info.Capabilities.Network, err, tt.want)
			}
		})
	}
}

// TestGroupStart: a system whose servers start only by a decision over the group (Galera's
// bootstrap of the most advanced node once every node went down) passes the suite on Q/C/E
// when it decides through kit.GroupStarter; the kit asks it at the start with every replica
// down, and at a convergence after every replica crashed with none running. Where it decides
// nothing, the cluster never starts.
func TestGroupStart(t *testing.T) {
	plugintest.Run(t, plugintest.Config{
		DRM:          "qce",
		Params:       aem.Params{Ops: 2, Replicas: 3},
		New:          func() cem.CEM { return kit.New(memAbout("qce"), &memSystem{}) },
		PluginConfig: []byte("lag_ms = 20\nbootstrap = true"),
		StepTimeout:  6 * time.Second,
		NoServers:    true,
	})
	for _, tt := range []struct {
		name, config string
		started      bool
	}{
		{"decided", "bootstrap = true", true},
		{"undecided", "bootstrap = true\nignore_group = true", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, sys, err := startQCE(t, tt.config)
			ctx := context.Background()
			var nr *cem.NotReachedError
			switch {
			case !tt.started && !errors.As(err, &nr):
				t.Fatalf("Start with nobody bootstrapped: %v, want the cluster's start not reached", err)
			case !tt.started:
				return
			case err != nil:
				t.Fatal(err)
			}
			for i, step := range []string{"D[0,1,1]", "C[0,1,2]"} {
				if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: step}); err != nil {
					t.Fatalf("step %d %s: %v", i+1, step, err)
				}
			}
			// The start, then the convergence after every replica crashed: all three in the
			// group, none running.
			if len(sys.groups) != 2 || slices.ContainsFunc(sys.groups, func(g string) bool {
				group, running, _ := strings.Cut(g, " | ")
				return len(strings.Fields(group)) != 3 || running != ""
			}) {
				t.Errorf("StartGroup was asked %q (group | running), want twice all three replicas with none running", sys.groups)
			}
		})
	}
}

// startQCE starts an in-memory Q/C/E cluster of three replicas, ops=1, with the memsys
// configuration config and steps of at most 2 s; Start's error is returned, the cluster torn
// down at t's end either way.
func startQCE(t *testing.T, config string) (cem.CEM, *memSystem, error) {
	t.Helper()
	return startQCEOps(t, config, 1)
}

// startQCEOps is startQCE for schedules of ops writes per divergence.
func startQCEOps(t *testing.T, config string, ops int) (cem.CEM, *memSystem, error) {
	t.Helper()
	return startQCESized(t, config, ops, 3)
}

// startQCESized is startQCEOps on n replicas.
func startQCESized(t *testing.T, config string, ops, n int) (cem.CEM, *memSystem, error) {
	t.Helper()
	sys := &memSystem{}
	p := kit.New(memAbout("qce"), sys)
	spec := cem.ClusterSpec{DRM: "qce", Ops: ops, Replicas: n, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, n),
		ScheduleID: "0123456789abcdef", Config: []byte(config), StepTimeout: 2 * time.Second}
	err := p.Start(context.Background(), spec)
	t.Cleanup(func() { p.Teardown(context.Background()) })
	return p, sys, err
}

// TestStuck: a restarted server that says it cannot go on without an operator (stuck_join, as a
// Galera joiner's "node restart required") and never joins ends the convergence, at its
// deadline, with an alarm of class liveness that names the line; later steps are refused. One
// that says again and again that its replication is broken (stuck_broken, as a PostgreSQL
// standby that never serves) ends it with an alarm of class broken-replication. A system that
// answers, asked at the deadline, that it has no leader (kit.Staller) ends it with an alarm of
// class liveness. A server that says nothing of the kind, and never joins either, leaves the
// step incomplete.
func TestStuck(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		stuck        bool
		class        oracle.Class
		line         string
	}{
		{"says so", "bootstrap = true\nstuck_join = true", true, oracle.Liveness, `RESTART-REQUIRED "` + stuckLine + `"`},
		{"says its replication is broken", "bootstrap = true\nstuck_join = true\nstuck_broken = true", true, oracle.BrokenReplication,
			`NOT-ITS-HISTORY: logged "` + brokenLine + `" `},
		{"answers that it has no leader", "bootstrap = true\nstuck_join = true\nstuck_quiet = true\nsays_stalled = true", true, oracle.Liveness,
			"every online server up, " + stalledWords},
		{"says nothing", "bootstrap = true\nstuck_join = true\nstuck_quiet = true", false, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := startQCE(t, tt.config)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,0,1]"}); err != nil {
				t.Fatal(err)
			}
			rep, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1]"})
			var nr *cem.NotReachedError
			if !tt.stuck {
				if !errors.As(err, &nr) || len(rep.Alarms) != 0 {
					t.Fatalf("C[0,1]: %v, alarms %v; want the step not reached and no alarm", err, rep.Alarms)
				}
				return
			}
			if err != nil {
				t.Fatalf("C[0,1]: %v, want the step ended by an alarm", err)
			}
			class, line := oracle.Alarms(rep.Alarms)
			if class != tt.class || len(rep.Alarms) != 1 || !strings.Contains(line, tt.line) ||
				!strings.Contains(line, "the step's wait ended at its deadline") {
				t.Errorf("alarms %v: class %s, %q; want one of class %s naming the line", rep.Alarms, class, line, tt.class)
			}
			if _, err := p.Apply(ctx, cem.Step{Index: 2, Transition: "C[2]"}); err == nil || !strings.Contains(err.Error(), "ended with the system's word that it cannot go on") {
				t.Errorf("the step after: %v, want it refused, the cluster out of step", err)
			}
		})
	}
}

// TestMinorityAnswers: the kit keeps the system's answer to a write only a minority receives.
// A system that acknowledges it (acks_early) fails at that divergence, of class minority-ack,
// unless it declares that it acknowledges before replicating (declares_async); then the write
// counts as acknowledged, and a convergence of the replicas that never received it loses it.
// A system that acknowledges nothing early passes, its write unanswered.
func TestMinorityAnswers(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		answer       cem.Answer
		afterD       oracle.Class // the class judged after the divergence, from its writes
		afterC       oracle.Class // after the convergence, from the replicas' data
	}{
		{"waits for a quorum", "", cem.NoAnswer, "", ""},
		{"acknowledges early, undeclared", "acks_early = true", cem.Acknowledged, oracle.MinorityAck, oracle.MinorityAck},
		{"acknowledges early, declared", "acks_early = true\ndeclares_async = true", cem.Acknowledged, "", oracle.LostWrite},
		{"declared, waits for a quorum", "declares_async = true", cem.NoAnswer, "", ""},
		{"refuses", "refuses_alone = true", cem.Refused, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := startQCE(t, tt.config)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Write k1.1 reaches abstract replica 2 alone; replicas 0 and 1 converge without it.
			rep, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,0,1]"})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Writes) != 1 {
				t.Fatalf("D[0,0,1] reported writes %+v, want one", rep.Writes)
			}
			w := rep.Writes[0]
			wantAsync := strings.Contains(tt.config, "declares_async")
			if !w.Minority || w.Answer != tt.answer || w.Acked != (tt.answer == cem.Acknowledged) || w.Async != wantAsync ||
				(tt.answer == cem.NoAnswer) != (w.AnsweredAfter == 0) {
				t.Errorf("write %+v: want a minority write answered %q, async %v", w, tt.answer, wantAsync)
			}
			var actions []string
			for _, a := range rep.Actions {
				actions = append(actions, a.What)
			}
			if !slices.ContainsFunc(actions, func(a string) bool {
				return strings.Contains(a, "write k1.1 ") && strings.Contains(a, string(tt.answer))
			}) {
				t.Errorf("actions %q: none says the write's answer, %q", actions, tt.answer)
			}
			writes := []oracle.SentWrite{oracle.Sent(0, w)}
			kinds := []string{"D", "C"}
			if got := oracle.Judge(oracle.Evidence{Step: 1, Kinds: kinds, Writes: writes}); got.Class != tt.afterD {
				t.Errorf("judged after the divergence: %q (%s), want %q", got.Class, got.Line, tt.afterD)
			} else if got.Class == oracle.MinorityAck && !strings.Contains(got.Line, "k1.1 (step 1, acknowledged after") {
				t.Errorf("judged %q, want it to name the write and its step", got.Line)
			}
			if _, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1]"}); err != nil {
				t.Fatal(err)
			}
			snap, err := p.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := oracle.Judge(oracle.Evidence{Step: 2, Kinds: kinds, Groups: []int{0, 0, oracle.NotCompared}, Writes: writes, Snapshot: &snap})
			if got.Class != tt.afterC {
				t.Errorf("judged after the convergence: %q (%s), want %q", got.Class, got.Line, tt.afterC)
			}
		})
	}
}

// TestUnrealisable: a write that reaches two of five replicas without a quorum, on a system that
// holds such a write on the leader alone (logs_on_leader, as Galera), cannot be realised: the
// step ends with a *cem.UnrealisableError that gives the plugin's reason, where it was an
// error, and later steps are refused. With three replicas every such write reaches the leader
// alone, and the same system realises the schedule.
func TestUnrealisable(t *testing.T) {
	ctx := context.Background()
	p, _, err := startQCESized(t, "logs_on_leader = true", 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,0,0,1,1]"})
	var ue *cem.UnrealisableError
	if !errors.As(err, &ue) {
		t.Fatalf("D[0,0,0,1,1]: %v (%T), want an *UnrealisableError", err, err)
	}
	if ue.Step != 0 || !strings.Contains(ue.Reason, "write k1.1 reaches ") || !strings.HasSuffix(ue.Reason, "which is not the leader it went through") {
		t.Errorf("error %+v: want step 0 and the plugin's reason, without the sentinel's word", *ue)
	}
	if _, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1,2]"}); err == nil || cem.IsUnrealisable(err) {
		t.Errorf("the step after: %v, want it refused, the cluster out of step", err)
	}

	p3, _, err := startQCE(t, "logs_on_leader = true")
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []string{"D[0,0,1]", "C[0,1]", "C[2]"} {
		if _, err := p3.Apply(ctx, cem.Step{Index: i, Transition: step}); err != nil {
			t.Fatalf("three replicas, %s: %v", step, err)
		}
	}
}

// TestNonconformant: a pause the kit records but never makes (break_realisation =
// "fail-nothing") lets a write that only replica 2 may receive reach the paused replicas 0 and
// 1; the conformance check at the divergence's end ends the step with a *cem.NonconformantError
// naming the check and the replica, modulo's verdict where the oracle would have judged the
// system. The same schedule, realised as it should be, conforms (TestMinorityAnswers).
func TestNonconformant(t *testing.T) {
	ctx := context.Background()
	p, _, err := startQCE(t, `break_realisation = "fail-nothing"`)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,0,1]"})
	var ne *cem.NonconformantError
	if !errors.As(err, &ne) {
		t.Fatalf("D[0,0,1]: %v (%T), want a *NonconformantError", err, err)
	}
	if ne.Step != 0 || ne.Check != "write-leaked" || !strings.Contains(ne.Detail, "write k1.1 ") ||
		!strings.Contains(ne.Detail, "stopped before it (SIGSTOP), and that did not take effect") {
		t.Errorf("error %+v: want step 0, check write-leaked, naming the write", *ne)
	}
	if !slices.ContainsFunc(rep.Actions, func(a cem.Action) bool { return strings.Contains(a.What, "SIGSTOP not sent") }) {
		t.Errorf("actions %+v: none records the pause the break left out", rep.Actions)
	}
	if _, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1]"}); err == nil || cem.IsNonconformant(err) {
		t.Errorf("the step after: %v, want it refused, the cluster out of step", err)
	}
}

// TestMinorityRunSentTogether: D[0,0,2]'s two writes reach replica 2 alone; the kit sends the
// second before it waits for the first in the log, since a leader without its quorum steps down
// soon (etcd's CheckQuorum), and a second write sent after the first reached a slow disk found a
// follower and was never logged (CI, under load).
func TestMinorityRunSentTogether(t *testing.T) {
	p, _, err := startQCEOps(t, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Apply(context.Background(), cem.Step{Index: 0, Transition: "D[0,0,2]"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(what string) int {
		t.Helper()
		i := slices.IndexFunc(rep.Actions, func(a cem.Action) bool { return strings.Contains(a.What, what) })
		if i < 0 {
			t.Fatalf("no action says %q among %+v", what, rep.Actions)
		}
		return i
	}
	if sent2, logged1 := at("write k1.2 = "), at("write k1.1 is in its log"); sent2 > logged1 {
		t.Errorf("write k1.2 sent at action %d, after write k1.1 was seen logged at %d: want them sent back to back", sent2, logged1)
	}
	at("write k1.2 is in its log")
	if len(rep.Writes) != 2 || !rep.Writes[0].Minority || !rep.Writes[1].Minority {
		t.Errorf("writes %+v, want two minority writes", rep.Writes)
	}
}

// TestExitedOnItsOwn: a server that ends itself during a schedule (here a SIGABRT, as an
// abort) ends the step with an alarm of class unrecoverable that names it, and later steps
// are refused; one that another process SIGKILLs (the kernel's out-of-memory killer) is the
// machine's, an error.
func TestExitedOnItsOwn(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sig   syscall.Signal
		alarm bool
	}{
		{"aborts", syscall.SIGABRT, true},
		{"killed by another", syscall.SIGKILL, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, sys, err := startQCE(t, "")
			if err != nil {
				t.Fatal(err)
			}
			files, err := proc.PidFiles(sys.c.Spec.Dir)
			if err != nil || len(files) != 3 {
				t.Fatalf("pid files %v: %v", files, err)
			}
			for _, f := range files {
				if err := syscall.Kill(-f.Pid, tt.sig); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := p.Apply(context.Background(), cem.Step{Index: 0, Transition: "D[0,0,1]"})
			if !tt.alarm {
				if err == nil || !strings.Contains(err.Error(), "exited unexpectedly") {
					t.Errorf("D[0,0,1]: %v, alarms %v; want the step's error", err, rep.Alarms)
				}
				return
			}
			if err != nil {
				t.Fatalf("D[0,0,1]: %v, want the step ended by an alarm", err)
			}
			class, line := oracle.Alarms(rep.Alarms)
			// The placeholder server, a Go program, turns SIGABRT into exit status 2.
			if class != oracle.Unrecoverable || !strings.Contains(line, "exited on its own (exit status 2) during step 1") {
				t.Errorf("alarms %v: class %s, %q; want unrecoverable, a server that exited on its own", rep.Alarms, class, line)
			}
			if _, err := p.Apply(context.Background(), cem.Step{Index: 1, Transition: "C[2]"}); err == nil || !strings.Contains(err.Error(), "exited on its own") {
				t.Errorf("the step after: %v, want it refused", err)
			}
		})
	}
}
