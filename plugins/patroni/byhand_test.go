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
	"time"

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
	base := plugintest.FreePorts(t, 30)
	body, err := os.ReadFile(filepath.Join("testdata", "stale-leader.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// A copy in a directory the postgres user can enter: the checkout may be in one it cannot
	// (a clone in a directory of mode 0700, as mktemp -d makes).
	dir := plugintest.ClusterDir(t)
	script := filepath.Join(dir, "stale-leader.sh")
	if err := os.WriteFile(script, body, 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", script, strconv.Itoa(base))
	cmd.Dir = work
	// The script ends its servers on exit, which a SIGTERM lets it do.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	t.Cleanup(func() { killLeft(t, work) })
	out, err := cmd.CombinedOutput()
	status := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("bash stale-leader.sh: %v\n%s", err, out)
	}
	t.Logf("bash stale-leader.sh %d\n%s", base, out)
	if status != 1 {
		t.Errorf("the script exited with status %d, want 1 (the failure shown)", status)
	}
	if want := "promoted onto timeline ID 2 again"; !strings.Contains(string(out), want) {
		t.Errorf("no %q in the script's output", want)
	}
}

// killLeft kills, and fails t for, every process still working in a directory under dir (a
// postmaster, a Patroni, an etcd the script left): Patroni starts PostgreSQL in a session of its
// own, out of reach of the script's process group.
func killLeft(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || cwd != dir && !strings.HasPrefix(cwd, dir+"/") {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		t.Errorf("the script left process %d running in %s: killing it", pid, cwd)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
