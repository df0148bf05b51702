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
			cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("testdata", tt.script))
			// ClusterDir's directory is one the servers' user (mysql) can enter.
			cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(plugintest.FreePorts(t, 12)), "TMPDIR="+plugintest.ClusterDir(t))
			// The script's servers run in its process group: a test that ends first takes them all.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			out, err := cmd.CombinedOutput()
			t.Logf("bash %s\n%s", tt.script, out)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("the script ended with %v, want exit status 1 (the failure shown)", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("no %q in the script's output", want)
				}
			}
		})
	}
}
