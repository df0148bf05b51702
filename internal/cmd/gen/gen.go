// Package gen is `modulo gen`: enumerate a DRM's schedules into a schedule file.
package gen

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/schedules"
)

// BigRun is how many schedules gen writes without --limit or --force.
const BigRun = 1_000_000

// Options are gen's inputs, apart from flag parsing.
type Options struct {
	Out      io.Writer
	DRM      string
	Ops      *int // nil: the DRM's default
	Replicas *int // nil: the DRM's default
	Output   string
	Count    bool
	Limit    uint64
	Force    bool
	// Sample, when not 0, draws that many schedules at random with Seed instead of writing
	// them all.
	Sample uint64
	Seed   uint64
}

// NewCmd returns the gen command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	var ops, replicas int
	cmd := &cobra.Command{
		Use:   "gen --drm NAME [--ops N] [--replicas N] [-o FILE]",
		Short: "Enumerate every schedule of a DRM into a schedule file",
		Long: `Enumerate every schedule of a divergence resync model (DRM): every maximal path of
its abstract execution model, with symmetric paths reduced to one.

--ops is the number of writes a schedule injects, --replicas the cluster size. Both default to
what the paper ran for the DRM. Counts grow fast with both: --count tells the number at once,
without enumerating.

DRMs (the paper's, etcd's from the plugin tutorial, and those whose crashes are power losses;
defaults are the paper's where it ran the model):
` + drmHelp() + `
and every DRM that a plugin declares ('modulo plugins' lists them, with the defaults their
authors chose).

The file has a header, then one schedule per line: an ID derived from the schedule's content
and its transitions, such as "D[0,0,1] C[0,1] C[2]". 'modulo show FILE' prints them as the
paper does, with the abstract state after each step.

Output: without -o, or with -o -, the schedules go to standard output.
` + fsutil.OutputRule + `
A run that fails leaves a regular FILE as it was.`,
		Example: `  modulo gen --drm qcz --ops 5 --replicas 3 -o qcz-5x3.sched
  modulo gen --drm slr --count
  modulo gen --drm qcz --ops 6 --limit 1000 -o sample.sched`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("ops") {
				opts.Ops = &ops
			}
			if cmd.Flags().Changed("replicas") {
				opts.Replicas = &replicas
			}
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DRM, "drm", "", "the DRM: "+strings.Join(drms.Names(), ", ")+" or a plugin's (required)")
	f.IntVar(&ops, "ops", 0, "writes per schedule (default: the paper's setting, or the declaring plugin's)")
	f.IntVar(&replicas, "replicas", 0, "replicas in the cluster (default: the paper's setting, or the declaring plugin's)")
	f.StringVarP(&opts.Output, "output", "o", "", "write the schedules to `FILE` (- or none: standard output); see Output above")
	f.BoolVar(&opts.Count, "count", false, "print only the number of schedules")
	f.Uint64Var(&opts.Limit, "limit", 0, "write only the first `N` schedules")
	f.Uint64Var(&opts.Sample, "sample", 0, "write `N` schedules drawn uniformly at random from all of them, without enumerating them (for depths beyond enumeration), in canonical order")
	f.Uint64Var(&opts.Seed, "seed", 1, "the `SEED` of --sample: one seed draws one sample on every machine")
	f.BoolVar(&opts.Force, "force", false, fmt.Sprintf("write more than %d schedules", BigRun))
	cmdutil.AddPluginDirFlag(cmd)
	return cmd
}

func drmHelp() string {
	var b strings.Builder
	for _, d := range drms.Builtin() {
		fmt.Fprintf(&b, "  %-5s %-7s %-10s %s (defaults: ops %d, replicas %d)\n", d.Name, d.Title, d.System, d.Summary, d.Defaults.Ops, d.Defaults.Replicas)
	}
	return b.String()
}

// Run generates or counts schedules as opts say.
func Run(opts *Options) error {
	if opts.DRM == "" {
		return cmdutil.Usagef("--drm is required (one of %s, or a plugin's: modulo plugins)", strings.Join(drms.Names(), ", "))
	}
	d, err := drms.Lookup(opts.DRM)
	if err != nil {
		return cmdutil.Usage(err)
	}
	p := d.Defaults
	if opts.Ops != nil {
		p.Ops = *opts.Ops
	}
	if opts.Replicas != nil {
		p.Replicas = *opts.Replicas
	}
	if err := p.Validate(); err != nil {
		return cmdutil.Usagef("%s: %w", d.Name, err)
	}
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		return cmdutil.Usage(err)
	}
	total, err := g.Count()
	if err != nil {
		return fmt.Errorf("count %s ops=%d replicas=%d: %w", d.Name, p.Ops, p.Replicas, err)
	}
	if opts.Count {
		_, err := fmt.Fprintln(opts.Out, total)
		return err
	}
	if opts.Sample > 0 && opts.Limit > 0 {
		return cmdutil.Usagef("--sample and --limit choose schedules two ways: pass one")
	}
	write := func(w io.Writer) error {
		var err error
		if opts.Sample > 0 {
			_, err = schedules.Sample(w, d, p, build.Generator, opts.Sample, opts.Seed)
		} else {
			_, err = schedules.Generate(w, d, p, build.Generator, opts.Limit)
		}
		return err
	}
	if total > BigRun && opts.Limit == 0 && opts.Sample == 0 && !opts.Force {
		return cmdutil.Usagef("%s with ops=%d replicas=%d has %d schedules; pass --limit N to write the first N, --sample N to draw N at random, or --force to write them all", d.Name, p.Ops, p.Replicas, total)
	}
	if opts.Output == "" || opts.Output == "-" {
		return write(opts.Out)
	}
	return fsutil.WriteFile(opts.Output, 0o644, write)
}
