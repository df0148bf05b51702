package aem

import (
	"fmt"
	"slices"
	"strconv"
)

// Quorum is the model of Q/C/Z and Q/C/M: a quorum of n div 2 + 1 for writes, every replica
// failed at the end of each divergence, recovery by automatic resync. Its failures take one
// kind (Q/C/Z crashes, Q/P/Z loses power, Q/N/Z cuts off) or several: then each replica a
// divergence fails takes one of them (Transition.Failures), State.Failed remembers which until
// it comes back, and offline replicas that failed differently are not alike (docs/aem.md).
type Quorum struct {
	name  string
	kinds []Failure
}

// NewQuorum returns the quorum model of crashes under the given name ("Q/C/Z" or "Q/C/M": one
// AEM, two systems).
func NewQuorum(name string) Quorum { return Quorum{name: name, kinds: []Failure{FailCrash}} }

// NewCrashPartition returns the quorum model whose failing replicas are crashed or cut off.
func NewCrashPartition(name string) Quorum {
	return Quorum{name: name, kinds: []Failure{FailCrash, FailPartition}}
}

// NewQuorumOf returns the quorum model whose failing replicas take the given kinds, each of
// Kinds at most once; they are put in Kinds' order.
func NewQuorumOf(name string, kinds ...Failure) (Quorum, error) {
	var in []Failure
	for _, k := range Kinds {
		if slices.Contains(kinds, k) {
			in = append(in, k)
		}
	}
	if len(in) == 0 || len(in) != len(kinds) {
		return Quorum{}, fmt.Errorf("quorum model %s: failure kinds %v must be one or more of %v, each once", name, kinds, Kinds)
	}
	if !slices.ContainsFunc(in, func(f Failure) bool { return !f.Disk() }) {
		return Quorum{}, fmt.Errorf("quorum model %s: failure kinds %v break disks, which a divergence may do to a minority only, and it fails every online replica: mix them with a kind that does not (crash, say)", name, kinds)
	}
	return Quorum{name: name, kinds: in}, nil
}

func (q Quorum) Name() string { return q.name }

// Rules is the quorum rules', or crash-partition's where the kinds are exactly crash and
// partition, the rule set that names that mix.
func (q Quorum) Rules() Rules {
	if slices.Equal(q.kinds, []Failure{FailCrash, FailPartition}) {
		return CrashPartitionRules
	}
	return QuorumRules
}
func (q Quorum) StepsMatter() bool          { return false }
func (q Quorum) Links() bool                { return false }
func (q Quorum) FailureKinds() bool         { return q.mixed() }
func (q Quorum) Kinds() []Failure           { return slices.Clone(q.kinds) }
func (Quorum) Complete(Params, *State) bool { return true }

// mixed tells whether the model's failures take more than one kind, so that divergences name
// each replica's.
func (q Quorum) mixed() bool { return len(q.kinds) > 1 }

func (q Quorum) Init(p Params) State {
	s := State{Left: p.Ops, RS: make([]int, p.Replicas), On: allTrue(p.Replicas)}
	if q.mixed() {
		s.Failed = make([]Failure, p.Replicas)
	}
	return s
}

func quorum(n int) int { return n/2 + 1 }

func (q Quorum) Next(p Params, s *State, out []Transition) []Transition {
	if s.Left > 0 && s.Online() >= quorum(p.Replicas) {
		layouts(s, func(w []int) {
			if !q.mixed() {
				out = append(out, Transition{Kind: Divergence, Writes: w})
				return
			}
			failures(s, w, q.kinds, func(f []Failure) {
				if disks(s, f) <= p.Replicas-quorum(p.Replicas) {
					out = append(out, Transition{Kind: Divergence, Writes: w, Failures: f})
				}
			})
		})
	}
	if s.AllOnline() {
		return out
	}
	offline := offlineReplicas(s)
	if s.Online() >= quorum(p.Replicas) {
		return append(out, Transition{Kind: Convergence, Group: offline})
	}
	// Offline replicas are symmetric when they have one version and, mixed, failed alike.
	key := func(i int) string {
		k := strconv.Itoa(s.RS[i])
		if q.mixed() {
			k += failureNames[s.Failed[i]]
		}
		return k
	}
	groups(offline, quorum(p.Replicas)-s.Online(), len(offline), key,
		func(g []int) { out = append(out, Transition{Kind: Convergence, Group: g}) })
	return out
}

// failures calls fn with every way to fail the online replicas of layout w with the given
// kinds, up to symmetry; the offline replicas are not in the layout (-). The online replicas
// that w gives the same number of writes are alike, so of each such run (ascending) only how
// many take each kind matters: the first ones take the first kind, the next ones the next, and
// so on, every count from 0 for each kind in turn. With crash and partition: the first k
// crash, the others are cut off, k from 0 to the run's length.
func failures(s *State, w []int, kinds []Failure, fn func(f []Failure)) {
	on := onlineReplicas(s)
	var runs [][]int // runs of online replicas with equal writes, in ascending order
	for k, i := range on {
		if k > 0 && w[i] == w[on[k-1]] {
			runs[len(runs)-1] = append(runs[len(runs)-1], i)
		} else {
			runs = append(runs, []int{i})
		}
	}
	f := make([]Failure, len(w))
	var rec func(r int)
	// fill gives replicas run[from:] the kinds kinds[k:], every count for kinds[k] in turn.
	var fill func(r int, run []int, k int)
	fill = func(r int, run []int, k int) {
		if k == len(kinds)-1 {
			for _, i := range run {
				f[i] = kinds[k]
			}
			rec(r + 1)
			return
		}
		for n := 0; n <= len(run); n++ {
			for _, i := range run[:n] {
				f[i] = kinds[k]
			}
			fill(r, run[n:], k+1)
		}
	}
	rec = func(r int) {
		if r == len(runs) {
			fn(slices.Clone(f))
			return
		}
		fill(r, runs[r], 0)
	}
	rec(0)
}

// disks counts the replicas whose disks are broken once a divergence has failed replicas as
// f says: those it breaks, and those offline with a broken disk already. A quorum system
// promises to survive the disk faults of a minority only (docs/aem.md), so no divergence
// breaks more.
func disks(s *State, f []Failure) int {
	n := 0
	for i := range f {
		if f[i].Disk() || s.FailedAs(i).Disk() {
			n++
		}
	}
	return n
}

func (q Quorum) Apply(p Params, s *State, t *Transition) State {
	n := s.Clone()
	switch t.Kind {
	case Divergence:
		inject(&n, t)
		for i := range n.On {
			n.On[i] = false
		}
		for i, f := range t.Failures {
			if f != NotInLayout {
				n.Failed[i] = f
			}
		}
	case Convergence:
		newEpoch := s.Online() < quorum(p.Replicas)
		for _, i := range t.Group {
			n.On[i] = true
			if n.Failed != nil {
				n.Failed[i] = NotInLayout
			}
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
