// Package rerun runs one schedule again on real clusters, through the executor and the
// campaign's plugin, as many times as asked: to confirm a failure, to tell how often it
// reproduces, and to try the candidates of a shrink. Each run gets a fresh cluster and a
// results directory of its own, so that its actions, data and logs are kept as a campaign's
// are, and a campaign's records.jsonl is never touched.
package rerun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// Setup is what runs schedules: the plugin, and the settings every run shares.
type Setup struct {
	Info         cem.Info
	PluginConfig []byte
	Launch       executor.Launcher
	BasePort     int
	StepTimeout  time.Duration
	// Check says when each run is judged, as in the campaign.
	Check oracle.Check
	// Hold, when set, keeps each run's cluster up after its verdict (executor.Campaign.Hold).
	Hold func(ctx context.Context, k executor.Kept)
	// Trace keeps the actions of a run that passes in its directory (executor.Campaign.Trace).
	Trace bool
	// KeepPasses keeps a run that passes as one that fails is kept, in its directory's
	// passes/<ID>/ (executor.Campaign.KeepPasses).
	KeepPasses bool
	// Out, when set, shows each run as it goes: every step as it starts, and its concrete
	// actions and time when the plugin returns them (the plugin reports a step's actions when
	// the step is done), then the verdict.
	Out io.Writer
}

// Options say how often to run a schedule, and where to keep the runs.
type Options struct {
	Repeat int
	// Until, when set, ends the runs early at the first whose verdict it is.
	Until oracle.Verdict
	// Dir is a directory that does not exist yet: run k's results go to Dir/<k>, k from 1.
	Dir string
	// Course, when set, is the recorded run's observations: a run whose observations after a
	// step differ from them is abandoned there (executor.Campaign.Follow), and runs go on
	// until Repeat runs followed the course to their verdicts or Tries runs were made.
	Course []results.StepObservations
	Tries  int
	// Prefix, when set, is the saved prefix every run restores in place of running its steps:
	// the one the recorded run restored, kept in its failure folder.
	Prefix *executor.Prefix
}

// Result is what the runs found.
type Result struct {
	// Records holds the record of each run that reached a verdict, in order.
	Records []results.Record
	// Interrupted tells that ctx ended before every run was made.
	Interrupted bool
}

// OnCourse is the runs that were not abandoned for leaving the recorded course: every run
// where no course was followed.
func (r Result) OnCourse() Result {
	r.Records = slices.DeleteFunc(slices.Clone(r.Records), func(rec results.Record) bool { return rec.Departed != "" })
	return r
}

// courseFields are the observations that make a run's course: each replica's role, its
// position in the log, how it resynced, and whether a partition cut it off. A term, and a
// plugin's own fields (which server leads NATS's meta group, a Raft log's last index), differ
// between runs of one course: they count elections, not what the cluster did.
var courseFields = []string{cem.ObserveRole, cem.ObservePosition, cem.ObserveSync, cem.ObserveNetwork}

// course returns executor.Campaign.Follow for the recorded observations obs: after step i
// (1-based, as both number it), the first of them (of courseFields) that the run's differ
// from, or "" when the run is still on course (or the recorded run observed nothing after that
// step).
func course(obs []results.StepObservations) func(int, []cem.Observation) string {
	return func(i int, got []cem.Observation) string {
		for _, so := range obs {
			if so.Step == i {
				return results.FirstDifference(onCourse(so), onCourse(results.StepObservations{Step: i, Replicas: got}), "the recorded run", "this run")
			}
		}
		return ""
	}
}

// onCourse keeps of a step's observations the courseFields.
func onCourse(so results.StepObservations) []results.StepObservations {
	out := results.StepObservations{Step: so.Step}
	for _, o := range so.Replicas {
		kept := cem.Observation{Replica: o.Replica, Fields: map[string]string{}}
		for _, f := range courseFields {
			if v, ok := o.Fields[f]; ok {
				kept.Fields[f] = v
			}
		}
		out.Replicas = append(out.Replicas, kept)
	}
	return []results.StepObservations{out}
}

// Count counts the runs whose verdict is v.
func (r Result) Count(v oracle.Verdict) int {
	n := 0
	for _, rec := range r.Records {
		if rec.Verdict == v {
			n++
		}
	}
	return n
}

// Tally counts the runs' verdicts.
func (r Result) Tally() oracle.Tally {
	var t oracle.Tally
	for _, rec := range r.Records {
		t.Add(rec.Verdict)
	}
	return t
}

// Verdicts counts the runs by verdict, as the records of reproductions keep them.
func (r Result) Verdicts() map[oracle.Verdict]int {
	m := map[oracle.Verdict]int{}
	for _, rec := range r.Records {
		m[rec.Verdict]++
	}
	return m
}

// Run runs schedule s, of the DRM and parameters h, opts.Repeat times, one after another, each
// on a fresh cluster with a results directory of its own under opts.Dir. It stops early when
// ctx ends or a run reaches opts.Until. It returns an error when a run's results cannot be
// written or read.
func Run(ctx context.Context, setup Setup, h schedules.Header, s schedules.Schedule, opts Options) (Result, error) {
	var res Result
	if opts.Repeat < 1 {
		return res, fmt.Errorf("run %s again: repeat %d times: must be at least 1", s.ID, opts.Repeat)
	}
	if err := os.MkdirAll(filepath.Dir(opts.Dir), 0o755); err != nil {
		return res, fmt.Errorf("run %s again: %w", s.ID, err)
	}
	// A directory of its own: an existing one would hold runs that resume rather than rerun.
	if err := os.Mkdir(opts.Dir, 0o755); err != nil {
		return res, fmt.Errorf("run %s again: %w", s.ID, err)
	}
	out := setup.Out
	if out == nil {
		out = io.Discard
	}
	launch := func(ctx context.Context) (executor.Plugin, error) {
		p, err := setup.Launch(ctx)
		if err != nil {
			return nil, err
		}
		return show(p, out, setup.Info.Capabilities.InNamespaces()), nil
	}
	tries, follow := opts.Repeat, (func(int, []cem.Observation) string)(nil)
	if opts.Course != nil {
		tries, follow = max(opts.Tries, opts.Repeat), course(opts.Course)
	}
	for k := 1; k <= tries && len(res.OnCourse().Records) < opts.Repeat; k++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		if follow != nil {
			fmt.Fprintf(out, "run %d (at most %d, until %d follow the recorded course)\n", k, tries, opts.Repeat)
		} else {
			fmt.Fprintf(out, "run %d of %d\n", k, opts.Repeat)
		}
		rec, ok, err := runOnce(ctx, setup, launch, h, s, filepath.Join(opts.Dir, strconv.Itoa(k)), follow, opts.Prefix)
		if err != nil {
			return res, err
		}
		if !ok {
			res.Interrupted = true
			fmt.Fprintf(out, "  interrupted: no verdict\n")
			break
		}
		res.Records = append(res.Records, rec)
		line := "  verdict: " + string(rec.Verdict)
		if rec.Detail != "" {
			line += ": " + rec.Detail
		}
		fmt.Fprintln(out, line)
		if opts.Until != "" && rec.Verdict == opts.Until {
			break
		}
	}
	return res, nil
}

// runOnce runs s once with its results in dir, and returns its record; ok is false when the
// run was interrupted before a verdict.
func runOnce(ctx context.Context, setup Setup, launch executor.Launcher, h schedules.Header, s schedules.Schedule, dir string,
	follow func(int, []cem.Observation) string, prefix *executor.Prefix) (rec results.Record, ok bool, err error) {
	store, err := results.Open(dir, results.Campaign{
		DRM: h.DRM.Name, Ops: h.Params.Ops, Replicas: h.Params.Replicas,
		ScheduleFile: "replay of " + s.ID,
		Plugin:       setup.Info.Name, PluginVersion: setup.Info.Version, ServerVersion: setup.Info.ServerVersion,
		Started: time.Now().UTC(), Schedules: 1, PluginConfig: string(setup.PluginConfig),
		Check: setup.Check, StepTimeout: setup.StepTimeout.String(), Declared: h.DRM.Spec(),
	})
	if err != nil {
		return rec, false, err
	}
	given := false
	sum, runErr := executor.Run(ctx, executor.Campaign{
		Header: h,
		Next: func() (schedules.Schedule, error) {
			if given {
				return schedules.Schedule{}, io.EOF
			}
			given = true
			return s, nil
		},
		Total: 1, Info: setup.Info, PluginConfig: setup.PluginConfig,
		Launch: launch, Store: store, Workers: 1,
		BasePort: setup.BasePort, StepTimeout: setup.StepTimeout, Check: setup.Check, Hold: setup.Hold, Trace: setup.Trace,
		KeepPasses: setup.KeepPasses, Follow: follow, Prefix: prefix,
	})
	if err := errors.Join(runErr, store.Close()); err != nil {
		return rec, false, fmt.Errorf("run %s again: %w", s.ID, err)
	}
	if sum.Schedules() == 0 {
		return rec, false, nil
	}
	recs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		return rec, false, err
	}
	if len(recs) != 1 {
		return rec, false, fmt.Errorf("run %s again: %s holds %d records, want 1", s.ID, dir, len(recs))
	}
	return recs[0], true, nil
}

// actionTime shows an action's time of day: the date is the run's.
const actionTime = "15:04:05.000000"

// shown is a plugin that shows what it is asked and what it did as each call returns; its
// clusters run in network namespaces, on the systems' own ports, or on loopback ports.
type shown struct {
	executor.Plugin
	w          io.Writer
	namespaces bool
}

func (p *shown) Start(ctx context.Context, spec cem.ClusterSpec) error {
	if p.namespaces {
		fmt.Fprintf(p.w, "  start %d replicas, each in a network namespace of its own, in %s\n", spec.Replicas, spec.Dir)
	} else {
		fmt.Fprintf(p.w, "  start %d replicas from port %d of 127.0.0.1 in %s\n", spec.Replicas, spec.BasePort, spec.Dir)
	}
	t := time.Now()
	err := p.Plugin.Start(ctx, spec)
	p.done(t, err)
	return err
}

func (p *shown) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	fmt.Fprintf(p.w, "  step %d %s\n", step.Index+1, step.Transition)
	t := time.Now()
	report, err := p.Plugin.Apply(ctx, step)
	for _, a := range report.Actions {
		fmt.Fprintf(p.w, "    %s\n", results.FormatAction(a, actionTime))
	}
	p.done(t, err)
	return report, err
}

func (p *shown) Read(ctx context.Context) (cem.Snapshot, error) {
	fmt.Fprintf(p.w, "  read every replica's data\n")
	t := time.Now()
	snap, err := p.Plugin.Read(ctx)
	p.done(t, err)
	return snap, err
}

// show wraps p so that it shows what it does on w: a shownRestorer where p restores saved
// prefixes, else a shown.
func show(p executor.Plugin, w io.Writer, namespaces bool) executor.Plugin {
	sp := &shown{Plugin: p, w: w, namespaces: namespaces}
	if r, ok := p.(cem.Restorer); ok {
		return shownRestorer{shown: sp, r: r}
	}
	return sp
}

// shownRestorer is a shown plugin that restores saved prefixes too (replay --from-prefix):
// the executor restores only through a plugin that is a cem.Restorer.
type shownRestorer struct {
	*shown
	r cem.Restorer
}

func (p shownRestorer) Save(ctx context.Context, dir string) (cem.Saved, error) {
	return p.r.Save(ctx, dir)
}

func (p shownRestorer) Restore(ctx context.Context, spec cem.ClusterSpec, dir string, steps []string) (cem.Restored, error) {
	fmt.Fprintf(p.w, "  restore %d replicas in %s from the cluster saved after step %d in %s\n", spec.Replicas, spec.Dir, len(steps), dir)
	t := time.Now()
	res, err := p.r.Restore(ctx, spec, dir, steps)
	for _, a := range res.Actions {
		fmt.Fprintf(p.w, "    %s\n", results.FormatAction(a, actionTime))
	}
	p.done(t, err)
	return res, err
}

func (p *shown) done(start time.Time, err error) {
	took := time.Since(start).Round(100 * time.Microsecond)
	if err != nil {
		fmt.Fprintf(p.w, "    failed after %v: %v\n", took, err)
		return
	}
	fmt.Fprintf(p.w, "    done in %v\n", took)
}
