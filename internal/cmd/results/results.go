// Package results is `modulo results`: a campaign's summary.
package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/internal/cmd/results/merge"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/rerun"
	"github.com/modulo-testing/modulo/results"
)

// Options are results' inputs, apart from flag parsing.
type Options struct {
	Out    io.Writer
	Dir    string // a campaign's results directory, or a directory of them
	Format string // one of formats' names: text, json or junit
	// Reproduce, when above 0, first replays each group's shortest schedule that many times,
	// following its recorded course where its plugin observes one, and records how often its
	// verdict reproduced; ErrOut says how each went.
	Reproduce int
	ErrOut    io.Writer
	// Context, when set, stops the replays as Ctrl-C does when it is cancelled.
	Context context.Context
	cmdutil.Settings
}

// NewCmd returns the results command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	var setFlags func()
	cmd := &cobra.Command{
		Use:   "results [DIR]",
		Short: "Summarise a campaign: verdicts, progress, time per schedule, every non-pass",
		Long: `Summarise the campaign whose results are in DIR: what ran (DRM, parameters, plugin and
server versions, the plugin configuration), how many of its schedules have a verdict, the
verdicts, the median and 90th percentile of the time per schedule, then the schedules that
did not pass grouped by signature, then each of them, one line each: its ID, its verdict, its
group, how often it reproduced when replayed ('modulo replay --repeat'), the smallest
schedule it shrank to ('modulo shrink') and what went wrong.

A signature is what failures of one bug share, read from the record: a divergence's or a lost
write's shape (what each differing replica holds against the acknowledged writes, and which
step wrote them, counted back from the step judged) and the sync its replicas took; for
another non-pass, its detail with numbers, addresses and IDs taken out. A group says how many
schedules share it, how many independent runs they come from (a schedule restored from
another's saved prefix counts with that run), when it was first seen, its shortest schedule
(replay that one first: 'modulo replay DIR ID --follow') and how often its replayed schedules
reproduced.

--reproduce K measures those rates first: for each group, it replays the group's shortest
schedule until K runs followed the recorded course (at most 4K runs; every run counts where
the plugin observes nothing), from the saved prefix its run restored where its failure
folder keeps one (replay --from-prefix), as 'modulo replay DIR ID --repeat K --follow' does, records the
rate, and says on standard error how each went; then it prints the summary. It takes the
campaign's plugin table unless --config names a file. It is a campaign of its own: minutes a
group.

A failure whose latest replay reproduced it 0 times is labelled flaky, not fail: it is not a
bug until it fails again (unless every run of that replay ended in an error). An error verdict is a fault of the harness and does not count as
done: the next 'modulo run' retries it.

DIR defaults to ` + config.Default().ResultsDir + `; a directory holding several campaigns' directories
summarises each.

'modulo results merge' makes one campaign directory of the shards' (modulo run --shard).

Formats (--format):

  text   the summary above, for people (the default)
  json   one JSON document for programs: {"campaigns": [...]}, an object per campaign with
           dir         the campaign's results directory
           campaign    drm, ops, replicas, schedule_file, plugin, plugin_version,
                       server_version, modulo_version, started (RFC 3339)
            groups      the non-passes by signature, the largest first: signature,
                       schedules (their IDs), independent_runs, first_seen, shortest,
                       shortest_steps, replayed (schedules replayed), reproduced and
                       runs_replayed (summed over their latest replays), runs_followed and
                       runs_made (over the replays with --follow: the runs that followed
                       the recorded course, and every run made)
           summary     total (the campaign's schedules), done (those with a verdict that
                       holds), pass, fail, flaky, incomplete, error, nonconformant and unrealisable (the
                       schedules with a verdict by label, as the text counts them), failed_by_class
                       (the fails by class: divergence, lost-write, broken-replication,
                       self-check) and not_passed_by_kind (for a DRM that mixes failure
                       kinds, the non-passes that take each kind: crash, power-loss,
                       partition, pause; {} otherwise)
           not_passed  every schedule that did not pass, in the order recorded: id,
                       verdict (as recorded), flaky (true when labelled flaky), class (of
                       a fail; "" otherwise), step (the 1-based step after which a fail
                       was seen; 0: at the end), detail, at_end (what the end alone
                       showed), failure_dir (its failure folder, relative to dir; "" if
                       none), signature, group (its 1-based place in groups)
         Every field is always there. Passes are counted, not listed.
  junit  JUnit XML for CI test reports: a <testsuite> per campaign, and a <testcase> per
         schedule with a verdict (its latest record), named "ID BODY" (BODY: the
         schedule's transitions, when its ID is the DRM model's), classname modulo.DRM,
         its time in seconds. A fail holds <failure type="CLASS">, an incomplete <failure
         type="incomplete">, an error <error type="error"> (a nonconformant one <error
         type="nonconformant">), each with the message
         "TYPE: DETAIL" and the detail and its signature as its text; an unrealisable one
         <skipped type="unrealisable"> with the plugin's reason. A schedule labelled flaky passes,
         holding a <flakyFailure> or <flakyError> instead (Maven Surefire's mark of a test
         that failed, then passed when run again).`,
		Example: `  modulo results modulo-results/slr
  modulo results
  modulo results --format junit modulo-results/slr > modulo-junit.xml
  modulo results modulo-results/qcn --reproduce 5`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = config.Default().ResultsDir
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			opts.ErrOut, opts.Context = cmd.ErrOrStderr(), cmd.Context()
			setFlags()
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", formats[0].name,
		"print the summary as `FORMAT`: "+formatNames()+" (see Formats above)")
	cmd.Flags().IntVar(&opts.Reproduce, "reproduce", 0, "first replay each group's shortest schedule until `K` runs followed its recorded course, and record how often it reproduced")
	cmd.AddCommand(merge.NewCmd(out, nil))
	setFlags = cmdutil.AddSettingFlags(cmd, &opts.Settings)
	return cmd
}

// Run prints the summary of the campaign in opts.Dir, or of every campaign under it, in
// opts.Format ("" is text).
func Run(opts *Options) error {
	format := formats[0]
	if opts.Format != "" {
		i := slices.IndexFunc(formats, func(f outputFormat) bool { return f.name == opts.Format })
		if i < 0 {
			return cmdutil.Usagef("--format must be %s, got %q", formatNames(), opts.Format)
		}
		format = formats[i]
	}
	dirs, err := results.Campaigns(opts.Dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, results.ErrNotCampaign) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	if opts.Reproduce < 0 {
		return cmdutil.Usagef("--reproduce must be at least 1 (or 0: do not replay), got %d", opts.Reproduce)
	}
	if opts.Reproduce > 0 {
		if len(dirs) != 1 {
			return cmdutil.Usagef("--reproduce replays the groups of one campaign, and %s holds %d: name one", opts.Dir, len(dirs))
		}
		if err := reproduce(opts, dirs[0]); err != nil {
			return err
		}
	}
	// JSON and JUnit make one document of every campaign: all are read before any is written.
	sums := make([]*results.Summary, len(dirs))
	for i, dir := range dirs {
		if sums[i], err = results.ReadSummary(dir); err != nil {
			return err
		}
	}
	return format.write(opts.Out, sums)
}

// reproduce replays the shortest schedule of each group of the campaign in dir, opts.Reproduce
// runs each, following the recorded course where there is one.
func reproduce(opts *Options, dir string) error {
	ctx, stop := cmdutil.Interruptible(opts.Context)
	defer stop()
	errOut := cmdutil.Stderr(opts.ErrOut)
	sum, err := results.ReadSummary(dir)
	if err != nil {
		return err
	}
	groups := sum.Groups()
	for i, g := range groups {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted before group %d of %d", i+1, len(groups))
		}
		t, err := rerun.Find(dir, g.Shortest)
		if err != nil {
			return err
		}
		mopts := rerun.MeasureOptions{Repeat: opts.Reproduce}
		r, _ := t.Recorded()
		mopts.Follow = len(r.Observations) > 0
		// A schedule whose run restored a prefix is replayed from it where its folder keeps it:
		// from scratch, the prefix's runs take other courses.
		if _, err := results.ReadPrefix(dir, g.Shortest); r.Restored != nil && err == nil {
			mopts.FromPrefix = true
		}
		if err := t.Check(&mopts); err != nil {
			return err
		}
		if err := t.Prepare(ctx, opts.ConfigFile, opts.Overrides, errOut); err != nil {
			return err
		}
		t.Setup.Out = io.Discard
		from := ""
		if mopts.FromPrefix {
			from = fmt.Sprintf(", each from the prefix it restored (%s's, kept in its folder)", r.Restored.From)
		}
		fmt.Fprintf(errOut, "group %d of %d (%d %s): replaying %s, %d %s%s\n", i+1, len(groups), len(g.IDs),
			words.Plural(len(g.IDs), "schedule", "schedules"), g.Shortest, opts.Reproduce, words.Plural(opts.Reproduce, "run", "runs"), from)
		m, err := t.Measure(ctx, mopts, "replay")
		if err != nil {
			return fmt.Errorf("group %d, schedule %s: %w", i+1, g.Shortest, err)
		}
		fmt.Fprintf(errOut, "  %s (runs kept in %s)\n", m.Line(t), filepath.Join(dir, m.Dir))
	}
	return nil
}
