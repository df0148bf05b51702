package shrink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

func parse(t *testing.T, body string) []aem.Transition {
	t.Helper()
	steps, err := schedules.ParseBody(body)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

func model(t *testing.T, drm string) aem.Model {
	t.Helper()
	d, err := drms.Lookup(drm)
	if err != nil {
		t.Fatal(err)
	}
	return d.Model
}

// TestCandidates checks, for schedules of every kind of model, that every candidate is a
// complete schedule of the model under its own write count, that they come shortest first
// and each once, and that the edits expected of each schedule are among them.
func TestCandidates(t *testing.T) {
	tests := []struct {
		drm      string
		replicas int
		body     string
		want     []string // bodies that must be candidates
	}{
		{"slr", 3, "D[1,0,0] C[0,1]<1,-,1> D[0,1,0] C[0,2]<2,-,-> C[1]<2,0,->", []string{"D[1,0,0] C[0,1]<1,-,1>"}},
		{"slr", 3, "D[2,0,0] C[0,1]<-,0,1>", []string{"D[1,0,0] C[0,1]<-,0,1>"}},
		{"qcz", 3, "D[0,0,1] C[0,1] C[2] D[0,1,1] C[0,1] C[2]", []string{"D[0,1,1] C[0,1] C[2]", "D[0,0,1] C[0,1] C[2]"}},
		{"ssr", 2, "D[0,1] C[0,1]<-,0> D[0,1] C[0,1]<-,0>", []string{"D[0,1] C[0,1]<-,0>"}},
		{"ssr", 2, "D[0,2] C[0,1]<-,0>", []string{"D[0,1] C[0,1]<-,0>"}},
		{"sclr", 2, "D[1,0](n,c) D[1,0](n,-) C[1]<-,0>", []string{"D[1,0](n,c) C[1]<-,0>", "D[2,0](n,c) C[1]<-,0>"}},
	}
	for _, tt := range tests {
		t.Run(tt.drm+" "+tt.body, func(t *testing.T) {
			m := model(t, tt.drm)
			steps := parse(t, tt.body)
			s := New(m, tt.replicas)
			if !s.Valid(steps) {
				t.Fatalf("%s is not a schedule of %s", tt.body, tt.drm)
			}
			cs := s.Candidates(steps)
			if len(cs) == 0 {
				t.Fatal("no candidates")
			}
			var bodies []string
			for i, c := range cs {
				g, err := aem.NewGraph(m, aem.Params{Ops: c.Ops, Replicas: tt.replicas})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Follow(c.Steps); err != nil {
					t.Errorf("candidate %s (%s) under ops=%d: %v", c.Body(), c.Edit, c.Ops, err)
				}
				if c.Ops != Writes(c.Steps) || c.Ops < 1 || c.Edit == "" {
					t.Errorf("candidate %s: ops %d, edit %q", c.Body(), c.Ops, c.Edit)
				}
				if i > 0 && len(c.Steps) < len(cs[i-1].Steps) {
					t.Errorf("candidate %d (%d steps) after one of %d steps", i, len(c.Steps), len(cs[i-1].Steps))
				}
				if c.Body() == tt.body || slices.Contains(bodies, c.Body()) {
					t.Errorf("candidate %s repeats", c.Body())
				}
				bodies = append(bodies, c.Body())
			}
			for _, w := range tt.want {
				if !slices.Contains(bodies, w) {
					t.Errorf("no candidate %s among %q", w, bodies)
				}
			}
		})
	}
}

func TestWrites(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{"D[0,0,1] C[0,1] C[2]", 1},
		{"D[2,1,0] C[1,2]<-,2,-> C[0]<1,2,->", 2},
		{"D[1,0,0] C[0,1]<1,-,1> D[0,1,0] C[0,2]<2,-,-> C[1]<2,0,->", 2},
		{"C[0]", 0},
	}
	for _, tt := range tests {
		if got := Writes(parse(t, tt.body)); got != tt.want {
			t.Errorf("Writes(%s) = %d, want %d", tt.body, got, tt.want)
		}
	}
}

// TestSearch drives the search with predicates of the candidates' transitions, pure logic
// standing in for the cluster that decides in modulo shrink: it must end at a schedule one
// edit from which nothing fails, having tried each candidate once.
func TestSearch(t *testing.T) {
	m := model(t, "qcz")
	start := parse(t, "D[0,1,1] C[1,2] C[0] D[0,0,1] C[0,1] C[2] D[0,0,1] C[0,1,2]")
	if !New(m, 3).Valid(start) {
		t.Fatal("the start is not a Q/C/Z schedule")
	}
	writesTo := func(r int) func([]aem.Transition) bool {
		return func(steps []aem.Transition) bool {
			return slices.ContainsFunc(steps, func(t aem.Transition) bool { return t.Kind == aem.Divergence && t.Writes[r] > 0 })
		}
	}
	tests := []struct {
		name  string
		fails func([]aem.Transition) bool
		limit int
		check func(t *testing.T, r Result)
	}{
		{"nothing smaller fails", func([]aem.Transition) bool { return false }, 0, func(t *testing.T, r Result) {
			if len(r.Smallest.Steps) != len(start) || r.Exhausted || r.Tried == 0 {
				t.Errorf("result %+v", r)
			}
		}},
		{"a write to replica 2 fails", writesTo(2), 0, func(t *testing.T, r Result) {
			if !writesTo(2)(r.Smallest.Steps) || r.Smallest.Ops != 1 || len(r.Smallest.Steps) >= len(start) {
				t.Errorf("smallest %s, ops=%d", r.Smallest.Body(), r.Smallest.Ops)
			}
		}},
		{"limit", func([]aem.Transition) bool { return false }, 2, func(t *testing.T, r Result) {
			if r.Tried != 2 || !r.Exhausted {
				t.Errorf("tried %d, exhausted %v", r.Tried, r.Exhausted)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(m, 3)
			seen := map[string]bool{}
			r, err := s.Search(context.Background(), start, tt.limit, func(_ context.Context, c Candidate) (bool, error) {
				if seen[c.Body()] {
					t.Errorf("%s tried twice", c.Body())
				}
				seen[c.Body()] = true
				return tt.fails(c.Steps), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Tried != len(seen) {
				t.Errorf("tried %d, counted %d", r.Tried, len(seen))
			}
			// Greedy: nothing one edit from the result fails.
			if !r.Exhausted {
				for _, c := range s.Candidates(r.Smallest.Steps) {
					if tt.fails(c.Steps) {
						t.Errorf("%s is one edit from %s and fails", c.Body(), r.Smallest.Body())
					}
				}
			}
			tt.check(t, r)
		})
	}
}

func TestSearchStops(t *testing.T) {
	m := model(t, "qcz")
	start := parse(t, "D[0,0,1] C[0,1] D[1,1,0] C[0,1] C[2]")
	boom := errors.New("cluster on fire")
	if _, err := New(m, 3).Search(context.Background(), start, 0, func(context.Context, Candidate) (bool, error) {
		return false, boom
	}); !errors.Is(err, boom) {
		t.Errorf("error = %v, want the try's", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(m, 3).Search(ctx, start, 0, func(context.Context, Candidate) (bool, error) {
		t.Error("tried after the context ended")
		return false, nil
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

// TestCandidatesOfEveryFailure shrinks nothing but checks, over every schedule of small
// parameters of each Redis model, that candidates never leave the model.
func TestCandidatesOfEveryFailure(t *testing.T) {
	for _, drm := range []string{"ssr", "slr", "sclr"} {
		t.Run(drm, func(t *testing.T) {
			d, _ := drms.Lookup(drm)
			p := aem.Params{Ops: 2, Replicas: 2}
			var buf strings.Builder
			if _, err := schedules.Generate(&buf, d, p, "test", 0); err != nil {
				t.Fatal(err)
			}
			r, err := schedules.NewReader(strings.NewReader(buf.String()), drm)
			if err != nil {
				t.Fatal(err)
			}
			s := New(d.Model, p.Replicas)
			for {
				sc, err := r.Next()
				if err != nil {
					break
				}
				for _, c := range s.Candidates(sc.Steps) {
					g, _ := aem.NewGraph(d.Model, aem.Params{Ops: c.Ops, Replicas: p.Replicas})
					if _, err := g.Follow(c.Steps); err != nil || len(c.Steps) > len(sc.Steps) || c.Ops > p.Ops {
						t.Errorf("%s: candidate %s (ops=%d): %v", sc.ID, c.Body(), c.Ops, err)
					}
				}
			}
		})
	}
}
