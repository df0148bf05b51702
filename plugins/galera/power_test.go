package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestSSTNotDurable replays the schedule of testdata/sst-not-durable.txt, every power loss
// taking every page not yet synced (plugintest.PagesLost: no tear): the node that joined by
// rsync SST at step 2 loses power at step 3 with the transfer's files unsynced, its table
// among them, and after step 4 it serves as Synced without k1.1, which another node holds.
func TestSSTNotDurable(t *testing.T) {
	plugintest.Servers(t)
	const drm = "qpg"
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "sst-not-durable.txt"), drm, params)
	p := kit.New(about, &system{})
	_, reports := plugintest.ReplayKept(t, p, []byte(plugintest.PagesLost), drm, params, id, steps[:4])
	var dropped []string
	for _, a := range reports[2].Actions {
		if a.Replica == 0 && strings.Contains(a.What, "power loss") {
			dropped = append(dropped, a.What)
		}
	}
	if len(dropped) != 1 || !strings.Contains(dropped[0], "modulo/kv.ibd: lost every one of its") {
		t.Fatalf("step 3 %s: replica 0's power loss did not take back the transferred table's unsynced pages: %q", steps[2], dropped)
	}
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Replicas 0 and 1 are online after step 4; replica 0 took the SST.
	want := id + ":k1.1"
	if got := snap.Replicas[1].Data["k1.1"]; got != want {
		t.Fatalf("after step 4 %s: replica 1 holds k1.1 = %q, want %q", steps[3], got, want)
	}
	if got, ok := snap.Replicas[0].Data["k1.1"]; ok || snap.Replicas[0].Err != "" {
		t.Fatalf("after step 4 %s: replica 0, Synced after its SST and its power loss, holds k1.1 = %q (read error %q); want it missing", steps[3], got, snap.Replicas[0].Err)
	}
	t.Logf("after step 4 %s: k1.1 on replica 1, missing on replica 0; step 3: %.300s", steps[3], dropped[0])
}
