package main

import (
	"strconv"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestPowerLoss runs Q/P/E's whole campaign at ops 2, every crash a power loss: etcd with its
// defaults (Debian's 3.4) fsyncs its WAL before it acknowledges, and must lose no
// acknowledged write; etcd 3.5 with --unsafe-no-fsync, which etcd documents as unsafe, must
// lose some, the verdicts naming the writes and the replicas: the proof that the fault bites.
// That campaign drops unsynced data without tearing a write (disk_keeps = "none"): a torn WAL
// record makes etcd refuse to start (unrecoverable), which hides what was lost.
func TestPowerLoss(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.BuildModulo(t, "etcd")
	unsafe := plugintest.CachedServer(t, "etcd/3.5.21/etcd")
	for _, tt := range []struct {
		name, config string
		lose         bool
	}{
		{"defaults", "", false},
		{"unsafe-no-fsync", "[etcd]\nserver = " + strconv.Quote(unsafe) + "\nflags = [\"--unsafe-no-fsync\"]\ndisk_keeps = \"none\"\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs := plugintest.Campaign(t, bin, "qpe", plugintest.Params{Ops: 2, Replicas: 3}, tt.config, 2)
			plugintest.CheckPowerLoss(t, recs, tt.lose)
		})
	}
}
