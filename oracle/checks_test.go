package oracle

import (
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
			"a restarted server exited: replica 1: prev-link; replica 2: zookeeper-2 exited"},
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
