package aem

import (
	"fmt"
	"slices"
	"strconv"
)

// RedisVariant selects one of the three Redis models.
type RedisVariant uint8

const (
	// Suspend is S/S/R: suspend failures, no links at first.
	Suspend RedisVariant = iota + 1
	// Link is S/L/R: link failures on an initial chain.
	Link
	// CrashLink is S/CL/R: crash and link failures, online and offline resync.
	CrashLink
)

// Redis is the family of models for a system without quorum whose replicas replicate along
// explicit links (a replica has at most one source; links form a forest).
//
// Readings of shared/spec/aem.md where its prose leaves a choice, each forced by a reference count
// or, for S/CL/R, by the reference's golden schedule sets:
//   - S/L/R wake-up: every chain from a replica up its old links to its root that holds a
//     recovering replica comes online whole, so the recovering replica's ancestors return too, as
//     in the original Modulo generator (waking only the replicas below gives ops=2 n=4 = 546).
//   - S/L/R "keep links" needs every recovering replica's source online before the recovery; a
//     replica without a source passes (offering keep freely gives ops=2 n=3 = 282).
//   - A divergence writes into one online tree at a time (its root is an online replica whose
//     source is none or offline): the tree's members take the ascending layouts, handed out along
//     every reverse topological order of the tree, children first (a single order gives S/L/R
//     ops=2 n=3 = 84; depth levels give ops=2 n=4 = 490). In S/L/R the online replicas always form
//     one tree under a primary when a divergence is enabled: the spec's "single online primary".
//   - S/CL/R: replicas outside the divergence's tree are not in its layout, receive no write and
//     stay as they are (failure kind "-"); a divergence while every replica is online that fails
//     nobody is dropped, as the original generator asserts.
//   - S/CL/R failures: a replica that fails in a divergence (CRASH, or NONE with a source) loses
//     its incoming link and keeps the version it had; only a NONE replica without a source stays
//     online and takes the writes into its version.
//   - S/CL/R "keep links" follows S/S/R's rule: offered only when no link can be formed.
//   - S/CL/R offline resync changes no link: OFFLINE_1 leaves the restored replica down and
//     disconnected, OFFLINE_2 makes it the online primary and takes the primary it copied from
//     down, disconnected. The next convergence of either links them, in either direction.
//
// S/CL/R with three or more replicas, which the reference leaves open, follows the same rules: a
// primary is an online replica with no source and there may be several (also with two replicas).
// Offline resync options are offered for each primary p in ascending order (Transition.From). The
// text does not name p: no state reached at ops<=3 n=3 or ops=1 n<=5 offers two, and the
// property tests would see two schedules with the same text.
type Redis struct {
	variant RedisVariant
	name    string    // empty: the paper's name of the variant
	also    []Failure // S/CL/R: the kinds a failing replica may take besides a crash
}

// NewRedis returns the Redis model of the given variant, under the paper's name.
func NewRedis(v RedisVariant) Redis { return Redis{variant: v} }

// NewRedisTitled returns the Redis model of the given variant under title: the same schedules
// on another DRM (S/N/R's are S/L/R's).
func NewRedisTitled(v RedisVariant, title string) Redis { return Redis{variant: v, name: title} }

// NewCrashLinkOf returns S/CL/R's rules under title with each failing replica crashed or
// failed by one of also, which may name power loss only: the other kinds leave a server running
// (a partition or pause is what S/CL/R's NONE with a source already does) or break disks, which
// a link model without a quorum has no majority to outlive.
func NewCrashLinkOf(title string, also ...Failure) (Redis, error) {
	for _, f := range also {
		if f != FailPowerLoss {
			return Redis{}, fmt.Errorf("S/CL/R's failures take power loss besides a crash, not %s", f)
		}
	}
	return Redis{variant: CrashLink, name: title, also: slices.Clone(also)}, nil
}

// Rules is the variant's rule set.
func (r Redis) Rules() Rules {
	switch r.variant {
	case Suspend:
		return SuspendRules
	case Link:
		return LinkRules
	}
	return CrashLinkRules
}

func (r Redis) Name() string {
	if r.name != "" {
		return r.name
	}
	switch r.variant {
	case Suspend:
		return "S/S/R"
	case Link:
		return "S/L/R"
	}
	return "S/CL/R"
}

func (r Redis) StepsMatter() bool  { return r.variant == CrashLink }
func (r Redis) Links() bool        { return true }
func (r Redis) FailureKinds() bool { return r.variant == CrashLink }

// Kinds: S/S/R suspends servers (a pause), S/CL/R crashes them (or leaves them running,
// FailNone, which is no failure), S/L/R fails links.
func (r Redis) Kinds() []Failure {
	switch r.variant {
	case Suspend:
		return []Failure{FailPause}
	case CrashLink:
		return append([]Failure{FailCrash}, r.also...)
	}
	return nil
}

// Complete discards, for S/L/R only, a path stuck with replicas offline.
func (r Redis) Complete(_ Params, s *State) bool { return r.variant != Link || s.AllOnline() }

func (r Redis) Init(p Params) State {
	s := State{Left: p.Ops, RS: make([]int, p.Replicas), On: allTrue(p.Replicas), Src: make([]int, p.Replicas)}
	for i := range s.Src {
		s.Src[i] = NoSource
		if r.variant != Suspend {
			s.Src[i] = i - 1 // one chain, 0 the primary
		}
	}
	if r.variant == CrashLink {
		s.Failed = make([]Failure, p.Replicas)
	}
	return s
}

func (r Redis) minOnline(p Params) int {
	if r.variant == CrashLink {
		return p.Replicas / 2
	}
	return quorum(p.Replicas)
}

func (r Redis) Next(p Params, s *State, out []Transition) []Transition {
	if s.Left > 0 && s.Online() >= r.minOnline(p) {
		out = r.divergences(s, out)
	}
	if !s.AllOnline() {
		out = r.convergences(p, s, out)
	}
	return out
}

func (r Redis) divergences(s *State, out []Transition) []Transition {
	if r.variant == Suspend {
		layouts(s, func(w []int) { out = append(out, Transition{Kind: Divergence, Writes: w}) })
		return out
	}
	failing := r.Kinds()
	for _, tree := range onlineTrees(s) {
		orders := reverseTopoOrders(s, tree)
		var vectors [][]int
		layoutsOver(tree, len(s.RS), s.Left, func(w []int) {
			values := make([]int, 0, len(tree))
			for _, i := range tree {
				values = append(values, w[i])
			}
			slices.Sort(values)
			for _, order := range orders {
				v := make([]int, len(s.RS))
				for k, i := range order {
					v[i] = values[k]
				}
				if !slices.ContainsFunc(vectors, func(u []int) bool { return slices.Equal(u, v) }) {
					vectors = append(vectors, v)
				}
			}
		})
		for _, v := range vectors {
			if r.variant == Link {
				out = append(out, Transition{Kind: Divergence, Writes: v})
				continue
			}
			out = failureKinds(s, tree, v, failing, out)
		}
	}
	return out
}

// onlineTrees splits the online replicas into the trees of the online forest, each ascending,
// in ascending order of their smallest member. A tree's root is an online replica whose source
// is none or offline.
func onlineTrees(s *State) [][]int {
	root := func(i int) int {
		for s.Src[i] != NoSource && s.On[s.Src[i]] {
			i = s.Src[i]
		}
		return i
	}
	var trees [][]int
	index := map[int]int{}
	for _, i := range onlineReplicas(s) {
		r := root(i)
		k, ok := index[r]
		if !ok {
			k = len(trees)
			index[r] = k
			trees = append(trees, nil)
		}
		trees[k] = append(trees[k], i)
	}
	return trees
}

// failureKinds appends one divergence per choice of NONE or one of the failing kinds for every
// replica of the tree (S/CL/R's: CRASH), NONE only for replicas that receive every write of the
// step; replicas outside the tree are not in the layout. A choice after which every replica
// would still be online fails nobody and is dropped.
func failureKinds(s *State, tree, v []int, failing []Failure, out []Transition) []Transition {
	top := slices.Max(v)
	f := make([]Failure, len(v))
	var rec func(j int)
	rec = func(j int) {
		if j == len(tree) {
			if !failsSomeone(s, tree, f) {
				return
			}
			out = append(out, Transition{Kind: Divergence, Writes: v, Failures: slices.Clone(f)})
			return
		}
		i := tree[j]
		if v[i] == top {
			f[i] = FailNone
			rec(j + 1)
		}
		for _, k := range failing {
			f[i] = k
			rec(j + 1)
		}
	}
	rec(0)
	return out
}

// failsSomeone tells whether a divergence with failure kinds f on tree leaves some replica
// offline: one was offline already, or a member fails, or a NONE member has a source.
func failsSomeone(s *State, tree []int, f []Failure) bool {
	if !s.AllOnline() {
		return true
	}
	for _, i := range tree {
		if f[i] != FailNone || s.Src[i] != NoSource {
			return true
		}
	}
	return false
}

// reverseTopoOrders returns every order of the members of one online tree in which each
// replica comes before the online replica it replicates from.
func reverseTopoOrders(s *State, tree []int) [][]int {
	pending := make([]int, len(s.RS)) // online children not yet placed
	for _, i := range tree {
		if p := s.Src[i]; p != NoSource && s.On[p] {
			pending[p]++
		}
	}
	placed := make([]bool, len(s.RS))
	order := make([]int, 0, len(tree))
	var orders [][]int
	var rec func()
	rec = func() {
		if len(order) == len(tree) {
			orders = append(orders, slices.Clone(order))
			return
		}
		for _, i := range tree {
			if placed[i] || pending[i] > 0 {
				continue
			}
			placed[i] = true
			order = append(order, i)
			p := s.Src[i]
			if p != NoSource && s.On[p] {
				pending[p]--
			}
			rec()
			if p != NoSource && s.On[p] {
				pending[p]++
			}
			order = order[:len(order)-1]
			placed[i] = false
		}
	}
	rec()
	return orders
}

// canLink tells whether child may start replicating from parent: child has no source and the
// new edge closes no loop.
func canLink(s *State, child, parent int) bool {
	if s.Src[child] != NoSource || child == parent {
		return false
	}
	for i := parent; i != NoSource; i = s.Src[i] {
		if i == child {
			return false
		}
	}
	return true
}

func withLink(src []int, child, parent int) []int {
	l := slices.Clone(src)
	l[child] = parent
	return l
}

func (r Redis) convergences(p Params, s *State, out []Transition) []Transition {
	size := 1
	if s.Online() == 0 {
		size = 2
	}
	key := func(i int) string {
		k := strconv.Itoa(s.RS[i]) + "/" + strconv.Itoa(s.Src[i]) + "/"
		for _, t := range s.Targets(i) {
			k += strconv.Itoa(t) + ","
		}
		return k
	}
	groups(offlineReplicas(s), size, size, key, func(g []int) {
		var opts [][]int
		add := func(l []int) {
			if !slices.ContainsFunc(opts, func(o []int) bool { return slices.Equal(o, l) }) {
				opts = append(opts, l)
			}
		}
		keep := false
		if len(g) == 2 {
			a, b := g[0], g[1]
			if canLink(s, b, a) {
				add(withLink(s.Src, b, a))
			}
			if canLink(s, a, b) {
				add(withLink(s.Src, a, b))
			}
			keep = len(opts) == 0
		} else {
			d := g[0]
			for k, o := range onlineReplicas(s) {
				before := len(opts)
				if canLink(s, d, o) {
					add(withLink(s.Src, d, o))
				}
				if canLink(s, o, d) {
					add(withLink(s.Src, o, d))
				}
				if k == 0 {
					keep = len(opts) == before
				}
			}
		}
		if r.variant == Link {
			keep = keep && sourcesOnline(s, g)
		}
		if keep {
			add(slices.Clone(s.Src))
		}
		for _, l := range opts {
			out = append(out, Transition{Kind: Convergence, Group: g, Sources: l})
		}
		if r.variant == CrashLink && len(g) == 1 && s.Crashed(g[0]) && s.Steps < 2*p.Ops+2 {
			out = offlineResyncs(s, g[0], out)
		}
	})
	return out
}

// sourcesOnline tells whether every replica of g either has no source or a source that is
// online before the recovery.
func sourcesOnline(s *State, g []int) bool {
	for _, i := range g {
		if src := s.Src[i]; src != NoSource && !s.On[src] {
			return false
		}
	}
	return true
}

// offlineResyncs appends OFFLINE_1 and OFFLINE_2 of the crashed replica d from each online
// primary whose version differs from d's, in ascending order. Neither changes a link.
func offlineResyncs(s *State, d int, out []Transition) []Transition {
	for p, on := range s.On {
		if !on || s.Src[p] != NoSource || s.RS[p] == s.RS[d] {
			continue
		}
		for _, k := range []Resync{Offline1, Offline2} {
			out = append(out, Transition{Kind: Convergence, Group: []int{d}, Sources: slices.Clone(s.Src), Resync: k, From: p})
		}
	}
	return out
}

func (r Redis) Apply(p Params, s *State, t *Transition) State {
	n := s.Clone()
	if t.Kind == Divergence {
		r.diverge(&n, t)
		return n
	}
	if t.Resync != Online {
		d := t.Group[0]
		n.RS[d] = s.RS[t.From]
		n.Failed[d] = NotInLayout // OFFLINE_1: down, disconnected
		if t.Resync == Offline2 {
			n.On[d], n.On[t.From] = true, false
		}
		return n
	}
	if r.variant == Link {
		// Every chain from a replica up to its root (old links) that holds a recovering replica
		// comes back whole: its links were never the ones that failed.
		for i := range n.On {
			hit := false
			for j := i; j != NoSource; j = s.Src[j] {
				if slices.Contains(t.Group, j) {
					hit = true
					break
				}
			}
			if hit {
				for j := i; j != NoSource; j = s.Src[j] {
					n.On[j] = true
				}
			}
		}
	}
	for _, i := range t.Group {
		n.On[i] = true
		if n.Failed != nil {
			n.Failed[i] = NotInLayout
		}
	}
	n.Src = slices.Clone(t.Sources)
	n.setOnline(nextEpoch(n.topOnline()))
	return n
}

func (r Redis) diverge(n *State, t *Transition) {
	if r.variant == CrashLink {
		divergeCrashLink(n, t)
		return
	}
	if r.variant == Link {
		// Link failure: a replica that misses writes its source received loses that link.
		for i, on := range n.On {
			if src := n.Src[i]; on && src != NoSource && t.Writes[src] > t.Writes[i] {
				n.Src[i] = NoSource
			}
		}
	}
	inject(n, t)
	for i := range n.On {
		n.On[i] = false
	}
}

// divergeCrashLink applies an S/CL/R divergence: every replica that fails loses its incoming
// link and keeps its version (its writes may be lost with it): a CRASH replica is crashed, a
// NONE replica with a source is disconnected. A NONE replica without a source stays online
// with the writes. Replicas outside the layout are untouched.
func divergeCrashLink(n *State, t *Transition) {
	n.Left -= t.WriteCount()
	for i, f := range t.Failures {
		switch {
		case f == NotInLayout:
		case f == FailNone && n.Src[i] == NoSource:
			n.RS[i] += t.Writes[i]
		default:
			n.On[i], n.Src[i] = false, NoSource
			n.Failed[i] = f
		}
	}
}
