package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/schedules"
)

// TestPowerLoss runs Q/P/Z's whole campaign at ops 2, every crash a power loss: with
// ZooKeeper's fsync of its log before an acknowledgement (forceSync=yes), no acknowledged
// write may be lost; without it (forceSync=no, ZooKeeper's documented trade), a whole-cluster
// power loss must lose some, and the verdict must name the writes and the replicas: the proof
// that the fault bites (with no write torn: disk_keeps = "none", as in etcd's test).
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "zookeeper")
	for _, tt := range []struct {
		name, config string
		lose         bool
	}{
		{"forceSync=yes", "", false},
		{"forceSync=no", "[zookeeper]\nforce_sync = false\ndisk_keeps = \"none\"\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs := plugintest.Campaign(t, bin, "qpz", plugintest.Params{Ops: 2, Replicas: 3}, tt.config, 2)
			plugintest.CheckPowerLoss(t, recs, tt.lose)
		})
	}
}

// TestUnsyncedFirstSnapshot replays the schedule of testdata/unsynced-first-snapshot.txt on
// Debian's 3.8.0 and on 3.9.5 with what the ensemble's first start wrote left to the power loss
// (durable_start = false) and a power loss that takes every unsynced page (plugintest.PagesLost:
// no tear is needed; under the prefix of pages the kit draws by default, replica 2 keeps
// snapshot.0's page in this schedule): at step 2 replica 2, whose log holds the write k1.1 and
// whose snapshot.0 was never fsynced, exits at its restart ("No snapshot found, but there are log
// entries"), and the step says it cannot recover.
func TestUnsyncedFirstSnapshot(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 1, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "unsynced-first-snapshot.txt"), "qpz", params)
	for _, v := range []string{"debian", "3.9.5"} {
		t.Run(v, func(t *testing.T) {
			config := []byte("durable_start = false\n" + plugintest.PagesLost)
			if v != "debian" {
				config = append(config, jarDirConfig(builtJarDir(t, v))...)
			}
			p := kit.New(about, &system{})
			_, reports := plugintest.ReplayKept(t, p, config, "qpz", params, id, steps[:2])
			var alarms []string
			for _, a := range reports[1].Alarms {
				alarms = append(alarms, a.What)
				if a.Replica == 2 && a.Unrecoverable && strings.Contains(a.What, "No snapshot found, but there are log entries") {
					t.Logf("ZooKeeper %s, after %s: replica 2: %s", v, schedules.Body(steps[:2]), a.What)
					return
				}
			}
			t.Fatalf("after step 2 %s, alarms %q; want replica 2 unrecoverable: \"No snapshot found, but there are log entries\"", steps[1], alarms)
		})
	}
}
