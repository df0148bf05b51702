package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

// defaultStepTimeout bounds each wait when the executor sets no StepTimeout.
const defaultStepTimeout = 30 * time.Second

// teardownTimeout bounds how long Teardown waits for SIGKILLed servers to be gone. It does not
// use the caller's context: a cancelled run (Ctrl-C) must still end every server.
const teardownTimeout = 10 * time.Second

// Plugin realises the Redis DRMs S/S/R, S/L/R and S/CL/R on redis-server, one cluster at a
// time. It keeps the abstract state of the schedule itself, so that each step knows which
// replicas are online, crashed or suspended and which links the model has.
type Plugin struct {
	// mu serialises the CEM methods: the plugin protocol serves each call on a goroutine of
	// its own, and a Teardown may come while a step still runs.
	mu sync.Mutex

	cfg    Config // the last Start's configuration; Info reads its server path
	server string // resolved server binary
	spec   cem.ClusterSpec
	drm    string // short DRM name: ssr, slr or sclr
	model  aem.Model
	params aem.Params
	state  aem.State // the abstract state before the next step
	reps   []*replica
	failed error // set when a step failed: the cluster no longer matches state

	step    int          // index of the step being realised, -1 during Start
	actions []cem.Action // what the step being realised (or Start) did
	sets    int          // SETs of the schedule so far, which spread them over the databases
}

// New returns a plugin with no cluster.
func New() *Plugin {
	cfg, _ := parseConfig(nil) // the empty configuration is valid
	return &Plugin{cfg: cfg}
}

var _ cem.CEM = (*Plugin)(nil)

// versions caches each server binary's version, by path: a plugin process runs many clusters
// with the same binary, and asking it costs a process start (about 13 ms).
var versions sync.Map // path -> dialect.Version

// serverVersion asks the binary at path its version, once per path.
func (p *Plugin) serverVersion(ctx context.Context, path string) (dialect.Version, error) {
	if v, ok := versions.Load(path); ok {
		return v.(dialect.Version), nil
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return dialect.Version{}, fmt.Errorf("%s --version: %w", path, err)
	}
	v, err := dialect.Parse(string(out))
	if err != nil {
		return v, fmt.Errorf("%s %w", path, err)
	}
	versions.Store(path, v)
	return v, nil
}

// Info describes the plugin and the server binary that config names.
func (p *Plugin) Info(ctx context.Context, config []byte) (cem.Info, error) {
	cfg, err := parseConfig(config)
	if err != nil {
		return cem.Info{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	server, err := cfg.serverPath()
	if err != nil {
		return cem.Info{}, err
	}
	v, err := p.serverVersion(ctx, server)
	if err != nil {
		return cem.Info{}, err
	}
	return cem.Info{
		Name:          "redis",
		Version:       build.Version,
		ServerVersion: v.String(),
		Capabilities:  cem.Capabilities{DRMs: []string{"ssr", "slr", "sclr"}, PortsPerReplica: 1},
	}, nil
}

// Start starts spec.Replicas servers on 127.0.0.1:BasePort+i, each with a directory of its own
// under spec.Dir, links them as the model's initial state says and waits until every link is
// in sync.
func (p *Plugin) Start(ctx context.Context, spec cem.ClusterSpec) (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reps != nil {
		return errors.New("start: a cluster is already running; tear it down first")
	}
	d, err := drms.Lookup(spec.DRM)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if d.Plugin != "redis" {
		return fmt.Errorf("start: DRM %s is realised by the %s plugin, not by redis", d.Name, d.Plugin)
	}
	params := aem.Params{Ops: spec.Ops, Replicas: spec.Replicas}
	if err := params.Validate(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	cfg, err := parseConfig(spec.Config)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	server, err := cfg.serverPath()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if spec.StepTimeout <= 0 {
		spec.StepTimeout = defaultStepTimeout
	}
	if cfg.FailureWait >= spec.StepTimeout {
		return fmt.Errorf("start: redis config: failure_wait (%v) must be shorter than the step timeout (%v), which bounds every step", cfg.FailureWait, spec.StepTimeout)
	}
	v, err := p.serverVersion(ctx, server)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	dl, err := dialect.For(v)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if _, err := dl.Config(cfg.settings(0, "")); err != nil {
		return fmt.Errorf("start: redis config: %w", err)
	}
	if err := cem.CheckPortsFree(spec.BasePort, spec.Replicas); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	p.cfg, p.server, p.spec, p.drm, p.model, p.params = cfg, server, spec, d.Name, d.Model, params
	p.state, p.failed, p.step, p.actions, p.sets = aem.State{}, nil, -1, nil, 0
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("start: %w", err), p.teardown(ctx))
		}
	}()

	for i := range spec.Replicas {
		r := &replica{index: i, port: spec.BasePort + i, dir: filepath.Join(spec.Dir, fmt.Sprintf("replica-%d", i)), dialect: dl, link: aem.NoSource}
		p.reps = append(p.reps, r)
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		ds, err := dl.Config(cfg.settings(r.port, r.dir))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.dir, confName), []byte(dialect.Render(ds)), 0o644); err != nil {
			return err
		}
		if err := r.start(server); err != nil {
			return err
		}
		p.act(i, "started redis-server %s pid %d with %s", v, r.proc.Pid, confName)
	}
	for _, r := range p.reps {
		if err := p.awaitUp(ctx, r); err != nil {
			return err
		}
	}
	p.state = p.model.Init(params)
	// Link one replica at a time, sources first: a replica refuses to serve a sync while it is
	// syncing itself, and its replica would retry only at its next once-a-second cron.
	for _, i := range p.linkOrder(&p.state) {
		if src := p.wantLink(&p.state, i); src != aem.NoSource {
			if err := p.replicaOf(ctx, p.reps[i], src); err != nil {
				return err
			}
			if err := p.awaitInSync(ctx, p.reps[i], p.reps[src]); err != nil {
				return err
			}
		}
	}
	return p.awaitConverged(ctx, &p.state)
}

// Apply realises one transition of the schedule and waits until the cluster is in the state
// it describes.
func (p *Plugin) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reps == nil {
		return cem.StepReport{}, errors.New("apply: no cluster; Start one first")
	}
	if p.failed != nil {
		return cem.StepReport{}, fmt.Errorf("apply step %d: the cluster is out of step with its schedule: %w", step.Index+1, p.failed)
	}
	t, err := aem.ParseTransition(step.Transition)
	if err != nil {
		return cem.StepReport{}, fmt.Errorf("step %d: %w", step.Index+1, err)
	}
	enabled := p.model.Next(p.params, &p.state, nil)
	if !slices.ContainsFunc(enabled, func(e aem.Transition) bool { return aem.Equal(&e, &t) }) {
		return cem.StepReport{}, fmt.Errorf("step %d: %s is not enabled in state %s", step.Index+1, step.Transition, p.state)
	}
	p.step, p.actions = step.Index, nil
	err = p.apply(ctx, &t)
	report := cem.StepReport{Actions: p.actions}
	p.actions = nil
	if err != nil {
		// Part of the step may have happened: later steps would realise something else.
		p.failed = fmt.Errorf("step %d (%s) failed", step.Index+1, step.Transition)
		return report, err
	}
	return report, nil
}

// apply realises transition t, which the model enables in p.state, and moves p.state on.
func (p *Plugin) apply(ctx context.Context, t *aem.Transition) error {
	if err := p.checkConcrete(); err != nil {
		return fmt.Errorf("step %d: %w", p.step+1, err)
	}
	next := p.model.Apply(p.params, &p.state, t)
	next.Steps = p.state.Steps + 1
	var err error
	if t.Kind == aem.Divergence {
		err = p.diverge(ctx, t)
	} else {
		err = p.converge(ctx, t, &next)
	}
	if err != nil {
		return err
	}
	p.state = next
	return nil
}

// Read returns every key and value of every replica, the keys of database n as "db<n>/key". A
// replica that is down or suspended cannot be read; its Err says so. Redis replicates only
// along links, so each replica's Group is its replication tree, named by the index of the
// tree's root in the model's links.
func (p *Plugin) Read(ctx context.Context) (cem.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reps == nil {
		return cem.Snapshot{}, errors.New("read: no cluster; Start one first")
	}
	ctx, cancel := context.WithTimeout(ctx, p.spec.StepTimeout)
	defer cancel()
	snap := cem.Snapshot{Replicas: make([]cem.ReplicaData, len(p.reps))}
	for i, r := range p.reps {
		snap.Replicas[i].Group = p.treeRoot(&p.state, i)
		data, err := r.readAll(ctx)
		if err != nil {
			snap.Replicas[i].Err = err.Error()
			continue
		}
		snap.Replicas[i].Data = data
	}
	return snap, ctx.Err()
}

// Teardown SIGKILLs every server's process group and sweeps the cluster directory for anything
// they left. It is safe to call twice and after a failed Start.
func (p *Plugin) Teardown(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.teardown(ctx)
}

func (p *Plugin) teardown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	var errs []error
	for _, r := range p.reps {
		if err := r.kill(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.reps = nil
	if p.spec.Dir != "" {
		if err := cem.KillLeftovers(p.spec.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}

// act records one concrete action of the step being realised.
func (p *Plugin) act(replica int, format string, args ...any) {
	p.actions = append(p.actions, cem.Action{Time: time.Now(), Replica: replica, What: fmt.Sprintf(format, args...)})
}

// await polls cond until it holds. cond says, besides whether it holds, what it last saw; a
// timeout becomes a *cem.NotReachedError naming what was awaited and what was last seen.
func (p *Plugin) await(ctx context.Context, what string, cond func(ctx context.Context) (ok bool, seen string, err error)) error {
	seen := ""
	err := cem.WaitFor(ctx, p.spec.StepTimeout, what, func(ctx context.Context) (bool, error) {
		ok, s, err := cond(ctx)
		seen = s
		return ok, err
	})
	var te *cem.WaitTimeoutError
	if !errors.As(err, &te) {
		return err
	}
	awaited := what
	if seen != "" {
		awaited += " (" + seen + ")"
	}
	return &cem.NotReachedError{Step: p.step, Awaited: awaited} // Step is -1 during Start
}
