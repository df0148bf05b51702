// Package dialect says what one version of redis-server accepts: the configuration directives
// it knows and the names and forms of the commands the plugin sends it. It is pure: a version
// in, configuration lines and command names out, so that what the plugin would send a 2.8 or
// a 4.0 server is testable on a machine that has only Debian's 7.0.
//
// A server refuses to start on a directive it does not know, and answers an unknown command
// with an error, so the plugin never sends either. Sources, by version:
//
//   - 2.8.0: PSYNC, the replication backlog (repl-backlog-size, repl-backlog-ttl), the
//     replication offsets of INFO replication, SCAN, and logfile "" for standard output
//     (redis 2.8 branch, 00-RELEASENOTES, "Migrating from 2.6 to 2.8"). Older servers have
//     none of these, so 2.8.0 is the oldest version the plugin drives.
//   - 2.8.18: repl-diskless-sync and repl-diskless-sync-delay, "diskless replication
//     (experimental)" (2.8 branch, 00-RELEASENOTES, Redis 2.8.18).
//   - 3.0.0: REPLCONF GETACK, with which a master asks its replicas for an acknowledgement
//     (it came with WAIT: redis.io/commands/wait, "Available since 3.0.0").
//   - 3.2.0: protected-mode (commit edd4d555 "New security feature: Redis protected mode").
//   - 5.0.0: REPLICAOF, and replica-* names for the slave-* directives, which stay as
//     aliases (redis.io/commands/replicaof: "Available since 5.0.0"; redis.io/commands/slaveof:
//     deprecated as of 5.0.0, kept for backward compatibility).
//   - 7.0.0: multi-part AOF in a directory, appenddirname (7.0-rc1 release notes, "Redis 7
//     stores AOF as multiple files in a folder", #9788); INFO with several sections in one
//     call (#6891); bind-source-addr; enable-debug-command (DEBUG disabled by default).
package dialect

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a redis-server version.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast tells whether v is o or later.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

// Versions at which something the plugin uses appeared.
var (
	// Oldest is the oldest version the plugin drives: PSYNC, the backlog and SCAN came in 2.8.
	Oldest       = Version{2, 8, 0}
	disklessSync = Version{2, 8, 18}
	getAck       = Version{3, 0, 0}
	protected    = Version{3, 2, 0}
	replicaOf    = Version{5, 0, 0}
	multiPartAOF = Version{7, 0, 0}
	multiInfo    = Version{7, 0, 0}
)

// versionField finds the version in `redis-server --version`: "Redis server v=2.8.0 sha=..."
// (2.6 and later print it so).
var versionField = regexp.MustCompile(`\bv=(\d+)\.(\d+)\.(\d+)\b`)

// Parse reads the version from what `redis-server --version` printed.
func Parse(out string) (Version, error) {
	m := versionField.FindStringSubmatch(out)
	if m == nil {
		line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		return Version{}, fmt.Errorf("--version printed %q, which names no version (v=X.Y.Z)", line)
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	return v, nil
}

// Dialect is what one version accepts.
type Dialect struct {
	Version Version
	// ReplicaOf is the command that points a server at its source, or with NO ONE makes it a
	// master: SLAVEOF before 5.0, REPLICAOF from 5.0.
	ReplicaOf string
	// MultiSectionInfo: INFO takes several sections in one call (7.0). Before, INFO takes one
	// section and answers more with a syntax error.
	MultiSectionInfo bool
	// GetAck: REPLCONF GETACK exists (3.0), so a replica can be asked to acknowledge its
	// offset now rather than at its once-a-second report.
	GetAck bool
	// AOF is the name, in the server's directory, of what holds its AOF: the directory
	// appendonlydir (7.0) or the file appendonly.aof.
	AOF string
}

// AOF file and directory names; the plugin sets both explicitly where the version knows them.
const (
	aofFile = "appendonly.aof"
	aofDir  = "appendonlydir"
	// RDB is the snapshot's file name in the server's directory.
	RDB = "dump.rdb"
)

// For returns the dialect of version v, or an error naming v when the plugin cannot drive it.
func For(v Version) (Dialect, error) {
	if !v.AtLeast(Oldest) {
		return Dialect{}, fmt.Errorf("redis-server %s is too old: the plugin needs %s or later (PSYNC, the replication backlog, SCAN)", v, Oldest)
	}
	d := Dialect{Version: v, ReplicaOf: "SLAVEOF", AOF: aofFile}
	if v.AtLeast(replicaOf) {
		d.ReplicaOf = "REPLICAOF"
	}
	d.MultiSectionInfo = v.AtLeast(multiInfo)
	d.GetAck = v.AtLeast(getAck)
	if v.AtLeast(multiPartAOF) {
		d.AOF = aofDir
	}
	return d, nil
}

// Settings are what the plugin wants in a replica's redis.conf. The pointer fields are
// optional: nil keeps the server's default.
type Settings struct {
	// Host and Port are the address the server listens on (bind and port).
	Host string
	Port int
	Dir  string
	Hz   int
	// AppendOnly and AppendFsync are appendonly and appendfsync; AutoAOFRewriteMinSize is
	// auto-aof-rewrite-min-size ("" keeps the server's default).
	AppendOnly            bool
	AppendFsync           string
	AutoAOFRewriteMinSize string
	// Save is the save setting: "" for no automatic snapshot, else pairs "seconds changes ...".
	Save string
	// Databases is how many logical databases the server has; 16 or fewer keep the default 16.
	Databases       int
	ReplBacklogSize string
	ReplBacklogTTL  *int
	ReplTimeout     *int
	ReplPingPeriod  *int // repl-ping-slave-period, a name every version knows (5.0's replica-* alias it)
	// ReplDisklessSync and ReplDisklessSyncDelay are repl-diskless-sync and its delay. Before
	// 2.8.18 there is no diskless sync: false and 0 are what such a server does anyway, and
	// anything else is an error.
	ReplDisklessSync      bool
	ReplDisklessSyncDelay int
}

// Directive is one line of redis.conf: a name and its arguments.
type Directive struct {
	Name string
	Args []string
}

// serverDefaultDatabases is the number of databases every version has by default.
const serverDefaultDatabases = 16

// Config returns the directives of a replica's redis.conf, only those the version knows. A
// setting the version cannot honour is an error naming the setting and the version.
func (d Dialect) Config(s Settings) ([]Directive, error) {
	var ds []Directive
	add := func(name string, args ...string) { ds = append(ds, Directive{name, args}) }
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	add("port", strconv.Itoa(s.Port))
	add("bind", s.Host)
	if d.Version.AtLeast(protected) {
		// Before 3.2 there is no protected mode: every client may connect, as here.
		add("protected-mode", "no")
	}
	add("daemonize", "no")
	add("dir", s.Dir)
	add("logfile", "") // standard output, which the plugin keeps in the replica's log file
	add("hz", strconv.Itoa(s.Hz))
	if s.Databases > serverDefaultDatabases {
		add("databases", strconv.Itoa(s.Databases))
	}
	add("dbfilename", RDB)
	add("appendonly", yesNo(s.AppendOnly))
	add("appendfilename", aofFile) // 7.0: the base name of the files in appenddirname
	if d.Version.AtLeast(multiPartAOF) {
		add("appenddirname", aofDir)
	}
	add("appendfsync", s.AppendFsync)
	if s.AutoAOFRewriteMinSize != "" {
		add("auto-aof-rewrite-min-size", s.AutoAOFRewriteMinSize)
	}
	save, err := savePairs(s.Save)
	if err != nil {
		return nil, err
	}
	if len(save) == 0 {
		add("save", "")
	}
	// One pair a line: before 7.0 a save line takes exactly one pair (and ignores others).
	for _, pair := range save {
		add("save", pair[0], pair[1])
	}
	if d.Version.AtLeast(disklessSync) {
		add("repl-diskless-sync", yesNo(s.ReplDisklessSync))
		add("repl-diskless-sync-delay", strconv.Itoa(s.ReplDisklessSyncDelay))
	} else if s.ReplDisklessSync || s.ReplDisklessSyncDelay != 0 {
		return nil, fmt.Errorf("repl_diskless_sync and repl_diskless_sync_delay need redis-server %s or later, the server is %s", disklessSync, d.Version)
	}
	if s.ReplBacklogSize != "" {
		add("repl-backlog-size", s.ReplBacklogSize)
	}
	if s.ReplBacklogTTL != nil {
		add("repl-backlog-ttl", strconv.Itoa(*s.ReplBacklogTTL))
	}
	if s.ReplTimeout != nil {
		add("repl-timeout", strconv.Itoa(*s.ReplTimeout))
	}
	if s.ReplPingPeriod != nil {
		add("repl-ping-slave-period", strconv.Itoa(*s.ReplPingPeriod))
	}
	return ds, nil
}

// savePairs splits a save setting into its "seconds changes" pairs.
func savePairs(save string) ([][2]string, error) {
	f := strings.Fields(save)
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("save must be empty or pairs of seconds and changes, got %q", save)
	}
	var pairs [][2]string
	for i := 0; i < len(f); i += 2 {
		secs, err1 := strconv.Atoi(f[i])
		changes, err2 := strconv.Atoi(f[i+1])
		if err := errors.Join(err1, err2); err != nil || secs < 1 || changes < 0 {
			return nil, fmt.Errorf("save must be empty or pairs of seconds (at least 1) and changes, got %q", save)
		}
		pairs = append(pairs, [2]string{f[i], f[i+1]})
	}
	return pairs, nil
}

// CheckSave checks a save setting as Config reads it.
func CheckSave(save string) error {
	_, err := savePairs(save)
	return err
}

// Render writes directives as redis.conf text. Every argument is double-quoted, which the
// server reads as one argument whatever it holds.
func Render(ds []Directive) string {
	var b strings.Builder
	b.WriteString("# Written by modulo's redis plugin; the server reads it at every (re)start.\n")
	for _, d := range ds {
		b.WriteString(d.Name)
		for _, a := range d.Args {
			b.WriteString(" " + strconv.Quote(a))
		}
		b.WriteString("\n")
	}
	return b.String()
}
