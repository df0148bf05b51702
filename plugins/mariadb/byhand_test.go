package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestByHand runs the hand reproductions of testdata, MariaDB's own programs and the mariadb
// client with no modulo: each exits 1 when it shows its failure, and prints the line that
// names it.
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
	} {
		t.Run(tt.script, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("testdata", tt.script))
			cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(plugintest.FreePorts(t, 3)), "TMPDIR="+t.TempDir())
			// The script's servers run in its process group: a test that ends first takes them all.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("the script ended with %v, want exit status 1 (the failure shown)", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("no %q in the script's output", want)
				}
			}
			t.Logf("bash %s\n%s", tt.script, out)
		})
	}
}
