// Package aem holds the abstract execution models (AEMs) of modulo: tiny state machines whose
// maximal paths are the schedules that the concrete side replays on real clusters.
//
// The rules are pinned by shared/spec/aem.md; its reference counts are the contract and are
// checked by this package's tests.
package aem

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind tells a divergence from a convergence transition.
type Kind uint8

const (
	// Divergence fails replicas and injects writes.
	Divergence Kind = iota + 1
	// Convergence recovers replicas and resyncs them.
	Convergence
)

func (k Kind) String() string {
	switch k {
	case Divergence:
		return "D"
	case Convergence:
		return "C"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Failure is how a divergence fails one replica: its kind (S/CL/R's none or crash, and the
// quorum model's crash, power loss, partition or pause, one or several per DRM).
type Failure uint8

const (
	// NotInLayout marks a replica the divergence leaves alone: already offline, or (S/CL/R) online
	// in another replication tree than the one the divergence writes into.
	NotInLayout Failure = iota
	// FailNone leaves the replica running: it receives every write of the step.
	FailNone
	// FailCrash kills the replica's server; it restarts from what its disk holds.
	FailCrash
	// FailPartition cuts the replica off from every other, its server left running.
	FailPartition
	// FailPowerLoss kills the replica's server and drops what it had not made durable; it
	// restarts from what is left.
	FailPowerLoss
	// FailPause stops the replica's processes where they are (SIGSTOP, as a long GC pause or a
	// stopped VM does); they go on, without a restart, when it is recovered.
	FailPause
	// FailDiskError makes the replica's disk answer writes and fsyncs (and, as a setting,
	// reads) of its state with EIO, its server left running; recovered, the disk heals.
	FailDiskError
	// FailCorruption kills the replica's server and corrupts one of its state files (a
	// flipped bit, a truncation); recovered, it restarts from what is left.
	FailCorruption
)

// Kinds lists the failure kinds a quorum model's replicas may take, in the order in which a
// divergence's failures are enumerated and a DRM names them.
var Kinds = []Failure{FailCrash, FailPowerLoss, FailPartition, FailPause, FailDiskError, FailCorruption}

// failureNames are the kinds' names, as flags and messages write them.
var failureNames = [...]string{NotInLayout: "not-in-layout", FailNone: "none", FailCrash: "crash", FailPartition: "partition", FailPowerLoss: "power-loss", FailPause: "pause", FailDiskError: "disk-error", FailCorruption: "corruption"}

func (f Failure) String() string {
	if int(f) < len(failureNames) {
		return failureNames[f]
	}
	return "Failure(" + strconv.Itoa(int(f)) + ")"
}

// Down tells whether a replica that failed so has no server running until it is recovered,
// which restarts it: the state on its disk is all there is.
func (f Failure) Down() bool { return f == FailCrash || f == FailPowerLoss || f == FailCorruption }

// Disk tells whether the failure breaks the replica's disk, which a quorum system survives
// only on a minority of its replicas: a quorum model fails at most a minority so at once.
func (f Failure) Disk() bool { return f == FailDiskError || f == FailCorruption }

// ParseFailure reads a failure kind of Kinds by its name or its letter in a schedule.
func ParseFailure(s string) (Failure, error) {
	for _, f := range Kinds {
		if s == f.String() || len(s) == 1 && s[0] == failureLetters[f] {
			return f, nil
		}
	}
	var names []string
	for _, f := range Kinds {
		names = append(names, fmt.Sprintf("%s (%c)", f, failureLetters[f]))
	}
	return 0, fmt.Errorf("unknown failure kind %q: one of %s", s, strings.Join(names, ", "))
}

// Resync is how a convergence brings data back (S/CL/R distinguishes them).
type Resync uint8

const (
	// Online is the system's own resync, triggered by recovery or by a replication link.
	Online Resync = iota
	// Offline1 copies the primary's snapshot into a crashed replica, which stays down.
	Offline1
	// Offline2 starts a crashed replica from the primary's snapshot as the new primary; the
	// old primary goes down.
	Offline2
)

// NoSource marks a replica that replicates from nobody.
const NoSource = -1

// Transition is one step of a schedule.
type Transition struct {
	Kind Kind
	// Writes[i] is how many of a divergence's writes replica i receives.
	Writes []int
	// Failures[i] is how a divergence fails replica i; nil for models without failure kinds.
	Failures []Failure
	// Group lists, ascending, the replicas a convergence brings back.
	Group []int
	// Sources[i] is the replica i replicates from after a convergence (NoSource for none); nil
	// for models without replication links.
	Sources []int
	// Resync is how a convergence resyncs.
	Resync Resync
	// From is the primary whose snapshot an offline resync copies (S/CL/R). The text does not
	// name it: in every state at most one primary qualifies (see Redis).
	From int
}

// WriteCount is the number of writes a divergence injects: the largest entry of Writes.
func (t *Transition) WriteCount() int {
	m := 0
	for _, w := range t.Writes {
		m = max(m, w)
	}
	return m
}

// Params are the two parameters of every model.
type Params struct {
	Ops      int // writes in a schedule
	Replicas int // replicas, indexed 0..Replicas-1
}

// MaxReplicas bounds the replica count: beyond it the schedule spaces are far beyond what any
// cluster could run. At least two replicas and one write make a schedule.
const MaxReplicas = 16

// MaxOps bounds the write count: Q/C/Z with 3 replicas already has about 2.9e17 schedules at
// 16 writes, near what a count can hold, and a header asking for more (ops: 1000) would have
// the enumeration allocate until the process dies.
const MaxOps = 16

// Validate reports parameters that no model accepts.
func (p Params) Validate() error {
	if p.Replicas < 2 || p.Replicas > MaxReplicas {
		return fmt.Errorf("replicas must be between 2 and %d, got %d", MaxReplicas, p.Replicas)
	}
	if p.Ops < 1 || p.Ops > MaxOps {
		return fmt.Errorf("ops must be between 1 and %d, got %d", MaxOps, p.Ops)
	}
	return nil
}

// State is an abstract state. Models that do not track links leave Src nil; Failed is only
// used by the models whose divergences say how a replica fails (S/CL/R, the quorum model with
// several failure kinds).
type State struct {
	Left   int       // writes not yet injected
	RS     []int     // abstract version per replica
	On     []bool    // online per replica
	Src    []int     // replication source per replica, or NoSource
	Failed []Failure // how each offline replica failed, until it is recovered; NotInLayout else
	Steps  int       // transitions taken so far
}

// FailedAs tells how replica i failed, if it is offline and the model says so: NotInLayout
// otherwise (a quorum model of one kind says nothing: drms.DRM.KindOf gives it).
func (s *State) FailedAs(i int) Failure {
	if s.Failed == nil || s.On[i] {
		return NotInLayout
	}
	return s.Failed[i]
}

// Crashed tells whether replica i is offline because its server was killed (not merely
// disconnected, cut off or paused), in a model that says how replicas fail.
func (s *State) Crashed(i int) bool { return s.FailedAs(i).Down() }

// Clone returns a deep copy.
func (s *State) Clone() State {
	c := State{Left: s.Left, Steps: s.Steps, RS: append([]int(nil), s.RS...), On: append([]bool(nil), s.On...)}
	if s.Src != nil {
		c.Src = append([]int(nil), s.Src...)
	}
	if s.Failed != nil {
		c.Failed = append([]Failure(nil), s.Failed...)
	}
	return c
}

// Online counts the online replicas.
func (s *State) Online() int {
	k := 0
	for _, on := range s.On {
		if on {
			k++
		}
	}
	return k
}

// AllOnline tells whether no replica is offline.
func (s *State) AllOnline() bool { return s.Online() == len(s.On) }

// Targets lists, ascending, the replicas that replicate from i.
func (s *State) Targets(i int) []int {
	var t []int
	for j, src := range s.Src {
		if src == i {
			t = append(t, j)
		}
	}
	return t
}

// appendKey appends a byte encoding of everything that decides the state's future; steps is
// included only for models whose guards look at it.
func (s *State) appendKey(b []byte, steps bool) []byte {
	b = strconv.AppendInt(b, int64(s.Left), 10)
	if steps {
		b = append(b, '@')
		b = strconv.AppendInt(b, int64(s.Steps), 10)
	}
	for i := range s.RS {
		b = append(b, '|')
		b = strconv.AppendInt(b, int64(s.RS[i]), 10)
		if s.On[i] {
			b = append(b, '+')
		}
		if s.Src != nil {
			b = append(b, byte('a'+s.Src[i]+1))
		}
		if s.Failed != nil {
			b = append(b, failedKey[s.Failed[i]]...)
		}
	}
	return b
}

// failedKey marks each way to be offline in a state's key; a crash keeps the mark it had
// before there were more kinds than crash and partition.
var failedKey = [...]string{FailCrash: "!", FailPowerLoss: "~", FailPause: "%", FailDiskError: "#", FailCorruption: "*"}

// AllDown tells whether state s of model m has every replica's server down: offline, in a
// quorum model whose only failure kind stops servers (crash, power loss), or failed so, in one
// whose divergences say how each replica fails. The link models take replicas offline by
// suspending or unlinking servers that still run.
func AllDown(m Model, s *State) bool {
	if s.Online() > 0 {
		return false
	}
	if m.FailureKinds() {
		for i := range s.On {
			if !s.Crashed(i) {
				return false
			}
		}
		return true
	}
	kinds := m.Kinds()
	return !m.Links() && len(kinds) == 1 && kinds[0].Down()
}

// epochStride is the version gap between epochs: a resync that starts a new epoch moves every
// online replica to the next multiple of it.
const epochStride = 10000

// nextEpoch is next(top) of the spec.
func nextEpoch(top int) int { return (top/epochStride + 1) * epochStride }

// topOnline is the highest version among the online replicas.
func (s *State) topOnline() int {
	top := 0
	for i, on := range s.On {
		if on {
			top = max(top, s.RS[i])
		}
	}
	return top
}

// setOnline sets every online replica's version to v.
func (s *State) setOnline(v int) {
	for i, on := range s.On {
		if on {
			s.RS[i] = v
		}
	}
}

// Model is an abstract execution model. A new AEM is a new type implementing it.
type Model interface {
	// Name is the model's short name as the spec writes it, such as "Q/C/Z".
	Name() string
	// Rules is the model's rule set: what a realisation must do, whatever the title.
	Rules() Rules
	// Init returns the initial state.
	Init(p Params) State
	// Next appends to out, in canonical order, every transition enabled in s.
	Next(p Params, s *State, out []Transition) []Transition
	// Apply returns the state after t; t must be one that Next returned for s.
	Apply(p Params, s *State, t *Transition) State
	// Complete tells whether a state in which nothing is enabled ends a schedule; a path that
	// ends elsewhere is discarded.
	Complete(p Params, s *State) bool
	// StepsMatter tells whether guards look at State.Steps, so that memoisation must key on it.
	StepsMatter() bool
	// Links tells whether the model tracks replication links (Transition.Sources, State.Src).
	Links() bool
	// FailureKinds tells whether divergences carry Transition.Failures.
	FailureKinds() bool
	// Kinds lists the failure kinds that the model's failing replicas take (Kinds' order); a
	// model with one takes it everywhere without naming it in its divergences. Nil for the
	// models whose failures are of links, not of replicas.
	Kinds() []Failure
}
