package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestPowerLoss runs Q/P/Z's whole campaign at ops 2, every crash a power loss: with
// ZooKeeper's fsync of its log before an acknowledgement (forceSync=yes), no acknowledged
// write may be lost; without it (forceSync=no, ZooKeeper's documented trade), a whole-cluster
// power loss must lose some, and the verdict must name the writes and the replicas: the proof
// that the fault bites (with no write torn: torn_writes = false, as in etcd's test).
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "zookeeper")
	for _, tt := range []struct {
		name, config string
		lose         bool
	}{
		{"forceSync=yes", "", false},
		{"forceSync=no", "[zookeeper]\nforce_sync = false\ntorn_writes = false\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs := plugintest.Campaign(t, bin, "qpz", plugintest.Params{Ops: 2, Replicas: 3}, tt.config, 2)
			plugintest.CheckPowerLoss(t, recs, tt.lose)
		})
	}
}
