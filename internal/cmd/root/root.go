// Package root assembles modulo's commands.
package root

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/cmd/gen"
	"github.com/modulo-testing/modulo/internal/cmd/plugin"
	"github.com/modulo-testing/modulo/internal/cmd/plugins"
	"github.com/modulo-testing/modulo/internal/cmd/replay"
	"github.com/modulo-testing/modulo/internal/cmd/report"
	"github.com/modulo-testing/modulo/internal/cmd/results"
	"github.com/modulo-testing/modulo/internal/cmd/run"
	"github.com/modulo-testing/modulo/internal/cmd/show"
	"github.com/modulo-testing/modulo/internal/cmd/shrink"
	"github.com/modulo-testing/modulo/internal/cmdutil"
)

// NewCmd returns the modulo command with every subcommand.
func NewCmd(out, errOut io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "modulo",
		Short: "Find convergence failure bugs in replicated storage systems",
		Long: `modulo finds convergence failure bugs: failures and recoveries after which the replicas of
a replicated storage system never again hold the same data (Modulo, USENIX ATC'22).

A divergence resync model (DRM) pairs an abstract model of failures and resyncs with a plugin
that performs them on a real cluster. 'modulo gen' enumerates a DRM's schedules; 'modulo run'
replays them on real clusters and compares every replica's data afterwards.`,
		Version:       build.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.Usage(err) })
	cmd.AddCommand(gen.NewCmd(out, nil), show.NewCmd(out, nil), run.NewCmd(out, nil))
	cmd.AddCommand(results.NewCmd(out, nil), replay.NewCmd(out, nil), shrink.NewCmd(out, nil), report.NewCmd(out, nil))
	catalogue := executor.NewCatalogue(errOut)
	drms.SetResolver(catalogue)
	cmd.AddCommand(plugin.NewCmd(out, nil), plugins.NewCmd(out, func(o *plugins.Options) error {
		o.Catalogue = catalogue
		return plugins.Run(o)
	}))
	// A DRM that a plugin in --plugin-dir declares is known to every command that takes it.
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) {
		if f := c.Flags().Lookup("plugin-dir"); f != nil && f.Changed {
			catalogue.AddDir(f.Value.String())
		}
	}
	markRan(cmd)
	return cmd
}

// markRan makes every command's own errors *cmdutil.RanError: an error without the mark comes
// from cobra reading the command line (an unknown command, a wrong number of arguments) and is
// a usage error.
func markRan(cmd *cobra.Command) {
	if runE := cmd.RunE; runE != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if err := runE(c, args); err != nil {
				return &cmdutil.RanError{Err: err}
			}
			return nil
		}
	}
	for _, c := range cmd.Commands() {
		markRan(c)
	}
}
