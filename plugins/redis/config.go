package main

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/modulo-testing/modulo/cem/kit"

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
	// ReplTimeout is repl-timeout in seconds; unset keeps the server's default (60), but in a
	// DRM whose link failures are partitions (snr), where it is 5: a replica cut off from its
	// source notices only when this long passed without a byte from it, and a divergence waits
	// until it has (kit.Isolation).
	ReplTimeout *int `toml:"repl_timeout"`
	// ReplPingPeriod is repl-ping-slave-period in seconds, how often a source pings its
	// replicas; unset keeps the server's default (10), but where link failures are partitions,
	// where it is 1: a ping period longer than repl_timeout times an idle link out.
	ReplPingPeriod *int `toml:"repl_ping_period"`
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
	// AutoAOFRewriteMinSize is auto-aof-rewrite-min-size, such as "200kb"; empty keeps the
	// server's default.
	AutoAOFRewriteMinSize string `toml:"auto_aof_rewrite_min_size"`
	// WaitBeforeWrites and WaitAfterWrites are the fixed waits of a divergence that broke a
	// replication link (a link failure, a disconnection, a crash or a promotion), both 0 by
	// default: before, after the failures and before the writes that follow them; after, once
	// the divergence's writes are done. They are the plugin's only fixed waits, and deliberate
	// ones: a master that lost its last replica drops its backlog only after repl-backlog-ttl
	// (checked once a second in whole seconds, so ttl+2 s makes sure), and some bugs need the
	// backlog gone before the master takes the write (redis issue 4407). The original Modulo
	// tool slept 8 s after every S/L/R link failure, before the writes.
	WaitBeforeWrites time.Duration `toml:"wait_before_writes"`
	WaitAfterWrites  time.Duration `toml:"wait_after_writes"`

	// ValueSize is the size in bytes of every written value (default 0: the value is just its
	// identity, "<schedule>:<step>.<write>.<set>", about 30 bytes). A larger size pads the
	// identity; values larger than repl-backlog-size overflow the backlog.
	ValueSize int `toml:"value_size"`
	// SetsPerWrite is how many SETs, each to a key of its own, realise one abstract write
	// (default 1).
	SetsPerWrite int `toml:"sets_per_write"`
	// Databases spreads the writes over the logical databases 0..Databases-1 by divergence:
	// every write of the c-th divergence (c from 1) goes to database c mod Databases, as the
	// original tool's S/CL/R workload selected it on its connection, so that consecutive
	// writes land in the same non-zero database (default 1: database 0 only). The probe's
	// final writes go to the last divergence's database. Replicas' data is compared in every
	// database.
	Databases int `toml:"databases"`
	// KeyPrefix begins every key the plugin writes (default none): the kit names write j of
	// step s "k<s>.<j>", and with several SETs a write the m-th SET's key ends in ".<m>".
	KeyPrefix string `toml:"key_prefix"`
	// Probe, on by default, makes the last convergence end with one more write of every key
	// the schedule wrote, through the primary of each replication tree, and waits until every
	// link is in sync again: a link that a resync left broken while it reports itself healthy
	// shows only when new writes flow over it. It writes no key of its own.
	Probe *bool `toml:"probe"`
}

// presets are named settings per DRM, in the TOML of the plugin's section; a section's own
// keys override its preset's.
//
// "paper" is the original Modulo tool's settings for each Redis DRM, read from its source
// (shared/notes/paper-redis-settings.md): persistence, backlog ttl, diskless sync, what one
// abstract write is, the waits, and whether a final write of every key precedes the check. Not
// carried over, and why:
//   - aof-use-rdb-preamble yes (S/L/R, S/CL/R): both run with appendonly no, where it does
//     nothing; 2.8 does not know the directive.
//   - the initial data (every key written before the first step): the bugs need none, and
//     written on every replica separately it would be data the model does not know of.
//   - fixed sleeps after every write and resync (3 s): the plugin waits until the servers say
//     the write or the resync is done, which is what the sleeps stood for.
//   - the server version (2.8.0 for S/S/R, 4.0.0 for the others): `server` selects it;
//     scripts/build-redis builds old versions from source.
var presets = kit.Presets{
	"paper": {
		"ssr": `
appendonly = true
appendfsync = "always"
auto_aof_rewrite_min_size = "200kb"
save = "900 1 300 10 60 10000"
value_size = 10240
sets_per_write = 10
probe = false
`,
		"slr": `
appendonly = false
repl_backlog_ttl = 5
save = "900 1 300 10 60 10000"
value_size = 10240
sets_per_write = 10
wait_before_writes = "8s"
probe = false
`,
		"sclr": `
appendonly = false
repl_backlog_ttl = 5
save = "900 1 300 10 60 10000"
databases = 2
probe = true
`,
	},
}

// debianServer is where Debian installs redis-server, tried when PATH has none.
const debianServer = "/usr/bin/redis-server"

// Bounds of the workload and timing settings: beyond them a run is a mistake, not a test.
const (
	maxValueSize    = 16 << 20 // 16 MiB, well below the server's 512 MB limit on a value
	maxSetsPerWrite = 1000
	maxDatabases    = 1000
	maxFailureWait  = 10 * time.Minute // each of the two waits
)

var memorySize = regexp.MustCompile(`(?i)^[0-9]+(b|k|kb|m|mb|g|gb)?$`)

// parseConfig decodes the plugin's section (decode is the kit's, which refuses unknown keys)
// over its preset for DRM drm and checks every value; an unknown preset, or one that has no
// settings for drm, is an error that names it. With drm empty (the configuration is only being
// checked) the preset's name is checked and its settings are left out.
func parseConfig(decode func(any) error, drm string) (Config, error) {
	var c Config
	if err := presets.Section(decode, drm, &c, func() { c = Config{} }, func() string { return c.Preset }); err != nil {
		return c, err
	}
	c.setDefaults()
	if err := c.check(); err != nil {
		return c, err
	}
	return c, nil
}

// partitionDefaults sets what a DRM whose link failures are partitions needs and the section
// leaves unset: a replica that notices within a step that its source is out of reach.
func (c *Config) partitionDefaults() {
	if c.ReplTimeout == nil {
		c.ReplTimeout = ptr(5)
	}
	if c.ReplPingPeriod == nil {
		c.ReplPingPeriod = ptr(1)
	}
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
	for _, size := range []struct{ name, v string }{{"repl_backlog_size", c.ReplBacklogSize}, {"auto_aof_rewrite_min_size", c.AutoAOFRewriteMinSize}} {
		if size.v != "" && !memorySize.MatchString(size.v) {
			errs = append(errs, fmt.Errorf("%s must be a size such as \"1mb\", got %q", size.name, size.v))
		}
	}
	if c.ReplBacklogTTL != nil && *c.ReplBacklogTTL < 0 {
		errs = append(errs, fmt.Errorf("repl_backlog_ttl must not be negative, got %d", *c.ReplBacklogTTL))
	}
	if c.ReplTimeout != nil && *c.ReplTimeout < 1 {
		errs = append(errs, fmt.Errorf("repl_timeout must be at least 1 second, got %d", *c.ReplTimeout))
	}
	if c.ReplPingPeriod != nil && *c.ReplPingPeriod < 1 {
		errs = append(errs, fmt.Errorf("repl_ping_period must be at least 1 second, got %d", *c.ReplPingPeriod))
	}
	if c.Hz < 1 || c.Hz > 500 {
		errs = append(errs, fmt.Errorf("hz must be between 1 and 500, got %d", c.Hz))
	}
	if c.ReplDisklessSyncDelay < 0 {
		errs = append(errs, fmt.Errorf("repl_diskless_sync_delay must not be negative, got %d", c.ReplDisklessSyncDelay))
	}
	for _, w := range []struct {
		name string
		d    time.Duration
	}{{"wait_before_writes", c.WaitBeforeWrites}, {"wait_after_writes", c.WaitAfterWrites}} {
		if w.d < 0 || w.d > maxFailureWait {
			errs = append(errs, fmt.Errorf("%s must be between 0s and %v, got %v", w.name, maxFailureWait, w.d))
		}
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
		server, err := kit.ExpandHome(c.Server)
		if err != nil {
			return "", err
		}
		p, err := exec.LookPath(server)
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
func (c *Config) settings(host string, port int, dir string) dialect.Settings {
	return dialect.Settings{
		Host: host, Port: port, Dir: dir, Hz: c.Hz,
		AppendOnly: *c.AppendOnly, AppendFsync: c.AppendFsync, AutoAOFRewriteMinSize: c.AutoAOFRewriteMinSize, Save: c.Save,
		Databases:       c.Databases,
		ReplBacklogSize: c.ReplBacklogSize, ReplBacklogTTL: c.ReplBacklogTTL, ReplTimeout: c.ReplTimeout, ReplPingPeriod: c.ReplPingPeriod,
		ReplDisklessSync: c.ReplDisklessSync, ReplDisklessSyncDelay: c.ReplDisklessSyncDelay,
	}
}
