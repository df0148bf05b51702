package results_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestReadFailureRoundTrip reads back what WriteFailure wrote: the schedule, the verdict and
// complete detail, every action with its time and replica, and every replica's data.
func TestReadFailureRoundTrip(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	s := all[3]
	dir := t.TempDir()
	st := openStore(t, dir, campaign)
	at := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	f := results.Failure{
		Header: h, Schedule: s, Record: record(s.ID, oracle.Fail),
		Detail: "1 key differs:\n  k\n    replica 0: \"v\"\n    replica 1: <missing>\n    replica 2: \"v\"",
		Actions: []results.StepActions{
			{Step: 0, Transition: s.Steps[0].String(), Actions: []cem.Action{
				{Time: at, Replica: 2, What: "SET k v  (two spaces kept)"}, {Replica: -1, What: "waited for replication"}}},
			{Step: 1, Transition: s.Steps[1].String(), Actions: []cem.Action{{Time: at, Replica: 0, What: "SIGCONT process group 7"}}},
		},
		Snapshot: &cem.Snapshot{Replicas: []cem.ReplicaData{
			{Data: map[string]string{"k": "v"}}, {Data: map[string]string{}, Group: 1}, {Err: "connection refused"}}},
	}
	if err := st.WriteFailure(f); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadFailure(dir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schedule.ID != s.ID || !reflect.DeepEqual(got.Schedule.Steps, s.Steps) || got.Body != string(schedules.Body(s.Steps)) {
		t.Errorf("schedule = %+v, body %q; want %+v", got.Schedule, got.Body, s)
	}
	if got.Verdict != oracle.Fail || got.Detail != f.Detail {
		t.Errorf("verdict %q, detail:\n%s\nwant fail and:\n%s", got.Verdict, got.Detail, f.Detail)
	}
	if !reflect.DeepEqual(got.Actions, f.Actions) {
		t.Errorf("actions:\n%+v\nwant\n%+v", got.Actions, f.Actions)
	}
	if !reflect.DeepEqual(got.Snapshot, f.Snapshot) {
		t.Errorf("snapshot:\n%+v\nwant\n%+v", got.Snapshot, f.Snapshot)
	}
}

func TestReadFailureBad(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string // in the error
	}{
		{"no folder", nil, "no such file or directory"},
		{"not a schedule line", map[string]string{results.ScheduleText: "hello\n"}, `first line is not a schedule line: "hello"`},
		{"no verdict", map[string]string{results.ScheduleText: "0123456789abcdef D[1,0,0] C[1]\n", results.VerdictText: "oops\n"}, "no verdict line"},
		{"bad action", map[string]string{
			results.ScheduleText: "0123456789abcdef D[1,0,0] C[1]\n", results.VerdictText: "verdict: fail\n\nx\n",
			results.ActionsText: "step 1 D[1,0,0]\n  -  somebody  did it\n"}, `actions.txt:2: neither replica N nor cluster`},
		{"steps out of order", map[string]string{
			results.ScheduleText: "0123456789abcdef D[1,0,0] C[1]\n", results.VerdictText: "verdict: fail\n\nx\n",
			results.ActionsText: "step 2 C[1]\n"}, `actions.txt:1: not the next step`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			id := "0123456789abcdef"
			if tt.files != nil {
				fd := filepath.Join(dir, results.FailuresDir, id)
				if err := os.MkdirAll(fd, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, text := range tt.files {
					if err := os.WriteFile(filepath.Join(fd, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			_, err := results.ReadFailure(dir, id)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), filepath.Join(results.FailuresDir, id)) {
				t.Errorf("error %q does not name the folder", err)
			}
		})
	}
}

// TestRecordedFailures reads every failure folder of the recorded campaigns: each holds a
// schedule whose ID is its own, the verdict of its record, and every replica's data.
func TestRecordedFailures(t *testing.T) {
	for _, name := range recordedCampaigns {
		t.Run(name, func(t *testing.T) {
			s, err := results.ReadSummary(filepath.Join("testdata", "campaigns", name))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range s.NotPassed() {
				f, err := results.ReadFailure(s.Dir, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if id := schedules.ID(s.Header.DRM.Name, s.Header.Params, []byte(f.Body)); id != r.ID {
					t.Errorf("folder %s holds the schedule of ID %s", r.ID, id)
				}
				if f.Verdict != r.Verdict || len(f.Actions) != len(f.Schedule.Steps) || f.Snapshot == nil ||
					len(f.Snapshot.Replicas) != s.Header.Params.Replicas {
					t.Errorf("folder %s: verdict %s (record: %s), %d steps' actions of %d, snapshot %+v",
						r.ID, f.Verdict, r.Verdict, len(f.Actions), len(f.Schedule.Steps), f.Snapshot)
				}
			}
		})
	}
}
