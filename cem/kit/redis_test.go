package kit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// redisSystem is a kit System for redis-server (Debian's 7.0), kept small: it is here to run
// the kit's link engine on a real system through the conformance suite, for S/S/R, S/L/R and
// S/CL/R. plugins/redis is the full plugin.
type redisSystem struct {
	clients map[int]*redis.Client
	// fromSnapshot marks the replicas whose next start must load the snapshot that an offline
	// resync copied in, rather than their own AOF.
	fromSnapshot map[int]bool
}

var redisAbout = kit.About{Name: "redis", DRMs: []string{"ssr", "slr", "sclr"}, PortsPerReplica: 1}

func newRedisSystem() *redisSystem {
	return &redisSystem{clients: map[int]*redis.Client{}, fromSnapshot: map[int]bool{}}
}

var redisVersion = regexp.MustCompile(`\bv=(\S+)`)

func (s *redisSystem) Version(ctx context.Context) (string, error) {
	out, err := kit.Output(ctx, "redis-server", "--version")
	if err != nil {
		return "", err
	}
	if m := redisVersion.FindStringSubmatch(out); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("redis-server --version: no version in %q", out)
}

func (s *redisSystem) Command(_ *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	if c := s.clients[r.Index]; c != nil {
		c.Close() // its connections were to the server's previous run
	}
	s.clients[r.Index] = redis.NewClient(&redis.Options{
		Addr: r.Addr(0), Protocol: 2, MaxRetries: -1, ContextTimeoutEnabled: true, DisableIdentity: true,
	})
	appendOnly := "yes"
	if s.fromSnapshot[r.Index] {
		appendOnly = "no" // Redis 7.0 loads the AOF and ignores dump.rdb when AOF is on
	}
	return kit.Command{Path: "redis-server", Args: []string{
		"--port", strconv.Itoa(r.Ports[0]), "--bind", "127.0.0.1", "--dir", r.Dir, "--logfile", "",
		"--appendonly", appendOnly, "--save", "", "--hz", "100", "--protected-mode", "no",
		"--repl-diskless-sync", "no", "--repl-diskless-sync-delay", "0",
	}}, nil
}

func (s *redisSystem) client(r *kit.Replica) *redis.Client { return s.clients[r.Index] }

func (s *redisSystem) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	return s.client(r).Set(ctx, key, value, 0).Err()
}

func (s *redisSystem) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	keys, err := s.client(r).Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		return map[string]string{}, err
	}
	values, err := s.client(r).MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	for i, k := range keys {
		if v, ok := values[i].(string); ok {
			data[k] = v
		}
	}
	return data, nil
}

// Holds reads one key rather than every key.
func (s *redisSystem) Holds(ctx context.Context, r *kit.Replica, key, value string) (bool, string, error) {
	got, err := s.client(r).Get(ctx, key).Result()
	if err != nil {
		return false, err.Error(), nil
	}
	return got == value, fmt.Sprintf("holds %q", got), nil
}

// info reads INFO sections as key/value pairs.
func (s *redisSystem) info(ctx context.Context, r *kit.Replica, sections ...string) (map[string]string, error) {
	text, err := s.client(r).Info(ctx, sections...).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// busy says what background work the server does (loading, a snapshot, an AOF rewrite), or "".
func busy(info map[string]string) string {
	for _, k := range []string{"loading", "rdb_bgsave_in_progress", "aof_rewrite_in_progress", "aof_rewrite_scheduled"} {
		if info[k] != "0" {
			return k + "=" + info[k]
		}
	}
	return ""
}

// Ready: the server answers PING; after an offline resync it also has AOF on again, rewritten
// from the snapshot it loaded.
func (s *redisSystem) Ready(ctx context.Context, r *kit.Replica) (bool, string, error) {
	if err := s.client(r).Ping(ctx).Err(); err != nil {
		return false, err.Error(), nil
	}
	if !s.fromSnapshot[r.Index] {
		return true, "", nil
	}
	if err := s.client(r).ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		return false, "", err
	}
	info, err := s.info(ctx, r, "persistence")
	if err != nil {
		return false, err.Error(), nil
	}
	if b := busy(info); b != "" || info["aof_enabled"] != "1" {
		return false, "AOF rewrite: " + b, nil
	}
	delete(s.fromSnapshot, r.Index)
	return true, "", nil
}

// CaughtUp: every server is idle.
func (s *redisSystem) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	for _, r := range online {
		info, err := s.info(ctx, r, "persistence")
		if err != nil {
			return false, r.Name + ": " + err.Error(), nil
		}
		if b := busy(info); b != "" {
			return false, r.Name + ": " + b, nil
		}
	}
	return true, "", nil
}

func (s *redisSystem) Follow(ctx context.Context, r, src *kit.Replica) error {
	return s.client(r).ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(src.Ports[0])).Err()
}

func (s *redisSystem) Unfollow(ctx context.Context, r *kit.Replica) error {
	return s.client(r).ReplicaOf(ctx, "NO", "ONE").Err()
}

// InSync: the replica's link is up with no sync in progress, it has its source's offset, and the
// source lists it online (a replica resumed after SIGSTOP reports its old link up at first).
func (s *redisSystem) InSync(ctx context.Context, r, src *kit.Replica) (bool, string, error) {
	ri, err := s.info(ctx, r, "replication", "persistence")
	if err != nil {
		return false, err.Error(), nil
	}
	si, err := s.info(ctx, src, "replication", "persistence")
	if err != nil {
		return false, err.Error(), nil
	}
	switch {
	case ri["master_port"] != strconv.Itoa(src.Ports[0]) || ri["master_link_status"] != "up" || ri["master_sync_in_progress"] != "0":
		return false, fmt.Sprintf("master port %s, link %s", ri["master_port"], ri["master_link_status"]), nil
	case busy(ri) != "" || busy(si) != "":
		return false, "busy", nil
	case ri["slave_repl_offset"] != si["master_repl_offset"]:
		return false, "offset " + ri["slave_repl_offset"] + " of " + si["master_repl_offset"], nil
	}
	for k, v := range si {
		if strings.HasPrefix(k, "slave") && strings.Contains(v, "port="+strconv.Itoa(r.Ports[0])+",") {
			return strings.Contains(v, "state=online"), v, nil
		}
	}
	return false, "the source does not list it", nil
}

// CopySnapshot has the source write a snapshot and copies it into the crashed replica's
// directory, without its AOF.
func (s *redisSystem) CopySnapshot(ctx context.Context, c *kit.Cluster, from, to *kit.Replica) error {
	saves := ""
	err := c.Await(ctx, from.Name+" idle", func(ctx context.Context) (bool, string, error) {
		info, err := s.info(ctx, from, "persistence")
		saves = info["rdb_saves"]
		return err == nil && busy(info) == "", busy(info), err
	})
	if err != nil {
		return err
	}
	if err := s.client(from).BgSave(ctx).Err(); err != nil {
		return err
	}
	c.Record(from, "BGSAVE")
	err = c.Await(ctx, from.Name+" to finish BGSAVE", func(ctx context.Context) (bool, string, error) {
		info, err := s.info(ctx, from, "persistence")
		return err == nil && busy(info) == "" && info["rdb_saves"] != saves, "rdb_saves " + info["rdb_saves"], err
	})
	if err != nil {
		return err
	}
	in, err := os.Open(filepath.Join(from.Dir, "dump.rdb"))
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(to.Dir, "dump.rdb"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	s.fromSnapshot[to.Index] = true
	return errors.Join(out.Close(), os.RemoveAll(filepath.Join(to.Dir, "appendonlydir")))
}

// TestLinkEngine runs the conformance suite on the kit's link engine with real redis-server.
func TestLinkEngine(t *testing.T) {
	for _, drm := range redisAbout.DRMs {
		t.Run(drm, func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{
				DRM: drm,
				New: func() cem.CEM { return kit.New(redisAbout, newRedisSystem()) },
			})
		})
	}
}
