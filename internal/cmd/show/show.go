// Package show is `modulo show`: print schedules as the paper prints them.
package show

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/internal/cmdutil"
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
	return &cobra.Command{
		Use:   "show FILE [ID...]",
		Short: "Print schedules step by step, with the abstract state after each step",
		Long: `Print the schedules of a schedule file (or only those with the given IDs) one transition a
line, as the Modulo paper prints them: "D-> [0, 0, 1]" injects writes (entry i is how many
replica i receives) and fails the replicas that miss them; "C-> [0, 1]" brings replicas 0 and
1 back and resyncs. Each line ends with the abstract state after the step: writes left,
versions (rs), online (+), offline (-) or crashed (x), and replication links.`,
		Example: `  modulo show qcz.sched 3f9a0c2d41b7e6a1`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.File, opts.IDs = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
}

// Run prints the schedules opts select.
func Run(opts *Options) error {
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

func print(w io.Writer, g *aem.Graph, s schedules.Schedule) error {
	fmt.Fprintf(w, "\nschedule %s (line %d)\n", s.ID, s.Line)
	return schedules.Render(w, g, s)
}
