//go:build linux

// Threads are read from /proc, a Linux facility; plugins run on Linux.

package kit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem/fault"
	"github.com/modulo-testing/modulo/cem/proc"
)

// startServer starts r's server with the system's command; it returns once the process is
// forked, not once it serves.
func (p *Plugin) startServer(r *Replica) error {
	if r.running() {
		return fmt.Errorf("%s: start: its server (pid %d) is running already", r.Name, r.proc.Pid)
	}
	cmd, err := p.sys.Command(p.c, r)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	path, err := ExpandHome(cmd.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	proc, err := proc.StartProcess(proc.ProcessSpec{Name: r.Name, Dir: r.Dir, Path: path, Args: cmd.Args, Env: cmd.Env, NetNS: r.NetNS})
	if err != nil {
		return err
	}
	r.proc, r.suspended, r.link, r.broken, r.failed = proc, false, r.startLink, false, nil
	r.Starts++
	p.act(r, "start %s (pid %d, start %d)", filepath.Base(cmd.Path), proc.Pid, r.Starts)
	return nil
}

// awaitReady waits until r's server serves, when the system can tell, failing at once when
// r's server or one of started's exits (a server that waits for a quorum never serves when a
// peer started with it died).
func (p *Plugin) awaitReady(ctx context.Context, r *Replica, started ...*Replica) error {
	rd, ok := p.sys.(Readier)
	if !ok {
		return nil
	}
	return p.await(ctx, r.Name+" to serve", append([]*Replica{r}, started...), func(ctx context.Context) (bool, string, error) {
		return rd.Ready(ctx, r)
	})
}

// startOrder is the order in which group starts or recovers, and whether each waits until the
// one before it serves: the system's, where it decides starts for the group (GroupStarter),
// else group's own, at once.
func (p *Plugin) startOrder(ctx context.Context, group []*Replica) (order []*Replica, oneByOne bool, err error) {
	gs, ok := p.sys.(GroupStarter)
	if !ok {
		return group, false, nil
	}
	var running []*Replica
	for _, r := range p.c.Replicas {
		if r.running() {
			running = append(running, r)
		}
	}
	err = p.call(ctx, "the system's start of "+names(group), func(ctx context.Context) error {
		order, oneByOne, err = gs.StartGroup(ctx, p.c, group, running)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if len(order) != len(group) || slices.ContainsFunc(group, func(r *Replica) bool { return !slices.Contains(order, r) }) {
		return nil, false, fmt.Errorf("StartGroup ordered %s, which is not the group %s", names(order), names(group))
	}
	how := "at once"
	if oneByOne {
		how = "each once the one before serves"
	}
	p.act(nil, "start order, the system's: %s, %s", names(order), how)
	return order, oneByOne, nil
}

// restart starts r's server again from its directory and waits until it serves.
func (p *Plugin) restart(ctx context.Context, r *Replica) error {
	if err := p.startServer(r); err != nil {
		return err
	}
	if err := p.awaitReady(ctx, r); err != nil {
		return err
	}
	return p.checkKept(ctx, r)
}

// fail fails r's server by kind k (package cem/fault) and remembers how, until recover.
func (p *Plugin) fail(ctx context.Context, r *Replica, k fault.Kind) error {
	if err := p.noteHeld(ctx, r, k); err != nil {
		return err
	}
	if err := k.Inject(ctx, server{p, r}); err != nil {
		return fmt.Errorf("%s: %s: %w", r.Name, k.Failure(), err)
	}
	r.failed = k
	return nil
}

// recover undoes r's failure: a crashed server starts again (without waiting until it
// serves), a cut-off one is healed, a paused one goes on.
func (p *Plugin) recover(ctx context.Context, r *Replica) error {
	if r.failed == nil {
		return fmt.Errorf("%s: recover: it has not failed", r.Name)
	}
	if err := r.failed.Recover(ctx, server{p, r}); err != nil {
		return fmt.Errorf("%s: recover from %s: %w", r.Name, r.failed.Failure(), err)
	}
	r.failed = nil
	return nil
}

// kindIn is how abstract replica a of state s failed: the kind s remembers, or the DRM's one;
// nil where it did not fail.
func (p *Plugin) kindIn(s *aem.State, a int) fault.Kind {
	k, _ := p.kind(s.FailedAs(a))
	return k
}

// kind is the kind that realises failure f of the DRM's model (drms.DRM.KindOf).
func (p *Plugin) kind(f aem.Failure) (fault.Kind, error) { return fault.Of(p.drm.KindOf(f)) }

// server is replica r's server as the failure kinds act on it (fault.Server).
type server struct {
	p *Plugin
	r *Replica
}

func (s server) Kill(ctx context.Context) error         { return s.p.kill(ctx, s.r) }
func (s server) Start(context.Context) error            { return s.p.startServer(s.r) }
func (s server) Stop(ctx context.Context) error         { return s.p.suspend(ctx, s.r) }
func (s server) Stopped() bool                          { return s.r.suspended }
func (s server) Continue(context.Context) error         { return s.p.resume(s.r) }
func (s server) CutOff(context.Context) error           { return s.p.cutOff(s.r) }
func (s server) Heal(context.Context) error             { return s.p.rejoin(s.r) }
func (s server) DropUnsynced(ctx context.Context) error { return s.p.powerLoss(ctx, s.r) }
func (s server) Running() bool                          { return s.r.running() }
func (s server) Draw(what string) uint64                { return s.p.drawFor(s.r, what) }
func (s server) FailDisks(_ context.Context, seed uint64) error {
	s.p.failDisks(s.r, seed)
	return nil
}
func (s server) HealDisks(context.Context) error  { s.p.healDisks(s.r); return nil }
func (s server) SpendDisks(context.Context) error { s.p.spendDisks(s.r); return nil }
func (s server) CorruptDisk(ctx context.Context, seed uint64) error {
	return s.p.corruptDisk(ctx, s.r, seed)
}
func (s server) AwaitIsolated(ctx context.Context) error {
	return s.p.awaitIsolated(ctx, []*Replica{s.r})
}

// AwaitDetection waits the system's detection time once per step (kit.Detector).
func (s server) AwaitDetection(ctx context.Context) error {
	d, ok := s.p.sys.(Detector)
	if !ok || s.p.detected == s.p.step {
		return nil
	}
	s.p.detected = s.p.step
	wait := d.DetectionTime(s.p.c)
	s.p.act(nil, "wait %v, the time %s takes to notice a peer that stopped answering (kit.Detector)", wait, s.p.about.Name)
	return sleep(ctx, wait, "detection wait")
}

// sleep waits d, or until ctx ends; what names the wait in the error.
func sleep(ctx context.Context, d time.Duration, what string) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// cutOff partitions r from every other replica, both ways: r.cut holds for it until rejoin,
// and a pair of replicas is cut exactly while one of them is.
func (p *Plugin) cutOff(r *Replica) error {
	if r.cut {
		return nil
	}
	from, err := p.withPeers(r, p.c.net.Cut) // a pair with a cut-off peer is cut already
	if err != nil {
		return err
	}
	r.cut = true
	if len(from) == 0 {
		p.act(r, "partitioned: cut off (every peer is cut off already)")
	} else {
		p.act(r, "partitioned: cut off from %s", strings.Join(from, ", "))
	}
	return nil
}

// rejoin heals r's links to every replica not cut off itself.
func (p *Plugin) rejoin(r *Replica) error {
	with, err := p.withPeers(r, p.c.net.Mend)
	if err != nil {
		return err
	}
	r.cut = false
	if len(with) == 0 {
		p.act(r, "healed: its links are whole (no peer is reachable yet)")
	} else {
		p.act(r, "healed: reaches %s again", strings.Join(with, ", "))
	}
	return nil
}

// awaitIsolated waits until every replica of cut has seen that a partition cuts it off, as the
// system's Isolation tells; without Isolation it returns at once.
func (p *Plugin) awaitIsolated(ctx context.Context, cut []*Replica) error {
	iso, ok := p.sys.(Isolation)
	if !ok {
		return nil
	}
	for _, r := range cut {
		err := p.await(ctx, r.Name+" to see that it is cut off", []*Replica{r}, func(ctx context.Context) (bool, string, error) {
			return iso.Isolated(ctx, p.c, r)
		})
		if err != nil {
			return err
		}
		p.act(r, "sees that it is cut off")
	}
	return nil
}

// withPeers calls link on r and every other replica that is not cut off, then every service
// (a cut-off machine has lost the whole network), and names them.
func (p *Plugin) withPeers(r *Replica, link func(i, j int) error) ([]string, error) {
	var names []string
	for _, x := range p.c.Replicas {
		if x == r || x.cut {
			continue
		}
		if err := link(r.Index, x.Index); err != nil {
			return nil, err
		}
		names = append(names, x.Name)
	}
	for _, s := range p.c.Services {
		if err := link(r.Index, s.host); err != nil {
			return nil, err
		}
		names = append(names, s.Name)
	}
	return names, nil
}

// kill SIGKILLs r's server with every process it forked, and waits until they are gone.
func (p *Plugin) kill(ctx context.Context, r *Replica) error {
	if r.proc == nil {
		return nil
	}
	return p.reap(ctx, r, "SIGKILL process group %d")
}

// reap kills what is left of r's server's process group, waits until it is gone and records
// what ended it (what, with the group's pid).
func (p *Plugin) reap(ctx context.Context, r *Replica, what string) error {
	pid := r.proc.Pid
	if err := r.proc.Kill(ctx); err != nil {
		return err
	}
	r.proc, r.suspended, r.link, r.broken = nil, false, aem.NoSource, false
	p.act(r, what, pid)
	return nil
}

// stop ends r's server so that it can be relinked: by the system's clean stop (Stopper), after
// which what is left of its process group is killed, or else by a SIGKILL (never a power
// loss: an operator's stop is no failure).
func (p *Plugin) stop(ctx context.Context, r *Replica) error {
	st, ok := p.sys.(Stopper)
	if !ok || r.proc == nil {
		return p.kill(ctx, r)
	}
	if err := p.call(ctx, "stop "+r.Name, func(ctx context.Context) error { return st.Stop(ctx, r) }); err != nil {
		return err
	}
	err := p.await(ctx, r.Name+"'s server to exit", nil, func(context.Context) (bool, string, error) {
		return !r.proc.Running(), "", nil
	})
	if err != nil {
		return err
	}
	return p.reap(ctx, r, "stopped cleanly (pid %d)")
}

// suspend SIGSTOPs every process of r's server and waits until every thread of them has
// stopped: kill(2) only makes the signal pending, and a thread busy on another CPU could still
// answer a request before it takes it.
func (p *Plugin) suspend(ctx context.Context, r *Replica) error {
	if p.brk == BreakFailNothing {
		// Recorded, not done: the conformance checks must catch it.
		r.suspended = true
		p.act(r, "%s = %q: SIGSTOP not sent", BreakKey, BreakFailNothing)
		return nil
	}
	if err := r.proc.Stop(); err != nil {
		return err
	}
	r.suspended = true
	pid := r.proc.Pid
	p.act(r, "SIGSTOP process group %d", pid)
	return p.await(ctx, fmt.Sprintf("every thread of %s (pid %d) stopped", r.Name, pid), nil,
		func(context.Context) (bool, string, error) {
			ok, err := r.proc.Stopped()
			if errors.Is(err, fs.ErrNotExist) {
				return false, "", nil // the server died: await says so at the next poll
			}
			return ok, "", err
		})
}

// resume SIGCONTs r's server's process group.
func (p *Plugin) resume(r *Replica) error {
	if err := r.proc.Cont(); err != nil {
		return err
	}
	r.suspended = false
	p.act(r, "SIGCONT process group %d", r.proc.Pid)
	return nil
}

// exitedError says that r's server is down: killed by the kit, or dead on its own, with the
// last lines of its log (a server says why it stopped at the end of its log, often over several
// lines: a stack, a hint).
func (p *Plugin) exitedError(r *Replica) error {
	if r.proc == nil {
		return fmt.Errorf("%s is down", r.Name)
	}
	// The process has exited (running says so), so Wait returns its status at once.
	status := r.proc.Wait(context.Background())
	return &exitedErr{r: r, status: status,
		msg: fmt.Sprintf("%s (pid %d) exited unexpectedly (%v); the last lines of its log %s:\n%s", r.Name, r.proc.Pid, status, r.proc.LogPath, indent(lastLogLines(r.proc.LogPath, logLines)))}
}

// exitedErr says that a server the kit did not stop has exited.
type exitedErr struct {
	r      *Replica
	status error // what its wait returned
	msg    string
}

func (e *exitedErr) Error() string { return e.msg }

// ownAccord tells whether the server ended itself (an exit status, an abort, a crash on a
// signal of its own): the system's failure. A SIGKILL that the kit did not send is another
// process's, most likely the kernel's out-of-memory killer: the machine's.
func (e *exitedErr) ownAccord() bool {
	var ee *exec.ExitError
	if !errors.As(e.status, &ee) {
		return e.status == nil // exit status 0: it stopped itself
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL
}

// logLines is how many of a log's last lines an error quotes.
const logLines = 20

// lastLogLines returns the last n non-empty lines of a log file.
func lastLogLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{"no log: " + err.Error()}
	}
	defer f.Close()
	var last []string
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if l := strings.TrimRight(s.Text(), " \t\r"); strings.TrimSpace(l) != "" {
			last = append(last, l)
			if len(last) > n {
				last = last[1:]
			}
		}
	}
	if len(last) == 0 {
		return []string{"(empty)"}
	}
	return last
}

// indent joins lines, each indented by two spaces, for a message's quote.
func indent(lines []string) string {
	return "  " + strings.Join(lines, "\n  ")
}

// ExpandHome reads a path that begins with ~/ (or is ~) as under the user's home directory, as
// a shell would: a plugin's table names servers that scripts/setup builds into ~/.cache/modulo,
// and TOML leaves the ~ to the reader. Any other path is returned as it is.
func ExpandHome(path string) (string, error) {
	rest, ok := strings.CutPrefix(path, "~")
	if !ok || rest != "" && rest[0] != '/' {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return home + rest, nil
}

// outputLimit bounds how much of a failing command's output an error quotes: its end, where a
// command says why it failed.
const outputLimit = 8 << 10

// Output runs a short-lived command, such as a server's --version, in a process group of its
// own that is killed when ctx ends, and returns what it printed on stdout and stderr. Its error
// names the command and quotes its whole output (its last 8 KiB, when longer).
func Output(ctx context.Context, path string, args ...string) (string, error) {
	expanded, err := ExpandHome(path)
	if err != nil {
		return "", err
	}
	bin, err := exec.LookPath(expanded)
	if err != nil {
		return "", fmt.Errorf("server binary %q not found", path)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Pdeathsig fires when the thread that forked the child exits: fork from a locked thread.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		text := strings.TrimSpace(out.String())
		if len(text) > outputLimit {
			text = "..." + text[len(text)-outputLimit:]
		}
		if text == "" {
			return "", fmt.Errorf("%s %s: %w (no output)", bin, strings.Join(args, " "), err)
		}
		return "", fmt.Errorf("%s %s: %w; its output:\n%s", bin, strings.Join(args, " "), err, indent(strings.Split(text, "\n")))
	}
	return out.String(), nil
}
