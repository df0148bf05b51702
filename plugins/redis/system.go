package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

// system is how the kit runs and talks to redis-server: the kit calls it from one goroutine at
// a time.
type system struct {
	cfg     Config
	server  string          // the resolved binary, set by Prepare
	dialect dialect.Dialect // what the server's version accepts
	c       *kit.Cluster    // the cluster being run: its records and its links
	servers map[*kit.Replica]*server
	writes  map[write][]set // the SETs of each write of the cluster
	// acks holds, per replica, when InSync last asked it for an acknowledgement. Anything that
	// writes or moves a link clears it: a request made before covers none of it.
	acks map[*kit.Replica]time.Time
	// decode is the kit's decoder of the plugin's section, kept from Configure for Prepare,
	// which resolves the preset for the cluster's DRM.
	decode func(any) error
}

// write is one write of the kit: a key and its value (the probe writes a key once more).
type write struct{ key, value string }

// server is what the plugin keeps of one replica's server.
type server struct {
	// clients holds a client per database used, made on first use: a client selects its
	// database when it connects. A restart drops them.
	clients map[int]*redis.Client
	// fromSnapshot: the next start must load the RDB file that an offline resync copied in,
	// rather than the replica's own AOF (which the copy removed).
	fromSnapshot bool
	// aofOff: started from a snapshot with AOF off, which Ready turns back on; aofRewrite:
	// Ready has turned it on and waits for the rewrite that follows.
	aofOff, aofRewrite bool
}

// set is one SET: a key of one database and its value.
type set struct {
	db         int
	key, value string
}

// name is how a snapshot names the key: by itself in database 0, "db<n>/key" in database n.
func (s set) name() string { return dbKey(s.db, s.key) }

func dbKey(db int, key string) string {
	if db == 0 {
		return key
	}
	return "db" + strconv.Itoa(db) + "/" + key
}

const confName = "redis.conf"

// stateDir is a replica's server dir (redis.conf's dir), in its directory: its RDB file and its
// AOF. The configuration and the log beside it are written anew at every start, so they are no
// state.
const stateDir = "data"

func dataDir(r *kit.Replica) string { return filepath.Join(r.Dir, stateDir) }

// StateFiles is the server's dir, which a power loss, a disk error or a corruption takes, and
// which the kit saves and restores where S/CL/R's crashes have every server down. A restore
// loses nothing the plugin keeps: it asks which SETs realised a write (writes) only in the step
// that wrote it, and a start from a copied snapshot (fromSnapshot) follows the copy in the
// same step.
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{stateDir} }

// commandTimeout bounds one command to a server when the caller's context has no deadline.
const commandTimeout = 5 * time.Second

// Configure checks the section; the settings of its preset for the cluster's DRM are applied
// by Prepare.
func (s *system) Configure(decode func(any) error) (err error) {
	s.decode = decode
	s.cfg, err = parseConfig(decode, "")
	return err
}

// versions caches each server binary's version, by path: a plugin process runs many clusters
// with the same binary, and asking it costs a process start (about 13 ms).
var versions sync.Map // path -> dialect.Version

// findServer resolves the configured server binary and asks its version, once per path.
func (s *system) findServer(ctx context.Context) (string, dialect.Version, error) {
	path, err := s.cfg.serverPath()
	if err != nil {
		return "", dialect.Version{}, err
	}
	if v, ok := versions.Load(path); ok {
		return path, v.(dialect.Version), nil
	}
	out, err := kit.Output(ctx, path, "--version")
	if err != nil {
		return "", dialect.Version{}, err
	}
	v, err := dialect.Parse(out)
	if err != nil {
		return "", v, fmt.Errorf("%s %w", path, err)
	}
	versions.Store(path, v)
	return path, v, nil
}

func (s *system) Version(ctx context.Context) (string, error) {
	_, v, err := s.findServer(ctx)
	return v.String(), err
}

// Prepare applies the preset for the cluster's DRM, finds the server and its version, and
// writes every replica's redis.conf in the version's dialect.
func (s *system) Prepare(ctx context.Context, c *kit.Cluster) (err error) {
	if s.cfg, err = parseConfig(s.decode, c.Spec.DRM); err != nil {
		return err
	}
	if c.Partitioned() {
		s.cfg.partitionDefaults()
	}
	path, v, err := s.findServer(ctx)
	if err != nil {
		return err
	}
	dl, err := dialect.For(v)
	if err != nil {
		return err
	}
	for _, sv := range s.servers { // an earlier cluster's
		sv.closeClients()
	}
	s.server, s.dialect, s.c = path, dl, c
	s.servers, s.writes, s.acks = map[*kit.Replica]*server{}, map[write][]set{}, map[*kit.Replica]time.Time{}
	for _, r := range c.Replicas {
		if err := os.MkdirAll(dataDir(r), 0o755); err != nil {
			return err
		}
		ds, err := dl.Config(s.cfg.settings(r.Host, r.Ports[0], dataDir(r)))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.Dir, confName), []byte(dialect.Render(ds)), 0o644); err != nil {
			return err
		}
		s.servers[r] = &server{}
	}
	return nil
}

// Command starts the server from its redis.conf. After an offline resync it starts with AOF
// off, so that it loads the copied RDB file: with appendonly yes, Redis 7.0 loads only the
// AOF and ignores dump.rdb (measured on 7.0.15). Ready turns AOF back on.
func (s *system) Command(_ *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	sv := s.servers[r]
	sv.closeClients() // their connections were to the server's previous run
	clear(s.acks)
	args := []string{filepath.Join(r.Dir, confName)}
	if sv.fromSnapshot {
		args = append(args, "--appendonly", "no")
		sv.fromSnapshot, sv.aofOff = false, *s.cfg.AppendOnly
		s.c.Record(r, "starts from the copied %s (--appendonly no)", dialect.RDB)
	}
	return kit.Command{Path: s.server, Args: args}, nil
}

// client returns a client of r's database db.
func (s *system) client(r *kit.Replica, db int) *redis.Client {
	sv := s.servers[r]
	if c, ok := sv.clients[db]; ok {
		return c
	}
	if sv.clients == nil {
		sv.clients = map[int]*redis.Client{}
	}
	c := redis.NewClient(&redis.Options{
		Addr:     r.Addr(0),
		DB:       db,
		Protocol: 2, // RESP2: every version speaks it (HELLO is 6.0+)
		// The kit bounds every call with the step timeout; the timeouts bound a call should
		// one come without a deadline. A retry would repeat a write the kit accounts for.
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           commandTimeout,
		ReadTimeout:           commandTimeout,
		WriteTimeout:          commandTimeout,
		PoolSize:              2,
		DisableIdentity:       true, // CLIENT SETINFO is 7.2+
	})
	sv.clients[db] = c
	return c
}

func (sv *server) closeClients() {
	for _, c := range sv.clients {
		_ = c.Close()
	}
	sv.clients = nil
}

// Ready: the server answers PING once its data is loaded. A server started from a snapshot
// then gets AOF persistence back, which rewrites the AOF from the loaded data, and is ready
// once that is written.
func (s *system) Ready(ctx context.Context, r *kit.Replica) (bool, string, error) {
	if err := s.client(r, 0).Ping(ctx).Err(); err != nil {
		return false, "PING: " + err.Error(), nil // refused while it starts, LOADING while it loads
	}
	sv := s.servers[r]
	if !sv.aofOff {
		return true, "", nil
	}
	if !sv.aofRewrite {
		if err := s.client(r, 0).ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
			return false, "", fmt.Errorf("CONFIG SET appendonly yes: %w", err)
		}
		sv.aofRewrite = true
		s.c.Record(r, "CONFIG SET appendonly yes")
	}
	info, err := s.info(ctx, r, "persistence")
	if err != nil {
		return false, "", err
	}
	if info["aof_last_bgrewrite_status"] != "ok" {
		return false, "", fmt.Errorf("AOF rewrite failed; see %s", r.LogPath())
	}
	// CONFIG SET appendonly yes starts the rewrite before it returns (or schedules it while
	// another child runs): once the server is idle, the AOF is written.
	ok, busy := idle(info)
	if ok = ok && info["aof_enabled"] == "1"; ok {
		sv.aofOff, sv.aofRewrite = false, false
	}
	return ok, "AOF rewrite: " + busy, nil
}

// setsOf returns the SETs that realise the kit's write of key = value: sets_per_write keys in
// the database of the current divergence, each value padded to value_size. A write that the
// kit sends to several replicas is the same SETs on each.
func (s *system) setsOf(key, value string) []set {
	w := write{key, value}
	if sets, ok := s.writes[w]; ok {
		return sets
	}
	db := s.c.Divergences() % s.cfg.Databases
	sets := make([]set, s.cfg.SetsPerWrite)
	for m := range sets {
		k, v := s.cfg.KeyPrefix+key, value
		if len(sets) > 1 {
			k += "." + strconv.Itoa(m+1)
			v += "." + strconv.Itoa(m+1)
		}
		if pad := s.cfg.ValueSize - len(v); pad > 0 {
			v += strings.Repeat(".", pad)
		}
		sets[m] = set{db: db, key: k, value: v}
	}
	s.writes[w] = sets
	return sets
}

func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	clear(s.acks)
	for _, st := range s.setsOf(key, value) {
		if err := s.client(r, st.db).Set(ctx, st.key, st.value, 0).Err(); err != nil {
			return fmt.Errorf("SET %s: %w", st.name(), err)
		}
		if st.key != key || st.value != value || st.db != 0 { // else the kit's record says it
			s.c.Record(r, "SET %s %s", st.name(), shortValue(st.value))
		}
	}
	return nil
}

// shortValue is a value for the record: padding is counted, not shown.
func shortValue(v string) string {
	trimmed := strings.TrimRight(v, ".")
	if n := len(v) - len(trimmed); n > 0 {
		return fmt.Sprintf("%s (+%d bytes of padding)", trimmed, n)
	}
	return v
}

// Holds tells whether r holds the last SET of the write: replication keeps their order.
func (s *system) Holds(ctx context.Context, r *kit.Replica, key, value string) (bool, string, error) {
	sets := s.setsOf(key, value)
	last := sets[len(sets)-1]
	got, err := s.client(r, last.db).Get(ctx, last.key).Result()
	if err != nil {
		return false, "GET " + last.name() + ": " + err.Error(), nil
	}
	return got == last.value, "holds " + strconv.Quote(shortValue(got)), nil
}

// ReadAll returns every key of every database that holds keys, named as set.name does.
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	keyspace, err := s.info(ctx, r, "keyspace")
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for name := range keyspace { // "db3:keys=1,expires=0,avg_ttl=0"
		db, err := strconv.Atoi(strings.TrimPrefix(name, "db"))
		if !strings.HasPrefix(name, "db") || err != nil {
			continue
		}
		if err := s.readDB(ctx, r, db, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

func (s *system) readDB(ctx context.Context, r *kit.Replica, db int, data map[string]string) error {
	c := s.client(r, db)
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, "*", 1000).Result()
		if err != nil {
			return fmt.Errorf("SCAN in database %d: %w", db, err)
		}
		if len(keys) > 0 {
			values, err := c.MGet(ctx, keys...).Result()
			if err != nil {
				return fmt.Errorf("MGET in database %d: %w", db, err)
			}
			for i, k := range keys {
				if v, ok := values[i].(string); ok {
					data[dbKey(db, k)] = v
				}
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// CaughtUp: the kit has waited for every link; the replicas have settled once none loads data
// or runs a snapshot or AOF rewrite, which a crash would cut short.
func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	for _, r := range online {
		info, err := s.info(ctx, r, "persistence")
		if err != nil {
			return false, r.Name + ": " + err.Error(), nil
		}
		if ok, busy := idle(info); !ok {
			return false, r.Name + " busy: " + busy, nil
		}
	}
	return true, "", nil
}

func (s *system) Follow(ctx context.Context, r, src *kit.Replica) error {
	return s.replicaOf(ctx, r, src.Host, strconv.Itoa(src.Ports[0]))
}

func (s *system) Unfollow(ctx context.Context, r *kit.Replica) error {
	return s.replicaOf(ctx, r, "NO", "ONE")
}

// replicaOf sends the command that the server's version knows: SLAVEOF before 5.0, REPLICAOF
// from 5.0.
func (s *system) replicaOf(ctx context.Context, r *kit.Replica, host, port string) error {
	clear(s.acks)
	cmd := s.dialect.ReplicaOf
	if err := s.client(r, 0).Do(ctx, cmd, host, port).Err(); err != nil {
		return fmt.Errorf("%s %s %s: %w", cmd, host, port, err)
	}
	s.c.Record(r, "%s %s %s", cmd, host, port)
	return nil
}

func (s *system) FailureWaits() (before, after time.Duration) {
	return s.cfg.WaitBeforeWrites, s.cfg.WaitAfterWrites
}

func (s *system) Probe() bool { return *s.cfg.Probe }

// info reads INFO sections as key/value pairs: in one call where the server's version takes
// several sections at once, else one call a section.
func (s *system) info(ctx context.Context, r *kit.Replica, sections ...string) (map[string]string, error) {
	calls := [][]string{sections}
	if !s.dialect.MultiSectionInfo {
		calls = nil
		for _, sec := range sections {
			calls = append(calls, []string{sec})
		}
	}
	m := map[string]string{}
	for _, call := range calls {
		text, err := s.client(r, 0).Info(ctx, call...).Result()
		if err != nil {
			return nil, fmt.Errorf("INFO %s: %w", strings.Join(call, " "), err)
		}
		for _, line := range strings.Split(text, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
				m[k] = v
			}
		}
	}
	return m, nil
}

// idle tells whether the server loads nothing and runs no snapshot or AOF rewrite child; it
// says what it is busy with otherwise.
func idle(info map[string]string) (bool, string) {
	for _, k := range []string{"loading", "async_loading", "rdb_bgsave_in_progress", "aof_rewrite_in_progress", "aof_rewrite_scheduled", "module_fork_in_progress"} {
		if v, ok := info[k]; ok && v != "0" {
			return false, k + "=" + v
		}
	}
	return true, ""
}

// CopySnapshot makes from write a fresh RDB snapshot and copies it into to's directory,
// removing to's AOF (appendonly.aof, or appendonlydir from 7.0) so that the copy is what to
// loads at its next start, as a primary.
func (s *system) CopySnapshot(ctx context.Context, c *kit.Cluster, from, to *kit.Replica) (follows bool, err error) {
	rdb := filepath.Join(dataDir(from), dialect.RDB)
	persistence := func(ctx context.Context) (map[string]string, error) { return s.info(ctx, from, "persistence") }
	// A child already running (a full sync's snapshot, an AOF rewrite) would turn BGSAVE into
	// an error; the step before left the primary idle, but make sure.
	err = c.Await(ctx, from.Name+" idle before BGSAVE", func(ctx context.Context) (bool, string, error) {
		info, err := persistence(ctx)
		if err != nil {
			return false, "", err
		}
		ok, busy := idle(info)
		return ok, busy, nil
	})
	if err != nil {
		return false, err
	}
	before, _ := os.Stat(rdb) // none before the first snapshot
	if err := s.client(from, 0).BgSave(ctx).Err(); err != nil {
		return false, fmt.Errorf("BGSAVE: %w", err)
	}
	c.Record(from, "BGSAVE")
	// BGSAVE returns with the child started, which writes a temporary file and renames it over
	// dump.rdb: the snapshot is done when no child runs and dump.rdb is another file. This
	// holds on every version; INFO's rdb_saves is 7.0+ and LASTSAVE counts whole seconds.
	err = c.Await(ctx, from.Name+" to finish BGSAVE", func(ctx context.Context) (bool, string, error) {
		info, err := persistence(ctx)
		if err != nil {
			return false, "", err
		}
		if info["rdb_bgsave_in_progress"] != "0" {
			return false, "BGSAVE in progress", nil
		}
		if info["rdb_last_bgsave_status"] != "ok" {
			return false, "", fmt.Errorf("BGSAVE failed; see %s", from.LogPath())
		}
		after, err := os.Stat(rdb)
		if err != nil || before != nil && os.SameFile(before, after) {
			return false, "no new " + dialect.RDB, nil
		}
		return true, "", nil
	})
	if err != nil {
		return false, err
	}
	copied := filepath.Join(dataDir(to), dialect.RDB)
	if err := fsutil.CopyFile(rdb, copied); err != nil {
		return false, err
	}
	if err := os.RemoveAll(filepath.Join(dataDir(to), s.dialect.AOF)); err != nil {
		return false, fmt.Errorf("remove the AOF of %s: %w", to.Name, err)
	}
	// As an operator's copy ends with sync: a later power loss of to must not take back the
	// snapshot it was given, nor bring back the AOF it no longer has.
	if err := errors.Join(fsutil.Sync(copied), fsutil.Sync(dataDir(to))); err != nil {
		return false, fmt.Errorf("sync the snapshot copied to %s: %w", to.Name, err)
	}
	s.servers[to].fromSnapshot = true
	c.Record(to, "removed %s", s.dialect.AOF)
	return false, nil
}
