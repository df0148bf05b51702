package main

import (
	"path/filepath"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// TestPowerLoss runs S/PL/MD's whole campaign at ops 1 on two servers, every failure a power
// loss of the data directory on the default disk model. The one schedule that fails is the
// replica ahead of its primary (testdata/replica-ahead.txt), which crashes give too: the
// power loss of a replica that took no write drops nothing MariaDB needs. No other schedule
// may fail, and none may end in a harness error.
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 1, Replicas: 2}
	_, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "replica-ahead.txt"), "mdl", params)
	ahead := schedules.ID("mdp", params, schedules.Body(steps)) // the kept schedule's steps in this campaign
	bin := plugintest.BuildModulo(t, "mariadb")
	recs := plugintest.Campaign(t, bin, "mdp", params, "", 2)
	plugintest.CheckPowerLoss(t, recs, false)
	for _, r := range recs {
		switch {
		case r.ID == ahead && (r.Verdict != oracle.Fail || r.Class != oracle.Diverged):
			t.Errorf("schedule %s, the replica ahead: %s %s, want fail (divergence)", r.ID, r.Verdict, r.Class)
		case r.ID != ahead && r.Verdict != oracle.Pass:
			t.Errorf("schedule %s: %s %s: %s", r.ID, r.Verdict, r.Class, r.Detail)
		}
	}
}
