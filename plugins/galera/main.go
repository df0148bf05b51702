// Command modulo-plugin-galera is modulo's plugin for MariaDB Galera Cluster (Debian 12's
// mariadb-server 10.11 with galera-4 26.4): the Q/C/Z model on a cluster of mariadbd nodes that
// replicate every commit to each other through Galera, as the DRMs Q/C/G (crashes), Q/P/G
// (power losses) and Q/N/G (partitions) that it declares itself.
//
// Every node is run as Debian runs it: mariadbd as the mysql user with a configuration file of
// its own, started as Debian's mariadb.service starts it (mariadbd --wsrep-recover first, then
// mariadbd with the recovered --wsrep-start-position), with Galera's settings as its
// documentation asks (wsrep_on, the provider, a gcomm:// address naming every node, ROW binlog
// format, InnoDB, autoinc lock mode 2, rsync state transfers) and everything else at its
// defaults. A new cluster is bootstrapped once; after every node went down, the most advanced
// node is bootstrapped as Galera's documentation prescribes (StartGroup, group.go). Whatever
// Galera does then is Galera's to get right. README.md tells how each step is realised.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/plugins/internal/mariadbdir"
)

var about = kit.About{
	Name: "galera",
	Declare: []kit.DRM{{
		Name: "qcg", Title: "Q/C/G", Rules: "quorum", System: "MariaDB Galera Cluster",
		Summary: "the Q/C/Z model on a Galera cluster: every commit certified by all nodes of the primary component",
		Ops:     2, Replicas: 3, OpsRange: []int{1, 2, 3}, ReplicasRange: []int{3, 5},
	}, {
		Name: "qpg", Title: "Q/P/G", Rules: "quorum", System: "MariaDB Galera Cluster", PowerLoss: true,
		Summary: "the Q/C/G model with power losses: a crash drops what was not fsynced",
		Ops:     2, Replicas: 3, OpsRange: []int{1, 2, 3}, ReplicasRange: []int{3, 5},
	}, {
		Name: "qng", Title: "Q/N/G", Rules: "quorum", System: "MariaDB Galera Cluster", Partition: true,
		Summary: "the Q/C/G model with partitions: a failed node stays up, cut off from its peers",
		Ops:     2, Replicas: 3, OpsRange: []int{1, 2, 3}, ReplicasRange: []int{3, 5},
	}},
	PortsPerReplica: 4,
	// MariaDB's client port and Galera's group communication, IST and SST ports, where each
	// replica has an address of its own.
	Ports: []int{3306, 4567, 4568, 4444},
}

func main() { kit.Serve(about, &system{}) }

// The interfaces the kit finds by assertion: a wrong signature would silently leave one out.
var (
	_ kit.Configurable = (*system)(nil)
	_ kit.Preparer     = (*system)(nil)
	_ kit.GroupStarter = (*system)(nil)
	_ kit.Readier      = (*system)(nil)
	_ kit.Quorum       = (*system)(nil)
	_ kit.LogReader    = (*system)(nil)
	_ kit.Deleter      = (*system)(nil)
	_ kit.DiskState    = (*system)(nil)
	_ kit.Observer     = (*system)(nil)
	_ kit.SyncLogger   = (*system)(nil)
	_ kit.Isolation    = (*system)(nil)
	_ kit.Detector     = (*system)(nil)
)

// The ports of a replica, in the order the kit gives them.
const (
	clientPort = iota
	groupPort
	istPort
	sstPort
)

// Config is the [galera] table.
type Config struct {
	// Server is mariadbd; Bin the directory of mariadb-install-db; Provider Galera's library.
	Server   string `toml:"server"`
	Bin      string `toml:"bin"`
	Provider string `toml:"provider"`
	// User runs the servers when the plugin runs as root, as Debian's mariadb.service does
	// (User=mysql): rsync's state transfer daemon, run by root, drops to nobody, which cannot
	// write the joiner's data directory (MDEV-40688).
	User string `toml:"user"`
	// FlushLogAtTrxCommit is InnoDB's innodb_flush_log_at_trx_commit: 1 (the default) writes and
	// fsyncs the redo log at every commit, 2 writes it at every commit and fsyncs it once a
	// second, 0 does both once a second; Galera's documentation allows 2 or 0, its replication
	// making a commit durable on the other nodes.
	FlushLogAtTrxCommit int `toml:"innodb_flush_log_at_trx_commit"`
}

// system is how the kit runs and talks to one Galera node. Its state is the cluster's.
type system struct {
	cfg   Config
	owner *user.User // who runs the servers; nil when the plugin is not root
	// bootstrap is the replica whose next start bootstraps the cluster (--wsrep-new-cluster),
	// as StartGroup decided; nil for none.
	bootstrap *kit.Replica
	// histories numbers the cluster state UUIDs that Observe saw, in order, so that an
	// observation says "1", "2"... rather than a random UUID that differs in every run.
	histories map[string]int

	mu      sync.Mutex
	writers map[string]int // the replica each write was sent through, by key
}

func (s *system) Configure(decode func(any) error) error {
	s.cfg = Config{Server: "/usr/sbin/mariadbd", Bin: "/usr/bin", Provider: "/usr/lib/galera/libgalera_smm.so", User: "mysql", FlushLogAtTrxCommit: 1}
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if f := s.cfg.FlushLogAtTrxCommit; f < 0 || f > 2 {
		return fmt.Errorf("innodb_flush_log_at_trx_commit must be 0, 1 or 2, got %d", f)
	}
	return nil
}

func (s *system) Version(ctx context.Context) (string, error) {
	if _, err := os.Stat(s.cfg.Provider); err != nil {
		return "", fmt.Errorf("the Galera provider: %w", err)
	}
	out, err := kit.Output(ctx, s.cfg.Server, "--version") // "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ..."
	f := strings.Fields(out)
	if err != nil || len(f) < 3 {
		return "", fmt.Errorf("%s --version: %q %v", s.cfg.Server, out, err)
	}
	return f[2], nil
}

func dataDir(r *kit.Replica) string  { return filepath.Join(r.Dir, "data") }
func tmpDir(r *kit.Replica) string   { return filepath.Join(r.Dir, "tmp") }
func cnfPath(r *kit.Replica) string  { return filepath.Join(r.Dir, "my.cnf") }
func template(c *kit.Cluster) string { return filepath.Join(c.Spec.Dir, "template") }

// asOwner prefixes a command that runs as the servers' user: setpriv when the plugin is root,
// which also sets the parent-death signal again that its change of credentials clears.
func (s *system) asOwner() []string {
	if s.owner == nil {
		return nil
	}
	return []string{"setpriv", "--reuid=" + s.owner.Uid, "--regid=" + s.owner.Gid, "--init-groups", "--pdeathsig=KILL", "--"}
}

// Prepare makes one data directory with the table every write goes to (mariadb-install-db),
// and copies it into every replica's (which may be a power-loss mount point, kept as it is).
func (s *system) Prepare(ctx context.Context, c *kit.Cluster) error {
	s.bootstrap, s.histories, s.writers = nil, map[string]int{}, map[string]int{}
	s.owner = nil
	if os.Geteuid() == 0 {
		u, err := user.Lookup(s.cfg.User)
		if err != nil {
			return fmt.Errorf("user %q, who runs the servers: %w", s.cfg.User, err)
		}
		if err := reachable(c.Spec.Dir, u); err != nil {
			return err
		}
		s.owner = u
	}
	args := innoDB
	var own func(string) error
	if s.owner != nil {
		args = append(slices.Clone(innoDB), "--user="+s.owner.Username)
		own = func(dir string) error { return s.own(dir, false) }
	}
	if err := mariadbdir.Install(ctx, filepath.Join(s.cfg.Bin, "mariadb-install-db"), c.Spec.Dir, template(c), own, args...); err != nil {
		return err
	}
	for _, r := range c.Replicas {
		if err := os.MkdirAll(dataDir(r), 0o700); err != nil {
			return err
		}
		if _, err := kit.Output(ctx, "cp", "-a", template(c)+"/.", dataDir(r)); err != nil {
			return err
		}
	}
	return nil
}

// innoDB keeps each server small, as in the mariadb plugin: a cluster's servers share two
// cores. Neither setting changes what is replicated or when it is durable.
var innoDB = []string{"--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"}

// reachable checks that u can enter every directory from / down to dir, which a server run as
// u needs.
func reachable(dir string, u *user.User) error {
	d, mode, err := kit.Unreachable(dir, u)
	if err != nil || d == "" {
		return err
	}
	return fmt.Errorf("the servers run as %s, who cannot enter %s (%v): give the cluster a directory that %s can reach, or set [galera] user", u.Username, d, mode, u.Username)
}

// own gives path (and everything under it, with all) to the servers' user: the kit's copies
// (a restore) and the power-loss mounts are root's.
func (s *system) own(path string, all bool) error {
	if s.owner == nil {
		return nil
	}
	uid, _ := strconv.Atoi(s.owner.Uid)
	gid, _ := strconv.Atoi(s.owner.Gid)
	if !all {
		return os.Lchown(path, uid, gid)
	}
	return filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// config is r's configuration file: Galera's required settings, the node's addresses, and
// innodb_flush_log_at_trx_commit; everything else is at its default.
func (s *system) config(c *kit.Cluster, r *kit.Replica) string {
	var peers []string
	for _, p := range c.Replicas {
		peers = append(peers, p.Addr(groupPort))
	}
	lines := []string{
		"[mysqld]",
		"datadir = " + dataDir(r),
		"tmpdir = " + tmpDir(r),
		"socket = ../mysqld.sock", // relative to the data directory: r.Dir, outside the state
		"pid-file = " + filepath.Join(r.Dir, "mysqld.pid"),
		"bind-address = " + r.Host,
		"port = " + strconv.Itoa(r.Ports[clientPort]),
		"skip-name-resolve",
		"innodb_flush_log_at_trx_commit = " + strconv.Itoa(s.cfg.FlushLogAtTrxCommit),
		"binlog_format = ROW",
		"default_storage_engine = InnoDB",
		"innodb_autoinc_lock_mode = 2",
		"wsrep_on = ON",
		"wsrep_provider = " + s.cfg.Provider,
		"wsrep_cluster_name = modulo",
		"wsrep_cluster_address = gcomm://" + strings.Join(peers, ","),
		"wsrep_node_name = " + r.Name,
		"wsrep_node_address = " + r.Addr(groupPort),
		"wsrep_sst_method = rsync",
		"wsrep_sst_receive_address = " + r.Addr(sstPort),
		fmt.Sprintf("wsrep_provider_options = \"gmcast.listen_addr=tcp://%s;ist.recv_addr=%s\"", r.Addr(groupPort), r.Addr(istPort)),
	}
	for _, o := range innoDB {
		lines = append(lines, strings.TrimPrefix(o, "--"))
	}
	return strings.Join(lines, "\n") + "\n"
}

// startScript is what Debian's mariadb.service runs (ExecStart with galera_recovery): mariadbd
// --wsrep-recover, which recovers the node's position from InnoDB after a crash, then mariadbd
// with --wsrep-start-position set to it. Arguments: "new" to bootstrap or "join", then the
// server's command. It runs in the data directory, as mariadbd does once started, so that the
// configuration file is ../my.cnf to mariadbd and to the state transfer script that mariadbd
// runs through sh with its own arguments unquoted (a directory such as a test's, whose name has
// a parenthesis, would break the script's command line).
const startScript = `set -f
n=$1; shift
cd data || exit 1
out=$("$@" --wsrep-recover --disable-log-error 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
pos=$(printf '%s\n' "$out" | sed -n 's/.*WSREP: Recovered position: *//p' | tail -n 1)
printf 'modulo: mariadbd --wsrep-recover: position %s\n' "${pos:-none}" >&2
[ "$n" = new ] && set -- "$@" --wsrep-new-cluster
exec "$@" ${pos:+--wsrep-start-position=$pos}`

// prepareStart writes r's configuration file and gives r's directories to the servers' user,
// before its server or mariadbd --wsrep-recover runs.
func (s *system) prepareStart(c *kit.Cluster, r *kit.Replica) error {
	if err := os.WriteFile(cnfPath(r), []byte(s.config(c, r)), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(tmpDir(r), 0o700); err != nil {
		return err
	}
	if err := s.own(r.Dir, false); err != nil {
		return err
	}
	for _, p := range []string{dataDir(r), tmpDir(r)} {
		if err := s.own(p, true); err != nil {
			return err
		}
	}
	return nil
}

// Command starts r's server as Debian's mariadb.service does (startScript), with
// --wsrep-new-cluster where StartGroup decided to bootstrap it.
func (s *system) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	if err := s.prepareStart(c, r); err != nil {
		return kit.Command{}, err
	}
	mode := "join"
	if s.bootstrap == r {
		mode, s.bootstrap = "new", nil
		c.Record(r, "bootstrap: mariadbd --wsrep-new-cluster")
	}
	args := append([]string{"-c", startScript, "sh", mode}, s.asOwner()...)
	return kit.Command{Path: "/bin/sh", Args: append(args, s.cfg.Server, "--defaults-file=../my.cnf")}, nil
}

// StateFiles is a node's data directory: InnoDB's files, grastate.dat, gvwstate.dat and the
// Galera cache.
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{"data"} }

// sql runs statements on r's server, each in turn on one connection, and returns the rows of
// the last. Each call is bounded by 5 s within ctx, so that a server that does not answer
// shows as such.
func sql(ctx context.Context, r *kit.Replica, stmts ...string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sess, closer, err := dial(ctx, r.Addr(clientPort))
	if err != nil {
		return nil, err
	}
	defer closer()
	var rows [][]string
	for _, st := range stmts {
		if rows, err = sess.query(st); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// Write inserts the key through r: it returns once r committed it, which Galera does once
// every node of the primary component has certified it.
func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	s.mu.Lock()
	s.writers[key] = r.Index
	s.mu.Unlock()
	sess, closer, err := dial(ctx, r.Addr(clientPort))
	if err != nil {
		return err
	}
	defer closer()
	_, err = sess.query(fmt.Sprintf("INSERT INTO modulo.kv (k, v) VALUES (%s, %s)", quote(key), quote(value)))
	return err
}

// Delete deletes the key through the leader r, for break_realisation = "lose-write".
func (s *system) Delete(ctx context.Context, r *kit.Replica, key string) error {
	_, err := sql(ctx, r, "DELETE FROM modulo.kv WHERE k = "+quote(key))
	return err
}

// ReadAll reads the table from r alone: wsrep_sync_wait = 0 (no wait for the cluster's latest
// commits) and wsrep_dirty_reads = ON (a node outside the primary component answers too, with
// what it holds). Both are session variables, which nothing replicates.
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	rows, err := sql(ctx, r, "SET SESSION wsrep_sync_wait = 0, wsrep_dirty_reads = ON", "SELECT k, v FROM modulo.kv")
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for _, row := range rows {
		data[row[0]] = row[1]
	}
	return data, nil
}

// Logged tells whether the write's value is in the InnoDB redo log of r, the node it was sent
// through. Galera orders a write only once every node of the primary component has received
// it: until then the write waits in replication on the node that executes it, whose InnoDB
// has logged its row, uncommitted, and no other node holds it anywhere. A write that the model
// has reach a node other than the one it is sent through cannot be realised.
func (s *system) Logged(_ context.Context, r *kit.Replica, key, value string) (bool, error) {
	s.mu.Lock()
	w, sent := s.writers[key]
	s.mu.Unlock()
	switch {
	case !sent:
		return false, nil
	case w != r.Index:
		return false, fmt.Errorf("write %s reaches %s, which it is not sent through: Galera logs a write that its primary component has not ordered on the node that executes it alone: %w", key, r.Name, kit.ErrUnrealisable)
	}
	logs, _ := filepath.Glob(filepath.Join(dataDir(r), "ib_logfile*")) // the pattern is valid
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			return false, err
		}
		if bytes.Contains(b, []byte(value)) {
			return true, nil
		}
	}
	return false, nil
}

// status is what SHOW STATUS says of a node's replication.
type status map[string]string

func readStatus(ctx context.Context, r *kit.Replica) (status, error) {
	rows, err := sql(ctx, r, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', "+
		"'wsrep_local_state_comment', 'wsrep_last_committed', 'wsrep_cluster_size', 'wsrep_cluster_state_uuid', 'wsrep_cluster_conf_id')")
	if err != nil {
		return nil, err
	}
	st := status{}
	for _, row := range rows {
		st[strings.TrimPrefix(strings.ToLower(row[0]), "wsrep_")] = row[1]
	}
	return st, nil
}

func (st status) primary() bool { return st["cluster_status"] == "Primary" }
func (st status) synced() bool  { return st.primary() && st["local_state_comment"] == "Synced" }

func (st status) String() string {
	return fmt.Sprintf("%s, %s, size %s, last committed %s", st["cluster_status"], st["local_state_comment"], st["cluster_size"], st["last_committed"])
}

// Ready: r's server answers, and is either synced in a primary component or outside any (a
// node cut off or left alone has nothing to join; the convergence's wait for the cluster to
// catch up judges it). A joiner serves only once its state transfer is done.
func (s *system) Ready(ctx context.Context, r *kit.Replica) (bool, string, error) {
	st, err := readStatus(ctx, r)
	if err != nil {
		return false, err.Error(), nil
	}
	return st.synced() || !st.primary(), st.String(), nil
}

// view asks every online node for its status: each must be synced in one primary component
// of exactly the online nodes; seen says what is not so.
func view(ctx context.Context, online []*kit.Replica) ([]status, string) {
	var sts []status
	for i, r := range online {
		st, err := readStatus(ctx, r)
		switch {
		case err != nil:
			return nil, r.Name + " does not answer: " + err.Error()
		case !st.synced() || st["cluster_size"] != strconv.Itoa(len(online)):
			return nil, fmt.Sprintf("%s is %s; %d nodes are online", r.Name, st, len(online))
		case i > 0 && (st["cluster_state_uuid"] != sts[0]["cluster_state_uuid"] || st["cluster_conf_id"] != sts[0]["cluster_conf_id"]):
			return nil, fmt.Sprintf("%s is in view %s of %s, %s in view %s of %s", r.Name, st["cluster_conf_id"], st["cluster_state_uuid"],
				online[0].Name, sts[0]["cluster_conf_id"], sts[0]["cluster_state_uuid"])
		}
		sts = append(sts, st)
	}
	return sts, ""
}

// Leader is the online node of the lowest index once every online node is synced in one
// primary component of exactly the online nodes: Galera has no leader, any node of the primary
// component takes writes, and the kit needs one that every online node agrees on.
func (s *system) Leader(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	if _, seen := view(ctx, online); seen != "" {
		return nil, seen, nil
	}
	l := online[0]
	for _, r := range online {
		if r.Index < l.Index {
			l = r
		}
	}
	return l, "", nil
}

// CaughtUp: every online node is synced in one primary component of exactly the online nodes,
// and all have committed the same last writeset of the same history.
func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	sts, seen := view(ctx, online)
	if seen != "" {
		return false, seen, nil
	}
	for i, st := range sts {
		if st["last_committed"] != sts[0]["last_committed"] {
			return false, fmt.Sprintf("%s committed up to %s, %s up to %s", online[i].Name, st["last_committed"], online[0].Name, sts[0]["last_committed"]), nil
		}
	}
	return true, "", nil
}
