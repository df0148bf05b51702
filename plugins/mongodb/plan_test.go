package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/schedules"
)

// schedule is one generated Q/C/M schedule.
type schedule struct {
	id    string
	steps []aem.Transition
}

func (s schedule) String() string { return string(schedules.Body(s.steps)) }

// collector gathers every schedule of a walk.
type collector struct {
	p    aem.Params
	path []aem.Transition
	out  []schedule
}

func (c *collector) Push(e *aem.Edge) { c.path = append(c.path, e.T) }
func (c *collector) Pop()             { c.path = c.path[:len(c.path)-1] }
func (c *collector) Leaf() error {
	steps := slices.Clone(c.path)
	c.out = append(c.out, schedule{id: schedules.ID("qcm", c.p, schedules.Body(steps)), steps: steps})
	return nil
}

// qcmSchedules generates every Q/C/M schedule for ops and n.
func qcmSchedules(t testing.TB, ops, n int) []schedule {
	t.Helper()
	d, err := drms.Lookup("qcm")
	if err != nil {
		t.Fatal(err)
	}
	p := aem.Params{Ops: ops, Replicas: n}
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{p: p}
	if err := g.Walk(c); err != nil {
		t.Fatal(err)
	}
	return c.out
}

// entry is one oplog entry of the simulated replica set: a write, or the no-op a new primary
// writes in its term.
type entry struct {
	term int
	key  string // "" for a new primary's no-op
}

// simCluster replays plans on a model of a replica set that behaves as a correct one would:
// writes reach exactly the members up when they are made and waited for, an election makes the
// member with the newest oplog primary, and a resync gives every member the primary's oplog.
// It checks that each op makes sense in the state it finds (no kill of a member that is down,
// writes only to the primary). It tests the planner, and is no stand-in for mongod: the tests
// that drive mongod are in live_test.go.
type simCluster struct {
	up      []bool
	oplog   [][]entry // by member
	primary int
	term    int
	// writeUp lists, for each write of the current step, the members up when it was made.
	writeUp [][]int
}

func newSim(n int) *simCluster {
	s := &simCluster{up: make([]bool, n), oplog: make([][]entry, n), primary: 0, term: 1}
	for i := range s.up {
		s.up[i] = true
		s.oplog[i] = []entry{{term: 1}}
	}
	return s
}

func (s *simCluster) upMembers() []int {
	var ms []int
	for m, u := range s.up {
		if u {
			ms = append(ms, m)
		}
	}
	return ms
}

// newer tells whether member a's oplog is newer than b's: by the term of its last entry, then
// by its length.
func (s *simCluster) newer(a, b int) bool {
	la, lb := s.oplog[a][len(s.oplog[a])-1], s.oplog[b][len(s.oplog[b])-1]
	if la.term != lb.term {
		return la.term > lb.term
	}
	return len(s.oplog[a]) > len(s.oplog[b])
}

func (s *simCluster) do(o *op) error {
	switch o.kind {
	case opRemap:
	case opKill:
		if !s.up[o.member] {
			return fmt.Errorf("%s: member %d is already down", o, o.member)
		}
		s.up[o.member] = false
		if s.primary == o.member {
			s.primary = -1
		}
	case opStart:
		if s.up[o.member] {
			return fmt.Errorf("%s: member %d is already up", o, o.member)
		}
		s.up[o.member] = true
	case opWrite:
		if o.member != s.primary {
			return fmt.Errorf("%s: member %d is primary", o, s.primary)
		}
		s.oplog[o.member] = append(s.oplog[o.member], entry{term: s.term, key: o.key})
		s.writeUp = append(s.writeUp, s.upMembers())
	case opAwaitHeld:
		if !slices.Equal(o.members, s.upMembers()) || !slices.Contains(o.members, s.primary) {
			return fmt.Errorf("%s: members up %v, primary %d", o, s.upMembers(), s.primary)
		}
		for _, m := range o.members {
			s.oplog[m] = slices.Clone(s.oplog[s.primary])
		}
	case opElect:
		if !slices.Equal(o.members, s.upMembers()) || s.primary >= 0 {
			return fmt.Errorf("%s: members up %v, primary %d", o, s.upMembers(), s.primary)
		}
		best := o.members[0]
		for _, m := range o.members[1:] {
			if s.newer(m, best) {
				best = m
			}
		}
		s.term++
		s.primary = best
		s.oplog[best] = append(s.oplog[best], entry{term: s.term})
	case opAwaitSync:
		if !slices.Equal(o.members, s.upMembers()) || !slices.Contains(o.members, s.primary) {
			return fmt.Errorf("%s: members up %v, primary %d", o, s.upMembers(), s.primary)
		}
		for _, m := range o.members {
			s.oplog[m] = slices.Clone(s.oplog[s.primary])
		}
	default:
		return fmt.Errorf("unknown op %d", o.kind)
	}
	return nil
}

// keys lists the keys in member m's oplog.
func (s *simCluster) keys(m int) []string {
	var ks []string
	for _, e := range s.oplog[m] {
		if e.key != "" {
			ks = append(ks, e.key)
		}
	}
	return ks
}

// planAll plans every step of sched against a simulated cluster, calling check after each
// step with the transition, the abstract state before it and the ops.
func planAll(t *testing.T, p aem.Params, sched schedule, check func(step int, tr *aem.Transition, before aem.State, pl *planner, sim *simCluster, ops []op)) *planner {
	t.Helper()
	pl := newPlanner(p)
	sim := newSim(p.Replicas)
	for i := range sched.steps {
		tr := &sched.steps[i]
		before := pl.state.Clone()
		ops, err := pl.plan(tr, sim.primary, i, sched.id)
		if err != nil {
			t.Fatalf("%s step %d: %v", sched, i+1, err)
		}
		sim.writeUp = nil
		for k := range ops {
			if err := sim.do(&ops[k]); err != nil {
				t.Fatalf("%s step %d: %v", sched, i+1, err)
			}
		}
		check(i, tr, before, pl, sim, ops)
	}
	return pl
}

// TestPlanGolden pins the plans of every schedule of Q/C/M ops=1 with 3 and 4 replicas.
func TestPlanGolden(t *testing.T) {
	for _, n := range []int{3, 4} {
		var b strings.Builder
		for _, sched := range qcmSchedules(t, 1, n) {
			fmt.Fprintf(&b, "%s %s\n", sched.id, sched)
			planAll(t, aem.Params{Ops: 1, Replicas: n}, sched, func(step int, tr *aem.Transition, before aem.State, pl *planner, sim *simCluster, ops []op) {
				fmt.Fprintf(&b, "  %s  (before: %s)\n", tr, before.String())
				for k := range ops {
					fmt.Fprintf(&b, "    %s\n", &ops[k])
				}
			})
		}
		golden(t, fmt.Sprintf("plans/qcm-1x%d.golden", n), []byte(b.String()))
	}
}

// TestPlanRealisesModel replays every plan of many schedules on the simulated cluster and
// checks that the concrete cluster is where the model says after every step: during a
// divergence each write is made while exactly the members of the replicas that receive it are
// up, so that replica i's member holds exactly Writes[i] of the step's writes; every member is
// down after it; after a convergence exactly the online replicas' members are up with one
// primary, and all hold the same oplog.
func TestPlanRealisesModel(t *testing.T) {
	for _, tc := range []struct{ ops, n int }{{1, 3}, {2, 3}, {3, 3}, {4, 3}, {1, 4}, {2, 4}, {3, 4}, {1, 5}, {2, 5}} {
		t.Run(fmt.Sprintf("ops=%d,n=%d", tc.ops, tc.n), func(t *testing.T) {
			all := qcmSchedules(t, tc.ops, tc.n)
			if len(all) == 0 {
				t.Fatal("no schedules")
			}
			for _, sched := range all {
				planAll(t, aem.Params{Ops: tc.ops, Replicas: tc.n}, sched, func(step int, tr *aem.Transition, before aem.State, pl *planner, sim *simCluster, ops []op) {
					fail := func(format string, args ...any) {
						t.Helper()
						t.Fatalf("%s step %d (%s): %s", sched, step+1, tr, fmt.Sprintf(format, args...))
					}
					if tr.Kind == aem.Divergence {
						if len(sim.writeUp) != tr.WriteCount() {
							fail("%d writes made, want %d", len(sim.writeUp), tr.WriteCount())
						}
						for j, got := range sim.writeUp {
							want := pl.membersOf(func(i int) bool { return before.On[i] && tr.Writes[i] >= j+1 })
							if !slices.Equal(got, want) {
								fail("write %d made with members %v up, want %v", j+1, got, want)
							}
						}
						for i, w := range tr.Writes {
							got := 0
							for _, k := range sim.keys(pl.member[i]) {
								if strings.HasPrefix(k, fmt.Sprintf("k%d.", step+1)) {
									got++
								}
							}
							if got != w {
								fail("replica %d (member %d) holds %d of the step's writes, want %d", i, pl.member[i], got, w)
							}
						}
						if up := sim.upMembers(); len(up) != 0 {
							fail("members %v still up after the divergence", up)
						}
						return
					}
					want := pl.membersOf(func(i int) bool { return pl.state.On[i] })
					if got := sim.upMembers(); !slices.Equal(got, want) {
						fail("members %v up, want %v", got, want)
					}
					if !slices.Contains(want, sim.primary) {
						fail("primary %d is not among the members up %v", sim.primary, want)
					}
					for _, m := range want {
						if !slices.Equal(sim.oplog[m], sim.oplog[sim.primary]) {
							fail("member %d holds %v, primary %d holds %v", m, sim.oplog[m], sim.primary, sim.oplog[sim.primary])
						}
					}
					elected := slices.ContainsFunc(ops, func(o op) bool { return o.kind == opElect })
					if wantElect := before.Online() < tc.n/2+1; elected != wantElect {
						fail("election planned = %v with %d replicas online before", elected, before.Online())
					}
				})
			}
		})
	}
}

// TestPlanFirstWriteSurvives checks, for every ops=1 schedule, the one thing the model says of
// the data: the write survives exactly when the first convergence's group holds a replica that
// received it (that replica is the freshest, so it is elected and everyone copies it);
// otherwise the group elects a member without it and its holders roll it back when they come
// back.
func TestPlanFirstWriteSurvives(t *testing.T) {
	for _, n := range []int{3, 4, 5} {
		for _, sched := range qcmSchedules(t, 1, n) {
			var sim *simCluster
			pl := planAll(t, aem.Params{Ops: 1, Replicas: n}, sched, func(_ int, _ *aem.Transition, _ aem.State, _ *planner, s *simCluster, _ []op) { sim = s })
			d, c := sched.steps[0], sched.steps[1]
			want := slices.ContainsFunc(c.Group, func(i int) bool { return d.Writes[i] > 0 })
			for i, m := range pl.member {
				if got := len(sim.keys(m)) == 1; got != want {
					t.Errorf("%s: replica %d (member %d) holds the write: %v, want %v", sched, i, m, got, want)
				}
			}
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	p := aem.Params{Ops: 1, Replicas: 3}
	tests := []struct {
		name    string
		prepare func(pl *planner)
		tr      string
		primary int
		want    string
	}{
		{"a transition the model does not enable", func(*planner) {}, "C[0]", 0, "C[0] is not enabled in state"},
		{"a divergence without a primary", func(*planner) {}, "D[0,0,1]", -1, "member -1 is primary, but the model has no online replica on it"},
		{"a primary the model has offline", func(pl *planner) { pl.state.On[1] = false }, "D[0,0,1]", 1,
			"member 1 is primary, but the model has no online replica on it"},
		{"a remap onto a replica at another version", func(pl *planner) { pl.state.RS[2] = 5 }, "D[0,0,1]", 0,
			"cannot move replica 2 onto primary member 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlanner(p)
			tt.prepare(pl)
			tr, err := aem.ParseTransition(tt.tr)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pl.plan(&tr, tt.primary, 0, "s")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
