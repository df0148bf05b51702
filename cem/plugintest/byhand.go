package plugintest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// RunScript runs the hand reproduction testdata/<script> of the plugin under test with bash,
// as its servers' tools alone would, logs its output, and fails t unless it exits 1 (the
// failure shown, by the convention of every hand reproduction) and prints each of want. The
// script gets BASE_PORT, the first of ports consecutive ports reserved for t, and TMPDIR, a
// directory of t's that a server's own user can enter (ClusterDir); it runs in a process
// group of its own, which a test that ends first kills whole, its servers with it.
func RunScript(t *testing.T, script string, ports int, want ...string) {
	t.Helper()
	out, status := runScript(t, script, ports)
	t.Logf("bash %s\n%s", script, out)
	if status != 1 {
		t.Errorf("the script exited with status %d, want 1 (the failure shown)", status)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in the script's output", w)
		}
	}
}

// runScript runs the script as RunScript says and returns its output and exit status, -1
// where it did not exit on its own.
func runScript(t *testing.T, script string, ports int) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("testdata", script))
	cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(FreePorts(t, ports)), "TMPDIR="+ClusterDir(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit) && exit.Exited():
		return string(out), exit.ExitCode()
	}
	t.Errorf("bash %s: %v", script, err)
	return string(out), -1
}
