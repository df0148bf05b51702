package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
)

// TestPowerLoss runs Q/P/P's whole campaign at ops 1 on three nodes under synchronous_mode,
// every crash a power loss of the node's data directory on the default disk model: PostgreSQL
// syncs its WAL before a commit returns and a synchronous standby before it reports a flush,
// Patroni promotes only the standby it recorded, and its initdb and base backups sync. Every
// schedule must pass with no harness error and no acknowledged write lost. (Asynchronous, one
// schedule of six loses the write the old leader alone acknowledged, as Patroni documents.)
// A step may take 150 s: two clusters beside another package's tests bootstrap Patroni (a synced
// initdb, two base backups) on two cores. With the default 30 s the test's two runs here, under
// loads of 8 to 12, left 3 and 6 of the 6 schedules incomplete; with 60 s, CI's run left one
// and a run here beside ZooKeeper's tests four, each the cluster's start ("caught up ... names
// no synchronous standby", a standby still in its base backup). A longer deadline costs only a
// slow start.
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "patroni")
	config := "step_timeout = \"150s\"\n[patroni]\nsynchronous_mode = true\n"
	recs := plugintest.Campaign(t, bin, "qpp", plugintest.Params{Ops: 1, Replicas: 3}, config, 2)
	plugintest.CheckPowerLoss(t, recs, false)
	for _, r := range recs {
		if r.Verdict != oracle.Pass {
			t.Errorf("schedule %s: %s %s: %s", r.ID, r.Verdict, r.Class, r.Detail)
		}
	}
}
