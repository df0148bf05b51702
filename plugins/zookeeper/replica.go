package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem/kit"
)

// mainClass runs a server from its zoo.cfg.
const mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// A server's files live in r.Dir: zoo.cfg, and data/ with myid and version-2/ (the
// transaction logs and snapshots); the kit keeps its log and pid file there too.

func configPath(r *kit.Replica) string { return filepath.Join(r.Dir, "zoo.cfg") }

func dataDir(r *kit.Replica) string { return filepath.Join(r.Dir, "data") }

// writeServerFiles writes r's zoo.cfg and myid (r.Index+1) for an ensemble of peers.
func writeServerFiles(cfg *Config, r *kit.Replica, peers []*kit.Replica) error {
	if err := os.MkdirAll(dataDir(r), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dataDir(r), "myid"), []byte(strconv.Itoa(r.Index+1)+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(configPath(r), []byte(zooCfg(cfg, r, peers)), 0o644)
}

// zooCfg renders r's zoo.cfg: ports r.Ports[0] client, [1] quorum, [2] election.
func zooCfg(cfg *Config, r *kit.Replica, peers []*kit.Replica) string {
	var b strings.Builder
	b.WriteString("# Written by modulo's zookeeper plugin; the server reads it at every (re)start.\n")
	line := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	line("tickTime", cfg.TickTimeMS)
	line("initLimit", *cfg.InitLimit)
	line("syncLimit", cfg.SyncLimit)
	// Relative to the server's working directory, its replica directory (dataDir(r)), so that
	// a failure folder's copy of the directory starts as it is.
	line("dataDir", filepath.Base(dataDir(r)))
	line("clientPort", r.Ports[0])
	line("clientPortAddress", r.Host)
	line("admin.enableServer", false) // its Jetty would need servlet-api.jar and a port
	line("4lw.commands.whitelist", "*")
	if *cfg.LocalSessions {
		// 3.4 would take the key as a system property of no effect: write it only when on.
		line("localSessionsEnabled", true)
	}
	for _, p := range peers {
		line("server."+strconv.Itoa(p.Index+1), fmt.Sprintf("%s:%d:%d", p.Host, p.Ports[1], p.Ports[2]))
	}
	return b.String()
}

// log4jProperties sends ZooKeeper's INFO log (LEADING, FOLLOWING, how each sync went) to
// stdout, which the kit keeps in the server's log file, except the line each four-letter word
// logs: the plugin polls with them. The pattern names the logger rather than the calling class
// and line, which log4j finds by walking the stack.
const log4jProperties = `log4j.rootLogger=INFO, CONSOLE
log4j.logger.org.apache.zookeeper.server.NIOServerCnxn=WARN
log4j.logger.org.apache.zookeeper.server.command=WARN
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
`

// javaArgs is the java command line (after the binary) that runs r from its zoo.cfg. cds goes
// after the configured flags (the AppCDS flag).
func (s *system) javaArgs(r *kit.Replica, cds []string) []string {
	cfg := &s.cfg
	args := append([]string(nil), cfg.JVMFlags...)
	args = append(args, cds...)
	args = append(args,
		"-Dlog4j.configuration="+(&url.URL{Scheme: "file", Path: s.log4jFile}).String(),
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
	args = append(args,
		"-Dzookeeper.preAllocSize="+strconv.Itoa(cfg.PreAllocSizeKB),
		"-Dzookeeper.snapCount="+strconv.Itoa(cfg.SnapCount))
	if f := cfg.SnapshotSizeFactor; f != nil {
		args = append(args, "-Dzookeeper.snapshotSizeFactor="+strconv.FormatFloat(*f, 'g', -1, 64))
	}
	return append(args, "-cp", strings.Join(s.in.classpath, ":"), mainClass, configPath(r))
}
