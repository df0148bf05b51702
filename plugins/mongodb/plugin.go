package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/build"
)

// teardownTimeout bounds how long Teardown waits for SIGKILLed servers to be gone. It does not
// use the caller's context: a cancelled run (Ctrl-C) must still end every server.
const teardownTimeout = 10 * time.Second

// versionTimeout bounds `mongod --version`, which prints and exits.
const versionTimeout = 10 * time.Second

// Plugin realises Q/C/M on a replica set of mongod processes on 127.0.0.1, one cluster at a
// time. It plans every step with a planner (plan.go) and carries the plan out here.
type Plugin struct {
	cfg     Config // the last Start's configuration; Info reads its mongod path
	mongod  string
	spec    cem.ClusterSpec
	planner *planner
	members []*member // by concrete member index
	primary int       // the member that is primary, -1 when there is none
	failed  error     // set when a step failed: the cluster no longer matches the model

	step    int          // index of the step being realised, -1 during Start
	actions []cem.Action // what the step being realised did
}

// New returns a plugin with no cluster.
func New() *Plugin {
	cfg, _ := parseConfig(nil) // the empty configuration is valid
	return &Plugin{cfg: cfg, primary: -1}
}

var _ cem.CEM = (*Plugin)(nil)

// Info describes the plugin and the mongod that config names (or $MODULO_MONGOD, or PATH).
// Without a mongod it fails with one line saying what it tried.
func (p *Plugin) Info(ctx context.Context, config []byte) (cem.Info, error) {
	cfg, err := parseConfig(config)
	if err != nil {
		return cem.Info{}, err
	}
	mongod, err := cfg.mongodPath()
	if err != nil {
		return cem.Info{}, err
	}
	dir, err := os.MkdirTemp("", "modulo-mongod-version-")
	if err != nil {
		return cem.Info{}, fmt.Errorf("mongod --version: %w", err)
	}
	defer os.RemoveAll(dir)
	version, err := mongodVersion(ctx, mongod, dir)
	if err != nil {
		return cem.Info{}, err
	}
	return cem.Info{
		Name:          "mongodb",
		Version:       build.Version,
		ServerVersion: version,
		Capabilities:  cem.Capabilities{DRMs: []string{"qcm"}, PortsPerReplica: 1},
	}, nil
}

// mongodVersion runs `mongod --version` in dir (for its log and pid file) and checks the
// version it prints.
func mongodVersion(ctx context.Context, mongod, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	proc, err := proc.StartProcess(proc.ProcessSpec{Name: "mongod-version", Dir: dir, Path: mongod, Args: []string{"--version"}})
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", mongod, err)
	}
	waitErr := proc.Wait(ctx)
	if err := proc.Kill(context.WithoutCancel(ctx)); err != nil { // reaps it and removes its pid file
		return "", fmt.Errorf("%s --version: %w", mongod, err)
	}
	out, err := os.ReadFile(proc.LogPath)
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", mongod, err)
	}
	if waitErr != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return "", fmt.Errorf("%s --version: %w: %s", mongod, waitErr, first)
	}
	version, err := parseVersion(string(out))
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", mongod, err)
	}
	return version, nil
}

// Start starts spec.Replicas mongod processes on 127.0.0.1:BasePort+i, each with a directory
// of its own under spec.Dir, initiates the replica set, elects member 0 and waits until every
// member is in sync.
func (p *Plugin) Start(ctx context.Context, spec cem.ClusterSpec) (err error) {
	if p.members != nil {
		return errors.New("start: a cluster is already running; tear it down first")
	}
	d, err := drms.Lookup(spec.DRM)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if d.Plugin != "mongodb" {
		return fmt.Errorf("start: DRM %s is realised by the %s plugin, not by mongodb", d.Name, d.Plugin)
	}
	params := aem.Params{Ops: spec.Ops, Replicas: spec.Replicas}
	if err := params.Validate(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if spec.Replicas > maxVoters {
		return fmt.Errorf("start: a replica set has at most %d voting members, and every Q/C/M replica votes; got %d replicas", maxVoters, spec.Replicas)
	}
	cfg, err := parseConfig(spec.Config)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if err := proc.CheckPortsFree(spec.BasePort, spec.Replicas); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	mongod, err := cfg.mongodPath()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if _, err := mongodVersion(ctx, mongod, spec.Dir); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if spec.StepTimeout <= 0 {
		spec.StepTimeout = cem.DefaultStepTimeout
	}
	*p = Plugin{cfg: cfg, mongod: mongod, spec: spec, primary: -1, step: -1}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("start: %w", err), p.Teardown(ctx))
		}
	}()

	all := make([]int, spec.Replicas)
	for i := range spec.Replicas {
		all[i] = i
		m := &member{index: i, port: spec.BasePort + i, dir: filepath.Join(spec.Dir, fmt.Sprintf("member-%d", i))}
		p.members = append(p.members, m)
		if err := m.start(mongod, &cfg); err != nil {
			return err
		}
	}
	for _, m := range p.members {
		if err := p.awaitUp(ctx, m); err != nil {
			return err
		}
	}
	ictx, cancel := context.WithTimeout(ctx, cfg.StartupTimeout)
	err = p.members[0].initiate(ictx, initiateConfig(spec.BasePort, spec.Replicas, &cfg))
	cancel()
	if err != nil {
		return err
	}
	if err := p.elect(ctx, all); err != nil {
		return err
	}
	if err := p.awaitSync(ctx, all); err != nil {
		return err
	}
	p.planner = newPlanner(params)
	return nil
}

// Apply realises one transition of the schedule.
func (p *Plugin) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	p.step, p.actions = step.Index, nil
	err := p.apply(ctx, step)
	report := cem.StepReport{Actions: p.actions}
	p.actions = nil
	if err != nil && p.failed == nil {
		p.failed = fmt.Errorf("step %d (%s) failed", step.Index+1, step.Transition)
	}
	return report, err
}

func (p *Plugin) apply(ctx context.Context, step cem.Step) error {
	if p.planner == nil {
		return errors.New("apply: no cluster; Start one first")
	}
	if p.failed != nil {
		return fmt.Errorf("apply step %d: the cluster is out of step with its schedule: %w", step.Index+1, p.failed)
	}
	t, err := aem.ParseTransition(step.Transition)
	if err != nil {
		return fmt.Errorf("step %d: %w", step.Index+1, err)
	}
	ops, err := p.planner.plan(&t, p.primary, step.Index, p.spec.ScheduleID)
	if err != nil {
		return fmt.Errorf("step %d: %w", step.Index+1, err)
	}
	for i := range ops {
		if err := p.do(ctx, &ops[i]); err != nil {
			return err
		}
	}
	return nil
}

// do carries out one op of a plan.
func (p *Plugin) do(ctx context.Context, o *op) error {
	switch o.kind {
	case opRemap:
		p.act(-1, "%s", o)
	case opKill:
		m := p.members[o.member]
		if err := m.exited(); err != nil {
			return &cem.NotReachedError{Step: p.step, Awaited: fmt.Sprintf("replica %d to be up until killed (%v)", o.replica, err)}
		}
		if m.proc == nil {
			return fmt.Errorf("kill replica %d: %s is not running, although the model has it online", o.replica, m)
		}
		pid := m.proc.Pid
		if err := m.kill(ctx); err != nil {
			return err
		}
		if o.member == p.primary {
			p.primary = -1
		}
		p.act(o.replica, "SIGKILL %s (pid %d, port %d)", m, pid, m.port)
	case opStart:
		m := p.members[o.member]
		if err := m.start(p.mongod, &p.cfg); err != nil {
			return err
		}
		p.act(o.replica, "start %s (pid %d, port %d)", m, m.proc.Pid, m.port)
		return p.awaitUp(ctx, m)
	case opWrite:
		m := p.members[o.member]
		if o.member != p.primary {
			return fmt.Errorf("write %s: the plan writes to member %d, but member %d is primary", o.key, o.member, p.primary)
		}
		wctx, cancel := context.WithTimeout(ctx, p.spec.StepTimeout)
		err := m.write(wctx, o.key, o.value)
		cancel()
		if errors.Is(err, errNotPrimary) {
			// The primary stepped down before the divergence was done with it: it lost its
			// majority longer than electionTimeoutMillis ago.
			return &cem.NotReachedError{Step: p.step, Awaited: fmt.Sprintf("%s to take write %s as primary (%v; a larger election_timeout keeps a primary without majority longer)", m, o.key, err)}
		}
		if err != nil {
			return err
		}
		p.act(o.replica, "write %s=%s to %s, w:1 j:true", o.key, o.value, m)
	case opAwaitHeld:
		return p.awaitHeld(ctx, o.members)
	case opElect:
		return p.elect(ctx, o.members)
	case opAwaitSync:
		return p.awaitSync(ctx, o.members)
	default:
		return fmt.Errorf("unknown op %s", o)
	}
	return nil
}

// awaitUp waits until a (re)started member answers commands.
func (p *Plugin) awaitUp(ctx context.Context, m *member) error {
	return p.await(ctx, p.cfg.StartupTimeout, fmt.Sprintf("%s to answer on port %d", m, m.port),
		func(ctx context.Context) (bool, string, error) {
			err := m.ping(ctx)
			var exited *exitedError
			if errors.As(err, &exited) {
				return false, "", err
			}
			if err != nil {
				return false, err.Error(), nil
			}
			return true, "", nil
		})
}

// views asks each member for its replSetGetStatus. A member that does not answer gets its
// error in its view; a member whose mongod exited ends the wait with an *exitedError.
func (p *Plugin) views(ctx context.Context, members []int) ([]view, error) {
	vs := make([]view, len(members))
	for k, i := range members {
		s, err := p.members[i].status(ctx)
		var exited *exitedError
		if errors.As(err, &exited) {
			return nil, err
		}
		vs[k] = view{member: i, status: s, err: err}
	}
	return vs, nil
}

// awaitHeld waits until every member made the primary's latest optime durable, which includes
// the write the primary just acknowledged.
func (p *Plugin) awaitHeld(ctx context.Context, members []int) error {
	if p.primary < 0 {
		return errors.New("await a write: no primary")
	}
	sctx, cancel := context.WithTimeout(ctx, p.spec.StepTimeout)
	ps, err := p.members[p.primary].status(sctx)
	cancel()
	if err != nil {
		return err
	}
	target := ps.Optimes.Applied
	what := fmt.Sprintf("members %s to hold optime %v durably", joinInts(members), target)
	err = p.await(ctx, p.spec.StepTimeout, what, func(ctx context.Context) (bool, string, error) {
		vs, err := p.views(ctx, members)
		if err != nil {
			return false, "", err
		}
		ok, why := holdDurably(vs, target)
		return ok, why, nil
	})
	if err == nil {
		p.act(-1, "members %s hold optime %v durably", joinInts(members), target)
	}
	return err
}

// elect waits until the members are PRIMARY or SECONDARY and, unless one of them already is
// PRIMARY, asks the freshest to step up, until one is PRIMARY. A failed election is called
// again at most once per heartbeat interval: what makes one fail (a voter that has not yet
// seen the candidate's oplog or term) changes at the pace of heartbeats.
func (p *Plugin) elect(ctx context.Context, members []int) error {
	what := "a primary among members " + joinInts(members)
	var last time.Time
	return p.await(ctx, p.cfg.ResyncTimeout, what, func(ctx context.Context) (bool, string, error) {
		vs, err := p.views(ctx, members)
		if err != nil {
			return false, "", err
		}
		e := electionOf(vs)
		switch {
		case !e.ready:
			return false, e.why, nil
		case e.primaries == 1:
			p.primary = e.primary
			p.act(-1, "member %d is primary", e.primary)
			return true, "", nil
		case time.Since(last) < p.cfg.HeartbeatInterval:
			return false, "waiting to call the election again", nil
		}
		m := p.members[e.freshest]
		last = time.Now()
		err = m.stepUp(ctx)
		p.act(-1, "replSetStepUp on %s, the freshest: %s", m, errText(err))
		var exited *exitedError
		switch {
		case errors.As(err, &exited):
			return false, "", err
		case err != nil:
			return false, err.Error(), nil // lost or interrupted: poll and call it again
		}
		return false, "", nil // the next poll sees the new primary
	})
}

// errText is err's text, or "ok".
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// awaitSync waits until the members hold the same optimes with one writable primary: the one
// known before when there was one (a convergence with a quorum online keeps its primary; any
// other would be a failover the schedule did not ask for).
func (p *Plugin) awaitSync(ctx context.Context, members []int) error {
	want := p.primary
	what := "members " + joinInts(members) + " in sync"
	if want >= 0 {
		what += fmt.Sprintf(" with member %d primary", want)
	}
	var at opTime
	err := p.await(ctx, p.cfg.ResyncTimeout, what, func(ctx context.Context) (bool, string, error) {
		vs, err := p.views(ctx, members)
		if err != nil {
			return false, "", err
		}
		ok, primary, why := inSync(vs, want)
		if !ok {
			return false, why, nil
		}
		w, err := p.members[primary].writable(ctx)
		if err != nil || !w {
			return false, fmt.Sprintf("member %d is PRIMARY but does not take writes yet", primary), nil
		}
		p.primary, at = primary, vs[0].status.Optimes.Applied
		return true, "", nil
	})
	if err == nil {
		p.act(-1, "members %s in sync at optime %v, member %d primary", joinInts(members), at, p.primary)
	}
	return err
}

// await polls cond until it holds. cond says, besides whether it holds, what it last saw; a
// timeout becomes a *cem.NotReachedError naming what was awaited and what was last seen, and
// so does a member's mongod exiting (the system under test crashed).
func (p *Plugin) await(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (ok bool, seen string, err error)) error {
	seen := ""
	err := proc.WaitFor(ctx, timeout, what, func(ctx context.Context) (bool, error) {
		ok, s, err := cond(ctx)
		seen = s
		return ok, err
	})
	var te *proc.WaitTimeoutError
	var exited *exitedError
	switch {
	case errors.As(err, &te):
		if seen != "" {
			what += " (last seen: " + seen + ")"
		}
		what = fmt.Sprintf("%s, within %v", what, timeout)
	case errors.As(err, &exited):
		what += " (" + exited.Error() + ")"
	default:
		return err
	}
	if p.step < 0 {
		return errors.New("not reached: " + what)
	}
	return &cem.NotReachedError{Step: p.step, Awaited: what}
}

// Read returns every replica's data, read from its own member over a direct connection.
func (p *Plugin) Read(ctx context.Context) (cem.Snapshot, error) {
	if p.planner == nil {
		return cem.Snapshot{}, errors.New("read: no cluster; Start one first")
	}
	ctx, cancel := context.WithTimeout(ctx, p.spec.StepTimeout)
	defer cancel()
	snap := cem.Snapshot{Replicas: make([]cem.ReplicaData, len(p.planner.member))}
	for i, mi := range p.planner.member {
		data, err := p.members[mi].readAll(ctx)
		if err != nil {
			snap.Replicas[i].Err = err.Error()
			continue
		}
		snap.Replicas[i].Data = data
	}
	return snap, ctx.Err()
}

// Teardown SIGKILLs every member's process group and sweeps the cluster directory for anything
// left. It is safe to call twice and after a failed Start.
func (p *Plugin) Teardown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	var errs []error
	for _, m := range p.members {
		if err := m.kill(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.members, p.planner, p.primary = nil, nil, -1
	if p.spec.Dir != "" {
		if err := proc.KillLeftovers(p.spec.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}

// act records one concrete action of the step being realised (replica -1: no single replica).
func (p *Plugin) act(replica int, format string, args ...any) {
	p.actions = append(p.actions, cem.Action{Time: time.Now(), Replica: replica, What: fmt.Sprintf(format, args...)})
}
