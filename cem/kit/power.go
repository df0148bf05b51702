package kit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem/powerfs"
)

// A DRM whose failures need disks (power loss, disk errors, corruption: fault.Needs) has every
// replica's state directories (DiskState.StateFiles, which must be directories then) on a
// powerfs file system of its own, mounted from prepare to teardown over a store beside them: a
// power loss SIGKILLs the server and then drops what its file systems had not made durable, a
// disk error makes them fail, a corruption damages one file of them.

// powerStores is the directory, in a replica's directory, that holds the stores of its
// file systems, one per state directory.
const powerStores = ".powerfs"

// disk is one state directory of a replica on its file system.
type disk struct {
	rel string // the state directory, relative to the replica's directory
	fs  *powerfs.FS
}

// mountDisks mounts a file system over every state directory of every replica.
func (p *Plugin) mountDisks(ds DiskState) error {
	p.disks = make([][]disk, len(p.c.Replicas))
	for _, r := range p.c.Replicas {
		for _, rel := range ds.StateFiles(p.c, r) {
			dir := filepath.Join(r.Dir, rel)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			f, err := powerfs.Mount(dir, filepath.Join(r.Dir, powerStores, rel), p.disk)
			if err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
			p.disks[r.Index] = append(p.disks[r.Index], disk{rel: rel, fs: f})
		}
	}
	p.act(nil, "disk faults: every replica's %s on a file system of modulo's (powerfs); a power loss: %s", strings.Join(ds.StateFiles(p.c, p.c.Replicas[0]), ", "), p.disk)
	return nil
}

// syncDisks makes everything on the file systems durable: what the setup wrote before the
// first server starts, what a restore copied in.
func (p *Plugin) syncDisks() error {
	var errs []error
	for _, ds := range p.disks {
		for _, d := range ds {
			errs = append(errs, d.fs.Sync())
		}
	}
	return errors.Join(errs...)
}

// unmountDisks unmounts every file system; their stores stay, for teardown's sweep.
func (p *Plugin) unmountDisks(ctx context.Context) error {
	var errs []error
	for _, ds := range p.disks {
		for _, d := range ds {
			errs = append(errs, d.fs.Unmount(ctx))
		}
	}
	p.disks = nil
	return errors.Join(errs...)
}

// draw returns a number drawn from the steps so far, what and who: a replay, or a schedule that
// restores this prefix, draws the same.
func (p *Plugin) draw(who, what string) uint64 {
	h := sha256.New()
	for _, s := range p.steps {
		fmt.Fprintln(h, s)
	}
	fmt.Fprintln(h, who, what)
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// drawFor draws for r's failure (fault.Server.Draw) by its abstract replica, which the schedule
// names, rather than by its server, which the leader's election picks.
func (p *Plugin) drawFor(r *Replica, what string) uint64 {
	return p.draw(fmt.Sprintf("abstract replica %d", p.abstractOf(r.Index)), what)
}

// powerLoss drops what r's file systems had not made durable, its server being gone. What the
// disk keeps of it is drawn from the steps so far, the abstract replica (drawFor: not the server,
// which an election maps to it) and the directory: a replay, or a schedule that restores this
// prefix, keeps the same whoever the leader.
func (p *Plugin) powerLoss(ctx context.Context, r *Replica) error {
	for _, d := range p.disks[r.Index] {
		seed := p.drawFor(r, d.rel)
		dctx, cancel := context.WithTimeout(ctx, p.c.Spec.StepTimeout)
		loss, err := d.fs.Drop(dctx, seed)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: power loss: %w", r.Name, err)
		}
		p.act(r, "power loss of %s (%s): %s", d.rel, p.disk, loss)
	}
	return nil
}

// recordDiskUse records what the file systems served during the step.
func (p *Plugin) recordDiskUse() {
	if p.disks == nil {
		return
	}
	var ops int64
	var busy time.Duration
	for _, ds := range p.disks {
		for _, d := range ds {
			s := d.fs.Stats()
			ops, busy = ops+s.Ops, busy+s.Busy
		}
	}
	p.act(nil, "file systems: %d operations that change or sync, %v in them", ops-p.diskUse.Ops, (busy - p.diskUse.Busy).Round(time.Microsecond))
	p.diskUse = powerfs.Stats{Ops: ops, Busy: busy}
}

// failDisks makes each of r's file systems a failing disk, drawn from seed and the directory,
// until healDisks.
func (p *Plugin) failDisks(r *Replica, seed uint64) {
	for _, d := range p.disks[r.Index] {
		h := sha256.Sum256(fmt.Appendf(nil, "%d %s", seed, d.rel))
		e := powerfs.DrawErrors(binary.BigEndian.Uint64(h[:]), p.readErrors)
		d.fs.Fail(e)
		p.act(r, "disk errors on %s: %s", d.rel, e)
	}
	r.diskFails = true
}

// spendDisks makes r's failing disks fail from now on, and records those that had not failed
// yet.
func (p *Plugin) spendDisks(r *Replica) {
	for _, d := range p.disks[r.Index] {
		if left := d.fs.Spend(); left > 0 {
			p.act(r, "disk of %s fails from now on, its divergence over: %d of its drawn bytes were never written", d.rel, left)
		}
	}
}

// healDisks ends the failure of r's file systems and records what they refused.
func (p *Plugin) healDisks(r *Replica) {
	for _, d := range p.disks[r.Index] {
		p.act(r, "disk of %s healed: %s", d.rel, d.fs.Heal())
	}
	r.diskFails = false
}

// corruptDisk corrupts one file of one of r's file systems, both drawn from seed, its server
// being gone. A file system with no data to corrupt yields to the next; with none anywhere
// nothing is corrupted, and the record says so.
func (p *Plugin) corruptDisk(ctx context.Context, r *Replica, seed uint64) error {
	ds := p.disks[r.Index]
	first := int(seed % uint64(len(ds)))
	for i := range ds {
		d := ds[(first+i)%len(ds)]
		cctx, cancel := context.WithTimeout(ctx, p.c.Spec.StepTimeout)
		c, err := d.fs.Corrupt(cctx, seed)
		cancel()
		if errors.Is(err, powerfs.ErrNothingToCorrupt) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: corrupt %s: %w", r.Name, d.rel, err)
		}
		p.act(r, "corrupted %s: %s", d.rel, c)
		return nil
	}
	p.act(r, "corruption: no file of %s holds data", r.Name)
	return nil
}
