//go:build linux

package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// A process group is not the whole of a server: a process that calls setsid (PostgreSQL's
// backends and WAL senders do) leaves its group, and a signal to the group misses it. Where
// the host lets it (root, a cgroup2 hierarchy mounted writable, Linux 5.14 or later for
// cgroup.kill), every server starts in a cgroup of its own, which no process can leave
// without privilege: the kernel puts every process it forks there, setsid or not. So:
//   - Kill writes cgroup.kill, which SIGKILLs every process of the cgroup at once.
//   - Stop freezes the cgroup (no process runs, none can fork), SIGSTOPs every process in it,
//     then thaws it: each takes its SIGSTOP before it runs again, so the server is SIGSTOPped
//     whole as a process group would be, atomically with respect to forks.
//   - Cont SIGCONTs every process of the cgroup.
//   - The pid file names the cgroup, so that KillLeftovers ends it after a plugin died.
// Elsewhere servers run in process groups as before, and Containment says so.

// cgroupBase is the directory under which servers' cgroups are made, or why there is none.
var cgroupBase = sync.OnceValues(func() (string, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	base := filepath.Join(mount, "modulo")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("cgroup2 at %s is not writable: %w", mount, err)
	}
	if _, err := os.Stat(filepath.Join(base, "cgroup.kill")); err != nil {
		return "", fmt.Errorf("cgroup2 at %s has no cgroup.kill (Linux 5.14 or later)", mount)
	}
	return base, nil
})

// cgroup2Mount finds where the cgroup2 hierarchy is mounted: /sys/fs/cgroup on a unified
// system, /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1], nil
		}
	}
	return "", errors.New("no cgroup2 hierarchy is mounted")
}

// Containment says how servers are contained on this host: "cgroup <dir>" when every server
// runs in a cgroup of its own, or "process groups" and why not; then whether each has an IPC
// namespace of its own.
func Containment() string {
	var s string
	if base, err := cgroupBase(); err != nil {
		s = "process groups (no cgroup: " + err.Error() + "); a server's process that calls setsid escapes them"
	} else {
		s = "cgroup " + base
	}
	if !ipcNamespaces() {
		return s + "; no IPC namespace (no CAP_SYS_ADMIN, or the host refused one): System V shared memory a killed server held outlives it"
	}
	return s + "; an IPC namespace per server"
}

// ipcRefused is set for good once the host refuses a server an IPC namespace of its own though
// the plugin holds CAP_SYS_ADMIN (a container's seccomp filter may).
var ipcRefused atomic.Bool

// capSysAdmin tells whether this process holds CAP_SYS_ADMIN, which CLONE_NEWIPC needs.
var capSysAdmin = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<21) != 0 // CAP_SYS_ADMIN is capability 21
		}
	}
	return false
})

// ipcNamespaces tells whether servers start in an IPC namespace of their own. With one, the
// System V shared memory, semaphores and queues a server made end with its last process: a
// SIGKILLed PostgreSQL leaves its segment behind otherwise, and a host runs out of them
// (SHMMNI, 4096) after a few campaigns.
func ipcNamespaces() bool { return capSysAdmin() && !ipcRefused.Load() }

// cgroupSeq numbers the cgroups of one process.
var cgroupSeq atomic.Int64

// newCgroup makes an empty cgroup for server name, or returns "" when the host has none.
func newCgroup(name string) (string, error) {
	base, err := cgroupBase()
	if err != nil {
		return "", nil
	}
	dir := filepath.Join(base, fmt.Sprintf("%s-%d-%d", name, os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cgroup for %s: %w", name, err)
	}
	return dir, nil
}

// cgroupPids lists the processes in cgroup dir.
func cgroupPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// cgroupEvent reads a key of cgroup dir's cgroup.events ("populated", "frozen").
func cgroupEvent(dir, key string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return v == "1", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events has no %s", dir, key)
}

// signalCgroup sends sig to every process of cgroup dir; frozen, for SIGSTOP, so that no
// process forks one that the signal misses.
func signalCgroup(ctx context.Context, dir string, sig syscall.Signal) error {
	if sig == syscall.SIGSTOP {
		if err := freezeCgroup(ctx, dir, true); err != nil {
			return err
		}
		defer freezeCgroup(context.WithoutCancel(ctx), dir, false)
	}
	pids, err := cgroupPids(dir)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("%s pid %d: %w", sig, pid, err)
		}
	}
	return nil
}

// freezeCgroup freezes (or thaws) cgroup dir and waits until the kernel says it is.
func freezeCgroup(ctx context.Context, dir string, frozen bool) error {
	v := "0"
	if frozen {
		v = "1"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte(v), 0o644); err != nil {
		return err
	}
	return WaitFor(ctx, LeftoverTimeout, "cgroup "+dir+" frozen="+v, func(context.Context) (bool, error) {
		got, err := cgroupEvent(dir, "frozen")
		return got == frozen, err
	})
}

// killCgroup SIGKILLs every process of cgroup dir, waits until none is left and removes the
// cgroup. A cgroup that is gone already is fine.
func killCgroup(ctx context.Context, dir string) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	err = WaitFor(ctx, LeftoverTimeout, "cgroup "+dir+" to empty", func(context.Context) (bool, error) {
		populated, err := cgroupEvent(dir, "populated")
		return !populated, err
	})
	if err != nil {
		return err
	}
	// A zombie still in the cgroup keeps rmdir busy until its parent reaps it: retry.
	return WaitFor(ctx, LeftoverTimeout, "cgroup "+dir+" removed", func(context.Context) (bool, error) {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		return false, nil
	})
}

// cgroupAlive tells whether a live process is left in cgroup dir.
func cgroupAlive(dir string) (bool, error) {
	pids, err := cgroupPids(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, pid := range pids {
		if Alive(pid) {
			return true, nil
		}
	}
	return false, nil
}
