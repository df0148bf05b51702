package main

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Config is the plugin's section of the modulo configuration. Every field is optional; the
// zero Config runs Debian's redis-server with the settings below. The persistence and
// replication settings decide which of Redis's resync paths a schedule exercises (the Modulo
// paper's Redis bugs need AOF persistence and partial resyncs from the backlog), so they are
// the plugin's to choose, not the server's defaults.
type Config struct {
	// Server is the redis-server binary: a path, or a name looked up in PATH. Empty means
	// "redis-server" from PATH, then /usr/bin/redis-server.
	Server string `toml:"server"`
	// AppendOnly turns AOF persistence on (default true): a crashed replica restarts with the
	// writes it had.
	AppendOnly *bool `toml:"appendonly"`
	// AppendFsync is always, everysec (default) or no.
	AppendFsync string `toml:"appendfsync"`
	// ReplBacklogSize is repl-backlog-size, such as "1mb"; empty keeps the server's default.
	ReplBacklogSize string `toml:"repl_backlog_size"`
	// ReplBacklogTTL is repl-backlog-ttl in seconds; unset keeps the server's default.
	ReplBacklogTTL *int `toml:"repl_backlog_ttl"`
	// ReplTimeout is repl-timeout in seconds; unset keeps the server's default (60).
	ReplTimeout *int `toml:"repl_timeout"`
	// ReplDisklessSync is repl-diskless-sync (default false: full syncs go through an RDB file).
	ReplDisklessSync bool `toml:"repl_diskless_sync"`
	// ReplDisklessSyncDelay is repl-diskless-sync-delay in seconds (default 0; the server's 5
	// adds 5 s to every initial sync).
	ReplDisklessSyncDelay int `toml:"repl_diskless_sync_delay"`
	// Hz is the server's hz (default 100; the server's own default is 10). A server notices a
	// finished snapshot or AOF rewrite child only at a cron tick, hz times a second: at 10 a
	// full resync (a snapshot on the source, an AOF rewrite on the replica) takes up to 200 ms
	// more, and Start and a convergence took twice as long (measured). hz changes no
	// replication rule; the replication cron runs once a second whatever hz is.
	Hz int `toml:"hz"`
	// Save is the server's save setting (default "": no automatic snapshots, so that every RDB
	// file is one the plugin asked for).
	Save string `toml:"save"`
	// BreakRealisation is for testing the oracle only: "skip-relink" makes every convergence
	// skip the REPLICAOF that links a recovering replica to its source (and the wait for it),
	// so that schedules end with replicas that really differ. Never set it to test a system.
	BreakRealisation string `toml:"break_realisation"`
}

// breakSkipRelink is the one value BreakRealisation knows.
const breakSkipRelink = "skip-relink"

// debianServer is where Debian installs redis-server, tried when PATH has none.
const debianServer = "/usr/bin/redis-server"

var memorySize = regexp.MustCompile(`(?i)^[0-9]+(b|k|kb|m|mb|g|gb)?$`)

// parseConfig decodes the plugin's TOML section and checks every value; an unknown key is an
// error that names it.
func parseConfig(data []byte) (Config, error) {
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return c, fmt.Errorf("redis config: %w", err)
	}
	if keys := md.Undecoded(); len(keys) > 0 {
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = strconv.Quote(k.String())
		}
		sort.Strings(names)
		return c, fmt.Errorf("redis config: unknown key %s", strings.Join(names, ", "))
	}
	if c.AppendOnly == nil {
		yes := true
		c.AppendOnly = &yes
	}
	if c.Hz == 0 {
		c.Hz = 100
	}
	if c.AppendFsync == "" {
		c.AppendFsync = "everysec"
	}
	var errs []error
	switch c.AppendFsync {
	case "always", "everysec", "no":
	default:
		errs = append(errs, fmt.Errorf("appendfsync must be always, everysec or no, got %q", c.AppendFsync))
	}
	if c.ReplBacklogSize != "" && !memorySize.MatchString(c.ReplBacklogSize) {
		errs = append(errs, fmt.Errorf("repl_backlog_size must be a size such as \"1mb\", got %q", c.ReplBacklogSize))
	}
	if c.ReplBacklogTTL != nil && *c.ReplBacklogTTL < 0 {
		errs = append(errs, fmt.Errorf("repl_backlog_ttl must not be negative, got %d", *c.ReplBacklogTTL))
	}
	if c.ReplTimeout != nil && *c.ReplTimeout < 1 {
		errs = append(errs, fmt.Errorf("repl_timeout must be at least 1 second, got %d", *c.ReplTimeout))
	}
	if c.Hz < 1 || c.Hz > 500 {
		errs = append(errs, fmt.Errorf("hz must be between 1 and 500, got %d", c.Hz))
	}
	if c.ReplDisklessSyncDelay < 0 {
		errs = append(errs, fmt.Errorf("repl_diskless_sync_delay must not be negative, got %d", c.ReplDisklessSyncDelay))
	}
	if c.BreakRealisation != "" && c.BreakRealisation != breakSkipRelink {
		errs = append(errs, fmt.Errorf("break_realisation must be %q or unset, got %q", breakSkipRelink, c.BreakRealisation))
	}
	if len(errs) > 0 {
		// One line: the first problem, and how many more there are.
		msg := errs[0].Error()
		if len(errs) > 1 {
			msg += fmt.Sprintf(" (and %d more problems)", len(errs)-1)
		}
		return c, errors.New("redis config: " + msg)
	}
	return c, nil
}

// serverPath resolves the server binary, naming every path it tried when there is none.
func (c *Config) serverPath() (string, error) {
	if c.Server != "" {
		p, err := exec.LookPath(c.Server)
		if err != nil {
			return "", fmt.Errorf("redis server binary %q not found", c.Server)
		}
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath(debianServer); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("redis server binary not found: no redis-server in PATH and no %s", debianServer)
}

// serverConfig renders the redis.conf of one replica. Values go in double quotes, which Redis
// reads as one argument each.
func (c *Config) serverConfig(port int, dir string) string {
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	lines := [][2]string{
		{"port", strconv.Itoa(port)},
		{"hz", strconv.Itoa(c.Hz)},
		{"bind", "127.0.0.1"},
		{"protected-mode", "no"},
		{"daemonize", "no"},
		{"dir", dir},
		{"logfile", ""}, // stdout, which the plugin keeps in the replica's log file
		// A divergence may hand a write straight to a replica whose source misses it.
		{"replica-read-only", "no"},
		{"appendonly", yesNo(*c.AppendOnly)},
		{"appendfsync", c.AppendFsync},
		{"save", c.Save},
		{"repl-diskless-sync", yesNo(c.ReplDisklessSync)},
		{"repl-diskless-sync-delay", strconv.Itoa(c.ReplDisklessSyncDelay)},
	}
	if c.ReplBacklogSize != "" {
		lines = append(lines, [2]string{"repl-backlog-size", c.ReplBacklogSize})
	}
	if c.ReplBacklogTTL != nil {
		lines = append(lines, [2]string{"repl-backlog-ttl", strconv.Itoa(*c.ReplBacklogTTL)})
	}
	if c.ReplTimeout != nil {
		lines = append(lines, [2]string{"repl-timeout", strconv.Itoa(*c.ReplTimeout)})
	}
	var b strings.Builder
	b.WriteString("# Written by modulo's redis plugin; the server reads it at every (re)start.\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %q\n", l[0], l[1])
	}
	return b.String()
}
