package main

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

// Config is the plugin's section of the modulo configuration. Every field is optional; the
// zero Config runs Debian's redis-server with the settings below. The persistence and
// replication settings decide which of Redis's resync paths a schedule exercises (the Modulo
// paper's Redis bugs need partial resyncs from the backlog, and some a backlog that expired),
// so they are the plugin's to choose, not the server's defaults.
type Config struct {
	// Server is the redis-server binary: a path, or a name looked up in PATH. Empty means
	// "redis-server" from PATH, then /usr/bin/redis-server. The plugin asks it its version and
	// writes only configuration and commands that version accepts (package dialect).
	Server string `toml:"server"`
	// Preset names a set of settings (presets) that this section's own keys override.
	Preset string `toml:"preset"`

	// AppendOnly turns AOF persistence on (default true): a crashed replica restarts with the
	// writes it had.
	AppendOnly *bool `toml:"appendonly"`
	// AppendFsync is always, everysec (default) or no.
	AppendFsync string `toml:"appendfsync"`
	// Save is the server's save setting (default "": no automatic snapshots, so that every RDB
	// file is one the plugin asked for), or pairs of seconds and changes such as "3600 1".
	Save string `toml:"save"`
	// ReplBacklogSize is repl-backlog-size, such as "1mb"; empty keeps the server's default.
	ReplBacklogSize string `toml:"repl_backlog_size"`
	// ReplBacklogTTL is repl-backlog-ttl in seconds: how long a master with no replica left
	// keeps its backlog. Unset keeps the server's default (3600).
	ReplBacklogTTL *int `toml:"repl_backlog_ttl"`
	// ReplTimeout is repl-timeout in seconds; unset keeps the server's default (60).
	ReplTimeout *int `toml:"repl_timeout"`
	// ReplDisklessSync is repl-diskless-sync (default false: full syncs go through an RDB file,
	// as they do on every server before 7.0).
	ReplDisklessSync bool `toml:"repl_diskless_sync"`
	// ReplDisklessSyncDelay is repl-diskless-sync-delay in seconds (default 0; the server's 5
	// adds 5 s to every diskless sync).
	ReplDisklessSyncDelay int `toml:"repl_diskless_sync_delay"`
	// Hz is the server's hz (default 100; the server's own default is 10). A server notices a
	// finished snapshot or AOF rewrite child only at a cron tick, hz times a second: at 10 a
	// full resync (a snapshot on the source, an AOF rewrite on the replica) takes up to 200 ms
	// more, and Start and a convergence took twice as long (measured). hz changes no
	// replication rule; the replication cron runs once a second whatever hz is.
	Hz int `toml:"hz"`
	// FailureWait is how long a divergence waits, after it broke a replication link (a link
	// failure, a disconnection, a crash or a promotion), before the next step (default 0).
	// It is the one fixed wait of the plugin, and a deliberate one: the Modulo paper (§3.3)
	// waited longer than repl-backlog-ttl so that a master that lost its last replica drops
	// its backlog, which nothing else makes happen at a known time. A master checks the ttl
	// once a second in whole seconds, so waiting ttl+2 s makes sure the backlog is gone.
	FailureWait time.Duration `toml:"failure_wait"`

	// ValueSize is the size in bytes of every written value (default 0: the value is just its
	// identity, "<schedule>:<step>.<write>.<set>", about 30 bytes). A larger size pads the
	// identity; values larger than repl-backlog-size overflow the backlog.
	ValueSize int `toml:"value_size"`
	// SetsPerWrite is how many SETs, each to a key of its own, realise one abstract write
	// (default 1).
	SetsPerWrite int `toml:"sets_per_write"`
	// Databases spreads the SETs over the logical databases 0..Databases-1 in turn (default
	// 1: database 0 only). Replicas' data is compared in every database.
	Databases int `toml:"databases"`
	// KeyPrefix begins every key the plugin writes (default none): the kit names write j of
	// step s "k<s>.<j>", and with several SETs a write the m-th SET's key ends in ".<m>".
	KeyPrefix string `toml:"key_prefix"`
	// Probe, on by default, makes the last convergence end with one more write through the
	// primary of each replication tree, in each database in use, and waits for it to reach
	// every replica of the tree: a link that a resync left broken while it reports itself
	// healthy shows only when new writes flow over it.
	Probe *bool `toml:"probe"`
}

// presets are named settings, in the TOML of the plugin's section; a section's own keys
// override its preset's.
//
// "paper" is what the Modulo paper (USENIX ATC'22) says of its Redis runs. §3.3: "Modelling
// divergence behavior to wait longer than the timeout [the backlog's time to live] before
// triggering resync will cause the log to be prematurely discarded": the paper waited longer
// than repl-backlog-ttl after failures. It gives neither value; the preset takes the smallest
// ttl (1 s) and a wait (3 s) that outlasts it for certain. The paper compared only the final
// state, so no probe. It is silent on persistence, fsync, backlog size, repl-timeout, hz and
// diskless sync, which keep the plugin's defaults; its Table 3 parameters (ops, replicas)
// belong to the schedule file; its servers were 2.8.0 and 4.0.0 (appendix A.3), which
// `server` selects where they are installed. The same settings serve all three Redis DRMs:
// the paper gives none per DRM.
var presets = map[string]string{
	"paper": `
repl_backlog_ttl = 1
failure_wait = "3s"
probe = false
`,
}

// presetNames lists the presets, sorted.
func presetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// debianServer is where Debian installs redis-server, tried when PATH has none.
const debianServer = "/usr/bin/redis-server"

// Bounds of the workload and timing settings: beyond them a run is a mistake, not a test.
const (
	maxValueSize    = 16 << 20 // 16 MiB, well below the server's 512 MB limit on a value
	maxSetsPerWrite = 1000
	maxDatabases    = 1000
	maxFailureWait  = 10 * time.Minute
)

var memorySize = regexp.MustCompile(`(?i)^[0-9]+(b|k|kb|m|mb|g|gb)?$`)

// parseConfig decodes the plugin's section (decode is the kit's, which refuses unknown keys)
// over its preset and checks every value; an unknown preset is an error that names it.
func parseConfig(decode func(any) error) (Config, error) {
	var c Config
	if err := decode(&c); err != nil {
		return c, err
	}
	if c.Preset != "" {
		overlay, ok := presets[c.Preset]
		if !ok {
			return c, fmt.Errorf("unknown preset %q (presets: %s)", c.Preset, strings.Join(presetNames(), ", "))
		}
		// The preset first, then the section again over it: the section's keys win.
		name := c.Preset
		c = Config{}
		if _, err := toml.Decode(overlay, &c); err != nil {
			return c, fmt.Errorf("preset %s: %w", name, err)
		}
		if err := decode(&c); err != nil {
			return c, err
		}
	}
	c.setDefaults()
	if err := c.check(); err != nil {
		return c, err
	}
	return c, nil
}

func (c *Config) setDefaults() {
	if c.AppendOnly == nil {
		c.AppendOnly = ptr(true)
	}
	if c.Probe == nil {
		c.Probe = ptr(true)
	}
	if c.Hz == 0 {
		c.Hz = 100
	}
	if c.AppendFsync == "" {
		c.AppendFsync = "everysec"
	}
	if c.SetsPerWrite == 0 {
		c.SetsPerWrite = 1
	}
	if c.Databases == 0 {
		c.Databases = 1
	}
}

func ptr[T any](v T) *T { return &v }

// check reports, in one line, the values no run can use.
func (c *Config) check() error {
	var errs []error
	switch c.AppendFsync {
	case "always", "everysec", "no":
	default:
		errs = append(errs, fmt.Errorf("appendfsync must be always, everysec or no, got %q", c.AppendFsync))
	}
	if err := dialect.CheckSave(c.Save); err != nil {
		errs = append(errs, err)
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
	if c.FailureWait < 0 || c.FailureWait > maxFailureWait {
		errs = append(errs, fmt.Errorf("failure_wait must be between 0s and %v, got %v", maxFailureWait, c.FailureWait))
	}
	if c.ValueSize < 0 || c.ValueSize > maxValueSize {
		errs = append(errs, fmt.Errorf("value_size must be between 0 and %d bytes, got %d", maxValueSize, c.ValueSize))
	}
	if c.SetsPerWrite < 1 || c.SetsPerWrite > maxSetsPerWrite {
		errs = append(errs, fmt.Errorf("sets_per_write must be between 1 and %d, got %d", maxSetsPerWrite, c.SetsPerWrite))
	}
	if c.Databases < 1 || c.Databases > maxDatabases {
		errs = append(errs, fmt.Errorf("databases must be between 1 and %d, got %d", maxDatabases, c.Databases))
	}
	if strings.ContainsFunc(c.KeyPrefix, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '/' }) {
		errs = append(errs, fmt.Errorf("key_prefix must be printable, without spaces or '/', got %q", c.KeyPrefix))
	}
	if len(errs) == 0 {
		return nil
	}
	// One line: the first problem, and how many more there are.
	msg := errs[0].Error()
	if len(errs) > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", len(errs)-1)
	}
	return errors.New(msg)
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

// settings are the server settings of one replica's redis.conf.
func (c *Config) settings(port int, dir string) dialect.Settings {
	return dialect.Settings{
		Port: port, Dir: dir, Hz: c.Hz,
		AppendOnly: *c.AppendOnly, AppendFsync: c.AppendFsync, Save: c.Save,
		Databases:       c.Databases,
		ReplBacklogSize: c.ReplBacklogSize, ReplBacklogTTL: c.ReplBacklogTTL, ReplTimeout: c.ReplTimeout,
		ReplDisklessSync: c.ReplDisklessSync, ReplDisklessSyncDelay: c.ReplDisklessSyncDelay,
	}
}
