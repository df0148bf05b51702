package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/schedules"
)

// TestAckBeforeFsync replays the schedule of testdata/ack-before-fsync.txt on nats-server
// 2.12.2 (scripts/setup builds it), every crash a power loss that takes every unsynced page
// (plugintest.PagesLost: no tear is needed): with JetStream's default sync_interval the write
// k3.1, acknowledged at step 3, is gone from every server at the end;
// with sync_interval: always, which fsyncs each write before its acknowledgement, every server
// holds it.
func TestAckBeforeFsync(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "ack-before-fsync.txt"), "qpn", params)
	server := plugintest.CachedServer(t, filepath.Join("nats-server", "2.12.2", "nats-server"))
	for _, tt := range []struct {
		name, config string
		lost         bool
	}{
		{"default", "", true},
		{"always", "sync_interval = \"always\"\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := kit.New(about, &system{})
			config := []byte(fmt.Sprintf("server = %q\n", server) + plugintest.PagesLost + tt.config)
			_, reports := plugintest.ReplayKept(t, p, config, "qpn", params, id, steps)
			acked := false
			for _, w := range reports[2].Writes {
				acked = acked || w.Key == "k3.1" && w.Acked
			}
			if !acked {
				t.Fatalf("step 3 %s: k3.1 was not acknowledged: %v", steps[2], reports[2].Writes)
			}
			snap, err := p.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var holders []int
			for i, r := range snap.Replicas {
				if r.Data["k3.1"] == id+":k3.1" {
					holders = append(holders, i)
				}
			}
			switch {
			case tt.lost && len(holders) > 0:
				t.Fatalf("sync_interval %s: replicas %v hold the acknowledged k3.1, want it lost by every one", tt.name, holders)
			case !tt.lost && len(holders) != len(snap.Replicas):
				t.Fatalf("sync_interval %s: only replicas %v hold the acknowledged k3.1, want every one", tt.name, holders)
			}
			var dropped []string
			for _, a := range reports[2].Actions {
				if strings.Contains(a.What, "power loss") && strings.Contains(a.What, "streams/modulo/msgs/") {
					dropped = append(dropped, a.What)
				}
			}
			if tt.lost && len(dropped) < 2 {
				t.Errorf("step 3's power losses dropped unsynced bytes of the stream's blocks on %d servers, want both that acknowledged k3.1: %q", len(dropped), dropped)
			}
			t.Logf("sync_interval %s, after %s: k3.1 held by replicas %v; power losses of step 3 that touched the stream's blocks: %q", tt.name, schedules.Body(steps), holders, dropped)
		})
	}
}
