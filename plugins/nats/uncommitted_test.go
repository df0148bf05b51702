package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// TestUncommittedApplied replays the schedule of testdata/uncommitted-applied.txt on real
// servers: the leader of step 1, which alone logged write k1.1, rejoins at step 5, logs that it
// truncated and repaired its Raft log, and ends holding k1.1 at stream sequence 1 where the
// others hold the acknowledged k3.1, with the same stream state as theirs.
func TestUncommittedApplied(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nats-server")
	}
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "uncommitted-applied.txt"), "qcn", params)
	p := kit.New(about, &system{})
	spec, reports := plugintest.ReplayKept(t, p, "qcn", params, id, steps)
	var leader string // the server of abstract replica 2, which led at step 1
	for _, a := range reports[0].Actions {
		if name, ok := strings.CutSuffix(a.What, `: write k1.1 = "`+id+`:k1.1" sent (1 of 3 replicas receive it: it cannot commit)`); ok && a.Replica == 2 {
			leader = name
		}
	}
	if leader == "" {
		t.Fatalf("step 1 did not send k1.1 to abstract replica 2 alone: %v", reports[0].Actions)
	}
	log, err := os.ReadFile(filepath.Join(spec.Dir, leader, leader+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Truncating and repairing WAL") {
		t.Errorf("%s, which rejoined at step 5, never logged that it repaired its Raft log", leader)
	}
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := oracle.Compare(snap)
	rs := snap.Replicas
	for i, r := range rs {
		want := id + ":k3.1"
		if i == 2 {
			want = id + ":k1.1"
		}
		if r.Data["@1"] != want || r.Data["@stream"] != rs[0].Data["@stream"] {
			t.Errorf("replica %d holds %q at sequence 1 and stream state %q; want %q and replica 0's %q",
				i, r.Data["@1"], r.Data["@stream"], want, rs[0].Data["@stream"])
		}
	}
	if t.Failed() {
		t.Fatalf("at the end: %s", d.Line())
	}
	t.Logf("after %s: %s", schedules.Body(steps), d.Line())
}
