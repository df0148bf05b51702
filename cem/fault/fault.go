// Package fault is the room of modulo's failure kinds: crash, power loss, partition, pause,
// disk errors and corruption.
// Each kind is a type that says its name and letter in a schedule (an aem.Failure), what the
// host must provide for it (and why not, where it cannot), how it is injected into one
// replica's server, how the kit knows that the system has noticed it, and how it is undone
// when a convergence recovers the replica.
//
// A kind acts through a Server, the primitives the kit offers over one replica: its process
// group (package cem/proc), its file systems (package cem/powerfs) and its host's links (package
// cem/netns). The kit composes the kinds as it composes those packages: it asks the failing
// replica's kind (Of) and never branches on one. Adding a kind (a clock step, say) is a type
// here, its letter in aem's table, and the docs (docs/layout.md, "Adding a failure kind").
package fault

import (
	"context"
	"fmt"

	"github.com/modulo-testing/modulo/aem"
)

// Server is one replica's server as the kit runs it.
type Server interface {
	// Kill SIGKILLs the server's process group and waits until it is gone.
	Kill(ctx context.Context) error
	// Start starts the server again from its directory, with the system's command; it returns
	// once the process is forked: the convergence waits until the cluster serves.
	Start(ctx context.Context) error
	// Stop SIGSTOPs every process of the server and waits until every thread has stopped; Stopped
	// tells whether it is (a minority write stops a failing server before its failure).
	Stop(ctx context.Context) error
	Stopped() bool
	// Continue SIGCONTs the server's process group.
	Continue(ctx context.Context) error
	// CutOff loses every packet between the server's host and every peer's, both ways; Heal
	// mends the links to every peer that is not cut off itself.
	CutOff(ctx context.Context) error
	Heal(ctx context.Context) error
	// AwaitIsolated waits until the system says that the server sees that it is cut off
	// (kit.Isolation); at once where the system cannot tell.
	AwaitIsolated(ctx context.Context) error
	// AwaitDetection waits, once per step, as long as the system says its servers take to
	// notice a peer that stopped answering (kit.Detector); at once where it says nothing.
	AwaitDetection(ctx context.Context) error
	// DropUnsynced makes the server's file systems drop what it had not made durable, its
	// server being gone.
	DropUnsynced(ctx context.Context) error
	// Running tells whether the server's process is alive (it may be stopped).
	Running() bool
	// Draw returns a number drawn from the schedule's steps so far, the replica (the abstract
	// one, whichever server realises it) and what: a replay draws the same.
	Draw(what string) uint64
	// FailDisks makes the server's file systems a failing disk, drawn from seed
	// (powerfs.DrawErrors), until HealDisks, which says what they refused.
	FailDisks(ctx context.Context, seed uint64) error
	HealDisks(ctx context.Context) error
	// SpendDisks makes the failing disks fail from now on every operation their draw names,
	// whatever bytes the draw had left them.
	SpendDisks(ctx context.Context) error
	// CorruptDisk corrupts one file of the server's state, drawn from seed (powerfs.Corrupt),
	// its server being gone.
	CorruptDisk(ctx context.Context, seed uint64) error
}

// Host is what the machine and the system offer the kinds: nil, or why not.
type Host struct {
	// Disks: the kit can put the replicas' state on file systems that drop what was not
	// fsynced (FUSE, and a system that names its state directories: kit.DiskState).
	Disks error
	// Network: each replica has a network namespace and an address of its own.
	Network error
}

// Kind is one way to fail a replica.
type Kind interface {
	// Failure is the kind's name and its letter in a schedule's divergences.
	Failure() aem.Failure
	// Available says why the host cannot realise the kind, or nil.
	Available(h Host) error
	// Needs says what the kit must set up for the kind before the cluster starts: the
	// replicas' state on powerfs (Disks), a network namespace per replica (Network).
	Needs() Needs
	// Silent tells whether the kind can be injected before a write that must not reach the
	// failing replica, its peers meeting only silence (no connection closed): then the
	// replica fails before the write; otherwise it is stopped for the write and fails at the
	// divergence's end.
	Silent() bool
	// Inject fails the replica's server.
	Inject(ctx context.Context, s Server) error
	// Noticed waits until the system has noticed the failure, once the divergence that
	// injected it has ended: a partition shorter than the system's timeouts resyncs nothing.
	Noticed(ctx context.Context, s Server) error
	// Recover undoes the failure, at the convergence that brings the replica back.
	Recover(ctx context.Context, s Server) error
	// Settled waits, once the convergence has recovered every replica of its group, until the
	// system has acted on this one's recovery, before the kit asks whether it has caught up.
	Settled(ctx context.Context, s Server) error
}

// Needs is what a kind needs the kit to set up before a cluster starts.
type Needs struct {
	Disks, Network bool
}

// Of returns the kind of failure f.
func Of(f aem.Failure) (Kind, error) {
	for _, k := range All {
		if k.Failure() == f {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no failure kind %s", f)
}

// All are the kinds, in aem.Kinds' order.
var All = []Kind{Crash{}, PowerLoss{}, Partition{}, Pause{}, DiskError{}, Corruption{}}

// NeedsOf is what kinds need together.
func NeedsOf(kinds []Kind) Needs {
	var n Needs
	for _, k := range kinds {
		n.Disks = n.Disks || k.Needs().Disks
		n.Network = n.Network || k.Needs().Network
	}
	return n
}

// Describe lists every kind as cem.Capabilities.Failures says it: its name, followed by ": "
// and why not where h cannot realise it.
func Describe(h Host) []string {
	var out []string
	for _, k := range All {
		s := k.Failure().String()
		if err := k.Available(h); err != nil {
			s += ": " + err.Error()
		}
		out = append(out, s)
	}
	return out
}

// Crash kills the server (SIGKILL of its process group); the kernel keeps every byte it wrote,
// synced or not. Recovered, it restarts from its directory.
type Crash struct{}

func (Crash) Failure() aem.Failure                        { return aem.FailCrash }
func (Crash) Available(Host) error                        { return nil }
func (Crash) Needs() Needs                                { return Needs{} }
func (Crash) Silent() bool                                { return false }
func (Crash) Inject(ctx context.Context, s Server) error  { return s.Kill(ctx) }
func (Crash) Noticed(context.Context, Server) error       { return nil } // its peers' connections close at once
func (Crash) Recover(ctx context.Context, s Server) error { return s.Start(ctx) }
func (Crash) Settled(context.Context, Server) error       { return nil } // a started server is awaited until it serves

// PowerLoss kills the server, then its file systems drop what it had not made durable (package
// cem/powerfs defines what is). Recovered, it restarts from what is left.
type PowerLoss struct{}

func (PowerLoss) Failure() aem.Failure   { return aem.FailPowerLoss }
func (PowerLoss) Available(h Host) error { return disks(h, "drop unsynced data") }
func (PowerLoss) Needs() Needs           { return Needs{Disks: true} }
func (PowerLoss) Silent() bool           { return false }
func (PowerLoss) Inject(ctx context.Context, s Server) error {
	if err := s.Kill(ctx); err != nil {
		return err // the server may still run: nothing is dropped under it
	}
	return s.DropUnsynced(ctx)
}
func (PowerLoss) Noticed(context.Context, Server) error       { return nil }
func (PowerLoss) Recover(ctx context.Context, s Server) error { return s.Start(ctx) }
func (PowerLoss) Settled(context.Context, Server) error       { return nil }

// Partition cuts the server's host off from every peer, both ways, the server left running
// (the plugin still reaches it); it has noticed once the system says it is cut off. Recovered,
// its links heal.
type Partition struct{}

func (Partition) Failure() aem.Failure { return aem.FailPartition }
func (Partition) Available(h Host) error {
	if h.Network != nil {
		return fmt.Errorf("replicas cannot be cut off: %w", h.Network)
	}
	return nil
}
func (Partition) Needs() Needs                                { return Needs{Network: true} }
func (Partition) Silent() bool                                { return true }
func (Partition) Inject(ctx context.Context, s Server) error  { return s.CutOff(ctx) }
func (Partition) Noticed(ctx context.Context, s Server) error { return s.AwaitIsolated(ctx) }
func (Partition) Recover(ctx context.Context, s Server) error { return s.Heal(ctx) }
func (Partition) Settled(context.Context, Server) error       { return nil } // its peers answer at once

// Pause stops every process of the server where it is (SIGSTOP), as a long GC pause, a stopped
// VM or an overloaded host does: it keeps what it holds in memory, its connections stay open,
// and it acts on what it knew when it goes on. Recovered, it goes on (SIGCONT), without a
// restart.
//
// A pause before a write is what a real pause is (docs/aem.md, decided): a stopped server's
// kernel still accepts its peers' packets (a VM's virtual NIC and TCP's retransmissions do the
// same), so a write sent while it is stopped reaches it when it goes on. A write that only a
// minority received, as in D[0,0,1](s,s,s), may then commit once the paused followers go on,
// where the model's version says they never had it; it was never acknowledged, and the oracle
// takes it present or absent alike. Keeping it from them would take cutting the links and
// resetting the connections: a partition, which is a kind of its own.
type Pause struct{}

func (Pause) Failure() aem.Failure { return aem.FailPause }
func (Pause) Available(Host) error { return nil }
func (Pause) Needs() Needs         { return Needs{} }
func (Pause) Silent() bool         { return true }
func (Pause) Inject(ctx context.Context, s Server) error {
	if s.Stopped() { // stopped already, for a write it must not see
		return nil
	}
	return s.Stop(ctx)
}
func (Pause) Noticed(context.Context, Server) error       { return nil } // a stopped server notices nothing
func (Pause) Recover(ctx context.Context, s Server) error { return s.Continue(ctx) }

// Settled waits the system's detection time: a server that goes on acts on what it knew when
// it stopped, and finds out only by its timeouts that its followers elected another leader or
// stopped answering it; the cluster the pause leaves is the one after that.
func (Pause) Settled(ctx context.Context, s Server) error { return s.AwaitDetection(ctx) }

// disks says why the host cannot put a replica's state on a file system of modulo's, or nil.
func disks(h Host, what string) error {
	if h.Disks != nil {
		return fmt.Errorf("its file systems cannot %s: %w", what, h.Disks)
	}
	return nil
}

// DiskError makes the replica's disk fail, its server left running: its file systems answer
// writes and fsyncs, or fsyncs alone (and reads, as the kit's disk_errors_on_reads says), with
// EIO from a byte drawn from the schedule (powerfs.DrawErrors), and from the divergence's end
// at the latest. A server may go on, stop
// serving or exit. Recovered, the disk heals, and a server that exited starts again; one that
// runs restarts or goes on as the schedule draws: a restart reads what the disk kept, going
// on keeps what the server holds in memory.
//
// Before a write that must not reach it the server is stopped, for its peers' writes reach a
// running server whatever its disk does, and it goes on once its disk fails, at the
// divergence's end: the write, never acknowledged, may reach it then (as for a pause,
// docs/aem.md).
type DiskError struct{}

func (DiskError) Failure() aem.Failure   { return aem.FailDiskError }
func (DiskError) Available(h Host) error { return disks(h, "fail") }
func (DiskError) Needs() Needs           { return Needs{Disks: true} }
func (DiskError) Silent() bool           { return false }
func (DiskError) Inject(ctx context.Context, s Server) error {
	if err := s.FailDisks(ctx, s.Draw("disk errors")); err != nil {
		return err
	}
	if s.Stopped() {
		return s.Continue(ctx)
	}
	return nil
}

// Noticed spends what the draw left the disk: it fails from the divergence's end on, so that
// the server meets its failure at its next write (a new term's vote, an epoch, a write it
// follows), as the model has it offline from then on. The drawn bytes place the first failure
// among the writes the server makes while its divergence lasts; a disk that never failed
// within them would leave a server that leads and follows as if healthy, where the model has
// it failed, and a convergence that waits for a leader among the others waits in vain.
func (DiskError) Noticed(ctx context.Context, s Server) error { return s.SpendDisks(ctx) }
func (DiskError) Recover(ctx context.Context, s Server) error {
	if err := s.HealDisks(ctx); err != nil {
		return err
	}
	if s.Running() && s.Draw("restart after disk errors")%2 == 1 {
		return nil // it goes on
	}
	return restart(ctx, s)
}

// restart kills what is left of the server (all of it, or what an exit left) and starts it.
func restart(ctx context.Context, s Server) error {
	if err := s.Kill(ctx); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Settled waits the system's detection time: a server that went on after its disk failed may
// have lost its followers or its leader meanwhile, and acts on what it knew. A server that
// exits meanwhile, on an error its disk gave before it healed (its exit races the heal), is
// started again, as one that had exited before it: an operator restarts a server that a disk
// error ended, and the restart, not the exit, is what the convergence judges.
func (DiskError) Settled(ctx context.Context, s Server) error {
	if err := s.AwaitDetection(ctx); err != nil || s.Running() {
		return err
	}
	return restart(ctx, s)
}

// Corruption kills the server and corrupts one file of its state, as Jepsen's file nemesis
// does: a flipped bit or a truncation, of the last file written or another, drawn from the
// schedule (powerfs.Corrupt). Recovered, it starts from what is left: it must refuse to start
// (unrecoverable) or converge.
type Corruption struct{}

func (Corruption) Failure() aem.Failure   { return aem.FailCorruption }
func (Corruption) Available(h Host) error { return disks(h, "be corrupted") }
func (Corruption) Needs() Needs           { return Needs{Disks: true} }
func (Corruption) Silent() bool           { return false }
func (Corruption) Inject(ctx context.Context, s Server) error {
	if err := s.Kill(ctx); err != nil {
		return err
	}
	return s.CorruptDisk(ctx, s.Draw("corruption"))
}
func (Corruption) Noticed(context.Context, Server) error       { return nil }
func (Corruption) Recover(ctx context.Context, s Server) error { return s.Start(ctx) }
func (Corruption) Settled(context.Context, Server) error       { return nil }
