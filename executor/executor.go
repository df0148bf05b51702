// Package executor runs schedules on real clusters through a DRM's plugin and judges each:
// pass when every replica ends with the same data, fail when they differ, incomplete when the
// cluster never reached the state a step needed, error when the harness itself failed.
//
// Workers run schedules side by side, each with a plugin process and a cluster of its own:
// its own port range and its own directory. A plugin that dies or hangs costs the schedule it
// was running: the worker sweeps the dead plugin's servers and starts a new plugin for the
// next one. Cancelling the context stops the run cleanly: every cluster is torn down, nothing
// recorded is lost, and the schedules cut short are not recorded, so that running the
// campaign again runs them.
package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// Plugin is a running plugin process: the CEM it serves, and the process itself.
// *cem.Client is one.
type Plugin interface {
	cem.CEM
	// Exited tells whether the process has exited.
	Exited() bool
	// Close ends the process; it is safe to call twice.
	Close() error
}

// Launcher starts a plugin process; ctx bounds the start.
type Launcher func(ctx context.Context) (Plugin, error)

// Campaign is what Run runs, and with what.
type Campaign struct {
	Header schedules.Header
	// Next returns the next schedule to run, or io.EOF after the last. Run calls it from one
	// goroutine.
	Next func() (schedules.Schedule, error)
	// Total is how many schedules Next yields, for progress.
	Total uint64
	// Info is what the plugin said of itself before the run; records carry its versions.
	Info cem.Info
	// PluginConfig is the plugin's table of the configuration, as TOML.
	PluginConfig []byte
	Launch       Launcher
	Store        *results.Store
	Workers      int
	// BasePort is worker 0's first port; worker k's range starts Stride ports after k-1's.
	BasePort    int
	StepTimeout time.Duration
	// CallTimeout bounds each call to the plugin; a plugin that has not answered by then is
	// taken for hung and replaced. Zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// Progress, when set, is called with the counts so far after every verdict, skipped
	// schedules included. Calls never overlap.
	Progress func(Summary)
	// Hold, when set, is called once a schedule has its verdict, with its cluster still up,
	// and the teardown waits until it returns (replay --keep lets a user look at a live
	// failure). It must return when ctx ends.
	Hold func(ctx context.Context, k Kept)
	// PortWait bounds how long a worker waits, backing off, for its cluster's ports to be free
	// again when another process holds one: beyond it the run stops rather than turn every
	// schedule left into an error. Zero means DefaultPortWait.
	PortWait time.Duration
	// Retry lists the verdicts of earlier runs whose schedules run again, their new records
	// appended after the old ones (errors always run again).
	Retry []oracle.Verdict
	// Check says when a schedule is judged: after every convergence step and at the end
	// (oracle.EveryConvergence, the default), or at the end only (oracle.End).
	Check oracle.Check
	// Share, for a plugin that can restore a cluster (cem.Capabilities.Restore), runs the
	// schedules that share a prefix on one worker in turn and restores the cluster saved
	// after the deepest prefix already run instead of replaying it (schedules.Sharer).
	// ShareBudget bounds the disk that a worker's saved clusters take (zero means
	// DefaultShareBudget); beyond it, it saves nothing more until it evicts.
	Share       bool
	ShareBudget int64
	// FailureBudget bounds the disk a failure folder's copy of its cluster takes
	// (results.Failure.ClusterBudget; zero means results.DefaultClusterBudget). MinFree is the
	// free disk of the results directory below which the run stops before its next schedule
	// with a *DiskFullError, as an interrupt stops it, every result written intact; zero
	// checks nothing.
	FailureBudget int64
	MinFree       int64
	// Follow, when set, is told each step's observations (1-based step) as the plugin reports
	// them; where it answers how they depart from a course the caller follows (a replay of a
	// recorded run), the schedule is abandoned there, torn down without a check, and recorded
	// incomplete with that answer (results.Record.Departed).
	Follow func(step int, observations []cem.Observation) string
	// Trace keeps the actions of every schedule that passes (results.Store.WriteTrace); those
	// of the others are in their failure folders.
	Trace bool
	// KeepPasses keeps the folder of a schedule that passes as a failure's is kept
	// (results.Store.WritePass): its actions, replicas' data, servers' logs and cluster
	// directory. Replay --keep sets it: its user asked to keep the run, whatever its verdict.
	KeepPasses bool
	// Prefix, when set, is the saved prefix every schedule restores in place of starting
	// afresh: a replay of a run that restored it (results.Restored), from the copy its failure
	// folder keeps. Prefixes are then not shared.
	Prefix *Prefix
}

// Prefix is a cluster saved after a schedule's first steps (cem.Restorer.Save), as a run that
// restored it keeps it in its failure folder (results.KeptPrefix).
type Prefix struct {
	Dir   string
	From  string // the schedule whose run saved it
	Saved cem.Saved
	// Steps are what the run that saved it reported of each of its steps.
	Steps []cem.StepReport
}

// DefaultShareBudget is Campaign.ShareBudget's default. A Q/C/Z cluster of three ZooKeeper
// servers saves as about 100 KB of data (its logs are sparse), and a worker keeps one saved
// cluster per divergence of the schedule it runs.
const DefaultShareBudget = 1 << 30

// WorkRoot is where a campaign whose results go to resultsDir runs its clusters: its work
// folder (results.WorkDir), an absolute path since plugins run their servers in directories of
// their own. A campaign run as root whose results lie below a directory that other users
// cannot enter (a mktemp -d, /root) runs them in tempDir instead, in a folder named by the
// results directory's digest, so that a run killed outright is swept by the next run of the
// same campaign: some plugins run their servers as another user (PostgreSQL refuses root), who
// must reach the servers' directories. The servers need not live where the results do.
func WorkRoot(resultsDir, tempDir string, root bool) (string, error) {
	dir, err := filepath.Abs(resultsDir)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	if !root || othersCanEnter(dir) {
		return filepath.Join(dir, results.WorkDir), nil
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(tempDir, "modulo-work-"+hex.EncodeToString(sum[:8])), nil
}

// othersCanEnter tells whether a user who owns none of them can enter dir and every directory
// above it; a directory not made yet counts as enterable, since MkdirAll makes it so (0755).
func othersCanEnter(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil && fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// sharing tells whether the campaign shares prefixes.
// A partition DRM's divergences end with every server up: there is no point where a cluster
// is all on disk to save.
func (c *Campaign) sharing() bool {
	return c.Share && c.Info.Capabilities.Restore && !c.Header.DRM.Partition
}

// Kept is a cluster that Campaign.Hold keeps up: its directory (a subdirectory per server,
// with its log and pid file) and where its servers listen: each in a network namespace of its
// own on its system's ordinary ports (Namespaces), or on Ports ports of 127.0.0.1 from
// BasePort.
type Kept struct {
	Dir             string
	Namespaces      bool
	BasePort, Ports int
}

// DefaultPortWait is Campaign.PortWait's default: longer than a port stays in TIME_WAIT.
const DefaultPortWait = 90 * time.Second

// TeardownTimeout bounds the teardown of a cluster after its schedule, and the cleanup after
// an interrupt, which runs on a context of its own since the run's is cancelled: stopping a
// few local servers takes well under a second.
const TeardownTimeout = 15 * time.Second

// Stride is how many ports apart the ranges of two workers start: the ports a cluster needs
// (cem.Capabilities.Ports), rounded up to a multiple of 10 so that worker k's ports are easy
// to tell in logs.
func Stride(ports int) int { return (ports + 9) / 10 * 10 }

// Summary counts a campaign's verdicts, those recorded by earlier runs included.
type Summary struct {
	Total uint64 // schedules the campaign was given
	oracle.Tally
	// Skipped counts the schedules recorded by an earlier run, and not run again.
	Skipped int
	// Interrupted tells that the run was cancelled before every schedule had a verdict.
	Interrupted bool
	// Work is what this run's schedules cost: steps executed, clusters started and restored.
	Work schedules.Work
}

// Schedules is how many schedules have a verdict.
func (s Summary) Schedules() int { return s.Tally.Total() }

// Ran is how many schedules this run ran.
func (s Summary) Ran() int { return s.Schedules() - s.Skipped }

// String is the summary line: "schedules: N, pass: N, fail: N, incomplete: N, error: N", and
// ", unrealisable: N" when there are any.
func (s Summary) String() string {
	return fmt.Sprintf("schedules: %d, pass: %d, fail: %d, incomplete: %d, error: %d",
		s.Schedules(), s.Pass, s.Fail, s.Incomplete, s.Error) + s.Apart(": ")
}

// Run runs the campaign's schedules and records each verdict in c.Store, skipping schedules it
// already holds. When ctx is cancelled it stops every worker, tears every cluster down and
// returns a summary marked Interrupted. It returns an error when the schedules cannot be read
// or the results cannot be written; the summary then counts what was recorded.
func Run(ctx context.Context, c Campaign) (Summary, error) {
	if c.Workers < 1 || c.StepTimeout <= 0 {
		return Summary{}, fmt.Errorf("run: %d workers and a step timeout of %v: both must be positive", c.Workers, c.StepTimeout)
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = cem.DefaultCallTimeout(c.StepTimeout, c.Header.Params.Replicas)
	}
	workRoot, err := WorkRoot(c.Store.Dir(), os.TempDir(), os.Geteuid() == 0)
	if err != nil {
		return Summary{}, err
	}
	// A run that was killed outright leaves its cluster directories: end what they started.
	if err := proc.KillLeftovers(workRoot); err != nil {
		return Summary{}, fmt.Errorf("sweep the last run's clusters: %w", err)
	}
	if err := os.RemoveAll(workRoot); err != nil {
		return Summary{}, fmt.Errorf("clear %s: %w", workRoot, err)
	}

	// A fault of the run itself (the records cannot be written) cancels runCtx with its cause;
	// only ctx's cancellation is an interrupt.
	runCtx, abort := context.WithCancelCause(ctx)
	defer abort(nil)

	r := &run{c: c, summary: Summary{Total: c.Total}}
	jobs := make(chan []schedules.Schedule)
	var readErr error
	go func() {
		defer close(jobs)
		readErr = r.feed(runCtx, jobs)
	}()

	stride := Stride(c.Info.Capabilities.Ports(c.Header.Params.Replicas))
	var wg sync.WaitGroup
	for k := range c.Workers {
		w := &worker{
			run:    r,
			dir:    filepath.Join(workRoot, fmt.Sprintf("w%d", k)),
			saves:  filepath.Join(workRoot, fmt.Sprintf("w%d.saved", k)),
			base:   c.BasePort + k*stride,
			stride: stride,
			sharer: schedules.Sharer[*saved]{Model: c.Header.DRM.Model, Params: c.Header.Params},
		}
		wg.Go(func() {
			if err := w.loop(runCtx, jobs); err != nil {
				abort(err)
			}
		})
	}
	wg.Wait()
	for range jobs { // let the reader see runCtx ended, if it did
	}
	_ = os.Remove(workRoot) // empty unless a worker could not clean up, which it reported

	r.mu.Lock()
	defer r.mu.Unlock()
	r.summary.Interrupted = ctx.Err() != nil && uint64(r.summary.Schedules()) < c.Total
	if err := context.Cause(runCtx); err != nil && ctx.Err() == nil {
		return r.summary, err
	}
	return r.summary, readErr
}

// minUnit is the size below which a unit is not cut: a small campaign gains more from sharing
// than from spreading its last schedules over the workers.
const minUnit = 16

// run is the state the reader and the workers share.
type run struct {
	c       Campaign
	mu      sync.Mutex
	summary Summary
}

// feed sends the schedules to run to jobs, counting those already recorded as skipped: in
// units of schedules that share a prefix when the campaign shares them (schedules.Grouper,
// cut so that each worker gets about eight units, of at least minUnit schedules), one by one
// otherwise.
func (r *run) feed(ctx context.Context, jobs chan<- []schedules.Schedule) error {
	var g *schedules.Grouper
	if r.c.sharing() {
		g = &schedules.Grouper{Model: r.c.Header.DRM.Model, Params: r.c.Header.Params, Max: max(int(r.c.Total/uint64(8*r.c.Workers)), minUnit)}
	}
	send := func(unit []schedules.Schedule) bool {
		if len(unit) == 0 {
			return true
		}
		select {
		case jobs <- unit:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		s, err := r.c.Next()
		if errors.Is(err, io.EOF) {
			if g != nil {
				send(g.Flush())
			}
			return nil
		}
		if err != nil {
			return err
		}
		if v, ok := r.c.Store.Recorded(s.ID); ok && !slices.Contains(r.c.Retry, v) {
			r.count(v, true, schedules.Work{})
			continue
		}
		unit := []schedules.Schedule{s}
		if g != nil {
			unit = g.Add(s)
		}
		if !send(unit) {
			return nil
		}
	}
}

func (r *run) count(v oracle.Verdict, skipped bool, w schedules.Work) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.summary.Add(v)
	if skipped {
		r.summary.Skipped++
	}
	r.summary.Work.Add(w)
	if r.c.Progress != nil {
		r.c.Progress(r.summary)
	}
}

// worker runs one schedule at a time on its own ports and directory, with a plugin process
// of its own that it starts on first use and replaces when it dies or hangs.
type worker struct {
	run    *run
	dir    string
	base   int
	stride int
	plugin Plugin
	// saves holds the clusters saved after the prefixes that sharer keeps, one directory each;
	// saved counts the bytes they take, and n numbers them.
	saves  string
	sharer schedules.Sharer[*saved]
	used   int64
	n      int
}

// saved is a cluster saved after a prefix: its directory, what the plugin said of it, the
// schedule whose run saved it, and that run's reports of the prefix's steps.
type saved struct {
	dir   string
	saved cem.Saved
	from  string
	steps []cem.StepReport
}

// loop runs units of schedules from jobs until jobs closes or ctx ends. It returns an error
// only when a verdict cannot be recorded or a plugin cannot be ended.
func (w *worker) loop(ctx context.Context, jobs <-chan []schedules.Schedule) (err error) {
	defer func() { err = errors.Join(err, w.closePlugin(), w.evict(w.sharer.Drop()), os.RemoveAll(w.saves)) }()
	for unit := range jobs {
		for i := range unit {
			if ctx.Err() != nil {
				return nil
			}
			if err := w.run.c.checkFree(); err != nil {
				return err
			}
			var next *schedules.Schedule
			if i+1 < len(unit) {
				next = &unit[i+1]
			}
			if err := w.runOne(ctx, unit[i], next); err != nil {
				return err
			}
		}
	}
	return nil
}

// evict removes saved clusters.
func (w *worker) evict(ss []*saved) error {
	var errs []error
	for _, s := range ss {
		w.used -= s.saved.Bytes
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// outcome is what running one schedule found.
type outcome struct {
	verdict oracle.Verdict
	class   oracle.Class // of a fail
	step    int          // 1-based step after which a fail was seen; 0 for the end
	detail  string       // one line
	full    string       // complete, for the failure folder; detail when empty
	// evidence is what a fail was judged from, and difference the shape the oracle gave it.
	evidence   *oracle.Evidence
	difference []oracle.Mark
	// restored is the saved prefix the schedule restored, kept with its failure.
	restored *saved
	actions  []results.StepActions
	snap     *cem.Snapshot
	work     schedules.Work
	// made says the cluster directory was made for this schedule.
	made bool
	// replace says the plugin is dead, hung or in a state of which nothing is known.
	replace bool
	// stop, when set, ends the run before this schedule ran: it is not recorded.
	stop error
}

func (o *outcome) harness(format string, args ...any) {
	o.verdict, o.detail = oracle.Error, fmt.Sprintf(format, args...)
}

// took records step i's actions (i 0-based) for the failure folder and its observations for the record.
func (o *outcome) took(rec *results.Record, i int, text string, actions []cem.Action, observations []cem.Observation) {
	o.actions = append(o.actions, results.StepActions{Step: i, Transition: text, Actions: actions})
	if len(observations) > 0 {
		rec.Observations = append(rec.Observations, results.StepObservations{Step: i + 1, Replicas: observations})
	}
}

// note adds a problem met after the verdict was reached: a pass becomes an error, since the
// harness did not do its job, and any other verdict keeps its evidence.
func (o *outcome) note(problem string) {
	if o.verdict == oracle.Pass {
		o.harness("%s", problem)
		return
	}
	if o.full == "" {
		o.full = o.detail
	}
	o.detail += "; " + problem
	o.full += "\n" + problem
}

// runOne runs schedule s; next is the schedule the worker runs after it, if it knows it, so
// that it saves the prefixes that next shares.
func (w *worker) runOne(ctx context.Context, s schedules.Schedule, next *schedules.Schedule) error {
	c := &w.run.c
	rec := results.Record{
		ID:            s.ID,
		DRM:           c.Header.DRM.Name,
		Plugin:        c.Info.Name,
		PluginVersion: c.Info.Version,
		ServerVersion: c.Info.ServerVersion,
		Start:         time.Now(),
		StepsMS:       []float64{},
	}
	o := w.execute(ctx, s, next, &rec)
	// Hold returns at the interrupt: whether one cut the schedule short is known before it.
	cut := ctx.Err() != nil
	if c.Hold != nil && o.made && w.plugin != nil && !w.plugin.Exited() {
		c.Hold(ctx, Kept{Dir: w.dir, Namespaces: c.Info.Capabilities.InNamespaces(), BasePort: w.base, Ports: c.Info.Capabilities.Ports(c.Header.Params.Replicas)})
	}
	if err := w.cleanup(ctx, &o); err != nil {
		return err
	}
	if o.stop != nil {
		return errors.Join(o.stop, os.RemoveAll(w.dir))
	}
	rec.End = time.Now()
	// A schedule cut short by the interrupt has no verdict: the next run runs it. One that got
	// as far as comparing data has one.
	if cut && o.verdict != oracle.Pass && o.verdict != oracle.Fail {
		return os.RemoveAll(w.dir)
	}
	rec.Verdict, rec.Detail, rec.Class, rec.Step, rec.Difference = o.verdict, o.detail, o.class, o.step, o.difference
	if o.verdict == oracle.Pass {
		if c.KeepPasses {
			if err := c.Store.WritePass(w.folder(s, rec, &o)); err != nil {
				return err
			}
		}
		// The failure folder, if any, is an earlier run's error, which this pass replaces.
		if err := errors.Join(os.RemoveAll(w.dir), os.RemoveAll(c.Store.FailureDir(s.ID))); err != nil {
			return fmt.Errorf("schedule %s passed: %w", s.ID, err)
		}
		if c.Trace {
			if err := c.Store.WriteTrace(c.Header, s, o.actions); err != nil {
				return fmt.Errorf("schedule %s passed: %w", s.ID, err)
			}
		}
	} else if err := c.Store.WriteFailure(w.folder(s, rec, &o)); err != nil {
		return err
	}
	if err := c.Store.Append(rec); err != nil {
		return err
	}
	w.run.count(o.verdict, false, o.work)
	return nil
}

// folder is what the folder of schedule s's run keeps, with record rec and outcome o: the
// cluster directory is moved into it.
func (w *worker) folder(s schedules.Schedule, rec results.Record, o *outcome) results.Failure {
	c := &w.run.c
	f := results.Failure{
		Header: c.Header, Schedule: s, Record: rec, Detail: o.detail,
		Actions: o.actions, Snapshot: o.snap, Evidence: o.evidence,
	}
	if o.full != "" {
		f.Detail = o.full
	}
	if o.made {
		f.Cluster, f.ClusterBudget = w.dir, c.FailureBudget
	}
	if sv := o.restored; sv != nil {
		f.Prefix = &results.KeptPrefix{Dir: sv.dir, From: sv.from, Saved: sv.saved, Steps: sv.steps}
	}
	return f
}

// execute runs schedule s: a plugin, free ports, a fresh directory, then the cluster through
// every step, then the comparison of the replicas' data.
//
// A check that fails before the end (after a convergence step, or an alarm) decides the
// verdict, and the schedule still runs to its end, so that the record also says what the end
// alone would have shown (results.Record.AtEnd): healed, or failed too.
func (w *worker) execute(ctx context.Context, s schedules.Schedule, next *schedules.Schedule, rec *results.Record) (o outcome) {
	c := &w.run.c
	var early *outcome // the first check that failed before the end
	defer func() {
		if early == nil {
			return
		}
		rec.AtEnd = string(o.verdict)
		if o.detail != "" {
			rec.AtEnd += ": " + o.detail
		}
		o.verdict, o.class, o.step, o.detail, o.full, o.snap = early.verdict, early.class, early.step, early.detail, early.full, early.snap
		o.evidence, o.difference = early.evidence, early.difference
	}()
	o.work.Schedules = 1
	if w.plugin == nil {
		p, err := c.Launch(ctx)
		if err != nil {
			o.harness("launch plugin: %v", err)
			return o
		}
		w.plugin = p
	}
	if err := w.awaitPorts(ctx); err != nil {
		o.harness("%v", err)
		o.stop = err
		return o
	}
	if err := errors.Join(os.RemoveAll(w.dir), os.MkdirAll(w.dir, 0o755)); err != nil {
		o.harness("cluster directory: %v", err)
		return o
	}
	o.made = true

	spec := cem.ClusterSpec{
		DRM:         c.Header.DRM.Name,
		Ops:         c.Header.Params.Ops,
		Replicas:    c.Header.Params.Replicas,
		Dir:         w.dir,
		BasePort:    w.base,
		ScheduleID:  s.ID,
		Config:      c.PluginConfig,
		StepTimeout: c.StepTimeout,
	}
	var start schedules.Start[*saved]
	if p := c.Prefix; p != nil {
		start = schedules.Start[*saved]{Steps: len(p.Steps), Saved: &saved{dir: p.Dir, saved: p.Saved, from: p.From, steps: p.Steps}}
	} else if c.sharing() {
		start = w.sharer.Begin(&s, next)
		if err := w.evict(start.Evicted); err != nil {
			o.harness("remove saved clusters: %v", err)
			return o
		}
	}
	j := judge{model: c.Header.DRM.Model, params: c.Header.Params, check: c.Check}
	for _, t := range s.Steps {
		j.kinds = append(j.kinds, t.Kind.String())
	}
	j.state = j.model.Init(j.params)
	reports := make([]cem.StepReport, 0, len(s.Steps)) // for the prefixes saved
	t := time.Now()
	var err error
	if start.Steps > 0 {
		err = w.restore(ctx, spec, &s, start, &j, &o, rec)
		reports = append(reports, start.Saved.steps...)
	} else {
		err = w.call(ctx, func(ctx context.Context) error { return w.plugin.Start(ctx, spec) })
		o.work.Starts = 1
	}
	rec.StartMS = millis(time.Since(t))
	var nr *cem.NotReachedError
	if errors.As(err, &nr) {
		o.verdict = oracle.Incomplete
		o.detail = "start: not reached before the deadline: " + nr.Awaited
		return o
	}
	var ue *cem.UnrealisableError
	if errors.As(err, &ue) {
		o.verdict = oracle.Unrealisable
		o.detail = "start: cannot be realised: " + ue.Reason
		return o
	}
	if err != nil && start.Steps > 0 {
		// What is wrong with one saved cluster may be wrong with all: start afresh from now on.
		err = errors.Join(err, w.evict(w.sharer.Drop()))
	}
	if err != nil {
		w.pluginFault(&o, "start", err)
		return o
	}

	for i := start.Steps; i < len(s.Steps); i++ {
		text := s.Steps[i].String()
		var report cem.StepReport
		t := time.Now()
		err := w.call(ctx, func(ctx context.Context) (err error) {
			report, err = w.plugin.Apply(ctx, cem.Step{Index: i, Transition: text})
			return err
		})
		rec.StepsMS = append(rec.StepsMS, millis(time.Since(t)))
		o.work.Steps++
		o.took(rec, i, text, report.Actions, report.Observations)
		if c.Follow != nil && err == nil {
			if d := c.Follow(i+1, report.Observations); d != "" {
				rec.Departed = d
				early = nil // what was judged before is not this course's
				o.verdict = oracle.Incomplete
				o.detail = fmt.Sprintf("step %d %s: left the followed course: %s", i+1, text, d)
				return o
			}
		}
		if errors.As(err, &nr) {
			o.verdict = oracle.Incomplete
			o.detail = fmt.Sprintf("step %d %s: not reached before the deadline: %s", i+1, text, nr.Awaited)
			return o
		}
		if errors.As(err, &ue) {
			o.verdict = oracle.Unrealisable
			o.detail = fmt.Sprintf("step %d %s: cannot be realised: %s", i+1, text, ue.Reason)
			return o
		}
		var ne *cem.NonconformantError
		if errors.As(err, &ne) {
			o.verdict = oracle.Nonconformant
			o.detail = fmt.Sprintf("step %d %s: the cluster does not conform to the model (check %s): %s", i+1, text, ne.Check, ne.Detail)
			return o
		}
		if err != nil {
			w.pluginFault(&o, fmt.Sprintf("step %d %s", i+1, text), err)
			return o
		}
		if err := j.step(&s.Steps[i], report); err != nil {
			o.harness("step %d %s: %v", i+1, text, err)
			return o
		}
		answered(rec, report)
		reports = append(reports, report)
		if early != nil {
			continue
		}
		if f := (outcome{}); j.judgeStep(&f, report.Alarms, i+1) {
			early = &f
			continue
		}
		if slices.Contains(start.Save, i+1) {
			w.save(ctx, &s, reports, &o)
		}
		if j.check != oracle.EveryConvergence || s.Steps[i].Kind != aem.Convergence || i == len(s.Steps)-1 {
			continue
		}
		snap, ok := w.read(ctx, &o, rec, fmt.Sprintf("read after step %d", i+1))
		if !ok {
			return o
		}
		if f := (outcome{}); j.judge(&f, snap, oracle.Promised(&j.state), i+1) {
			early = &f
		}
	}

	snap, ok := w.read(ctx, &o, rec, "read")
	if !ok {
		return o
	}
	groups := make([]int, len(snap.Replicas))
	for i, r := range snap.Replicas {
		groups[i] = r.Group
	}
	if !j.judge(&o, snap, groups, 0) {
		o.verdict, o.snap = oracle.Pass, &snap
		if g := oracle.Compare(snap).Groups(); g != "" {
			o.detail = "converged within " + g + " (the system does not link them)"
		}
	}
	return o
}

// restore starts the cluster from the saved prefix of start in place of Start, and takes the
// prefix's steps as the run that saved them reported them: the judge follows their writes,
// and the record and the failure folder show their actions and observations. Steps with no
// check of their own: the run that saved them checked them, and a prefix is saved only when
// every check passed.
func (w *worker) restore(ctx context.Context, spec cem.ClusterSpec, s *schedules.Schedule, start schedules.Start[*saved], j *judge, o *outcome, rec *results.Record) error {
	sv := start.Saved
	r, ok := w.plugin.(cem.Restorer)
	if !ok {
		return errors.New("the plugin process cannot restore a cluster")
	}
	texts := make([]string, start.Steps)
	for i := range texts {
		texts[i] = s.Steps[i].String()
	}
	var got cem.Restored
	err := w.call(ctx, func(ctx context.Context) (err error) {
		got, err = r.Restore(ctx, spec, sv.dir, texts)
		return err
	})
	o.work.Restores = 1
	if err != nil {
		return fmt.Errorf("restore the cluster saved after step %d by schedule %s: %w", start.Steps, sv.from, err)
	}
	if got.Digest != sv.saved.Digest {
		return fmt.Errorf("restore the cluster saved after step %d by schedule %s: the restored files (sha256 %s) are not those saved (sha256 %s)", start.Steps, sv.from, got.Digest, sv.saved.Digest)
	}
	for i, report := range sv.steps {
		if err := j.step(&s.Steps[i], report); err != nil {
			return fmt.Errorf("restored step %d %s: %w", i+1, texts[i], err)
		}
		actions := report.Actions
		if i == len(sv.steps)-1 {
			actions = append(slices.Clip(actions), got.Actions...)
		}
		o.took(rec, i, texts[i], actions, report.Observations)
		rec.StepsMS = append(rec.StepsMS, 0)
	}
	rec.Restored = &results.Restored{Steps: start.Steps, From: sv.from, Digest: got.Digest}
	o.restored = sv
	return nil
}

// save saves the cluster after the prefix that reports cover, within the worker's budget. A
// save that fails costs only the sharing: the failure is recorded with the step's actions.
func (w *worker) save(ctx context.Context, s *schedules.Schedule, reports []cem.StepReport, o *outcome) {
	c := &w.run.c
	budget := c.ShareBudget
	if budget <= 0 {
		budget = DefaultShareBudget
	}
	last := &o.actions[len(o.actions)-1]
	note := func(format string, args ...any) {
		last.Actions = append(last.Actions, cem.Action{Time: time.Now(), Replica: -1, What: fmt.Sprintf(format, args...)})
	}
	if w.used >= budget {
		note("not saved for the schedules that share this prefix: the worker's saved clusters take %d bytes of a budget of %d", w.used, budget)
		return
	}
	r, ok := w.plugin.(cem.Restorer)
	if !ok {
		return
	}
	w.n++
	dir := filepath.Join(w.saves, strconv.Itoa(w.n))
	var got cem.Saved
	err := w.call(ctx, func(ctx context.Context) (err error) {
		got, err = r.Save(ctx, dir)
		return err
	})
	if err != nil {
		note("save for the schedules that share this prefix failed: %v", err)
		_ = os.RemoveAll(dir)
		return
	}
	k := len(reports)
	w.sharer.Saved(s, k, &saved{dir: dir, saved: got, from: s.ID, steps: slices.Clone(reports)})
	w.used += got.Bytes
	o.work.Saves++
	note("saved the cluster after step %d for the schedules that share this prefix: %d bytes, sha256 %s", k, got.Bytes, got.Digest)
}

// judge follows a schedule's abstract state and the writes its steps sent, and judges the
// replicas' data against them.
type judge struct {
	model  aem.Model
	params aem.Params
	check  oracle.Check
	state  aem.State
	kinds  []string // each step's kind, for the evidence
	taken  int      // steps taken
	writes []oracle.SentWrite
}

// step takes the model's transition that t names, and the writes the step reported.
func (j *judge) step(t *aem.Transition, report cem.StepReport) error {
	_, next, ok := aem.Take(j.model, j.params, &j.state, t)
	if !ok {
		return fmt.Errorf("not enabled in the model's state %s", j.state.String())
	}
	j.state = next
	for _, w := range report.Writes {
		j.writes = append(j.writes, oracle.Sent(j.taken, w))
	}
	j.taken++
	return nil
}

// answered counts in rec what the system answered to the step's writes that only a minority
// received: of the steps the run made, not of a restored prefix's, which count with the run
// that saved it, so that a campaign counts each write once.
func answered(rec *results.Record, report cem.StepReport) {
	for _, w := range report.Writes {
		if !w.Minority {
			continue
		}
		if rec.Answers == nil {
			rec.Answers = map[cem.Answer]int{}
		}
		rec.Answers[w.Answer]++
	}
}

// judge compares the replicas of each group (oracle.NotCompared: left out) and checks the
// acknowledged writes; when either fails, it records a fail seen after step (0: the end),
// keeping the data of that moment and the evidence, and returns true.
func (j *judge) judge(o *outcome, snap cem.Snapshot, groups []int, step int) bool {
	e := oracle.Evidence{Step: step, Kinds: j.kinds, Groups: groups, Writes: slices.Clone(j.writes), Snapshot: &snap}
	got := oracle.Judge(e)
	if got.Class == "" {
		return false
	}
	o.fail(got.Class, step, got.Line)
	o.snap, o.evidence, o.difference = &snap, &e, got.Difference
	if got.Full != got.Line {
		o.full = got.Full
		if step > 0 {
			o.full = fmt.Sprintf("after step %d:\n%s", step, o.full)
		}
	}
	return true
}

// judgeStep records the fail that a step's alarms or its writes' answers decide (a write only
// a minority received, acknowledged), seen after step, and tells whether there was one: the
// replicas' data need not be read for it.
func (j *judge) judgeStep(o *outcome, alarms []cem.Alarm, step int) bool {
	e := oracle.Evidence{Step: step, Kinds: j.kinds, Writes: slices.Clone(j.writes), Alarms: alarms}
	got := oracle.Judge(e)
	if got.Class == "" {
		return false
	}
	o.fail(got.Class, step, got.Line)
	o.evidence = &e
	return true
}

// fail records a fail of class, seen after step (0: at the end).
func (o *outcome) fail(class oracle.Class, step int, line string) {
	o.verdict, o.class, o.step, o.detail = oracle.Fail, class, step, line
	if step > 0 {
		o.detail = fmt.Sprintf("after step %d: %s", step, line)
	}
}

// read reads every replica's data; what failed is recorded in o.
func (w *worker) read(ctx context.Context, o *outcome, rec *results.Record, what string) (cem.Snapshot, bool) {
	var snap cem.Snapshot
	t := time.Now()
	err := w.call(ctx, func(ctx context.Context) (err error) {
		snap, err = w.plugin.Read(ctx)
		return err
	})
	rec.ReadMS += millis(time.Since(t))
	if err != nil {
		w.pluginFault(o, what, err)
		return snap, false
	}
	if got, want := len(snap.Replicas), w.run.c.Header.Params.Replicas; got != want {
		o.harness("%s: the plugin returned %d replicas' data, want %d", what, got, want)
		o.replace = true
		return snap, false
	}
	return snap, true
}

// awaitPorts waits until the ports the worker's cluster uses are free, backing off from 100 ms
// to 10 s between checks, for at most the campaign's PortWait. A port that another process
// holds for longer stops the run with one message naming it and the worker. A cluster in
// network namespaces uses no port of the machine's: there is nothing to wait for, and probing
// the block would only disturb whoever uses those ports.
func (w *worker) awaitPorts(ctx context.Context) error {
	c := &w.run.c
	if c.Info.Capabilities.InNamespaces() {
		return nil
	}
	n := c.Info.Capabilities.Ports(c.Header.Params.Replicas)
	limit := c.PortWait
	if limit <= 0 {
		limit = DefaultPortWait
	}
	start := time.Now()
	deadline := start.Add(limit)
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
		err := proc.CheckPortsFree(w.base, n)
		if err == nil {
			return nil
		}
		// The last check is at the deadline, not at the last backoff before it: a port freed
		// in between would otherwise stop the run with the wait not spent.
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("worker %s: %w, and still was after %v of waiting: stopping the campaign rather than failing every schedule left; free the port or choose another base_port, then run again to resume",
				filepath.Base(w.dir), err, time.Since(start).Round(100*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(delay, left)):
		}
	}
}

// call calls the plugin within the call timeout.
func (w *worker) call(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, w.run.c.CallTimeout)
	defer cancel()
	err := f(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the plugin did not answer within %v: %w", w.run.c.CallTimeout, err)
	}
	return err
}

// pluginFault records a failed call to the plugin as an error verdict. The plugin is
// replaced after it: it may be dead or hung, and in any case its state is unknown.
func (w *worker) pluginFault(o *outcome, what string, err error) {
	o.replace = true
	if w.plugin.Exited() {
		o.harness("%s: the plugin exited: %v", what, err)
		return
	}
	o.harness("%s: %v", what, err)
}

// cleanup tears the cluster down and ends whatever it left running, on a context of its own
// so that it runs after an interrupt too; then it ends the plugin if it has to be replaced.
// It returns an error only when a plugin cannot be ended.
func (w *worker) cleanup(ctx context.Context, o *outcome) error {
	if o.made {
		if w.plugin != nil && !w.plugin.Exited() {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TeardownTimeout)
			err := w.plugin.Teardown(tctx)
			cancel()
			// After a fault of the plugin's, a failed teardown only repeats the fault: the sweep
			// below is what ends the servers then.
			if err != nil && !o.replace {
				o.note(fmt.Sprintf("teardown: %v", err))
				o.replace = true
			}
		}
		if err := proc.KillLeftovers(w.dir); err != nil {
			o.note(fmt.Sprintf("kill leftover servers: %v", err))
		}
	}
	if o.replace {
		return w.closePlugin()
	}
	return nil
}

// closePlugin ends the worker's plugin, if it has one.
func (w *worker) closePlugin() error {
	if w.plugin == nil {
		return nil
	}
	err := w.plugin.Close()
	w.plugin = nil
	return err
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
