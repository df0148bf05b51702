// Package shrink is `modulo shrink`: search for a shorter schedule that still fails, running
// every candidate on real clusters.
package shrink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/rerun"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
	"github.com/modulo-testing/modulo/shrink"
)

// Options are shrink's inputs, apart from flag parsing.
type Options struct {
	Out    io.Writer // a line per candidate, and the result
	ErrOut io.Writer // the plugin's messages
	// Context, when set, stops the search as Ctrl-C does when it is cancelled.
	Context context.Context

	Dir      string // the campaign's results directory
	ID       string
	Repeat   int
	MaxTries int
	cmdutil.Settings
}

// Defaults of the flags.
const (
	DefaultRepeat   = 3
	DefaultMaxTries = 200
)

// NewCmd returns the shrink command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	var setFlags func()
	cmd := &cobra.Command{
		Use:   "shrink DIR ID [--repeat K]",
		Short: "Find a shorter schedule that still fails, and record the smallest",
		Long: `Search for a shorter schedule than ID, a failure of the campaign whose results are in DIR,
that still fails on a real cluster.

First ID is run --repeat times to confirm that it fails (recorded in DIR/reproductions.jsonl
as a replay is); a failure that does not reproduce is flaky, and is not shrunk. Then the
candidates one edit away are made - dropping runs of transitions, merging two divergences
into one, lowering a divergence's write count - and only those that are complete schedules
of the DRM's model are kept, with ops set to the writes they add up to. They are tried
shortest first, each run up to --repeat times until it fails; the first that fails becomes
the schedule to shrink, until no candidate one edit away fails or --max-tries candidates
were tried. The smallest is then run --repeat times for its reproduction rate.

The result goes to DIR/shrunk/ID/: shrink.json (the smallest schedule, its reproduction
rate, every candidate tried) and schedule.sched, the smallest as a schedule file of its own
('modulo show' and 'modulo run' read it; 'modulo replay DIR SMALLEST_ID' runs it again).
Every run keeps its results under DIR/shrunk/ID/runs/.

The plugin runs with the campaign's plugin table unless --config names a file. The exit
status is 0 when a result was recorded, 3 when the schedule did not fail again or the search
was interrupted, 2 on bad input.`,
		Example: `  modulo shrink modulo-results/slr 0b98d909dcdb6ee8
  modulo shrink modulo-results/slr 0b98d909dcdb6ee8 --repeat 5 --max-tries 50`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.ID = args[0], args[1]
			opts.ErrOut = cmd.ErrOrStderr()
			opts.Context = cmd.Context()
			setFlags()
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Repeat, "repeat", DefaultRepeat, "run each schedule up to `K` times")
	f.IntVar(&opts.MaxTries, "max-tries", DefaultMaxTries, "try at most `N` candidates")
	setFlags = cmdutil.AddSettingFlags(cmd, &opts.Settings)
	return cmd
}

// Run shrinks the schedule opts name and records the smallest that still fails.
func Run(opts *Options) error {
	if opts.Repeat < 1 {
		return cmdutil.Usagef("--repeat must be at least 1, got %d", opts.Repeat)
	}
	if opts.MaxTries < 1 {
		return cmdutil.Usagef("--max-tries must be at least 1, got %d", opts.MaxTries)
	}
	ctx, stop := cmdutil.Interruptible(opts.Context)
	defer stop()
	errOut := cmdutil.Stderr(opts.ErrOut)
	out := opts.Out

	t, err := rerun.Find(opts.Dir, opts.ID)
	if rerun.IsBadTarget(err) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	if t.Want != oracle.Fail && t.Want != oracle.Incomplete {
		return cmdutil.Usagef("schedule %s's verdict is %s: only a fail or an incomplete is shrunk", opts.ID, t.Want)
	}
	if err := t.Prepare(ctx, opts.ConfigFile, opts.Overrides, errOut); err != nil {
		return err
	}
	start := time.Now()
	runs := filepath.Join(results.ShrunkDir, opts.ID, results.ShrinkRunsDir, start.UTC().Format(results.Stamp))
	orig := shrink.Candidate{Steps: t.Schedule.Steps, Ops: t.Header.Params.Ops}
	fmt.Fprintf(out, "shrink %s (%s); runs kept in %s\n", opts.ID, shrink.Describe(orig), filepath.Join(opts.Dir, runs))
	t.Describe(out)

	// Confirm that it fails: a failure that does not reproduce is not shrunk.
	dir := filepath.Join(runs, "confirm")
	res, err := rerun.Run(ctx, t.Setup, t.Header, t.Schedule, rerun.Options{Repeat: opts.Repeat, Dir: filepath.Join(opts.Dir, dir)})
	if err != nil {
		return err
	}
	if res.Interrupted {
		return interrupted()
	}
	confirm := t.Reproduction(res, "shrink", dir, start)
	if err := results.AppendReproduction(opts.Dir, confirm); err != nil {
		return err
	}
	fmt.Fprintf(out, "confirm: %s in %d of %d runs (%s)\n", t.Want, confirm.Reproduced, confirm.Repeat, res.Tally())
	if confirm.Reproduced == 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitIncomplete,
			Err: fmt.Errorf("schedule %s did not %s again in %d runs: flaky, nothing to shrink", opts.ID, verb(t.Want), confirm.Repeat)}
	}

	sh := shrink.New(t.Header.DRM.Model, t.Header.Params.Replicas)
	var tries []results.ShrinkTry
	try := func(ctx context.Context, c shrink.Candidate) (bool, error) {
		h, s := candidate(t.Header, c)
		dir := filepath.Join(runs, fmt.Sprintf("try-%03d-%s", len(tries)+1, s.ID))
		res, err := rerun.Run(ctx, t.Setup, h, s, rerun.Options{Repeat: opts.Repeat, Until: t.Want, Dir: filepath.Join(opts.Dir, dir)})
		if err != nil {
			return false, err
		}
		if res.Interrupted {
			return false, context.Cause(ctx)
		}
		failed := res.Count(t.Want) > 0
		tries = append(tries, results.ShrinkTry{
			Shape: shape(s.ID, c), Edit: c.Edit, Runs: len(res.Records), Verdicts: res.Verdicts(), Failed: failed, Dir: dir,
		})
		mark := ""
		if failed {
			mark = "  <- still " + verbs(t.Want)
		}
		fmt.Fprintf(out, "try %d: %s (%s): %s%s\n", len(tries), shrink.Describe(c), c.Edit, res.Tally(), mark)
		return failed, nil
	}
	found, err := sh.Search(ctx, orig.Steps, opts.MaxTries, try)
	if ctx.Err() != nil {
		return interrupted()
	}
	if err != nil {
		return err
	}
	if found.Exhausted {
		fmt.Fprintf(out, "stopped after %d candidates (--max-tries); candidates were left\n", found.Tried)
	}

	record := results.Shrunk{
		Of: shape(opts.ID, orig), Want: t.Want, Tries: tries, Start: start.UTC(),
		Repeat: confirm.Repeat, Reproduced: confirm.Reproduced, Dir: confirm.Dir,
	}
	h, s := candidate(t.Header, found.Smallest)
	record.Smallest = shape(s.ID, found.Smallest)
	if s.ID != opts.ID {
		dir := filepath.Join(runs, "final-"+s.ID)
		res, err := rerun.Run(ctx, t.Setup, h, s, rerun.Options{Repeat: opts.Repeat, Dir: filepath.Join(opts.Dir, dir)})
		if err != nil {
			return err
		}
		if res.Interrupted {
			return interrupted()
		}
		record.Repeat, record.Reproduced, record.Dir = len(res.Records), res.Count(t.Want), dir
	}
	record.End = time.Now().UTC()
	h.Generator = build.Generator + ", shrink of " + opts.ID
	if err := results.WriteShrunk(opts.Dir, h, record); err != nil {
		return err
	}
	if s.ID == opts.ID {
		fmt.Fprintf(out, "no smaller schedule %s (%d %s tried); %s %s in %s runs\n",
			verbs(t.Want), found.Tried, words.Plural(found.Tried, "candidate", "candidates"), opts.ID, verbs(t.Want), record.Rate())
	} else {
		fmt.Fprintf(out, "smallest: %s (%s), %s in %s runs; %d %s tried\n",
			s.ID, shrink.Describe(found.Smallest), verbs(t.Want), record.Rate(), found.Tried, words.Plural(found.Tried, "candidate", "candidates"))
	}
	fmt.Fprintf(out, "recorded in %s\n", results.ShrunkPath(opts.Dir, opts.ID))
	return nil
}

// candidate returns the header and schedule of candidate c: the campaign's DRM and replicas,
// c's write count, and the ID that goes with them.
func candidate(h schedules.Header, c shrink.Candidate) (schedules.Header, schedules.Schedule) {
	h.Params.Ops, h.Count = c.Ops, 1
	body := schedules.Body(c.Steps)
	return h, schedules.Schedule{ID: schedules.ID(h.DRM.Name, h.Params, body), Steps: c.Steps}
}

func shape(id string, c shrink.Candidate) results.Shape {
	return results.Shape{ID: id, Body: c.Body(), Steps: len(c.Steps), Ops: c.Ops}
}

// verb says what a schedule with verdict v does: "fail", or "stay incomplete".
func verb(v oracle.Verdict) string {
	if v == oracle.Incomplete {
		return "stay incomplete"
	}
	return "fail"
}

// verbs is verb for one schedule: "fails", or "stays incomplete".
func verbs(v oracle.Verdict) string {
	if v == oracle.Incomplete {
		return "stays incomplete"
	}
	return "fails"
}

func interrupted() error {
	return &cmdutil.ExitError{Code: cmdutil.ExitIncomplete, Err: errors.New("interrupted: nothing recorded in shrunk/")}
}
