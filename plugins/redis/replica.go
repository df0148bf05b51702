package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

// replica is one redis-server of the cluster and what the plugin knows of it concretely.
type replica struct {
	index   int
	port    int
	dir     string
	dialect dialect.Dialect // what the server's version accepts
	proc    *cem.Process    // nil while the server is down
	client  *redis.Client   // database 0; nil while the server is down
	// dbs holds a client for each other database used, made on first use: a client selects
	// its database when it connects, so each database needs one.
	dbs map[int]*redis.Client
	// stopped is true while the server is suspended (SIGSTOP).
	stopped bool
	// link is the replica the server replicates from (REPLICAOF), or aem.NoSource.
	link int
	// promoted says that an S/S/R divergence made the server a master, although the model
	// keeps its link, because it had to take writes while its source was suspended; the first
	// convergence after which both are online links it again (see Plugin.wantLink).
	promoted bool
	// fromSnapshot says that the next start must load the RDB file an offline resync copied
	// into dir rather than the replica's own AOF.
	fromSnapshot bool
}

// commandTimeout bounds one command to a server when the caller's context has no deadline.
const commandTimeout = 5 * time.Second

const (
	confName     = "redis.conf"
	serverLogTag = "redis-server" // names the process's log and pid files
)

func (r *replica) String() string { return "replica " + strconv.Itoa(r.index) }

func (r *replica) running() bool { return r.proc != nil && r.proc.Running() }

// addr is the replica's address, as REPLICAOF takes it.
func (r *replica) addr() (host, port string) { return "127.0.0.1", strconv.Itoa(r.port) }

// start starts the server from its directory. With fromSnapshot it starts with AOF off, so that
// the server loads the copied RDB file (with appendonly yes, Redis 7.0 loads only the AOF and
// ignores dump.rdb, measured on 7.0.15), and the caller turns AOF back on.
func (r *replica) start(server string) error {
	if r.proc != nil {
		return fmt.Errorf("%s: start: a server process (pid %d) exists already", r, r.proc.Pid)
	}
	args := []string{filepath.Join(r.dir, confName)}
	if r.fromSnapshot {
		args = append(args, "--appendonly", "no")
	}
	p, err := cem.StartProcess(cem.ProcessSpec{Name: serverLogTag, Dir: r.dir, Path: server, Args: args})
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	r.proc, r.stopped, r.link = p, false, aem.NoSource
	r.client = r.newClient(0)
	return nil
}

// newClient returns a client of the server's database db.
func (r *replica) newClient(db int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:     "127.0.0.1:" + strconv.Itoa(r.port),
		DB:       db,
		Protocol: 2, // RESP2: every version speaks it (HELLO is 6.0+)
		// Waits pass their deadline to every call; single commands (SET, REPLICAOF, ...) answer
		// at once from a running server, and the timeouts bound them should one not. A retry
		// would repeat a write the plugin must account for, so there is none.
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           commandTimeout,
		ReadTimeout:           commandTimeout,
		WriteTimeout:          commandTimeout,
		PoolSize:              2,
		DisableIdentity:       true, // CLIENT SETINFO is 7.2+
	})
}

// db returns a client of database n.
func (r *replica) db(n int) *redis.Client {
	if n == 0 {
		return r.client
	}
	if c, ok := r.dbs[n]; ok {
		return c
	}
	if r.dbs == nil {
		r.dbs = map[int]*redis.Client{}
	}
	c := r.newClient(n)
	r.dbs[n] = c
	return c
}

// kill SIGKILLs the server's process group and forgets the server.
func (r *replica) kill(ctx context.Context) error {
	// The connections die with the server either way.
	if r.client != nil {
		_ = r.client.Close()
		r.client = nil
	}
	for _, c := range r.dbs {
		_ = c.Close()
	}
	r.dbs = nil
	if r.proc == nil {
		return nil
	}
	err := r.proc.Kill(ctx)
	r.proc, r.stopped, r.link = nil, false, aem.NoSource
	if err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	return nil
}

// exitedError says that the server is down: killed by the plugin, or dead on its own, with
// the last line of its log.
func (r *replica) exitedError() error {
	if r.proc == nil {
		return fmt.Errorf("%s (port %d) is down", r, r.port)
	}
	return fmt.Errorf("%s (port %d) exited unexpectedly: %s", r, r.port, lastLogLine(r.proc.LogPath))
}

// lastLogLine returns the last non-empty line of a log file, for one-line errors.
func lastLogLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log: " + err.Error()
	}
	defer f.Close()
	last := "empty log " + path
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			last = l
		}
	}
	return last
}

// info reads INFO sections as key/value pairs: in one call where the server's version takes
// several sections at once, else one call a section.
func (r *replica) info(ctx context.Context, sections ...string) (map[string]string, error) {
	if !r.running() {
		return nil, r.exitedError()
	}
	calls := [][]string{sections}
	if !r.dialect.MultiSectionInfo {
		calls = nil
		for _, s := range sections {
			calls = append(calls, []string{s})
		}
	}
	m := map[string]string{}
	for _, call := range calls {
		text, err := r.client.Info(ctx, call...).Result()
		if err != nil {
			return nil, fmt.Errorf("%s: INFO %s: %w", r, strings.Join(call, " "), err)
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

// replicaEntry is one "slaveN:ip=...,port=...,state=...,offset=...,lag=..." line of a
// source's INFO replication: the source's own view of a replica.
type replicaEntry struct {
	state  string
	offset int64
}

// replicaView finds the source's view of the replica listening on port.
func replicaView(info map[string]string, port int) (replicaEntry, bool) {
	for k, v := range info {
		if !strings.HasPrefix(k, "slave") || !strings.Contains(v, "state=") {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(f, "="); ok {
				fields[a] = b
			}
		}
		if fields["port"] != strconv.Itoa(port) {
			continue
		}
		off, err := strconv.ParseInt(fields["offset"], 10, 64)
		if err != nil {
			continue
		}
		return replicaEntry{state: fields["state"], offset: off}, true
	}
	return replicaEntry{}, false
}

// ping tells whether the server answers PING, which it does only once its data is loaded; a
// server that exited is an error.
func (r *replica) ping(ctx context.Context) (bool, error) {
	if !r.running() {
		return false, r.exitedError()
	}
	// Connection refused while the server starts, LOADING while it reads its data: not yet.
	return r.client.Ping(ctx).Err() == nil, nil
}

// readAll returns every key of every database of the server that holds keys, with its string
// value, as "db<n>/<key>".
func (r *replica) readAll(ctx context.Context) (map[string]string, error) {
	switch {
	case !r.running():
		return nil, fmt.Errorf("%s is down", r)
	case r.stopped:
		return nil, fmt.Errorf("%s is suspended", r)
	}
	keyspace, err := r.info(ctx, "keyspace")
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for name := range keyspace { // "db3:keys=1,expires=0,avg_ttl=0"
		n, err := strconv.Atoi(strings.TrimPrefix(name, "db"))
		if !strings.HasPrefix(name, "db") || err != nil {
			continue
		}
		if err := r.readDB(ctx, n, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// readDB adds every key of database n to data.
func (r *replica) readDB(ctx context.Context, n int, data map[string]string) error {
	c := r.db(n)
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, "*", 1000).Result()
		if err != nil {
			return fmt.Errorf("%s: SCAN in database %d: %w", r, n, err)
		}
		if len(keys) > 0 {
			values, err := c.MGet(ctx, keys...).Result()
			if err != nil {
				return fmt.Errorf("%s: MGET in database %d: %w", r, n, err)
			}
			for i, k := range keys {
				if v, ok := values[i].(string); ok {
					data[dbKey(n, k)] = v
				}
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// dbKey is how a snapshot names key k of database n.
func dbKey(n int, k string) string { return "db" + strconv.Itoa(n) + "/" + k }
