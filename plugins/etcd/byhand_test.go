package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestWALTailByHand runs testdata/wal-tail.go, the loss of
// docs/bugs/etcd-wal-tail-repaired.md by hand with three etcd 3.5.21 members and net/http, no
// modulo: k4.1, acknowledged by m1 and m2, is cut from m2's WAL within its record; m2 repairs
// the WAL as a torn write and elects a leader with m0, which never had k4.1, before m1 starts.
// It exits 1 and says that no member holds k4.1, or (when a member's key-value store committed
// k4.1 before the kill) that some do and some do not.
func TestWALTailByHand(t *testing.T) {
	out := runByHand(t, "wal-tail.go", "3.5.21")
	if !walTailEnd.Match(out) {
		t.Errorf("no line %q in its output", walTailEnd)
	}
}

// TestSnapshotNamesByHand runs testdata/snapshot-names.go, the failure of
// docs/bugs/etcd-snapshot-db-name-lost.md, by hand with three etcd 3.7.3 members in both its
// courses: m2 installs its leader's snapshot and loses power with the rename of the received
// database to db undone; it serves without acknowledged writes, or, when it saved a snapshot of
// its own before the power loss, panics at its restart.
func TestSnapshotNamesByHand(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		end  *regexp.Regexp
	}{
		{"serves without", nil, regexp.MustCompile(`(?m)^LOST: m2 serves without the acknowledged .*$`)},
		{"own snapshot, panics", []string{"own-snapshot"}, regexp.MustCompile(`(?m)^DOWN: m2 exited at its restart .*$`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if out := runByHand(t, "snapshot-names.go", "3.7.3", tt.args...); !tt.end.Match(out) {
				t.Errorf("no line %q in its output", tt.end)
			}
		})
	}
}

// runByHand builds the reproduction testdata/file with testdata/members.go and runs it on the
// etcd release of modulo's cache, with args after the server, failing t unless it ends with
// exit status 1 (the failure shown); it returns what the reproduction printed.
func runByHand(t *testing.T, file, release string, args ...string) []byte {
	t.Helper()
	plugintest.Servers(t)
	server := plugintest.CachedServer(t, filepath.Join("etcd", release, "etcd"))
	bin := plugintest.Build(t, "./testdata/"+file, "./testdata/members.go")
	cmd := exec.CommandContext(t.Context(), bin, append([]string{server}, args...)...)
	cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(plugintest.FreePorts(t, 6)), "TMPDIR="+t.TempDir())
	// Should this test's process die, the reproduction dies with it, and its members with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	t.Logf("%s %q on etcd %s\n%s", file, args, release, out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("the reproduction ended with %v, want exit status 1 (the failure shown)", err)
	}
	return out
}

// walTailEnd is the line that wal-tail ends with when the acknowledged k4.1 is not on every
// member.
var walTailEnd = regexp.MustCompile(`(?m)^(LOST: no member holds the acknowledged k4\.1|DIVERGED: m\d( and m\d)? holds? the acknowledged k4\.1, m\d( and m\d)? (does|do) not)$`)

// TestWALTailEnd: the ends wal-tail prints for each course, and those it must not match.
func TestWALTailEnd(t *testing.T) {
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"LOST: no member holds the acknowledged k4.1", true},
		{"DIVERGED: m1 holds the acknowledged k4.1, m0 and m2 do not", true},
		{"DIVERGED: m1 and m2 hold the acknowledged k4.1, m0 does not", true},
		{"CONVERGED: every member holds k4.1", false},
		{"DOWN: m1 down (exit status 2); none of the others holds the acknowledged k4.1", false},
		{"LOST: no member holds the acknowledged k4.1 yet", false},
	} {
		if got := walTailEnd.MatchString(tt.line); got != tt.want {
			t.Errorf("%q matched %v, want %v", tt.line, got, tt.want)
		}
	}
}
