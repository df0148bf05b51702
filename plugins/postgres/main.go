// Command modulo-plugin-postgres is modulo's PostgreSQL plugin: streaming replication on the
// crash+link rule set of S/CL/R, as the DRMs it declares itself: pgl (S/CL/P), whose failures
// are crashes, and pgp (S/PL/P), whose failures are power losses of the data directory
// (kit.DiskState).
//
// Every step is what PostgreSQL's own tools and its failover managers (Patroni, repmgr,
// pg_auto_failover) do, and nothing is repaired behind the system's back: a crash is a
// SIGKILL; writes go to a primary; a primary is made only by promotion (pg_ctl promote, a new
// timeline), never by starting a copy without recovery; standbys are copies that start in
// recovery (standby.signal), and an offline resync is a base backup that starts in recovery
// and is promoted when the model wants a primary. A server changes its source only by a
// restart (kit.Relinker): it is stopped cleanly (pg_ctl stop, kit.Stopper), its new source
// checkpoints (as pg_rewind's documentation asks of a recently promoted source), pg_rewind
// rewinds it onto the source, and its answer is trusted: "no rewind required" starts the
// server as it is. Only where pg_rewind fails, or the source no longer holds the WAL the
// server must stream from it, is the source copied afresh with pg_basebackup, as PostgreSQL's
// documentation prescribes, and that is recorded. Where pg_rewind is wrong, the campaign
// shows it: a standby that logs "record with incorrect prev-link" again and again is broken
// replication (kit.LineKind.Broken). Servers run as the postgres user when the plugin runs as
// root (PostgreSQL refuses root).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/plugins/internal/pgbin"
)

var about = kit.About{
	Name: "postgres",
	Declare: []kit.DRM{{
		Name: "pgl", Title: "S/CL/P", Rules: "crash-link", System: "PostgreSQL",
		Summary: "streaming replication: crash and link failures, rejoin by pg_rewind or pg_basebackup",
		Ops:     1, Replicas: 2, OpsRange: []int{1, 2}, ReplicasRange: []int{2, 3},
	}, {
		Name: "pgp", Title: "S/PL/P", Rules: "crash-link", System: "PostgreSQL", PowerLoss: true,
		Summary: "streaming replication: power losses (SIGKILL, then the disk loses what was not synced) and link failures",
		Ops:     1, Replicas: 2, OpsRange: []int{1, 2}, ReplicasRange: []int{2, 3},
	}},
	PortsPerReplica: 1,
	Ports:           []int{5432},
}

func main() { kit.Serve(about, &system{}) }

// Config is the [postgres] table.
type Config struct {
	// Bin is the directory of PostgreSQL's programs; empty: the newest under
	// /usr/lib/postgresql, as Debian installs them.
	Bin string `toml:"bin"`
	// User runs the servers when the plugin runs as root.
	User string `toml:"user"`
	// Fsync is PostgreSQL's fsync: false never flushes anything to disk, which its
	// documentation warns loses data at a power loss (the control of a power-loss campaign).
	Fsync bool `toml:"fsync"`
}

type system struct {
	cfg Config
	bin string
	// asUser prefixes a command that must run as cfg.User: setpriv, when the plugin is root.
	asUser []string
	// rewind holds, per replica, how its last relink went (pg_rewind's answer, or the fresh
	// base backup), until the observation after the step reports it.
	rewind map[int]string
}

// The interfaces the kit finds by assertion: a wrong signature would silently leave one out.
var (
	_ kit.Relinker    = (*system)(nil)
	_ kit.Stopper     = (*system)(nil)
	_ kit.Snapshotter = (*system)(nil)
	_ kit.Observer    = (*system)(nil)
	_ kit.SyncLogger  = (*system)(nil)
	_ kit.DiskState   = (*system)(nil)
)

func (s *system) Configure(decode func(any) error) error {
	s.cfg = Config{User: "postgres", Fsync: true}
	return decode(&s.cfg)
}

func (s *system) Version(ctx context.Context) (string, error) {
	bin, err := pgbin.Dir(s.cfg.Bin)
	if err != nil {
		return "", err
	}
	return pgbin.Version(ctx, bin)
}

func dataDir(r *kit.Replica) string { return filepath.Join(r.Dir, "data") }

// StateFiles is a server's data directory: its WAL, its heap, its control file and its
// configuration (standby.signal and primary_conninfo say what it follows).
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{"data"} }

// Prepare makes a template data directory once per cluster (initdb, and the table every write
// goes to) and copies it to every replica: copies of one initdb share a system identifier and
// a history, so that pg_rewind and pg_basebackup work between them. Replica 0, the models'
// first primary, starts from it as a primary; every other copy starts in recovery, as a
// standby made from a cold copy of a cleanly stopped primary does, until the kit links it.
func (s *system) Prepare(ctx context.Context, c *kit.Cluster) error {
	bin, err := pgbin.Dir(s.cfg.Bin)
	if err != nil {
		return err
	}
	s.bin, s.rewind = bin, map[int]string{}
	var owner *user.User
	if os.Geteuid() == 0 {
		if owner, err = user.Lookup(s.cfg.User); err != nil {
			return fmt.Errorf("user %q, who runs the servers: %w", s.cfg.User, err)
		}
		// setpriv's credential change clears the parent-death signal that the kit sets: it sets
		// it again, so that a server still dies with the plugin.
		s.asUser = []string{"setpriv", "--reuid=" + owner.Uid, "--regid=" + owner.Gid, "--init-groups", "--pdeathsig=KILL", "--"}
		if err := pgbin.Reachable(c.Spec.Dir, owner, "postgres"); err != nil {
			return err
		}
	}
	template := filepath.Join(c.Spec.Dir, "template")
	if err := s.own(template, owner); err != nil {
		return err
	}
	if _, err := s.run(ctx, "initdb", "-D", template, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return err
	}
	conf := strings.Join([]string{
		"unix_socket_directories = ''",
		"wal_level = replica",
		"max_wal_senders = 10",
		"wal_keep_size = '256MB'",
		"hot_standby = on",
		"wal_log_hints = on", // pg_rewind needs it (or data checksums)
		"logging_collector = off",
		// Shared memory in the server's own directory: a SIGKILLed server leaves its /dev/shm
		// segments behind, and campaigns fill the host's memory with them.
		"dynamic_shared_memory_type = mmap",
		"fsync = " + strconv.FormatBool(s.cfg.Fsync), // PostgreSQL reads true and false
	}, "\n") + "\n"
	// initdb trusts 127.0.0.1 alone; in a cluster's network the plugin and the standbys come
	// from the replicas' subnet, where only they are.
	hba := "host all all samenet trust\nhost replication all samenet trust\n"
	for name, text := range map[string]string{"postgresql.conf": conf, "pg_hba.conf": hba} {
		if err := appendTo(filepath.Join(template, name), text); err != nil {
			return err
		}
	}
	if err := s.single(ctx, template, "CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL);"); err != nil {
		return err
	}
	for _, r := range c.Replicas {
		if err := s.own(r.Dir, owner); err != nil {
			return err
		}
		// The data directory may be a power-loss file system's mount point already: the copy
		// goes into it.
		if err := s.own(dataDir(r), owner); err != nil {
			return err
		}
		if _, err := kit.Output(ctx, "cp", "-a", template+"/.", dataDir(r)); err != nil {
			return err
		}
		if r.Index > 0 {
			if err := appendOwned(r, "standby.signal", ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendTo appends text to the file at path, made (mode 0600) if missing, and syncs the file
// and its directory, as ALTER SYSTEM does: what follows what is a server's state, and a power
// loss must not take back what an operator wrote.
func appendTo(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	return fsutil.Sync(filepath.Dir(path))
}

// own makes dir, mode 0700 as PostgreSQL requires of a data directory, and gives it to the
// servers' user.
func (s *system) own(dir string, u *user.User) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if u == nil {
		return nil
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// run runs one of PostgreSQL's programs as the servers' user.
func (s *system) run(ctx context.Context, prog string, args ...string) (string, error) {
	argv := append(slices.Clone(s.asUser), append([]string{filepath.Join(s.bin, prog)}, args...)...)
	return kit.Output(ctx, argv[0], argv[1:]...)
}

// single runs sql in a single-user server on the stopped data directory dir.
func (s *system) single(ctx context.Context, dir, sql string) error {
	argv := append(slices.Clone(s.asUser), filepath.Join(s.bin, "postgres"), "--single", "-D", dir, "postgres")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(sql + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("postgres --single: %w: %s", err, out)
	}
	return nil
}

func (s *system) Command(_ *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	argv := append(slices.Clone(s.asUser), filepath.Join(s.bin, "postgres"), "-D", dataDir(r), "-h", r.Host, "-p", strconv.Itoa(r.Ports[0]))
	return kit.Command{Path: argv[0], Args: argv[1:]}, nil
}

// sql runs a statement on r and returns its rows, tab-separated.
func (s *system) sql(ctx context.Context, r *kit.Replica, stmt string) (string, error) {
	return kit.Output(ctx, filepath.Join(s.bin, "psql"), "-X", "-h", r.Host, "-p", strconv.Itoa(r.Ports[0]),
		"-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t", "-c", stmt)
}

func quote(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

func (s *system) Ready(ctx context.Context, r *kit.Replica) (bool, string, error) {
	if _, err := s.sql(ctx, r, "SELECT 1"); err != nil {
		return false, firstLine(err.Error()), nil
	}
	return true, "", nil
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	_, err := s.sql(ctx, r, fmt.Sprintf("INSERT INTO kv VALUES (%s, %s) ON CONFLICT (k) DO UPDATE SET v = excluded.v", quote(key), quote(value)))
	return err
}

// ReadAll reads every table of r's database: the writes' table, and any other a bug might
// leave data in, each row under "table/key".
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	tables, err := s.sql(ctx, r, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for _, t := range strings.Fields(tables) {
		if t != "kv" {
			data["table/"+t] = "present" // not the plugin's: its presence is what differs
			continue
		}
		rows, err := s.sql(ctx, r, "SELECT k, v FROM kv")
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(rows), "\n") {
			if k, v, ok := strings.Cut(line, "\t"); ok {
				data[k] = v
			}
		}
	}
	return data, nil
}

func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	for _, r := range online {
		if ok, seen, _ := s.Ready(ctx, r); !ok {
			return false, r.Name + ": " + seen, nil
		}
	}
	return true, "", nil
}

// Follow: a server becomes a standby, or changes its primary, only by a restart.
func (s *system) Follow(context.Context, *kit.Replica, *kit.Replica) error { return kit.ErrNeedsStop }

// Unfollow promotes a standby, live; a primary follows nobody already.
func (s *system) Unfollow(ctx context.Context, r *kit.Replica) error {
	standby, err := s.sql(ctx, r, "SELECT pg_is_in_recovery()")
	if err != nil {
		return err
	}
	if strings.TrimSpace(standby) != "t" {
		return nil
	}
	_, err = s.run(ctx, "pg_ctl", "promote", "-w", "-D", dataDir(r))
	return err
}

// Stop shuts r's server down cleanly (pg_ctl stop, fast mode), as an operator does before a
// rewind: pg_rewind needs a cleanly stopped target, and a standby killed in recovery could only
// be recovered as a primary, which writes WAL of its own.
func (s *system) Stop(ctx context.Context, r *kit.Replica) error {
	_, err := s.run(ctx, "pg_ctl", "stop", "-m", "fast", "-w", "-D", dataDir(r))
	return err
}

// conninfo is how a standby of src connects to it.
func conninfo(src *kit.Replica) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", src.Host, src.Ports[0])
}

// standbyOf makes r, whose server is down, start in recovery as a standby of src.
func standbyOf(r, src *kit.Replica) error {
	if err := appendOwned(r, "standby.signal", ""); err != nil {
		return err
	}
	return appendOwned(r, "postgresql.auto.conf", fmt.Sprintf("primary_conninfo = %s\n", quote(conninfo(src)+" application_name="+r.Name)))
}

// Relink prepares r, whose server is down, to start as a standby of src: pg_rewind onto src
// (which says "no rewind required" when it finds r's history part of src's), whose answer is
// trusted, or a fresh pg_basebackup of src where pg_rewind fails; then standby.signal and
// primary_conninfo. PostgreSQL makes a primary only by promotion (Unfollow), never by a restart.
func (s *system) Relink(ctx context.Context, c *kit.Cluster, r, src *kit.Replica) (bool, error) {
	if src == nil {
		return false, fmt.Errorf("%s: a primary is made by promotion (Unfollow), not by a restart", r.Name)
	}
	conn := conninfo(src)
	// pg_rewind reads the source's timeline from its control file, which a promotion updates
	// only at its next checkpoint; its documentation has the operator run CHECKPOINT on a
	// recently promoted source first (without it, a source promoted a moment ago looks like
	// the target's timeline, and pg_rewind says "no rewind required" wrongly).
	if _, err := s.sql(ctx, src, "CHECKPOINT"); err != nil {
		return false, fmt.Errorf("CHECKPOINT on %s before pg_rewind: %w", src.Name, err)
	}
	c.Record(src, "CHECKPOINT, as pg_rewind's documentation asks of a recently promoted source")
	rewritten := false
	out, err := s.run(ctx, "pg_rewind", "--target-pgdata="+dataDir(r), "--source-server="+conn)
	var fallback string
	switch {
	case err != nil:
		fallback = "pg_rewind failed: " + lastLine(err.Error())
	default:
		fallback = s.walMissing(ctx, r, src, out)
		rewritten = !strings.Contains(out, "no rewind required")
		if fallback == "" {
			c.Record(r, "pg_rewind onto %s: %s", src.Name, lastLine(out))
		}
	}
	s.rewind[r.Index] = lastLine(out)
	if fallback != "" {
		// pg_rewind's documentation prescribes a fresh base backup where it cannot rewind.
		s.rewind[r.Index] = "fresh pg_basebackup: " + fallback
		c.Record(r, "%s: fresh pg_basebackup of %s", fallback, src.Name)
		if err := fsutil.Empty(dataDir(r)); err != nil {
			return false, err
		}
		if _, err := s.run(ctx, "pg_basebackup", "-D", dataDir(r), "-d", conn, "-X", "stream"); err != nil {
			return false, err
		}
		rewritten = true
	}
	return rewritten, standbyOf(r, src)
}

// walMissing says why r could not follow src once started, when src no longer holds the WAL
// that r must stream from it: from the last common checkpoint on after a rewind (pg_rewind's
// documented limit), or from where r's own WAL ends when no rewind was required. It is met
// when src's history was itself copied afresh (its WAL begins where its copy began), and
// PostgreSQL's documentation prescribes a new base backup for a standby whose WAL is gone.
func (s *system) walMissing(ctx context.Context, r, src *kit.Replica, rewind string) string {
	need, from, err := s.streamFrom(ctx, r, rewind)
	if err != nil {
		return "where " + r.Name + "'s WAL ends cannot be read: " + firstLine(err.Error())
	}
	names, err := s.sql(ctx, src, "SELECT name FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'")
	if err != nil {
		return "the WAL " + src.Name + " holds cannot be listed: " + firstLine(err.Error())
	}
	for _, n := range strings.Fields(names) {
		seg, err := strconv.ParseUint(n[8:16], 16, 64)
		low, err2 := strconv.ParseUint(n[16:24], 16, 64)
		if err == nil && err2 == nil && seg<<8|low <= need>>24 { // 16 MiB segments
			return ""
		}
	}
	return fmt.Sprintf("%s no longer holds the WAL from %s (%X/%X), which %s would stream from it", src.Name, from, need>>32, need&0xFFFFFFFF, r.Name)
}

// streamFrom is the position from which r, once started as a standby, needs its source's WAL,
// and what it is: the last common checkpoint pg_rewind rewound to, or, with no rewind, the end
// of r's own history as its control file says (a standby's minimum recovery point, a
// primary's shutdown checkpoint).
func (s *system) streamFrom(ctx context.Context, r *kit.Replica, rewind string) (uint64, string, error) {
	if i := strings.Index(rewind, "last common checkpoint at "); i >= 0 {
		lsn, err := parseLSN(strings.Fields(rewind[i+len("last common checkpoint at "):])[0])
		return lsn, "the last common checkpoint", err
	}
	out, err := s.run(ctx, "pg_controldata", dataDir(r))
	if err != nil {
		return 0, "", err
	}
	var end uint64
	for _, line := range strings.Split(out, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || name != "Latest checkpoint location" && name != "Minimum recovery ending location" {
			continue
		}
		lsn, err := parseLSN(strings.TrimSpace(value))
		if err != nil {
			return 0, "", fmt.Errorf("pg_controldata: %s: %w", name, err)
		}
		end = max(end, lsn)
	}
	if end == 0 {
		return 0, "", fmt.Errorf("pg_controldata names no checkpoint: %q", out)
	}
	return end, "the end of its own history", nil
}

// parseLSN reads a WAL position such as "0/3000108".
func parseLSN(text string) (uint64, error) {
	var hi, lo uint64
	if _, err := fmt.Sscanf(text, "%X/%X", &hi, &lo); err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", text, err)
	}
	return hi<<32 | lo, nil
}

// appendOwned appends text to the file name of r's data directory, which a later line of a
// configuration file overrides, and gives the file to the data directory's owner: the server
// (and a base backup taken from it) must read it.
func appendOwned(r *kit.Replica, name, text string) error {
	path := filepath.Join(dataDir(r), name)
	if err := appendTo(path, text); err != nil {
		return err
	}
	fi, err := os.Stat(dataDir(r))
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return os.Chown(path, int(st.Uid), int(st.Gid))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// InSync asks src, the sender, whether r's WAL receiver streams and has replayed all src has:
// a receiver says "streaming" before replication has really started.
func (s *system) InSync(ctx context.Context, r, src *kit.Replica) (bool, string, error) {
	out, err := s.sql(ctx, src, fmt.Sprintf(`SELECT state, replay_lsn >= (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)
		FROM pg_stat_replication WHERE application_name = %s`, quote(r.Name)))
	if err != nil {
		return false, firstLine(err.Error()), nil
	}
	out = strings.TrimSpace(out)
	return out == "streaming\tt", fmt.Sprintf("%s sees %s as %q", src.Name, r.Name, out), nil
}

// CopySnapshot replaces the data of the crashed replica to with a base backup of from, which
// starts in recovery as from's standby: the kit promotes it where the model wants a primary.
func (s *system) CopySnapshot(ctx context.Context, c *kit.Cluster, from, to *kit.Replica) (bool, error) {
	if err := fsutil.Empty(dataDir(to)); err != nil {
		return false, err
	}
	if _, err := s.run(ctx, "pg_basebackup", "-D", dataDir(to), "-d", conninfo(from), "-X", "stream"); err != nil {
		return false, err
	}
	return true, standbyOf(to, from)
}
