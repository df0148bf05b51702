//go:build linux

package cem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/proc"
)

// buildTestPlugin builds cem/internal/testplugin into a directory of t's. Each top-level test
// that needs it builds it once (the build cache makes that a link); TestMain is proc_test.go's.
func buildTestPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testplugin")
	out, err := exec.Command("go", "build", "-o", bin, "./internal/testplugin").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./internal/testplugin: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer collects what a plugin client writes to its stderr, from go-plugin's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// launchTest launches the plugin at bin for t and returns it with what it writes to its
// stderr. When t ends, it closes the plugin, checks that no process of its group is left and
// shows the plugin's stderr if t failed.
func launchTest(t *testing.T, bin string) (*Client, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stderr := &syncBuffer{}
	c, err := Launch(ctx, bin, stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		checkGroupGone(t, c.Pid())
		if t.Failed() {
			t.Logf("plugin stderr:\n%s", stderr)
		}
	})
	return c, stderr
}

// awaitPid waits until a process has written its pid into path.
func awaitPid(t *testing.T, path string) int {
	t.Helper()
	pid, err := proc.AwaitPid(context.Background(), path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// checkGroupGone fails t if some live process is left in process group pgid, and kills it
// so that the test leaves nothing behind either way.
func checkGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if pgid <= 0 {
		t.Errorf("no plugin pid (%d) to check", pgid)
		return
	}
	alive, err := proc.GroupAlive(pgid)
	if err != nil {
		t.Error(err)
	}
	if !alive {
		return
	}
	t.Errorf("process group %d still has live processes", pgid)
	if err := proc.KillGroup(pgid); err != nil {
		t.Error(err)
	}
	if err := proc.WaitGroupGone(context.Background(), pgid); err != nil {
		t.Error(err)
	}
}

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLaunchErrors checks that each way a binary can fail to be a plugin gives a one-line
// error naming the path, and that nothing it started is left running.
func TestLaunchErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The scripts record their pid (also their group's ID) and fork a child into their group,
	// so that the test can check that a failed launch ends the whole group.
	const prologue = "echo $$ > \"$0.pid\"\nsleep 300 >/dev/null 2>&1 &\n"
	tests := []struct {
		name    string
		path    string
		timeout time.Duration
		want    string // in the error, after "plugin PATH: "
		ctxErr  error  // the error errors.Is must find, if any
		ran     bool   // the script ran and wrote its pid
	}{
		{name: "missing", path: filepath.Join(dir, "nope"), want: "no such file"},
		{name: "directory", path: dir, want: "is a directory"},
		{name: "not executable", path: notExec, want: "not executable"},
		{
			name: "exits at once",
			path: writeScript(t, dir, "exits", prologue+"exit 3\n"),
			want: "exited before the handshake",
			ran:  true,
		},
		{
			name: "not a plugin",
			path: writeScript(t, dir, "talks", prologue+"echo hello\nexec sleep 300\n"),
			want: "Unrecognized remote plugin message: hello",
			ran:  true,
		},
		{
			name:    "never answers",
			path:    writeScript(t, dir, "hangs", prologue+"exec sleep 300\n"),
			timeout: 300 * time.Millisecond,
			want:    "context deadline exceeded",
			ctxErr:  context.DeadlineExceeded,
			ran:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			c, err := Launch(ctx, tt.path, &syncBuffer{})
			if err == nil {
				_ = c.Close()
				t.Fatalf("Launch(%s) succeeded", tt.path)
			}
			msg := err.Error()
			if want := "plugin " + tt.path + ": " + tt.want; !strings.HasPrefix(msg, want) {
				t.Errorf("error %q, want it to start with %q", msg, want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line", msg)
			}
			if tt.ctxErr != nil && !errors.Is(err, tt.ctxErr) {
				t.Errorf("error %q does not wrap %v", msg, tt.ctxErr)
			}
			if tt.ran {
				checkGroupGone(t, awaitPid(t, tt.path+".pid"))
			}
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// applyBlocking starts an Apply that blocks in the plugin until its context ends, and returns
// once the plugin is inside it (its marker file in dir exists), so that the call is truly in
// flight; the channel gets what the call returns.
func applyBlocking(ctx context.Context, t *testing.T, c *Client, dir string) <-chan error {
	t.Helper()
	marker := filepath.Join(dir, "blocking")
	errc := make(chan error, 1)
	go func() {
		_, err := c.Apply(ctx, Step{Index: 0, Transition: "block " + marker})
		errc <- err
	}()
	if err := proc.WaitFor(ctx, 10*time.Second, "the plugin to enter Apply", func(context.Context) (bool, error) {
		return fileExists(marker), nil
	}); err != nil {
		t.Fatal(err)
	}
	return errc
}

// TestPluginProcess checks the life of a plugin process: a plugin killed during a call, Close
// and the processes the plugin started in its own group.
func TestPluginProcess(t *testing.T) {
	bin := buildTestPlugin(t)

	t.Run("killed mid-Apply", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errc := applyBlocking(ctx, t, c, t.TempDir())
		if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-errc
		switch {
		case err == nil:
			t.Fatal("Apply succeeded on a killed plugin")
		case ctx.Err() != nil:
			t.Fatalf("Apply returned only when its context ended: %v", err)
		case !strings.HasPrefix(err.Error(), "plugin Apply: "):
			t.Errorf("error %q does not name the method", err)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("error %q is not one line", err)
		}
		if err := proc.WaitFor(ctx, 10*time.Second, "the plugin's exit to be noticed", func(context.Context) (bool, error) {
			return c.Exited(), nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Info(ctx, nil); err == nil || !strings.HasPrefix(err.Error(), "plugin Info: ") {
			t.Errorf("Info on a dead plugin: %v, want an error naming Info", err)
		}
	})

	t.Run("SIGTERM mid-Apply", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := t.TempDir()
		if err := c.Start(ctx, ClusterSpec{DRM: "ssr", Replicas: 1, Dir: dir, Config: []byte("child = true")}); err != nil {
			t.Fatal(err)
		}
		child := awaitPid(t, filepath.Join(dir, "child.pid"))
		errc := applyBlocking(ctx, t, c, dir)
		if err := syscall.Kill(c.Pid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The step under way holds the lock Teardown takes: only the cancellation of the calls
		// under way lets the teardown run, and the plugin exit, before its exit deadline (20 s).
		// What the call returns is a race of its cancelled answer with the plugin's exit: the
		// time tells, and the child (below) that the teardown ran.
		select {
		case err := <-errc:
			if err == nil {
				t.Error("Apply on a plugin sent SIGTERM succeeded")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Apply on a plugin sent SIGTERM still runs after 10 s: the calls under way were not cancelled")
		}
		if err := proc.WaitFor(ctx, 10*time.Second, "the plugin to exit", func(context.Context) (bool, error) {
			return c.Exited(), nil
		}); err != nil {
			t.Fatal(err)
		}
		// The child is no server: no parent-death signal ends it, only the plugin's Teardown.
		if err := proc.WaitFor(ctx, 5*time.Second, "the plugin's child to end", func(context.Context) (bool, error) {
			return !proc.Alive(child), nil
		}); err != nil {
			t.Errorf("the plugin's child %d outlived SIGTERM: the cluster was not torn down (%v)", child, err)
		}
	})

	t.Run("logs", func(t *testing.T) {
		c, stderr := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.Apply(ctx, Step{Transition: "log disk almost full"}); err != nil {
			t.Fatal(err)
		}
		// The plugin logs at Info first, then at Warn: once the warning has arrived, the line
		// before it has been read too, and must not have been shown.
		err := proc.WaitFor(ctx, 10*time.Second, "the plugin's warning", func(context.Context) (bool, error) {
			return strings.Contains(stderr.String(), "[WARN]  plugin.testplugin: disk almost full"), nil
		})
		if err != nil {
			t.Fatalf("%v; stderr:\n%s", err, stderr)
		}
		if strings.Contains(stderr.String(), "[INFO]") {
			t.Errorf("stderr shows an Info line:\n%s", stderr)
		}
	})

	t.Run("close kills its group", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := t.TempDir()
		spec := ClusterSpec{DRM: "ssr", Replicas: 1, Dir: dir, Config: []byte("child = true")}
		if err := c.Start(ctx, spec); err != nil {
			t.Fatal(err)
		}
		child := awaitPid(t, filepath.Join(dir, "child.pid"))
		if !proc.Alive(child) {
			t.Fatalf("the plugin's child %d is not running", child)
		}
		if c.Exited() {
			t.Fatal("Exited before Close")
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if proc.Alive(child) {
			t.Errorf("the plugin's child %d outlived Close", child)
		}
		if !c.Exited() {
			t.Error("not Exited after Close")
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := c.Read(ctx); err == nil || !strings.HasPrefix(err.Error(), "plugin Read: ") {
			t.Errorf("Read after Close: %v, want an error naming Read", err)
		}
	})

	t.Run("other protocol version", func(t *testing.T) {
		t.Setenv("TESTPLUGIN_PROTOCOL_VERSION", strconv.Itoa(ProtocolVersion+1))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := Launch(ctx, bin, &syncBuffer{})
		if err == nil {
			_ = c.Close()
			t.Fatal("Launch accepted a plugin of another protocol version")
		}
		// The rest of the text is go-plugin's.
		msg := err.Error()
		prefix, version := "plugin "+bin+": ", fmt.Sprintf("Plugin version: %d,", ProtocolVersion+1)
		if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, version) || strings.Contains(msg, "\n") {
			t.Errorf("error %q, want one line starting with %q and naming %q", msg, prefix, version)
		}
	})

	t.Run("dies with its host", func(t *testing.T) {
		host := exec.Command(bin)
		// TMPDIR keeps the socket directory that the killed host cannot remove in t's.
		host.Env = append(os.Environ(), "TESTPLUGIN_HOST="+bin, "TMPDIR="+t.TempDir())
		host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		host.Stderr = os.Stderr
		out, err := host.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
		var plugin int
		t.Cleanup(func() {
			_ = proc.KillGroup(host.Process.Pid)
			_ = host.Wait()
			if plugin > 0 {
				_ = proc.KillGroup(plugin)
			}
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("the host printed no plugin pid: %v", err)
		}
		if plugin, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
			t.Fatalf("the host printed %q", line)
		}
		if err := host.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = host.Wait()
		err = proc.WaitFor(context.Background(), 10*time.Second, "the plugin to die with its host",
			func(context.Context) (bool, error) {
				alive, err := proc.GroupAlive(plugin)
				return !alive, err
			})
		if err != nil {
			t.Error(err)
		}
	})

	// A stopped plugin cannot exit when asked: Close must kill it after its grace.
	t.Run("close a stopped plugin", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		if err := syscall.Kill(c.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if !c.Exited() {
			t.Error("not Exited after Close")
		}
	})
}

// TestSweepSocketDirs: the socket directories of a modulo that is gone are removed, this
// process's and a live one's are kept.
func TestSweepSocketDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{ // name -> kept
		socketDirPrefix + strconv.Itoa(gone.Process.Pid) + "-1": false,
		socketDirPrefix + strconv.Itoa(os.Getpid()) + "-2":      true,
		socketDirPrefix + "1-3":                                 true, // init lives
	}
	for d := range dirs {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepSocketDirs()
	for d, kept := range dirs {
		if _, err := os.Stat(filepath.Join(tmp, d)); (err == nil) != kept {
			t.Errorf("%s: exists %v, want %v", d, err == nil, kept)
		}
	}
}
