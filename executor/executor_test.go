package executor_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/oracle"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

const scheduleFile = "../schedules/testdata/ssr-1x3.sched" // 24 S/S/R schedules, ops=1, 3 replicas

func readSchedules(t *testing.T) (schedules.Header, []schedules.Schedule) {
	t.Helper()
	h, all, err := schedules.ReadAll(scheduleFile)
	if err != nil {
		t.Fatal(err)
	}
	return h, all
}

func openStore(t *testing.T, dir string, h schedules.Header) *results.Store {
	t.Helper()
	st, err := results.Open(dir, results.Campaign{
		DRM: h.DRM.Name, Ops: h.Params.Ops, Replicas: h.Params.Replicas,
		Plugin: fakeInfo.Name, PluginVersion: fakeInfo.Version, ServerVersion: fakeInfo.ServerVersion,
		Started: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func campaign(t *testing.T, sys *fakeSystem, st *results.Store, h schedules.Header, ss []schedules.Schedule, workers int) executor.Campaign {
	t.Helper()
	stride := executor.Stride(fakeInfo.Capabilities.Ports(h.Params.Replicas))
	return executor.Campaign{
		Header: h, Next: schedules.Stream(ss), Total: uint64(len(ss)), Info: fakeInfo,
		Launch: sys.launch, Store: st, Workers: workers,
		BasePort: plugintest.FreePorts(t, workers*stride), StepTimeout: time.Second, CallTimeout: 2 * time.Second,
	}
}

func recordsByID(t *testing.T, dir string) map[string]results.Record {
	t.Helper()
	rs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]results.Record{}
	for _, r := range rs {
		if _, dup := m[r.ID]; dup {
			t.Errorf("schedule %s recorded twice", r.ID)
		}
		m[r.ID] = r
	}
	return m
}

// countsOf is s without its work, which tests of verdicts leave aside.
func countsOf(s executor.Summary) executor.Summary {
	s.Work = schedules.Work{}
	return s
}

// TestStride: a worker's block holds its replicas' ports and its services', rounded up to 10.
func TestStride(t *testing.T) {
	tests := []struct{ replicas, ports, service, want int }{
		{3, 1, 0, 10}, {3, 2, 0, 10}, {5, 2, 0, 10}, {4, 3, 0, 20}, {16, 3, 0, 50}, {10, 1, 0, 10}, {3, 3, 2, 20}, {3, 2, 4, 10},
	}
	for _, tt := range tests {
		c := cem.Capabilities{PortsPerReplica: tt.ports, ServicePorts: tt.service}
		if got := executor.Stride(c.Ports(tt.replicas)); got != tt.want {
			t.Errorf("%d replicas of %d ports, %d service ports: stride %d, want %d", tt.replicas, tt.ports, tt.service, got, tt.want)
		}
	}
}

func TestRunVerdicts(t *testing.T) {
	h, all := readSchedules(t)
	sys := newFakeSystem(t, 10)
	type want struct {
		verdict oracle.Verdict
		detail  string // substring
	}
	// Schedule 0 and the last pass; the others do what their behaviour says.
	cases := map[int]struct {
		b behaviour
		want
	}{
		1: {behaviour{diverge: true}, want{oracle.Fail, `1 key differs: key:1 (r0="` + all[1].ID + `" r1=<missing> r2="`}},
		2: {behaviour{unreadable: true}, want{oracle.Fail, "replica 2 unreadable: connection refused"}},
		3: {behaviour{notReached: 2}, want{oracle.Incomplete, "step 2 " + all[3].Steps[1].String() + ": not reached before the deadline: replica 2 in sync with replica 0"}},
		4: {behaviour{crashAt: 1}, want{oracle.Error, "step 1 " + all[4].Steps[0].String() + ": the plugin exited: plugin Apply: lost the connection"}},
		5: {behaviour{hangAt: 2}, want{oracle.Error, "the plugin did not answer within 2s"}},
		7: {behaviour{nonconformAt: 1}, want{oracle.Nonconformant, "step 1 " + all[7].Steps[0].String() + ": the cluster does not conform to the model (check write-leaked): write key:1 is in the log of replica 2"}},
		6: {behaviour{unrealisableAt: 1}, want{oracle.Unrealisable, "step 1 " + all[6].Steps[0].String() + ": cannot be realised: write key:1 reaches two nodes without a quorum"}},
		8: {behaviour{startErr: "redis-server: no such file"}, want{oracle.Error, "start: redis-server: no such file"}},
		9: {behaviour{unready: true}, want{oracle.Incomplete, "start: not reached before the deadline: a leader"}},
	}
	for i, c := range cases {
		sys.behave[all[i].ID] = c.b
	}
	ss := all[:10]
	dir := t.TempDir()
	st := openStore(t, dir, h)
	var progress []executor.Summary
	c := campaign(t, sys, st, h, ss, 1)
	c.Progress = func(s executor.Summary) { progress = append(progress, s) }

	sum, err := executor.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sys.check()
	wantSum := executor.Summary{Total: 10, Tally: oracle.Tally{Pass: 1, Fail: 2, Incomplete: 2, Error: 3, Nonconformant: 1, Unrealisable: 1}}
	if sum.Work.Schedules != 10 || sum.Work.Starts != 10 || sum.Work.Restores != 0 {
		t.Errorf("work = %+v, want 10 schedules, each with a cluster started (the plugin does not restore)", sum.Work)
	}
	if sum = countsOf(sum); sum != wantSum {
		t.Errorf("summary = %+v, want %+v", sum, wantSum)
	}
	if got := sum.String(); got != "schedules: 10, pass: 1, fail: 2, incomplete: 2, error: 3, nonconformant: 1, unrealisable: 1" {
		t.Errorf("summary line = %q", got)
	}
	if len(progress) != 10 || countsOf(progress[9]) != wantSum {
		t.Errorf("progress calls = %d, last %+v", len(progress), progress[len(progress)-1])
	}
	// One plugin, replaced after each of the crash, the hang and the failed start.
	if sys.launches != 4 {
		t.Errorf("plugins launched = %d, want 4", sys.launches)
	}

	recs := recordsByID(t, dir)
	if len(recs) != len(ss) {
		t.Fatalf("%d records, want %d", len(recs), len(ss))
	}
	for i, s := range ss {
		r := recs[s.ID]
		w := want{verdict: oracle.Pass}
		if c, ok := cases[i]; ok {
			w = c.want
		}
		if r.Verdict != w.verdict || !strings.Contains(r.Detail, w.detail) {
			t.Errorf("schedule %d (%s): %s %q, want %s containing %q; calls: %s", i, s.ID, r.Verdict, r.Detail, w.verdict, w.detail, sys.callsOf(s.ID))
		}
		if r.DRM != "ssr" || r.Plugin != "fake" || r.PluginVersion != "1.0" || r.ServerVersion != "sleep 1" || r.End.Before(r.Start) {
			t.Errorf("schedule %d: record %+v", i, r)
		}
		if w.verdict == oracle.Pass && len(r.StepsMS) != len(s.Steps) {
			t.Errorf("schedule %d: %d step timings, want %d", i, len(r.StepsMS), len(s.Steps))
		}
		_, err := os.Stat(st.FailureDir(s.ID))
		if hasFolder := err == nil; hasFolder != (w.verdict != oracle.Pass) {
			t.Errorf("schedule %d (%s): failure folder exists = %v", i, w.verdict, hasFolder)
		}
	}
	if _, err := os.Stat(workRoot(t, dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work directory left behind: %v", err)
	}

	// The fail's folder holds everything about it.
	fail := st.FailureDir(all[1].ID)
	for _, name := range []string{results.ScheduleText, results.VerdictText, results.ActionsText, results.ReplicasJSON,
		filepath.Join(results.LogsDir, "replica0.log"), filepath.Join(results.ClusterDir, "server.log")} {
		if _, err := os.Stat(filepath.Join(fail, name)); err != nil {
			t.Errorf("failure folder: %v", err)
		}
	}
	verdict, err := os.ReadFile(filepath.Join(fail, results.VerdictText))
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict := "verdict: fail\n\n1 key differs:\n  key:1: r0=\"" + all[1].ID + "\" r1=<missing> r2=\"" + all[1].ID + "\"\n"
	if string(verdict) != wantVerdict {
		t.Errorf("verdict.txt:\n%s\nwant:\n%s", verdict, wantVerdict)
	}
	// The crash's folder holds the actions taken before it, and no pid file is left.
	if _, err := os.Stat(filepath.Join(st.FailureDir(all[4].ID), results.ClusterDir, "server"+proc.PidFileSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead plugin's pid file was not swept: %v", err)
	}
}

func TestRunWorkersSideBySide(t *testing.T) {
	h, all := readSchedules(t)
	sys := newFakeSystem(t, 10)
	sys.gate, sys.gateN = make(chan struct{}), 3
	dir := t.TempDir()
	c := campaign(t, sys, openStore(t, dir, h), h, all, 3)
	c.CallTimeout = 10 * time.Second // the gate holds the first Starts until all three run

	sum, err := executor.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sys.check()
	if sum.Pass != len(all) || sum.Schedules() != len(all) {
		t.Errorf("summary = %+v, want %d passes", sum, len(all))
	}
	if sys.launches != 3 {
		t.Errorf("plugins launched = %d, want one per worker", sys.launches)
	}
	if n := len(recordsByID(t, dir)); n != len(all) {
		t.Errorf("%d records, want %d", n, len(all))
	}
}

// TestRunBusyPort: a port of the worker's block that its cluster does not use is no obstacle;
// one that it uses and that another process frees soon is waited for; one held for longer
// than PortWait stops the run, naming it, with no schedule recorded. A cluster in network
// namespaces uses no port of the machine's: a held one is no obstacle.
func TestRunBusyPort(t *testing.T) {
	h, all := readSchedules(t)
	tests := []struct {
		name       string
		offset     int           // the busy port, from the worker's base
		holdFor    time.Duration // zero: for the whole run
		namespaces bool
		wantPass   int
		wantErr    string
	}{
		{"unused port of the block", 7, 0, false, 2, ""},
		// Freed 1.3 s before the wait ends: a loaded machine's late timer still frees it in time.
		{"freed after a while", 3, 700 * time.Millisecond, false, 2, ""},
		{"held", 3, 0, false, 0, "is already in use (by pid "},
		{"held, in namespaces", 3, 0, true, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newFakeSystem(t, 10)
			dir := t.TempDir()
			c := campaign(t, sys, openStore(t, dir, h), h, all[:2], 1)
			c.PortWait = 2 * time.Second
			if tt.namespaces {
				c.Info.Capabilities.Network = cem.NetworkNamespaces
			}
			busy := c.BasePort + tt.offset
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(busy))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if tt.holdFor > 0 {
				time.AfterFunc(tt.holdFor, func() { l.Close() })
			}
			sum, err := executor.Run(context.Background(), c)
			sys.check()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), strconv.Itoa(busy))) {
				t.Fatalf("error = %v, want one containing %q and the port", err, tt.wantErr)
			}
			recs := recordsByID(t, dir)
			if sum.Pass != tt.wantPass || sum.Error != 0 || len(recs) != tt.wantPass {
				t.Errorf("summary %+v, %d records; want %d passes and no error", sum, len(recs), tt.wantPass)
			}
		})
	}
}

func TestRunInterruptAndResume(t *testing.T) {
	h, all := readSchedules(t)
	sys := newFakeSystem(t, 10)
	blocked := all[5].ID
	sys.behave[blocked] = behaviour{blockAt: 2}
	dir := t.TempDir()
	st := openStore(t, dir, h)
	c := campaign(t, sys, st, h, all, 1)
	c.CallTimeout = time.Minute // the interrupt, not the call timeout, must end the blocked step

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-sys.blocked
		cancel()
	}()
	sum, err := executor.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	sys.check()
	if !sum.Interrupted || sum.Pass != 5 || sum.Schedules() != 5 {
		t.Errorf("summary = %+v, want interrupted after 5 passes", sum)
	}
	recs := recordsByID(t, dir)
	if _, ok := recs[blocked]; ok || len(recs) != 5 {
		t.Errorf("records: %d, the interrupted schedule recorded: %v", len(recs), ok)
	}
	if _, err := os.Stat(filepath.Join(dir, results.FailuresDir, blocked)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted schedule has a failure folder: %v", err)
	}
	if calls := sys.callsOf(blocked); !strings.HasSuffix(calls, "teardown") {
		t.Errorf("the interrupted cluster was not torn down: %s", calls)
	}

	// Running the campaign again runs the rest, and only the rest.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	delete(sys.behave, blocked)
	sys2 := newFakeSystem(t, 10)
	c2 := campaign(t, sys2, openStore(t, dir, h), h, all, 2)
	sum, err = executor.Run(context.Background(), c2)
	if err != nil {
		t.Fatal(err)
	}
	sys2.check()
	want := executor.Summary{Total: uint64(len(all)), Tally: oracle.Tally{Pass: len(all)}, Skipped: 5}
	if sum.Work.Schedules != len(all)-5 {
		t.Errorf("resumed run's work = %+v, want %d schedules", sum.Work, len(all)-5)
	}
	if sum = countsOf(sum); sum != want {
		t.Errorf("resumed summary = %+v, want %+v", sum, want)
	}
	if len(sys2.calls) != len(all)-5 {
		t.Errorf("resumed run ran %d schedules, want %d", len(sys2.calls), len(all)-5)
	}
	if n := len(recordsByID(t, dir)); n != len(all) {
		t.Errorf("%d records after resuming, want %d", n, len(all))
	}
}

func TestRunStopsOnBadScheduleFile(t *testing.T) {
	h, all := readSchedules(t)
	sys := newFakeSystem(t, 10)
	st := openStore(t, t.TempDir(), h)
	c := campaign(t, sys, st, h, nil, 2)
	bad := errors.New("sched:9: not a schedule")
	i := 0
	c.Next = func() (schedules.Schedule, error) {
		if i == 3 {
			return schedules.Schedule{}, bad
		}
		i++
		return all[i-1], nil
	}
	c.Total = uint64(len(all))
	sum, err := executor.Run(context.Background(), c)
	if !errors.Is(err, bad) {
		t.Fatalf("error = %v, want %v", err, bad)
	}
	sys.check()
	if sum.Pass != 3 {
		t.Errorf("summary = %+v, want the 3 schedules before the bad line run", sum)
		for id, r := range recordsByID(t, st.Dir()) {
			t.Logf("%s: %s %s", id, r.Verdict, r.Detail)
		}
	}
}

// TestRunRetriesErrors checks that a harness error is not a verdict a later run keeps: the
// schedule runs again, and its pass removes the error's failure folder.
func TestRunRetriesErrors(t *testing.T) {
	h, all := readSchedules(t)
	dir := t.TempDir()
	st := openStore(t, dir, h)
	sys := newFakeSystem(t, 10)
	for _, s := range all[:3] {
		sys.behave[s.ID] = behaviour{startErr: "the server binary went missing"}
	}
	c := campaign(t, sys, st, h, all[:3], 1)
	sum, err := executor.Run(context.Background(), c)
	sys.check()
	if err != nil || sum.Error != 3 {
		t.Fatalf("first run: %+v, %v; want 3 errors", sum, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	sys2 := newFakeSystem(t, 10)
	c2 := campaign(t, sys2, openStore(t, dir, h), h, all[:3], 1)
	c2.BasePort = c.BasePort
	sum, err = executor.Run(context.Background(), c2)
	if err != nil {
		t.Fatal(err)
	}
	sys2.check()
	if want := (executor.Summary{Total: 3, Tally: oracle.Tally{Pass: 3}}); countsOf(sum) != want {
		t.Errorf("second run = %+v, want %+v", sum, want)
	}
	for _, s := range all[:3] {
		if _, err := os.Stat(filepath.Join(dir, results.FailuresDir, s.ID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("schedule %s passed but keeps its failure folder: %v", s.ID, err)
		}
	}
}

// TestRunChecks checks each check of the oracle on a schedule that fails only it: a divergence
// seen after a convergence step and healed by the end (which the end-only check passes), an
// acknowledged write that every replica lost, an alarm of the system's own check, a write only
// a minority received that the system acknowledged.
func TestRunChecks(t *testing.T) {
	h, all := readSchedules(t)
	// A schedule with a convergence step before its last step, so that one check comes before
	// the end.
	k := slices.IndexFunc(all, func(s schedules.Schedule) bool {
		return slices.ContainsFunc(s.Steps[:len(s.Steps)-1], func(t aem.Transition) bool { return t.Kind == aem.Convergence })
	})
	if k < 0 {
		t.Fatal("no schedule of " + scheduleFile + " has two convergence steps")
	}
	s := all[k]
	mid := slices.IndexFunc(s.Steps, func(t aem.Transition) bool { return t.Kind == aem.Convergence }) + 1
	tests := []struct {
		name   string
		b      behaviour
		check  oracle.Check
		want   oracle.Verdict
		class  oracle.Class
		step   int
		detail string
		atEnd  string
	}{
		{"healed divergence, every convergence", behaviour{healAt: mid + 1}, oracle.EveryConvergence, oracle.Fail, oracle.Diverged, mid,
			fmt.Sprintf("after step %d: 1 key differs: key:1", mid), "pass"},
		{"healed divergence, end only", behaviour{healAt: mid + 1}, oracle.End, oracle.Pass, "", 0, "", ""},
		{"lost write", behaviour{lose: true}, oracle.EveryConvergence, oracle.Fail, oracle.LostWrite, mid,
			fmt.Sprintf("after step %d: 2 acknowledged writes lost: key:1 on replica 0 (acknowledged %q, holds \"lost\")", mid, s.ID), "fail: 3 acknowledged writes lost"},
		{"lost write, end only", behaviour{lose: true}, oracle.End, oracle.Fail, oracle.LostWrite, 0, "3 acknowledged writes lost: key:1", ""},
		{"alarm", behaviour{alarmAt: 1}, oracle.End, oracle.Fail, oracle.SelfCheck, 1, "after step 1: the system's own check: replica 0: digest mismatches: 2", "pass"},
		{"minority write acknowledged", behaviour{minorityAckAt: 1}, oracle.EveryConvergence, oracle.Fail, oracle.MinorityAck, 1,
			"after step 1: the system acknowledged 1 write that only a minority of replicas received, which cannot have committed: key:1 (step 1, acknowledged after 34 ms)",
			"fail: the system acknowledged 1 write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newFakeSystem(t, 10)
			sys.behave[s.ID] = tt.b
			dir := t.TempDir()
			st := openStore(t, dir, h)
			c := campaign(t, sys, st, h, []schedules.Schedule{s}, 1)
			c.Check = tt.check
			if _, err := executor.Run(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			sys.check()
			r := recordsByID(t, dir)[s.ID]
			if r.Verdict != tt.want || r.Class != tt.class || r.Step != tt.step || !strings.HasPrefix(r.Detail, tt.detail) || !strings.HasPrefix(r.AtEnd, tt.atEnd) || (tt.atEnd == "") != (r.AtEnd == "") {
				t.Errorf("record: %s class %q step %d %q at end %q; want %s class %q step %d %q... at end %q...; calls: %s",
					r.Verdict, r.Class, r.Step, r.Detail, r.AtEnd, tt.want, tt.class, tt.step, tt.detail, tt.atEnd, sys.callsOf(s.ID))
			}
			if want := map[cem.Answer]int{cem.Acknowledged: 1}; tt.b.minorityAckAt > 0 && !maps.Equal(r.Answers, want) {
				t.Errorf("record's answers %v, want %v", r.Answers, want)
			}
			if r.Verdict != oracle.Fail {
				return
			}
			// The fail's folder keeps what it was judged from, and the oracle judges it alike.
			e, err := results.ReadEvidence(dir, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			got := oracle.Judge(e)
			compared := r.Class == oracle.Diverged || r.Class == oracle.LostWrite
			if got.Class != r.Class || e.Step != r.Step || !slices.Equal(got.Difference, r.Difference) || compared != (len(r.Difference) > 0) {
				t.Errorf("judged again: %s step %d %+v; recorded %s step %d %+v", got.Class, e.Step, got.Difference, r.Class, r.Step, r.Difference)
			}
		})
	}
}

// TestRunRetry: a campaign resumed with Retry runs again the schedules of those verdicts and
// appends their new records; the others stay skipped, an unrealisable one too (not an error).
func TestRunRetry(t *testing.T) {
	h, all := readSchedules(t)
	dir := t.TempDir()
	st := openStore(t, dir, h)
	verdicts := []oracle.Verdict{oracle.Incomplete, oracle.Fail, oracle.Pass, oracle.Unrealisable}
	for i, v := range verdicts {
		if err := st.Append(results.Record{ID: all[i].ID, DRM: "ssr", Verdict: v, Plugin: "fake", PluginVersion: "1.0", ServerVersion: "sleep 1"}); err != nil {
			t.Fatal(err)
		}
	}
	sys := newFakeSystem(t, 10)
	c := campaign(t, sys, st, h, all[:4], 1)
	c.Retry = []oracle.Verdict{oracle.Incomplete}
	sum, err := executor.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sys.check()
	if sum.Skipped != 3 || sum.Ran() != 1 || sys.callsOf(all[0].ID) == "" || sys.callsOf(all[1].ID) != "" || sys.callsOf(all[3].ID) != "" {
		t.Errorf("summary %+v; calls for the incomplete one: %q, for the fail: %q, for the unrealisable: %q", sum, sys.callsOf(all[0].ID), sys.callsOf(all[1].ID), sys.callsOf(all[3].ID))
	}
	recs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || recs[0].Verdict != oracle.Incomplete || recs[4].ID != all[0].ID || recs[4].Verdict != oracle.Pass {
		t.Errorf("records %+v: want the three old ones, then the rerun's pass", recs)
	}
}

// TestRunHold: Hold sees the cluster up, on the worker's ports, and the teardown comes after it.
func TestRunHold(t *testing.T) {
	h, all := readSchedules(t)
	sys := newFakeSystem(t, 10)
	dir := t.TempDir()
	c := campaign(t, sys, openStore(t, dir, h), h, all[:1], 1)
	var held []executor.Kept
	c.Hold = func(_ context.Context, k executor.Kept) {
		sys.mu.Lock()
		base, up := sys.running[k.Dir]
		sys.mu.Unlock()
		if !up || base != k.BasePort || k.Ports != 6 {
			t.Errorf("held %+v: cluster up %v on port %d", k, up, base)
		}
		held = append(held, k)
	}
	if _, err := executor.Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	sys.check()
	if len(held) != 1 || !strings.HasSuffix(sys.callsOf(all[0].ID), "read, teardown") {
		t.Errorf("held %d times; calls %s", len(held), sys.callsOf(all[0].ID))
	}
}

// workRoot is where a campaign whose results go to dir runs its clusters.
func workRoot(t *testing.T, dir string) string {
	t.Helper()
	root, err := executor.WorkRoot(dir, os.TempDir(), os.Geteuid() == 0)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestWorkRoot checks where clusters run: in the results directory's work folder, unless the
// campaign runs as root below a directory that other users cannot enter.
func TestWorkRoot(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil { // the test's own directory
		t.Fatal(err)
	}
	open, closed := filepath.Join(base, "open"), filepath.Join(base, "closed")
	for dir, mode := range map[string]os.FileMode{base: 0o755, open: 0o755, closed: 0o700} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(base, "/tmp/") {
		t.Skipf("the test's directory %s is not under /tmp, whose every directory others can enter", base)
	}
	tmp := filepath.Join(base, "tmp")
	tests := []struct {
		name, results string
		root          bool
		want          string
	}{
		{"open, as root", filepath.Join(open, "r"), true, filepath.Join(open, "r", results.WorkDir)},
		{"closed, as root", filepath.Join(closed, "r"), true, filepath.Join(tmp, "modulo-work-")},
		{"closed, not root", filepath.Join(closed, "r"), false, filepath.Join(closed, "r", results.WorkDir)},
		{"closed itself, as root", closed, true, filepath.Join(tmp, "modulo-work-")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := executor.WorkRoot(tt.results, tmp, tt.root)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, tt.want) || (strings.HasSuffix(tt.want, "-") && len(got) != len(tt.want)+16) {
				t.Errorf("WorkRoot(%s) = %s, want %s", tt.results, got, tt.want)
			}
		})
	}
	a, _ := executor.WorkRoot(filepath.Join(closed, "a"), tmp, true)
	b, _ := executor.WorkRoot(filepath.Join(closed, "b"), tmp, true)
	if a == b {
		t.Errorf("two campaigns' results directories share the work folder %s", a)
	}
}

// TestRunStopsOnFullDisk: a results disk with less free than MinFree stops the run before its
// next schedule with a *DiskFullError that says how to go on, every record written intact; with
// the free disk asked for, the same campaign resumes and runs the rest.
func TestRunStopsOnFullDisk(t *testing.T) {
	h, all := readSchedules(t)
	dir := t.TempDir()
	sys := newFakeSystem(t, 10)
	st := openStore(t, dir, h)
	c := campaign(t, sys, st, h, all, 1)
	c.MinFree = 1 << 62 // more than any disk has
	sum, err := executor.Run(context.Background(), c)
	var full *executor.DiskFullError
	if !errors.As(err, &full) || !strings.Contains(err.Error(), "its results intact") || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("Run: %v, want a *DiskFullError saying the results are intact and how to resume", err)
	}
	if sum.Schedules() != 0 || len(recordsByID(t, dir)) != 0 {
		t.Errorf("ran %d schedules and recorded %d, want none", sum.Schedules(), len(recordsByID(t, dir)))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	sys2 := newFakeSystem(t, 10)
	c2 := campaign(t, sys2, openStore(t, dir, h), h, all, 1)
	c2.MinFree = 1 << 20
	if _, err := executor.Run(context.Background(), c2); err != nil {
		t.Fatal(err)
	}
	sys2.check()
	if n := len(recordsByID(t, dir)); n != len(all) {
		t.Errorf("%d records after the disk had room, want %d", n, len(all))
	}
}

// TestRunFollow: a schedule whose observations leave the course that Follow follows is
// abandoned after that step, incomplete, its record saying how it left; the others run to
// their verdicts, their steps all told to Follow.
func TestRunFollow(t *testing.T) {
	h, all := readSchedules(t)
	sys := newFakeSystem(t, 10)
	left := all[3].ID
	sys.behave[left] = behaviour{sync: "PARTIAL"}
	dir := t.TempDir()
	c := campaign(t, sys, openStore(t, dir, h), h, all, 1)
	var mu sync.Mutex
	told := 0
	c.Follow = func(step int, obs []cem.Observation) string {
		mu.Lock()
		defer mu.Unlock()
		told++
		for _, o := range obs {
			if o.Fields[cem.ObserveSync] == "PARTIAL" {
				return fmt.Sprintf("step %d: replica %d sync=FULL in the recorded run, sync=PARTIAL in this run", step, o.Replica)
			}
		}
		return ""
	}
	sum, err := executor.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	recs := recordsByID(t, dir)
	r := recs[left]
	if r.Verdict != oracle.Incomplete || !strings.HasPrefix(r.Departed, "step 1: replica 0 sync=FULL") || !strings.Contains(r.Detail, "left the followed course") {
		t.Errorf("the schedule that left the course: %s %q, departed %q; want incomplete, departed after its first step", r.Verdict, r.Detail, r.Departed)
	}
	if len(r.StepsMS) != 1 {
		t.Errorf("the schedule that left the course ran %d steps, want 1", len(r.StepsMS))
	}
	if sum.Pass != len(all)-1 || sum.Incomplete != 1 {
		t.Errorf("summary %+v, want the others passed", sum)
	}
	if told < 2*(len(all)-1) {
		t.Errorf("Follow was told %d steps, want every step of the %d that followed", told, len(all)-1)
	}
}
