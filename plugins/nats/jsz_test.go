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
