//go:build linux

// Process groups, parent-death signals and /proc are Linux facilities; plugins run on Linux.

package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LeftoverTimeout bounds how long a SIGKILLed process group may take to end.
const LeftoverTimeout = 10 * time.Second

// PidFileSuffix ends the name of every pid file StartProcess writes, so that KillLeftovers
// finds them and nothing else.
const PidFileSuffix = ".cem.pid"

// ProcessSpec says how to start one server process.
type ProcessSpec struct {
	// Name names the process in messages and names its files: Dir/Name.log and
	// Dir/Name+PidFileSuffix.
	Name string
	// Dir is the process's working directory; it must exist.
	Dir  string
	Path string   // the binary
	Args []string // arguments after the binary
	Env  []string // environment; nil inherits the plugin's
	// NetNS, when not 0, is a file descriptor of the network namespace the process starts in
	// (cem/netns); 0 starts it in the plugin's.
	NetNS int
}

// Process is a server started by StartProcess: the leader of a process group of its own, in a
// cgroup of its own where the host has one (see Containment), so that every child it forks (a
// Redis BGSAVE child, a PostgreSQL backend that calls setsid) is signalled with it.
type Process struct {
	Name    string
	Pid     int    // also the process group ID
	LogPath string // stdout and stderr
	pidPath string
	cgroup  string // its cgroup's directory; empty without one
	start   uint64 // start time, to tell the process from a later one that reuses its pid

	exited  chan struct{} // closed once the leader has been reaped
	waitErr error         // the leader's exit status, set before exited is closed

	mu     sync.Mutex
	killed bool // Kill has confirmed the group gone
}

// StartProcess starts spec's binary in its own process group and, where the host allows it, its
// own IPC namespace (see Containment), with its output appended to Dir/Name.log and its pid
// recorded in Dir/Name.cem.pid. The process gets SIGKILL if the plugin dies; the pid file lets
// KillLeftovers end whatever it forked.
func StartProcess(spec ProcessSpec) (*Process, error) {
	logPath := filepath.Join(spec.Dir, spec.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	defer logFile.Close() // the child holds its own copy

	cg, err := newCgroup(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	cgroupFD := -1
	if cg != "" {
		cgroupFD, err = syscall.Open(cg, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			_ = os.Remove(cg)
			return nil, fmt.Errorf("start %s: cgroup: %w", spec.Name, err)
		}
		defer syscall.Close(cgroupFD)
	}
	command := func(ipc bool) *exec.Cmd {
		cmd := exec.Command(spec.Path, spec.Args...)
		cmd.Dir = spec.Dir
		cmd.Env = spec.Env
		cmd.Stdout = logFile
		cmd.Stderr = logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if cgroupFD >= 0 {
			// The child is born in the cgroup (clone3 with CLONE_INTO_CGROUP): nothing it
			// forks can run outside it, not even for a moment.
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, cgroupFD
		}
		if ipc {
			cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWIPC
		}
		return cmd
	}

	// Pdeathsig fires when the thread that forked the child exits, not the process: fork from
	// a thread that stays locked for the call so the runtime cannot retire it under us. The
	// fork runs on a goroutine of its own, whose thread ends with it when it cannot leave the
	// server's network namespace, and the server with it.
	forked := make(chan error, 1)
	var cmd *exec.Cmd
	go func() {
		runtime.LockOSThread()
		ipc := ipcNamespaces()
		cmd = command(ipc)
		err := inNetNS(spec.NetNS, func() error {
			err := cmd.Start()
			if ipc && errors.Is(err, syscall.EPERM) {
				ipcRefused.Store(true)
				cmd = command(false)
				err = cmd.Start()
			}
			return err
		})
		var stuck *netNSError
		if !errors.As(err, &stuck) {
			runtime.UnlockOSThread()
		}
		forked <- err
	}()
	err = <-forked
	var stuck *netNSError
	if errors.As(err, &stuck) && cmd.Process != nil {
		_ = cmd.Wait()
	}
	if err != nil {
		if cg != "" {
			_ = os.Remove(cg)
		}
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}

	p := &Process{
		cgroup:  cg,
		Name:    spec.Name,
		Pid:     cmd.Process.Pid,
		LogPath: logPath,
		pidPath: filepath.Join(spec.Dir, spec.Name+PidFileSuffix),
		exited:  make(chan struct{}),
	}
	// The child is not reaped before Wait, so its stat is readable even if it already exited.
	st, statErr := readStat(p.Pid)
	p.start = st.startTime
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := errors.Join(statErr, writePidFile(p.pidPath, p.Pid, p.start, p.cgroup)); err != nil {
		_ = KillGroup(p.Pid)
		<-p.exited
		if cg != "" {
			_ = killCgroup(context.Background(), cg)
		}
		return nil, fmt.Errorf("start %s: pid file: %w", spec.Name, err)
	}
	return p, nil
}

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for the process to exit and returns its exit status, as exec.Cmd.Wait does.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.exited:
		return p.waitErr
	case <-ctx.Done():
		return fmt.Errorf("wait for %s (pid %d) to exit: %w", p.Name, p.Pid, ctx.Err())
	}
}

// Running tells whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop suspends every process of the server (SIGSTOP): its cgroup's, or its group's.
func (p *Process) Stop() error { return p.signal(syscall.SIGSTOP) }

// Cont resumes every process of the server (SIGCONT).
func (p *Process) Cont() error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("%s %s (pid %d): the process has exited", sig, p.Name, p.Pid)
	}
	if p.cgroup != "" {
		if err := signalCgroup(context.Background(), p.cgroup, sig); err != nil {
			return fmt.Errorf("%s %s (cgroup %s): %w", sig, p.Name, p.cgroup, err)
		}
		return nil
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		return fmt.Errorf("%s %s (process group %d): %w", sig, p.Name, p.Pid, err)
	}
	return nil
}

// Members lists the server's live processes: its cgroup's, or its process group's.
func (p *Process) Members() ([]int, error) {
	if p.cgroup != "" {
		return cgroupPids(p.cgroup)
	}
	return groupPids(p.Pid)
}

// Stopped tells whether every thread of every process of the server is stopped: kill(2) only
// makes a signal pending, and a thread busy on another CPU could still answer a request before
// it takes it.
func (p *Process) Stopped() (bool, error) {
	pids, err := p.Members()
	if err != nil {
		return false, err
	}
	for _, pid := range pids {
		ok, err := threadsStopped(pid)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// threadsStopped tells whether every thread of process pid is stopped (or has exited).
func threadsStopped(pid int) (bool, error) {
	taskDir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(taskDir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil // exited
	}
	if err != nil {
		return false, fmt.Errorf("threads of pid %d: %w", pid, err)
	}
	for _, t := range tasks {
		path := filepath.Join(taskDir, t.Name(), "stat")
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited
		}
		st, err := parseStat(path, b)
		if err != nil {
			return false, fmt.Errorf("thread %s of pid %d: %w", t.Name(), pid, err)
		}
		switch st.state {
		case 'T', 't', 'Z', 'X':
		default:
			return false, nil
		}
	}
	return true, nil
}

// Kill sends SIGKILL to the whole process group (a stopped group too), reaps the leader,
// waits until no member of the group is left alive and removes the pid file. Killing a
// process that is already dead is not an error.
func (p *Process) Kill(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return nil
	}
	if p.cgroup != "" {
		if err := killCgroup(ctx, p.cgroup); err != nil {
			return fmt.Errorf("kill %s: %w", p.Name, err)
		}
	}
	if err := KillGroupOf(ctx, p.Pid, p.start); err != nil {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		return fmt.Errorf("kill %s (pid %d): leader not reaped: %w", p.Name, p.Pid, ctx.Err())
	}
	p.killed = true
	if err := os.Remove(p.pidPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	return nil
}

// KillGroupOf SIGKILLs the process group that the process (pid, start) leads or led, and waits
// until no member is left alive. When pid now names a process started at another time, the pid
// was reused after the group ended and the group there is someone else's: it is left alone.
// While the old group has members its ID cannot be reused, so a leader that is gone does not
// keep its orphans from being killed.
func KillGroupOf(ctx context.Context, pid int, start uint64) error {
	if st, err := readStat(pid); err == nil && st.startTime != start {
		return nil
	}
	if err := KillGroup(pid); err != nil {
		return err
	}
	return WaitGroupGone(ctx, pid)
}

// KillGroup sends SIGKILL to process group pgid; a group that no longer exists is fine.
func KillGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL process group %d: %w", pgid, err)
	}
	return nil
}

// WaitGroupGone waits until no live (non-zombie) process is left in group pgid. A SIGKILLed
// child of the server is reparented and reaped by someone else; until it is gone it may still
// be writing the server's data directory.
func WaitGroupGone(ctx context.Context, pgid int) error {
	return WaitFor(ctx, LeftoverTimeout, fmt.Sprintf("process group %d to end", pgid),
		func(context.Context) (bool, error) {
			alive, err := GroupAlive(pgid)
			return !alive, err
		})
}

// GroupAlive tells whether some process of group pgid is alive (not a zombie).
func GroupAlive(pgid int) (bool, error) {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false, nil
	}
	pids, err := groupPids(pgid)
	return len(pids) > 0, err
}

// groupPids lists the live processes of group pgid.
func groupPids(pgid int) ([]int, error) {
	members, err := groupsPids(pgid)
	return members[pgid], err
}

// groupsPids lists the live processes of each of the groups pgids, in one pass over /proc.
func groupsPids(pgids ...int) (map[int][]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	members := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		if slices.Contains(pgids, st.pgrp) && st.state != 'Z' && st.state != 'X' {
			members[st.pgrp] = append(members[st.pgrp], pid)
		}
	}
	return members, nil
}

// procStat holds the fields of /proc/<pid>/stat that identify a process.
type procStat struct {
	state     byte
	pgrp      int
	startTime uint64 // clock ticks after boot: with the pid, unique to one process
}

// Alive tells whether pid is a live process (not a zombie).
func Alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z' && st.state != 'X'
}

// StartTime is when process pid started, in clock ticks after boot: with the pid, it names one
// process, so that a pid that was reused can be told apart.
func StartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.startTime, err
}

func readStat(pid int) (procStat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	return parseStat(path, b)
}

// parseStat parses b, a process's or a thread's stat file (/proc/PID/task/TID/stat has the
// same fields), read from path.
func parseStat(path string, b []byte) (procStat, error) {
	// The command name is in parentheses and may hold spaces or parentheses itself.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procStat{}, fmt.Errorf("%s: no command name", path)
	}
	f := strings.Fields(s[end+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("%s: %d fields", path, len(f)+2)
	}
	pgrp, err1 := strconv.Atoi(f[2])                // field 5
	start, err2 := strconv.ParseUint(f[19], 10, 64) // field 22
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("%s: %w", path, err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTime: start}, nil
}

// writePidFile records pid and its start time, so that a later sweep does not kill a process
// that merely reuses the pid, and the server's cgroup, if any. It writes a temporary file and
// renames it, so a sweep never reads half a file.
func writePidFile(path string, pid int, start uint64, cgroup string) error {
	tmp := path + ".tmp"
	line := fmt.Sprintf("%d %d", pid, start)
	if cgroup != "" {
		line += " " + cgroup
	}
	if err := os.WriteFile(tmp, []byte(line+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// KillLeftovers walks dir for the pid files StartProcess writes and SIGKILLs the process group
// each one names, then removes the file. It is what cleans a cluster directory after a plugin
// died without tearing its cluster down: Pdeathsig ended the servers, but not what they forked.
// A group whose leader is alive but was started after the pid file (the pid was reused) is left
// alone. A directory that does not exist holds no leftovers. Every mount under dir is detached
// first (DetachMounts).
func KillLeftovers(dir string) error {
	// SIGKILL cannot be refused, so the groups end at once; the bound only guards against a
	// process stuck in the kernel.
	ctx, cancel := context.WithTimeout(context.Background(), LeftoverTimeout)
	defer cancel()
	var errs []error
	// First the mounts: a dead plugin's FUSE mount would fail the walk below.
	if err := DetachMounts(dir); err != nil {
		errs = append(errs, err)
	}
	err := walkPidFiles(dir, func(path string) error {
		if err := killPidFile(ctx, path); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

func killPidFile(ctx context.Context, path string) error {
	f, err := ReadPidFile(path)
	if err != nil {
		return err
	}
	if f.Cgroup != "" {
		if err := killCgroup(ctx, f.Cgroup); err != nil {
			return fmt.Errorf("pid file %s: %w", path, err)
		}
	}
	if err := KillGroupOf(ctx, f.Pid, f.Start); err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	return nil
}

// netNSError says that the thread could not go back to its network namespace.
type netNSError struct{ err error }

func (e *netNSError) Error() string {
	return "back to the plugin's network namespace: " + e.err.Error()
}
func (e *netNSError) Unwrap() error { return e.err }

// inNetNS runs start on the calling thread, which the caller has locked, in network namespace
// fd (0: as it is), and puts the thread back in its own after; a *netNSError says it could
// not, and the thread must not be unlocked.
func inNetNS(fd int, start func() error) error {
	if fd == 0 {
		return start()
	}
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return fmt.Errorf("this thread's network namespace: %w", err)
	}
	defer own.Close()
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	err = start()
	if back := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); back != nil {
		return &netNSError{errors.Join(err, back)}
	}
	return err
}
