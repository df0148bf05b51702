package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestByHand runs the hand reproductions of testdata, mariadbd and the mariadb client with no
// modulo (each sources testdata/cluster.sh): each exits 1 when it shows its failure, and prints
// the line that names it. They run at once: each mostly waits.
func TestByHand(t *testing.T) {
	plugintest.Servers(t)
	for _, tt := range []struct {
		script string
		want   []string
	}{
		// docs/bugs/galera-lost-under-flush0.md
		{"lost-under-flush0.sh", []string{"LOST: no node holds the acknowledged k"}},
		// docs/bugs/galera-ist-checksum-hang.md
		{"ist-checksum-hang.sh", []string{"Receiving IST failed, node restart required", "HUNG: n2 is still running 60 s after its IST failed"}},
		// docs/bugs/galera-sst-not-durable.md
		{"sst-not-synced.sh", []string{"rsync SST completed on joiner, Synced, holds k1: 1", "NOT-SYNCED: n1 serves as Synced"}},
	} {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			plugintest.RunScript(t, tt.script, 12, tt.want...)
		})
	}
}
