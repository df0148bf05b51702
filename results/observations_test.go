package results

import (
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
		{"same", []StepObservations{obs(3, leader, trunc)}, []StepObservations{obs(3, leader, trunc)}, ""},
		{"none", nil, nil, ""},
		{"another sync", []StepObservations{obs(1, leader), obs(3, leader, trunc)}, []StepObservations{obs(1, leader), obs(3, leader, snap)},
			"step 4: replica 1 sync=TRUNC in the recorded run, sync=SNAP in replay 2"},
		{"the earlier step first", []StepObservations{obs(1, leader), obs(3, leader, trunc)}, []StepObservations{obs(1, trunc), obs(3, leader, snap)},
			"step 2: replica 0 epoch=3 role=leader sync=- in the recorded run, epoch=- role=follower sync=TRUNC in replay 2"},
		{"a replica observed once", []StepObservations{obs(0, leader, nil)}, []StepObservations{obs(0, leader, trunc)},
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
