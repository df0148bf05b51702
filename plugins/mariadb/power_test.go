package main

import (
	"path/filepath"
	"testing"

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
