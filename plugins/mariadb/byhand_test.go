package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestByHand runs the hand reproductions of testdata, MariaDB's own programs and the mariadb
// client with no modulo (each sources testdata/servers.sh): each exits 1 when it shows its
// failure, and prints the line that names it.
func TestByHand(t *testing.T) {
	plugintest.Servers(t)
	for _, tt := range []struct {
		script string
		want   []string
	}{
		// docs/bugs/mariadb-replica-ahead.md
		{"replica-ahead.sh", []string{"gtid('0-1-1')", "DIVERGED: a keeps k1.1, which b, its primary, never had"}},
		// docs/bugs/mariadb-copy-serves-nothing.md
		{"copy-serves-nothing.sh", []string{"Slave_IO_Running: Yes", "DIVERGED: c, in sync with b by MariaDB's word, lacks k1.1"}},
		// docs/bugs/mariadb-empty-master-info.md
		{"empty-master-info.sh", []string{"Error reading master configuration", "ERROR 1201", "REFUSED: b cannot replicate again"}},
	} {
		t.Run(tt.script, func(t *testing.T) {
			plugintest.RunScript(t, tt.script, 3, tt.want...)
		})
	}
}
