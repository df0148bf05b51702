package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// qczSchedules generates every Q/C/Z schedule for ops and three replicas, in file order.
func qczSchedules(t *testing.T, ops int) (schedules.Header, []schedules.Schedule) {
	t.Helper()
	d, err := drms.Lookup("qcz")
	if err != nil {
		t.Fatal(err)
	}
	h, ss, err := schedules.Generated(d, aem.Params{Ops: ops, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	return h, ss
}

// TestRunSharesPrefixes: with a plugin that restores, a worker restores the cluster saved
// after the deepest prefix it shares instead of replaying it, takes the prefix's writes and
// actions from the run that saved it, saves nothing after a check failed, and starts afresh
// after a restore fails. With one worker it does exactly the work that schedules.Plan counts.
func TestRunSharesPrefixes(t *testing.T) {
	plugintest.Servers(t)
	h, ss := qczSchedules(t, 2)
	const alarmed, diverged, badRestore = 0, 5, 9
	sys := newFakeSystem(t, 10)
	sys.behave[ss[alarmed].ID] = behaviour{alarmAt: 1}
	sys.behave[ss[diverged].ID] = behaviour{diverge: true}
	sys.behave[ss[badRestore].ID] = behaviour{restoreErr: "no such directory"}
	dir := t.TempDir()
	st := openStore(t, dir, h)
	c := campaign(t, sys, st, h, ss, 1)
	c.Info.Capabilities.Restore, c.Share, c.Trace = true, true, true

	sum, err := executor.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sys.check()
	recs := recordsByID(t, dir)
	if len(recs) != len(ss) || sum.Pass != len(ss)-3 || sum.Fail != 2 || sum.Error != 1 {
		t.Fatalf("%d records, %s; want %d with 2 fails and an error", len(recs), sum, len(ss))
	}
	if r := recs[ss[alarmed].ID]; r.Class != oracle.SelfCheck || r.Restored != nil {
		t.Errorf("schedule %d: %s %s restored %+v, want a self-check fail from scratch", alarmed, r.Verdict, r.Class, r.Restored)
	}
	// Schedule 1 shares three steps with schedule 0, whose alarm at step 1 kept it from saving.
	if calls := sys.callsOf(ss[1].ID); !strings.HasPrefix(calls, "start") {
		t.Errorf("schedule 1 after a prefix with a failed check: calls %s, want a start afresh", calls)
	}
	if r := recs[ss[badRestore].ID]; r.Verdict != oracle.Error || !strings.Contains(r.Detail, "no such directory") {
		t.Errorf("schedule %d: %s %q, want the restore's error", badRestore, r.Verdict, r.Detail)
	}
	if calls := sys.callsOf(ss[badRestore+1].ID); !strings.HasPrefix(calls, "start") {
		t.Errorf("the schedule after a failed restore: calls %s, want a start afresh", calls)
	}

	restored := 0
	for i, s := range ss {
		r, calls := recs[s.ID], sys.calls[s.ID]
		applies := strings.Count(strings.Join(calls, ","), "apply ")
		if r.Restored == nil {
			if i != badRestore && (calls[0] != "start" || applies != len(s.Steps)) {
				t.Errorf("schedule %d (%s): not restored, calls %v", i, s.ID, calls)
			}
			continue
		}
		restored++
		k := r.Restored.Steps
		if r.Verdict == oracle.Pass {
			// --trace keeps a passing schedule's actions, the restored steps' included.
			trace, err := os.ReadFile(st.TracePath(s.ID))
			if err != nil || !strings.Contains(string(trace), "realise "+s.Steps[0].String()) || !strings.Contains(string(trace), "restored") {
				t.Errorf("schedule %d: trace %v:\n%s", i, err, trace)
			}
		}
		from, ok := recs[r.Restored.From]
		if calls[0] != "restore "+itoa(k) || applies != len(s.Steps)-k || !ok || !from.Start.Before(r.Start) ||
			len(r.StepsMS) != len(s.Steps) || r.StepsMS[k-1] != 0 {
			t.Errorf("schedule %d (%s): restored %+v; calls %v; steps_ms %v", i, s.ID, r.Restored, calls, r.StepsMS)
		}
	}
	units := unitsOf(h, ss, max(len(ss)/8, 16))
	// The failed restore counts as one; the fails cost steps that Plan saves.
	if want := schedules.Plan(h.DRM.Model, h.Params, units, true); restored+1 != sum.Work.Restores || want.Steps > sum.Work.Steps || sum.Work.Schedules != len(ss) {
		t.Errorf("work %+v with %d restored records; Plan counts %+v when nothing fails", sum.Work, restored, want)
	}

	// The diverged schedule was restored, and its failure folder shows every step, the
	// restored ones as the saving run took them.
	r := recs[ss[diverged].ID]
	if r.Restored == nil || r.Verdict != oracle.Fail {
		t.Fatalf("schedule %d: %s, restored %+v; want a restored fail", diverged, r.Verdict, r.Restored)
	}
	actions, err := os.ReadFile(filepath.Join(st.FailureDir(ss[diverged].ID), results.ActionsText))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"step 1 " + ss[diverged].Steps[0].String(), "realise " + ss[diverged].Steps[0].String(), "restored", "step " + itoa(len(ss[diverged].Steps))} {
		if !strings.Contains(string(actions), want) {
			t.Errorf("actions.txt of a restored fail lacks %q:\n%s", want, actions)
		}
	}

	// Its folder keeps the prefix it restored, from which a replay restores it again: the same
	// saved cluster, the saving run's writes judged, the steps after it run.
	kept, err := results.ReadPrefix(dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kept.From != r.Restored.From || kept.Saved.Digest != r.Restored.Digest || len(kept.Steps) != r.Restored.Steps {
		t.Fatalf("kept prefix from %s, %d steps, sha256 %s; the record restored %+v", kept.From, len(kept.Steps), kept.Saved.Digest, r.Restored)
	}
	again := t.TempDir()
	c = campaign(t, sys, openStore(t, again, h), h, []schedules.Schedule{ss[diverged]}, 1)
	c.Info.Capabilities.Restore = true
	c.Prefix = &executor.Prefix{Dir: kept.Dir, From: kept.From, Saved: kept.Saved, Steps: kept.Steps}
	delete(sys.calls, r.ID)
	if _, err := executor.Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	got := recordsByID(t, again)[r.ID]
	calls := sys.callsOf(r.ID)
	if got.Verdict != oracle.Fail || got.Restored == nil || *got.Restored != *r.Restored || !strings.HasPrefix(calls, "restore "+itoa(len(kept.Steps))) {
		t.Errorf("replayed from the kept prefix: %s restored %+v, calls %s; want a fail restored as %+v", got.Verdict, got.Restored, calls, r.Restored)
	}
}

// TestRunSharesPrefixesWork: when nothing fails, one worker does the work that
// schedules.Plan counts; two share the units between them; without the plugin's capability
// nothing is restored. Every schedule passes and the saved clusters are removed.
func TestRunSharesPrefixesWork(t *testing.T) {
	plugintest.Servers(t)
	h, ss := qczSchedules(t, 2)
	for _, tc := range []struct {
		workers int
		restore bool
	}{{1, true}, {2, true}, {2, false}} {
		sys := newFakeSystem(t, 10)
		dir := t.TempDir()
		c := campaign(t, sys, openStore(t, dir, h), h, ss, tc.workers)
		c.Info.Capabilities.Restore, c.Share = tc.restore, true
		sum, err := executor.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		sys.check()
		if sum.Pass != len(ss) || (sum.Work.Restores > 0) != tc.restore || sum.Work.Starts+sum.Work.Restores != len(ss) {
			t.Errorf("%+v: %s, work %+v", tc, sum, sum.Work)
		}
		want := schedules.Plan(h.DRM.Model, h.Params, unitsOf(h, ss, max(len(ss)/(8*tc.workers), 16)), tc.restore)
		if tc.workers == 1 && sum.Work != want {
			t.Errorf("%+v: work %+v, Plan counts %+v", tc, sum.Work, want)
		}
		if _, err := os.Stat(workRoot(t, dir)); !os.IsNotExist(err) {
			t.Errorf("%+v: the work directory was left behind: %v", tc, err)
		}
	}
}

// unitsOf cuts ss into units as the executor does.
func unitsOf(h schedules.Header, ss []schedules.Schedule, max int) [][]schedules.Schedule {
	g := schedules.Grouper{Model: h.DRM.Model, Params: h.Params, Max: max}
	var units [][]schedules.Schedule
	for _, s := range ss {
		if u := g.Add(s); u != nil {
			units = append(units, u)
		}
	}
	return append(units, g.Flush())
}

func itoa(i int) string { return strconv.Itoa(i) }
