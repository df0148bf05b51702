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
	} {
		if got := errorLines(tt.lines, 3); !slices.Equal(got, tt.want) {
			t.Errorf("%s: errorLines = %q, want %q", tt.name, got, tt.want)
		}
	}
}
