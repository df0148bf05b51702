package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
)

// TestPowerLoss runs S/PL/P's whole campaign at ops 1 on two servers, every failure a power
// loss of the data directory on the default disk model: PostgreSQL syncs its WAL before a
// commit returns and before a standby's receiver reports it flushed, and every schedule must
// pass, with no harness error.
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "postgres")
	recs := plugintest.Campaign(t, bin, "pgp", plugintest.Params{Ops: 1, Replicas: 2}, "", 2)
	plugintest.CheckPowerLoss(t, recs, false)
	for _, r := range recs {
		if r.Verdict != oracle.Pass {
			t.Errorf("schedule %s: %s %s: %s", r.ID, r.Verdict, r.Class, r.Detail)
		}
	}
}
