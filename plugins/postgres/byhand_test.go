package main

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestByHand runs the hand reproductions of testdata, PostgreSQL's own programs and no modulo:
// each exits 1 when it shows its failure, and prints the line that names it.
func TestByHand(t *testing.T) {
	plugintest.Servers(t)
	for _, tt := range []struct {
		script string
		want   []string
	}{
		// docs/bugs/postgres-diverging-timelines.md
		{"diverging-timelines.sh", []string{"no rewind required", "DIVERGED: b keeps w2, which c never had"}},
		// docs/bugs/postgres-inverted-history.md
		{"inverted-history.sh", []string{"INVERTED: c's history leaves timeline 2"}},
	} {
		t.Run(tt.script, func(t *testing.T) {
			out, status := runByHand(t, tt.script)
			if status != 1 {
				t.Errorf("the script exited with status %d, want 1 (the failure shown)", status)
			}
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in the script's output", want)
				}
			}
			t.Logf("bash %s\n%s", tt.script, out)
		})
	}
}

// runByHand runs the script of testdata in an empty directory of t's, as PostgreSQL's user when
// the test runs as root (PostgreSQL refuses root), on three ports reserved for t, and returns
// its output and exit status. A server the script left running is shut down and fails t.
func runByHand(t *testing.T, script string) (string, int) {
	t.Helper()
	base := plugintest.FreePorts(t, 3)
	// A copy in a directory any user can enter: PostgreSQL's user may not reach the checkout
	// (a clone in a directory of mode 0700, as mktemp -d makes).
	body, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(plugintest.ClusterDir(t), script)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := plugintest.ClusterDir(t)
	cmd := exec.CommandContext(t.Context(), "bash", path, strconv.Itoa(base))
	cmd.Dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("PostgreSQL's user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	// The script stops its servers on exit, which a SIGTERM lets it do.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	t.Cleanup(func() { stopLeft(t, dir) })
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("bash %s: %v\n%s", script, err, out)
	}
	return string(out), 0
}

// stopLeft shuts down, as pg_ctl stop -m immediate does, every server whose postmaster.pid is
// in a data directory of dir: pg_ctl starts a server in a session of its own, out of reach of
// the script's process group. A pid counts only while its process works in that directory (a
// postmaster's), never a stale file's pid that another process now has.
func stopLeft(t *testing.T, dir string) {
	t.Helper()
	pidFiles, _ := filepath.Glob(filepath.Join(dir, "*", "postmaster.pid"))
	for _, f := range pidFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd")); err != nil || cwd != filepath.Dir(f) {
			continue
		}
		t.Errorf("the script left the server of %s running (pid %d): shutting it down", filepath.Dir(f), pid)
		syscall.Kill(pid, syscall.SIGQUIT)
	}
}
