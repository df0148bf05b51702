package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Config is the plugin's section ([mongodb]) of the modulo configuration. Every field is
// optional. The replica-set settings decide when elections happen, and the plugin needs them
// to happen when a schedule says and at no other time (see initiateConfig).
type Config struct {
	// Mongod is the mongod binary: a path, or a name looked up in PATH. Empty means
	// $MODULO_MONGOD, then "mongod" in PATH.
	Mongod string `toml:"mongod"`
	// WiredTigerCacheGB is --wiredTigerCacheSizeGB (default 0.25, mongod's minimum): a few
	// writes need no cache, and several clusters share one machine.
	WiredTigerCacheGB float64 `toml:"wiredtiger_cache_gb"`
	// OplogSizeMB is --oplogSize (default 64): the oplog is capped, and a schedule writes a few
	// documents, so a small one costs no resync path and saves disk.
	OplogSizeMB int `toml:"oplog_size_mb"`
	// ElectionTimeout is settings.electionTimeoutMillis (default 10s, MongoDB's own). A primary
	// that loses its majority keeps accepting w:1 writes for about this long, which is what a
	// divergence needs; the plugin itself elects with replSetStepUp and never waits for it.
	ElectionTimeout time.Duration `toml:"election_timeout"`
	// HeartbeatInterval is settings.heartbeatIntervalMillis (default 500ms, MongoDB's is 2s):
	// how soon a restarted member and the primary learn of each other.
	HeartbeatInterval time.Duration `toml:"heartbeat_interval"`
	// CatchUpTimeout is settings.catchUpTimeoutMillis (default 2s, MongoDB's is unbounded): how
	// long a new primary may fetch newer writes from the others before it takes writes.
	CatchUpTimeout time.Duration `toml:"catch_up_timeout"`
	// ExtraArgs go at the end of every mongod command line, such as
	// ["--setParameter", "rollbackTimeLimitSecs=60"].
	ExtraArgs []string `toml:"extra_args"`
}

// envMongod names the environment variable that points at a mongod binary.
const envMongod = "MODULO_MONGOD"

// minWiredTigerCacheGB is the smallest cache mongod accepts.
const minWiredTigerCacheGB = 0.25

// Configure decodes the plugin's TOML section (the kit refuses unknown keys), fills in the
// defaults and checks every value. Every wait is the kit's, bounded by modulo's step_timeout.
func (s *system) Configure(decode func(any) error) error {
	s.cfg = Config{}
	if err := decode(&s.cfg); err != nil {
		return err
	}
	return s.cfg.check()
}

// check fills in the defaults and checks every value; its error is one line.
func (c *Config) check() error {
	setDefault(&c.WiredTigerCacheGB, minWiredTigerCacheGB)
	setDefault(&c.OplogSizeMB, 64)
	setDefault(&c.ElectionTimeout, 10*time.Second)
	setDefault(&c.HeartbeatInterval, 500*time.Millisecond)
	setDefault(&c.CatchUpTimeout, 2*time.Second)

	var errs []error
	if c.WiredTigerCacheGB < minWiredTigerCacheGB {
		errs = append(errs, fmt.Errorf("wiredtiger_cache_gb must be at least %g, got %g", minWiredTigerCacheGB, c.WiredTigerCacheGB))
	}
	if c.OplogSizeMB < 1 {
		errs = append(errs, fmt.Errorf("oplog_size_mb must be at least 1, got %d", c.OplogSizeMB))
	}
	// The replica-set settings are 32-bit counts of milliseconds.
	const maxMillis = math.MaxInt32 * time.Millisecond
	for _, d := range []struct {
		key      string
		v        time.Duration
		min, max time.Duration
	}{
		{"election_timeout", c.ElectionTimeout, time.Millisecond, maxMillis},
		{"heartbeat_interval", c.HeartbeatInterval, time.Millisecond, maxMillis},
		{"catch_up_timeout", c.CatchUpTimeout, time.Millisecond, maxMillis},
	} {
		switch {
		case d.v < d.min:
			errs = append(errs, fmt.Errorf("%s must be at least %v, got %v", d.key, d.min, d.v))
		case d.v > d.max:
			errs = append(errs, fmt.Errorf("%s must be at most %v, got %v", d.key, d.max, d.v))
		}
	}
	if len(errs) > 0 {
		// One line: the first problem, and how many more there are.
		msg := errs[0].Error()
		if len(errs) > 1 {
			msg += fmt.Sprintf(" (and %d more problems)", len(errs)-1)
		}
		return errors.New(msg)
	}
	return nil
}

// setDefault sets *v to def when it is the zero value (the key was absent).
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// mongodPath resolves the mongod binary: the configured one, else $MODULO_MONGOD, else mongod
// in PATH. When there is none it says, in one line, what it tried and how to configure one.
func (c *Config) mongodPath() (string, error) {
	lookup := func(name, from string) (string, error) {
		p, err := exec.LookPath(name)
		switch {
		case err != nil && strings.Contains(name, "/"):
			return "", fmt.Errorf("no mongod: %s (from %s) is not an executable file", name, from)
		case err != nil:
			return "", fmt.Errorf("no mongod: %s (from %s) is not in PATH (%s)", name, from, os.Getenv("PATH"))
		}
		return filepath.Abs(p)
	}
	if c.Mongod != "" {
		return lookup(c.Mongod, "[mongodb] mongod")
	}
	if env := os.Getenv(envMongod); env != "" {
		return lookup(env, "$"+envMongod)
	}
	if p, err := exec.LookPath("mongod"); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("no mongod: $%s is not set and there is no mongod in PATH (%s); install MongoDB 4.4.2 or later and set %s=/path/to/mongod or put mongod on PATH",
		envMongod, os.Getenv("PATH"), envMongod)
}

// mongodArgs is the command line of one member's mongod: a replica-set member on host:port
// with its data in dbPath. Journaling is not an option: replica-set members on WiredTiger
// always journal (4.0+), and 6.1 removed the flags.
func (c *Config) mongodArgs(host string, port int, dbPath string) []string {
	args := []string{
		"--replSet", replSetName,
		"--bind_ip", host,
		"--port", strconv.Itoa(port),
		"--dbpath", dbPath,
		// No socket file in /tmp, which a SIGKILLed mongod would leave behind.
		"--nounixsocket",
		"--wiredTigerCacheSizeGB", strconv.FormatFloat(c.WiredTigerCacheGB, 'f', -1, 64),
		"--oplogSize", strconv.Itoa(c.OplogSizeMB),
		// Full-time diagnostic data capture writes every second; two cores run several clusters.
		"--setParameter", "diagnosticDataCollectionEnabled=false",
	}
	return append(args, c.ExtraArgs...)
}

// minServer is the oldest mongod the plugin drives: the oldest the Go driver v2 supports, and
// the first with the hello command (4.4.2).
var minServer = [3]int{4, 4, 2}

var versionLine = regexp.MustCompile(`(?m)^db version v(\d+)\.(\d+)\.(\d+)\S*`)

// parseVersion reads the version from `mongod --version` output ("db version v7.0.14") and
// checks that the plugin can drive it.
func parseVersion(out string) (string, error) {
	m := versionLine.FindStringSubmatch(out)
	if m == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		return "", fmt.Errorf("no \"db version\" line in %q", first)
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1]) // the pattern admits digits only
	}
	version := strings.TrimPrefix(m[0], "db version v")
	for i := range v {
		if v[i] != minServer[i] {
			if v[i] < minServer[i] {
				return version, fmt.Errorf("mongod %s is too old: the plugin needs %d.%d.%d or later", version, minServer[0], minServer[1], minServer[2])
			}
			break
		}
	}
	return version, nil
}
