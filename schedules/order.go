package schedules

import (
	"container/heap"
	"fmt"

	"github.com/modulo-testing/modulo/aem"
)

// CoverageOrder orders ss so that the transitions of the model's state graph that they take
// (an abstract state and the step out of it) are all taken as early as possible, as Mocket's
// edge-coverage search orders its tests: greedily, the next schedule is the one that takes
// the most transitions no earlier one took (the earlier in ss on a tie), until every
// transition is taken; then the others, in their order in ss.
func CoverageOrder(g *aem.Graph, ss []Schedule) ([]Schedule, error) {
	edges, err := edgesOf(g, ss)
	if err != nil {
		return nil, err
	}
	covered := make([]bool, g.Edges())
	gain := func(i int) int {
		n := 0
		for _, e := range edges[i] {
			if !covered[e] {
				n++
			}
		}
		return n
	}
	h := make(gains, len(ss))
	for i := range ss {
		h[i] = candidate{gain: gain(i), index: i}
	}
	heap.Init(&h)
	order := make([]Schedule, 0, len(ss))
	taken := make([]bool, len(ss))
	// Lazy greedy: a schedule's gain only falls as others are taken, so a stale gain that still
	// tops the heap once brought up to date is the true best.
	for h.Len() > 0 && h[0].gain > 0 {
		top := &h[0]
		if g := gain(top.index); g != top.gain {
			top.gain = g
			heap.Fix(&h, 0)
			continue
		}
		c := heap.Pop(&h).(candidate)
		for _, e := range edges[c.index] {
			covered[e] = true
		}
		order = append(order, ss[c.index])
		taken[c.index] = true
	}
	for i := range ss {
		if !taken[i] {
			order = append(order, ss[i])
		}
	}
	return order, nil
}

// Covered returns, after each schedule of ss in their order, how many distinct transitions of
// the state graph the schedules so far take.
func Covered(g *aem.Graph, ss []Schedule) ([]int, error) {
	edges, err := edgesOf(g, ss)
	if err != nil {
		return nil, err
	}
	covered := make([]bool, g.Edges())
	counts := make([]int, len(ss))
	n := 0
	for i := range ss {
		for _, e := range edges[i] {
			if !covered[e] {
				covered[e], n = true, n+1
			}
		}
		counts[i] = n
	}
	return counts, nil
}

// edgesOf returns the IDs of the graph's edges each schedule takes.
func edgesOf(g *aem.Graph, ss []Schedule) ([][]int, error) {
	out := make([][]int, len(ss))
	for i, s := range ss {
		es, err := g.FollowEdges(s.Steps)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", s.ID, err)
		}
		for _, e := range es {
			out[i] = append(out[i], e.ID)
		}
	}
	return out, nil
}

// candidate is a schedule not yet ordered, with the number of transitions it would add when
// last computed.
type candidate struct{ gain, index int }

// gains is a max-heap of candidates by gain, then by index.
type gains []candidate

func (h gains) Len() int { return len(h) }
func (h gains) Less(i, j int) bool {
	return h[i].gain > h[j].gain || h[i].gain == h[j].gain && h[i].index < h[j].index
}
func (h gains) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *gains) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *gains) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
