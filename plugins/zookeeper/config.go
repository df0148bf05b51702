package main

import (
	"errors"
	"fmt"

	"github.com/modulo-testing/modulo/cem/kit"
)

// Config is the plugin's section ([zookeeper]) of the modulo configuration. Every field is
// optional; the zero section runs Debian's ZooKeeper with the defaults below, which are tuned
// for speed on loopback. DefaultConfig says what each default trades away.
type Config struct {
	// Preset names settings (presets) that this section's own keys override.
	Preset string `toml:"preset"`
	// Java is the java binary: a path, or a name looked up in PATH.
	Java string `toml:"java"`
	// JarDir holds zookeeper.jar (whose manifest names its dependencies), slf4j-log4j12.jar and
	// log4j-1.2.jar.
	JarDir string `toml:"jar_dir"`
	// JVMFlags go before everything the plugin adds to the java command line.
	JVMFlags []string `toml:"jvm_flags"`
	// ClassDataSharing makes one AppCDS archive of the classes a replica loads (once per java
	// binary, jar set and JVMFlags) and starts every replica with it.
	ClassDataSharing *bool `toml:"class_data_sharing"`
	// CacheDir holds the AppCDS archives; empty means modulo's cache ($MODULO_CACHE, else
	// "modulo" in $XDG_CACHE_HOME or ~/.cache).
	CacheDir string `toml:"cache_dir"`

	// TickTimeMS is zoo.cfg's tickTime in milliseconds: the unit of the limits below, of the
	// leader's quorum check and of session timeouts.
	TickTimeMS int `toml:"tick_time_ms"`
	// InitLimit is zoo.cfg's initLimit in ticks: how long followers may take to connect to and
	// sync with a new leader. Unset, resolve makes it 10, or 30 on 3.4, whose followers wait a
	// fixed second before they retry a connection to a leader that was not listening yet.
	InitLimit *int `toml:"init_limit"`
	// SyncLimit is zoo.cfg's syncLimit in ticks: how long a follower may leave the leader without
	// an answer before the leader drops it.
	SyncLimit int `toml:"sync_limit"`
	// MinNotificationIntervalMS and MaxNotificationIntervalMS bound how long a server in leader
	// election waits for votes before it sends its own again; the wait doubles from the first to
	// the second (zookeeper.fastleader.minNotificationInterval and maxNotificationInterval).
	MinNotificationIntervalMS int `toml:"min_notification_interval_ms"`
	MaxNotificationIntervalMS int `toml:"max_notification_interval_ms"`
	// ElectionConnectTimeoutMS bounds a connection attempt between election ports
	// (zookeeper.cnxTimeout).
	ElectionConnectTimeoutMS int `toml:"election_connect_timeout_ms"`
	// LeaderConnectRetryMS is how long a new follower waits before it tries again to connect to
	// its leader (zookeeper.leaderConnectDelayDuringRetryMs). A follower often decides before its
	// leader listens, so its first attempt is refused.
	LeaderConnectRetryMS int `toml:"leader_connect_retry_ms"`
	// LocalSessions turns on localSessionsEnabled: the plugin's client sessions live on the one
	// server they connect to and are never written to the transaction log. Unset means on where
	// the release has local sessions (3.5 and later) and off on 3.4, which has none.
	LocalSessions *bool `toml:"local_sessions"`
	// ForceSync is zookeeper.forceSync: fsync the transaction log before acknowledging
	// (default true, as ZooKeeper's). Q/C/Z's crashes do not need it: a SIGKILLed server's
	// writes survive in the page cache. Q/P/Z's power losses drop what was not fsynced, and
	// with false a whole-cluster power loss loses acknowledged writes: ZooKeeper's documented
	// trade.
	ForceSync *bool `toml:"force_sync"`

	// The next three decide which ways a leader brings a follower in sync (DIFF of proposals,
	// SNAP of its whole tree, TRUNC of the follower's log), and so which sync paths a campaign
	// exercises.
	//
	// PreAllocSizeKB is zookeeper.preAllocSize: a transaction log file grows in steps of this
	// many KiB. A leader serves a follower a DIFF from its log files only while their total size,
	// preallocation included, is below snapshot_size_factor times its last snapshot's size, so
	// ZooKeeper's 64 MiB leaves only SNAP for a follower behind the leader's in-memory log.
	PreAllocSizeKB int `toml:"pre_alloc_size_kb"`
	// SnapCount is zookeeper.snapCount: a server rolls its log and snapshots after more than
	// snap_count/2 + a random share of snap_count/2 transactions; 2 and 3 roll after every
	// second transaction without randomness, as a replay needs.
	SnapCount int `toml:"snap_count"`
	// SnapshotSizeFactor is zookeeper.snapshotSizeFactor (ZooKeeper 3.5 and later; unset is
	// ZooKeeper's 0.33): the share of the snapshot's size that the logs may have for a DIFF from
	// them; negative turns DIFFs from the log files off.
	SnapshotSizeFactor *float64 `toml:"snapshot_size_factor"`
	// InitialZnodes are created, /init.0 on, each holding InitialValueBytes bytes, once the
	// started ensemble has caught up and before the first step, as the Modulo paper's
	// campaigns started from an initial key-value set: they make the snapshots larger, which
	// a DIFF from the log files needs (snapshot_size_factor).
	InitialZnodes     int `toml:"initial_znodes"`
	InitialValueBytes int `toml:"initial_value_bytes"`
}

// DefaultConfig returns the settings used for every key the section leaves out. What the
// defaults trade away, for speed on loopback:
//   - tick_time_ms = 100 (ZooKeeper's example uses 2000): every tick-based timeout is 20 times
//     shorter, so a server that is slow (a loaded machine, a long GC pause) can be dropped by
//     its leader, or a leader can give up, where a production setting would have waited. Crash
//     failures do not depend on it: a crashed peer's connection closes at once.
//   - init_limit = 10 (1 s) and sync_limit = 5 (0.5 s): a follower that takes longer than 1 s to
//     connect to and sync with a new leader (a very large snapshot, a machine that is very
//     loaded) is dropped and the election starts over; a follower silent for 0.5 s is dropped.
//     init_limit is also what ZooKeeper 3.8 loses whenever a follower acknowledges a DIFF
//     proposal before NEWLEADER (ZOOKEEPER-4685): the leader then waits out init_limit before
//     it gives up and a new election starts. sync_limit also bounds how long a leader keeps its
//     quorum while its followers are suspended, which minority writes rely on: the kit
//     suspends the replicas that must miss such a write.
//   - min/max_notification_interval_ms = 50/1000 (ZooKeeper: 200/60000): elections resend votes
//     sooner and never back off beyond a second; more election traffic, which only matters with
//     many servers.
//   - election_connect_timeout_ms = 1000 (ZooKeeper: 5000): a peer that does not accept an
//     election connection within a second is retried later; on loopback a dead peer refuses at
//     once.
//   - leader_connect_retry_ms = 10 (ZooKeeper: 100): a follower whose leader does not listen yet
//     retries ten times as often; on loopback a refused connection costs nothing.
//   - local_sessions = true where the release has them (ZooKeeper: false): the plugin's
//     sessions create no createSession or closeSession transactions, so the transaction logs
//     hold exactly the schedule's writes and no session expiry commits a transaction in some
//     later step. Global session handling is therefore not exercised. With false (and on 3.4),
//     a divergence's writes go through one session with the leader, opened while every online
//     server runs, so that a write that reaches only a minority can still be sent; that
//     session's and the reads' createSession and closeSession are transactions in the logs.
//   - jvm_flags: a 128 MiB heap, the serial collector and the C1 compiler only start faster and
//     use less memory; a large workload would run slower.
func DefaultConfig() Config {
	// Each flag gets a pointer of its own: decoding writes through it.
	yes := func() *bool { b := true; return &b }
	return Config{
		Java:                      "java",
		JarDir:                    "/usr/share/java",
		JVMFlags:                  []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"},
		ClassDataSharing:          yes(),
		TickTimeMS:                100,
		SyncLimit:                 5,
		MinNotificationIntervalMS: 50,
		MaxNotificationIntervalMS: 1000,
		ElectionConnectTimeoutMS:  1000,
		LeaderConnectRetryMS:      10,
		ForceSync:                 yes(),
		PreAllocSizeKB:            65536,
		SnapCount:                 100000,
		InitialValueBytes:         100,
	}
}

// presets are named settings per DRM; a section's own keys override its preset's.
//
// "paper" is what the Modulo paper says of its ZooKeeper campaigns (§3.1, Appendix A.1): three
// replicas, Q/C/Z, and "initially, all 3 replicas are online and synchronized with an initial
// key-value set", five keys in its running example, whose values its writes set: five initial
// znodes, and the kit's workload = "update" (each write a setData of one of them). Not carried
// over, and why:
//   - the release (3.4.11, 3.5.8, 3.7.0): jar_dir selects it; scripts/build-zookeeper builds
//     3.4.11 and 3.7.0 (3.5.8's source is not here).
//   - tick time, limits and snapshot settings: the paper does not give them; ZooKeeper's own
//     pre_alloc_size_kb and snap_count stay, and the plugin's timing defaults.
var presets = kit.Presets{
	"paper": {"qcz": "initial_znodes = 5\nworkload = \"update\"\n"},
}

// parseConfig decodes the section over the defaults and the settings of its preset for drm
// (empty: only the preset's name is checked), and checks every value.
func parseConfig(decode func(any) error, drm string) (Config, error) {
	var c Config
	if err := presets.Section(decode, drm, &c, func() { c = DefaultConfig() }, func() string { return c.Preset }); err != nil {
		return c, err
	}
	return c, c.check()
}

// check checks every value after decoding; its error is one line, the kit names the section.
func (c *Config) check() error {
	var errs []error
	positive := func(key string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", key, v))
		}
	}
	positive("tick_time_ms", c.TickTimeMS)
	if c.InitLimit != nil {
		positive("init_limit", *c.InitLimit)
	}
	positive("sync_limit", c.SyncLimit)
	positive("min_notification_interval_ms", c.MinNotificationIntervalMS)
	positive("max_notification_interval_ms", c.MaxNotificationIntervalMS)
	positive("election_connect_timeout_ms", c.ElectionConnectTimeoutMS)
	positive("leader_connect_retry_ms", c.LeaderConnectRetryMS)
	positive("pre_alloc_size_kb", c.PreAllocSizeKB)
	if c.InitialZnodes < 0 {
		errs = append(errs, fmt.Errorf("initial_znodes must be at least 0, got %d", c.InitialZnodes))
	}
	if c.InitialValueBytes < 0 || c.InitialValueBytes > 1<<20 {
		errs = append(errs, fmt.Errorf("initial_value_bytes must be from 0 to 1048576 (ZooKeeper's jute.maxbuffer), got %d", c.InitialValueBytes))
	}
	if c.SnapCount < 2 {
		errs = append(errs, fmt.Errorf("snap_count must be at least 2, got %d", c.SnapCount))
	}
	if f := c.SnapshotSizeFactor; f != nil && *f > 1 {
		// ZooKeeper itself would quietly take 0.33 instead.
		errs = append(errs, fmt.Errorf("snapshot_size_factor must be at most 1, got %g", *f))
	}
	if c.MaxNotificationIntervalMS < c.MinNotificationIntervalMS {
		errs = append(errs, fmt.Errorf("max_notification_interval_ms (%d) is below min_notification_interval_ms (%d)",
			c.MaxNotificationIntervalMS, c.MinNotificationIntervalMS))
	}
	if c.Java == "" {
		errs = append(errs, errors.New("java must not be empty"))
	}
	if c.JarDir == "" {
		errs = append(errs, errors.New("jar_dir must not be empty"))
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

// cacheDir is where the AppCDS archives live.
func (c *Config) cacheDir() (string, error) {
	if c.CacheDir != "" {
		return c.CacheDir, nil
	}
	dir, err := kit.CacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the AppCDS archive (set cache_dir): %w", err)
	}
	return dir, nil
}

// jarDir is JarDir with a leading ~ read as the user's home directory, as a shell would: the
// builds of scripts/build-zookeeper live in ~/.cache/modulo/zookeeper/<version>.
func (c *Config) jarDir() (string, error) {
	dir, err := kit.ExpandHome(c.JarDir)
	if err != nil {
		return "", fmt.Errorf("jar_dir: %w", err)
	}
	return dir, nil
}
