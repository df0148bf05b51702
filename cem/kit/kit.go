// Package kit is what a DRM plugin is built from: the plugin's author says how to start one
// replica of their system, write a key through it, read every key it holds and tell whether the
// cluster has caught up; the kit does the rest of cem.CEM.
//
// The kit owns the cluster: a directory and PortsPerReplica ports per replica, every server in
// a process group and a cgroup of its own (started, SIGKILLed, SIGSTOPped and SIGCONTed by
// the kit with every process it started, one that called setsid too: see proc.Containment), the
// configuration section (decoded with unknown keys refused), the abstract state of the
// schedule (the model's Apply after every step), the mapping of abstract replicas to servers,
// every wait (bounded by the step timeout, a *cem.NotReachedError when it passes), the record
// of every action with its time, and Teardown. It realises two families of models:
//
//   - quorum models (Q/C/Z and its kin): crash failures, writes through the leader. A system
//     implements Quorum, and LogReader for writes that reach only a minority.
//   - link models (S/S/R, S/L/R, S/CL/R): replicas replicate along explicit links that the
//     plugin sets. A system implements Linker, and Snapshotter for S/CL/R's offline resyncs.
//
// A plugin logs with hclog.L() (github.com/hashicorp/go-hclog): kit.Serve makes it a logger on
// the plugin's stderr that modulo reads, showing warnings and errors tagged with the plugin's
// name; anything else written to stderr is shown as it is. What a step did belongs in its
// record instead (Cluster.Record), where 'modulo run --trace' keeps it.
//
// Optional behaviour is a small interface of its own that the kit detects on the System, as
// Nomad's task drivers declare their capabilities: a system implements what its DRMs need and
// nothing else. docs/writing-a-plugin.md builds a plugin step by step.
//
// A plugin must never disturb what it tests: nothing a System sends may change what the system
// replicates or stores besides the schedule's writes (the kit's Write calls). No key of its
// own, no command whose effect enters a replication stream; observation is by read-only means
// (status commands, logs, files). The kit keeps to the same rule: its probe rewrites the
// schedule's own keys. Only break_realisation, which breaks the realisation on purpose, writes
// keys of the kit's own (ProbeKey, BehindKey).
//
// A plugin realises what the system's own tools and operators do, and never repairs what the
// system gets wrong. Where a tool's answer is wrong (a rewind that keeps writes its new source
// never had, a truncation that keeps a transaction), that is a finding for the campaign to
// report, never something the plugin routes around: a plugin that second-guesses the tool
// hides the very failure modulo is there to find. An operator's fallback is allowed only where
// the system's documentation prescribes it (PostgreSQL's: a fresh base backup where pg_rewind
// fails), and is then an action in the record (Cluster.Record). Where the system says its own
// replication is broken, a SyncLogger line kind marked Broken turns that into an alarm.
package kit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/fault"
	"github.com/modulo-testing/modulo/cem/netns"
	"github.com/modulo-testing/modulo/cem/proc"
)

// About describes a plugin.
type About struct {
	Name string // the plugin's name, as drms.DRM.Plugin names it: "etcd"
	// DRMs lists the short names of the built-in catalogue's DRMs that the plugin realises; the
	// catalogue (package drms) must name this plugin for each.
	DRMs []string
	// Declare lists the DRMs of the plugin's own: a plugin for a new system brings its DRM,
	// with a rule set of the kit's (quorum, suspend, link, crash-link) under a title of its
	// own, and modulo finds it in the plugin (modulo plugins lists them).
	Declare []DRM
	// PortsPerReplica is how many ports each replica gets: Ports at its own address in
	// network namespaces, or consecutive ports of 127.0.0.1 on loopback.
	PortsPerReplica int
	// Ports are the system's ordinary ports, PortsPerReplica of them, which every replica
	// listens on at an address of its own where each has a network namespace of its own (the
	// kit's network = "namespaces"). A plugin that names them reads every address from its
	// Replica (Host, Ports, Addr) and runs any process of its own in the replica's NetNS.
	Ports []int
	// Services are processes of the cluster's own that the kit runs beside the replicas and
	// never fails (ServiceSpec, Servicer): a coordinator or configuration store.
	Services []ServiceSpec
	// Releases says where scripts/setup builds the server's releases in modulo's cache, for
	// Info (modulo plugins) to list those built.
	Releases Releases
	// Version is the plugin's version; empty means modulo's and the first 12 hex digits of the
	// plugin binary's SHA-256 ("0.1.0+3f2a9c01b7de"): a rebuilt plugin is a new version.
	Version string
}

// DRM is a DRM that a plugin declares (cem.DRMSpec), so that a plugin needs no import but the
// kit's.
type DRM = cem.DRMSpec

// System is what a plugin's author writes: how to run and talk to one replica of their system.
// The kit calls it from one goroutine at a time, except that Write may run while LogReader's
// Logged polls (a write that cannot commit is sent asynchronously), and several such Writes,
// a run of them to the same replicas, at once. Every method that takes a context must return
// soon after it ends: a hung server must not hang the plugin.
type System interface {
	// Version returns the version of the server binary the configuration names; it fails with
	// one line naming the binary when it is missing. Info reports it.
	Version(ctx context.Context) (string, error)
	// Command says how to start replica r, in r.Dir: at the cluster's start and at every
	// restart (r.Starts counts the earlier starts). It may write the files the server needs.
	// A server of a link model must start following c.StartSource(r), one rule for every
	// link system: nobody, but the source its last Relink prepared (PostgreSQL's
	// standby.signal and primary_conninfo) until a live Unfollow. A server that would resume
	// by itself a link it was given live (MariaDB's master.info) is started with that off
	// (MariaDB's --skip-slave-start); one that forgets it (Redis's REPLICAOF) needs nothing.
	// The kit links every started server as the model wants from there.
	Command(c *Cluster, r *Replica) (Command, error)
	// Write writes key = value through replica r and returns once r has accepted it: for a
	// quorum system, once the write has committed.
	Write(ctx context.Context, r *Replica, key, value string) error
	// ReadAll returns every key and value that replica r holds, read from r alone.
	ReadAll(ctx context.Context, r *Replica) (map[string]string, error)
	// CaughtUp tells whether every replica of online serves and holds what it must hold: for a
	// quorum system, everything its leader has committed; for a link model, the kit has
	// already waited for every link (Linker.InSync) and CaughtUp says that the replicas are
	// settled (no background work that a crash could cut short). When not, seen says what it
	// saw, for the message if the wait times out. A server that does not answer yet is not
	// an error: report false.
	CaughtUp(ctx context.Context, c *Cluster, online []*Replica) (ok bool, seen string, err error)
}

// Configurable is implemented by a system that takes configuration keys. Configure is called
// with the plugin's section of modulo's configuration when the plugin starts (empty) and at
// every cluster start: it sets the defaults, calls decode with a pointer to the struct that
// holds the keys (github.com/BurntSushi/toml tags) and checks the values. decode fails naming
// every key that neither the struct nor the kit knows. A system that is not Configurable
// accepts no keys.
type Configurable interface {
	Configure(decode func(v any) error) error
}

// Preparer is implemented by a system that needs something once per cluster before any of its
// servers starts: a file every server reads, a cache to fill. Prepare runs in Start, after the
// directories are made (c.Spec.Dir and every r.Dir), within the step timeout.
type Preparer interface {
	Prepare(ctx context.Context, c *Cluster) error
}

// GroupStarter is implemented by a quorum system whose servers, when several start together,
// start only by an operator's decision over the group: after every node of a Galera cluster
// went down, the most advanced is bootstrapped and the others join it, and a new cluster is
// bootstrapped once (MySQL Group Replication and Pacemaker-managed clusters alike). The kit
// calls StartGroup at the cluster's start, with every replica in group, and before each
// convergence of a quorum model recovers its group: group is the replicas the convergence brings
// back (each recovers by its kind; those whose servers are down start by Command), running the
// replicas whose servers run now, online or not (a paused, cut-off or disk-failed server of the
// group among them). StartGroup may read the stopped servers' files and run the system's own
// tools on them, as an operator would (Galera's --wsrep-recover), and remember its decision for
// Command. It returns the group in the order in which the kit recovers it, and whether the kit
// waits until each started server serves (Readier) before it recovers the next.
type GroupStarter interface {
	StartGroup(ctx context.Context, c *Cluster, group, running []*Replica) (order []*Replica, oneByOne bool, err error)
}

// Holder is implemented by a system that can tell more cheaply than ReadAll whether replica r
// holds key = value, or that stores one write as something else than one key (several keys, a
// key of another name). The kit polls Holds after a write until it holds; seen says what r holds
// instead.
type Holder interface {
	Holds(ctx context.Context, r *Replica, key, value string) (ok bool, seen string, err error)
}

// Readier is implemented by a system whose servers must be waited for after a start before
// the kit may talk to them (a link model links them at once). Ready tells whether r, just
// started, serves; the kit polls it until it does.
type Readier interface {
	Ready(ctx context.Context, r *Replica) (ok bool, seen string, err error)
}

// Quorum is implemented by a system for a quorum model. Leader returns the one replica of
// online that every one of them follows as its leader, or nil (with what it saw) when they do
// not agree yet; the kit polls it.
type Quorum interface {
	Leader(ctx context.Context, c *Cluster, online []*Replica) (leader *Replica, seen string, err error)
}

// LogReader is implemented by a quorum system whose replicas' logs can be inspected. Logged
// tells whether the write of key = value is in r's durable log, committed or not.
//
// A write that reaches only a minority can never commit, yet the model wants it on the
// minority's disks before they crash. With LogReader the kit realises it: it suspends
// (SIGSTOP) the replicas that must miss the write instead of killing them, so that the leader
// keeps its quorum for the moment the write needs; it sends the write to the leader without
// waiting for an answer (a run of such writes to the same replicas back to back, since the
// leader notices soon that it lost its quorum); it polls Logged on every replica that must
// receive it; then it SIGKILLs every replica, as the model's divergence does. The suspended
// replicas never run again before they are killed, so to them it is a crash before the write. (A committed write
// is confirmed on every receiver with Holder, or ReadAll.) Without LogReader, a step with a
// minority write fails, naming this interface.
type LogReader interface {
	Logged(ctx context.Context, r *Replica, key, value string) (bool, error)
}

// Asynchronous is implemented by a quorum system that may acknowledge a write before its
// replicas hold it (asynchronous replication: PostgreSQL's default streaming replication, and
// Patroni's failover over it). The kit records what the system answers to every write it
// sends without waiting (one that reaches only a minority): an acknowledged write is
// acknowledged for the oracle, whose later loss is a lost write. Where AcksBeforeReplicating
// is false, or the system does not implement Asynchronous, an acknowledgement of a write that
// only a minority received is itself the system's failure (oracle.MinorityAck): a Raft or Zab
// system acknowledges only what a quorum logged. The kit asks once per cluster, after
// Configure, so that a setting may choose (synchronous_mode).
type Asynchronous interface {
	AcksBeforeReplicating(c *Cluster) bool
}

// Linker is implemented by a system for a link model: replicas replicate along links that the
// plugin sets and removes. The kit writes only into servers that follow nobody, and expects a
// server to pass on to its followers what its source sends it.
type Linker interface {
	// Follow makes r replicate from src, and Unfollow makes it replicate from nobody, keeping
	// its data. Both return once r has taken the order; the kit then waits with InSync.
	Follow(ctx context.Context, r, src *Replica) error
	Unfollow(ctx context.Context, r *Replica) error
	// InSync tells whether r has caught up with src along its link, as both see it: r holds
	// src's history up to src's position, and replication between them runs. Positions alone
	// cannot say so when r may be ahead of src: a replica that kept writes its source never
	// had (PostgreSQL's LSNs, MariaDB's GTID sequence numbers) compares as caught up. Say what
	// the system itself says; the oracle compares the data after the step. Where the system
	// says replication is broken, return an error wrapping ErrBroken (or log a line that
	// SyncLines marks Broken); where it refuses the link, one wrapping ErrRefused. Follow
	// wraps either too, where the system answers the order so.
	InSync(ctx context.Context, r, src *Replica) (ok bool, seen string, err error)
}

// ErrRefused is what Linker.Follow or InSync wraps where the system refuses to replicate r
// from src as r stands, and its documentation prescribes a fresh copy (MariaDB's error 1236: a
// replica asks for GTIDs its new primary does not have). The kit then stops r, copies a
// snapshot of src into it (Snapshotter, with the refusal in the record), starts it, links it
// to src and waits again; a second refusal is an error. Never return it for what the system
// accepts: a link the system takes is the system's to get right.
var ErrRefused = errors.New("the system refuses the link")

// ErrBroken is what Linker.InSync wraps where the system says that replication to r along its
// link is broken for good (MariaDB's replication thread stopped on an error), or Linker.Follow
// where the system refuses the order for a reason no fresh copy of src mends (MariaDB cannot
// read its own master.info): the kit raises the broken-replication alarm with the error's text
// in place of waiting out the step timeout.
var ErrBroken = errors.New("replication is broken")

// ErrUnrealisable is what a plugin's method wraps where it cannot make its system do what the
// step asks: a schedule the model allows that this realisation cannot give (Galera holds a
// write its primary component has not ordered on the one node that executes it, so a model's
// write that reaches two nodes without a quorum cannot be made). The kit ends the schedule as
// unrealisable, with the error's text as the reason: neither the system's failure nor an error.
// Never return it for what the system refuses or gets wrong: that is the system's.
var ErrUnrealisable = errors.New("unrealisable")

// ErrNeedsStop is what Linker.Follow or Unfollow returns for a server that changes its source
// only by a restart (PostgreSQL turns a primary into a standby by restarting it, and pg_rewind
// needs the server stopped). The kit then stops the server (SIGKILL, as a crash, or the
// system's clean stop, Stopper), calls Relinker.Relink while it is down, and starts it again.
var ErrNeedsStop = errors.New("the server changes its source only by a restart")

// Relinker is implemented by a link system whose Follow or Unfollow may return ErrNeedsStop.
// Relink prepares r, whose server is down, to follow src when it starts (src nil: to follow
// nobody and take writes): its configuration, and its data (a rewind to where src's history
// and r's part, or a fresh copy of src). It says whether r's history was rewritten: data that r
// held is gone or replaced. The replicas that follow r then hold a history that r no longer
// has, so the kit relinks them too, sources before their followers, each by Follow (and
// Relink when it asks for a stop), and so on down the tree.
type Relinker interface {
	Relink(ctx context.Context, c *Cluster, r, src *Replica) (rewritten bool, err error)
}

// LinkPolicy is implemented by a link system whose configuration changes what the kit does
// around the links; without it the kit waits nothing and probes. It is read at every cluster
// start, after Prepare, so that a system may resolve settings that depend on the DRM there.
type LinkPolicy interface {
	// FailureWaits are the fixed waits of a divergence that broke a link between running
	// servers: before, after the failures and before the writes that follow them (a master
	// that lost its last replica drops its backlog only after a time to live, and a bug may
	// need it gone before the master takes the write); after, once the divergence's writes are
	// done. Each must be shorter than the step timeout.
	FailureWaits() (before, after time.Duration)
	// Probe tells whether the schedule's last convergence ends with one more write of every
	// key the schedule wrote, through the root of each replication tree, and a wait until
	// every link of the tree is in sync again: a link that a resync left broken while both
	// sides report it healthy shows only when new writes flow over it. The probe writes only
	// the schedule's own keys (with a final value), as the Modulo paper's S/CL/R workload did,
	// so that it adds nothing to the replication stream that a schedule could not have sent.
	Probe() bool
}

// Deleter is implemented by a quorum system whose written keys can be deleted. Only
// break_realisation = "lose-write", which breaks the realisation on purpose to test the
// oracle, uses it: Delete removes key through r, the leader, and returns once that committed.
type Deleter interface {
	Delete(ctx context.Context, r *Replica, key string) error
}

// Observer is implemented by a system that can say what it sees of a replica once a step has
// settled: its role and the leader's term or epoch, its position (zxid, offset, optime), how it
// was resynced (SyncLogger reads that from logs). The kit calls Observe on every
// running, unsuspended replica after every step; the fields go into the schedule's record and
// explain its verdict, and replay compares them between runs. Observing must change nothing
// (read-only status commands, logs). An error is recorded as the field "error". The cem.Observe
// constants name the fields systems share.
type Observer interface {
	Observe(ctx context.Context, c *Cluster, r *Replica) (map[string]string, error)
}

// SyncLogger is implemented by a system whose servers log how they are resynced. After every
// step the kit reads the lines each running replica's server logged since the last step and
// records, as the observation's cem.ObserveSync field, the kinds of those that match, in
// order ("TRUNC,DIFF").
type SyncLogger interface {
	SyncLines() []LineKind
}

// Staller is implemented by a system that can say, from its servers' own answers, that it is
// making no progress: a quorum system whose servers all name no leader (NATS's /jsz). The kit
// asks it only when a step's wait has ended at its deadline with every online replica's server
// up; a non-empty answer, the system's own words, ends the step with an alarm of class
// liveness rather than as incomplete. The deadline (the step timeout, 60 s for NATS) spans
// many election timeouts: a leaderless group then is stuck, not slow. Answer "" where the
// answers say anything else, or cannot be had.
type Staller interface {
	Stalled(ctx context.Context, c *Cluster, online []*Replica) (string, error)
}

// SelfChecker is implemented by a system with a consistency check of its own (ZooKeeper
// digests its data tree). The kit calls SelfCheck on every online replica after every
// convergence; a non-empty problem is an alarm, which fails the schedule.
type SelfChecker interface {
	SelfCheck(ctx context.Context, r *Replica) (problem string, err error)
}

// Snapshotter is implemented by a link system for S/CL/R's offline resyncs. CopySnapshot
// replaces the data of the crashed replica to (which is down) with a fresh snapshot of the
// running replica from, so that to's next start loads it. It says whether the copy starts
// following from: a Redis RDB file starts a primary, a PostgreSQL base backup starts in
// recovery, as a standby. A copy that follows is made a primary the system's way when the
// model wants one (OFFLINE_2): by Unfollow, a promotion.
type Snapshotter interface {
	CopySnapshot(ctx context.Context, c *Cluster, from, to *Replica) (follows bool, err error)
}

// Seeder is implemented by a quorum system whose schedules start from initial data, as the
// Modulo paper's campaigns did (a larger snapshot, say, opens other resync paths). Once the
// started cluster has caught up, the kit writes InitialData through the leader, in order, and
// waits until the cluster has caught up again before the first step. The keys are no writes
// of the schedule: no failure precedes them, and the comparisons cover them as any key a
// replica holds. Each value begins with c.Spec.ScheduleID and a colon, as the kit's own
// writes do, so that data left from another cluster cannot pass for this one's.
type Seeder interface {
	InitialData(c *Cluster) []KeyValue
}

// KeyValue is one key of a Seeder's initial data.
type KeyValue struct{ Key, Value string }

// Isolation is implemented by a system that can tell when a replica cut off by a partition has
// seen it: for a DRM whose failures are partitions, a divergence ends only once every replica
// it cut off has (the failpoint's wait, between inject and recover). A quorum model's replica
// is cut off from every peer (it has seen it once it left its quorum); a link model's from its
// source alone (once it says its link is down). Without it, a partition shorter than the
// system's own timeouts may pass unnoticed, and its convergence resyncs nothing. Isolated
// must change nothing.
type Isolation interface {
	Isolated(ctx context.Context, c *Cluster, r *Replica) (ok bool, seen string, err error)
}

// Detector is implemented by a system that says how long its servers take to notice a peer
// that stopped answering (ZooKeeper's syncLimit, etcd's election timeout). A paused server
// that goes on acts on what it knew when it stopped, and a leader whose followers elected
// another, or whose own timers ran out while it was stopped, steps down only once it notices:
// after a convergence that lets paused servers go on, the kit waits that long before it asks
// whether the cluster has caught up, so that it judges the cluster the pause left, not the
// moment before anyone noticed. Without it, the kit asks at once.
type Detector interface {
	DetectionTime(c *Cluster) time.Duration
}

// Updater is implemented by a system whose Write makes a new key and cannot set one that
// exists (ZooKeeper's create). With workload = "update" the kit calls Update, not Write, to set
// an initial key to value: one transaction, like Write, so that a write that reaches only a
// minority is still one entry in a log. A system whose Write sets a key whether or not it
// exists needs nothing more.
type Updater interface {
	Update(ctx context.Context, r *Replica, key, value string) error
}

// Stopper is implemented by a system whose operators stop a server cleanly to relink it
// (Relinker) or to copy it afresh (ErrRefused).
// PostgreSQL's pg_rewind needs a target that was shut down cleanly, and a standby killed in
// recovery can be recovered only as a primary, which writes WAL of its own: a tool that must
// run on a killed standby would change what it judges. Stop asks r's server to shut down and
// returns once it has; the kit then reaps what is left of its process group and calls Relink.
// Without it, the kit SIGKILLs the server, as a crash.
type Stopper interface {
	Stop(ctx context.Context, r *Replica) error
}

// Command is how to start one server.
type Command struct {
	Path string   // the binary
	Args []string // arguments after the binary
	Env  []string // environment; nil inherits the plugin's
}

// Cluster is the cluster the kit runs for one schedule.
type Cluster struct {
	Spec     cem.ClusterSpec // StepTimeout is set (a default when the executor gave none)
	Replicas []*Replica      // by concrete index
	Services []*Service      // About.Services, in its order
	p        *Plugin
	logRead  map[int]int64  // how far loggedKinds has read each replica's log
	net      *netns.Network // network = "namespaces": the replicas' hosts; nil on loopback
}

// loggedKinds names the lines that replica r's server has logged since the last call (since
// the cluster started, the first time) and that match one of kinds, in order, joined with ","
// ("TRUNC,DIFF"), or "" when none does.
func (c *Cluster) loggedKinds(r *Replica, kinds []LineKind) (string, error) {
	lines, err := c.newLogLines(r)
	if err != nil {
		return "", err
	}
	var found []string
	for _, line := range lines {
		for _, k := range kinds {
			if strings.Contains(line, k.Text) {
				found = append(found, k.Kind)
				break
			}
		}
	}
	return strings.Join(found, ","), nil
}

// newLogLines returns the whole lines that replica r's server has logged since the last call.
func (c *Cluster) newLogLines(r *Replica) ([]string, error) {
	if c.logRead == nil {
		c.logRead = map[int]int64{}
	}
	lines, end, err := logLinesFrom(r, c.logRead[r.Index])
	c.logRead[r.Index] = end
	return lines, err
}

// logLinesFrom returns the whole lines that replica r's server has logged from byte offset from
// on, and the offset after the last of them: a line still being written is read whole next
// time.
func logLinesFrom(r *Replica, from int64) ([]string, int64, error) {
	f, err := os.Open(r.LogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, from, nil
	}
	if err != nil {
		return nil, from, fmt.Errorf("%s's log: %w", r.Name, err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, from, fmt.Errorf("%s's log: %w", r.Name, err)
	}
	var lines []string
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		from += int64(len(line))
		lines = append(lines, strings.TrimSuffix(line, "\n"))
	}
	return lines, from, nil
}

// Await polls cond until it holds, within the step timeout, for a system's hook that must wait
// for something of its own (a snapshot to finish). A timeout becomes a *cem.NotReachedError
// naming what and what cond last saw.
func (c *Cluster) Await(ctx context.Context, what string, cond func(ctx context.Context) (ok bool, seen string, err error)) error {
	return c.p.await(ctx, what, nil, cond)
}

// Record adds an action of a system's own to the step's record; r is nil when it concerns no
// single replica. The kit records every hook it calls already.
func (c *Cluster) Record(r *Replica, format string, args ...any) {
	c.p.act(r, format, args...)
}

// StartSource is the replica whose server r's must follow from its start, or nil: the source
// its last Relink prepared, until a live Unfollow; nobody otherwise (see System.Command).
func (c *Cluster) StartSource(r *Replica) *Replica {
	if r.startLink == aem.NoSource {
		return nil
	}
	return c.Replicas[r.startLink]
}

// Partitioned tells whether the DRM's failures cut replicas off (a quorum model's, a link
// model's link failures), for a system that must notice a lost peer within a step (a timeout
// shorter than its default).
func (c *Cluster) Partitioned() bool { return c.p.drm.Partitions() }

// FaultyDisks tells whether the replicas' state files (DiskState) are on the kit's file
// systems, which the DRM's failures make lose what was not synced (a power loss), fail or
// corrupt: a plugin that skips a sync for speed where no failure could tell (initdb's
// --no-sync) must not skip it then.
func (c *Cluster) FaultyDisks() bool { return c.p.needs.Disks }

// Divergences is how many divergences the schedule has taken so far, the one being realised
// included: a system that spreads its writes (over databases, say) per divergence reads it.
func (c *Cluster) Divergences() int { return c.p.divergences }

// LineKind names the log lines that contain Text. Broken says that such a line is the
// system's own word that its replication is broken (PostgreSQL's "record with incorrect
// prev-link": a standby that cannot follow its primary's WAL): a replica whose server logs it
// again and again while the kit waits for it to sync will never sync, and the kit raises an
// alarm of class broken-replication in place of waiting out the step timeout; it raises it too
// for a running server that logged it brokenRepeats times during a step whose wait for
// anything else ended at its deadline (a standby that never serves). Stuck says that
// such a line, logged once, is the system's own word that the replica cannot go on without an
// operator (Galera's "node restart required", after which its server neither exits nor
// rejoins): a step whose wait ends at its deadline after a running server logged it ends with
// an alarm of class liveness, a failure of the system's, rather than as an incomplete step.
type LineKind struct {
	Text, Kind string
	Broken     bool
	Stuck      bool
}

// Replica is one server of the cluster.
type Replica struct {
	Index int    // concrete index, 0..n-1, fixed for the cluster's life
	Name  string // "<plugin>-<index>": names its directory, log and pid file
	Dir   string // a directory of its own under the cluster's
	Host  string // its address: 127.0.0.1, or its own in its network namespace
	Ports []int  // its PortsPerReplica ports at Host
	// NetNS is the file descriptor of its network namespace (proc.ProcessSpec.NetNS), 0 on
	// loopback.
	NetNS int
	// Starts is how many times the server was started before the current start.
	Starts int

	proc      *proc.Process // nil while down
	suspended bool
	cut       bool       // a partition cuts it off from every other replica
	diskFails bool       // its file systems fail (fault.DiskError), its server left running
	failed    fault.Kind // how a divergence failed it, until it is recovered; nil else
	link      int        // the replica the server follows (link models), aem.NoSource for none
	// cutFrom is the source that a partition cuts it from (a link model's link failure, in a
	// DRM whose failures are partitions), which its server still follows; aem.NoSource for none.
	// The model's link is gone meanwhile: link is aem.NoSource.
	cutFrom int
	// startLink is the replica the server follows from its start: none, but for a system
	// whose Relink configured a source that a restart keeps (PostgreSQL's standbys).
	startLink int
	// For a Relinker system: history counts the rewrites of the replica's history (a rewind, a
	// snapshot copied in), and linkedHistory is its source's count when it last linked, so
	// that a follower of a rewritten replica is relinked.
	history, linkedHistory int
	promoted               bool // S/S/R: unlinked to take writes while its source was suspended
	// broken says that the system said that replication to the server along its current link
	// is broken for good (LineKind.Broken): the alarm is raised, and no wait is made for it
	// again until the link changes or the server restarts.
	broken bool
}

// Addr is "host:port" for the replica's k-th port.
func (r *Replica) Addr(k int) string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Ports[k])) }

// LogPath is the file that holds the server's stdout and stderr, every start appended.
func (r *Replica) LogPath() string { return filepath.Join(r.Dir, r.Name+".log") }

func (r *Replica) String() string { return r.Name }

// running tells whether the server is up (it may be suspended).
func (r *Replica) running() bool { return r.proc != nil && r.proc.Running() }
