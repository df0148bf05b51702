package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/aem"
)

// How Q/C/M's abstract transitions become concrete actions. Planning is pure: from the
// abstract state, the abstract-to-concrete mapping and the current primary it computes the
// list of ops; plugin.go carries them out against mongod.
//
// Divergence D v (online replicas hold equal data when it starts):
//  1. Remap. The writes go to the primary, so an abstract replica that receives the most
//     writes must be the primary's member. If the primary's replica is not one, the first
//     that is swaps members with it; both are online with equal versions, so the swap
//     changes nothing the model can see. (The ZooKeeper plugin maps its leader the same way.)
//  2. For write j = 1..max(v): kill the members of the online replicas with v[i] = j-1, write
//     key j to the primary with w:1 (j:true, so that the write survives the SIGKILL that ends
//     the step), then wait until every member still up (exactly those with v[i] >= j) holds it
//     durably. With w:1 the primary takes writes that only a minority holds; it keeps taking
//     them for about electionTimeoutMillis after losing its majority.
//  3. Kill the members that received every write: the model has every replica offline after
//     a divergence.
//
// Convergence C S: start S's members. When fewer than a quorum were online, the restarted
// majority has no primary: elect the freshest of the members now up (replSetStepUp), which is
// the one every other member votes for, so the newest writes among them survive, as the
// model's next(top) says. Then wait until every member up holds the same optimes with one
// primary. When a quorum was online, the primary stays and the others catch up or roll back.

// opKind is the kind of one concrete op.
type opKind uint8

const (
	opRemap     opKind = iota + 1 // swap the members of two abstract replicas
	opKill                        // SIGKILL a member's process group
	opStart                       // start a member's mongod on its own data
	opWrite                       // write one key to the primary with w:1, j:true
	opAwaitHeld                   // wait until members hold the last write durably
	opElect                       // elect the freshest of members
	opAwaitSync                   // wait until members are in sync with one primary
)

// op is one concrete action of a plan.
type op struct {
	kind    opKind
	replica int    // abstract replica of opKill, opStart and opWrite (the primary's)
	member  int    // concrete member of opKill, opStart and opWrite
	members []int  // concrete members of opAwaitHeld, opElect and opAwaitSync, ascending; of swap
	swap    [2]int // abstract replicas of opRemap
	key     string // opWrite
	value   string // opWrite
}

func (o *op) String() string {
	switch o.kind {
	case opRemap:
		return fmt.Sprintf("remap replica %d to member %d and replica %d to member %d, so that the primary gets the most writes",
			o.swap[0], o.members[0], o.swap[1], o.members[1])
	case opKill:
		return fmt.Sprintf("kill replica %d (member %d)", o.replica, o.member)
	case opStart:
		return fmt.Sprintf("start replica %d (member %d)", o.replica, o.member)
	case opWrite:
		return fmt.Sprintf("write %s=%s to replica %d (member %d, primary) w:1 j:true", o.key, o.value, o.replica, o.member)
	case opAwaitHeld:
		return "await members " + joinInts(o.members) + " holding the write durably"
	case opElect:
		return "elect the freshest of members " + joinInts(o.members)
	case opAwaitSync:
		return "await members " + joinInts(o.members) + " in sync"
	}
	return "op(" + strconv.Itoa(int(o.kind)) + ")"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// planner follows a schedule abstractly and plans each of its steps.
type planner struct {
	params aem.Params
	state  aem.State // the abstract state before the next step
	// member[i] is the concrete member (the mongod at BasePort+member[i]) that realises
	// abstract replica i.
	member []int
}

func newPlanner(p aem.Params) *planner {
	pl := &planner{params: p, state: aem.QCM.Init(p), member: make([]int, p.Replicas)}
	for i := range pl.member {
		pl.member[i] = i
	}
	return pl
}

// replicaOf is the abstract replica that member m realises.
func (pl *planner) replicaOf(m int) int { return slices.Index(pl.member, m) }

// membersOf lists, ascending, the members of the abstract replicas for which keep is true.
func (pl *planner) membersOf(keep func(i int) bool) []int {
	var ms []int
	for i, m := range pl.member {
		if keep(i) {
			ms = append(ms, m)
		}
	}
	slices.Sort(ms)
	return ms
}

// plan checks that t is enabled, plans it and advances the abstract state and the mapping.
// primary is the member that is primary now (used by divergences only); step names the step
// in the keys written, and scheduleID makes the values unique to the schedule.
func (pl *planner) plan(t *aem.Transition, primary, step int, scheduleID string) ([]op, error) {
	enabled := aem.QCM.Next(pl.params, &pl.state, nil)
	if !slices.ContainsFunc(enabled, func(e aem.Transition) bool { return aem.Equal(&e, t) }) {
		return nil, fmt.Errorf("%s is not enabled in state %s", t, pl.state)
	}
	var ops []op
	var err error
	if t.Kind == aem.Divergence {
		ops, err = pl.diverge(t, primary, step, scheduleID)
	} else {
		ops = pl.converge(t)
	}
	if err != nil {
		return nil, err
	}
	pl.state = aem.QCM.Apply(pl.params, &pl.state, t)
	return ops, nil
}

func (pl *planner) diverge(t *aem.Transition, primary, step int, scheduleID string) ([]op, error) {
	s := &pl.state
	cur := pl.replicaOf(primary)
	if cur < 0 || !s.On[cur] {
		return nil, fmt.Errorf("member %d is primary, but the model has no online replica on it (state %s)", primary, s)
	}
	// top is the replica the writes go to: the primary's own when it receives the most writes,
	// else the first replica that does (ascending layouts put it among the last online ones).
	most := t.WriteCount()
	top := cur
	if t.Writes[cur] != most {
		top = slices.Index(t.Writes, most)
	}
	var ops []op
	if top != cur {
		if !s.On[top] || s.RS[top] != s.RS[cur] {
			return nil, fmt.Errorf("cannot move replica %d onto primary member %d: replica %d is online=%v at version %d, replica %d online=%v at %d",
				top, primary, top, s.On[top], s.RS[top], cur, s.On[cur], s.RS[cur])
		}
		pl.member[top], pl.member[cur] = pl.member[cur], pl.member[top]
		a, b := min(top, cur), max(top, cur)
		ops = append(ops, op{kind: opRemap, swap: [2]int{a, b}, members: []int{pl.member[a], pl.member[b]}})
	}
	kill := func(j int) { // kill the online replicas that receive exactly j writes
		for i, w := range t.Writes {
			if s.On[i] && w == j {
				ops = append(ops, op{kind: opKill, replica: i, member: pl.member[i]})
			}
		}
	}
	n := t.WriteCount()
	for j := 1; j <= n; j++ {
		kill(j - 1)
		ops = append(ops, op{
			kind: opWrite, replica: top, member: pl.member[top],
			key:   fmt.Sprintf("k%d.%d", step+1, j),
			value: fmt.Sprintf("%s:%d.%d", scheduleID, step+1, j),
		})
		if holders := pl.membersOf(func(i int) bool { return s.On[i] && t.Writes[i] >= j }); len(holders) > 1 {
			ops = append(ops, op{kind: opAwaitHeld, members: holders})
		}
	}
	kill(n)
	return ops, nil
}

func (pl *planner) converge(t *aem.Transition) []op {
	s := &pl.state
	var ops []op
	for _, i := range t.Group {
		ops = append(ops, op{kind: opStart, replica: i, member: pl.member[i]})
	}
	up := pl.membersOf(func(i int) bool { return s.On[i] || slices.Contains(t.Group, i) })
	if s.Online() < pl.params.Replicas/2+1 { // below the model's quorum: no primary is left
		ops = append(ops, op{kind: opElect, members: up})
	}
	return append(ops, op{kind: opAwaitSync, members: up})
}
