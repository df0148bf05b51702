//go:build linux

package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/netns"
	"golang.org/x/sys/unix"
)

// startTest starts a process for a test and kills its group when the test ends, whatever
// happens.
func startTest(t *testing.T, dir, name string, args ...string) *Process {
	t.Helper()
	p, err := StartProcess(ProcessSpec{Name: name, Dir: dir, Path: args[0], Args: args[1:]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Kill(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

// shellWithChild starts sh that forks a long sleep into its group, records the child's pid in
// dir/child, then sleeps itself; it returns the shell and the child's pid.
func shellWithChild(t *testing.T, dir, name string) (*Process, int) {
	t.Helper()
	p := startTest(t, dir, name, "/bin/sh", "-c", "sleep 300 & echo $! > child; exec sleep 301")
	return p, readPid(t, filepath.Join(dir, "child"))
}

// readPid waits until a shell has written a pid into path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	pid, err := AwaitPid(context.Background(), path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// state returns pid's state letter from /proc, failing the test when it has gone.
func state(t *testing.T, pid int) byte {
	t.Helper()
	st, err := readStat(pid)
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	return st.state
}

// stopped tells whether a process in state s is stopped: T, or t when a tracer follows it
// (strace, as internal/shortsuite runs this test, or a debugger), as Stopped counts it.
func stopped(s byte) bool { return s == 'T' || s == 't' }

func TestStartProcessFiles(t *testing.T) {
	dir := t.TempDir()
	p := startTest(t, dir, "echo", "/bin/sh", "-c", "echo out; echo err >&2; exec sleep 300")
	pidFile := filepath.Join(dir, "echo"+PidFileSuffix)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b)); len(f) != 3 || f[0] != strconv.Itoa(p.Pid) || f[2] != p.cgroup {
		t.Errorf("pid file holds %q, want pid %d, a start time and the cgroup", b, p.Pid)
	}
	if pids, err := cgroupPids(p.cgroup); err != nil || len(pids) != 1 || pids[0] != p.Pid {
		t.Errorf("cgroup %s holds %v (%v), want the server %d alone", p.cgroup, pids, err, p.Pid)
	}
	if pg, err := syscall.Getpgid(p.Pid); err != nil || pg != p.Pid {
		t.Errorf("process group of %d is %d (%v), want its own", p.Pid, pg, err)
	}
	err = WaitFor(context.Background(), 5*time.Second, "log lines", func(context.Context) (bool, error) {
		b, err := os.ReadFile(p.LogPath)
		return err == nil && strings.Contains(string(b), "out\n") && strings.Contains(string(b), "err\n"), nil
	})
	if err != nil {
		t.Error(err)
	}
	if err := p.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after Kill: %v, want it removed", err)
	}
	if _, err := os.Stat(p.cgroup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup after Kill: %v, want it removed", err)
	}
}

func TestStartProcessMissingBinary(t *testing.T) {
	dir := t.TempDir()
	_, err := StartProcess(ProcessSpec{Name: "x", Dir: dir, Path: filepath.Join(dir, "no-such-binary")})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "no-such-binary") {
		t.Fatalf("err = %v, want a one-line error naming the binary", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x"+PidFileSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file of a process that never started: %v", err)
	}
}

func TestKillReapsWholeGroup(t *testing.T) {
	tests := []struct {
		name string
		prep func(t *testing.T, p *Process) // what happens to the leader before Kill
	}{
		{"running", func(*testing.T, *Process) {}},
		{"stopped", func(t *testing.T, p *Process) {
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
		}},
		// A BGSAVE child outliving its server: the leader is gone, its child is not.
		{"leader dead", func(t *testing.T, p *Process) {
			if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.Exited()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, child := shellWithChild(t, dir, "server")
			tt.prep(t, p)
			if !Alive(child) {
				t.Fatalf("child %d died before Kill", child)
			}
			if err := p.Kill(context.Background()); err != nil {
				t.Fatal(err)
			}
			if p.Running() {
				t.Error("leader still running after Kill")
			}
			if Alive(child) {
				t.Errorf("child %d still alive after Kill", child)
			}
			if err := p.Kill(context.Background()); err != nil {
				t.Errorf("second Kill: %v", err)
			}
		})
	}
}

func TestKillExitedProcess(t *testing.T) {
	p := startTest(t, t.TempDir(), "exit3", "/bin/sh", "-c", "exit 3")
	var ee *exec.ExitError
	if err := p.Wait(context.Background()); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	if err := p.Kill(context.Background()); err != nil {
		t.Errorf("Kill of an exited process: %v", err)
	}
	if err := p.Stop(); err == nil {
		t.Error("Stop of an exited process succeeded")
	}
}

func TestStopCont(t *testing.T) {
	p, child := shellWithChild(t, t.TempDir(), "server")
	for _, step := range []struct {
		name string
		do   func() error
		want func(byte) bool
	}{
		{"stop", p.Stop, stopped},
		{"cont", p.Cont, func(s byte) bool { return s == 'S' }},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		for _, pid := range []int{p.Pid, child} {
			pid := pid
			err := WaitFor(context.Background(), 5*time.Second, fmt.Sprintf("%s of %d", step.name, pid),
				func(context.Context) (bool, error) { return step.want(state(t, pid)), nil })
			if err != nil {
				t.Errorf("%v (state %c)", err, state(t, pid))
			}
		}
	}
}

func TestWaitContext(t *testing.T) {
	p := startTest(t, t.TempDir(), "sleep", "/bin/sleep", "300")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want the context's deadline", err)
	}
}

func TestKillLeftovers(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "replica-0")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// A plugin that died: its server's leader went with it (Pdeathsig), its child did not,
	// and the pid file stayed.
	p, child := shellWithChild(t, sub, "server")
	if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	// A pid file whose pid now names another process (started later) must not be obeyed.
	other := startTest(t, t.TempDir(), "other", "/bin/sleep", "300")
	stale := filepath.Join(dir, "stale"+PidFileSuffix)
	if err := writePidFile(stale, other.Pid, other.start+1, ""); err != nil {
		t.Fatal(err)
	}

	if err := KillLeftovers(dir); err != nil {
		t.Fatal(err)
	}
	if Alive(child) {
		t.Errorf("leftover child %d still alive", child)
	}
	if !other.Running() {
		t.Error("KillLeftovers killed a process that only reused a recorded pid")
	}
	for _, f := range []string{filepath.Join(sub, "server"+PidFileSuffix), stale} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the sweep: %v, want it removed", f, err)
		}
	}
	if err := KillLeftovers(dir); err != nil {
		t.Errorf("second sweep: %v", err)
	}
	if err := KillLeftovers(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("sweep of a missing directory: %v", err)
	}
}

func TestKillLeftoversMalformed(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad"+PidFileSuffix)
	if err := os.WriteFile(bad, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := KillLeftovers(dir)
	if err == nil || !strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want a one-line error naming %s", err, bad)
	}
}

// TestParentDeathKillsServer runs this test binary as a stand-in plugin that starts a server
// and prints its pid, SIGKILLs the stand-in, and checks that the server died with it.
func TestParentDeathKillsServer(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CEM_HELPER_PLUGIN_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if err := KillLeftovers(dir); err != nil {
			t.Error(err)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("stand-in plugin printed no pid: %v", err)
	}
	server, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("stand-in plugin printed %q", line)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	err = WaitFor(context.Background(), 5*time.Second, "server to die with its plugin",
		func(context.Context) (bool, error) { return !Alive(server), nil })
	if err != nil {
		t.Error(err)
	}
}

// TestMain turns the test binary into the stand-in plugin of TestParentDeathKillsServer when
// asked to: it starts a server, prints its pid and waits to be killed; into the listener of
// TestGroupListens; or into the shared memory holder of TestIPCNamespace.
func TestMain(m *testing.M) {
	if os.Getenv(listenerEnv) != "" {
		listener()
	}
	if key := os.Getenv(shmKeyEnv); key != "" {
		shmServer(key)
	}
	if dir := os.Getenv("CEM_HELPER_PLUGIN_DIR"); dir != "" {
		p, err := StartProcess(ProcessSpec{Name: "server", Dir: dir, Path: "/bin/sleep", Args: []string{"300"}})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid)
		time.Sleep(time.Minute) // the test kills this process long before
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// setsidChild starts a server whose child leaves its process group (setsid), as PostgreSQL's
// backends do, and returns the server and the child's pid.
func setsidChild(t *testing.T, dir, name string) (*Process, int) {
	t.Helper()
	if _, err := cgroupBase(); err != nil {
		t.Fatalf("servers are not contained in cgroups here (%s): run as root on Linux 5.14 or later with cgroup2 mounted", Containment())
	}
	p := startTest(t, dir, name, "/bin/sh", "-c", "setsid /bin/sh -c 'echo $$ > child; exec sleep 300' & exec sleep 301")
	child := readPid(t, filepath.Join(dir, "child"))
	st, err := readStat(child)
	if err != nil || st.pgrp == p.Pid {
		t.Fatalf("the child %d did not leave the server's group %d: %+v %v", child, p.Pid, st, err)
	}
	return p, child
}

// TestServerIsEverythingItStarted: Stop, Cont and Kill reach a child that left the server's
// process group, and so does KillLeftovers after the server's leader died with its plugin.
func TestServerIsEverythingItStarted(t *testing.T) {
	dir := t.TempDir()
	p, child := setsidChild(t, dir, "server")
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(context.Background(), 5*time.Second, "the server stopped", func(context.Context) (bool, error) { return p.Stopped() }); err != nil {
		t.Fatal(err)
	}
	if s := state(t, child); !stopped(s) {
		t.Errorf("after Stop the setsid child is in state %c, want T or t (stopped)", s)
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(context.Background(), 5*time.Second, "the child running", func(context.Context) (bool, error) { return !stopped(state(t, child)), nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if Alive(child) {
		t.Errorf("Kill left the setsid child %d alive", child)
	}

	sub := filepath.Join(t.TempDir(), "cluster")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	q, orphan := setsidChild(t, sub, "server")
	if err := syscall.Kill(q.Pid, syscall.SIGKILL); err != nil { // as Pdeathsig does
		t.Fatal(err)
	}
	<-q.Exited()
	if err := KillLeftovers(sub); err != nil {
		t.Fatal(err)
	}
	if Alive(orphan) {
		t.Errorf("KillLeftovers left the setsid child %d of a dead server alive", orphan)
	}
}

// shmKeyEnv asks the test binary to make a System V shared memory segment with the key it
// holds, print the segment's ID and wait to be killed, as a PostgreSQL server does.
const shmKeyEnv = "CEM_HELPER_SHM_KEY"

func shmServer(key string) {
	k, err := strconv.ParseUint(key, 0, 32)
	if err == nil {
		id, _, errno := syscall.Syscall(syscall.SYS_SHMGET, uintptr(k), 4096, ipcCreat|ipcExcl|0o600)
		if errno == 0 {
			fmt.Println("shmid", id)
			time.Sleep(time.Minute) // the test kills this process long before
		}
		err = errno
	}
	fmt.Println("error:", err)
	os.Exit(1)
}

const ipcCreat, ipcExcl, ipcRmid = 0o1000, 0o2000, 0

// shmExists tells whether this process's IPC namespace holds a segment with key.
func shmExists(t *testing.T, key uint64) (id uintptr, ok bool) {
	t.Helper()
	id, _, errno := syscall.Syscall(syscall.SYS_SHMGET, uintptr(key), 0, 0)
	switch errno {
	case 0:
		return id, true
	case syscall.ENOENT:
		return 0, false
	}
	t.Fatalf("shmget(%#x): %v", key, errno)
	return 0, false
}

// TestIPCNamespace: a server's System V shared memory is its own, and ends with it. Where the
// host gives no IPC namespace, the segment outlives the killed server, which is why servers get
// one: a SIGKILLed PostgreSQL leaves its segment, and a host runs out of them.
func TestIPCNamespace(t *testing.T) {
	dir := t.TempDir()
	key := uint64(0x6d6f0000 | os.Getpid()&0xffff)
	if _, ok := shmExists(t, key); ok {
		t.Fatalf("a segment with key %#x exists before the test", key)
	}
	p, err := StartProcess(ProcessSpec{Name: "shm", Dir: dir, Path: os.Args[0],
		Env: append(os.Environ(), fmt.Sprintf("%s=%#x", shmKeyEnv, key))})
	if err != nil {
		t.Fatal(err)
	}
	err = WaitFor(context.Background(), 10*time.Second, "the segment's ID in the server's log", func(context.Context) (bool, error) {
		b, err := os.ReadFile(p.LogPath)
		if strings.Contains(string(b), "error:") {
			return false, fmt.Errorf("the server: %s", b)
		}
		return strings.Contains(string(b), "shmid"), err
	})
	if err != nil {
		_ = p.Kill(context.Background())
		t.Fatal(err)
	}
	id, visible := shmExists(t, key)
	if visible {
		t.Cleanup(func() { syscall.Syscall(syscall.SYS_SHMCTL, id, ipcRmid, 0) })
	}
	own, _ := os.Readlink("/proc/self/ns/ipc")
	its, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/ipc", p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, after := shmExists(t, key)
	if !ipcNamespaces() {
		t.Logf("containment here: %s", Containment())
		if its != own || !visible || !after {
			t.Errorf("without IPC namespaces, the server's namespace is %s (ours %s) and its segment visible %v, after its death %v", its, own, visible, after)
		}
		return
	}
	if its == own || visible || after {
		t.Errorf("the server's IPC namespace is %s (ours %s); its segment visible to us %v, after its death %v: want a namespace of its own and neither", its, own, visible, after)
	}
}

// TestGroupSharedMemory: a file under /dev/shm that a server holds open is found, and nothing
// else it holds.
func TestGroupSharedMemory(t *testing.T) {
	dir := t.TempDir()
	shm := filepath.Join(ShmDir, fmt.Sprintf("modulo-proc-test-%d", os.Getpid()))
	t.Cleanup(func() { os.Remove(shm) })
	p := startTest(t, dir, "shm", "/bin/sh", "-c", "exec 3>"+shm+" 4>own; echo ready > ready; exec sleep 300")
	readyPath := filepath.Join(dir, "ready")
	err := WaitFor(context.Background(), 5*time.Second, "the server to open its files", func(context.Context) (bool, error) {
		_, err := os.Stat(readyPath)
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := GroupSharedMemory(p.Pid)
	if err != nil || len(got) != 1 || got[0] != shm {
		t.Errorf("GroupSharedMemory = %q (%v), want [%s]", got, err, shm)
	}
}

// TestDetachMounts: the mounts under a directory, nested ones first, are gone after
// DetachMounts, and a mount beside it stays.
func TestDetachMounts(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts tmpfs file systems; run without -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs, which needs root")
	}
	base := t.TempDir()
	under, nested, beside := filepath.Join(base, "dir", "m"), filepath.Join(base, "dir", "m", "n"), filepath.Join(base, "beside")
	for _, d := range []string{under, beside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mount := func(dir string) {
		t.Helper()
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	}
	mount(under)
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	mount(nested)
	mount(beside)
	if got, err := MountsUnder(filepath.Join(base, "dir")); err != nil || len(got) != 2 || got[0] != nested {
		t.Fatalf("MountsUnder = %v, %v; want %s then %s", got, err, nested, under)
	}
	if err := DetachMounts(filepath.Join(base, "dir")); err != nil {
		t.Fatal(err)
	}
	if got, _ := MountsUnder(filepath.Join(base, "dir")); len(got) != 0 {
		t.Errorf("after DetachMounts, mounted: %v", got)
	}
	if got, _ := MountsUnder(beside); len(got) != 1 {
		t.Errorf("the mount beside the directory is gone: %v", got)
	}
}

// TestNetNS: a process started with NetNS runs in that network namespace, and the plugin's
// threads stay in their own.
func TestNetNS(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a network namespace; run without -short")
	}
	nw, err := netns.New(t.Context(), 1, t.Name(), nil)
	if err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("root cannot make network namespaces: %v", err)
		}
		t.Skipf("no network namespaces here: %v", err)
	}
	defer nw.Close()
	want, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", nw.NS(0)))
	if err != nil {
		t.Fatal(err)
	}
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 20 { // forks on many threads: none may stay in the server's namespace
		p, err := StartProcess(ProcessSpec{Name: fmt.Sprintf("s%d", i), Dir: dir, Path: "/bin/sleep", Args: []string{"30"}, NetNS: nw.NS(0)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p.Pid))
		_ = p.Kill(context.Background())
		if err != nil || got != want {
			t.Fatalf("the server's network namespace is %s (%v), want %s", got, err, want)
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net"); err == nil && ns != own {
			t.Errorf("thread %s of the plugin is in %s, not its own %s", task.Name(), ns, own)
		}
	}
}
