package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/schedules"
)

// These tests drive real ZooKeeper ensembles (Debian's, from /usr/share/java) through the
// plugin's cem.CEM methods.

func TestMain(m *testing.M) {
	code := m.Run()
	// No test may leave a JVM behind, whatever it did.
	if out, err := exec.Command("pgrep", "-af", "QuorumPeerMain").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
		fmt.Fprintf(os.Stderr, "ZooKeeper JVMs left running after the tests:\n%s", out)
		code = 1
	}
	os.Exit(code)
}

// checkDivergence verifies, independently of the plugin's own confirmation, what a divergence
// left on the replicas' disks: write j of step s is in the transaction log of exactly the
// abstract replicas with Writes[a] >= j, and every replica is crashed.
func checkDivergence(t *testing.T, p *Plugin, step int, tr aem.Transition) {
	t.Helper()
	for a, w := range tr.Writes {
		r := p.c.replicas[p.c.conc[a]]
		if r.running() {
			t.Errorf("step %d %s: replica %d (%s) still running after the divergence", step+1, tr.String(), a, r.name)
		}
		recs, err := readTxnLogs(r.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		for j := 1; j <= tr.WriteCount(); j++ {
			path := fmt.Sprintf("%s/k%d.%d", workloadParent, step+1, j)
			found := false
			for _, rec := range recs {
				found = found || rec.Path == path
			}
			if want := w >= j; found != want {
				t.Errorf("step %d %s: %s in the log of replica %d (%s): %v, want %v", step+1, tr.String(), path, a, r.name, found, want)
			}
		}
	}
}

// runChecked runs one schedule like runSchedule, checking after every step what the step must
// have done: a divergence's writes on exactly the right disks, every action timestamped, and
// the recorded actions matching the transition.
func runChecked(t *testing.T, sc schedules.Schedule, ops, n int, config string) outcome {
	t.Helper()
	spec := testSpec(t, ops, n, sc.ID, config)
	p := startCluster(t, spec)
	ctx := context.Background()
	var out outcome
	for i, tr := range sc.Steps {
		online := p.c.state.Online()
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: tr.String()})
		out.reports = append(out.reports, rep)
		if err != nil {
			t.Fatalf("schedule %s %s: step %d %s: %v\nactions:%s", sc.ID, schedules.Body(sc.Steps), i+1, tr.String(), err, actionsText(rep))
		}
		count := func(prefix string) int {
			k := 0
			for _, a := range rep.Actions {
				if a.Time.IsZero() {
					t.Errorf("step %d: action %q has no time", i+1, a.What)
				}
				if strings.HasPrefix(a.What, prefix) {
					k++
				}
			}
			return k
		}
		switch tr.Kind {
		case aem.Divergence:
			checkDivergence(t, p, i, tr)
			if got := count("SIGKILL "); got != online {
				t.Errorf("step %d %s: %d SIGKILLs for %d online replicas:%s", i+1, tr.String(), got, online, actionsText(rep))
			}
			if got := count("create "); got != tr.WriteCount() {
				t.Errorf("step %d %s: %d creates for %d writes:%s", i+1, tr.String(), got, tr.WriteCount(), actionsText(rep))
			}
		case aem.Convergence:
			if got := count("start "); got != len(tr.Group) {
				t.Errorf("step %d %s: %d starts:%s", i+1, tr.String(), got, actionsText(rep))
			}
		}
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatalf("schedule %s: read: %v", sc.ID, err)
	}
	for a, r := range snap.Replicas {
		for k, v := range r.Data {
			if !strings.HasPrefix(v, sc.ID+":") {
				t.Errorf("replica %d: %s = %q is not a value of schedule %s", a, k, v, sc.ID)
			}
		}
	}
	out.snap = snap
	out.differ, out.why = compare(snap)
	return out
}

// hasMinorityWrite tells whether a schedule has a write that reaches fewer than a quorum.
func hasMinorityWrite(sc schedules.Schedule, n int) bool {
	for _, tr := range sc.Steps {
		if tr.Kind != aem.Divergence {
			continue
		}
		for j := 1; j <= tr.WriteCount(); j++ {
			k := 0
			for _, w := range tr.Writes {
				if w >= j {
					k++
				}
			}
			if k < n/2+1 {
				return true
			}
		}
	}
	return false
}

// runVerdicts runs schedules and reports each one's verdict. Q/C/Z's schedules on ZooKeeper
// 3.8 are expected to converge: a schedule whose replicas differ fails the test, with the data,
// so that it can be told from a realisation error.
func runVerdicts(t *testing.T, scs []schedules.Schedule, ops, n int) {
	t.Helper()
	var passed, failed []string
	for _, sc := range scs {
		t.Run(sc.ID, func(t *testing.T) {
			out := runChecked(t, sc, ops, n, "")
			verdict := "converged"
			if out.differ {
				verdict = "DIFFER: " + out.why
				failed = append(failed, sc.ID)
				t.Errorf("schedule %s %s: replicas differ: %s", sc.ID, schedules.Body(sc.Steps), out.why)
			} else {
				passed = append(passed, sc.ID)
			}
			t.Logf("%s %s: %s %s", sc.ID, schedules.Body(sc.Steps), verdict, dataText(out.snap.Replicas[0].Data))
		})
	}
	t.Logf("%d schedules: %d converged, %d differ %v", len(scs), len(passed), len(failed), failed)
}

func TestQCZOps1(t *testing.T) {
	scs := qczSchedules(t, 1, 3)
	if len(scs) != 6 {
		t.Fatalf("%d schedules, want 6", len(scs))
	}
	runVerdicts(t, scs, 1, 3)
}

// TestQCZOps2Sample runs every eighth of the 80 schedules of ops=2: ten, spread over the
// canonical order, among them schedules with minority writes.
func TestQCZOps2Sample(t *testing.T) {
	all := qczSchedules(t, 2, 3)
	var sample []schedules.Schedule
	minority := 0
	for i := 0; i < len(all); i += 8 {
		sample = append(sample, all[i])
		if hasMinorityWrite(all[i], 3) {
			minority++
		}
	}
	if len(sample) != 10 || minority == 0 {
		t.Fatalf("sample of %d schedules with %d minority writers; want 10 with some", len(sample), minority)
	}
	runVerdicts(t, sample, 2, 3)
}

// TestQCZMinorityFollower runs the ops=1 schedules of four replicas whose write reaches two of
// them, the leader and a follower: a minority that includes a follower, whose log must hold the
// write too.
func TestQCZMinorityFollower(t *testing.T) {
	var scs []schedules.Schedule
	for _, sc := range qczSchedules(t, 1, 4) {
		if sc.Steps[0].String() == "D[0,0,1,1]" {
			scs = append(scs, sc)
		}
	}
	if len(scs) != 3 {
		t.Fatalf("%d schedules start with D[0,0,1,1], want 3", len(scs))
	}
	runVerdicts(t, scs, 1, 4)
}

// TestBreakRealisation: the testing-only knob must make the replicas really differ, and the one
// that differs is the replica brought back standalone.
func TestBreakRealisation(t *testing.T) {
	var sc schedules.Schedule
	for _, s := range qczSchedules(t, 1, 3) {
		if string(schedules.Body(s.Steps)) == "D[0,0,1] C[0,1] C[2]" {
			sc = s
		}
	}
	if sc.ID == "" {
		t.Fatal("schedule D[0,0,1] C[0,1] C[2] not generated")
	}
	out := runChecked(t, sc, 1, 3, `break_realisation = "standalone-replica"`)
	if !out.differ {
		t.Fatalf("replicas agree despite break_realisation: %+v", out.snap)
	}
	last := out.reports[len(out.reports)-1]
	if !strings.Contains(actionsText(last), "standalone") {
		t.Errorf("last step started no standalone server:%s", actionsText(last))
	}
	// Replica 2 alone had the minority write; it keeps it, the ensemble of 0 and 1 never had it.
	r := out.snap.Replicas
	if len(r[2].Data) != 1 || len(r[0].Data) != 0 || len(r[1].Data) != 0 {
		t.Errorf("data: 0 %s, 1 %s, 2 %s; want only replica 2 holding k1.1", dataText(r[0].Data), dataText(r[1].Data), dataText(r[2].Data))
	}
	t.Logf("break_realisation: %s", out.why)
}
