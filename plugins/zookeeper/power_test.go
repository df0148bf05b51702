package main

import (
	"regexp"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// TestPowerLoss runs Q/P/Z's whole campaign at ops 2, every crash a power loss: with
// ZooKeeper's fsync of its log before an acknowledgement (forceSync=yes), no acknowledged
// write may be lost; without it (forceSync=no, ZooKeeper's documented trade), a whole-cluster
// power loss must lose some, and the verdict must name the writes and the replicas: the proof
// that the fault bites.
func TestPowerLoss(t *testing.T) {
	bin := plugintest.BuildModulo(t, "zookeeper")
	for _, tt := range []struct {
		name, config string
		lose         bool
	}{
		{"forceSync=yes", "", false},
		{"forceSync=no", "[zookeeper]\nforce_sync = false\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs := plugintest.Campaign(t, bin, "qpz", plugintest.Params{Ops: 2, Replicas: 3}, tt.config, 2)
			checkPowerLoss(t, recs, tt.lose)
		})
	}
}

// lostWriteDetail is how the oracle names an acknowledged write and the replica that lost it.
var lostWriteDetail = regexp.MustCompile(`k\d+\.\d+.*replica \d|replica \d.*k\d+\.\d+`)

// checkPowerLoss checks a power-loss campaign's records: no harness error; lost writes, each
// named with its replica, when lose, and none otherwise.
func checkPowerLoss(t *testing.T, recs []results.Record, lose bool) {
	t.Helper()
	counts := map[string]int{}
	lost := 0
	for _, r := range recs {
		counts[string(r.Verdict)+" "+string(r.Class)]++
		switch {
		case r.Verdict == oracle.Error:
			t.Errorf("schedule %s: error: %s", r.ID, r.Detail)
		case r.Class == oracle.LostWrite:
			lost++
			if !lose {
				t.Errorf("schedule %s lost an acknowledged write: %s", r.ID, r.Detail)
			} else if !lostWriteDetail.MatchString(r.Detail) {
				t.Errorf("schedule %s: the lost write's verdict names no write and replica: %s", r.ID, r.Detail)
			}
		}
	}
	t.Logf("%d schedules: %v", len(recs), counts)
	if lose && lost == 0 {
		t.Errorf("no schedule of %d lost an acknowledged write: the power losses dropped nothing that mattered", len(recs))
	}
}
