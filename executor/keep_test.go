package executor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// TestRunKeepPasses: a run asked to keep its schedule (replay --keep) keeps a pass's actions,
// data and logs in passes/<ID>/ as a failure's are kept in failures/<ID>/, and a verdict
// reached before the interrupt that ends its hold is kept too, an incomplete one included;
// without KeepPasses a pass keeps no folder. The fake's only process is sleep, a stand-in
// that serves nothing: its ports are reserved under -short too.
func TestRunKeepPasses(t *testing.T) {
	h, all := readSchedules(t)
	s := all[0]
	if len(s.Steps) < 2 {
		t.Fatalf("schedule %s has %d steps, want 2 or more", s.ID, len(s.Steps))
	}
	tests := []struct {
		name       string
		b          behaviour
		keepPasses bool
		interrupt  bool // Hold holds the cluster until the run is interrupted
		want       oracle.Verdict
		folder     string // where its actions, data and logs are kept; "" for nowhere
	}{
		{"a pass, kept", behaviour{}, true, false, oracle.Pass, results.PassesDir},
		{"a pass, not kept", behaviour{}, false, false, oracle.Pass, ""},
		{"a fail, kept", behaviour{diverge: true}, true, false, oracle.Fail, results.FailuresDir},
		{"a pass held until the interrupt", behaviour{}, true, true, oracle.Pass, results.PassesDir},
		{"an incomplete run held until the interrupt", behaviour{notReached: 2}, true, true, oracle.Incomplete, results.FailuresDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newFakeSystem(t, 10)
			sys.behave[s.ID] = tt.b
			dir := t.TempDir()
			st := openStore(t, dir, h)
			stride := executor.Stride(fakeInfo.Capabilities.Ports(h.Params.Replicas))
			c := executor.Campaign{
				Header: h, Next: schedules.Stream([]schedules.Schedule{s}), Total: 1, Info: fakeInfo,
				Launch: sys.launch, Store: st, Workers: 1, KeepPasses: tt.keepPasses,
				BasePort: plugintest.ReservePorts(t, stride), StepTimeout: time.Second, CallTimeout: 2 * time.Second,
			}
			ctx, interrupt := context.WithCancel(context.Background())
			defer interrupt()
			if tt.interrupt {
				c.Hold = func(ctx context.Context, _ executor.Kept) {
					interrupt() // Ctrl-C
					<-ctx.Done()
				}
			}
			sum, err := executor.Run(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			sys.check()
			r, ok := recordsByID(t, dir)[s.ID]
			if !ok || r.Verdict != tt.want || sum.Interrupted {
				t.Fatalf("recorded %v: %s %q, interrupted %v; want %s; calls: %s", ok, r.Verdict, r.Detail, sum.Interrupted, tt.want, sys.callsOf(s.ID))
			}
			for _, other := range []string{results.PassesDir, results.FailuresDir} {
				if _, err := os.Stat(filepath.Join(dir, other, s.ID)); other != tt.folder && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s/%s kept: %v", other, s.ID, err)
				}
			}
			if tt.folder == "" {
				return
			}
			kept := []string{results.ScheduleText, results.VerdictText, results.ActionsText,
				filepath.Join(results.LogsDir, "replica0.log"), filepath.Join(results.ClusterDir, "replica0.log")}
			if tt.want == oracle.Pass || tt.want == oracle.Fail {
				kept = append(kept, results.ReplicasJSON) // the data read
			}
			for _, name := range kept {
				if _, err := os.Stat(filepath.Join(dir, tt.folder, s.ID, name)); err != nil {
					t.Errorf("%s: %v", tt.folder, err)
				}
			}
			if _, err := os.Stat(workRoot(t, dir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("work directory left behind: %v", err)
			}
		})
	}
}
