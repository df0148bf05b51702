package oracle

import (
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/cem"
)

func TestAlarms(t *testing.T) {
	tests := []struct {
		name      string
		alarms    []cem.Alarm
		wantClass Class
		wantLine  string
	}{
		{"self-check", []cem.Alarm{{Replica: 2, What: "digest mismatches: 1"}}, SelfCheck,
			"the system's own check: replica 2: digest mismatches: 1"},
		{"broken", []cem.Alarm{{Replica: 1, What: `logged "record with incorrect prev-link" 3 times`, Broken: true}}, BrokenReplication,
			`the system says replication is broken: replica 1: logged "record with incorrect prev-link" 3 times`},
		{"broken wins", []cem.Alarm{{Replica: 0, What: "digest"}, {Replica: 1, What: "prev-link", Broken: true}}, BrokenReplication,
			"the system says replication is broken: replica 0: digest; replica 1: prev-link"},
		{"unrecoverable wins", []cem.Alarm{{Replica: 1, What: "prev-link", Broken: true}, {Replica: 2, What: "zookeeper-2 exited", Unrecoverable: true}}, Unrecoverable,
			"a server exited: replica 1: prev-link; replica 2: zookeeper-2 exited"},
		{"stuck", []cem.Alarm{{Replica: 2, What: "galera-0 logged \"node restart required\"", Stuck: true}}, Liveness,
			`the system says it cannot go on: replica 2: galera-0 logged "node restart required"`},
		{"stuck wins over a self-check", []cem.Alarm{{Replica: 0, What: "digest"}, {Replica: 2, What: "restart required", Stuck: true}}, Liveness,
			"the system says it cannot go on: replica 0: digest; replica 2: restart required"},
		{"lost", []cem.Alarm{{Replica: 1, What: "redis-1 lost k2.1 at its power loss", Lost: true}}, LostWrite,
			"a server lost what it held at its power loss: replica 1: redis-1 lost k2.1 at its power loss"},
		{"lost wins over broken", []cem.Alarm{{Replica: 0, What: "prev-link", Broken: true}, {Replica: 1, What: "lost k2.1", Lost: true}}, LostWrite,
			"a server lost what it held at its power loss: replica 0: prev-link; replica 1: lost k2.1"},
		{"unrecoverable wins over lost", []cem.Alarm{{Replica: 1, What: "lost k2.1", Lost: true}, {Replica: 2, What: "exited", Unrecoverable: true}}, Unrecoverable,
			"a server exited: replica 1: lost k2.1; replica 2: exited"},
		{"broken wins over stuck, whatever the order", []cem.Alarm{{Replica: 2, What: "restart required", Stuck: true}, {Replica: 1, What: "prev-link", Broken: true}}, BrokenReplication,
			"the system says replication is broken: replica 2: restart required; replica 1: prev-link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, line := Alarms(tt.alarms)
			if class != tt.wantClass || line != tt.wantLine {
				t.Errorf("Alarms = %q, %q; want %q, %q", class, line, tt.wantClass, tt.wantLine)
			}
		})
	}
}

func TestLostWrites(t *testing.T) {
	w := func(k, v string, acked bool) cem.Write { return cem.Write{Key: k, Value: v, Acked: acked} }
	tests := []struct {
		name   string
		writes []cem.Write
		data   map[string]string
		want   []Lost
	}{
		{"held", []cem.Write{w("a", "1", true), w("b", "2", true)}, map[string]string{"a": "1", "b": "2"}, nil},
		{"missing", []cem.Write{w("a", "1", true)}, map[string]string{}, []Lost{{Key: "a", Value: "1"}}},
		{"unacknowledged never counts", []cem.Write{w("a", "1", false)}, map[string]string{}, nil},
		{"updated by an acknowledged write", []cem.Write{w("a", "1", true), w("a", "2", true)}, map[string]string{"a": "2"}, nil},
		{"the acknowledged update lost", []cem.Write{w("a", "1", true), w("a", "2", true)}, map[string]string{"a": "1"},
			[]Lost{{Key: "a", Value: "2", Got: Value{Text: "1", Present: true}}}},
		{"a later unacknowledged update applied", []cem.Write{w("a", "1", true), w("a", "2", false)}, map[string]string{"a": "2"}, nil},
		{"a later unacknowledged update not applied", []cem.Write{w("a", "1", true), w("a", "2", false)}, map[string]string{"a": "1"}, nil},
		{"an earlier unacknowledged update resurrected", []cem.Write{w("a", "0", false), w("a", "1", true)}, map[string]string{"a": "0"},
			[]Lost{{Key: "a", Value: "1", Got: Value{Text: "0", Present: true}}}},
		{"lost under a later unacknowledged update", []cem.Write{w("a", "1", true), w("a", "2", false)}, map[string]string{},
			[]Lost{{Key: "a", Value: "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := cem.Snapshot{Replicas: []cem.ReplicaData{{Data: tt.data}, {Err: "unreadable"}, {Data: map[string]string{}}}}
			got := LostWrites(tt.writes, snap, []int{0, 0, NotCompared})
			if !slices.Equal(got, tt.want) {
				t.Errorf("LostWrites = %+v, want %+v", got, tt.want)
			}
		})
	}
}
