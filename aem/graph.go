package aem

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Graph is a model's transition tree folded into a graph over distinct states: every
// schedule is a maximal path of the tree, and the tree is the graph unfolded. Keeping the
// states distinct makes counting a sum over memoised states and makes enumeration cost only
// the output, with memory that grows with the number of states rather than of schedules.
type Graph struct {
	model Model
	p     Params
	nodes map[string]*Node
	root  *Node
	edges int
	key   []byte
}

// Node is one distinct abstract state.
type Node struct {
	State    State
	edges    []Edge
	expanded bool
	count    uint64
	counted  bool
}

// Edge is one enabled transition and the state it leads to.
type Edge struct {
	// ID numbers the edges of one graph from 0, so that callers can cache per-edge work.
	ID int
	T  Transition
	To *Node
}

// ErrTooMany is returned by Count when the number of schedules does not fit in 64 bits.
var ErrTooMany = errors.New("more than 2^64-1 schedules")

// NewGraph prepares the graph of model m for parameters p.
func NewGraph(m Model, p Params) (*Graph, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	g := &Graph{model: m, p: p, nodes: map[string]*Node{}}
	g.root = g.node(m.Init(p))
	return g, nil
}

// Model returns the graph's model.
func (g *Graph) Model() Model { return g.model }

// Params returns the graph's parameters.
func (g *Graph) Params() Params { return g.p }

// States is the number of distinct states expanded or reached so far.
func (g *Graph) States() int { return len(g.nodes) }

// Edges is the number of edges created so far; every Edge.ID is below it.
func (g *Graph) Edges() int { return g.edges }

func (g *Graph) node(s State) *Node {
	g.key = s.appendKey(g.key[:0], g.model.StepsMatter())
	if n, ok := g.nodes[string(g.key)]; ok {
		return n
	}
	n := &Node{State: s}
	g.nodes[string(g.key)] = n
	return n
}

// Out returns the edges leaving n, expanding it on first use.
func (g *Graph) Out(n *Node) []Edge {
	if n.expanded {
		return n.edges
	}
	ts := g.model.Next(g.p, &n.State, nil)
	n.edges = make([]Edge, len(ts))
	for i := range ts {
		next := g.model.Apply(g.p, &n.State, &ts[i])
		next.Steps = n.State.Steps + 1
		n.edges[i] = Edge{ID: g.edges, T: ts[i], To: g.node(next)}
		g.edges++
	}
	n.expanded = true
	return n.edges
}

// Count returns the number of schedules without enumerating them.
func (g *Graph) Count() (uint64, error) { return g.count(g.root) }

func (g *Graph) count(n *Node) (uint64, error) {
	if n.counted {
		return n.count, nil
	}
	out := g.Out(n)
	var total uint64
	if len(out) == 0 {
		if g.model.Complete(g.p, &n.State) {
			total = 1
		}
	}
	for i := range out {
		c, err := g.count(out[i].To)
		if err != nil {
			return 0, err
		}
		var carry uint64
		total, carry = bits.Add64(total, c, 0)
		if carry != 0 {
			return 0, ErrTooMany
		}
	}
	n.count, n.counted = total, true
	return total, nil
}

// Visitor receives the schedules of a walk as a stack of edges: Push and Pop follow the
// depth-first descent, and Leaf is called once per schedule with the path on the stack.
type Visitor interface {
	Push(e *Edge)
	Pop()
	Leaf() error
}

// ErrStop ends a walk early without error when a Visitor returns it.
var ErrStop = errors.New("stop walk")

// Walk visits every schedule in canonical order. Branches that lead to no schedule (a path the
// model discards) are never pushed.
func (g *Graph) Walk(v Visitor) error {
	if _, err := g.Count(); err != nil && !errors.Is(err, ErrTooMany) {
		return err
	}
	err := g.walk(g.root, v)
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

func (g *Graph) walk(n *Node, v Visitor) error {
	out := g.Out(n)
	if len(out) == 0 {
		if g.model.Complete(g.p, &n.State) {
			return v.Leaf()
		}
		return nil
	}
	for i := range out {
		e := &out[i]
		if e.To.counted && e.To.count == 0 {
			continue
		}
		v.Push(e)
		if err := g.walk(e.To, v); err != nil {
			return err
		}
		v.Pop()
	}
	return nil
}

// Root returns the initial state's node.
func (g *Graph) Root() *Node { return g.root }

// Follow checks that path is a schedule of the model, transition by transition from the
// initial state, and returns the node reached after each step. It names the first transition
// that was not enabled, or says why the path does not end a schedule.
func (g *Graph) Follow(path []Transition) ([]*Node, error) {
	edges, err := g.FollowEdges(path)
	nodes := make([]*Node, len(edges))
	for i := range edges {
		nodes[i] = edges[i].To
	}
	return nodes, err
}

// FollowEdges is Follow returning the edge taken at each step: the graph's transitions (a
// state and the step out of it) that the schedule covers.
func (g *Graph) FollowEdges(path []Transition) ([]Edge, error) {
	n := g.root
	edges := make([]Edge, 0, len(path))
	for i := range path {
		out := g.Out(n)
		j := slices.IndexFunc(out, func(e Edge) bool { return Equal(&e.T, &path[i]) })
		if j < 0 {
			return edges, fmt.Errorf("step %d (%s) is not enabled in the state before it (%s)", i+1, path[i].String(), n.State.String())
		}
		edges = append(edges, out[j])
		n = out[j].To
	}
	if len(g.Out(n)) != 0 {
		return edges, fmt.Errorf("schedule ends after step %d although transitions are still enabled (%s)", len(path), n.State.String())
	}
	if !g.model.Complete(g.p, &n.State) {
		return edges, fmt.Errorf("schedule ends after step %d with replicas the model leaves stuck offline (%s)", len(path), n.State.String())
	}
	return edges, nil
}

// Equal tells whether two transitions are the same step. An offline resync's From is left out:
// the state determines it.
func Equal(a, b *Transition) bool {
	return a.Kind == b.Kind && a.Resync == b.Resync && slices.Equal(a.Writes, b.Writes) &&
		slices.Equal(a.Group, b.Group) && slices.Equal(a.Sources, b.Sources) && slices.Equal(a.Failures, b.Failures)
}

// Take takes the step that t names from state s: it returns the model's own transition (with
// what t's text leaves out, such as an offline resync's From) and the state after it, the step
// counted; false when m does not enable t in s.
func Take(m Model, p Params, s *State, t *Transition) (Transition, State, bool) {
	enabled := m.Next(p, s, nil)
	k := slices.IndexFunc(enabled, func(e Transition) bool { return Equal(&e, t) })
	if k < 0 {
		return Transition{}, State{}, false
	}
	next := m.Apply(p, s, &enabled[k])
	next.Steps = s.Steps + 1
	return enabled[k], next, true
}

// Unrank returns the k-th schedule (from 0) of the graph in the order of Walk, without
// enumerating those before it: at each state it descends into the edge whose subtree holds
// the k-th path, by the counts of Count.
func (g *Graph) Unrank(k uint64) ([]Edge, error) {
	total, err := g.Count()
	if err != nil {
		return nil, err
	}
	if k >= total {
		return nil, fmt.Errorf("schedule %d of %d: out of range", k, total)
	}
	var path []Edge
	for n := g.root; ; {
		out := g.Out(n)
		if len(out) == 0 {
			return path, nil
		}
		for i := range out {
			c := out[i].To.count // counted by Count above
			if k < c {
				path = append(path, out[i])
				n = out[i].To
				break
			}
			k -= c
		}
	}
}

// Transitions counts the graph's transitions that some schedule takes: the edges into a state
// from which a schedule ends (every state of the graph is reached from the initial one).
func (g *Graph) Transitions() (int, error) {
	if _, err := g.Count(); err != nil {
		return 0, err
	}
	n := 0
	for _, node := range g.nodes {
		for _, e := range node.edges {
			if e.To.count > 0 {
				n++
			}
		}
	}
	return n, nil
}
