package results

import (
	"slices"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
)

func TestSignature(t *testing.T) {
	mark := func(replica int, what oracle.MarkKind, written string) oracle.Mark {
		return oracle.Mark{Replica: replica, Key: "k", What: what, Written: written}
	}
	synced := func(step int, syncs ...string) []StepObservations {
		so := StepObservations{Step: step}
		for i, s := range syncs {
			so.Replicas = append(so.Replicas, cem.Observation{Replica: i, Fields: map[string]string{cem.ObserveSync: s}})
		}
		return []StepObservations{so}
	}
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{"pass", Record{Verdict: oracle.Pass}, "pass"},
		{"a minority write kept, the sync of its replica alone",
			Record{Verdict: oracle.Fail, Class: oracle.Diverged, Step: 4,
				Difference:   []oracle.Mark{mark(2, oracle.HoldsUnacked, "the last divergence")},
				Observations: synced(4, "DIFF", "DIFF", "TRUNC")},
			"fail (divergence): holds a write never acknowledged of the last divergence; sync TRUNC"},
		{"the nearest write of each kind",
			Record{Verdict: oracle.Fail, Class: oracle.LostWrite,
				Difference: []oracle.Mark{mark(0, oracle.LacksAcked, "an earlier divergence"), mark(1, oracle.LacksAcked, "the last divergence"),
					mark(1, oracle.HoldsOlder, "an earlier divergence")},
				Observations: synced(3, "SST,IST", "IST")},
			"fail (lost-write): holds an earlier value than the acknowledged one of an earlier divergence; lacks an acknowledged write of the last divergence; sync IST,SST"},
		{"an exit: its log lines without numbers",
			Record{Verdict: oracle.Fail, Class: oracle.Unrecoverable, Step: 3,
				Detail: "after step 3: a server exited: replica 1: zookeeper-1 exited on its own (exit status 1) during step 3; its log says: 2026-11-26 20:27:45,497 [myid:2] - ERROR Unable to load database on disk /tmp/modulo-work-e682a6fa678f65ac/w1/zk-1/data | 0x200000001 from 127.0.0.1:2888"},
			"fail (unrecoverable): a server exited: replica N: zookeeper-N exited on its own (exit status N) during step N; its log says: [myid:N] - ERROR Unable to load database on disk /…/data | 0xN from ADDR"},
		{"an exit: a log line repeated counts once",
			Record{Verdict: oracle.Fail, Class: oracle.Unrecoverable, Step: 4,
				Detail: "after step 4: a server exited: replica 0: postgres-0 exited on its own (exit status 1) during step 4; its log says: 2026-11-28 02:29:10.588 UTC [1034] FATAL:  the database system is starting up | 2026-11-28 02:29:10.614 UTC [1036] FATAL:  the database system is starting up | 2026-11-28 02:29:10.621 UTC [1030] FATAL:  requested timeline 3 is not a child of this server's history"},
			"fail (unrecoverable): a server exited: replica N: postgres-N exited on its own (exit status N) during step N; its log says: FATAL:  the database system is starting up | FATAL:  requested timeline N is not a child of this server's history"},
		{"an incomplete step: not what its last probe saw",
			Record{Verdict: oracle.Incomplete, Detail: "step 6 C[0,1]<1,-,->: not reached before the deadline: postgres-1 to serve (last seen: psql: signal: killed (no output))"},
			"incomplete: at a convergence: not reached before the deadline: postgres-N to serve"},
		{"an incomplete step: its kind, not its number",
			Record{Verdict: oracle.Incomplete, Detail: "step 3 C[0,1]<1,->: not reached before the deadline: nats-2 current"},
			"incomplete: at a convergence: not reached before the deadline: nats-N current"},
		{"a record from before differences were kept: its class, and its detail",
			Record{Verdict: oracle.Fail, Detail: `1 key differs: k1.1 (r0="0123456789abcdef:k1.1" r1=<missing>)`},
			`fail (divergence): N key differs: k1.N (r0="ID:k1.N" r1=<missing>)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Signature(tt.r); got != tt.want {
				t.Errorf("Signature =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestGroups: schedules group by signature, the largest group first; a schedule restored from
// another's saved prefix counts as that run, through a chain of restores; the shortest is the
// fewest steps; replays sum, the runs that followed a course apart from those of replays
// that followed none.
func TestGroups(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	lost := []oracle.Mark{{Replica: 1, Key: "k1.1", What: oracle.LacksAcked, Written: "the last divergence"}}
	rec := func(id string, v oracle.Verdict, steps int, at int, from string) Record {
		r := Record{ID: id, Verdict: v, End: t0.Add(time.Duration(at) * time.Minute), StepsMS: make([]float64, steps)}
		if v == oracle.Fail {
			r.Class, r.Difference = oracle.LostWrite, lost
		} else if v != oracle.Pass {
			r.Detail = "step 2 C[0,1]: not reached before the deadline: replica 1 in sync"
		}
		if from != "" {
			r.Restored = &Restored{Steps: 1, From: from}
		}
		return r
	}
	s := &Summary{Dir: t.TempDir(), Latest: []Record{
		rec("a", oracle.Incomplete, 4, 1, ""),
		rec("b", oracle.Fail, 4, 3, ""),
		rec("c", oracle.Pass, 4, 2, ""),
		rec("d", oracle.Fail, 3, 4, "b"),
		rec("e", oracle.Fail, 5, 5, "d"),
		rec("f", oracle.Fail, 5, 2, ""),
	}, Reproductions: map[string]Reproduction{
		"b": {ID: "b", By: "replay", Repeat: 5, Reproduced: 4, Made: 20},
		"d": {ID: "d", By: "replay", Repeat: 3, Reproduced: 3},
		"f": {ID: "f", By: "shrink", Repeat: 3, Reproduced: 3},
	}}
	got := s.Groups()
	if len(got) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(got), got)
	}
	g := got[0]
	if !slices.Equal(g.IDs, []string{"b", "d", "e", "f"}) || g.Runs != 2 || !g.First.Equal(t0.Add(2*time.Minute)) ||
		g.Shortest != "d" || g.ShortestSteps != 3 || g.Rate() != "7 of 8 runs (2 schedules replayed; 5 of 20 runs followed the recorded course)" {
		t.Errorf("the fails' group: %+v, rate %q", g, g.Rate())
	}
	if g := got[1]; !slices.Equal(g.IDs, []string{"a"}) || g.Runs != 1 || g.Rate() != "-" ||
		g.Signature != "incomplete: at a convergence: not reached before the deadline: replica N in sync" {
		t.Errorf("the incomplete's group: %+v", g)
	}
}

// TestReproductionFlaky: a non-pass that reproduced in none of its runs is flaky, unless every
// run ended in an error, which says nothing of the system.
func TestReproductionFlaky(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    Reproduction
		want bool
	}{
		{"reproduced", Reproduction{Want: oracle.Fail, Repeat: 3, Reproduced: 1, Verdicts: map[oracle.Verdict]int{oracle.Fail: 1, oracle.Pass: 2}}, false},
		{"passed every time", Reproduction{Want: oracle.Fail, Repeat: 2, Verdicts: map[oracle.Verdict]int{oracle.Pass: 2}}, true},
		{"an error and a pass", Reproduction{Want: oracle.Fail, Repeat: 2, Verdicts: map[oracle.Verdict]int{oracle.Error: 1, oracle.Pass: 1}}, true},
		{"errors alone", Reproduction{Want: oracle.Fail, Repeat: 3, Verdicts: map[oracle.Verdict]int{oracle.Error: 3}}, false},
		{"a pass replayed", Reproduction{Want: oracle.Pass, Repeat: 1, Verdicts: map[oracle.Verdict]int{oracle.Fail: 1}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Flaky(); got != tt.want {
				t.Errorf("Flaky = %v, want %v", got, tt.want)
			}
		})
	}
}
