package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// TestReplicaAhead replays the schedule of testdata/replica-ahead.txt on real servers: after
// step 2, replica 0 (which holds GTID 0-1-1) replicates from replica 1, whose binlog holds no
// GTID; replica 1's server serves it from 0-1-1 ("Start binlog_dump ... gtid('0-1-1')"), no
// refusal is recorded, and the replicas differ on k1.1 alone, held by replica 0 only.
func TestReplicaAhead(t *testing.T) {
	plugintest.Servers(t)
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "replica-ahead.txt"), "mdl", plugintest.Params{Ops: 1, Replicas: 2})
	p := kit.New(about, &system{})
	spec, reports := plugintest.ReplayKept(t, p, nil, "mdl", plugintest.Params{Ops: 1, Replicas: 2}, id, steps)
	var slavePos string
	for i, rep := range reports {
		for _, a := range rep.Actions {
			if strings.Contains(a.What, "refused") {
				t.Errorf("step %d: %s; MariaDB accepts this link", i+1, a.What)
			}
		}
		for _, o := range rep.Observations {
			if i == 1 && o.Replica == 0 {
				slavePos = o.Fields["slave_pos"]
			}
		}
	}
	if slavePos != "0-1-1" {
		t.Errorf("after step 2 replica 0's gtid_slave_pos is %q, want 0-1-1", slavePos)
	}
	log, err := os.ReadFile(filepath.Join(spec.Dir, "mariadb-1", "mariadb-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "using_gtid(1), gtid('0-1-1')") {
		t.Error("replica 1's server never logged serving replica 0 from GTID 0-1-1")
	}
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := oracle.Compare(snap)
	if d.Converged() || len(d.Keys) != 1 || d.Keys[0].Key != "k1.1" || snap.Replicas[1].Data["k1.1"] != "" {
		t.Fatalf("at the end: %s; want replica 0 alone to hold k1.1 (MariaDB's replica ahead of its primary)", d.Line())
	}
	t.Logf("after %s: %s", schedules.Body(steps), d.Line())
}

// TestCopyServesNothing replays the schedule of testdata/copy-serves-nothing.txt on real
// servers: replica 1, copied afresh from replica 0 at step 2 (its gtid_slave_pos 0-1-1, its
// binlog empty), serves replica 2, which never had write k1.1, from that empty binlog; no
// refusal is recorded, and replica 2 alone lacks k1.1 at the end.
func TestCopyServesNothing(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 1, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "copy-serves-nothing.txt"), "mdl", params)
	p := kit.New(about, &system{})
	_, reports := plugintest.ReplayKept(t, p, nil, "mdl", params, id, steps)
	for i, rep := range reports {
		for _, a := range rep.Actions {
			if strings.Contains(a.What, "refused") {
				t.Errorf("step %d: %s; MariaDB accepts this link", i+1, a.What)
			}
		}
	}
	for _, o := range reports[3].Observations {
		if o.Replica == 1 && (o.Fields[cem.ObservePosition] != "" || o.Fields["slave_pos"] != "0-1-1") {
			t.Errorf("after step 4 replica 1's binlog is at %q and its gtid_slave_pos %q, want an empty binlog and 0-1-1",
				o.Fields[cem.ObservePosition], o.Fields["slave_pos"])
		}
	}
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := oracle.Compare(snap)
	rs := snap.Replicas
	if d.Converged() || len(d.Keys) != 1 || d.Keys[0].Key != "k1.1" || rs[0].Data["k1.1"] == "" || rs[1].Data["k1.1"] == "" || rs[2].Data["k1.1"] != "" {
		t.Fatalf("at the end: %s; want replica 2 alone to lack k1.1 (MariaDB's copy that serves nothing)", d.Line())
	}
	t.Logf("after %s: %s", schedules.Body(steps), d.Line())
}
