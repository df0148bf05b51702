// Package cem is the concrete side of modulo: the interface a DRM plugin implements to drive a
// real cluster through a schedule, the gRPC protocol that carries it between the executor and
// the plugin process, and the host side that launches a plugin binary. The process, pid-file,
// port and wait helpers that plugins use are package cem/proc; the kit that plugins are built
// from is cem/kit.
//
// A plugin knows the abstract models (package aem) but nothing of the executor: it is given a
// directory, a port range and a schedule's transitions one at a time, and reports the concrete
// actions it took and the data every replica holds.
package cem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modulo-testing/modulo/drms"
)

// ProtocolVersion is the version of the plugin protocol. It changes whenever a message or a
// method changes meaning; the go-plugin handshake refuses a plugin built for another version.
const ProtocolVersion = 5

// Capabilities say what a plugin can do.
type Capabilities struct {
	// DRMs lists the short names of the DRMs the plugin realises, such as "ssr": the
	// catalogue's and those it declares.
	DRMs []string
	// Declared are the DRMs of the plugin's own, which modulo's catalogue does not hold: a
	// plugin for a new system brings its DRM with it.
	Declared []DRMSpec
	// PortsPerReplica is how many consecutive ports each replica needs.
	PortsPerReplica int
	// ServicePorts is how many ports the cluster's own services need (processes the plugin
	// runs beside the replicas and never fails, kit.About.Services): on loopback, the ports
	// after every replica's.
	ServicePorts int
	// Restore says that the plugin implements Restorer: it can save a cluster whose state is
	// entirely on disk and restart from the copy later, instead of replaying the steps that
	// led to it.
	Restore bool
	// Network is the network the plugin's clusters get unless its table says otherwise:
	// NetworkNamespaces (each replica an address of its own, on the system's ordinary ports),
	// or NetworkLoopback followed by ": " and why not namespaces.
	Network string
	// Failures are the failure kinds (aem.Failure names: crash, power-loss, partition, pause)
	// the plugin realises, each followed by ": " and why not where this host cannot
	// ("partition: no network namespaces here"), so that modulo knows which DRMs composed
	// with kinds ("qcz+pause") it can run.
	Failures []string
}

// The networks a plugin's clusters run on (Capabilities.Network).
const (
	NetworkNamespaces = "namespaces"
	NetworkLoopback   = "loopback"
)

// Ports is how many consecutive ports from ClusterSpec.BasePort a cluster of replicas takes on
// loopback: its replicas', then its services'.
func (c Capabilities) Ports(replicas int) int { return replicas*c.PortsPerReplica + c.ServicePorts }

// InNamespaces tells whether a plugin with these capabilities runs its clusters in network
// namespaces unless told otherwise.
func (c Capabilities) InNamespaces() bool { return c.Network == NetworkNamespaces }

// DRMSpec is a DRM that a plugin declares: everything modulo's catalogue holds of one.
type DRMSpec = drms.Spec

// Info describes a plugin and the server binary it drives.
type Info struct {
	Name          string // plugin name, such as "redis"
	Version       string // plugin version
	ServerVersion string // version of the configured server binary, as the server reports it
	Capabilities  Capabilities
	// Releases are the versions of the server releases in modulo's cache that the plugin can
	// run (scripts/setup builds them), oldest first, and ReleaseSetting is the plugin table's
	// line that runs one, <version> standing for its version:
	// `server = "~/.cache/modulo/etcd/<version>/etcd"`.
	Releases       []string
	ReleaseSetting string
}

// ClusterSpec is what the executor hands a plugin to start one cluster.
type ClusterSpec struct {
	DRM      string // short DRM name
	Ops      int
	Replicas int
	// Dir is a fresh directory the plugin owns for this cluster: data, logs, pid files.
	Dir string
	// BasePort is the first port of the range; replica i owns ports
	// BasePort+i*PortsPerReplica .. BasePort+(i+1)*PortsPerReplica-1 on 127.0.0.1, and the
	// cluster's services the Capabilities.ServicePorts after the last replica's.
	BasePort int
	// ScheduleID names the schedule, so that written values are unique to it.
	ScheduleID string
	// Config is the plugin's own section of the configuration, as TOML; the plugin decodes it
	// and rejects keys it does not know.
	Config []byte
	// StepTimeout bounds each wait for the cluster to reach the state a step needs.
	StepTimeout time.Duration
}

// Step is one abstract transition to realise.
type Step struct {
	Index      int    // 0-based position in the schedule
	Transition string // compact text, as aem.ParseTransition reads it
}

// Action is one concrete thing a plugin did, for the record and for replay.
type Action struct {
	Time    time.Time
	Replica int    // -1 when it concerns no single replica
	What    string // such as "SIGKILL pid 4242", "SET key:1 v1", "REPLICAOF 127.0.0.1 7001"
}

// StepReport is what realising one step did, and what the plugin saw once it had settled.
type StepReport struct {
	Actions []Action
	// Writes are the step's writes, in the order sent, with what the system acknowledged.
	Writes []Write
	// Observations say, per replica, what the plugin observed after the step: who leads and in
	// which term, each replica's position, how it was resynced. Fields are the plugin's own
	// (the Observe constants name the common ones); they explain verdicts and replays.
	Observations []Observation
	// Alarms are problems that the system reports after the step (ZooKeeper's digest
	// mismatches, a standby that PostgreSQL says cannot follow its primary): each makes the
	// schedule fail.
	Alarms []Alarm
}

// Write is one write a step sent. Acked says that the system acknowledged it as durable
// (a quorum system: the client call returned success, so it committed); an acknowledged write
// must survive on every replica of the group that converges. A write that is not acknowledged
// (one the system never answered, or any write of a system that promises no durability beyond
// one server, such as Redis) may be present or absent, but the same on every such replica.
type Write struct {
	Key, Value string
	Acked      bool
	// Minority says that the model has the write reach only a minority of the replicas, where
	// it cannot commit: the kit sent it without waiting, and Answer says what the system
	// answered, AnsweredAfter how long after the send. An acknowledged minority write is Acked
	// like any other.
	Minority      bool
	Answer        Answer
	AnsweredAfter time.Duration
	// Async says that the plugin declares its system to acknowledge a write before replicas
	// hold it (asynchronous replication, kit.Asynchronous): an acknowledged minority write is
	// what it promises, not a failure of its own; losing it later still is.
	Async bool
}

// Answer is what a system answered to a write the kit sent without waiting (Write.Minority).
type Answer string

// The answers to a write sent without waiting.
const (
	// Acknowledged: the system's Write returned success.
	Acknowledged Answer = "acknowledged"
	// Refused: it returned an error while every server the write reached still ran.
	Refused Answer = "refused"
	// NoAnswer: it had not answered when the kit began failing the servers the write reached
	// (its error then is the lost connection), or when the kit ended the wait for it.
	NoAnswer Answer = "no answer"
)

// CutOff is the ObserveNetwork value of a replica that a partition cuts off from its peers (on
// a link model, from its source).
const CutOff = "cut off"

// Observation is what the plugin observed of one replica (by abstract index) after a step.
type Observation struct {
	Replica int               `json:"replica"`
	Fields  map[string]string `json:"fields"`
}

// The field names that observations share across systems, so that reports and replays line
// them up; a plugin adds fields of its own as it likes.
const (
	ObserveRole     = "role"     // leader, follower, primary, replica...
	ObserveEpoch    = "epoch"    // the leader's epoch or term, as the replica knows it
	ObservePosition = "position" // the replica's position in the replicated log
	ObserveSync     = "sync"     // how the replica was resynced since the last observation
	ObserveNetwork  = "network"  // CutOff while a partition cuts the replica off from its peers
)

// Alarm is a problem that the system reports on a replica (by abstract index).
type Alarm struct {
	Replica int
	What    string
	// Broken says that the system itself says replication to the replica is broken for good:
	// its server logs again and again a line that the plugin names as such (kit.LineKind),
	// while it should be syncing. Without it, the alarm is a failed self-check.
	Broken bool
	// Unrecoverable says that the replica's server, restarted by a convergence after a
	// failure, exited before the cluster caught up: it cannot recover from what the failure
	// left (ZooKeeper refusing a log without a snapshot after a power loss).
	Unrecoverable bool
	// Stuck says that the replica's server, up, logged during a step that its system cannot go
	// on without an operator (a line the plugin names as such, kit.LineKind.Stuck: Galera's
	// "node restart required"), and the step's wait for the cluster ended at its deadline: a
	// liveness failure of the system's, not an incomplete step.
	Stuck bool
	// Lost says that the replica's server, restarted after a power loss, no longer holds what it
	// held when it lost power (a write's key missing or with another value): its disk lost
	// what the server had shown as written, a lost write of the server's own.
	Lost bool
}

// ReplicaData is the data one replica holds at the end of a schedule.
type ReplicaData struct {
	Data map[string]string
	// Err says why the replica could not be read; a replica that cannot be read does not count
	// as converged.
	Err string
	// Group says which replicas the system promises to converge: replicas of one group must hold
	// the same data, replicas of different groups need not (Redis, for one, replicates only along
	// links, so each replication tree is a group). Systems that converge as a whole leave it 0.
	Group int
}

// Snapshot is every replica's data.
type Snapshot struct {
	Replicas []ReplicaData
}

// CEM is the interface every DRM plugin implements: one cluster at a time.
type CEM interface {
	// Info describes the plugin and the server binary that config (the plugin's section of the
	// configuration, as Start will get it) names. It fails when the configuration is wrong or
	// the binary is missing, so that a campaign stops before its first schedule.
	Info(ctx context.Context, config []byte) (Info, error)
	// Start starts a fresh cluster as spec says and waits until it is ready for the first step.
	// When it does not become ready before the step timeout, it returns a *NotReachedError
	// with Step -1; when the plugin cannot give what the spec asks, an *UnrealisableError.
	Start(ctx context.Context, spec ClusterSpec) error
	// Apply realises one transition and waits until the cluster has reached the state it
	// describes. When that state is not reached before the step timeout, it returns a
	// *NotReachedError; when the plugin cannot make the system do what the step asks, an
	// *UnrealisableError; when the realisation left the model's state, a *NonconformantError.
	// Each comes with the actions taken before it.
	Apply(ctx context.Context, step Step) (StepReport, error)
	// Read returns every replica's data.
	Read(ctx context.Context) (Snapshot, error)
	// Teardown stops every process of the cluster. It is safe to call twice, and after a
	// failed Start.
	Teardown(ctx context.Context) error
}

// Restorer is implemented by a plugin whose Info says Capabilities.Restore. A cluster whose
// every server is down after a step is its files and nothing else: Save copies them, and
// Restore makes a new cluster of them that continues with the next step exactly as the saved
// one would have, so that schedules that share a prefix need not replay it.
type Restorer interface {
	// Save copies the state of the running cluster into dir, a fresh directory that the caller
	// keeps. It fails when the state is not entirely on disk (a server still runs).
	Save(ctx context.Context, dir string) (Saved, error)
	// Restore starts the cluster of spec, in place of Start, from what Save put in dir, in the
	// state that the steps (the transitions' compact text) left: ready for step len(steps).
	// It starts no server (every one was down); it fails when the restored files are not the
	// saved ones, byte for byte.
	Restore(ctx context.Context, spec ClusterSpec, dir string, steps []string) (Restored, error)
}

// Saved says what a Save copied: the files, directories and links by path relative to the
// cluster's directory, the bytes of data they hold (the holes of sparse files left out: what
// the copy takes on disk), and the SHA-256 of names, modes and contents (package
// internal/fsutil's Digest).
type Saved struct {
	Paths  []string
	Bytes  int64
	Digest string
}

// Restored says what a Restore copied back, and what it did: a byte-identical restore has the
// Saved of its Save.
type Restored struct {
	Saved
	Actions []Action
}

// NotReachedError says that the cluster never reached the state a step needed.
type NotReachedError struct {
	Step    int    // 0-based; -1 for the start of the cluster
	Awaited string // what was awaited, such as "replica 2 in sync with replica 0"
}

func (e *NotReachedError) Error() string {
	if e.Step < 0 {
		return "start: not reached before the deadline: " + e.Awaited
	}
	return fmt.Sprintf("step %d: not reached before the deadline: %s", e.Step+1, e.Awaited)
}

// IsNotReached reports whether err says a step's state was not reached.
func IsNotReached(err error) bool {
	var nr *NotReachedError
	return errors.As(err, &nr)
}

// UnrealisableError says that the plugin cannot make its system do what a step asks: the
// schedule is one the model allows and this realisation cannot give (a Galera write that the
// model has reach two nodes of five without a quorum). It is neither the system's failure nor
// the harness's; the run records the schedule as unrealisable, with the reason.
type UnrealisableError struct {
	Step   int // 0-based; -1 for the start of the cluster
	Reason string
}

func (e *UnrealisableError) Error() string {
	if e.Step < 0 {
		return "start: cannot be realised: " + e.Reason
	}
	return fmt.Sprintf("step %d: cannot be realised: %s", e.Step+1, e.Reason)
}

// IsUnrealisable reports whether err says a step cannot be realised.
func IsUnrealisable(err error) bool {
	var ue *UnrealisableError
	return errors.As(err, &ue)
}

// NonconformantError says that after a step the cluster was not where the model has it, through
// the realisation's doing: modulo's fault, not the system's. Check names the check that caught
// it ("process-state", "write-leaked", "port-listened"), Detail what it saw.
type NonconformantError struct {
	Step   int // 0-based; -1 for the start of the cluster
	Check  string
	Detail string
}

func (e *NonconformantError) Error() string {
	where := "start"
	if e.Step >= 0 {
		where = fmt.Sprintf("step %d", e.Step+1)
	}
	return fmt.Sprintf("%s: the cluster does not conform to the model (%s): %s", where, e.Check, e.Detail)
}

// IsNonconformant reports whether err says the realisation left the model's state.
func IsNonconformant(err error) bool {
	var ne *NonconformantError
	return errors.As(err, &ne)
}

// DefaultStepTimeout bounds each wait of a step when the configuration gives no step_timeout:
// the executor's default, and a plugin's when a cluster spec comes without one.
const DefaultStepTimeout = 30 * time.Second

// DefaultCallTimeout is the host's bound on one call to a plugin, for a step timeout and
// cluster size: a plugin's Start may wait for each replica in turn, each wait bounded by the
// step timeout, so the bound leaves room for every replica and two more waits. It only catches
// a plugin that hangs.
func DefaultCallTimeout(stepTimeout time.Duration, replicas int) time.Duration {
	return time.Duration(replicas+2) * stepTimeout
}
