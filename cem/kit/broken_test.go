package kit

import (
	"slices"
	"testing"
)

// TestErrorLines: the lines that say why a server stopped come first, then lines that name an
// error, then the last lines.
func TestErrorLines(t *testing.T) {
	etcd := []string{
		`{"level":"info","msg":"failed to detect default host","error":"could not find default route"}`,
		`{"level":"info","msg":"starting"}`,
		`{"level":"fatal","msg":"discovery failed","error":"walpb: crc mismatch"}`,
	}
	for _, tt := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"a fatal line over an info line that names an error", etcd, etcd[2:]},
		{"a Java cause", []string{"INFO start", "ERROR [main] QuorumPeerMain - Unexpected exception", "Caused by: java.io.EOFException", "INFO exit"}, []string{"Caused by: java.io.EOFException"}},
		{"errors only", []string{"ok", "error: one", "ok", "error: two"}, []string{"error: one", "error: two"}},
		{"nothing that names an error", []string{"a", "b", "c", "d"}, []string{"b", "c", "d"}},
		{"InnoDB's recovery that fails (mariadbd --wsrep-recover)", []string{
			"2026-11-27 22:41:14 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=64172",
			"2026-11-27 22:41:14 0 [ERROR] InnoDB: Unable to apply log to corrupted page 3 in file ./modulo/kv.ibd",
			"2026-11-27 22:41:14 0 [Note] InnoDB: Set innodb_force_recovery=1 to ignore corrupted pages.",
			"2026-11-27 22:41:14 0 [ERROR] Unknown/unsupported storage engine: InnoDB",
			"2026-11-27 22:41:14 0 [ERROR] Aborting",
		}, []string{
			"2026-11-27 22:41:14 0 [ERROR] InnoDB: Unable to apply log to corrupted page 3 in file ./modulo/kv.ibd",
			"2026-11-27 22:41:14 0 [ERROR] Unknown/unsupported storage engine: InnoDB",
			"2026-11-27 22:41:14 0 [ERROR] Aborting",
		}},
		{"MariaDB's warnings after its error", []string{
			"2026-11-27 22:27:46 3 [ERROR] WSREP: sst_received failed: SST script passed bogus GTID: f6fe897d:8. Preceding view GTID: f6fe897d:9",
			"2026-11-27 22:27:48 2 [Note] WSREP: /usr/sbin/mariadbd: Terminated.",
			"2026-11-27 22:29:46 7 [Warning] Aborted connection 7 to db: 'unconnected' user: 'root' host: '10.217.17.1' (Got an error reading communication packets)",
		}, []string{"2026-11-27 22:27:46 3 [ERROR] WSREP: sst_received failed: SST script passed bogus GTID: f6fe897d:8. Preceding view GTID: f6fe897d:9"}},
	} {
		if got := ErrorLines(tt.lines, 3); !slices.Equal(got, tt.want) {
			t.Errorf("%s: errorLines = %q, want %q", tt.name, got, tt.want)
		}
	}
}
