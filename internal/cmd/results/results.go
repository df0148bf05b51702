// Package results is `modulo results`: a campaign's summary.
package results

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/internal/cmd/results/merge"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/results"
)

// Options are results' inputs, apart from flag parsing.
type Options struct {
	Out io.Writer
	Dir string // a campaign's results directory, or a directory of them
}

// NewCmd returns the results command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	cmd := &cobra.Command{
		Use:   "results [DIR]",
		Short: "Summarise a campaign: verdicts, progress, time per schedule, every non-pass",
		Long: `Summarise the campaign whose results are in DIR: what ran (DRM, parameters, plugin and
server versions, the plugin configuration), how many of its schedules have a verdict, the
verdicts, the median and 90th percentile of the time per schedule, and every schedule that
did not pass, one line each: its ID, its verdict, how often it reproduced when replayed
('modulo replay --repeat'), the smallest schedule it shrank to ('modulo shrink') and what
went wrong.

A failure whose latest replay reproduced it 0 times is labelled flaky, not fail: it is not a
bug until it fails again. An error verdict is a fault of the harness and does not count as
done: the next 'modulo run' retries it.

DIR defaults to ` + config.Default().ResultsDir + `; a directory holding several campaigns' directories
summarises each.

'modulo results merge' makes one campaign directory of the shards' (modulo run --shard).`,
		Example: `  modulo results modulo-results/slr
  modulo results`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Dir = config.Default().ResultsDir
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmd.AddCommand(merge.NewCmd(out, nil))
	return cmd
}

// Run prints the summary of the campaign in opts.Dir, or of every campaign under it.
func Run(opts *Options) error {
	dirs, err := results.Campaigns(opts.Dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, results.ErrNotCampaign) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	for i, dir := range dirs {
		s, err := results.ReadSummary(dir)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(opts.Out)
		}
		if err := s.WriteText(opts.Out); err != nil {
			return err
		}
	}
	return nil
}
