package main

import (
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
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

// TestCrashOrPowerLoss runs S/CL/R with each failing server crashed or losing power
// (sclr+power-loss) at ops 1 on two servers: its 20 schedules hold S/CL/R's 8, S/PL/R's 8 and 4
// that crash one server and cut the other's power. With appendfsync always every one passes;
// with appendonly no the power losses must lose writes, a schedule that mixes the kinds among
// them, so that each kind is seen realised.
func TestCrashOrPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "redis")
	params := plugintest.Params{Ops: 1, Replicas: 2}
	recs := plugintest.Campaign(t, bin, "sclr+power-loss", params, "[redis]\nappendfsync = \"always\"\n", 2)
	if len(recs) != 20 {
		t.Errorf("%d schedules ran, want sclr+power-loss's 20 at ops 1 on two servers", len(recs))
	}
	plugintest.CheckPowerLoss(t, recs, false)
	for _, r := range recs {
		if r.Verdict != oracle.Pass {
			t.Errorf("appendfsync always: schedule %s: %s %s: %s", r.ID, r.Verdict, r.Class, r.Detail)
		}
	}
	// The primary loses power with the write, its replica crashed before it: the mixed schedule
	// must lose the write.
	mixed := schedules.ID("sclr+power-loss", params, []byte("D[1,0](l,c) C[0,1]<-,0>"))
	recs = plugintest.Campaign(t, bin, "sclr+power-loss", params, "[redis]\nappendonly = false\n", 2)
	plugintest.CheckPowerLoss(t, recs, true)
	if i := slices.IndexFunc(recs, func(r results.Record) bool { return r.ID == mixed }); i < 0 || recs[i].Class != oracle.LostWrite {
		t.Errorf("appendonly no: schedule %s (D[1,0](l,c) C[0,1]<-,0>) did not lose its write", mixed)
	}
}
