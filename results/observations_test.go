package results

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modulo-testing/modulo/cem"
)

func TestFirstDifference(t *testing.T) {
	obs := func(step int, fields ...map[string]string) StepObservations {
		so := StepObservations{Step: step}
		for r, f := range fields {
			if f != nil {
				so.Replicas = append(so.Replicas, cem.Observation{Replica: r, Fields: f})
			}
		}
		return so
	}
	leader := map[string]string{"role": "leader", "epoch": "3"}
	trunc := map[string]string{"role": "follower", "sync": "TRUNC"}
	snap := map[string]string{"role": "follower", "sync": "SNAP"}
	tests := []struct {
		name string
		a, b []StepObservations
		want string
	}{
		{"same", []StepObservations{obs(4, leader, trunc)}, []StepObservations{obs(4, leader, trunc)}, ""},
		{"none", nil, nil, ""},
		{"another sync", []StepObservations{obs(2, leader), obs(4, leader, trunc)}, []StepObservations{obs(2, leader), obs(4, leader, snap)},
			"step 4: replica 1 sync=TRUNC in the recorded run, sync=SNAP in replay 2"},
		{"the earlier step first", []StepObservations{obs(2, leader), obs(4, leader, trunc)}, []StepObservations{obs(2, trunc), obs(4, leader, snap)},
			"step 2: replica 0 epoch=3 role=leader sync=- in the recorded run, epoch=- role=follower sync=TRUNC in replay 2"},
		{"a replica observed once", []StepObservations{obs(1, leader, nil)}, []StepObservations{obs(1, leader, trunc)},
			"step 1: replica 1 not observed in the recorded run, role=follower sync=TRUNC in replay 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstDifference(tt.a, tt.b, "the recorded run", "replay 2"); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestStepObservationsJSON: records.jsonl numbers the step observed after from 1, as
// actions.txt does, in "after_step"; a record written before it, with a 0-based "step", reads
// as the same step.
func TestStepObservationsJSON(t *testing.T) {
	tests := []struct {
		name, line string
		want       int // the 1-based step; 0 for an error
	}{
		{"new", `{"after_step":1,"replicas":[{"replica":0,"fields":{"sync":"FULL"}}]}`, 1},
		{"old, 0-based", `{"step":0,"replicas":[{"replica":0,"fields":{"sync":"FULL"}}]}`, 1},
		{"old, a later step", `{"step":3,"replicas":[{"replica":0,"fields":{"sync":"FULL"}}]}`, 4},
		{"both: the new one holds", `{"after_step":2,"step":1,"replicas":[{"replica":0,"fields":{"sync":"FULL"}}]}`, 2},
		{"no step", `{"replicas":[{"replica":0,"fields":{"sync":"FULL"}}]}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var so StepObservations
			err := json.Unmarshal([]byte(tt.line), &so)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("read %+v, want an error", so)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if so.Step != tt.want || len(so.Replicas) != 1 || so.Replicas[0].Fields["sync"] != "FULL" {
				t.Fatalf("read %+v, want step %d and replica 0's sync", so, tt.want)
			}
			b, err := json.Marshal(so)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`{"after_step":%d,"replicas":[{"replica":0,"fields":{"sync":"FULL"}}]}`, tt.want); string(b) != want {
				t.Errorf("written as %s, want %s", b, want)
			}
		})
	}
}
