// Package plugins is `modulo plugins`: the plugins modulo finds, and the DRMs they realise.
package plugins

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
)

// Options are the inputs of `modulo plugins`, apart from flag parsing.
type Options struct {
	Out       io.Writer
	PluginDir string // searched first, when set
	// Catalogue finds the plugins; nil means a new one whose plugins' messages go to Out.
	Catalogue *executor.Catalogue
}

// NewCmd returns the plugins command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	cmd := &cobra.Command{
		Use:   "plugins [--plugin-dir DIR]",
		Short: "List the plugins modulo finds, their versions and the DRMs they realise",
		Long: `List the DRM plugins that modulo finds (modulo-plugin-* binaries, in --plugin-dir, next
to modulo, then on $PATH; the first of each name is the one that runs), each with its version,
the version of the server it drives (with its default configuration), the DRMs it realises and
the failure kinds it can give them here (crash, power-loss, partition, pause; a kind this host
cannot give is listed after the table with why). After the table: the other releases of each
server that scripts/setup built into modulo's cache ($MODULO_CACHE, else ~/.cache/modulo), and
the line of the plugin's table (modulo run --config) that runs one.

A quorum DRM's failures take more kinds when its name adds them: qcz+pause is Q/C/Z with each
failing replica crashed or paused, qne+crash etc. ('modulo gen --drm qcz+pause', docs/aem.md).
A crash-link DRM's take power loss: pgl+power-loss crashes each failing server or cuts its power.

A plugin may declare DRMs of its own, for a system the built-in catalogue does not hold: they
work with gen, show, run, replay, shrink and report as the built-in ones do. Two plugins that
declare one name, or a declaration that takes a built-in name, are errors listed here.`,
		Example: `  modulo plugins
  modulo plugins --plugin-dir ~/my-plugins`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmd.Flags().StringVar(&opts.PluginDir, "plugin-dir", "", "look for plugins in `DIR` first")
	return cmd
}

// Run lists the plugins found.
func Run(opts *Options) error {
	c := opts.Catalogue
	if c == nil {
		c = executor.NewCatalogue(opts.Out)
	}
	if opts.PluginDir != "" {
		c.AddDir(opts.PluginDir)
	}
	found := c.Plugins()
	if len(found) == 0 {
		_, err := fmt.Fprintln(opts.Out, "no plugin found: build them with scripts/setup, or pass --plugin-dir")
		return err
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tVERSION\tSERVER\tDRMS\tFAILURES\tPATH")
	var cannot, releases []string
	for _, f := range found {
		if f.Err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\t(see problems)\t-\t%s\n", strings.TrimPrefix(filepath.Base(f.Path), cem.PluginPrefix), f.Path)
			continue
		}
		var kinds []string
		for _, k := range f.Info.Capabilities.Failures {
			if name, why, no := strings.Cut(k, ": "); no {
				cannot = append(cannot, fmt.Sprintf("  %s: no %s here: %s", f.Info.Name, name, why))
			} else {
				kinds = append(kinds, name)
			}
		}
		if len(kinds) == 0 {
			kinds = []string{"-"}
		}
		if len(f.Info.Releases) > 0 {
			releases = append(releases, fmt.Sprintf("  %s: %s\t%s", f.Info.Name, strings.Join(f.Info.Releases, ", "), f.Info.ReleaseSetting))
		}
		server := f.Info.ServerVersion
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Info.Name, f.Info.Version, server, strings.Join(f.Info.Capabilities.DRMs, ", "), strings.Join(kinds, ", "), f.Path)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(releases) > 0 {
		fmt.Fprintln(opts.Out, "\nreleases built in modulo's cache (scripts/setup), each run by its line in the plugin's table:")
		rw := tabwriter.NewWriter(opts.Out, 0, 8, 3, ' ', 0)
		fmt.Fprintln(rw, strings.Join(releases, "\n"))
		if err := rw.Flush(); err != nil {
			return err
		}
	}
	if len(cannot) > 0 {
		fmt.Fprintf(opts.Out, "\nfailure kinds this host cannot give:\n%s\n", strings.Join(cannot, "\n"))
	}
	declared, err := c.Declared()
	if len(declared) > 0 {
		fmt.Fprintln(opts.Out, "\nDRMs that plugins declare:")
		for _, d := range declared {
			fmt.Fprintf(opts.Out, "  %s (%s on %s, %s rules; defaults ops %d, replicas %d): %s\n",
				d.Name, d.Title, d.System, d.Model.Rules(), d.Defaults.Ops, d.Defaults.Replicas, strings.TrimSpace(d.Summary))
		}
	}
	fmt.Fprintf(opts.Out, "\nbuilt-in DRMs: %s\n", strings.Join(drms.Names(), ", "))
	if err != nil {
		fmt.Fprintln(opts.Out, "\nproblems:")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(opts.Out, "  %s\n", line)
		}
	}
	return nil
}
