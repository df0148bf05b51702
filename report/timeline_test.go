package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
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
		{Step: 1, Replicas: []cem.Observation{{Replica: 0, Fields: cut}, {Replica: 1, Fields: cut}, {Replica: 2, Fields: cut}}},
		{Step: 2, Replicas: []cem.Observation{{Replica: 0, Fields: map[string]string{cem.ObserveRole: "leader"}}, {Replica: 2, Fields: cut}}},
	}
	tl, err := newTimeline(schedules.Header{DRM: d, Params: aem.Params{Ops: 1, Replicas: 3}}, schedules.Schedule{ID: "x", Steps: steps}, nil, results.Record{Observations: obs})
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

// TestTimelineMarks: the column where the failing check saw the failure, and the first
// convergence after which replicas that the model says have converged were observed apart,
// with the replicas apart from their group flagged; differences after a divergence, or of a
// replica the model does not compare, mark nothing.
func TestTimelineMarks(t *testing.T) {
	// obs builds a step's observations: one field's value per replica, "" for none.
	obs := func(step int, field string, values ...string) results.StepObservations {
		so := results.StepObservations{Step: step}
		for i, v := range values {
			if v != "" {
				so.Replicas = append(so.Replicas, cem.Observation{Replica: i, Fields: map[string]string{field: v}})
			}
		}
		return so
	}
	type apart struct{ replica, column int }
	for _, tt := range []struct {
		name, drm, body string
		replicas        int
		rec             results.Record
		seen, parted    int
		apart           []apart // the cells flagged, epoch or position
	}{
		{
			name: "a pass whose replicas agree", drm: "qcz", body: "D[0,0,1] C[0,1] C[2]", replicas: 3,
			rec: results.Record{Verdict: oracle.Pass, Observations: []results.StepObservations{
				obs(2, cem.ObserveEpoch, "1", "1"), obs(3, cem.ObserveEpoch, "1", "1", "1"),
			}},
		},
		{
			name: "the odd epoch out of three, then the check at the end", drm: "qcz", body: "D[0,0,1] C[0,1] C[2]", replicas: 3,
			rec: results.Record{Verdict: oracle.Fail, Class: oracle.Diverged, Observations: []results.StepObservations{
				obs(2, cem.ObserveEpoch, "1", "1"), obs(3, cem.ObserveEpoch, "1", "1", "2"),
			}},
			seen: 3, parted: 3, apart: []apart{{2, 3}},
		},
		{
			name: "two positions apart, both flagged, before the check saw it", drm: "qcz", body: "D[0,0,1] C[0,1] C[2]", replicas: 3,
			rec: results.Record{Verdict: oracle.Fail, Class: oracle.LostWrite, Step: 3, Observations: []results.StepObservations{
				obs(2, cem.ObservePosition, "0/10", "0/20"), obs(3, cem.ObservePosition, "0/20", "0/20", "0/20"),
			}},
			seen: 3, parted: 2, apart: []apart{{0, 2}, {1, 2}},
		},
		{
			name: "a divergence parts them by design", drm: "sclr", body: "D[1,0](n,c) C[1]<-,0>", replicas: 2,
			rec: results.Record{Verdict: oracle.Pass, Observations: []results.StepObservations{
				obs(1, cem.ObservePosition, "5", "3"), obs(2, cem.ObservePosition, "7", "7"),
			}},
		},
		{
			name: "a replica offline and unlinked is not compared", drm: "sclr", body: "D[1,0](n,c) C[1]<-,->off1 C[1]<-,0>", replicas: 2,
			rec: results.Record{Verdict: oracle.Fail, Class: oracle.BrokenReplication, Step: 3, Observations: []results.StepObservations{
				obs(2, cem.ObservePosition, "5", "3"), obs(3, cem.ObservePosition, "7", "6"),
			}},
			seen: 3, parted: 3, apart: []apart{{0, 3}, {1, 3}},
		},
		{
			name: "a failure older than the classes: a divergence at the end", drm: "sclr", body: "D[1,0](n,c) C[1]<-,0>", replicas: 2,
			rec:  results.Record{Verdict: oracle.Fail},
			seen: 2,
		},
		{
			name: "an incomplete run: no check failed", drm: "sclr", body: "D[1,0](n,c) C[1]<-,0>", replicas: 2,
			rec: results.Record{Verdict: oracle.Incomplete},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := drms.Lookup(tt.drm)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := schedules.ParseBody(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			h := schedules.Header{DRM: d, Params: aem.Params{Ops: 1, Replicas: tt.replicas}}
			tl, err := newTimeline(h, schedules.Schedule{ID: "x", Steps: steps}, nil, tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if tl.Seen != tt.seen || tl.Parted != tt.parted {
				t.Errorf("marked: the check at column %d, the parting at %d; want %d and %d", tl.Seen, tl.Parted, tt.seen, tt.parted)
			}
			var got []apart
			for i, r := range tl.Rows {
				for j, c := range r.Cells {
					if c.EpochApart || c.PositionApart {
						got = append(got, apart{i, j})
					}
				}
			}
			if !slices.Equal(got, tt.apart) {
				t.Errorf("cells flagged apart (replica, column): %v, want %v", got, tt.apart)
			}
			for j, c := range tl.Columns {
				var classes []string
				for _, m := range c.Marks {
					classes = append(classes, m.Class)
				}
				var want []string
				if j == tt.parted && j > 0 {
					want = append(want, markParted)
				}
				if j == tt.seen && j > 0 {
					want = append(want, markSeen)
				}
				if !slices.Equal(classes, want) {
					t.Errorf("column %d marked %v, want %v", j, classes, want)
				}
			}
		})
	}
}

func TestSyncText(t *testing.T) {
	for _, tt := range []struct {
		sync string
		want []string
	}{
		{"", nil},
		{"FULL", []string{"FULL"}},
		{"INVALID-RECORD,INVALID-RECORD,STREAM,INVALID-RECORD,STREAM", []string{"INVALID-RECORD ×3", "STREAM ×2"}},
		{"STREAM,PREV-LINK,PREV-LINK", []string{"STREAM", "PREV-LINK ×2"}},
	} {
		if got := syncText(tt.sync); !slices.Equal(got, tt.want) {
			t.Errorf("syncText(%q) = %q, want %q", tt.sync, got, tt.want)
		}
	}
}

func TestEpochText(t *testing.T) {
	for _, tt := range []struct{ epoch, want string }{
		{"", ""},
		{"3", "epoch 3"},             // ZooKeeper's, NATS's: a bare number
		{"timeline 2", "timeline 2"}, // PostgreSQL's says what it is
	} {
		if got := epochText(tt.epoch); got != tt.want {
			t.Errorf("epochText(%q) = %q, want %q", tt.epoch, got, tt.want)
		}
	}
}

// TestTimelineKinds: a divergence says how each replica failed, by the kind its DRM gives it,
// and a replica whose server still runs (paused, cut off) is offline, not crashed.
func TestTimelineKinds(t *testing.T) {
	for _, tt := range []struct {
		drm, step string
		events    []string
		states    []string
	}{
		{"qcz+partition+pause", "D[0,0,1](c,p,s)", []string{"crashes", "is cut off", "+1 write pauses"}, []string{"crashed", "offline", "offline"}},
		{"qpz", "D[0,0,1]", []string{"loses power", "loses power", "+1 write loses power"}, []string{"crashed", "crashed", "crashed"}},
		{"qnz", "D[0,0,1]", []string{"is cut off", "is cut off", "+1 write is cut off"}, []string{"offline", "offline", "offline"}},
		{"qcz", "D[0,0,1]", []string{"crashes", "crashes", "+1 write crashes"}, []string{"crashed", "crashed", "crashed"}},
	} {
		t.Run(tt.drm, func(t *testing.T) {
			d, err := drms.Lookup(tt.drm)
			if err != nil {
				t.Fatal(err)
			}
			p := aem.Params{Ops: 1, Replicas: 3}
			before := d.Model.Init(p)
			step, err := aem.ParseTransition(tt.step)
			if err != nil {
				t.Fatal(err)
			}
			_, after, ok := aem.Take(d.Model, p, &before, &step)
			if !ok {
				t.Fatalf("%s is not enabled", tt.step)
			}
			for i := range 3 {
				kind := failedAs(d, &after, i)
				got := strings.Join(events(&step, &before, &after, i, kind), " ")
				if got != tt.events[i] || onlineState(kind, after.On[i]) != tt.states[i] {
					t.Errorf("replica %d: %q, %s; want %q, %s", i, got, onlineState(kind, after.On[i]), tt.events[i], tt.states[i])
				}
			}
		})
	}
}
