package schedules

import (
	"github.com/modulo-testing/modulo/aem"
)

// RestorePoints returns the lengths k, 0 < k < len(steps), of the prefixes of steps after
// which model m has every replica's server down (aem.AllDown). A cluster whose servers keep all
// their state on disk is then its files and nothing else, so it can be saved there and restored
// for another schedule with the same prefix (in Q/C/Z, after every divergence). It stops at
// the first step the model does not enable.
func RestorePoints(m aem.Model, p aem.Params, steps []aem.Transition) []int {
	var points []int
	s := m.Init(p)
	for i := range steps[:max(len(steps)-1, 0)] {
		_, next, ok := aem.Take(m, p, &s, &steps[i])
		if !ok {
			break
		}
		s = next
		if aem.AllDown(m, &s) {
			points = append(points, i+1)
		}
	}
	return points
}

// pointFinder returns the RestorePoints of schedules given in file order, where each shares
// most of its steps with the one before: it keeps the model's states along the last schedule
// and takes only the steps that the next one does not share. RestorePoints takes every step
// anew, enumerating each state's transitions: Partition of the 172,997 schedules of Q/C/Z
// ops=5 took 4.7 s with it, 1.7 s with this (BenchmarkPartition measures ops=4). Grouper,
// Sharer and Partition use it.
type pointFinder struct {
	model  aem.Model
	params aem.Params
	steps  []aem.Transition // the last schedule's steps that the model enabled
	states []aem.State      // states[i] is the state after i of them
}

// points returns RestorePoints(model, params, steps).
func (f *pointFinder) points(steps []aem.Transition) []int {
	if f.states == nil {
		f.states = []aem.State{f.model.Init(f.params)}
	}
	k := 0
	for k < len(f.steps) && k < len(steps)-1 && aem.Equal(&f.steps[k], &steps[k]) {
		k++
	}
	f.steps, f.states = f.steps[:k], f.states[:k+1]
	for i := k; i < len(steps)-1; i++ {
		_, next, ok := aem.Take(f.model, f.params, &f.states[i], &steps[i])
		if !ok {
			break
		}
		f.steps, f.states = append(f.steps, steps[i]), append(f.states, next)
	}
	var points []int
	for i := 1; i < len(f.states); i++ {
		if aem.AllDown(f.model, &f.states[i]) {
			points = append(points, i)
		}
	}
	return points
}

// sharedPoints returns how many of prev's restore points (points, ascending) steps shares the
// prefix up to, and the deepest of them (0 for none).
func sharedPoints(prev []aem.Transition, points []int, steps []aem.Transition) (n, deepest int) {
	for _, k := range points {
		if !samePrefix(prev, steps, k) {
			break
		}
		n, deepest = n+1, k
	}
	return n, deepest
}

// samePrefix tells whether a and b share their first k steps.
func samePrefix(a, b []aem.Transition, k int) bool {
	if len(a) < k || len(b) < k {
		return false
	}
	for i := range k {
		if !aem.Equal(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// Grouper cuts a campaign's schedules, in file order (a generated file lists the schedules
// that share a prefix one after another), into units of work: a worker runs a unit's
// schedules in turn, so that they share its restores. A unit holds schedules that share at
// least their prefix up to the first restore point; one that reaches Max schedules is cut
// where the schedules part before their second restore point, so that workers share the load
// of a large subtree. Without restore points every unit is one schedule.
type Grouper struct {
	Model  aem.Model
	Params aem.Params
	Max    int // a unit's size beyond which it is cut at a shallower boundary; at least 1

	unit   []Schedule
	points []int // the restore points of the unit's last schedule
	finder pointFinder
}

// Add adds the next schedule and returns the unit that it closed, if any.
func (g *Grouper) Add(s Schedule) []Schedule {
	var done []Schedule
	if len(g.unit) > 0 {
		last := g.unit[len(g.unit)-1]
		depth, _ := sharedPoints(last.Steps, g.points, s.Steps)
		if depth == 0 || depth == 1 && len(g.unit) >= max(g.Max, 1) {
			done, g.unit = g.unit, nil
		}
	}
	g.unit = append(g.unit, s)
	g.finder.model, g.finder.params = g.Model, g.Params
	g.points = g.finder.points(s.Steps)
	return done
}

// Flush returns the last unit, if any.
func (g *Grouper) Flush() []Schedule {
	done := g.unit
	g.unit, g.points = nil, nil
	return done
}

// Sharer decides, for one worker that runs schedules in file order, from which saved prefix
// each schedule starts and which of its prefixes to save. It keeps the saved prefixes of the
// schedule being run, deepest last: in file order, a prefix that the schedule does not share
// is never needed again. T is what the caller keeps of a saved prefix.
type Sharer[T any] struct {
	Model  aem.Model
	Params aem.Params
	saved  []savedPrefix[T]
	finder pointFinder
}

type savedPrefix[T any] struct {
	steps []aem.Transition
	v     T
}

// Start is where a schedule starts.
type Start[T any] struct {
	// Steps is how many steps the restored prefix covers: 0 when the schedule starts afresh.
	Steps int
	Saved T // the restored prefix, when Steps > 0
	// Evicted are the saved prefixes that the schedule does not share, dropped now.
	Evicted []T
	// Save lists the lengths of the prefixes to save once run: the restore points beyond
	// Steps that next, the schedule to run after this one, shares.
	Save []int
}

// Begin returns where s starts, given next (nil when s is the last).
func (sh *Sharer[T]) Begin(s *Schedule, next *Schedule) Start[T] {
	var st Start[T]
	keep := 0
	for keep < len(sh.saved) && samePrefix(sh.saved[keep].steps, s.Steps, len(sh.saved[keep].steps)) {
		keep++
	}
	for _, e := range sh.saved[keep:] {
		st.Evicted = append(st.Evicted, e.v)
	}
	sh.saved = sh.saved[:keep]
	if keep > 0 {
		top := sh.saved[keep-1]
		st.Steps, st.Saved = len(top.steps), top.v
	}
	if next == nil {
		return st
	}
	sh.finder.model, sh.finder.params = sh.Model, sh.Params
	for _, k := range sh.finder.points(s.Steps) {
		if k > st.Steps && samePrefix(s.Steps, next.Steps, k) {
			st.Save = append(st.Save, k)
		}
	}
	return st
}

// Saved records that the prefix of s of length k was saved as v.
func (sh *Sharer[T]) Saved(s *Schedule, k int, v T) {
	sh.saved = append(sh.saved, savedPrefix[T]{steps: s.Steps[:k:k], v: v})
}

// Drop forgets every saved prefix and returns them.
func (sh *Sharer[T]) Drop() []T {
	var vs []T
	for _, e := range sh.saved {
		vs = append(vs, e.v)
	}
	sh.saved = nil
	return vs
}

// Work is what running schedules costs in steps and cluster starts.
type Work struct {
	Schedules int
	Steps     int // steps executed
	Starts    int // clusters started afresh
	Restores  int // clusters restored from a saved prefix
	Saves     int
}

// Add adds o's counts to w's.
func (w *Work) Add(o Work) {
	w.Schedules += o.Schedules
	w.Steps += o.Steps
	w.Starts += o.Starts
	w.Restores += o.Restores
	w.Saves += o.Saves
}

// Plan counts the work of one worker that runs units in turn, sharing prefixes with Sharer
// when share is set, when nothing fails early: what the executor does with one worker, and
// with several as long as each keeps taking the unit after its last. Without sharing a
// schedule costs a start and all its steps.
func Plan(m aem.Model, p aem.Params, units [][]Schedule, share bool) Work {
	var w Work
	sh := Sharer[struct{}]{Model: m, Params: p}
	for _, u := range units {
		for i := range u {
			w.Schedules++
			if !share {
				w.Starts++
				w.Steps += len(u[i].Steps)
				continue
			}
			var next *Schedule
			if i+1 < len(u) {
				next = &u[i+1]
			}
			st := sh.Begin(&u[i], next)
			if st.Steps > 0 {
				w.Restores++
			} else {
				w.Starts++
			}
			w.Steps += len(u[i].Steps) - st.Steps
			for _, k := range st.Save {
				sh.Saved(&u[i], k, struct{}{})
				w.Saves++
			}
		}
	}
	return w
}
