package aem

import (
	"slices"
	"strconv"
)

// Quorum is the model of Q/C/Z and Q/C/M: crash failures, a quorum of n div 2 + 1 for writes,
// every replica crashed at the end of each divergence, recovery by automatic resync.
type Quorum struct{ name string }

// NewQuorum returns the quorum model under the given name ("Q/C/Z" or "Q/C/M": one AEM, two
// systems).
func NewQuorum(name string) Quorum { return Quorum{name: name} }

func (q Quorum) Name() string               { return q.name }
func (Quorum) Rules() Rules                 { return QuorumRules }
func (q Quorum) StepsMatter() bool          { return false }
func (q Quorum) Links() bool                { return false }
func (q Quorum) FailureKinds() bool         { return false }
func (Quorum) Complete(Params, *State) bool { return true }

func (Quorum) Init(p Params) State {
	return State{Left: p.Ops, RS: make([]int, p.Replicas), On: allTrue(p.Replicas)}
}

func quorum(n int) int { return n/2 + 1 }

func (q Quorum) Next(p Params, s *State, out []Transition) []Transition {
	if s.Left > 0 && s.Online() >= quorum(p.Replicas) {
		layouts(s, func(w []int) { out = append(out, Transition{Kind: Divergence, Writes: w}) })
	}
	if s.AllOnline() {
		return out
	}
	offline := offlineReplicas(s)
	if s.Online() >= quorum(p.Replicas) {
		return append(out, Transition{Kind: Convergence, Group: offline})
	}
	groups(offline, quorum(p.Replicas)-s.Online(), len(offline), func(i int) string { return strconv.Itoa(s.RS[i]) },
		func(g []int) { out = append(out, Transition{Kind: Convergence, Group: g}) })
	return out
}

func (q Quorum) Apply(p Params, s *State, t *Transition) State {
	n := s.Clone()
	switch t.Kind {
	case Divergence:
		inject(&n, t)
		for i := range n.On {
			n.On[i] = false
		}
	case Convergence:
		newEpoch := s.Online() < quorum(p.Replicas)
		for _, i := range t.Group {
			n.On[i] = true
		}
		top := n.topOnline()
		if newEpoch {
			top = nextEpoch(top)
		}
		n.setOnline(top)
	}
	return n
}

func allTrue(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

func offlineReplicas(s *State) []int {
	var off []int
	for i, on := range s.On {
		if !on {
			off = append(off, i)
		}
	}
	return off
}

func onlineReplicas(s *State) []int {
	var on []int
	for i, o := range s.On {
		if o {
			on = append(on, i)
		}
	}
	return on
}

// inject applies a divergence's writes to the versions and the write budget.
func inject(s *State, t *Transition) {
	for i, w := range t.Writes {
		s.RS[i] += w
	}
	s.Left -= t.WriteCount()
}

// layouts calls fn with every divergence vector of the symmetric layout: the online replicas in
// ascending order receive every non-decreasing sequence of write counts in 0..Left, offline
// replicas receive none, and vectors whose entries are all equal are dropped. Online replicas
// are always equal when a divergence starts, so only the layout's shape matters.
func layouts(s *State, fn func(w []int)) { layoutsOver(onlineReplicas(s), len(s.RS), s.Left, fn) }

// layoutsOver is layouts for the given ascending members out of n replicas: the members receive
// every non-decreasing sequence of write counts in 0..left, everyone else none, and vectors
// whose n entries are all equal are dropped.
func layoutsOver(members []int, n, left int, fn func(w []int)) {
	x := make([]int, len(members))
	var rec func(j, lo int)
	rec = func(j, lo int) {
		if j == len(members) {
			w := make([]int, n)
			for k, i := range members {
				w[i] = x[k]
			}
			if !allEqual(w) {
				fn(w)
			}
			return
		}
		for v := lo; v <= left; v++ {
			x[j] = v
			rec(j+1, v)
		}
	}
	rec(0, 0)
}

func allEqual(w []int) bool {
	for _, v := range w {
		if v != w[0] {
			return false
		}
	}
	return true
}

// groups calls fn with the subsets of cands whose size is in lo..hi, by ascending size and in
// lexicographic order within a size, skipping a subset whose multiset of symmetry keys an
// earlier one already had.
func groups(cands []int, lo, hi int, key func(i int) string, fn func(g []int)) {
	seen := map[string]bool{}
	lo = max(lo, 1)
	for size := lo; size <= hi && size <= len(cands); size++ {
		combinations(len(cands), size, func(idx []int) {
			g := make([]int, size)
			keys := make([]string, size)
			for k, j := range idx {
				g[k] = cands[j]
				keys[k] = key(cands[j])
			}
			slices.Sort(keys)
			sig := ""
			for _, k := range keys {
				sig += k + ";"
			}
			if seen[sig] {
				return
			}
			seen[sig] = true
			fn(g)
		})
	}
}

// combinations calls fn with every k-subset of 0..n-1, as ascending indices, in lexicographic
// order.
func combinations(n, k int, fn func(idx []int)) {
	idx := make([]int, k)
	var rec func(j, from int)
	rec = func(j, from int) {
		if j == k {
			fn(idx)
			return
		}
		for i := from; i <= n-(k-j); i++ {
			idx[j] = i
			rec(j+1, i+1)
		}
	}
	rec(0, 0)
}
