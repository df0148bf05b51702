//go:build linux

// Process groups and parent-death signals are Linux facilities; plugins run on Linux.

package cem

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modulo-testing/modulo/cem/proc"
	"google.golang.org/grpc"
)

// Handshake is the go-plugin handshake between modulo and its plugins. The cookie only tells a
// plugin binary that it was started by modulo; the protocol version makes modulo refuse a
// plugin built for another version of this protocol.
// socketDirPrefix begins the name of each plugin's socket directory, in the temporary
// directory: modulo-plugin-<pid of the modulo that launched it>-<random>.
const socketDirPrefix = "modulo-plugin-"

// sweepSocketDirs removes the socket directories of modulo processes that are gone (killed
// with SIGKILL, they could not remove them).
func sweepSocketDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), socketDirPrefix+"*-*"))
	for _, d := range dirs {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), socketDirPrefix), "-")
		if n, err := strconv.Atoi(pid); ok && err == nil && n != os.Getpid() && !proc.Alive(n) {
			_ = os.RemoveAll(d)
		}
	}
}

// PluginPrefix begins the name of every plugin binary: modulo-plugin-<name>.
const PluginPrefix = "modulo-plugin-"

var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "MODULO_PLUGIN",
	MagicCookieValue: "7d1c5e9a3b2f48e6a0c4d8b1f6e2a9c3",
}

// pluginName is the name the one plugin of a binary is served and dispensed under.
const pluginName = "cem"

// closeGrace bounds how long Close waits for the plugin to exit when asked, before it kills
// it: a plugin exits within milliseconds unless it is stopped or stuck.
const closeGrace = 2 * time.Second

// Serve serves impl over gRPC to the modulo that started this process, and returns only when
// modulo ends the plugin. A plugin's main calls it and nothing else. Run by hand, outside
// modulo, it says that the binary is a plugin and exits with status 1. Sent SIGTERM, it cancels
// the calls under way, tears impl's cluster down and exits with status 143 (endOnTerminate).
//
// Plugins log with hclog.L() (Serve makes it a JSON logger on stderr that modulo reads): modulo
// shows warnings and errors, tagged with the plugin's name. Anything else written to stderr
// is shown as-is.
func Serve(impl CEM) {
	logger := hclog.New(&hclog.LoggerOptions{
		Level:      hclog.Debug,
		Output:     os.Stderr,
		JSONFormat: true, // so that modulo keeps each line's level
	})
	hclog.SetDefault(logger)
	life, die := context.WithCancel(context.Background())
	endOnTerminate(impl, die)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{pluginName: &grpcPlugin{impl: impl}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.ChainUnaryInterceptor(within(life)))...)
		},
		Logger: logger,
	})
}

var (
	_ CEM      = (*Client)(nil)
	_ Restorer = (*Client)(nil)
)

// Client is a running plugin process. It implements CEM by calling the plugin; a call fails
// promptly, naming the method, when the plugin dies during it.
type Client struct {
	path      string
	pid       int    // the plugin's pid, also its process group ID
	start     uint64 // the plugin's start time, to tell its group from a later one with its ID
	plugin    *plugin.Client
	cem       *grpcClient
	cancel    context.CancelFunc // kills the plugin's group through its exec.Cmd, if still running
	socketDir string             // holds the plugin's Unix socket

	closeOnce sync.Once
	closeErr  error
}

// Launch starts the plugin binary at path and connects to it. The plugin runs in a process
// group of its own, away from the terminal's Ctrl-C, and gets SIGKILL if modulo dies. Its
// warnings and errors go to stderr (nil means os.Stderr). ctx bounds the start only: once
// Launch has returned, the plugin runs until Close.
func Launch(ctx context.Context, path string, stderr io.Writer) (*Client, error) {
	abs, err := checkExecutable(path)
	if err != nil {
		return nil, err
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	stderr = &lockedWriter{w: stderr} // go-plugin writes to it from several goroutines
	// The plugin listens on a Unix socket in a directory of its own, which Close removes:
	// a killed plugin cannot remove its socket itself. The directory is named after this
	// process, so that the directories of a modulo that was killed can be swept.
	sweepSocketDirs()
	socketDir, err := os.MkdirTemp("", socketDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}

	// The command's own context kills the plugin's group; Launch forwards ctx to it only
	// until the plugin is connected, and Close ends it.
	procCtx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, abs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return proc.KillGroup(cmd.Process.Pid) }
	cmd.Env = append(os.Environ(), plugin.EnvUnixSocketDir+"="+socketDir) // last, so it wins

	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          plugin.PluginSet{pluginName: &grpcPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		SkipHostEnv:      true, // cmd.Env has it already
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "plugin",
			Output: stderr,
			Level:  hclog.Warn,
			// go-plugin says so whenever it kills a plugin it could not stop politely, which is
			// how every plugin that exited on its own ends: Launch and Close say what matters.
			Exclude: func(_ hclog.Level, msg string, _ ...any) bool { return msg == "plugin failed to exit gracefully" },
		}),
		SyncStderr: stderr, // what the plugin writes to os.Stderr besides its log
	})
	c := &Client{path: path, plugin: pc, cancel: cancel, socketDir: socketDir}

	stopForwarding := context.AfterFunc(ctx, cancel)
	cem, err := c.connect(cmd)
	if !stopForwarding() && err == nil {
		err = ctx.Err() // ctx ended as the plugin connected, and has killed it
	}
	if err != nil {
		_ = c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugin %s: %w", path, ctx.Err())
		}
		return nil, fmt.Errorf("plugin %s: %s", path, startError(err))
	}
	c.cem = cem
	return c, nil
}

// connect starts the plugin process (cmd), reads its handshake and dispenses its CEM.
func (c *Client) connect(cmd *exec.Cmd) (*grpcClient, error) {
	// Pdeathsig fires when the thread that forked the plugin exits: fork from a thread that
	// stays locked for the call so the runtime cannot retire it under us.
	runtime.LockOSThread()
	rpc, err := c.plugin.Client()
	runtime.UnlockOSThread()
	if cmd.Process != nil { // set by go-plugin in this goroutine, even when the handshake failed
		c.pid = cmd.Process.Pid
		if start, err := proc.StartTime(c.pid); err == nil {
			c.start = start
		}
	}
	if err != nil {
		return nil, err
	}
	raw, err := rpc.Dispense(pluginName)
	if err != nil {
		return nil, err
	}
	return raw.(*grpcClient), nil // what grpcPlugin.GRPCClient returns
}

// checkExecutable returns path made absolute, or a one-line error when it names no
// executable file.
func checkExecutable(path string) (string, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("plugin %s: no such file", path)
	case err != nil:
		return "", fmt.Errorf("plugin %s: %w", path, err)
	case fi.IsDir():
		return "", fmt.Errorf("plugin %s: is a directory", path)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("plugin %s: not executable", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("plugin %s: %w", path, err)
	}
	return abs, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// startError says in one line why go-plugin could not start a plugin: some of its errors
// span several lines, and a binary that exits at once gets one of two depending on timing.
func startError(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "plugin exited before we could connect") ||
		strings.Contains(msg, "Failed to read any lines from plugin's stdout") {
		return "exited before the handshake (is it a modulo plugin?)"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return line
}

// Info asks the plugin to describe itself and its server binary.
func (c *Client) Info(ctx context.Context, config []byte) (Info, error) {
	return c.cem.Info(ctx, config)
}

// Start asks the plugin to start a cluster.
func (c *Client) Start(ctx context.Context, spec ClusterSpec) error { return c.cem.Start(ctx, spec) }

// Apply asks the plugin to realise one step. A step whose state was not reached returns a
// *NotReachedError with the actions taken; any other error comes with an empty report.
func (c *Client) Apply(ctx context.Context, step Step) (StepReport, error) {
	return c.cem.Apply(ctx, step)
}

// Read asks the plugin for every replica's data.
func (c *Client) Read(ctx context.Context) (Snapshot, error) { return c.cem.Read(ctx) }

// Teardown asks the plugin to stop its cluster.
func (c *Client) Teardown(ctx context.Context) error { return c.cem.Teardown(ctx) }

// Save asks the plugin to save its cluster (a Restorer's).
func (c *Client) Save(ctx context.Context, dir string) (Saved, error) { return c.cem.Save(ctx, dir) }

// Restore asks the plugin to restore a saved cluster (a Restorer's).
func (c *Client) Restore(ctx context.Context, spec ClusterSpec, dir string, steps []string) (Restored, error) {
	return c.cem.Restore(ctx, spec, dir, steps)
}

// Pid returns the plugin's process ID, which is also its process group ID.
func (c *Client) Pid() int { return c.pid }

// Exited tells whether the plugin process has exited. After a call failed because the plugin
// died, it turns true as soon as the process has been reaped, a moment later.
func (c *Client) Exited() bool { return c.plugin.Exited() }

// Close ends the plugin: it asks it to exit, kills it if it has not within a short grace,
// then kills what is left of its process group and waits until the group is gone. Servers
// that the plugin started in groups of their own are not its concern: Pdeathsig and
// proc.KillLeftovers end those. Close is safe to call twice and after the plugin died.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Client) close() error {
	defer c.cancel()
	killed := make(chan struct{})
	go func() {
		c.plugin.Kill() // asks the plugin to exit, waits for it and releases the connection
		close(killed)
	}()
	select {
	case <-killed:
	case <-time.After(closeGrace):
		c.cancel() // kills the group, which ends the wait above
		<-killed
	}
	var killErr error
	if c.pid != 0 { // the process started
		ctx, cancel := context.WithTimeout(context.Background(), proc.LeftoverTimeout)
		defer cancel()
		killErr = proc.KillGroupOf(ctx, c.pid, c.start)
	}
	rmErr := os.RemoveAll(c.socketDir)
	if err := cmp.Or(killErr, rmErr); err != nil {
		return fmt.Errorf("close plugin %s: %w", c.path, err)
	}
	return nil
}
