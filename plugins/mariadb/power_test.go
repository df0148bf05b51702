package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// TestPowerLoss runs S/PL/MD's whole campaign at ops 1 on two servers, every failure a power
// loss of the data directory on the default disk model, with sync_binlog = 1, where MariaDB
// promises that a commit survives a power loss: no server may lose a row it held (at
// MariaDB's default, sync_binlog = 0, the crash recovery rolls back a transaction whose binary
// log event the disk lost, docs/campaigns.md). The schedules that fail are the replica ahead of
// its primary (testdata/replica-ahead.txt), as crashes give it, and its course through a power
// loss of both servers: the server that held the write keeps it and follows the one that never
// had it. No other schedule may fail, and none may end in a harness error.
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 1, Replicas: 2}
	_, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "replica-ahead.txt"), "mdl", params)
	ahead := map[string]bool{
		schedules.ID("mdp", params, schedules.Body(steps)):             true, // the kept schedule's steps in this campaign
		schedules.ID("mdp", params, []byte("D[1,0](c,c) C[0,1]<1,->")): true,
	}
	bin := plugintest.BuildModulo(t, "mariadb")
	recs := plugintest.Campaign(t, bin, "mdp", params, "[mariadb]\nsync_binlog = 1\n", 2)
	plugintest.CheckPowerLoss(t, recs, false)
	for _, r := range recs {
		switch {
		case ahead[r.ID] && (r.Verdict != oracle.Fail || r.Class != oracle.Diverged):
			t.Errorf("schedule %s, the replica ahead: %s %s, want fail (divergence)", r.ID, r.Verdict, r.Class)
		case !ahead[r.ID] && r.Verdict != oracle.Pass:
			t.Errorf("schedule %s: %s %s: %s", r.ID, r.Verdict, r.Class, r.Detail)
		}
	}
}

// TestEmptyMasterInfo replays the schedule of testdata/empty-master-info.txt on real servers,
// MariaDB's crash-safe replica settings with sync_master_info and sync_relay_log_info at
// MariaDB's default (10,000) and at 1. At the default, replica 0's power loss at step 4 keeps
// none of its master.info, and at step 5 MariaDB refuses CHANGE MASTER TO (ERROR 1201): the
// step ends with an alarm of class broken-replication on replica 0. At 1, no step raises an
// alarm.
func TestEmptyMasterInfo(t *testing.T) {
	params := plugintest.Params{Ops: 2, Replicas: 2}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "empty-master-info.txt"), "mdp", params)
	for _, tt := range []struct {
		name, config string
		broken       bool
	}{
		{"sync_master_info 10000", "sync_binlog = 1\nrelay_log_recovery = true\n", true},
		{"sync_master_info 1", "sync_binlog = 1\nrelay_log_recovery = true\nsync_master_info = 1\nsync_relay_log_info = 1\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, reports := plugintest.ReplayKept(t, kit.New(about, &system{}), []byte(tt.config), "mdp", params, id, steps)
			var alarms []cem.Alarm
			for _, rep := range reports {
				alarms = append(alarms, rep.Alarms...)
			}
			class, line := oracle.Alarms(alarms)
			if !tt.broken {
				if len(alarms) > 0 {
					t.Errorf("alarms %v, want none", alarms)
				}
				return
			}
			if len(reports[4].Alarms) != 1 || class != oracle.BrokenReplication || alarms[0].Replica != 0 || !strings.Contains(line, "ERROR 1201") {
				t.Errorf("alarms %v (step 5: %v): class %s, %q; want one at step 5, of class %s on replica 0, naming ERROR 1201",
					alarms, reports[4].Alarms, class, line, oracle.BrokenReplication)
			}
		})
	}
}
