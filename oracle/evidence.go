package oracle

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
)

// Evidence is everything a fail was judged from, kept in its failure folder (judged.json) so
// that a later oracle can judge it again (Judge) without running the cluster: a change to the
// oracle that flips a kept verdict, or changes the shape of a kept difference, is seen in
// tests, not in the next campaign.
type Evidence struct {
	// Step is the 1-based step after which the cluster was judged; 0 for the end.
	Step int `json:"step"`
	// Kinds is each step's kind, "D" or "C", for saying which step wrote a write (Mark.Written).
	Kinds []string `json:"kinds"`
	// Groups is each replica's group, NotCompared for a replica left out.
	Groups []int `json:"groups,omitempty"`
	// Writes are the writes the steps sent, in order.
	Writes []SentWrite `json:"writes,omitempty"`
	// Snapshot is what the replicas held; absent when alarms decided.
	Snapshot *cem.Snapshot `json:"snapshot,omitempty"`
	// Alarms are the alarms the step raised, which decide before any comparison.
	Alarms []cem.Alarm `json:"alarms,omitempty"`
}

// SentWrite is a write a step sent, with the 0-based step; for a write that reached only a
// minority, what the system answered, in how many milliseconds, and whether its plugin
// declares asynchronous acknowledgement (cem.Write).
type SentWrite struct {
	Step       int        `json:"step"`
	Key        string     `json:"key"`
	Value      string     `json:"value"`
	Acked      bool       `json:"acked"`
	Minority   bool       `json:"minority,omitempty"`
	Answer     cem.Answer `json:"answer,omitempty"`
	AnsweredMS int64      `json:"answered_ms,omitempty"`
	Async      bool       `json:"async,omitempty"`
}

// Sent is w, sent by 0-based step step, as the evidence keeps it.
func Sent(step int, w cem.Write) SentWrite {
	return SentWrite{Step: step, Key: w.Key, Value: w.Value, Acked: w.Acked, Minority: w.Minority,
		Answer: w.Answer, AnsweredMS: w.AnsweredAfter.Milliseconds(), Async: w.Async}
}

// writes returns the writes as the checks take them.
func (e *Evidence) writes() []cem.Write {
	ws := make([]cem.Write, len(e.Writes))
	for i, w := range e.Writes {
		ws[i] = cem.Write{Key: w.Key, Value: w.Value, Acked: w.Acked}
	}
	return ws
}

// Judgement is what Judge concluded: a class of failure, or none for a pass.
type Judgement struct {
	Class Class
	// Line says in one line why; Full completely (a divergence's every key).
	Line, Full string
	// Difference is the shape of a divergence or of lost writes, replica by replica.
	Difference []Mark
}

// Judge judges the evidence: the step's alarms first (Alarms), then the system's answers to
// the writes that only a minority received (MinorityAcks), else the replicas' data against
// one another (a divergence) and against the acknowledged writes (a lost write).
func Judge(e Evidence) Judgement {
	if len(e.Alarms) > 0 {
		class, line := Alarms(e.Alarms)
		return Judgement{Class: class, Line: line, Full: line}
	}
	if acks := MinorityAcks(e.Writes); len(acks) > 0 {
		line := MinorityAckLine(acks)
		return Judgement{Class: MinorityAck, Line: line, Full: line}
	}
	if e.Snapshot == nil {
		return Judgement{}
	}
	snap, writes := *e.Snapshot, e.writes()
	if d := CompareGroups(snap, e.Groups); !d.Converged() {
		return Judgement{Class: Diverged, Line: d.Line(), Full: d.Report(), Difference: e.divergenceMarks(d)}
	}
	if lost := LostWrites(writes, snap, e.Groups); len(lost) > 0 {
		var marks []Mark
		for _, l := range lost {
			marks = append(marks, e.lostMark(l.Replica, l.Key, l.Got))
		}
		line := LostLine(lost)
		return Judgement{Class: LostWrite, Line: line, Full: line, Difference: marks}
	}
	return Judgement{}
}

// MarkKind is what a Mark says of a replica's value of a key.
type MarkKind string

const (
	// LacksAcked: the replica lacks a write the system acknowledged.
	LacksAcked MarkKind = "lacks an acknowledged write"
	// HoldsOlder: the replica holds an earlier write of the key than the acknowledged one.
	HoldsOlder MarkKind = "holds an earlier value than the acknowledged one"
	// HoldsUnacked: the replica holds a write the system never acknowledged, which another
	// replica of its group does not hold.
	HoldsUnacked MarkKind = "holds a write never acknowledged"
	// HoldsUnwritten: the replica holds a value no step wrote.
	HoldsUnwritten MarkKind = "holds a value never written"
	// CannotRead: the replica could not be read.
	CannotRead MarkKind = "cannot be read"
	// OtherState: the replicas differ on a key no step wrote: state the plugin reads beside
	// the writes (NATS's "@stream", the stream's counts), which follows from the writes held.
	OtherState MarkKind = "differs in state no step wrote"
)

// Mark is one replica's part in a difference: what it holds of a key, and which step wrote
// the write concerned.
type Mark struct {
	Replica int      `json:"replica"`
	Key     string   `json:"key,omitempty"`
	What    MarkKind `json:"what"`
	// Written says which step wrote the write concerned, relative to the step judged, so that
	// schedules of different lengths compare: one of WrittenNearestFirst.
	Written string `json:"written"`
}

// What Mark.Written says.
const (
	LastDivergence    = "the last divergence"
	AConvergence      = "a convergence"
	EarlierDivergence = "an earlier divergence"
	NoStep            = "no step" // initial data, or a value never written
)

// WrittenNearestFirst orders what Mark.Written says from the nearest to the step judged.
var WrittenNearestFirst = []string{LastDivergence, AConvergence, EarlierDivergence, NoStep}

func (m Mark) String() string {
	if m.Written == NoStep {
		return string(m.What)
	}
	return fmt.Sprintf("%s of %s", m.What, m.Written)
}

// divergenceMarks marks, for each key on which a group disagrees, each member whose value is
// not the one the acknowledged writes ask for; where no write of the key was acknowledged,
// each member that holds a value.
func (e *Evidence) divergenceMarks(d Divergence) []Mark {
	var marks []Mark
	for _, u := range d.Unreadable {
		marks = append(marks, Mark{Replica: u.Replica, What: CannotRead, Written: NoStep})
	}
	for _, k := range d.Keys {
		groups := map[int][]int{}
		for i, g := range d.Group {
			if g != NotCompared && e.Snapshot.Replicas[i].Err == "" {
				groups[g] = append(groups[g], i)
			}
		}
		for _, g := range slices.Sorted(maps.Keys(groups)) {
			members := groups[g]
			if !slices.ContainsFunc(members[1:], func(i int) bool { return k.Values[i] != k.Values[members[0]] }) {
				continue
			}
			for _, i := range members {
				if m, ok := e.keyMark(i, k.Key, k.Values[i]); ok {
					marks = append(marks, m)
				}
			}
		}
	}
	return marks
}

// keyMark says what replica i's value v of key is, against the writes: nothing for the
// acknowledged value; a key that no step wrote is a part of a write, or other state.
func (e *Evidence) keyMark(i int, key string, v Value) (Mark, bool) {
	if e.lastWrite(func(w SentWrite) bool { return w.Key == key }) < 0 {
		return e.partMark(i, key, v)
	}
	acked := e.lastAcked(key)
	if acked >= 0 {
		if !v.Present || !e.allowed(key, acked, v.Text) {
			return e.lostMark(i, key, v), true
		}
		if v.Text == e.Writes[acked].Value {
			return Mark{}, false
		}
	}
	if !v.Present {
		// Lacking a write never acknowledged is no fault: the replica that holds it is marked.
		return Mark{}, false
	}
	if w := e.writeOf(key, v.Text); w >= 0 {
		return Mark{Replica: i, Key: key, What: HoldsUnacked, Written: e.written(e.Writes[w].Step)}, true
	}
	return Mark{Replica: i, Key: key, What: HoldsUnwritten, Written: NoStep}, true
}

// partMark says what replica i's value v of key is where no step wrote key itself: a part of
// a write that a system stores under several keys, "<write's key>.<n>" (the Redis plugin's
// paper preset writes ten keys a write), which it holds or lacks as the write; else other
// state.
func (e *Evidence) partMark(i int, key string, v Value) (Mark, bool) {
	w := e.lastWrite(func(w SentWrite) bool { return strings.HasPrefix(key, w.Key+".") })
	switch {
	case w < 0:
		return Mark{Replica: i, Key: key, What: OtherState, Written: NoStep}, true
	case !v.Present && e.Writes[w].Acked:
		return Mark{Replica: i, Key: key, What: LacksAcked, Written: e.written(e.Writes[w].Step)}, true
	case !v.Present || e.Writes[w].Acked:
		// As for a key of its own: lacking a write never acknowledged is no fault, and a part
		// of an acknowledged write is its to hold.
		return Mark{}, false
	}
	return Mark{Replica: i, Key: key, What: HoldsUnacked, Written: e.written(e.Writes[w].Step)}, true
}

// lostMark says what replica i holds in place of key's acknowledged write.
func (e *Evidence) lostMark(i int, key string, got Value) Mark {
	m := Mark{Replica: i, Key: key, What: LacksAcked, Written: NoStep}
	if a := e.lastAcked(key); a >= 0 {
		m.Written = e.written(e.Writes[a].Step)
	}
	if got.Present {
		if w := e.writeOf(key, got.Text); w >= 0 {
			m.What = HoldsOlder
		} else {
			m.What = HoldsUnwritten
		}
	}
	return m
}

// lastWrite is the index of the last write that match accepts, or -1.
func (e *Evidence) lastWrite(match func(SentWrite) bool) int {
	for i := len(e.Writes) - 1; i >= 0; i-- {
		if match(e.Writes[i]) {
			return i
		}
	}
	return -1
}

// lastAcked is the index of the last acknowledged write of key, or -1.
func (e *Evidence) lastAcked(key string) int {
	return e.lastWrite(func(w SentWrite) bool { return w.Key == key && w.Acked })
}

// allowed tells whether v may be key's value: the acknowledged write's, or one sent after it.
func (e *Evidence) allowed(key string, acked int, v string) bool {
	return slices.ContainsFunc(e.Writes[acked:], func(w SentWrite) bool { return w.Key == key && w.Value == v })
}

// writeOf is the index of the last write of key with value v, or -1.
func (e *Evidence) writeOf(key, v string) int {
	return e.lastWrite(func(w SentWrite) bool { return w.Key == key && w.Value == v })
}

// written names 0-based step s relative to the step judged.
func (e *Evidence) written(s int) string {
	if s < 0 || s >= len(e.Kinds) {
		return NoStep
	}
	if e.Kinds[s] != aem.Divergence.String() {
		return AConvergence
	}
	end := e.Step
	if end == 0 {
		end = len(e.Kinds)
	}
	for _, k := range e.Kinds[s+1 : max(end, s+1)] {
		if k == aem.Divergence.String() {
			return EarlierDivergence
		}
	}
	return LastDivergence
}
