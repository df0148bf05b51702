package aem

import (
	"fmt"
	"strings"
	"testing"
)

// pathRecorder collects every schedule of a walk as its transitions.
type pathRecorder struct {
	stack []Transition
	paths [][]Transition
}

func (r *pathRecorder) Push(e *Edge) { r.stack = append(r.stack, e.T) }
func (r *pathRecorder) Pop()         { r.stack = r.stack[:len(r.stack)-1] }
func (r *pathRecorder) Leaf() error {
	r.paths = append(r.paths, append([]Transition(nil), r.stack...))
	return nil
}

// sclrPowerLoss is S/CL/R with each failing replica crashed or losing power.
var sclrPowerLoss, _ = NewCrashLinkOf("S/CL/R+power-loss", FailPowerLoss)

// TestScheduleProperties checks, for every model on small parameters, what the spec promises of
// every schedule: no two are the same, each injects exactly ops writes, ends with every replica
// online, and each transition's guard held in the state it was taken from. The guards are
// restated here from shared/spec/aem.md rather than taken from the models.
func TestScheduleProperties(t *testing.T) {
	tests := []struct {
		model     Model
		minOnline func(n int) int // D guard
		params    []Params
	}{
		{QCZ, func(n int) int { return n/2 + 1 }, []Params{{1, 3}, {2, 3}, {3, 3}, {2, 4}, {2, 5}}},
		{QCM, func(n int) int { return n/2 + 1 }, []Params{{2, 3}}},
		{SSR, func(n int) int { return n/2 + 1 }, []Params{{1, 3}, {2, 3}, {1, 4}}},
		{SLR, func(n int) int { return n/2 + 1 }, []Params{{1, 3}, {2, 3}, {1, 4}, {2, 4}}},
		{SCLR, func(n int) int { return n / 2 }, []Params{{1, 2}, {2, 2}, {1, 3}, {2, 3}}},
		{sclrPowerLoss, func(n int) int { return n / 2 }, []Params{{1, 2}, {2, 2}, {1, 3}}},
	}
	for _, tt := range tests {
		for _, p := range tt.params {
			t.Run(fmt.Sprintf("%s/ops=%d/n=%d", tt.model.Name(), p.Ops, p.Replicas), func(t *testing.T) {
				g, err := NewGraph(tt.model, p)
				if err != nil {
					t.Fatal(err)
				}
				rec := &pathRecorder{}
				if err := g.Walk(rec); err != nil {
					t.Fatal(err)
				}
				if len(rec.paths) == 0 {
					t.Fatal("no schedules")
				}
				seen := map[string]bool{}
				for _, path := range rec.paths {
					text := ""
					for _, tr := range path {
						text += tr.String() + " "
					}
					if seen[text] {
						t.Fatalf("schedule generated twice: %s", text)
					}
					seen[text] = true
					checkSchedule(t, g, tt.minOnline(p.Replicas), path, text)
				}
			})
		}
	}
}

func checkSchedule(t *testing.T, g *Graph, minOnline int, path []Transition, text string) {
	t.Helper()
	nodes, err := g.Follow(path)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	before := g.Root().State
	writes := 0
	for i, tr := range path {
		switch tr.Kind {
		case Divergence:
			if before.Left <= 0 || before.Online() < minOnline {
				t.Fatalf("%s: step %d is a divergence in %s", text, i+1, before.String())
			}
			writes += tr.WriteCount()
		case Convergence:
			if before.AllOnline() {
				t.Fatalf("%s: step %d is a convergence with every replica online", text, i+1)
			}
			for _, r := range tr.Group {
				if before.On[r] {
					t.Fatalf("%s: step %d recovers replica %d, which is online", text, i+1, r)
				}
			}
		}
		before = nodes[i].State
	}
	if writes != g.Params().Ops {
		t.Fatalf("%s: injects %d writes, want %d", text, writes, g.Params().Ops)
	}
	if !before.AllOnline() || before.Left != 0 {
		t.Fatalf("%s: ends in %s, want every replica online and no write left", text, before.String())
	}
}

func TestParseTransitionRoundTrip(t *testing.T) {
	for _, m := range []Model{QCZ, SSR, SLR, SCLR} {
		g, err := NewGraph(m, Params{Ops: 2, Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		rec := &pathRecorder{}
		if err := g.Walk(rec); err != nil {
			t.Fatal(err)
		}
		for _, path := range rec.paths {
			for _, tr := range path {
				back, err := ParseTransition(tr.String())
				if err != nil {
					t.Fatalf("%s: %v", tr.String(), err)
				}
				if !Equal(&back, &tr) {
					t.Fatalf("%s parsed back as %s", tr.String(), back.String())
				}
			}
		}
	}
}

func TestParseTransitionErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty transition"},
		{"X[1]", "must start with D or C"},
		{"D", `expected '['`},
		{"D[1,2", `missing ']'`},
		{"D[]", "empty list"},
		{"D[1,-2]", `"-2" is not a non-negative number`},
		{"D[01]", `"01" is not a non-negative number`},
		{"D[1,0](n,x)", `failure kind "x" is not n, c, l, p, s or -`},
		{"D[1,0](n,)", `failure kind "" is not n, c, l, p, s or -`},
		{"C[0]<-,0>off3", `unexpected "off3" at the end`},
		{"C[0]junk", `unexpected "junk" at the end`},
	}
	for _, tt := range tests {
		_, err := ParseTransition(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTransition(%q) error = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		p    Params
		want string
	}{
		{Params{Ops: 1, Replicas: 0}, "replicas must be between 2 and 16, got 0"},
		{Params{Ops: 1, Replicas: 17}, "replicas must be between 2 and 16, got 17"},
		{Params{Ops: -1, Replicas: 3}, "ops must be between 1 and 16, got -1"},
		{Params{Ops: 1000, Replicas: 3}, "ops must be between 1 and 16, got 1000"},
		{Params{Ops: 1, Replicas: 2}, ""},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%+v.Validate() = %q, want %q", tt.p, got, tt.want)
		}
	}
}
