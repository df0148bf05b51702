package schedules

import (
	"fmt"
	"io"

	"github.com/modulo-testing/modulo/aem"
)

// Render prints s one transition a line as the Modulo paper prints schedules ("D-> [0, 0, 1]"),
// each with the abstract state after it. g is the graph of the file's model and parameters; pass
// the same one for every schedule of a file.
func Render(w io.Writer, g *aem.Graph, s Schedule) error {
	nodes, err := g.Follow(s.Steps)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	fmt.Fprintf(w, "  %-3s %-38s %s\n", "", "start", g.Root().State.String())
	for i := range s.Steps {
		if _, err := fmt.Fprintf(w, "  %-3d %-38s %s\n", i+1, s.Steps[i].Paper(), nodes[i].State.String()); err != nil {
			return err
		}
	}
	return nil
}
