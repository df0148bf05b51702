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
)

// replica is one redis-server of the cluster and what the plugin knows of it concretely.
type replica struct {
	index  int
	port   int
	dir    string
	proc   *cem.Process  // nil while the server is down
	client *redis.Client // nil while the server is down
	// stopped is true while the server is suspended (SIGSTOP).
	stopped bool
	// link is the replica the server replicates from (REPLICAOF), or aem.NoSource.
	link int
	// fromSnapshot says that the next start must load the RDB file an offline resync copied
	// into dir rather than the replica's own AOF.
	fromSnapshot bool
}

// commandTimeout bounds one command to a server when the caller's context has no deadline.
const commandTimeout = 5 * time.Second

const (
	confName     = "redis.conf"
	rdbName      = "dump.rdb"      // the server's default dbfilename
	aofDirName   = "appendonlydir" // the server's default appenddirname
	serverLogTag = "redis-server"  // names the process's log and pid files
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
	r.client = redis.NewClient(&redis.Options{
		Addr:     "127.0.0.1:" + strconv.Itoa(r.port),
		Protocol: 2,
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
	return nil
}

// kill SIGKILLs the server's process group and forgets the server.
func (r *replica) kill(ctx context.Context) error {
	if r.client != nil {
		_ = r.client.Close() // the connection dies with the server either way
		r.client = nil
	}
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

// info reads INFO sections as key/value pairs.
func (r *replica) info(ctx context.Context, sections ...string) (map[string]string, error) {
	if !r.running() {
		return nil, r.exitedError()
	}
	text, err := r.client.Info(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: INFO: %w", r, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
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

// readAll returns every key of the server with its string value.
func (r *replica) readAll(ctx context.Context) (map[string]string, error) {
	switch {
	case !r.running():
		return nil, fmt.Errorf("%s is down", r)
	case r.stopped:
		return nil, fmt.Errorf("%s is suspended", r)
	}
	data := map[string]string{}
	var cursor uint64
	for {
		keys, next, err := r.client.Scan(ctx, cursor, "*", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("%s: SCAN: %w", r, err)
		}
		if len(keys) > 0 {
			values, err := r.client.MGet(ctx, keys...).Result()
			if err != nil {
				return nil, fmt.Errorf("%s: MGET: %w", r, err)
			}
			for i, k := range keys {
				if v, ok := values[i].(string); ok {
					data[k] = v
				}
			}
		}
		if cursor = next; cursor == 0 {
			return data, nil
		}
	}
}
