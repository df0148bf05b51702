package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
)

// TestPowerLoss runs S/PL/R's whole campaign at ops 2 on two servers, every crash a power loss
// of the server's dir on the default disk model, twice. With appendfsync always Redis syncs its
// AOF before it answers a write, so no server may lose a key it held and every schedule must
// pass. With appendonly no, the control, a server keeps nothing but the snapshots the offline
// resyncs copied in, and the power losses must lose writes: if they did not, the power loss or
// its check would not be what it claims.
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "redis")
	params := plugintest.Params{Ops: 2, Replicas: 2}
	t.Run("appendfsync always", func(t *testing.T) {
		recs := plugintest.Campaign(t, bin, "splr", params, "[redis]\nappendfsync = \"always\"\n", 2)
		plugintest.CheckPowerLoss(t, recs, false)
		for _, r := range recs {
			if r.Verdict != oracle.Pass {
				t.Errorf("schedule %s: %s %s: %s", r.ID, r.Verdict, r.Class, r.Detail)
			}
		}
	})
	t.Run("appendonly no", func(t *testing.T) {
		plugintest.CheckPowerLoss(t, plugintest.Campaign(t, bin, "splr", params, "[redis]\nappendonly = false\n", 2), true)
	})
}
