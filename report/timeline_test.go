package report

import (
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestTimelinePartition: a replica that a step's observation says is cut off shows it on its
// row of the timeline, at that step only.
func TestTimelinePartition(t *testing.T) {
	d, err := drms.Lookup("qnz")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := schedules.ParseBody("D[0,0,1] C[0,1] C[2]")
	if err != nil {
		t.Fatal(err)
	}
	cut := map[string]string{cem.ObserveNetwork: cem.CutOff, cem.ObserveRole: "not serving"}
	obs := []results.StepObservations{
		{Step: 0, Replicas: []cem.Observation{{Replica: 0, Fields: cut}, {Replica: 1, Fields: cut}, {Replica: 2, Fields: cut}}},
		{Step: 1, Replicas: []cem.Observation{{Replica: 0, Fields: map[string]string{cem.ObserveRole: "leader"}}, {Replica: 2, Fields: cut}}},
	}
	tl, err := newTimeline(schedules.Header{DRM: d, Params: aem.Params{Ops: 1, Replicas: 3}}, schedules.Schedule{ID: "x", Steps: steps}, nil, obs)
	if err != nil {
		t.Fatal(err)
	}
	const shown = "partitioned: cut off from its peers"
	for _, tt := range []struct {
		replica, column int
		want            bool
	}{
		{0, 1, true}, {2, 1, true}, {0, 2, false}, {2, 2, true}, {2, 3, false},
	} {
		if got := slices.Contains(tl.Rows[tt.replica].Cells[tt.column].Events, shown); got != tt.want {
			t.Errorf("replica %d, column %d: events %v; shows the partition: %v, want %v", tt.replica, tt.column, tl.Rows[tt.replica].Cells[tt.column].Events, got, tt.want)
		}
	}
}
