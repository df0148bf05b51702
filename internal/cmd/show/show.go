// Package show is `modulo show`: print schedules as the paper prints them.
package show

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// Options are show's inputs.
type Options struct {
	Out  io.Writer
	File string
	IDs  []string // empty: every schedule
}

// NewCmd returns the show command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	cmd := &cobra.Command{
		Use:   "show FILE|CAMPAIGN [ID...]",
		Short: "Print schedules step by step, with the abstract state after each step",
		Long: `Print the schedules of a schedule file (or only those with the given IDs) one transition a
line, as the Modulo paper prints them: "D-> [0, 0, 1]" injects writes (entry i is how many
replica i receives) and fails the replicas that miss them; "C-> [0, 1]" brings replicas 0 and
1 back and resyncs. Each line ends with the abstract state after the step: writes left,
versions (rs), online (+), offline (-) or crashed (x), and replication links.

Given a campaign directory (modulo run's results) and IDs, it prints those schedules of the
campaign's model, found again from their IDs; no schedule file and no plugin are needed.`,
		Example: `  modulo show qcz.sched 3f9a0c2d41b7e6a1
  modulo show modulo-results/qcz 3f9a0c2d41b7e6a1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.File, opts.IDs = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmdutil.AddPluginDirFlag(cmd)
	return cmd
}

// Run prints the schedules opts select.
func Run(opts *Options) error {
	if _, err := os.Stat(filepath.Join(opts.File, results.CampaignFile)); err == nil {
		return showCampaign(opts)
	}
	r, f, err := schedules.Open(opts.File)
	if err != nil {
		return err
	}
	defer f.Close()
	out := bufio.NewWriter(opts.Out)
	defer out.Flush()
	h := r.Header
	fmt.Fprintf(out, "%s (%s on %s), ops=%d, replicas=%d, %d schedules, by %s\n",
		h.DRM.Title, h.DRM.Name, h.DRM.System, h.Params.Ops, h.Params.Replicas, h.Count, h.Generator)
	want := map[string]bool{}
	for _, id := range opts.IDs {
		want[id] = true
	}
	g, err := aem.NewGraph(h.DRM.Model, h.Params)
	if err != nil {
		return err
	}
	filter := len(want) > 0
	for !filter || len(want) > 0 {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if filter && !want[s.ID] {
			continue
		}
		delete(want, s.ID)
		if err := print(out, g, s); err != nil {
			return err
		}
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		return cmdutil.Usagef("%s: no schedule with ID %s", opts.File, strings.Join(missing, ", "))
	}
	return nil
}

// showCampaign prints the schedules of the campaign directory opts.File with opts.IDs.
func showCampaign(opts *Options) error {
	c, err := results.ReadCampaign(filepath.Join(opts.File, results.CampaignFile))
	if err != nil {
		return err
	}
	if len(opts.IDs) == 0 {
		return cmdutil.Usagef("%s is a campaign directory: name the IDs of the schedules to show", opts.File)
	}
	h, err := c.Header()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, id := range opts.IDs {
		want[id] = true
	}
	found, err := results.FindSchedules(c, want)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(opts.Out)
	defer out.Flush()
	fmt.Fprintf(out, "%s (%s on %s), ops=%d, replicas=%d, campaign %s\n", h.DRM.Title, h.DRM.Name, h.DRM.System, h.Params.Ops, h.Params.Replicas, opts.File)
	g, err := aem.NewGraph(h.DRM.Model, h.Params)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range opts.IDs {
		s, ok := found[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		if err := print(out, g, s); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return cmdutil.Usagef("%s: no schedule of the campaign's model has ID %s", opts.File, strings.Join(missing, ", "))
	}
	return nil
}

func print(w io.Writer, g *aem.Graph, s schedules.Schedule) error {
	fmt.Fprintf(w, "\nschedule %s (line %d)\n", s.ID, s.Line)
	return schedules.Render(w, g, s)
}
