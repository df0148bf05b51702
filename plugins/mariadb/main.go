// Command modulo-plugin-mariadb is modulo's MariaDB plugin: GTID replication on the crash+link
// rule set of S/CL/R, as the DRMs it declares itself: mdl (S/CL/MD), whose failures are
// crashes, and mdp (S/PL/MD), whose failures are power losses of the data directory
// (kit.DiskState).
//
// Every step is what MariaDB's documentation tells an operator to do, and nothing is checked
// for MariaDB that MariaDB does not check: a crash is a SIGKILL; writes go to a server that
// replicates from nobody; a link is CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos,
// MASTER_DEMOTE_TO_SLAVE=1 (a former primary's own transactions join its slave position) and
// START SLAVE, with read_only on; a promotion is STOP SLAVE, RESET SLAVE ALL and read_only
// off. Servers start with --skip-slave-start (kit.System.Command's rule: a server starts
// following nobody, and the kit links it). Whatever link MariaDB accepts is MariaDB's to get
// right. Only where MariaDB refuses one (error 1236: the replica asks for GTIDs its new primary
// does not hold) is the replica copied afresh, as MariaDB documents it: a mariadb-dump of the
// primary with its GTID position, loaded into a fresh data directory (kit.ErrRefused, recorded
// by the kit). A replication thread stopped on any other error is broken replication.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/plugins/internal/mariadbdir"
)

var about = kit.About{
	Name: "mariadb",
	Declare: []kit.DRM{{
		Name: "mdl", Title: "S/CL/MD", Rules: "crash-link", System: "MariaDB",
		Summary: "GTID replication: crash and link failures, rejoin by CHANGE MASTER (slave_pos)",
		Ops:     1, Replicas: 2, OpsRange: []int{1, 2}, ReplicasRange: []int{2, 3},
	}, {
		Name: "mdp", Title: "S/PL/MD", Rules: "crash-link", System: "MariaDB", PowerLoss: true,
		Summary: "GTID replication: power losses (SIGKILL, then the disk loses what was not synced) and link failures",
		Ops:     1, Replicas: 2, OpsRange: []int{1, 2}, ReplicasRange: []int{2, 3},
	}},
	PortsPerReplica: 1,
	Ports:           []int{3306},
}

func main() { kit.Serve(about, &system{}) }

// Config is the [mariadb] table.
type Config struct {
	Server string `toml:"server"` // mariadbd
	Bin    string `toml:"bin"`    // the directory of mariadb, mariadb-dump and mariadb-install-db
	// SyncBinlog is MariaDB's sync_binlog: 0 (its default) leaves the binary log to the
	// operating system to flush, 1 syncs it at every commit, as MariaDB's documentation
	// advises where a power loss must not take back what replicas were sent.
	SyncBinlog int `toml:"sync_binlog"`
	// RelayLogRecovery is MariaDB's relay_log_recovery, part of what its documentation calls a
	// crash-safe replica: at start a replica discards its relay log and fetches again from the
	// GTID position it committed in InnoDB (mysql.gtid_slave_pos), instead of trusting relay
	// logs and info files a crash or power loss may have cut. Off by default, as MariaDB's is.
	RelayLogRecovery bool `toml:"relay_log_recovery"`
	// FlushLogAtTrxCommit is InnoDB's innodb_flush_log_at_trx_commit: 1 (the default) writes and
	// fsyncs the redo log at every commit; 2 writes it at every commit and fsyncs it once a
	// second, so a power loss may take back the last second's commits, which a crash does not.
	FlushLogAtTrxCommit int `toml:"innodb_flush_log_at_trx_commit"`
	// SyncMasterInfo and SyncRelayLogInfo are MariaDB's sync_master_info and
	// sync_relay_log_info: a replica fsyncs master.info and relay-log.info after that many
	// events, 10,000 by default, so a power loss may take back a file it never synced; 1 syncs
	// them after every event.
	SyncMasterInfo   int `toml:"sync_master_info"`
	SyncRelayLogInfo int `toml:"sync_relay_log_info"`
}

type system struct{ cfg Config }

// The interfaces the kit finds by assertion: a wrong signature would silently leave one out.
var (
	_ kit.Snapshotter = (*system)(nil)
	_ kit.Stopper     = (*system)(nil)
	_ kit.Readier     = (*system)(nil)
	_ kit.Observer    = (*system)(nil)
	_ kit.DiskState   = (*system)(nil)
)

func (s *system) Configure(decode func(any) error) error {
	s.cfg = Config{Server: "/usr/sbin/mariadbd", Bin: "/usr/bin", FlushLogAtTrxCommit: 1, SyncMasterInfo: 10000, SyncRelayLogInfo: 10000}
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if s.cfg.SyncBinlog < 0 {
		return fmt.Errorf("sync_binlog must be 0 or more, got %d", s.cfg.SyncBinlog)
	}
	if s.cfg.SyncMasterInfo < 0 || s.cfg.SyncRelayLogInfo < 0 {
		return fmt.Errorf("sync_master_info and sync_relay_log_info must be 0 or more, got %d and %d", s.cfg.SyncMasterInfo, s.cfg.SyncRelayLogInfo)
	}
	if f := s.cfg.FlushLogAtTrxCommit; f < 0 || f > 2 {
		return fmt.Errorf("innodb_flush_log_at_trx_commit must be 0, 1 or 2, got %d", f)
	}
	return nil
}

func (s *system) tool(name string) string { return filepath.Join(s.cfg.Bin, name) }

func (s *system) Version(ctx context.Context) (string, error) {
	out, err := kit.Output(ctx, s.cfg.Server, "--version") // "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ..."
	f := strings.Fields(out)
	if err != nil || len(f) < 3 {
		return "", fmt.Errorf("%s --version: %q %v", s.cfg.Server, out, err)
	}
	return f[2], nil
}

func dataDir(r *kit.Replica) string     { return filepath.Join(r.Dir, "data") }
func templateDir(c *kit.Cluster) string { return filepath.Join(c.Spec.Dir, "template") }

// StateFiles is a server's data directory: InnoDB's files, the binary and relay logs, and
// where it replicates from.
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{"data"} }

// fill copies the template data directory into r's, which may be a power-loss file system's
// mount point already.
func fill(ctx context.Context, c *kit.Cluster, r *kit.Replica) error {
	if err := os.MkdirAll(dataDir(r), 0o700); err != nil {
		return err
	}
	_, err := kit.Output(ctx, "cp", "-a", templateDir(c)+"/.", dataDir(r))
	return err
}

// asRoot is what mariadbd needs to run as root, which it otherwise refuses.
func asRoot() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// Prepare makes one data directory with the table every write goes to (mariadb-install-db),
// and copies it to every replica.
func (s *system) Prepare(ctx context.Context, c *kit.Cluster) error {
	if err := mariadbdir.Install(ctx, s.tool("mariadb-install-db"), c.Spec.Dir, templateDir(c), nil, append(asRoot(), innoDB...)...); err != nil {
		return err
	}
	for _, r := range c.Replicas {
		if err := fill(ctx, c, r); err != nil {
			return err
		}
		if err := os.Mkdir(tmpDir(r), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// tmpDir holds r's server's temporary files: in /tmp, a server starting beside another removes
// the other's (mariadb-install-db then fails with "Unknown table 'mysql.tmp_user_nopasswd'").
func tmpDir(r *kit.Replica) string { return filepath.Join(r.Dir, "tmp") }

// innoDB keeps each server small: a cluster's servers share two cores.
var innoDB = []string{"--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"}

// serverArgs are mariadbd's arguments for r's data directory, on r's port. Its socket (relative
// to the data directory: a socket's path is short) and pid file are in r's directory, outside
// its state.
func (s *system) serverArgs(r *kit.Replica) []string {
	return append(append([]string{"--no-defaults", "--datadir=" + dataDir(r), "--tmpdir=" + tmpDir(r), "--port=" + strconv.Itoa(r.Ports[0]),
		"--bind-address=" + r.Host, "--skip-name-resolve", "--socket=../mysqld.sock", "--pid-file=" + filepath.Join(r.Dir, "mysqld.pid"),
		"--server-id=" + strconv.Itoa(r.Index+1), "--log-bin=mariadb-bin", "--log-slave-updates",
		"--gtid-strict-mode=ON", "--skip-slave-start", "--sync-binlog=" + strconv.Itoa(s.cfg.SyncBinlog),
		"--relay-log-recovery=" + strconv.FormatBool(s.cfg.RelayLogRecovery),
		"--sync-master-info=" + strconv.Itoa(s.cfg.SyncMasterInfo), "--sync-relay-log-info=" + strconv.Itoa(s.cfg.SyncRelayLogInfo),
		"--innodb-flush-log-at-trx-commit=" + strconv.Itoa(s.cfg.FlushLogAtTrxCommit)}, asRoot()...), innoDB...)
}

func (s *system) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	if src := c.StartSource(r); src != nil {
		return kit.Command{}, fmt.Errorf("the kit wants %s to start following %s, but a MariaDB server starts following nobody", r.Name, src.Name)
	}
	return kit.Command{Path: s.cfg.Server, Args: s.serverArgs(r)}, nil
}

// query runs statements on r's server with the mariadb client and returns its rows, tab
// separated, or as the client's options opts print them ("-E": "name: value" lines).
func (s *system) query(ctx context.Context, r *kit.Replica, sql string, opts ...string) (string, error) {
	if len(opts) == 0 {
		opts = []string{"-NB"}
	}
	args := append([]string{"-h" + r.Host, "-P" + strconv.Itoa(r.Ports[0]), "-uroot"}, opts...)
	return kit.Output(ctx, s.tool("mariadb"), append(args, "-e", sql)...)
}

func quote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

func (s *system) Ready(ctx context.Context, r *kit.Replica) (bool, string, error) {
	if _, err := s.query(ctx, r, "SELECT 1"); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	_, err := s.query(ctx, r, fmt.Sprintf("REPLACE INTO modulo.kv VALUES (%s, %s)", quote(key), quote(value)))
	return err
}

func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	out, err := s.query(ctx, r, "SELECT k, v FROM modulo.kv")
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			data[k] = v
		}
	}
	return data, nil
}

// CaughtUp: every link is in sync already (InSync); every online server answers.
func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	for _, r := range online {
		if ok, seen, _ := s.Ready(ctx, r); !ok {
			return false, r.Name + ": " + seen, nil
		}
	}
	return true, "", nil
}

// Follow links r to src. A replica whose primary restarts (a fresh copy) reconnects after
// MASTER_CONNECT_RETRY seconds, 60 by default, which would outlast the step: 1. MariaDB's
// refusal because it cannot read its own master.info is broken replication (infoErrno).
func (s *system) Follow(ctx context.Context, r, src *kit.Replica) error {
	_, err := s.query(ctx, r, fmt.Sprintf("STOP SLAVE; SET GLOBAL read_only = 1; CHANGE MASTER TO MASTER_HOST = '%s', "+
		"MASTER_PORT = %d, MASTER_USER = 'root', MASTER_CONNECT_RETRY = 1, MASTER_USE_GTID = slave_pos, MASTER_DEMOTE_TO_SLAVE = 1; START SLAVE", src.Host, src.Ports[0]))
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "ERROR "+infoErrno+" ") {
				return fmt.Errorf("%w: CHANGE MASTER TO refused: %s", kit.ErrBroken, line)
			}
		}
	}
	return err
}

// infoErrno is MariaDB's refusal of CHANGE MASTER TO when it cannot read its own master.info
// or relay-log.info ("Could not initialize master info structure"), as after a power loss took
// back the contents of a master.info it had not synced (sync_master_info). No replication
// command mends it, nor a fresh copy of the primary's data: an operator must remove the files.
const infoErrno = "1201"

func (s *system) Unfollow(ctx context.Context, r *kit.Replica) error {
	_, err := s.query(ctx, r, "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0")
	return err
}

// refusedErrno is MariaDB's refusal of a replica's GTID position (ER_MASTER_FATAL_ERROR_READING_BINLOG).
const refusedErrno = "1236"

// InSync asks MariaDB: both replication threads run, and r has applied everything up to
// src's binlog position (MASTER_GTID_WAIT). An I/O thread that stopped on error 1236 is
// MariaDB refusing the link; any other stopped thread with an error is broken replication.
func (s *system) InSync(ctx context.Context, r, src *kit.Replica) (bool, string, error) {
	pos, err := s.query(ctx, src, "SELECT @@gtid_binlog_pos")
	if err != nil {
		return false, "", err
	}
	out, err := s.query(ctx, r, "SHOW SLAVE STATUS", "-E")
	if err != nil {
		return false, "", err
	}
	st := parseStatus(out)
	switch {
	case st["Last_IO_Errno"] == refusedErrno:
		return false, "", fmt.Errorf("%w: %s", kit.ErrRefused, st["Last_IO_Error"])
	case st["Last_IO_Errno"] != "0" && st["Slave_IO_Running"] == "No":
		return false, "", fmt.Errorf("%w: I/O thread: %s", kit.ErrBroken, st["Last_IO_Error"])
	case st["Last_SQL_Errno"] != "0" && st["Slave_SQL_Running"] == "No":
		return false, "", fmt.Errorf("%w: SQL thread: %s", kit.ErrBroken, st["Last_SQL_Error"])
	case st["Slave_IO_Running"] != "Yes" || st["Slave_SQL_Running"] != "Yes":
		return false, fmt.Sprintf("I/O thread %s, SQL thread %s", st["Slave_IO_Running"], st["Slave_SQL_Running"]), nil
	}
	pos = strings.TrimSpace(pos)
	waited, err := s.query(ctx, r, fmt.Sprintf("SELECT MASTER_GTID_WAIT(%s, 0)", quote(pos)))
	if err != nil {
		return false, "", err
	}
	return strings.TrimSpace(waited) == "0", fmt.Sprintf("%s at %s, its source at %s", r.Name, st["Gtid_Slave_Pos"], pos), nil
}

// parseStatus reads the "name: value" lines of a vertical SHOW SLAVE STATUS.
func parseStatus(out string) map[string]string {
	st := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			st[k] = v
		} else if k, ok := strings.CutSuffix(strings.TrimSpace(line), ":"); ok {
			st[k] = ""
		}
	}
	return st
}

// Stop shuts r's server down cleanly, as an operator does before restoring it.
func (s *system) Stop(ctx context.Context, r *kit.Replica) error {
	_, err := s.query(ctx, r, "SHUTDOWN")
	return err
}

// CopySnapshot makes to a replica of from as MariaDB documents it: a mariadb-dump of from
// with its GTID position (--gtid --master-data), loaded with binary logging off into a fresh
// data directory by a server started for the load alone, which is then shut down. The copy
// starts following nobody.
func (s *system) CopySnapshot(ctx context.Context, c *kit.Cluster, from, to *kit.Replica) (bool, error) {
	dump := filepath.Join(to.Dir, "snapshot.sql")
	if _, err := kit.Output(ctx, s.tool("mariadb-dump"), "-h"+from.Host, "-P"+strconv.Itoa(from.Ports[0]), "-uroot",
		"--single-transaction", "--gtid", "--master-data=1", "--databases", "modulo", "--result-file="+dump); err != nil {
		return false, err
	}
	if err := fsutil.Empty(dataDir(to)); err != nil {
		return false, err
	}
	if err := fill(ctx, c, to); err != nil {
		return false, err
	}
	// An operator's copy ends with sync: a power loss moments later must not take back files
	// that the server, which did not write them, never syncs (its privilege tables' .frm
	// files). What Prepare copies, the kit syncs before the first server starts.
	if err := fsutil.SyncTree(dataDir(to)); err != nil {
		return false, fmt.Errorf("sync the copy in %s: %w", dataDir(to), err)
	}
	server, err := kit.ExpandHome(s.cfg.Server)
	if err != nil {
		return false, err
	}
	loader, err := proc.StartProcess(proc.ProcessSpec{Name: to.Name + "-load", Dir: to.Dir, Path: server, Args: s.serverArgs(to), NetNS: to.NetNS})
	if err != nil {
		return false, err
	}
	defer loader.Kill(context.Background())
	err = c.Await(ctx, to.Name+"'s loading server to serve", func(ctx context.Context) (bool, string, error) {
		if !loader.Running() {
			return false, "", errors.New("the loading server exited; its log: " + loader.LogPath)
		}
		return s.Ready(ctx, to)
	})
	if err == nil {
		_, err = s.query(ctx, to, "source "+dump, "--init-command=SET sql_log_bin = 0")
	}
	if err == nil {
		err = s.Stop(ctx, to)
	}
	if err == nil {
		err = loader.Wait(ctx)
	}
	return false, err
}

// Observe reports r's role and its GTID positions.
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	out, err := s.query(ctx, r, "SELECT @@read_only, @@gtid_binlog_pos, @@gtid_slave_pos")
	if err != nil {
		return map[string]string{"mariadb": err.Error()}, nil
	}
	f := strings.Split(strings.TrimRight(out, "\n"), "\t")
	if len(f) != 3 {
		return map[string]string{"mariadb": "unexpected row " + strconv.Quote(out)}, nil
	}
	role := map[string]string{"0": "primary", "1": "replica"}[f[0]]
	return map[string]string{cem.ObserveRole: role, cem.ObservePosition: f[1], "slave_pos": f[2]}, nil
}
