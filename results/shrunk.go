package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// Names of the files of shrunk/<ID>/.
const (
	ShrinkJSON    = "shrink.json"    // the Shrunk record
	ShrunkSched   = "schedule.sched" // the smallest failing schedule, as a schedule file
	ShrinkRunsDir = "runs"           // every run of every schedule tried
)

// Shrunk is what shrinking a failing schedule found: the smallest schedule that still fails,
// how often it does, and every schedule tried on the way.
type Shrunk struct {
	// Of is the schedule shrunk, as the campaign recorded it.
	Of Shape `json:"of"`
	// Smallest is the smallest schedule found that still fails; Of itself when none smaller
	// did.
	Smallest Shape `json:"smallest"`
	// Repeat and Reproduced say how often Smallest failed when it was run Repeat times at the
	// end.
	Repeat     int            `json:"repeat"`
	Reproduced int            `json:"reproduced"`
	Want       oracle.Verdict `json:"want"`
	Tries      []ShrinkTry    `json:"tries"`
	// Dir holds the final runs of Smallest, relative to the campaign directory.
	Dir   string    `json:"dir"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Shape is one schedule of a shrink: its ID, transitions and size. Ops is the write count its
// divergences add up to: the parameter under which it is a schedule of the model.
type Shape struct {
	ID    string `json:"id"`
	Body  string `json:"body"`
	Steps int    `json:"steps"`
	Ops   int    `json:"ops"`
}

// ShrinkTry is one candidate schedule tried, and what its runs found.
type ShrinkTry struct {
	Shape
	// Edit says how the candidate was made from the schedule it shrinks.
	Edit string `json:"edit"`
	// Runs is how many times it was run: until it failed, at most the shrink's repeat count.
	Runs     int                    `json:"runs"`
	Verdicts map[oracle.Verdict]int `json:"verdicts"`
	// Failed tells that it reproduced the verdict, and became the schedule to shrink further.
	Failed bool   `json:"failed"`
	Dir    string `json:"dir"` // its runs, relative to the campaign directory
}

// Rate is "k/K": how often Smallest reproduced the verdict in its final runs.
func (s Shrunk) Rate() string { return fmt.Sprintf("%d/%d", s.Reproduced, s.Repeat) }

// ShrunkPath returns shrunk/<id> in the campaign directory dir.
func ShrunkPath(dir, id string) string { return filepath.Join(dir, ShrunkDir, id) }

// WriteShrunk records s in shrunk/<s.Of.ID>/ of the campaign directory dir: shrink.json, and
// the smallest schedule as a schedule file of its own (header h, with the smallest's write
// count and a count of 1), which 'modulo run' and 'modulo show' read. A later shrink of the same schedule replaces both.
func WriteShrunk(dir string, h schedules.Header, s Shrunk) error {
	out := ShrunkPath(dir, s.Of.ID)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("record shrink of %s: %w", s.Of.ID, err)
	}
	h.Params.Ops, h.Count = s.Smallest.Ops, 1
	err := errors.Join(
		fsutil.WriteFile(filepath.Join(out, ShrunkSched), 0o644, func(w io.Writer) error {
			if err := schedules.WriteHeader(w, h); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "%s %s\n", s.Smallest.ID, s.Smallest.Body)
			return err
		}),
		fsutil.WriteFile(filepath.Join(out, ShrinkJSON), 0o644, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false) // transitions hold < and >
			return enc.Encode(s)
		}),
	)
	if err != nil {
		return fmt.Errorf("record shrink of %s: %w", s.Of.ID, err)
	}
	return nil
}

// ReadShrunk reads every shrink recorded in the campaign directory dir, by the ID of the
// schedule shrunk.
func ReadShrunk(dir string) (map[string]Shrunk, error) {
	entries, err := os.ReadDir(filepath.Join(dir, ShrunkDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read shrinks: %w", err)
	}
	out := map[string]Shrunk{}
	for _, e := range entries {
		path := filepath.Join(dir, ShrunkDir, e.Name(), ShrinkJSON)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a shrink still running, or cut short: it recorded nothing yet
		}
		if err != nil {
			return nil, fmt.Errorf("read shrinks: %w", err)
		}
		var s Shrunk
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("read shrinks: %s: %w", path, err)
		}
		out[s.Of.ID] = s
	}
	return out, nil
}
