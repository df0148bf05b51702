package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The replies under testdata/status are written by hand in MongoDB Extended JSON (relaxed,
// with $numberLong for NumberLong, $timestamp for Timestamp and $date for ISODate), following
// the reply format documented at
// https://www.mongodb.com/docs/manual/reference/command/replSetGetStatus/ and the state table
// of https://www.mongodb.com/docs/manual/reference/replica-states/. A member that is down shows
// as mongod shows it: health 0, state 8, stateStr "(not reachable/healthy)", optime ts 0:0
// and t -1. Members are 127.0.0.1:20000-20002 (members 0-2).
//
//	primary                member 0, PRIMARY of term 2, everyone at (2, 1700000100:1)
//	secondary, secondary-2 members 1 and 2, SECONDARY and in sync with it
//	secondary-behind       member 2, SECONDARY, applied only up to (2, 1700000090:1)
//	secondary-not-durable  member 2, applied (2, 1700000100:1), durable (2, 1700000090:1)
//	member-down            member 0, PRIMARY, member 2 killed
//	recovering             member 2, RECOVERING
//	rollback               member 2, ROLLBACK with a write of term 1 the term-2 primary lacks
//	no-primary-0, -1       members 0 and 1 just restarted, nobody PRIMARY, member 2 down;
//	                       member 1 holds one write more than member 0
//	stale-primary          member 2, still PRIMARY of term 1
//	missing-optimes        a reply without the optimes document (servers before 3.4)

// statusFiles is every reply under testdata/status, by the member that sent it.
var statusFiles = map[string]int{
	"primary": 0, "secondary": 1, "secondary-2": 2, "secondary-behind": 2,
	"secondary-not-durable": 2, "member-down": 0, "recovering": 2, "rollback": 2,
	"no-primary-0": 0, "no-primary-1": 1, "stale-primary": 2, "missing-optimes": 0,
}

const testBasePort = 20000

// readReply reads testdata/status/name.json into the BSON document mongod would send.
func readReply(t *testing.T, name string) bson.Raw {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "status", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON(data, false, &raw); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
	return raw
}

// loadView parses a reply as the view of the member that sent it.
func loadView(t *testing.T, name string) view {
	t.Helper()
	m, ok := statusFiles[name]
	if !ok {
		t.Fatalf("no status file %q", name)
	}
	s, err := parseStatus(readReply(t, name), hostOf(testBasePort+m))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return view{member: m, status: s}
}

// describe renders what the plugin read from a reply, for the golden files.
func describe(s *replStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set %s, myState %s, term %d\n", s.Set, stateName(s.MyState), s.Term)
	fmt.Fprintf(&b, "optimes: applied %v, durable %v, committed %v\n", s.Optimes.Applied, s.Optimes.Durable, s.Optimes.LastCommitted)
	for _, m := range s.Members {
		fmt.Fprintf(&b, "member %d %s: %s (state %d), health %g, optime %v of %s", m.ID, m.Name, m.StateStr, m.State, m.Health, m.Optime, m.OptimeDate.UTC().Format("2006-01-02T15:04:05Z"))
		if m.SyncSourceHost != "" {
			fmt.Fprintf(&b, ", syncs from %s", m.SyncSourceHost)
		}
		if m.LastHeartbeatMessage != "" {
			fmt.Fprintf(&b, ", heartbeat: %q", m.LastHeartbeatMessage)
		}
		if m.Self {
			b.WriteString(", self")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestParseStatusGolden(t *testing.T) {
	for name, m := range statusFiles {
		t.Run(name, func(t *testing.T) {
			s, err := parseStatus(readReply(t, name), hostOf(testBasePort+m))
			got := ""
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				got = describe(&s)
			}
			golden(t, filepath.Join("status", name+".golden"), []byte(got))
		})
	}
}

func TestParseStatusRefuses(t *testing.T) {
	tests := []struct {
		name string
		file string
		host string
		want string
	}{
		{"reply of another member", "primary", hostOf(testBasePort + 1), "reply comes from 127.0.0.1:20000, not 127.0.0.1:20001"},
		{"no optimes", "missing-optimes", hostOf(testBasePort), "reply has no optimes.appliedOpTime.ts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseStatus(readReply(t, tt.file), tt.host)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseStatusNoSelf(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "status", "primary.json"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(`"self": true`), []byte(`"self": false`))
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON(data, false, &raw); err != nil {
		t.Fatal(err)
	}
	_, err = parseStatus(raw, hostOf(testBasePort))
	if err == nil || !strings.Contains(err.Error(), "marks 0 members as self") {
		t.Fatalf("got error %v, want one about no member marked self", err)
	}
}

func TestOpTimeCompare(t *testing.T) {
	ot := func(term int64, secs, inc uint32) opTime {
		return opTime{T: term, TS: bson.Timestamp{T: secs, I: inc}}
	}
	tests := []struct {
		a, b opTime
		want int
	}{
		{ot(2, 100, 1), ot(2, 100, 1), 0},
		{ot(2, 100, 1), ot(2, 100, 2), -1},
		{ot(2, 101, 1), ot(2, 100, 9), 1},
		// The term decides first: a write of a later term is newer whatever its timestamp.
		{ot(1, 500, 1), ot(2, 100, 1), -1},
		{ot(3, 1, 1), ot(2, 900, 1), 1},
		// A member that is down reports t=-1, ts 0:0.
		{ot(-1, 0, 0), ot(1, 1, 1), -1},
	}
	for _, tt := range tests {
		if got := tt.a.compare(tt.b); got != tt.want {
			t.Errorf("%v.compare(%v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := tt.b.compare(tt.a); got != -tt.want {
			t.Errorf("%v.compare(%v) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

// views loads the named replies as the views of their members.
func views(t *testing.T, names ...string) []view {
	t.Helper()
	vs := make([]view, len(names))
	for i, n := range names {
		vs[i] = loadView(t, n)
	}
	return vs
}

func TestInSync(t *testing.T) {
	down := view{member: 2, err: errors.New("member 2: replSetGetStatus: server selection error: context deadline exceeded")}
	tests := []struct {
		name        string
		views       []view
		wantPrimary int
		ok          bool
		primary     int
		why         string
	}{
		{"three in sync", views(t, "primary", "secondary", "secondary-2"), -1, true, 0, ""},
		{"three in sync, primary as wanted", views(t, "primary", "secondary", "secondary-2"), 0, true, 0, ""},
		{"another primary than wanted", views(t, "primary", "secondary", "secondary-2"), 1, false, 0, "member 0 is PRIMARY, not member 1"},
		{"the two asked are in sync, the third is down", views(t, "member-down", "secondary"), -1, true, 0, ""},
		{"a secondary behind", views(t, "primary", "secondary", "secondary-behind"), -1, false, 0,
			"member 2 has applied (t=2 ts=1700000090:1), member 0 (t=2 ts=1700000100:1)"},
		{"a write applied but not durable", views(t, "primary", "secondary", "secondary-not-durable"), -1, false, 0,
			"member 2 has applied (t=2 ts=1700000100:1) but made only (t=2 ts=1700000090:1) durable"},
		{"a member recovering", views(t, "primary", "secondary", "recovering"), -1, false, -1, "member 2 is RECOVERING"},
		{"a member rolling back", views(t, "primary", "secondary", "rollback"), -1, false, -1, "member 2 is ROLLBACK"},
		{"a member not answering", append(views(t, "primary", "secondary"), down), -1, false, -1,
			"member 2: replSetGetStatus: server selection error: context deadline exceeded"},
		{"no primary", views(t, "no-primary-0", "no-primary-1"), -1, false, -1, "no member is PRIMARY"},
		{"two primaries", views(t, "primary", "secondary", "stale-primary"), -1, false, -1, "2 members are PRIMARY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, primary, why := inSync(tt.views, tt.wantPrimary)
			if ok != tt.ok || primary != tt.primary || why != tt.why {
				t.Errorf("inSync = %v, %d, %q; want %v, %d, %q", ok, primary, why, tt.ok, tt.primary, tt.why)
			}
		})
	}
}

func TestElection(t *testing.T) {
	tests := []struct {
		name  string
		views []view
		want  election
	}{
		{"restarted majority, no primary: the fresher member", views(t, "no-primary-0", "no-primary-1"),
			election{ready: true, primary: -1, freshest: 1}},
		{"equal optimes: the lowest member", views(t, "secondary", "secondary-2"),
			election{ready: true, primary: -1, freshest: 1}},
		{"a primary already", views(t, "primary", "secondary", "secondary-2"),
			election{ready: true, primary: 0, freshest: 0, primaries: 1}},
		{"a member recovering", views(t, "primary", "recovering"),
			election{why: "member 2 is RECOVERING", primary: 0, freshest: -1, primaries: 1}},
		{"two primaries", views(t, "primary", "secondary", "stale-primary"),
			election{why: "2 members are PRIMARY", primary: -1, freshest: 0, primaries: 2}},
		{"a member not yet initiated", []view{loadView(t, "primary"), {member: 1,
			err: errors.New("member 1: replSetGetStatus: (NotYetInitialized) no replset config has been received")}},
			election{why: "member 1: replSetGetStatus: (NotYetInitialized) no replset config has been received", primary: -1, freshest: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := electionOf(tt.views); got != tt.want {
				t.Errorf("electionOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHoldDurably(t *testing.T) {
	target := opTime{T: 2, TS: bson.Timestamp{T: 1700000100, I: 1}}
	tests := []struct {
		name  string
		views []view
		ok    bool
		why   string
	}{
		{"both hold it", views(t, "primary", "secondary"), true, ""},
		{"applied but not durable", views(t, "primary", "secondary-not-durable"), false,
			"member 2 has made (t=2 ts=1700000090:1) durable, not yet (t=2 ts=1700000100:1)"},
		{"not applied", views(t, "primary", "secondary-behind"), false,
			"member 2 has made (t=2 ts=1700000090:1) durable, not yet (t=2 ts=1700000100:1)"},
		{"not answering", []view{{member: 1, err: errors.New("member 1: replSetGetStatus: connection refused")}}, false,
			"member 1: replSetGetStatus: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := holdDurably(tt.views, target)
			if ok != tt.ok || why != tt.why {
				t.Errorf("holdDurably = %v, %q; want %v, %q", ok, why, tt.ok, tt.why)
			}
		})
	}
}

// hostOf is the host:port of the member on port of a loopback cluster, as the replica-set
// configuration and replSetGetStatus name it.
func hostOf(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// hostsOn are the hosts of n members on ports from base.
func hostsOn(base, n int) []string {
	var hosts []string
	for i := range n {
		hosts = append(hosts, hostOf(base+i))
	}
	return hosts
}
