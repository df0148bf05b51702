package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/fsutil"
)

// DiskState is implemented by a system whose replicas keep their whole state in files while
// their servers are down: what a restart reads is all there is. The kit can then save a cluster
// whose every server is down (in Q/C/Z, after every divergence) and restore it later in place
// of replaying the steps that led there (cem.Restorer), so that a campaign's schedules that
// share a prefix run it once. The system must keep nothing of its own between steps that a
// restore would lose (a connection is fine: a restart makes a new one).
type DiskState interface {
	// StateFiles names the files and directories, relative to r.Dir, that hold replica r's
	// state: its data, its logs of operations, its identity. Files that every start writes
	// anew (a configuration) and the server's output log are not state.
	StateFiles(c *Cluster, r *Replica) []string
}

// savedKit is the kit's own part of a saved cluster: what it knows of the cluster besides the
// abstract state, which the steps give back.
type savedKit struct {
	Conc        []int       `json:"conc"`
	Replicas    []savedRepl `json:"replicas"`
	Divergences int         `json:"divergences"`
	Written     []string    `json:"written"`
	Acked       []cem.Write `json:"acked"`
	Saved       cem.Saved   `json:"saved"`
	// Held is what servers that lost power held then, by concrete replica (checkKept).
	Held map[int]held `json:"held,omitempty"`
	// Subnet is the cluster's network (CIDR) in network namespaces, "" on loopback: a restored
	// cluster takes it again, its servers having stored their peers' addresses (etcd's members).
	Subnet string `json:"subnet,omitempty"`
}

type savedRepl struct {
	Starts        int  `json:"starts"`
	Promoted      bool `json:"promoted"`
	StartLink     int  `json:"start_link"`
	History       int  `json:"history"`
	LinkedHistory int  `json:"linked_history"`
}

// kitFile holds savedKit in a save's directory; the replicas' files are under their names.
const kitFile = "kit.json"

// Save copies every replica's state files into dir and what the kit knows of the cluster into
// dir/kit.json. Every server must be down: only then is the state entirely on disk.
func (p *Plugin) Save(ctx context.Context, dir string) (cem.Saved, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ds, err := p.diskState("save")
	if err != nil {
		return cem.Saved{}, err
	}
	if p.c == nil {
		return cem.Saved{}, p.errorf("save", errors.New("no cluster; Start one first"))
	}
	if p.failed != nil {
		return cem.Saved{}, p.errorf("save", fmt.Errorf("the cluster is out of step with its schedule: %w", p.failed))
	}
	for _, r := range p.c.Replicas {
		if r.running() {
			return cem.Saved{}, p.errorf("save", fmt.Errorf("%s is running: a cluster is saved only when every server is down, its state all on disk", r.Name))
		}
	}
	paths := p.statePaths(ds)
	saved, err := fsutil.Digest(p.c.Spec.Dir, paths)
	if err != nil {
		return cem.Saved{}, p.errorf("save", err)
	}
	for _, rel := range paths {
		if err := fsutil.CopyTree(filepath.Join(p.c.Spec.Dir, rel), filepath.Join(dir, rel)); err != nil {
			return cem.Saved{}, p.errorf("save", err)
		}
	}
	k := savedKit{
		Conc: p.conc, Divergences: p.divergences, Written: p.written, Acked: p.acked, Held: p.held,
		Saved: cem.Saved{Paths: saved.Paths, Bytes: saved.Bytes, Digest: saved.Digest},
	}
	if p.c.net != nil {
		k.Subnet = p.c.net.Subnet.String()
	}
	for _, r := range p.c.Replicas {
		k.Replicas = append(k.Replicas, savedRepl{Starts: r.Starts, Promoted: r.promoted, StartLink: r.startLink, History: r.history, LinkedHistory: r.linkedHistory})
	}
	data, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return cem.Saved{}, p.errorf("save", err)
	}
	if err := os.WriteFile(filepath.Join(dir, kitFile), data, 0o644); err != nil {
		return cem.Saved{}, p.errorf("save", err)
	}
	return k.Saved, nil
}

// Restore sets up the cluster of spec as Start does, but starts no server: it copies back the
// state files that Save put in dir, checks that they are the saved ones byte for byte, and
// takes up the kit's state after steps.
func (p *Plugin) Restore(ctx context.Context, spec cem.ClusterSpec, dir string, steps []string) (res cem.Restored, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ds, err := p.diskState("restore")
	if err != nil {
		return res, err
	}
	var k savedKit
	data, err := os.ReadFile(filepath.Join(dir, kitFile))
	if err == nil {
		err = json.Unmarshal(data, &k)
	}
	if err != nil {
		return res, p.errorf("restore", fmt.Errorf("%s is no saved cluster: %w", dir, err))
	}
	var subnet *net.IPNet
	if k.Subnet != "" {
		if _, subnet, err = net.ParseCIDR(k.Subnet); err != nil {
			return res, p.errorf("restore", fmt.Errorf("%s: subnet: %w", filepath.Join(dir, kitFile), err))
		}
	}
	if err := p.open(ctx, spec, subnet); err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(p.errorf("restore", err), p.teardown(ctx))
		}
	}()
	if len(k.Conc) != len(p.conc) || len(k.Replicas) != len(p.c.Replicas) {
		return res, fmt.Errorf("%s saved %d replicas, the cluster has %d", dir, len(k.Conc), len(p.conc))
	}
	state := p.state
	for i, text := range steps {
		t, err := aem.ParseTransition(text)
		if err != nil {
			return res, fmt.Errorf("step %d: %w", i+1, err)
		}
		_, next, ok := aem.Take(p.model, p.params, &state, &t)
		if !ok {
			return res, fmt.Errorf("step %d: %s is not enabled in state %s", i+1, text, state.String())
		}
		state = next
	}
	if !aem.AllDown(p.model, &state) {
		return res, fmt.Errorf("after %d steps the model has servers running (%s): their state is not on disk", len(steps), state.String())
	}
	if err := p.prepare(ctx); err != nil {
		return res, err
	}
	paths := p.statePaths(ds)
	for _, rel := range paths {
		if err := p.copyBack(filepath.Join(dir, rel), filepath.Join(p.c.Spec.Dir, rel)); err != nil {
			return res, fmt.Errorf("copy back %s: %w", rel, err)
		}
	}
	if err := p.syncDisks(); err != nil {
		return res, err
	}
	got, err := fsutil.Digest(p.c.Spec.Dir, paths)
	if err != nil {
		return res, err
	}
	if got.Digest != k.Saved.Digest {
		return res, fmt.Errorf("the restored files (%d, sha256 %s) are not those saved (%d, sha256 %s)", len(got.Paths), got.Digest, len(k.Saved.Paths), k.Saved.Digest)
	}
	copy(p.conc, k.Conc)
	for i, r := range p.c.Replicas {
		sr := k.Replicas[i]
		r.Starts, r.promoted, r.startLink, r.history, r.linkedHistory = sr.Starts, sr.Promoted, sr.StartLink, sr.History, sr.LinkedHistory
	}
	p.state, p.step, p.divergences, p.written, p.acked, p.held = state, len(steps)-1, k.Divergences, k.Written, k.Acked, k.Held
	for a := range p.conc { // every replica is down, each as its last divergence failed it
		p.replica(a).failed = p.kindIn(&state, a)
	}
	p.steps = slices.Clone(steps)
	p.act(nil, "restored the state after step %d from %s: %d files and directories, %d bytes, sha256 %s, as saved",
		len(steps), dir, len(got.Paths), got.Bytes, got.Digest)
	res = cem.Restored{Saved: cem.Saved{Paths: got.Paths, Bytes: got.Bytes, Digest: got.Digest}, Actions: p.actions}
	p.actions = nil
	return res, nil
}

// copyBack replaces to with a copy of the saved src. A state directory on a power-loss file
// system is a mount point, which stays: its contents are replaced, and its mode set.
func (p *Plugin) copyBack(src, to string) error {
	if !p.needs.Disks {
		if err := os.RemoveAll(to); err != nil {
			return err
		}
		return fsutil.CopyTree(src, to)
	}
	if err := fsutil.Empty(to); err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.Chmod(to, info.Mode().Perm()); err != nil {
		return err
	}
	return fsutil.CopyTree(src, to)
}

// diskState returns the system's DiskState, or an error naming op when it has none.
func (p *Plugin) diskState(op string) (DiskState, error) {
	if p.aboutErr != nil {
		return nil, p.aboutErr
	}
	ds, ok := p.sys.(DiskState)
	if !ok {
		return nil, p.errorf(op, errors.New("the system keeps state that is not on disk (it implements no kit.DiskState)"))
	}
	if len(p.about.Services) > 0 {
		return nil, p.errorf(op, errors.New("the cluster's services keep state that a saved cluster does not hold"))
	}
	return ds, nil
}

// statePaths lists every replica's state files, relative to the cluster's directory.
func (p *Plugin) statePaths(ds DiskState) []string {
	var paths []string
	for _, r := range p.c.Replicas {
		for _, f := range ds.StateFiles(p.c, r) {
			paths = append(paths, filepath.Join(r.Name, f))
		}
	}
	return paths
}
