package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem"
)

// portsPerReplica: client, quorum (follower to leader) and leader election.
const portsPerReplica = 3

// mainClass runs a replica from its zoo.cfg: a quorum peer when the file lists servers, a
// standalone server when it lists none.
const mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// replica is one concrete ZooKeeper server of a cluster. Its files live in dir: zoo.cfg,
// data/ (myid, version-2/ with the transaction logs and snapshots), the log of every run and
// the pid file of the current one.
type replica struct {
	index        int // concrete index; the server's myid is index+1
	name         string
	dir          string
	dataDir      string
	clientPort   int
	quorumPort   int
	electionPort int
	proc         *cem.Process // nil while crashed
	startedAt    time.Time    // when proc was forked
	// standalone is set once break_realisation has brought it back as a standalone server.
	standalone bool
}

func newReplica(clusterDir string, index, basePort int) *replica {
	name := "zk" + strconv.Itoa(index)
	dir := filepath.Join(clusterDir, name)
	port := basePort + index*portsPerReplica
	return &replica{
		index: index, name: name, dir: dir, dataDir: filepath.Join(dir, "data"),
		clientPort: port, quorumPort: port + 1, electionPort: port + 2,
	}
}

func (r *replica) clientAddr() string { return "127.0.0.1:" + strconv.Itoa(r.clientPort) }

func (r *replica) configPath() string { return filepath.Join(r.dir, "zoo.cfg") }

// running tells whether the replica's server is up (it may be suspended).
func (r *replica) running() bool { return r.proc != nil && r.proc.Running() }

// prepare writes the replica's zoo.cfg and myid for an ensemble of peers.
func (r *replica) prepare(cfg *Config, peers []*replica) error {
	if err := os.MkdirAll(r.dataDir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	if err := os.WriteFile(filepath.Join(r.dataDir, "myid"), []byte(strconv.Itoa(r.index+1)+"\n"), 0o644); err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	return os.WriteFile(r.configPath(), []byte(zooCfg(cfg, r, peers)), 0o644)
}

// zooCfg renders a replica's zoo.cfg; with no peers it is a standalone server's.
func zooCfg(cfg *Config, r *replica, peers []*replica) string {
	var b strings.Builder
	b.WriteString("# Written by modulo's zookeeper plugin; the server reads it at every (re)start.\n")
	line := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	line("tickTime", cfg.TickTimeMS)
	line("initLimit", cfg.InitLimit)
	line("syncLimit", cfg.SyncLimit)
	line("dataDir", r.dataDir)
	line("clientPort", r.clientPort)
	line("clientPortAddress", "127.0.0.1")
	line("admin.enableServer", false) // its Jetty would need servlet-api.jar and a port
	line("4lw.commands.whitelist", "*")
	line("localSessionsEnabled", *cfg.LocalSessions)
	for _, p := range peers {
		line("server."+strconv.Itoa(p.index+1), fmt.Sprintf("127.0.0.1:%d:%d", p.quorumPort, p.electionPort))
	}
	return b.String()
}

// log4jProperties sends ZooKeeper's INFO log (LEADING, FOLLOWING, how each sync went) to
// stdout, which StartProcess keeps in the replica's log file, except the line each
// four-letter word logs: the plugin polls with them. The pattern names the logger rather than
// the calling class and line, which log4j finds by walking the stack.
const log4jProperties = `log4j.rootLogger=INFO, CONSOLE
log4j.logger.org.apache.zookeeper.server.NIOServerCnxn=WARN
log4j.logger.org.apache.zookeeper.server.command=WARN
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
`

// javaArgs is the java command line (after the binary) that runs a replica with configFile.
// extra goes after the configured flags (the AppCDS flag).
func javaArgs(cfg *Config, in *install, log4jFile, configFile string, extra []string) []string {
	args := append([]string(nil), cfg.JVMFlags...)
	args = append(args, extra...)
	args = append(args,
		"-Dlog4j.configuration="+log4jURL(log4jFile),
		"-Dzookeeper.fastleader.minNotificationInterval="+strconv.Itoa(cfg.MinNotificationIntervalMS),
		"-Dzookeeper.fastleader.maxNotificationInterval="+strconv.Itoa(cfg.MaxNotificationIntervalMS),
		"-Dzookeeper.cnxTimeout="+strconv.Itoa(cfg.ElectionConnectTimeoutMS),
		"-Dzookeeper.leaderConnectDelayDuringRetryMs="+strconv.Itoa(cfg.LeaderConnectRetryMS),
		// Log4j's JMX beans are of no use here and cost start-up time.
		"-Dzookeeper.jmx.log4j.disable=true",
	)
	if !*cfg.ForceSync {
		args = append(args, "-Dzookeeper.forceSync=no")
	}
	return append(args, "-cp", strings.Join(in.classpath, ":"), mainClass, configFile)
}

// start starts the replica's server; it returns once the JVM is forked, not once it serves.
func (r *replica) start(c *cluster) error {
	if r.running() {
		return fmt.Errorf("%s is already running (pid %d)", r.name, r.proc.Pid)
	}
	p, err := cem.StartProcess(cem.ProcessSpec{
		Name: r.name,
		Dir:  r.dir,
		Path: c.install.java,
		Args: javaArgs(&c.cfg, c.install, c.log4jFile, r.configPath(), c.cdsFlags),
	})
	if err != nil {
		return err
	}
	r.proc, r.startedAt = p, time.Now()
	return nil
}

// kill SIGKILLs the replica's process group and waits until it is gone.
func (r *replica) kill(ctx context.Context) error {
	if r.proc == nil {
		return nil
	}
	if err := r.proc.Kill(ctx); err != nil {
		return err
	}
	r.proc = nil
	return nil
}

// suspend SIGSTOPs the replica's process group and waits until every thread of the JVM has
// stopped: kill(2) only makes the signal pending, and a thread busy on another CPU could
// still handle a packet before it takes it.
func (r *replica) suspend(ctx context.Context, timeout time.Duration) error {
	if err := r.proc.Stop(); err != nil {
		return err
	}
	pid := r.proc.Pid
	return cem.WaitFor(ctx, timeout, fmt.Sprintf("every thread of %s (pid %d) stopped", r.name, pid),
		func(context.Context) (bool, error) { return allThreadsStopped(pid) })
}

// allThreadsStopped tells whether every thread of process pid is stopped (or has exited).
func allThreadsStopped(pid int) (bool, error) {
	taskDir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(taskDir)
	if err != nil {
		return false, fmt.Errorf("threads of pid %d: %w", pid, err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(taskDir, t.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses and may hold spaces.
		end := bytes.LastIndexByte(b, ')')
		if end < 0 || end+2 >= len(b) {
			return false, fmt.Errorf("thread %s of pid %d: malformed stat", t.Name(), pid)
		}
		switch b[end+2] {
		case 'T', 't', 'Z', 'X':
		default:
			return false, nil
		}
	}
	return true, nil
}

// exitedError describes a replica whose server exited on its own, with the last error its log
// holds, so that a configuration or JVM problem is named rather than waited out.
func (r *replica) exitedError() error {
	if r.proc == nil || r.proc.Running() {
		return nil
	}
	err := r.proc.Wait(context.Background())
	last := lastLogError(r.proc.LogPath)
	if last == "" {
		return fmt.Errorf("%s exited (%v); see %s", r.name, err, r.proc.LogPath)
	}
	return fmt.Errorf("%s exited (%v): %s; see %s", r.name, err, last, r.proc.LogPath)
}

// lastLogError returns the last ERROR line of a log (or the last line, for a JVM that failed
// before log4j started).
func lastLogError(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], " ERROR ") {
			return strings.TrimSpace(lines[i])
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// logTimeLayout is the time at the start of every line log4jProperties writes.
const logTimeLayout = "2006-01-02 15:04:05,000"

// electedAt returns when a replica's log last says it became leader or follower at or after
// since (to the millisecond), or the zero time.
func electedAt(logPath string, since time.Time) time.Time {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return time.Time{}
	}
	var at time.Time
	since = since.Truncate(time.Millisecond)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "LEADING - LEADER ELECTION TOOK") && !strings.Contains(line, "FOLLOWING - LEADER ELECTION TOOK") {
			continue
		}
		if len(line) < len(logTimeLayout) {
			continue
		}
		t, err := time.ParseInLocation(logTimeLayout, line[:len(logTimeLayout)], time.Local)
		if err == nil && !t.Before(since) {
			at = t
		}
	}
	return at
}
