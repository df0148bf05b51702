package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/kit"
)

func TestReportsLeaderSince(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    bool
	}{
		{"2.9.10", false},
		{"2.10.22", false},
		{"2.11.0", true},
		{"2.12.2", true},
		{"3.0.0", true},
		{"", false},
		{"nats-server", false},
	} {
		if got := reportsLeaderSince(tt.version); got != tt.want {
			t.Errorf("reportsLeaderSince(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}

// TestLeading: a leader's stream detail as 2.12's /jsz gives it, with and without leader_since.
func TestLeading(t *testing.T) {
	const elected = `{"name":"modulo","cluster":{"leader":"nats-2","replicas":[{"name":"nats-0","current":true}]}}`
	const ready = `{"name":"modulo","cluster":{"leader":"nats-2","leader_since":"2026-11-26T05:11:08.4577Z","replicas":[{"name":"nats-0","current":true}]}}`
	for _, tt := range []struct {
		name, detail string
		since        bool
		want         string // in the answer, "" for none
	}{
		{"elected, 2.12", elected, true, "nats-2 has not yet taken up its leadership"},
		{"ready, 2.12", ready, true, ""},
		{"elected, 2.9", elected, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sd streamDetail
			if err := json.Unmarshal([]byte(tt.detail), &sd); err != nil {
				t.Fatal(err)
			}
			got := leading(&view{r: &kit.Replica{Name: "nats-2"}, stream: &sd}, tt.since)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("leading = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStalled: the plugin says NATS is stalled when every server names no meta leader, or every
// one hosts the stream and names no leader of it (the last seen of qcn's eba368f64473c4f5 on
// 2.9.10: `the stream's leader is "", not one of the online servers`); not where any names one,
// hosts none, or did not answer.
func TestStalled(t *testing.T) {
	stream := func(leader string) *streamDetail {
		var sd streamDetail
		if err := json.Unmarshal([]byte(`{"name":"modulo","cluster":{"leader":"`+leader+`"}}`), &sd); err != nil {
			t.Fatal(err)
		}
		return &sd
	}
	r := func(i int) *kit.Replica { return &kit.Replica{Index: i, Name: "nats-" + string(rune('0'+i))} }
	for _, tt := range []struct {
		name string
		vs   []view
		want string
	}{
		{"no stream leader", []view{{r: r(1), meta: "nats-1", stream: stream("")}, {r: r(2), meta: "nats-1", stream: stream("")}},
			"each of the 2 servers hosts stream modulo and its /jsz names no leader of it"},
		{"no meta leader", []view{{r: r(0), stream: stream("")}, {r: r(1)}}, "each of the 2 servers' /jsz names no meta leader"},
		{"a stream leader", []view{{r: r(1), meta: "nats-1", stream: stream("nats-2")}, {r: r(2), meta: "nats-1", stream: stream("")}}, ""},
		{"a server hosts no stream", []view{{r: r(1), meta: "nats-1", stream: stream("")}, {r: r(2), meta: "nats-1"}}, ""},
		{"a server did not answer", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := stalled(tt.vs); got != tt.want {
				t.Errorf("stalled = %q, want %q", got, tt.want)
			}
		})
	}
}
