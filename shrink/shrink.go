// Package shrink searches for a shorter schedule that still fails: it drops transitions,
// merges divergences and lowers write counts, keeps only the candidates that are complete
// schedules of the model (with the write count they add up to), and tries them shortest
// first, greedily, in the manner of delta debugging: the first candidate that still fails
// becomes the schedule to shrink, until no candidate one edit away fails.
//
// Running a candidate is the caller's: a real cluster decides whether it fails.
package shrink

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/schedules"
)

// Candidate is a schedule to try: a complete schedule of the model under Ops writes.
type Candidate struct {
	Steps []aem.Transition
	Ops   int
	// Edit says how it was made from the schedule it shrinks, such as "dropped steps 3-4".
	Edit string
}

// Body is the candidate's transitions as a schedule line holds them.
func (c Candidate) Body() string { return string(schedules.Body(c.Steps)) }

// Writes is the number of writes the divergences of steps inject: the ops parameter under
// which steps can be a schedule.
func Writes(steps []aem.Transition) int {
	n := 0
	for i := range steps {
		if steps[i].Kind == aem.Divergence {
			n += steps[i].WriteCount()
		}
	}
	return n
}

// Shrinker derives and checks the candidates of one model and cluster size.
type Shrinker struct {
	model    aem.Model
	replicas int
	graphs   map[int]*aem.Graph // by write count
}

// New returns a Shrinker for model m with the given number of replicas.
func New(m aem.Model, replicas int) *Shrinker {
	return &Shrinker{model: m, replicas: replicas, graphs: map[int]*aem.Graph{}}
}

// Valid tells whether steps is a complete schedule of the model under the write count it
// adds up to, every step enabled where it stands.
func (s *Shrinker) Valid(steps []aem.Transition) bool {
	ops := Writes(steps)
	if ops < 1 || len(steps) == 0 {
		return false
	}
	g, ok := s.graphs[ops]
	if !ok {
		var err error
		if g, err = aem.NewGraph(s.model, aem.Params{Ops: ops, Replicas: s.replicas}); err != nil {
			return false
		}
		s.graphs[ops] = g
	}
	_, err := g.Follow(steps)
	return err == nil
}

// Candidates returns every valid schedule one edit away from steps, each once, shortest
// first, then fewest writes, then in the order made: dropping contiguous runs of steps
// (longest runs first), merging two divergences into the first, and lowering one
// divergence's write count by one level.
func (s *Shrinker) Candidates(steps []aem.Transition) []Candidate {
	var out []Candidate
	seen := map[string]bool{string(schedules.Body(steps)): true}
	add := func(c []aem.Transition, edit string) {
		body := string(schedules.Body(c))
		if seen[body] {
			return
		}
		seen[body] = true
		if s.Valid(c) {
			out = append(out, Candidate{Steps: c, Ops: Writes(c), Edit: edit})
		}
	}
	n := len(steps)
	for size := n - 1; size >= 1; size-- {
		for from := 0; from+size <= n; from++ {
			c := slices.Concat(steps[:from], steps[from+size:])
			add(c, "dropped "+stepRange(from, size))
		}
	}
	for i := range steps {
		for j := i + 1; j < n; j++ {
			if steps[i].Kind != aem.Divergence || steps[j].Kind != aem.Divergence {
				continue
			}
			c := slices.Clone(steps)
			c[i] = merge(&steps[i], &steps[j])
			c = slices.Delete(c, j, j+1)
			add(c, fmt.Sprintf("merged the divergence of step %d into step %d", j+1, i+1))
		}
	}
	for i := range steps {
		if steps[i].Kind != aem.Divergence {
			continue
		}
		for _, level := range levels(steps[i].Writes) {
			t := lower(&steps[i], level)
			if t.WriteCount() == 0 {
				continue // dropping the step is a candidate already
			}
			c := slices.Clone(steps)
			c[i] = t
			add(c, fmt.Sprintf("step %d: %s instead of %s", i+1, t.String(), steps[i].String()))
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		if d := len(a.Steps) - len(b.Steps); d != 0 {
			return d
		}
		return a.Ops - b.Ops
	})
	return out
}

func stepRange(from, size int) string {
	if size == 1 {
		return fmt.Sprintf("step %d", from+1)
	}
	return fmt.Sprintf("steps %d-%d", from+1, from+size)
}

// merge returns one divergence that gives each replica the writes of both a and b. With
// failure kinds, a replica crashes if either crashes, else stays up if either keeps it up.
func merge(a, b *aem.Transition) aem.Transition {
	t := aem.Transition{Kind: aem.Divergence, Writes: make([]int, len(a.Writes))}
	for i := range t.Writes {
		t.Writes[i] = a.Writes[i] + b.Writes[i]
	}
	if a.Failures != nil && b.Failures != nil {
		t.Failures = make([]aem.Failure, len(a.Failures))
		for i := range t.Failures {
			switch {
			case a.Failures[i] == aem.FailCrash || b.Failures[i] == aem.FailCrash:
				t.Failures[i] = aem.FailCrash
			case a.Failures[i] == aem.FailNone || b.Failures[i] == aem.FailNone:
				t.Failures[i] = aem.FailNone
			default:
				t.Failures[i] = aem.NotInLayout
			}
		}
	}
	return t
}

// levels returns the distinct positive write counts of a divergence, ascending.
func levels(writes []int) []int {
	var ls []int
	for _, w := range writes {
		if w > 0 && !slices.Contains(ls, w) {
			ls = append(ls, w)
		}
	}
	slices.Sort(ls)
	return ls
}

// lower removes one level of a divergence's layout: every replica that received at least
// level writes receives one fewer, so that the replicas keep their order.
func lower(t *aem.Transition, level int) aem.Transition {
	l := aem.Transition{Kind: t.Kind, Writes: slices.Clone(t.Writes), Failures: slices.Clone(t.Failures)}
	for i, w := range l.Writes {
		if w >= level {
			l.Writes[i] = w - 1
		}
	}
	return l
}

// Try runs a candidate and tells whether it still fails.
type Try func(ctx context.Context, c Candidate) (failed bool, err error)

// Result is what a search found.
type Result struct {
	// Smallest is the smallest schedule found that still fails: the one searched from when no
	// candidate did.
	Smallest Candidate
	// Tried counts the candidates tried.
	Tried int
	// Exhausted tells that the search stopped at its limit of tries, with candidates left.
	Exhausted bool
}

// Search shrinks steps, which fail, greedily: it tries the candidates one edit away shortest
// first, moves to the first that still fails, and starts again from it, until none does or
// limit candidates have been tried (0: no limit). A candidate is tried once however often it
// comes up. It stops with the error of try, or of ctx.
func (s *Shrinker) Search(ctx context.Context, steps []aem.Transition, limit int, try Try) (Result, error) {
	res := Result{Smallest: Candidate{Steps: steps, Ops: Writes(steps), Edit: "the schedule itself"}}
	tried := map[string]bool{res.Smallest.Body(): true}
	for {
		moved := false
		for _, c := range s.Candidates(res.Smallest.Steps) {
			if tried[c.Body()] {
				continue
			}
			if limit > 0 && res.Tried == limit {
				res.Exhausted = true
				return res, nil
			}
			if err := ctx.Err(); err != nil {
				return res, err
			}
			tried[c.Body()] = true
			res.Tried++
			failed, err := try(ctx, c)
			if err != nil {
				return res, err
			}
			if failed {
				res.Smallest, moved = c, true
				break
			}
		}
		if !moved {
			return res, nil
		}
	}
}

// Describe renders a candidate for people: its size and its transitions.
func Describe(c Candidate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s, ops=%d: %s", len(c.Steps), words.Plural(len(c.Steps), "step", "steps"), c.Ops, c.Body())
	return b.String()
}
