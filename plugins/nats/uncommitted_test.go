package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// TestUncommittedApplied replays the schedule of testdata/uncommitted-applied.txt on real
// servers: the leader of step 1, which alone logged write k1.1, rejoins at step 5 and never
// holds the acknowledged k3.1 that the others hold; as a member of the stream's group it logs
// that it truncated and repaired its Raft log, and holds k1.1 at stream sequence 1 where the
// others hold k3.1, with the same stream state as theirs.
func TestUncommittedApplied(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "uncommitted-applied.txt"), "qcn", params)
	p := kit.New(about, &system{})
	spec, reports := plugintest.ReplayKept(t, p, nil, "qcn", params, id, steps)
	var leader string // the server of abstract replica 2, which led at step 1
	for _, a := range reports[0].Actions {
		if name, ok := strings.CutSuffix(a.What, `: write k1.1 = "`+id+`:k1.1" sent (1 of 3 replicas receive it: it cannot commit)`); ok && a.Replica == 2 {
			leader = name
		}
	}
	if leader == "" {
		t.Fatalf("step 1 did not send k1.1 to abstract replica 2 alone: %v", reports[0].Actions)
	}
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := oracle.Compare(snap)
	rs := snap.Replicas
	acked := id + ":k3.1"
	if d.Converged() || rs[0].Data["k3.1"] != acked || rs[1].Data["k3.1"] != acked || rs[2].Data["k3.1"] != "" {
		t.Fatalf("at the end: %s; want the old leader (replica 2) without the acknowledged k3.1, which replicas 0 and 1 hold", d.Line())
	}
	// Now and then the old leader's meta layer assigns it no Raft group for the stream it
	// recovers (NATS's liveness failure, which the plugin settles): it then serves the stream
	// alone, without k1.1 too, and the failure kept here cannot show.
	if role := lastRole(reports, 2); role == "outside the group" {
		t.Logf("the old leader ended outside the stream's Raft group (%s): not the failure kept here", d.Line())
		return
	}
	log, err := os.ReadFile(filepath.Join(spec.Dir, leader, leader+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Truncating and repairing WAL") {
		t.Errorf("%s, which rejoined at step 5, never logged that it repaired its Raft log", leader)
	}
	for i, r := range rs {
		want := acked
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

// lastRole is the role that abstract replica a was last observed in.
func lastRole(reports []cem.StepReport, a int) string {
	role := ""
	for _, rep := range reports {
		for _, o := range rep.Observations {
			if o.Replica == a {
				role = o.Fields[cem.ObserveRole]
			}
		}
	}
	return role
}

// TestUncommittedAppliedByHand builds and runs testdata/uncommitted-applied.go, the same failure
// by hand with three nats-server processes and nats.go, no modulo: it exits 1 and says that the
// old leader serves w1, which never committed, as sequence 1 where the others serve w2.
func TestUncommittedAppliedByHand(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, "./testdata/uncommitted-applied.go", "./testdata/cluster.go")
	cmd := exec.CommandContext(t.Context(), bin, "nats-server")
	cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(plugintest.FreePorts(t, 30)), "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("the reproduction ended with %v, want exit status 1 (diverged)", err)
	}
	if !regexp.MustCompile(`DIVERGED: n\d serves w1 as sequence 1, n\d and n\d serve w2`).Match(out) {
		t.Error("no line \"DIVERGED: <old leader> serves w1 as sequence 1, <the others> serve w2\" in its output")
	}
	t.Logf("uncommitted-applied.go\n%s", out)
}
