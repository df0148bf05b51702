package main

import (
	"os"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestByHand runs testdata/stale-leader.sh, the hand reproduction of
// docs/bugs/patroni-stale-leader-reuses-timeline.md: one etcd and three Patroni nodes, kill -9,
// curl and psql, no modulo. It must exit 1, the failure shown: the crashed timeline-1 leader
// promoted onto timeline ID 2 a second time, with another history than the real timeline 2's.
func TestByHand(t *testing.T) {
	plugintest.Servers(t)
	if os.Geteuid() != 0 {
		t.Skip("the script runs Patroni and PostgreSQL as the postgres user, which needs root")
	}
	plugintest.RunScript(t, "stale-leader.sh", 30, "promoted onto timeline ID 2 again")
}
