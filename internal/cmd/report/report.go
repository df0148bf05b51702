// Package report is `modulo report`: a campaign's results as one self-contained HTML file.
package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/report"
	"github.com/modulo-testing/modulo/results"
)

// Options are report's inputs, apart from flag parsing.
type Options struct {
	Out    io.Writer // the report when Output is "-", else the line saying where it went
	Dir    string    // the campaign's results directory
	Output string    // the HTML file; "-" for Out
}

// NewCmd returns the report command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	cmd := &cobra.Command{
		Use:   "report DIR -o FILE",
		Short: "Write a campaign's results as one self-contained HTML file",
		Long: `Write the results of the campaign in DIR as one HTML file that needs nothing else to be
viewed: no script, no network, its style and its charts (SVG) inside it. It shows:

  - the campaign: DRM, parameters, plugin and server versions, plugin configuration
  - the verdicts, flaky failures (see 'modulo results') apart
  - the coverage curve: schedules with a verdict over time as a share of all (the Modulo
    paper's Figure 4), with the failures marked where they were found
  - histograms of the time per schedule and per step kind (start, divergence, convergence,
    offline resync, read)
  - for each schedule that did not pass (the first ` + fmt.Sprint(report.MaxDrawn) + `; the rest are listed): its
    timeline per replica as the paper's Figure 2 draws one (online, offline or crashed after
    each step, writes received, failures, resyncs and links; hover a cell for the concrete
    actions), beside each replica's final data with the differing values marked, its
    replays' reproduction rate and the schedule it shrank to

Output: -o - writes the report to standard output.
` + fsutil.OutputRule + `
A report that fails leaves a regular FILE as it was.`,
		Example: `  modulo report modulo-results/slr -o slr.html
  chromium --headless --no-sandbox --screenshot=slr.png --window-size=1280,2000 file://$PWD/slr.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the report to `FILE` (- for standard output)")
	cmdutil.AddPluginDirFlag(cmd)
	return cmd
}

// Run writes the report of the campaign in opts.Dir.
func Run(opts *Options) error {
	if opts.Output == "" {
		return cmdutil.Usagef("-o FILE is required: where to write the report (- for standard output)")
	}
	// A directory of campaigns, as 'modulo results' takes it, is fine when it holds one.
	dirs, err := results.Campaigns(opts.Dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, results.ErrNotCampaign) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	if len(dirs) > 1 {
		return cmdutil.Usagef("%s holds %d campaigns (%s): name one; a report is of one campaign", opts.Dir, len(dirs), strings.Join(dirs, ", "))
	}
	s, err := results.ReadSummary(dirs[0])
	if err != nil {
		return err
	}
	if opts.Output == "-" {
		return report.Write(opts.Out, s)
	}
	if err := fsutil.WriteFile(opts.Output, 0o644, func(w io.Writer) error { return report.Write(w, s) }); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = fmt.Fprintf(opts.Out, "wrote %s\n", opts.Output)
	return err
}
