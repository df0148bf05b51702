// Command modulo-plugin-patroni is modulo's Patroni plugin: PostgreSQL's streaming replication
// managed by Patroni, with etcd as its configuration store, on the quorum rules, as the DRMs
// qcp (Q/C/P, crashes), qnp (Q/N/P, partitions) and qpp (Q/P/P, power losses of each node's
// data directory, kit.DiskState) that it declares itself.
//
// It is run as operators run Patroni: one etcd per cluster (a kit service), and per replica one
// Patroni process that starts and manages its own PostgreSQL, bootstraps the cluster (initdb by
// the first node to take the initialize key), clones replicas (pg_basebackup), elects and
// promotes a new primary when the leader's key expires, and rejoins a former primary with
// pg_rewind. A crash kills a replica's Patroni and its PostgreSQL together. Writes go to the
// primary; reads come from each replica alone (hot standbys). Under Patroni's default
// asynchronous replication a write is acknowledged once the primary committed it, before any
// standby holds it (kit.Asynchronous): a failover may then lose it, within what Patroni
// documents (maximum_lag_on_failover, plus what the primary wrote in its last ttl seconds), and
// the campaign reports it as a lost write. README.md tells how
// each step is realised and what each mode promises.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/plugins/internal/pgbin"
)

var about = kit.About{
	Name: "patroni",
	Declare: []kit.DRM{{
		Name: "qcp", Title: "Q/C/P", Rules: "quorum", System: "Patroni (PostgreSQL)",
		Summary: "Patroni's failover of PostgreSQL streaming replication: crashes, asynchronous by default",
		Ops:     1, Replicas: 3, OpsRange: []int{1, 2}, ReplicasRange: []int{3},
	}, {
		Name: "qnp", Title: "Q/N/P", Rules: "quorum", System: "Patroni (PostgreSQL)", Partition: true,
		Summary: "the Q/C/P model with partitions: a failed node stays up, cut off from its peers and etcd",
		Ops:     1, Replicas: 3, OpsRange: []int{1, 2}, ReplicasRange: []int{3},
	}, {
		Name: "qpp", Title: "Q/P/P", Rules: "quorum", System: "Patroni (PostgreSQL)", PowerLoss: true,
		Summary: "the Q/C/P model with power losses: a crash, then the node's data directory loses what was not synced",
		Ops:     1, Replicas: 3, OpsRange: []int{1, 2}, ReplicasRange: []int{3},
	}},
	PortsPerReplica: 2,
	// PostgreSQL's and Patroni's REST API's ordinary ports.
	Ports:    []int{5432, 8008},
	Services: []kit.ServiceSpec{{Name: "etcd", Ports: []int{2379, 2380}}},
}

func main() { kit.Serve(about, &system{}) }

// The interfaces the kit finds by assertion: a wrong signature would silently leave one out.
var (
	_ kit.Configurable = (*system)(nil)
	_ kit.Preparer     = (*system)(nil)
	_ kit.Servicer     = (*system)(nil)
	_ kit.Quorum       = (*system)(nil)
	_ kit.LogReader    = (*system)(nil)
	_ kit.Asynchronous = (*system)(nil)
	_ kit.Deleter      = (*system)(nil)
	_ kit.Isolation    = (*system)(nil)
	_ kit.Observer     = (*system)(nil)
	_ kit.SyncLogger   = (*system)(nil)
	_ kit.DiskState    = (*system)(nil)
)

// The ports of a replica, in the order the kit gives them.
const (
	pgPort = iota
	apiPort
)

// Config is the [patroni] table.
type Config struct {
	// Patroni is the patroni program; Etcd the etcd server that is its configuration store;
	// Bin the directory of PostgreSQL's programs (empty: the newest under /usr/lib/postgresql,
	// as Debian installs them).
	Patroni string `toml:"patroni"`
	Etcd    string `toml:"etcd"`
	Bin     string `toml:"bin"`
	// User runs Patroni and PostgreSQL when the plugin runs as root (PostgreSQL refuses root).
	User string `toml:"user"`
	// SynchronousMode and SynchronousModeStrict are Patroni's synchronous_mode and
	// synchronous_mode_strict (both off by default, as Patroni's are): with synchronous_mode a
	// commit waits until the synchronous standby holds it, and only that standby may be
	// promoted; strict refuses writes rather than go asynchronous when no standby is left.
	SynchronousMode       bool `toml:"synchronous_mode"`
	SynchronousModeStrict bool `toml:"synchronous_mode_strict"`
	// MaximumLagOnFailover is Patroni's maximum_lag_on_failover in bytes (its default, 1 MiB):
	// a standby further behind the last position the leader published is not promoted.
	MaximumLagOnFailover int64 `toml:"maximum_lag_on_failover"`
	// TTL, LoopWait and RetryTimeout are Patroni's ttl, loop_wait and retry_timeout in seconds
	// (Patroni's are 30, 10 and 10): a failover takes about TTL. Patroni documents
	// loop_wait + 2 * retry_timeout <= ttl.
	TTL          int `toml:"ttl"`
	LoopWait     int `toml:"loop_wait"`
	RetryTimeout int `toml:"retry_timeout"`
}

// system is how the kit runs and talks to one Patroni node.
type system struct {
	cfg Config
	bin string
	// asUser prefixes a command that must run as cfg.User: setpriv, when the plugin is root.
	asUser []string
	owner  *user.User
	// preload is the LD_PRELOAD library that keeps PostgreSQL in its Patroni's process group
	// where the host has no cgroup2 (see nosetsidSource), or "".
	preload string
	// postBootstrap is the script Patroni runs once after initdb: the table of the writes.
	postBootstrap string
	// c is the cluster being run, set by Prepare: Write waits with its Await.
	c *kit.Cluster
}

// streamsQuery is what a leader's WAL senders stream to whom: each row's standby, its state and
// its sync_state.
const streamsQuery = "SELECT application_name, state, sync_state FROM pg_stat_replication"

func (s *system) Configure(decode func(any) error) error {
	s.cfg = Config{
		Patroni: "/usr/bin/patroni", Etcd: "/usr/bin/etcd", User: "postgres",
		MaximumLagOnFailover: 1 << 20, TTL: 8, LoopWait: 1, RetryTimeout: 3,
	}
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if s.cfg.LoopWait < 1 || s.cfg.RetryTimeout < 1 || s.cfg.LoopWait+2*s.cfg.RetryTimeout > s.cfg.TTL {
		return fmt.Errorf("Patroni needs loop_wait + 2 * retry_timeout <= ttl, each at least 1: got loop_wait %d, retry_timeout %d, ttl %d",
			s.cfg.LoopWait, s.cfg.RetryTimeout, s.cfg.TTL)
	}
	if s.cfg.MaximumLagOnFailover < 0 {
		return fmt.Errorf("maximum_lag_on_failover must be at least 0, got %d", s.cfg.MaximumLagOnFailover)
	}
	return nil
}

// Version is Patroni's and PostgreSQL's: "patroni 3.0.2, postgres 15.18".
func (s *system) Version(ctx context.Context) (string, error) {
	bin, err := pgbin.Dir(s.cfg.Bin)
	if err != nil {
		return "", err
	}
	out, err := kit.Output(ctx, s.cfg.Patroni, "--version") // "patroni 3.0.2"
	if err != nil {
		return "", err
	}
	pg, err := pgbin.Version(ctx, bin)
	if err != nil {
		return "", err
	}
	if _, err := kit.Output(ctx, s.cfg.Etcd, "--version"); err != nil {
		return "", err
	}
	return strings.TrimSpace(out) + ", postgres " + pg, nil
}

// AcksBeforeReplicating: without synchronous_mode, a commit is acknowledged once the primary
// holds it, whether or not a standby does.
func (s *system) AcksBeforeReplicating(*kit.Cluster) bool { return !s.cfg.SynchronousMode }

// nosetsidSource is a library that makes setsid(2) a no-op. Patroni starts PostgreSQL in a
// session of its own (so that the postmaster outlives a restart of Patroni), and PostgreSQL's
// every child process calls setsid too: where the kit contains servers in process groups
// alone (no cgroup2), a crash (SIGKILL) or a suspension (SIGSTOP) of a node would reach its
// Patroni and not its PostgreSQL, which would go on streaming WAL. Preloaded into Patroni and
// so into every process it starts, it keeps them all in the node's process group, as a cgroup
// would; PostgreSQL ignores what the second signal to a child's own group (kill(-pid))
// returns. With cgroup2 the kit's cgroups reach every process, and no library is used.
const nosetsidSource = `#include <unistd.h>
pid_t setsid(void) { return getpgrp(); }
`

func (s *system) Prepare(ctx context.Context, c *kit.Cluster) error {
	bin, err := pgbin.Dir(s.cfg.Bin)
	if err != nil {
		return err
	}
	s.bin, s.asUser, s.owner, s.preload, s.c = bin, nil, nil, "", c
	if os.Geteuid() == 0 {
		if s.owner, err = user.Lookup(s.cfg.User); err != nil {
			return fmt.Errorf("user %q, who runs Patroni and PostgreSQL: %w", s.cfg.User, err)
		}
		// setpriv's credential change clears the parent-death signal that the kit sets: it sets
		// it again, so that Patroni still dies with the plugin.
		s.asUser = []string{"setpriv", "--reuid=" + s.owner.Uid, "--regid=" + s.owner.Gid, "--init-groups", "--pdeathsig=KILL", "--"}
		if err := pgbin.Reachable(c.Spec.Dir, s.owner, "patroni"); err != nil {
			return err
		}
	}
	if !strings.HasPrefix(proc.Containment(), "cgroup ") {
		src := filepath.Join(c.Spec.Dir, "nosetsid.c")
		s.preload = filepath.Join(c.Spec.Dir, "nosetsid.so")
		if err := os.WriteFile(src, []byte(nosetsidSource), 0o644); err != nil {
			return err
		}
		if _, err := kit.Output(ctx, "cc", "-shared", "-fPIC", "-O2", "-o", s.preload, src); err != nil {
			return fmt.Errorf("the host has no cgroup2, and the library that keeps PostgreSQL in its node's process group does not build: %w", err)
		}
	}
	s.postBootstrap = filepath.Join(c.Spec.Dir, "post-bootstrap.sh")
	script := fmt.Sprintf("#!/bin/sh\n# Patroni runs it once, on the bootstrapped primary, with a connection string.\nexec %s -X -q -v ON_ERROR_STOP=1 -d \"$1\" -c 'CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL)'\n",
		filepath.Join(bin, "psql"))
	return os.WriteFile(s.postBootstrap, []byte(script), 0o755)
}

// ServiceCommand starts the cluster's etcd: one member, its data in the service's directory.
// Patroni 3.0.2's etcd3 client works with etcd 3.4's v3 API, so the v2 API stays off.
func (s *system) ServiceCommand(_ *kit.Cluster, sv *kit.Service) (kit.Command, error) {
	u := func(k int) string { return "http://" + sv.Addr(k) }
	return kit.Command{Path: s.cfg.Etcd, Args: []string{
		"--name", "etcd", "--data-dir", filepath.Join(sv.Dir, "data"),
		"--listen-client-urls", u(0), "--advertise-client-urls", u(0),
		"--listen-peer-urls", u(1), "--initial-advertise-peer-urls", u(1),
		"--initial-cluster", "etcd=" + u(1), "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr",
	}}, nil
}

func (s *system) ServiceReady(ctx context.Context, _ *kit.Cluster, sv *kit.Service) (bool, string, error) {
	var h struct{ Health string }
	if err := getJSON(ctx, "http://"+sv.Addr(0)+"/health", &h); err != nil {
		return false, err.Error(), nil
	}
	return h.Health == "true", "health " + h.Health, nil
}

func dataDir(r *kit.Replica) string { return filepath.Join(r.Dir, "data") }

// StateFiles is a node's data directory: PostgreSQL's WAL, heap and control file, and Patroni's
// patroni.dynamic.json. Its patroni.yml and pgpass are written anew at every start; etcd, the
// cluster's service, is never failed.
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{"data"} }

// config is replica r's Patroni configuration.
func (s *system) config(c *kit.Cluster, r *kit.Replica) map[string]any {
	etcd := c.Service("etcd")
	params := map[string]any{
		"wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on",
		"max_wal_senders": 10, "max_replication_slots": 10, "wal_keep_size": "256MB",
		// Shared memory in the data directory: a SIGKILLed server leaves no /dev/shm segment.
		"dynamic_shared_memory_type": "mmap",
		// No Unix socket: every replica of a host's namespace would want the same one.
		"unix_socket_directories": "",
		"logging_collector":       "off",
		// A standby reports its replay position every second, not every ten.
		"wal_receiver_status_interval": "1s",
	}
	if c.Partitioned() {
		// A cut-off node's connections hang rather than close: its standby and its primary's
		// WAL sender notice the loss within 5 s rather than a minute.
		params["wal_receiver_timeout"], params["wal_sender_timeout"] = "5s", "5s"
	}
	initdb := []any{map[string]any{"encoding": "UTF8"}}
	if !c.FaultyDisks() {
		// Where no power loss can take back what initdb wrote, its syncs only slow the start.
		// Under qpp it syncs, as an operator's does, so that a power loss after the bootstrap
		// does not take back the cluster the plugin made.
		initdb = append(initdb, "no-sync")
	}
	return map[string]any{
		"scope": "modulo", "namespace": "/service/", "name": r.Name,
		"log": map[string]any{"level": "INFO"},
		"restapi": map[string]any{
			"listen": r.Addr(apiPort), "connect_address": r.Addr(apiPort),
		},
		"etcd3": map[string]any{"hosts": []string{etcd.Addr(0)}},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl": s.cfg.TTL, "loop_wait": s.cfg.LoopWait, "retry_timeout": s.cfg.RetryTimeout,
				"maximum_lag_on_failover": s.cfg.MaximumLagOnFailover,
				"synchronous_mode":        s.cfg.SynchronousMode,
				"synchronous_mode_strict": s.cfg.SynchronousModeStrict,
				"postgresql": map[string]any{
					"use_pg_rewind": true, "use_slots": true, "parameters": params,
				},
			},
			"initdb":         initdb,
			"post_bootstrap": s.postBootstrap,
		},
		"postgresql": map[string]any{
			"listen": r.Addr(pgPort), "connect_address": r.Addr(pgPort),
			"data_dir": dataDir(r), "bin_dir": s.bin, "pgpass": filepath.Join(r.Dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   map[string]any{"username": "postgres"},
				"replication": map[string]any{"username": "replicator"},
			},
			// Only the cluster's hosts are on its subnet (on loopback, 127.0.0.0/8).
			"pg_hba": []string{
				"local all all trust",
				"host all all samenet trust",
				"host replication all samenet trust",
			},
			"parameters": map[string]any{"unix_socket_directories": ""},
			"basebackup": []any{map[string]any{"checkpoint": "fast"}},
		},
		"watchdog": map[string]any{"mode": "off"},
	}
}

// Command starts replica r's Patroni, as the servers' user, with its configuration in r.Dir;
// Patroni starts PostgreSQL itself.
func (s *system) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	if s.owner != nil {
		uid, _ := strconv.Atoi(s.owner.Uid)
		gid, _ := strconv.Atoi(s.owner.Gid)
		for _, dir := range []string{r.Dir, dataDir(r)} {
			if err := os.Chown(dir, uid, gid); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return kit.Command{}, err
			}
		}
	}
	// Under qpp the data directory is the mount point of the node's power-loss file system,
	// which the kit makes before Patroni's initdb or pg_basebackup fills it, and PostgreSQL
	// starts only from a directory of mode 0700 or 0750.
	if err := os.Chmod(dataDir(r), 0o700); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return kit.Command{}, err
	}
	text, err := yaml.Marshal(s.config(c, r))
	if err != nil {
		return kit.Command{}, err
	}
	conf := filepath.Join(r.Dir, "patroni.yml")
	if err := os.WriteFile(conf, text, 0o644); err != nil {
		return kit.Command{}, err
	}
	argv := append(slices.Clone(s.asUser), s.cfg.Patroni, conf)
	cmd := kit.Command{Path: argv[0], Args: argv[1:]}
	if s.preload != "" {
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+s.preload)
	}
	return cmd, nil
}

// client reuses no connection: a restarted node is a new server on an old address.
var client = http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	// /patroni answers 503 on a node whose PostgreSQL does not run, with its state in the body.
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body[:min(len(body), 200)]))
	}
	return nil
}

// nodeStatus is what a node's GET /patroni says of itself.
type nodeStatus struct {
	State          string `json:"state"`
	Role           string `json:"role"`
	Timeline       int    `json:"timeline"`
	PendingRestart bool   `json:"pending_restart"`
	Xlog           struct {
		Location         uint64 `json:"location"`
		ReplayedLocation uint64 `json:"replayed_location"`
	} `json:"xlog"`
}

func (n nodeStatus) primary() bool { return n.Role == "master" || n.Role == "primary" }

// clusterView is what a node's GET /cluster says of the members (as the node reads the DCS).
type clusterView struct {
	Members []struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		State    string `json:"state"`
		Timeline int    `json:"timeline"`
	} `json:"members"`
}

func (v clusterView) leader() string {
	for _, m := range v.Members {
		if m.Role == "leader" {
			return m.Name
		}
	}
	return ""
}

func api(r *kit.Replica, path string) string { return "http://" + r.Addr(apiPort) + path }

// leader returns the index in online of the node that every online node's /cluster names the
// leader and whose own /patroni says it is a running primary, or -1 with what it saw.
func (s *system) leader(ctx context.Context, online []*kit.Replica) (int, string) {
	name := ""
	for _, r := range online {
		var v clusterView
		if err := getJSON(ctx, api(r, "/cluster"), &v); err != nil {
			return -1, r.Name + ": " + err.Error()
		}
		l := v.leader()
		if l == "" || name != "" && l != name {
			return -1, fmt.Sprintf("%s's /cluster names leader %q", r.Name, l)
		}
		name = l
	}
	i := slices.IndexFunc(online, func(r *kit.Replica) bool { return r.Name == name })
	if i < 0 {
		return -1, fmt.Sprintf("the leader %s is not among %v", name, online)
	}
	var st nodeStatus
	if err := getJSON(ctx, api(online[i], "/patroni"), &st); err != nil {
		return -1, online[i].Name + ": " + err.Error()
	}
	if !st.primary() || st.State != "running" {
		return -1, fmt.Sprintf("the leader %s is a %s, %s", name, st.Role, st.State)
	}
	return i, ""
}

func (s *system) Leader(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	l, seen := s.leader(ctx, online)
	if l < 0 {
		return nil, seen, nil
	}
	if rec, err := s.inRecovery(ctx, online[l]); err != nil || rec {
		return nil, fmt.Sprintf("the leader %s is still in recovery (%v)", online[l].Name, err), nil
	}
	return online[l], "", nil
}

// connect opens one connection to r's PostgreSQL, bounded by ctx.
func connect(ctx context.Context, r *kit.Replica) (*pgx.Conn, error) {
	url := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=5&application_name=modulo", r.Addr(pgPort))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	return conn, nil
}

// query runs one statement on r on a connection of its own and returns its rows as text.
func query(ctx context.Context, r *kit.Replica, sql string, args ...any) ([][]string, error) {
	conn, err := connect(ctx, r)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, sql, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	var out [][]string
	for rows.Next() {
		// The simple protocol's values are text, as PostgreSQL prints them ("t", "0/3000060").
		vals := rows.RawValues()
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = string(v)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	return out, nil
}

func (s *system) inRecovery(ctx context.Context, r *kit.Replica) (bool, error) {
	rows, err := query(ctx, r, "SELECT pg_is_in_recovery()")
	if err != nil {
		return false, err
	}
	return len(rows) == 1 && rows[0][0] == "t", nil
}

// Write inserts the key through r, the primary; the answer comes once PostgreSQL committed it
// (and, under synchronous_mode, once the synchronous standby holds it).
//
// Under synchronous_mode it then waits until the standby that PostgreSQL streams to
// synchronously is the one Patroni has recorded in etcd. After the synchronous standby fails
// (a crash, or a partition once the WAL sender gives up on it), the leader makes another
// standby synchronous and commits, but records it only two seconds later (ha.py sleeps before
// it writes /sync), and only a recorded standby may be promoted: a write acknowledged within
// that window and followed by the leader's failure leaves survivors that hold it and refuse to
// elect until the old leader returns, by Patroni's design. The model's write is committed where
// a majority that can elect holds it: here, once Patroni has recorded who holds it. A write
// that reaches only the leader gets no answer, and never gets here.
func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	if _, err := query(ctx, r, "INSERT INTO kv VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v", key, value); err != nil {
		return err
	}
	if !s.cfg.SynchronousMode {
		return nil
	}
	return s.c.Await(ctx, r.Name+"'s synchronous standby recorded by Patroni", func(ctx context.Context) (bool, string, error) {
		streams, err := query(ctx, r, streamsQuery)
		if err != nil {
			return false, err.Error(), nil
		}
		names, seen := s.recordedSync(ctx, r, streams)
		return len(names) > 0, seen, nil
	})
}

// Delete deletes the key through the leader r, for break_realisation = "lose-write".
func (s *system) Delete(ctx context.Context, r *kit.Replica, key string) error {
	_, err := query(ctx, r, "DELETE FROM kv WHERE k = $1", key)
	return err
}

// ReadAll reads every table of r's database, from r alone (a standby serves reads): the writes'
// table, and any other a bug might leave data in, each under "table/<name>".
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	tables, err := query(ctx, r, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for _, t := range tables {
		if t[0] != "kv" {
			data["table/"+t[0]] = "present"
			continue
		}
		rows, err := query(ctx, r, "SELECT k, v FROM kv")
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			data[row[0]] = row[1]
		}
	}
	return data, nil
}

// CaughtUp: one leader that every online node names, a running primary; every other online
// node a running replica with no restart pending, which the leader streams to and which has
// replayed all the leader's WAL.
func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	l, seen := s.leader(ctx, online)
	if l < 0 {
		return false, seen, nil
	}
	leader := online[l]
	rows, err := query(ctx, leader, "SELECT pg_is_in_recovery(), pg_current_wal_lsn() - '0/0'::pg_lsn")
	if err != nil {
		return false, err.Error(), nil
	}
	if rows[0][0] != "f" {
		return false, leader.Name + " is still in recovery", nil
	}
	lsn := rows[0][1]
	streams, err := query(ctx, leader, streamsQuery)
	if err != nil {
		return false, err.Error(), nil
	}
	// Under synchronous_mode the leader has a synchronous standby whenever another node runs
	// (Patroni assigns it within a loop or two, in postgresql.conf first and then in etcd):
	// until then it acknowledges commits that no standby holds.
	if s.cfg.SynchronousMode && len(online) > 1 {
		if ok, seen := s.syncAssigned(ctx, leader, online, streams); !ok {
			return false, seen, nil
		}
	}
	for _, r := range online {
		var st nodeStatus
		if err := getJSON(ctx, api(r, "/patroni"), &st); err != nil {
			return false, r.Name + ": " + err.Error(), nil
		}
		if st.State != "running" || st.PendingRestart {
			return false, fmt.Sprintf("%s is %s (pending restart: %v)", r.Name, st.State, st.PendingRestart), nil
		}
		if r == leader {
			continue
		}
		if !slices.ContainsFunc(streams, func(row []string) bool { return row[0] == r.Name && row[1] == "streaming" }) {
			return false, fmt.Sprintf("%s does not stream to %s: %v", leader.Name, r.Name, streams), nil
		}
		rep, err := query(ctx, r, "SELECT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn() - '0/0'::pg_lsn, 0) >= $1::numeric", lsn)
		if err != nil {
			return false, err.Error(), nil
		}
		if rep[0][0] != "t" || rep[0][1] != "t" {
			return false, fmt.Sprintf("%s (recovery %s) has not replayed up to %s's %s", r.Name, rep[0][0], leader.Name, lsn), nil
		}
	}
	return true, "", nil
}

// syncAssigned tells whether the leader streams synchronously to an online node that Patroni
// has recorded as its synchronous standby, the only node it would promote.
func (s *system) syncAssigned(ctx context.Context, leader *kit.Replica, online []*kit.Replica, streams [][]string) (bool, string) {
	names, seen := s.recordedSync(ctx, leader, streams)
	for _, n := range names {
		if slices.ContainsFunc(online, func(r *kit.Replica) bool { return r.Name == n }) {
			return true, ""
		}
	}
	if seen == "" {
		seen = fmt.Sprintf("%s has no synchronous standby among the online nodes yet: %v", leader.Name, streams)
	}
	return false, seen
}

// recordedSync names the standbys that the leader streams to synchronously (its
// pg_stat_replication rows, streams, say "sync") and that Patroni has recorded as synchronous
// (the leader's /cluster names them sync_standby); with none, what it saw.
func (s *system) recordedSync(ctx context.Context, leader *kit.Replica, streams [][]string) ([]string, string) {
	var v clusterView
	if err := getJSON(ctx, api(leader, "/cluster"), &v); err != nil {
		return nil, leader.Name + ": " + err.Error()
	}
	var names []string
	for _, m := range v.Members {
		if m.Role == "sync_standby" && slices.ContainsFunc(streams, func(row []string) bool { return row[0] == m.Name && row[2] == "sync" }) {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Sprintf("%s streams %v, and its /cluster names no synchronous standby among them", leader.Name, streams)
	}
	return names, ""
}

// Logged looks for the value in r's WAL files: the value is unique to the schedule and the key,
// and the heap insert's record (or the full-page image that the first change of a page after a
// checkpoint logs) carries the tuple verbatim (wal_compression is off). PostgreSQL writes a
// commit's WAL before it answers, whether or not a standby has it; a SQL function could not
// tell a record that is only in the WAL of a primary that is still to answer.
func (s *system) Logged(_ context.Context, r *kit.Replica, _, value string) (bool, error) {
	segs, _ := filepath.Glob(filepath.Join(dataDir(r), "pg_wal", "[0-9A-F]*")) // the pattern is valid
	for _, seg := range segs {
		if len(filepath.Base(seg)) != 24 {
			continue
		}
		b, err := os.ReadFile(seg)
		if errors.Is(err, os.ErrNotExist) {
			continue // recycled meanwhile
		}
		if err != nil {
			return false, err
		}
		if bytes.Contains(b, []byte(value)) {
			return true, nil
		}
	}
	return false, nil
}

// Isolated tells whether r, cut off from its peers and from etcd, has seen it: its Patroni no
// longer runs a primary (a leader that cannot renew its key demotes itself after
// retry_timeout), and its PostgreSQL streams from no one.
func (s *system) Isolated(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (bool, string, error) {
	var st nodeStatus
	if err := getJSON(ctx, api(r, "/patroni"), &st); err != nil {
		return false, err.Error(), nil
	}
	if st.primary() {
		return false, r.Name + " still runs a primary", nil
	}
	rows, err := query(ctx, r, "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")
	if err != nil {
		return false, err.Error(), nil
	}
	if rows[0][0] != "0" {
		return false, r.Name + " still streams", nil
	}
	return true, "", nil
}

// Observe: Patroni's role for r, its timeline (the epoch a promotion starts) and its position
// in the WAL (the primary's, or what a standby replayed), from r's /patroni.
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	var st nodeStatus
	if err := getJSON(ctx, api(r, "/patroni"), &st); err != nil {
		return map[string]string{"patroni": firstLine(err.Error())}, nil
	}
	pos := st.Xlog.Location
	if !st.primary() {
		pos = st.Xlog.ReplayedLocation
	}
	return map[string]string{
		cem.ObserveRole: st.Role, cem.ObserveEpoch: "timeline " + strconv.Itoa(st.Timeline),
		cem.ObservePosition: fmt.Sprintf("%X/%X", pos>>32, pos&0xFFFFFFFF), "state": st.State,
	}, nil
}

// SyncLines: how Patroni resynced a node, as it logs it, and PostgreSQL's start of streaming.
func (s *system) SyncLines() []kit.LineKind {
	return []kit.LineKind{
		{Text: "running pg_rewind from", Kind: "REWIND"},
		{Text: "bootstrapped from leader", Kind: "BASEBACKUP"},
		{Text: "promoted self to leader", Kind: "PROMOTE"},
		{Text: "started streaming WAL from primary", Kind: "STREAM"},
		{Text: "record with incorrect prev-link", Kind: "PREV-LINK", Broken: true},
		// The standby's side of "requested WAL segment ... has already been removed" (libpq
		// writes the primary's error after "ERROR:" and two spaces), the answer to a standby
		// that needs WAL its primary does not hold: it can never stream from it again, and
		// Patroni 3.0.2 rewinds a standby only when the timeline IDs differ and rebuilds it
		// never. Its primary logs the same words, but is not the one broken.
		{Text: "could not receive data from WAL stream: ERROR:  requested WAL segment", Kind: "WAL-REMOVED", Broken: true},
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
