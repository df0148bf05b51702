package plugintest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/modulo-testing/modulo/aem"
)

// maxEnumerated bounds how many schedules Cover looks at: the kinds of transition show up in the
// first few, and the models' small parameters have far fewer schedules than this.
const maxEnumerated = 200_000

// Kinds names the kinds of transition that t is, taken in state s of model m: each kind is
// something a plugin does differently to realise it (a write that reaches only a minority, an
// offline resync, a link that fails). A plugin that realises one transition of each kind its
// DRM uses has shown every code path the DRM needs.
func Kinds(m aem.Model, p aem.Params, s *aem.State, t *aem.Transition) []string {
	var kinds []string
	add := func(k string) {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if t.Kind == aem.Divergence && !s.AllOnline() {
		add("D: with replicas offline")
	}
	if m.Rules().Quorum() {
		quorum := p.Replicas/2 + 1
		switch t.Kind {
		case aem.Divergence:
			kind := "D: every write reaches a quorum"
			for j := 1; j <= t.WriteCount(); j++ {
				recv := 0
				for _, w := range t.Writes {
					if w >= j {
						recv++
					}
				}
				if recv < quorum {
					kind = "D: a write reaches only a minority"
				}
			}
			add(kind)
			for i, f := range t.Failures { // a model of several failure kinds
				if f == aem.NotInLayout {
					continue
				}
				add("D: a replica " + f.Verb())
				// A pause before a write that reaches only a minority stops the replica for good,
				// where a crash stops it for the write and kills it at the end; a failing disk's
				// server goes on with the write sent and its disk failing.
				if (f == aem.FailPause || f == aem.FailDiskError) && t.Writes[i] < t.WriteCount() && kind == "D: a write reaches only a minority" {
					add("D: a replica " + f.Verb() + " before a write that reaches only a minority")
				}
			}
		case aem.Convergence:
			if s.Online() >= quorum {
				add("C: replicas rejoin a serving quorum")
			} else {
				add("C: replicas restore a quorum (a new leader)")
			}
			for _, i := range t.Group {
				if f := s.FailedAs(i); f != aem.NotInLayout {
					add("C: a " + recoversBy[f])
				}
			}
		}
		return kinds
	}
	if t.Kind == aem.Divergence {
		top := t.WriteCount()
		for i, w := range t.Writes {
			inLayout := s.On[i]
			if t.Failures != nil {
				inLayout = t.Failures[i] != aem.NotInLayout
			}
			src := s.Src[i]
			linked := src != aem.NoSource && s.On[src]
			if w > 0 && linked && t.Writes[src] < w {
				add("D: a replica takes writes its source misses")
			}
			switch {
			case !inLayout:
			case t.Failures != nil && t.Failures[i] == aem.FailCrash:
				add("D: a replica crashes")
			case t.Failures != nil && linked:
				add("D: a replica is disconnected from its source")
			case t.Failures == nil && w < top && linked && t.Writes[src] > w:
				add("D: a replica misses writes its source receives")
			case t.Failures == nil && w < top:
				add("D: a replica misses writes")
			}
		}
		return kinds
	}
	switch {
	case t.Resync == aem.Offline1:
		add("C: offline resync into a crashed replica (OFFLINE_1)")
	case t.Resync == aem.Offline2:
		add("C: a crashed replica restarts from a snapshot as the primary (OFFLINE_2)")
	case len(t.Group) > 1:
		add("C: two replicas come back together")
	case slices.Equal(t.Sources, s.Src):
		add("C: a replica comes back, links kept")
	default:
		add("C: a replica comes back, links change")
	}
	for _, i := range t.Group {
		if s.Crashed(i) && t.Resync == aem.Online {
			add("C: a crashed replica restarts")
		}
	}
	return kinds
}

// recoversBy names what a convergence does to a replica of a model of several failure kinds,
// by how it failed.
var recoversBy = map[aem.Failure]string{
	aem.FailCrash: "crashed replica restarts", aem.FailPowerLoss: "replica that lost power restarts",
	aem.FailPartition: "cut-off replica is healed", aem.FailPause: "paused replica goes on",
	aem.FailDiskError: "replica's disk heals", aem.FailCorruption: "corrupted replica restarts",
}

// Plan is a small set of schedules that together take every kind of transition the model uses.
type Plan struct {
	Kinds     []string // every kind the model's schedules use, in the order first met
	Schedules []Planned
}

// Planned is one schedule of a plan.
type Planned struct {
	Steps []aem.Transition
	Kinds []string // the kinds its steps take, in order of first use
	End   aem.State
}

// Cover plans schedules of model m with parameters p that take every kind of transition (see
// Kinds) the model's schedules use: greedily, the schedule that adds the most kinds not yet
// taken, the shortest among equals.
func Cover(m aem.Model, p aem.Params) (Plan, error) {
	all, err := enumerate(m, p)
	if err != nil {
		return Plan{}, err
	}
	var plan Plan
	for _, s := range all {
		for _, k := range s.Kinds {
			if !slices.Contains(plan.Kinds, k) {
				plan.Kinds = append(plan.Kinds, k)
			}
		}
	}
	var taken []string
	for len(taken) < len(plan.Kinds) {
		best, gain := -1, 0
		for i, s := range all {
			n := 0
			for _, k := range s.Kinds {
				if !slices.Contains(taken, k) {
					n++
				}
			}
			if n > gain || n == gain && n > 0 && len(s.Steps) < len(all[best].Steps) {
				best, gain = i, n
			}
		}
		s := all[best]
		plan.Schedules = append(plan.Schedules, s)
		for _, k := range s.Kinds {
			if !slices.Contains(taken, k) {
				taken = append(taken, k)
			}
		}
	}
	return plan, nil
}

// Shortest returns the shortest of m's schedules with parameters p that ends in a state for
// which keep holds.
func Shortest(m aem.Model, p aem.Params, keep func(end *aem.State) bool) (Planned, error) {
	all, err := enumerate(m, p)
	if err != nil {
		return Planned{}, err
	}
	best := -1
	for i, s := range all {
		if keep(&s.End) && (best < 0 || len(s.Steps) < len(all[best].Steps)) {
			best = i
		}
	}
	if best < 0 {
		return Planned{}, fmt.Errorf("no %s schedule with %d writes and %d replicas ends as needed", m.Name(), p.Ops, p.Replicas)
	}
	return all[best], nil
}

// enumerate returns m's schedules with parameters p, up to maxEnumerated, with their kinds.
func enumerate(m aem.Model, p aem.Params) ([]Planned, error) {
	g, err := aem.NewGraph(m, p)
	if err != nil {
		return nil, err
	}
	w := &walker{m: m, p: p, nodes: []*aem.Node{g.Root()}}
	if err := g.Walk(w); err != nil {
		return nil, fmt.Errorf("enumerate %s schedules: %w", m.Name(), err)
	}
	if len(w.all) == 0 {
		return nil, errors.New("the model has no schedule with these parameters")
	}
	return w.all, nil
}

// walker collects the schedules of a walk with their kinds, up to maxEnumerated.
type walker struct {
	m     aem.Model
	p     aem.Params
	nodes []*aem.Node // the states along the current path, the initial one first
	steps []aem.Transition
	all   []Planned
}

func (w *walker) Push(e *aem.Edge) {
	w.nodes = append(w.nodes, e.To)
	w.steps = append(w.steps, e.T)
}

func (w *walker) Pop() {
	w.nodes = w.nodes[:len(w.nodes)-1]
	w.steps = w.steps[:len(w.steps)-1]
}

func (w *walker) Leaf() error {
	s := Planned{Steps: slices.Clone(w.steps), End: w.nodes[len(w.nodes)-1].State}
	for i := range w.steps {
		for _, k := range Kinds(w.m, w.p, &w.nodes[i].State, &w.steps[i]) {
			if !slices.Contains(s.Kinds, k) {
				s.Kinds = append(s.Kinds, k)
			}
		}
	}
	w.all = append(w.all, s)
	if len(w.all) >= maxEnumerated {
		return aem.ErrStop
	}
	return nil
}
