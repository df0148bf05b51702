package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// What the plugin reads from replSetGetStatus, as documented in
// https://www.mongodb.com/docs/manual/reference/command/replSetGetStatus/ (fields set, myState,
// term, optimes.appliedOpTime/durableOpTime/lastCommittedOpTime, members[]._id, name, health,
// state, stateStr, optime.ts/t, optimeDate, syncSourceHost, self, lastHeartbeatMessage) and
// https://www.mongodb.com/docs/manual/reference/replica-states/ (the state numbers).
//
// Every decision is taken on a member's view of itself (myState and the top-level optimes,
// which the member computes locally), never on what it heard of the others by heartbeat: the
// documentation warns that those can be seconds out of date.

// Replica-set member states (replica-states).
const (
	stateStartup    = 0
	statePrimary    = 1
	stateSecondary  = 2
	stateRecovering = 3
	stateStartup2   = 5
	stateUnknown    = 6
	stateArbiter    = 7
	stateDown       = 8
	stateRollback   = 9
	stateRemoved    = 10
)

var stateNames = map[int]string{
	stateStartup:    "STARTUP",
	statePrimary:    "PRIMARY",
	stateSecondary:  "SECONDARY",
	stateRecovering: "RECOVERING",
	stateStartup2:   "STARTUP2",
	stateUnknown:    "UNKNOWN",
	stateArbiter:    "ARBITER",
	stateDown:       "DOWN",
	stateRollback:   "ROLLBACK",
	stateRemoved:    "REMOVED",
}

// stateName names a member state as stateStr does.
func stateName(s int) string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return "state " + strconv.Itoa(s)
}

// opTime is a position in the oplog: the term it was written in, then its timestamp. MongoDB
// orders optimes by term first.
type opTime struct {
	TS bson.Timestamp `bson:"ts"`
	T  int64          `bson:"t"`
}

// compare orders a and b by term, then timestamp.
func (a opTime) compare(b opTime) int {
	switch {
	case a.T < b.T:
		return -1
	case a.T > b.T:
		return 1
	}
	return a.TS.Compare(b.TS)
}

func (a opTime) String() string {
	return fmt.Sprintf("(t=%d ts=%d:%d)", a.T, a.TS.T, a.TS.I)
}

// replStatus is one member's replSetGetStatus reply.
type replStatus struct {
	Set     string `bson:"set"`
	MyState int    `bson:"myState"`
	Term    int64  `bson:"term"`
	Optimes struct {
		LastCommitted opTime `bson:"lastCommittedOpTime"`
		Applied       opTime `bson:"appliedOpTime"`
		Durable       opTime `bson:"durableOpTime"`
	} `bson:"optimes"`
	Members []memberStatus `bson:"members"`
}

// memberStatus is one entry of members[]: what the replying member knows of a member.
type memberStatus struct {
	ID                   int       `bson:"_id"`
	Name                 string    `bson:"name"`
	Health               float64   `bson:"health"`
	State                int       `bson:"state"`
	StateStr             string    `bson:"stateStr"`
	Optime               opTime    `bson:"optime"`
	OptimeDate           time.Time `bson:"optimeDate"`
	SyncSourceHost       string    `bson:"syncSourceHost"`
	Self                 bool      `bson:"self"`
	LastHeartbeatMessage string    `bson:"lastHeartbeatMessage"`
}

// requiredFields are the fields every decision needs; a reply without one (a server older
// than 3.4 has no optimes document) is refused rather than read as zeros.
var requiredFields = [][]string{
	{"set"}, {"myState"}, {"term"},
	{"optimes", "appliedOpTime", "ts"}, {"optimes", "appliedOpTime", "t"},
	{"optimes", "durableOpTime", "ts"}, {"optimes", "durableOpTime", "t"},
	{"members"},
}

// parseStatus decodes a replSetGetStatus reply from the member at host (host:port), which must
// name itself so: a reply from anyone else would be read as that member's state.
func parseStatus(raw bson.Raw, host string) (replStatus, error) {
	var s replStatus
	for _, path := range requiredFields {
		if _, err := raw.LookupErr(path...); err != nil {
			return s, fmt.Errorf("replSetGetStatus reply has no %s", strings.Join(path, "."))
		}
	}
	if err := bson.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("replSetGetStatus reply: %w", err)
	}
	selves := 0
	for _, m := range s.Members {
		if m.Self {
			selves++
		}
	}
	if selves != 1 {
		return s, fmt.Errorf("replSetGetStatus reply marks %d members as self, not 1", selves)
	}
	if name := s.self().Name; name != host {
		return s, fmt.Errorf("replSetGetStatus reply comes from %s, not %s", name, host)
	}
	return s, nil
}

// self is the replying member's entry.
func (s *replStatus) self() memberStatus {
	for _, m := range s.Members {
		if m.Self {
			return m
		}
	}
	return memberStatus{} // parseStatus made sure there is one
}

// view is what one member said of itself in one poll: its status, or why it gave none.
type view struct {
	member int // concrete member index
	status replStatus
	err    error
}

func (v *view) name() string { return "member " + strconv.Itoa(v.member) }

// answered tells whether every view has a status, or why the first without one has none (its
// error names the member).
func answered(views []view) (ok bool, why string) {
	for i := range views {
		if views[i].err != nil {
			return false, views[i].err.Error()
		}
	}
	return true, ""
}

// election describes, from the members' views of themselves, whether an election among them
// can be called: every member answers and is PRIMARY or SECONDARY (a member in STARTUP,
// STARTUP2, RECOVERING or ROLLBACK cannot vote or be elected usefully yet). primary is the
// member that is PRIMARY when exactly one is (-1 when none), and freshest the member with the
// newest applied optime, ties going to the lowest member index: every other member grants it
// its vote, as none has a newer oplog.
type election struct {
	ready     bool
	why       string // what is not ready
	primary   int
	freshest  int
	primaries int
}

func electionOf(views []view) election {
	e := election{primary: -1, freshest: -1}
	if ok, why := answered(views); !ok {
		e.why = why
		return e
	}
	best := -1 // index in views of the freshest member so far
	for i := range views {
		v := &views[i]
		switch v.status.MyState {
		case statePrimary:
			e.primaries++
			e.primary = v.member
		case stateSecondary:
		default:
			e.why = fmt.Sprintf("%s is %s", v.name(), stateName(v.status.MyState))
			return e
		}
		if best < 0 {
			best = i
			continue
		}
		c := v.status.Optimes.Applied.compare(views[best].status.Optimes.Applied)
		if c > 0 || c == 0 && v.member < views[best].member {
			best = i
		}
	}
	if best >= 0 {
		e.freshest = views[best].member
	}
	if e.primaries > 1 {
		e.primary = -1
		e.why = fmt.Sprintf("%d members are PRIMARY", e.primaries)
		return e
	}
	e.ready = true
	return e
}

// inSync tells whether the members have resynced: every member answers, exactly one is
// PRIMARY and it is wantPrimary (when >= 0), the others are SECONDARY, and all hold the same
// applied and durable optime. Equal optimes are what the plugin can observe of a resync; that
// the data behind them is equal too is what the schedule's final comparison checks.
func inSync(views []view, wantPrimary int) (ok bool, primary int, why string) {
	e := electionOf(views)
	switch {
	case !e.ready:
		return false, -1, e.why
	case e.primaries == 0:
		return false, -1, "no member is PRIMARY"
	case wantPrimary >= 0 && e.primary != wantPrimary:
		return false, e.primary, fmt.Sprintf("member %d is PRIMARY, not member %d", e.primary, wantPrimary)
	}
	first := &views[0]
	for i := range views {
		v := &views[i]
		if a, d := v.status.Optimes.Applied, v.status.Optimes.Durable; a != d {
			return false, e.primary, fmt.Sprintf("%s has applied %v but made only %v durable", v.name(), a, d)
		}
		if a, b := v.status.Optimes.Applied, first.status.Optimes.Applied; a != b {
			return false, e.primary, fmt.Sprintf("%s has applied %v, %s %v", v.name(), a, first.name(), b)
		}
	}
	return true, e.primary, ""
}

// holdDurably tells whether every member has made target durable: a divergence kills members
// right after the write they must keep, so applied is not enough.
func holdDurably(views []view, target opTime) (ok bool, why string) {
	if ok, why := answered(views); !ok {
		return false, why
	}
	for i := range views {
		v := &views[i]
		if d := v.status.Optimes.Durable; d.compare(target) < 0 {
			return false, fmt.Sprintf("%s has made %v durable, not yet %v", v.name(), d, target)
		}
	}
	return true, ""
}
