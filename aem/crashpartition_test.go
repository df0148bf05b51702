package aem

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCrashPartitionCounts pins the crash-partition model's counts (docs/aem.md).
func TestCrashPartitionCounts(t *testing.T) {
	m := NewCrashPartition("Q/CP/Z")
	for _, tt := range []struct {
		ops, n int
		want   uint64
	}{
		{1, 3, 40}, {2, 3, 2440}, {3, 3, 148504}, {4, 3, 9038552},
		{1, 4, 89}, {2, 4, 12479}, {1, 5, 340},
	} {
		t.Run(fmt.Sprintf("ops=%d/n=%d", tt.ops, tt.n), func(t *testing.T) {
			g, err := NewGraph(m, Params{Ops: tt.ops, Replicas: tt.n})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := g.Count(); err != nil || got != tt.want {
				t.Errorf("Count() = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// bodies collects the schedules of a walk as text, keeping those keep accepts, each transition
// as strip renders it.
type bodies struct {
	path  []Transition
	keep  func([]Transition) bool
	strip func(Transition) string
	got   []string
}

func (b *bodies) Push(e *Edge) { b.path = append(b.path, e.T) }
func (b *bodies) Pop()         { b.path = b.path[:len(b.path)-1] }
func (b *bodies) Leaf() error {
	if b.keep(b.path) {
		var parts []string
		for _, tr := range b.path {
			parts = append(parts, b.strip(tr))
		}
		b.got = append(b.got, strings.Join(parts, " "))
	}
	return nil
}

// TestCrashPartitionHoldsQuorum: the crash-partition schedules whose divergences all fail
// every replica the same way are, kinds left out, exactly Q/C/Z's: once with crashes only,
// once with partitions only. Failing alike, offline replicas are told apart by their versions
// alone, as in Q/C/Z.
func TestCrashPartitionHoldsQuorum(t *testing.T) {
	for _, p := range []Params{{Ops: 1, Replicas: 3}, {Ops: 2, Replicas: 3}, {Ops: 3, Replicas: 3}, {Ops: 2, Replicas: 4}} {
		holdsQuorum(t, NewCrashPartition("Q/CP/Z"), p)
	}
}

// holdsQuorum checks that, of the schedules of m with parameters p, those whose divergences
// fail every replica with one kind are, kinds left out, exactly Q/C/Z's, for each of m's kinds.
func holdsQuorum(t *testing.T, m Model, p Params) {
	t.Helper()
	q := &bodies{keep: func([]Transition) bool { return true }, strip: Transition.String}
	g, err := NewGraph(QCZ, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Walk(q); err != nil {
		t.Fatal(err)
	}
	for _, only := range m.Kinds() {
		t.Run(fmt.Sprintf("ops=%d/n=%d/%s", p.Ops, p.Replicas, only), func(t *testing.T) {
			alike := &bodies{
				keep: func(path []Transition) bool {
					for _, tr := range path {
						if slices.ContainsFunc(tr.Failures, func(f Failure) bool { return f != only && f != NotInLayout }) {
							return false
						}
					}
					return true
				},
				strip: func(tr Transition) string { tr.Failures = nil; return tr.String() },
			}
			g, err := NewGraph(m, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Walk(alike); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(alike.got, q.got) {
				t.Errorf("%d schedules that fail alike, Q/C/Z has %d", len(alike.got), len(q.got))
			}
		})
	}
}

// TestCrashPartitionSteps: every divergence fails each online replica one way or the other
// and leaves the offline ones out; a convergence brings replicas back as they failed, and
// tells apart offline replicas of one version that failed differently.
func TestCrashPartitionSteps(t *testing.T) {
	m := NewCrashPartition("Q/CP/Z")
	p := Params{Ops: 2, Replicas: 3}
	s := m.Init(p)
	var ds []string
	for _, tr := range m.Next(p, &s, nil) {
		ds = append(ds, tr.String())
	}
	// D[0,0,1]: the run {0,1} crashes 0, 1 or 2 of its replicas, the run {2} 0 or 1.
	for _, want := range []string{"D[0,0,1](p,p,p)", "D[0,0,1](p,p,c)", "D[0,0,1](c,p,p)", "D[0,0,1](c,c,c)", "D[0,1,2](c,p,c)"} {
		if !slices.Contains(ds, want) {
			t.Errorf("the first divergences %v lack %s", ds, want)
		}
	}
	for _, unwanted := range []string{"D[0,0,1](p,c,p)", "D[0,0,1](n,n,c)", "D[0,0,1](-,p,p)"} {
		if slices.Contains(ds, unwanted) {
			t.Errorf("the first divergences hold %s, which another one's symmetry covers or no rule makes", unwanted)
		}
	}
	d, err := ParseTransition("D[0,0,1](c,p,p)")
	if err != nil {
		t.Fatal(err)
	}
	s = m.Apply(p, &s, &d)
	if !slices.Equal(s.Failed, []Failure{FailCrash, FailPartition, FailPartition}) || s.Online() != 0 {
		t.Fatalf("after %s: %+v", &d, s)
	}
	var cs []string
	for _, tr := range m.Next(p, &s, nil) {
		if tr.Kind == Convergence {
			cs = append(cs, tr.String())
		}
	}
	// 0 (crashed) and 1 (cut off) are both at version 0, yet not alike: C[0,2] and C[1,2] both.
	if want := []string{"C[0,1]", "C[0,2]", "C[1,2]", "C[0,1,2]"}; !slices.Equal(cs, want) {
		t.Errorf("convergences %v, want %v", cs, want)
	}
	c, _ := ParseTransition("C[0,2]")
	s = m.Apply(p, &s, &c)
	if !slices.Equal(s.Failed, []Failure{NotInLayout, FailPartition, NotInLayout}) || !s.On[0] || s.On[1] || !s.On[2] {
		t.Errorf("after %s: %+v", &c, s)
	}
}
