package aem

import (
	"fmt"
	"testing"
)

// TestReferenceCounts checks every count of shared/spec/aem.md: they are the contract.
func TestReferenceCounts(t *testing.T) {
	tests := []struct {
		model  Model
		ops, n int
		want   uint64
	}{
		{QCZ, 1, 3, 6},
		{QCZ, 2, 3, 80},
		{QCZ, 3, 3, 1035},
		{QCZ, 4, 3, 13381},
		{QCZ, 5, 3, 172997},
		{QCZ, 3, 4, 3428},
		{QCZ, 3, 5, 54655},
		{QCZ, 1, 4, 9},
		{QCZ, 1, 5, 22},
		{QCM, 1, 3, 6},
		{QCM, 2, 3, 80},
		{QCM, 3, 3, 1035},
		{QCM, 4, 3, 13381},
		{QCM, 5, 3, 172997},
		{QCM, 3, 4, 3428},
		{QCM, 3, 5, 54655},
		{QCM, 1, 4, 9},
		{QCM, 1, 5, 22},
		{SSR, 2, 4, 13586},
		{SSR, 1, 3, 24},
		{SSR, 2, 3, 301},
		{SLR, 1, 3, 6},
		{SLR, 2, 3, 90},
		{SLR, 1, 4, 12},
		{SLR, 2, 4, 506},
		{SCLR, 1, 2, 8},
		{SCLR, 2, 2, 96},
		{SCLR, 1, 3, 252},
		{SCLR, 3, 2, 1120}, // the reference generator's, from its schedule set
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/ops=%d/n=%d", tt.model.Name(), tt.ops, tt.n), func(t *testing.T) {
			g, err := NewGraph(tt.model, Params{Ops: tt.ops, Replicas: tt.n})
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Count()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Count() = %d, want %d", got, tt.want)
			}
			if tt.want > 20000 {
				return
			}
			var walked uint64
			if err := g.Walk(leafCounter{&walked}); err != nil {
				t.Fatal(err)
			}
			if walked != got {
				t.Errorf("Walk visited %d schedules, Count() says %d", walked, got)
			}
		})
	}
}

type leafCounter struct{ n *uint64 }

func (leafCounter) Push(*Edge) {}
func (leafCounter) Pop()       {}
func (c leafCounter) Leaf() error {
	*c.n++
	return nil
}

// TestTake: Take follows a schedule as the graph does, the model's own transition and the
// step count included, and refuses a step the state does not enable.
func TestTake(t *testing.T) {
	p := Params{Ops: 1, Replicas: 2}
	g, err := NewGraph(SCLR, p)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Root()
	s := n.State
	for len(g.Out(n)) > 0 {
		e := g.Out(n)[len(g.Out(n))-1]
		text, err := ParseTransition(e.T.String())
		if err != nil {
			t.Fatal(err)
		}
		own, next, ok := Take(SCLR, p, &s, &text)
		if !ok || !Equal(&own, &e.T) || own.From != e.T.From || next.String() != e.To.State.String() || next.Steps != e.To.State.Steps {
			t.Fatalf("Take(%s) from %s = %v %s %v; the graph goes to %s", text.String(), s.String(), own, next.String(), ok, e.To.State.String())
		}
		if _, _, ok := Take(SCLR, p, &next, &text); ok && len(g.Out(e.To)) == 0 {
			t.Errorf("Take enabled %s after the schedule's end", text.String())
		}
		n, s = e.To, next
	}
}
