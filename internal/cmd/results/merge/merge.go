// Package merge is `modulo results merge`: one campaign directory from the shards' directories.
package merge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/results"
)

// Options are merge's inputs, apart from flag parsing.
type Options struct {
	Out       io.Writer // the report
	Dirs      []string  // the shards' campaign directories
	Output    string    // the merged campaign's directory
	Schedules string    // the campaign's schedule file, when not where the shards recorded it
}

// NewCmd returns the merge command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	cmd := &cobra.Command{
		Use:   "merge SHARD_DIR... -o DIR",
		Short: "Make one campaign directory of the shards' (modulo run --shard)",
		Long: `Merge the results directories of the shards of one campaign (modulo run --shard K/N, or
an engine's array of tasks) into one campaign directory, DIR, that 'modulo results', 'report',
'replay' and 'shrink' read as if one machine had run the whole schedule file.

The shards must be of one campaign: the same schedule file (by SHA-256), DRM, plugin and
server versions, plugin configuration, check, number of shards and partition; merge refuses
others, naming the difference, and refuses a shard that a modulo run still holds.

Every schedule is recorded once in DIR, with its failure folder, trace, replays and shrinks.
A schedule that two directories recorded (a shard run twice, in two places) is reported: with
the same verdict it is kept once; with different verdicts both records are kept, the failing
one last, and 'modulo results' labels it flaky. A records file whose last line was cut short
by a kill, or with a line that is not a record, gives up that line only, named.

Schedules that no shard recorded are reported, by shard and ID when the schedule file is at
hand (where the shards recorded it, or --schedules FILE); run their shard again (it resumes)
and merge again: DIR, when it holds an earlier merge, is replaced whole. Running the whole
file in DIR's parent as results directory ('modulo run FILE --results-dir PARENT', DIR named
after FILE) runs the missing schedules there instead.

The exit status is 0 when every schedule has a verdict, 3 when some are missing, 2 on bad
input.`,
		Example: `  modulo results merge modulo-results/slr.shard-* -o modulo-results/slr
  modulo results merge /shared/run1/slr.shard-1-of-2 /shared/run2/slr.shard-2-of-2 -o slr --schedules slr.sched`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Dirs = args
			if opts.Output == "" {
				return cmdutil.Usagef("merge: -o DIR is required: the merged campaign's directory")
			}
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the merged campaign to `DIR`: a new directory, an empty one (kept and filled; through a link, the directory it names), or an earlier merge, which is replaced whole")
	cmd.Flags().StringVar(&opts.Schedules, "schedules", "", "the campaign's schedule `FILE`, to name the missing schedules (default: the file the shards recorded)")
	cmdutil.AddPluginDirFlag(cmd)
	return cmd
}

// Run merges and reports.
func Run(opts *Options) error {
	rep, err := results.Merge(opts.Output, opts.Dirs, opts.Schedules)
	if errors.Is(err, results.ErrMismatch) || errors.Is(err, results.ErrNotCampaign) || errors.Is(err, fs.ErrNotExist) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	w := opts.Out
	c := rep.Campaign
	fmt.Fprintf(w, "merged %d %s of %s (%s ops=%d replicas=%d) into %s: %d records, %d of %d schedules with a verdict\n",
		len(opts.Dirs), words.Plural(len(opts.Dirs), "directory", "directories"), c.ScheduleFile, c.DRM, c.Ops, c.Replicas,
		opts.Output, rep.Records, rep.Done, c.Schedules)
	for _, d := range rep.Dropped {
		fmt.Fprintf(w, "dropped: %s\n", d)
	}
	for _, d := range rep.Duplicates {
		how := "the same verdict, kept once"
		if d.Flaky {
			how = "different verdicts, flaky: both records kept"
		}
		fmt.Fprintf(w, "recorded twice: %s, %s (%s)\n", d.ID, how, strings.Join(d.Verdicts, ", "))
	}
	for _, sh := range rep.AbsentShards {
		fmt.Fprintf(w, "missing: shard %s: no directory given\n", sh)
	}
	if rep.Missing == 0 {
		return nil
	}
	if rep.Unnamed != "" {
		fmt.Fprintf(w, "missing: %d %s no verdict; not named: %s\n", rep.Missing, words.Plural(int(rep.Missing), "schedule has", "schedules have"), rep.Unnamed)
	}
	for sh, ids := range rep.Sorted() {
		fmt.Fprintf(w, "missing: shard %s: %d %s: %s\n", sh, len(ids), words.Plural(len(ids), "schedule", "schedules"), strings.Join(ids, ", "))
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitIncomplete, Err: fmt.Errorf(
		"%d of %d schedules have no verdict: run their shards again (modulo run %s --shard K/%d resumes one), then merge again",
		rep.Missing, c.Schedules, c.ScheduleFile, c.Merged.Shards[0].Shard.Count)}
}
