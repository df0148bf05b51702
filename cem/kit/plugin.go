package kit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/fault"
	"github.com/modulo-testing/modulo/cem/netns"
	"github.com/modulo-testing/modulo/cem/powerfs"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/fsutil"
)

// teardownTimeout bounds how long Teardown waits for SIGKILLed servers to be gone. It does not
// use the caller's context: a cancelled run (Ctrl-C) must still end every server.
const teardownTimeout = 10 * time.Second

// The kit's own configuration key, which every kit plugin accepts besides its system's keys.
// Its values are for testing the oracle only; never set it to test a system.
//
// break_realisation = "leave-behind": after the schedule's last step the kit writes ProbeKey
// to the whole cluster and waits until every replica holds it, then leaves one replica behind,
// so that the executor must report it. A quorum model crashes that replica, leaves it down
// (unreadable) and, when a quorum remains, writes BehindKey without it; a link model unlinks a
// replica that follows another and writes BehindKey to the root of its tree, which the model
// still links it to.
//
// break_realisation = "skip-relink" (link models): no convergence links a recovering replica
// to its source, so that schedules end with replicas of one tree that really differ, and a
// shorter schedule can still show it (modulo shrink is tested with it).
//
// break_realisation = "lose-write" (quorum models whose system is a Deleter): after the
// schedule's last step the kit deletes the key of the schedule's first acknowledged write,
// through the leader, and waits until every replica has caught up: the replicas agree, and
// the write they acknowledged is gone from all of them.
//
// break_realisation = "skip-wait": every convergence but the last returns without waiting for
// the cluster to catch up, so that a check made right after it sees replicas that differ, which
// the last convergence, which waits, heals.
//
// durable_start (DRMs with power losses; default true): once the cluster has started and
// caught up, everything its servers wrote is made durable, as on a cluster that has run longer
// than the kernel's writeback interval (30 s) before its first failure. With false, the first
// power loss also drops what the servers wrote at their first start and never synced
// (ZooKeeper's first snapshot, which it does not fsync).
//
// disk_unit, disk_keeps, disk_names (DRMs with power losses): the disk a power loss happens
// on (powerfs.Disk), with which of each file's unsynced units survive as drawn from the steps
// so far. disk_unit: "page" (the default: 4 KiB, as the page cache writes back), "sector" (512
// bytes, as a disk writes), or "byte" (a file's last unsynced write torn at a byte, which no
// disk does: the default until 2026-11-29). disk_keeps: "prefix" (the default: the first
// units in the order written; with "byte", the tear), "subset" (any of them), "none" (every unsynced byte
// dropped, and nothing else, as LazyFS's clear-cache does). disk_names: "journal" (the
// default: a name is durable at the next fsync of anything, as ext4 and XFS commit one
// journal) or "strict" (only once its directory is fsynced, as POSIX promises). torn_writes,
// the key before them, is refused with the words that replace it.
//
// disk_errors_on_reads (DRMs with disk errors; default false): a failing disk answers reads
// of the replica's state with EIO too, from the byte its writes fail at (fault.DiskError).
//
// network: "namespaces" gives each replica a network namespace and an address of its own
// (cem/netns), where its server listens on the system's ordinary ports (About.Ports), and ends
// them with the cluster; "loopback" runs every server on 127.0.0.1 at ports of the cluster's
// block (ClusterSpec.BasePort). Unset, it is namespaces where the plugin names its ports and
// the host can make namespaces (root, or CAP_NET_ADMIN), else loopback; Info says which, and
// why not namespaces (cem.Capabilities.Network). DRMs with partitions need namespaces.
//
// workload (quorum models whose system is a Seeder): "create" (the default) makes each write
// of a schedule a key of its own, k<step>.<j>; "update" makes write j of step s set initial key
// (s+j-1) mod n of the n the Seeder wrote (the Modulo paper's ZooKeeper writes set one of five
// keys), so that a stale copy of a key shows as an older value rather than as an extra key.
// Every value is still the schedule's ID and the write's name, k<step>.<j>, so that no two
// writes of a schedule have the same value.
const (
	DurableStartKey   = "durable_start"
	DiskUnitKey       = "disk_unit"
	DiskKeepsKey      = "disk_keeps"
	DiskNamesKey      = "disk_names"
	DiskReadErrorsKey = "disk_errors_on_reads"
	NetworkKey        = "network"
	NetworkLoopback   = cem.NetworkLoopback
	NetworkNamespaces = cem.NetworkNamespaces
	WorkloadKey       = "workload"
	WorkloadCreate    = "create"
	WorkloadUpdate    = "update"
	BreakKey          = "break_realisation"
	BreakLeaveBehind  = "leave-behind"
	BreakSkipRelink   = "skip-relink"
	BreakLoseWrite    = "lose-write"
	BreakSkipWait     = "skip-wait"
	BreakFailNothing  = "fail-nothing"
	ProbeKey          = "modulo-probe"
	BehindKey         = "modulo-behind"
)

// Plugin is a cem.CEM built from a System: one cluster at a time.
type Plugin struct {
	// mu serialises the CEM methods: the plugin protocol serves each call on a goroutine of its
	// own, and a Teardown may come while a step still runs.
	mu       sync.Mutex
	about    About
	sys      System
	aboutErr error // what is wrong with About; every method reports it

	c       *Cluster // nil before Start and after Teardown
	model   aem.Model
	params  aem.Params
	state   aem.State // the abstract state before the next step
	conc    []int     // conc[a] is the concrete replica that realises abstract replica a
	eng     engine
	brk     string // the break_realisation value
	update  bool   // workload = "update"
	failed  error  // set when a step failed: the cluster no longer matches state
	step    int    // index of the step being realised, -1 during Start
	actions []cem.Action
	// divergences counts the schedule's divergences so far (Cluster.Divergences); written
	// lists the keys its divergences wrote, in order, for the link engine's probe.
	divergences int
	written     []string
	// acks says that the system acknowledges a write as durable when Write returns (a quorum
	// system); writes are the step's writes, acked those of the whole schedule.
	acks   bool
	async  bool // the system acknowledges before replicating (Asynchronous)
	writes []cem.Write
	acked  []cem.Write
	// alarms are the step's alarms raised while it was realised (brokenAlarm).
	alarms []cem.Alarm
	// held is, per concrete replica down after a power loss on a link model, what its server
	// held then (checkKept).
	held map[int]held
	// drm is the cluster's DRM, whose failure kinds (package cem/fault) the kit asks of each
	// failing replica; needs is what they need set up: with Disks, disks are every
	// replica's file systems, by concrete index, and diskUse what they had served at the
	// last step's end. steps are the schedule's transitions so far, which seed the tears.
	drm                      drms.DRM
	needs                    fault.Needs
	durableStart, readErrors bool
	disk                     powerfs.Disk // what a power loss keeps
	disks                    [][]disk
	diskUse                  powerfs.Stats
	steps                    []string
	// detected is the step in which the kit last waited the system's detection time.
	detected int
}

// engine realises the transitions of one family of models.
type engine interface {
	// start brings the freshly started servers to the model's initial state.
	start(ctx context.Context) error
	// check compares the servers with the abstract state before a step.
	check() error
	// apply realises t, which leads from p.state to next.
	apply(ctx context.Context, t *aem.Transition, next *aem.State) error
	// group is abstract replica a's ReplicaData.Group.
	group(a int) int
	// leaveBehind realises break_realisation = "leave-behind".
	leaveBehind(ctx context.Context) error
	// policy reads what the system's configuration decides of the engine, once it is
	// prepared.
	policy() error
}

var (
	_ cem.CEM      = (*Plugin)(nil)
	_ cem.Restorer = (*Plugin)(nil)
)

// New returns a plugin built from sys, with no cluster.
func New(about About, sys System) *Plugin {
	p := &Plugin{about: about, sys: sys}
	if about.Name == "" || len(about.DRMs)+len(about.Declare) == 0 || about.PortsPerReplica < 1 {
		p.aboutErr = fmt.Errorf("plugin %q: About needs a name, DRMs (or declared ones) and at least one port per replica", about.Name)
	} else if len(about.Ports) > 0 && len(about.Ports) != about.PortsPerReplica {
		p.aboutErr = fmt.Errorf("plugin %q: About names %d ports (Ports), not its %d per replica", about.Name, len(about.Ports), about.PortsPerReplica)
	}
	for _, d := range about.Declare {
		if _, err := d.DRM(about.Name); err != nil {
			p.aboutErr = err
		}
	}
	if err := servicesError(about, sys); err != nil {
		p.aboutErr = err
	}
	return p
}

// lookupDRM finds the DRM named name: one the plugin declares, or one of the catalogue's that it
// realises, composed with the failure kinds the name adds ("qcz+pause", drms.Compose).
func (p *Plugin) lookupDRM(name string) (drms.DRM, error) {
	if d, ok, err := drms.Declared(name, p.about.Name, p.about.Declare); ok {
		return d, err
	}
	base, added, err := drms.SplitName(name)
	if err != nil {
		return drms.DRM{}, err
	}
	d, err := drms.Lookup(base)
	if err != nil {
		return d, err
	}
	if d.Plugin != p.about.Name || !slices.Contains(p.about.DRMs, d.Name) {
		return d, fmt.Errorf("DRM %s is realised by the %s plugin, not by %s", d.Name, d.Plugin, p.about.Name)
	}
	return drms.Compose(d, added)
}

// Serve serves the plugin built from sys to the modulo that started this process; a plugin's
// main calls it and nothing else.
func Serve(about About, sys System) { cem.Serve(New(about, sys)) }

// Configure takes config, the plugin's section, as Info does, and asks nothing of the server
// binary or of the host: for a plugin's tests of its configuration, which the short suite runs
// without running a server's binary or making a network namespace.
func (p *Plugin) Configure(config []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aboutErr != nil {
		return p.aboutErr
	}
	_, err := p.configure(config, "")
	return err
}

// Info describes the plugin and the server binary that config names.
func (p *Plugin) Info(ctx context.Context, config []byte) (cem.Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aboutErr != nil {
		return cem.Info{}, p.aboutErr
	}
	own, err := p.configure(config, "")
	if err != nil {
		return cem.Info{}, err
	}
	v, err := p.sys.Version(ctx)
	if err != nil {
		return cem.Info{}, fmt.Errorf("%s: %w", p.about.Name, err)
	}
	_, restorable := p.sys.(DiskState)
	restorable = restorable && len(p.about.Services) == 0 // a saved cluster holds no service's state
	version := p.about.Version
	if version == "" {
		version = build.Version + "+" + exeDigest()
	}
	releases, setting, err := p.about.Releases.found()
	if err != nil {
		return cem.Info{}, fmt.Errorf("%s: %w", p.about.Name, err)
	}
	return cem.Info{
		Name:           p.about.Name,
		Version:        version,
		ServerVersion:  v,
		Releases:       releases,
		ReleaseSetting: setting,
		Capabilities: cem.Capabilities{
			DRMs:            p.drmNames(),
			Declared:        slices.Clone(p.about.Declare),
			PortsPerReplica: p.about.PortsPerReplica,
			ServicePorts:    p.about.servicePorts(),
			Restore:         restorable,
			Network:         p.network(own.Network),
			Failures:        fault.Describe(p.host(own.Network)),
		},
	}, nil
}

// host is what this host and the system offer the failure kinds, with the table's network key
// set to key.
func (p *Plugin) host(key string) fault.Host {
	var h fault.Host
	if _, ok := p.sys.(DiskState); !ok {
		h.Disks = errors.New("the system names no state directories (kit.DiskState)")
	} else if _, err := os.Stat("/dev/fuse"); err != nil {
		h.Disks = fmt.Errorf("no FUSE here: %w", err)
	}
	if network, why, _ := strings.Cut(p.network(key), ": "); network != NetworkNamespaces {
		h.Network = errors.New(why)
	}
	return h
}

// kinds are the failure kinds of DRM d, which this host and the system must offer.
func (p *Plugin) kinds(d drms.DRM, h fault.Host) ([]fault.Kind, error) {
	var kinds []fault.Kind
	for _, f := range d.Kinds() {
		k, err := fault.Of(f)
		if err != nil {
			return nil, fmt.Errorf("DRM %s: %w", d.Name, err)
		}
		if err := k.Available(h); err != nil {
			return nil, fmt.Errorf("DRM %s fails replicas by %s, which the %s plugin cannot here: %w", d.Name, f, p.about.Name, err)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// kindOf is how divergence t fails abstract replica a: the kind t names, or the DRM's one.
func (p *Plugin) kindOf(t *aem.Transition, a int) fault.Kind {
	f := aem.NotInLayout
	if t.Failures != nil {
		f = t.Failures[a]
	}
	k, err := p.kind(f)
	if err != nil {
		panic(fmt.Sprintf("divergence %s fails replica %d by no kind: %v", t, a, err)) // aem.Take checked t
	}
	return k
}

// network is the network a cluster gets with the table's network key set to key:
// NetworkNamespaces, or NetworkLoopback, ": " and why not namespaces. Unset, it is namespaces
// where the plugin names its ports and this host can make them.
func (p *Plugin) network(key string) string {
	switch {
	case key == NetworkLoopback:
		return NetworkLoopback + ": the table sets " + NetworkKey + " = " + strconv.Quote(NetworkLoopback)
	case key == NetworkNamespaces:
		return NetworkNamespaces
	case len(p.about.Ports) == 0:
		return NetworkLoopback + ": the " + p.about.Name + " plugin names no ports of its own (kit.About.Ports)"
	}
	if err := namespacesAvailable(); err != nil {
		return NetworkLoopback + ": this host cannot make network namespaces: " + err.Error()
	}
	return NetworkNamespaces
}

// namespacesAvailable is netns.Available, asked once per plugin process: it makes and removes
// a network.
var namespacesAvailable = sync.OnceValue(netns.Available)

// drmNames lists the DRMs the plugin realises: the catalogue's, then its own.
func (p *Plugin) drmNames() []string {
	names := slices.Clone(p.about.DRMs)
	for _, d := range p.about.Declare {
		names = append(names, d.Name)
	}
	return names
}

// exeDigest is the first 12 hex digits of the SHA-256 of the running executable: a plugin whose
// About sets no version is versioned by its build, so that a changed binary is a new version
// and a campaign does not resume over records of the old one.
var exeDigest = sync.OnceValue(func() string {
	sum, err := fsutil.FileSHA256("/proc/self/exe")
	if err != nil {
		return "unknown"
	}
	return sum[:12]
})

// configure hands the plugin's TOML section to the system and returns the kit's own keys, as
// the section and the settings of its preset for drm (a Presetter's; drm empty: none) give
// them.
func (p *Plugin) configure(data []byte, drm string) (kitConfig, error) {
	prefix := p.about.Name + " config: "
	own := kitConfig{DurableStart: true}
	ownMD, err := toml.Decode(string(data), &own)
	if err != nil {
		return kitConfig{}, errors.New(prefix + err.Error())
	}
	if ps, ok := p.sys.(Presetter); ok && drm != "" {
		var named struct {
			Preset string `toml:"preset"`
		}
		if _, err := toml.Decode(string(data), &named); err == nil && named.Preset != "" {
			// The preset first, then the section again over it: the section's keys win. A
			// preset that does not exist is the system's to refuse, by its name.
			own = kitConfig{DurableStart: true}
			if err := ps.Presets().Decode(named.Preset, drm, &own); err != nil {
				own = kitConfig{DurableStart: true}
			}
			if _, err := toml.Decode(string(data), &own); err != nil {
				return kitConfig{}, errors.New(prefix + err.Error())
			}
		}
	}
	notOwn := map[string]bool{} // the keys that the kit's own struct left
	for _, k := range ownMD.Undecoded() {
		notOwn[k.String()] = true
	}
	decoded := false
	decode := func(v any) error {
		decoded = true
		md, err := toml.Decode(string(data), v)
		if err != nil {
			return err
		}
		var unknown []string
		for _, k := range md.Undecoded() {
			if notOwn[k.String()] {
				unknown = append(unknown, strconv.Quote(k.String()))
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return fmt.Errorf("unknown key %s", strings.Join(unknown, ", "))
		}
		return nil
	}
	if c, ok := p.sys.(Configurable); ok {
		if err := c.Configure(decode); err != nil {
			return kitConfig{}, errors.New(prefix + err.Error())
		}
	}
	if !decoded {
		if err := decode(&struct{}{}); err != nil {
			return kitConfig{}, errors.New(prefix + err.Error())
		}
	}
	switch own.Break {
	case "", BreakLeaveBehind, BreakSkipRelink, BreakLoseWrite, BreakSkipWait, BreakFailNothing:
	default:
		return kitConfig{}, fmt.Errorf("%s%s must be %q, %q, %q, %q, %q or unset, got %q", prefix, BreakKey, BreakLeaveBehind, BreakSkipRelink, BreakLoseWrite, BreakSkipWait, BreakFailNothing, own.Break)
	}
	switch own.Network {
	case "", NetworkLoopback, NetworkNamespaces:
	default:
		return kitConfig{}, fmt.Errorf("%s%s must be %q or %q, got %q", prefix, NetworkKey, NetworkLoopback, NetworkNamespaces, own.Network)
	}
	switch own.Workload {
	case "", WorkloadCreate, WorkloadUpdate:
	default:
		return kitConfig{}, fmt.Errorf("%s%s must be %q or %q, got %q", prefix, WorkloadKey, WorkloadCreate, WorkloadUpdate, own.Workload)
	}
	if own.TornWrites != nil {
		return kitConfig{}, fmt.Errorf("%storn_writes is gone: %s = %q drops every unsynced byte (torn_writes = false); %s = %q with %s = %q tears the last write at a byte (true); docs/configuration.md",
			prefix, DiskKeepsKey, powerfs.KeepNone, DiskUnitKey, "byte", DiskKeepsKey, powerfs.KeepPrefix)
	}
	if own.disk, err = powerfs.ParseDisk(own.DiskUnit, own.DiskKeeps, own.DiskNames); err != nil {
		return kitConfig{}, errors.New(prefix + err.Error())
	}
	return own, nil
}

// kitConfig holds the kit's own configuration keys.
type kitConfig struct {
	Break        string `toml:"break_realisation"`
	DurableStart bool   `toml:"durable_start"`
	DiskUnit     string `toml:"disk_unit"`
	DiskKeeps    string `toml:"disk_keeps"`
	DiskNames    string `toml:"disk_names"`
	TornWrites   *bool  `toml:"torn_writes"` // refused: the disk_ keys replace it
	disk         powerfs.Disk
	ReadErrors   bool   `toml:"disk_errors_on_reads"`
	Workload     string `toml:"workload"`
	Network      string `toml:"network"`
}

// newEngine picks the engine of d's model and checks that the system has what it needs; the
// engine's policy, read once the system is prepared, checks that its waits fit in the step
// timeout.
func (p *Plugin) newEngine(d drms.DRM) (engine, error) {
	need := func(ok bool, iface string) error {
		if ok {
			return nil
		}
		return fmt.Errorf("DRM %s needs the system to implement kit.%s", d.Name, iface)
	}
	quorum := d.Model.Rules().Quorum()
	p.acks = quorum
	if quorum {
		if p.brk == BreakSkipRelink {
			return nil, fmt.Errorf("%s = %q is for link models; DRM %s has a quorum model", BreakKey, BreakSkipRelink, d.Name)
		}
		q, ok := p.sys.(Quorum)
		if err := need(ok, "Quorum"); err != nil {
			return nil, err
		}
		if _, ok := p.sys.(Deleter); p.brk == BreakLoseWrite && !ok {
			return nil, fmt.Errorf("%s = %q needs the system to implement kit.Deleter", BreakKey, BreakLoseWrite)
		}
		if _, ok := p.sys.(Seeder); p.update && !ok {
			return nil, fmt.Errorf("%s = %q updates initial keys, and the %s plugin writes no initial data (kit.Seeder)", WorkloadKey, WorkloadUpdate, p.about.Name)
		}
		logs, _ := p.sys.(LogReader)
		return &quorumEngine{p: p, q: q, logs: logs}, nil
	}
	if p.update {
		return nil, fmt.Errorf("%s = %q is for quorum models; DRM %s has a link model", WorkloadKey, WorkloadUpdate, d.Name)
	}
	if p.brk == BreakLoseWrite {
		return nil, fmt.Errorf("%s = %q is for quorum models; DRM %s has a link model, whose writes are not acknowledged as durable", BreakKey, BreakLoseWrite, d.Name)
	}
	variant := d.Model.Rules()
	if !slices.Contains(aem.AllRules, variant) {
		return nil, fmt.Errorf("DRM %s: the kit realises no rule set %q (model %s)", d.Name, variant, d.Model.Name())
	}
	l, ok := p.sys.(Linker)
	if err := need(ok, "Linker"); err != nil {
		return nil, err
	}
	e := &linkEngine{p: p, l: l, variant: variant, cutsLinks: d.Partition, probe: true}
	e.snap, ok = p.sys.(Snapshotter) // also the fresh copy of a refused link (ErrRefused)
	if variant == aem.CrashLinkRules {
		if err := need(ok, "Snapshotter"); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Start starts spec.Replicas servers, each with a directory and ports of its own, brings them
// to the model's initial state and waits until the cluster has caught up. When it does not
// before the step timeout, it returns a *cem.NotReachedError with Step -1.
func (p *Plugin) Start(ctx context.Context, spec cem.ClusterSpec) (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.open(ctx, spec, nil); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(p.errorf("start", err), p.teardown(ctx))
		}
	}()
	if err := p.prepare(ctx); err != nil {
		return err
	}
	if err := p.startServices(ctx); err != nil {
		return err
	}
	order, oneByOne, err := p.startOrder(ctx, p.c.Replicas)
	if err != nil {
		return err
	}
	for i, r := range order {
		if err := p.startServer(r); err != nil {
			return err
		}
		if oneByOne {
			if err := p.awaitReady(ctx, r, order[:i]...); err != nil {
				return err
			}
		}
	}
	for _, r := range p.c.Replicas {
		if err := p.awaitReady(ctx, r, p.c.Replicas...); err != nil {
			return err
		}
	}
	if err := p.eng.start(ctx); err != nil {
		return err
	}
	if p.needs.Disks && p.durableStart {
		p.act(nil, "%s: everything the started cluster wrote is durable", DurableStartKey)
		return p.syncDisks()
	}
	return nil
}

// open checks spec and sets up the plugin for a new cluster in the model's initial state, with
// no directory made and no server started. In network namespaces the cluster's subnet is
// subnet, where not nil (a restored cluster's: its servers may have stored their peers'
// addresses), else one of its own.
func (p *Plugin) open(ctx context.Context, spec cem.ClusterSpec, subnet *net.IPNet) (err error) {
	if p.aboutErr != nil {
		return p.aboutErr
	}
	if p.c != nil {
		return p.errorf("start", errors.New("a cluster is already running; tear it down first"))
	}
	d, err := p.lookupDRM(spec.DRM)
	if err != nil {
		return p.errorf("start", err)
	}
	params := aem.Params{Ops: spec.Ops, Replicas: spec.Replicas}
	if err := params.Validate(); err != nil {
		return p.errorf("start", err)
	}
	if spec.Dir == "" {
		return p.errorf("start", errors.New("the cluster spec has no directory"))
	}
	own, err := p.configure(spec.Config, spec.DRM)
	if err != nil {
		return err
	}
	p.brk, p.durableStart, p.disk, p.readErrors, p.update = own.Break, own.DurableStart, own.disk, own.ReadErrors, own.Workload == WorkloadUpdate
	if spec.StepTimeout <= 0 {
		spec.StepTimeout = cem.DefaultStepTimeout
	}
	eng, err := p.newEngine(d)
	if err != nil {
		return p.errorf("start", err)
	}
	kinds, err := p.kinds(d, p.host(own.Network))
	if err != nil {
		return p.errorf("start", err)
	}
	needs := fault.NeedsOf(kinds)
	needs.Network = needs.Network || d.Partition // S/N/R's link failures
	ppr := p.about.PortsPerReplica
	network, why, _ := strings.Cut(p.network(own.Network), ": ")
	switch {
	case needs.Network && network == NetworkLoopback:
		return p.errorf("start", fmt.Errorf("DRM %s realises failures as partitions, which need %s = %q, and %s", d.Name, NetworkKey, NetworkNamespaces, why))
	case network == NetworkNamespaces && len(p.about.Ports) == 0:
		return p.errorf("start", fmt.Errorf("%s = %q: the %s plugin names no ports of its own (kit.About.Ports)", NetworkKey, NetworkNamespaces, p.about.Name))
	}
	var nw *netns.Network
	if network == NetworkNamespaces {
		if nw, err = netns.New(ctx, spec.Replicas+len(p.about.Services), spec.Dir, subnet); err != nil {
			if needs.Network {
				return p.errorf("start", fmt.Errorf("DRM %s realises failures as partitions, and this host cannot make the networks they need: %w", d.Name, err))
			}
			return p.errorf("start", fmt.Errorf("%s = %q: %w", NetworkKey, NetworkNamespaces, err))
		}
	} else if err := proc.CheckPortsFree(spec.BasePort, spec.Replicas*ppr+p.about.servicePorts()); err != nil {
		return p.errorf("start", err)
	}

	c := &Cluster{Spec: spec, p: p, net: nw}
	p.conc = make([]int, spec.Replicas)
	for i := range spec.Replicas {
		name := p.about.Name + "-" + strconv.Itoa(i)
		r := &Replica{Index: i, Name: name, Dir: filepath.Join(spec.Dir, name), Host: "127.0.0.1", link: aem.NoSource, startLink: aem.NoSource, cutFrom: aem.NoSource}
		if nw != nil {
			r.Host, r.Ports, r.NetNS = nw.IP(i).String(), slices.Clone(p.about.Ports), nw.NS(i)
		} else {
			for k := range ppr {
				r.Ports = append(r.Ports, spec.BasePort+i*ppr+k)
			}
		}
		c.Replicas = append(c.Replicas, r)
		p.conc[i] = i
	}
	p.makeServices(c)
	p.c, p.model, p.params, p.eng = c, d.Model, params, eng
	p.state, p.failed, p.step, p.actions, p.divergences, p.written = d.Model.Init(params), nil, -1, nil, 0, nil
	p.writes, p.acked, p.held = nil, nil, nil
	a, ok := p.sys.(Asynchronous)
	p.async = ok && a.AcksBeforeReplicating(c)
	p.drm, p.needs, p.disks, p.diskUse, p.steps, p.detected = d, needs, nil, powerfs.Stats{}, nil, -2
	return nil
}

// prepare makes the cluster's directories and runs the system's Preparer and the engine's
// policy: everything before the first server starts.
func (p *Plugin) prepare(ctx context.Context) error {
	for _, r := range p.c.Replicas {
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return err
		}
	}
	for _, s := range p.c.Services {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return err
		}
	}
	if p.needs.Disks {
		if err := p.mountDisks(p.sys.(DiskState)); err != nil {
			return err
		}
	}
	if pr, ok := p.sys.(Preparer); ok {
		if err := p.call(ctx, "prepare", func(ctx context.Context) error { return pr.Prepare(ctx, p.c) }); err != nil {
			return err
		}
	}
	if err := p.syncDisks(); err != nil {
		return err
	}
	return p.eng.policy()
}

// Apply realises one transition of the schedule and waits until the cluster is in the state it
// describes.
func (p *Plugin) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	what := fmt.Sprintf("step %d", step.Index+1)
	if p.c == nil {
		return cem.StepReport{}, p.errorf(what, errors.New("no cluster; Start one first"))
	}
	if p.failed != nil {
		return cem.StepReport{}, p.errorf(what, fmt.Errorf("the cluster is out of step with its schedule: %w", p.failed))
	}
	t, err := aem.ParseTransition(step.Transition)
	if err != nil {
		return cem.StepReport{}, p.errorf(what, err)
	}
	own, next, ok := aem.Take(p.model, p.params, &p.state, &t)
	if !ok {
		return cem.StepReport{}, p.errorf(what, fmt.Errorf("%s is not enabled in state %s", step.Transition, p.state))
	}
	p.step, p.actions, p.writes, p.alarms = step.Index, nil, nil, nil
	p.steps = append(p.steps, step.Transition)
	// Where the system names lines that say it is stuck or its replication broken, the step's
	// are looked for in what each server logs from now, should its wait end at its deadline.
	stuckKinds := p.lineKinds(func(k LineKind) bool { return k.Stuck })
	brokenKinds := p.lineKinds(func(k LineKind) bool { return k.Broken })
	var logged map[int]int64
	if len(stuckKinds)+len(brokenKinds) > 0 {
		if logged, err = p.logSizes(); err != nil {
			return cem.StepReport{}, p.errorf(what, err)
		}
	}
	err = p.apply(ctx, &own, &next) // the model's own transition, with what the text leaves implicit
	ended, how := p.deadlineAlarms(err, &next, stuckKinds, brokenKinds, logged), "the system's word that it cannot go on"
	if len(ended) == 0 {
		if alarm, ok := p.exitedAlarm(err); ok {
			ended, how = []cem.Alarm{alarm}, "a server that exited on its own"
		}
	}
	if len(ended) > 0 {
		// The system's failure ended the step, judged now; the cluster is not where the model
		// is, so later steps are refused.
		p.alarms = append(p.alarms, ended...)
		p.state = next
		p.failed = fmt.Errorf("step %d (%s) ended with %s: %w", step.Index+1, step.Transition, how, err)
		err = nil
	}
	p.recordDiskUse()
	report := cem.StepReport{Writes: p.writes, Alarms: p.alarms}
	if err == nil {
		report.Observations = p.observe(ctx)
		if own.Kind == aem.Convergence {
			report.Alarms = append(report.Alarms, p.selfCheck(ctx)...)
		}
	}
	report.Actions = p.actions
	p.actions, p.writes, p.alarms = nil, nil, nil
	if err != nil {
		// Part of the step may have happened: later steps would realise something else.
		p.failed = fmt.Errorf("step %d (%s) failed", step.Index+1, step.Transition)
		return report, p.errorf(what, err)
	}
	return report, nil
}

// exited is the error of a server that exited though the kit did not stop it, if any.
func (p *Plugin) exited() error {
	for _, r := range p.c.Replicas {
		if r.proc != nil && !r.proc.Running() && !r.diskFails { // a failing disk may end its server
			return p.exitedError(r)
		}
	}
	return nil
}

// apply realises t, which leads from p.state to next.
func (p *Plugin) apply(ctx context.Context, t *aem.Transition, next *aem.State) error {
	if err := p.exited(); err != nil {
		return err
	}
	if err := p.eng.check(); err != nil {
		// A server that exited between the two looks is one that exited, not a realisation
		// out of step: ask again.
		if err := p.exited(); err != nil {
			return err
		}
		return &cem.NonconformantError{Step: p.step, Check: "process-state",
			Detail: fmt.Sprintf("before the step, the servers are not in the model's state %s: %v", p.state, err)}
	}
	if t.Kind == aem.Divergence {
		p.divergences++
	}
	if err := p.eng.apply(ctx, t, next); err != nil {
		return err
	}
	p.state = *next
	if slices.ContainsFunc(p.alarms, func(a cem.Alarm) bool { return a.Unrecoverable }) {
		return nil // a replica's server is gone for good: there is nothing to break
	}
	switch {
	case p.brk == BreakLeaveBehind && p.last(&p.state):
		return p.eng.leaveBehind(ctx)
	case p.brk == BreakLoseWrite && p.last(&p.state):
		return p.eng.(*quorumEngine).loseWrite(ctx)
	}
	return nil
}

// observe asks the system what it sees of every running, unsuspended replica.
// With SyncLogger, the kit reads how each replica was resynced from its log itself.
func (p *Plugin) observe(ctx context.Context) []cem.Observation {
	o, observer := p.sys.(Observer)
	sl, syncLogger := p.sys.(SyncLogger)
	if !observer && !syncLogger {
		return nil
	}
	var obs []cem.Observation
	for a := range p.conc {
		r := p.replica(a)
		if !r.running() || r.suspended {
			continue
		}
		fields := map[string]string{}
		if observer {
			err := p.call(ctx, "observe "+r.Name, func(ctx context.Context) (err error) {
				fields, err = o.Observe(ctx, p.c, r)
				return err
			})
			if err != nil {
				fields = map[string]string{"error": err.Error()}
			}
		}
		if r.cut || r.cutFrom != aem.NoSource {
			fields[cem.ObserveNetwork] = cem.CutOff
		}
		if syncLogger {
			sync, err := p.c.loggedKinds(r, sl.SyncLines())
			switch {
			case err != nil:
				fields["error"] = err.Error()
			case sync != "":
				fields[cem.ObserveSync] = sync
			}
		}
		obs = append(obs, cem.Observation{Replica: a, Fields: fields})
	}
	return obs
}

// selfCheck runs the system's own check on every online replica. A check that cannot be made
// is recorded as an action, not an alarm: the alarm is the system's to raise.
func (p *Plugin) selfCheck(ctx context.Context) []cem.Alarm {
	sc, ok := p.sys.(SelfChecker)
	if !ok {
		return nil
	}
	var alarms []cem.Alarm
	for a, on := range p.state.On {
		r := p.replica(a)
		if !on || !r.running() || r.suspended {
			continue
		}
		var problem string
		err := p.call(ctx, "self-check "+r.Name, func(ctx context.Context) (err error) {
			problem, err = sc.SelfCheck(ctx, r)
			return err
		})
		switch {
		case err != nil:
			p.act(r, "self-check not made: %v", err)
		case problem != "":
			p.act(r, "self-check: %s", problem)
			alarms = append(alarms, cem.Alarm{Replica: a, What: problem})
		}
	}
	return alarms
}

// Read returns every replica's data, by abstract replica. A replica that is down or suspended
// cannot be read; its Err says so.
func (p *Plugin) Read(ctx context.Context) (cem.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return cem.Snapshot{}, p.errorf("read", errors.New("no cluster; Start one first"))
	}
	snap := cem.Snapshot{Replicas: make([]cem.ReplicaData, len(p.conc))}
	for a, i := range p.conc {
		r := p.c.Replicas[i]
		d := &snap.Replicas[a]
		d.Group = p.eng.group(a)
		switch {
		case !r.running():
			d.Err = r.Name + " is down"
			continue
		case r.suspended:
			d.Err = r.Name + " is suspended"
			continue
		case r.cut:
			// Offline in the model, as a crashed replica is: never compared, and a system that
			// serves no reads without its quorum (ZooKeeper) would hold the read to the timeout.
			d.Err = r.Name + " is cut off by a partition"
			continue
		case r.diskFails:
			d.Err = r.Name + "'s disk fails" // offline in the model; its reads may fail too
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, p.c.Spec.StepTimeout)
		data, err := p.sys.ReadAll(rctx, r)
		cancel()
		if err != nil {
			d.Err = fmt.Sprintf("%s: read: %v", r.Name, err)
			continue
		}
		d.Data = data
	}
	return snap, ctx.Err()
}

// Teardown SIGKILLs every server's process group and sweeps the cluster directory for anything
// they left. It is safe to call twice and after a failed Start; when it fails, the cluster is
// kept so that another Teardown tries again.
func (p *Plugin) Teardown(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.teardown(ctx)
}

func (p *Plugin) teardown(ctx context.Context) error {
	if p.c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(p.c.Replicas)+1)
	for i, r := range p.c.Replicas {
		if r.proc == nil {
			continue
		}
		wg.Go(func() {
			if err := r.proc.Kill(ctx); err != nil {
				errs[i] = err
				return
			}
			r.proc, r.suspended, r.link = nil, false, aem.NoSource
		})
	}
	wg.Wait()
	errs[len(errs)-1] = errors.Join(p.stopServices(ctx), p.unmountDisks(ctx), proc.KillLeftovers(p.c.Spec.Dir))
	if nw := p.c.net; nw != nil && errs[len(errs)-1] == nil {
		// Once no server is left in them, the namespaces go with their last handle.
		errs[len(errs)-1] = nw.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: teardown: %w", p.about.Name, err)
	}
	p.c = nil
	return nil
}

// skipWait tells whether break_realisation = "skip-wait" leaves out the wait of the
// convergence that leads to next, and records it when it does.
func (p *Plugin) skipWait(next *aem.State) bool {
	if p.brk != BreakSkipWait || p.last(next) {
		return false
	}
	p.act(nil, "skipped: the wait for the cluster to catch up (%s = %q)", BreakKey, BreakSkipWait)
	return true
}

// last tells whether s ends the schedule: the model enables nothing after it.
func (p *Plugin) last(s *aem.State) bool { return len(p.model.Next(p.params, s, nil)) == 0 }

// errorf names the plugin and the operation in err, unless err is a *cem.NotReachedError,
// which names its step itself.
func (p *Plugin) errorf(op string, err error) error {
	if cem.IsNotReached(err) || cem.IsUnrealisable(err) || cem.IsNonconformant(err) {
		return err
	}
	if errors.Is(err, ErrUnrealisable) {
		reason := strings.TrimSuffix(strings.TrimPrefix(err.Error(), ErrUnrealisable.Error()+": "), ": "+ErrUnrealisable.Error())
		return &cem.UnrealisableError{Step: p.step, Reason: reason}
	}
	return fmt.Errorf("%s: %s: %w", p.about.Name, op, err)
}

// abstractOf returns the abstract replica that concrete replica i realises.
func (p *Plugin) abstractOf(i int) int { return slices.Index(p.conc, i) }

// replica returns the server of abstract replica a.
func (p *Plugin) replica(a int) *Replica { return p.c.Replicas[p.conc[a]] }

// act records one concrete action of the step being realised; r is nil for the whole cluster.
func (p *Plugin) act(r *Replica, format string, args ...any) {
	a := cem.Action{Time: time.Now(), Replica: -1, What: fmt.Sprintf(format, args...)}
	if r != nil {
		a.Replica = p.abstractOf(r.Index)
		a.What = r.Name + ": " + a.What
	}
	p.actions = append(p.actions, a)
}

// await polls cond until it holds, failing at once when a server of rs has exited. A timeout
// becomes a *cem.NotReachedError naming what was awaited and what cond last saw.
func (p *Plugin) await(ctx context.Context, what string, rs []*Replica, cond func(ctx context.Context) (bool, string, error)) error {
	seen := ""
	err := proc.WaitFor(ctx, p.c.Spec.StepTimeout, what, func(ctx context.Context) (bool, error) {
		for _, r := range rs {
			if !r.running() {
				return false, p.exitedError(r)
			}
		}
		ok, s, err := cond(ctx)
		seen = s
		return ok, err
	})
	var te *proc.WaitTimeoutError
	if !errors.As(err, &te) {
		return err
	}
	if seen != "" {
		what += " (last seen: " + seen + ")"
	}
	return &cem.NotReachedError{Step: p.step, Awaited: what}
}

// key and value are the key and value of write j of the step being realised: unique to the
// schedule, so that data left from another schedule cannot pass for this one's.
func (p *Plugin) key(j int) string { return fmt.Sprintf("k%d.%d", p.step+1, j) }

func (p *Plugin) value(key string) string { return p.c.Spec.ScheduleID + ":" + key }

// call runs one of the system's actions within the step timeout; a timeout becomes a
// *cem.NotReachedError saying that what was awaited (the action's answer) never came.
func (p *Plugin) call(ctx context.Context, what string, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, p.c.Spec.StepTimeout)
	defer cancel()
	err := f(cctx)
	if err != nil && ctx.Err() == nil && (cctx.Err() != nil || isTimeout(err)) {
		return &cem.NotReachedError{Step: p.step, Awaited: what + " (" + err.Error() + ")"}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// isTimeout tells whether err says that something did not answer in time, such as a client's
// own read timeout: the server is there, but does not serve.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// write writes key = value through r and waits for its answer, within the step timeout.
func (p *Plugin) write(ctx context.Context, r *Replica, key, value string) error {
	return p.writeWith(ctx, r, key, value, p.sys.Write)
}

// writeWith is write with put in place of the system's Write.
func (p *Plugin) writeWith(ctx context.Context, r *Replica, key, value string, put func(context.Context, *Replica, string, string) error) error {
	err := p.call(ctx, fmt.Sprintf("%s to accept write %s", r.Name, key), func(ctx context.Context) error {
		return put(ctx, r, key, value)
	})
	if err != nil {
		return err
	}
	p.act(r, "write %s = %q", key, value)
	p.sent(key, value, p.acks)
	return nil
}

// sent adds a write to the step's report.
func (p *Plugin) sent(key, value string, acked bool) {
	p.sentWrite(cem.Write{Key: key, Value: value, Acked: acked})
}

// sentWrite adds w to the step's report, and to the schedule's acknowledged writes when the
// system acknowledged it.
func (p *Plugin) sentWrite(w cem.Write) {
	p.writes = append(p.writes, w)
	if w.Acked {
		p.acked = append(p.acked, w)
	}
}

// awaitCaughtUp waits until the system says that the online replicas have caught up.
func (p *Plugin) awaitCaughtUp(ctx context.Context, online []*Replica) error {
	err := p.await(ctx, names(online)+" caught up", online, func(ctx context.Context) (bool, string, error) {
		return p.sys.CaughtUp(ctx, p.c, online)
	})
	if err == nil {
		p.act(nil, "caught up: %s", names(online))
	}
	return err
}

// awaitHolds waits until r holds key = value, as Holder or else ReadAll shows it.
func (p *Plugin) awaitHolds(ctx context.Context, r *Replica, key, value string) error {
	err := p.await(ctx, fmt.Sprintf("%s to hold write %s", r.Name, key), []*Replica{r}, func(ctx context.Context) (bool, string, error) {
		if h, ok := p.sys.(Holder); ok {
			return h.Holds(ctx, r, key, value)
		}
		data, err := p.sys.ReadAll(ctx, r)
		if err != nil {
			return false, err.Error(), nil
		}
		got, ok := data[key]
		if !ok {
			return false, "no " + key, nil
		}
		return got == value, fmt.Sprintf("holds %q", got), nil
	})
	if err == nil {
		p.act(r, "holds write %s", key)
	}
	return err
}
