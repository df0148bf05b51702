// Command modulo-plugin-etcd is modulo's etcd plugin: it realises the quorum model on a cluster
// of etcd members (Debian's etcd-server 3.4), each at an address of its own on 2379 and 2380
// (the kit's network namespaces), or on loopback at a client and a peer port of 127.0.0.1.
// It is built from package kit, as docs/writing-a-plugin.md builds it step by step: it says how
// to start a member, write and read keys through etcd's JSON gateway (/v3/kv/...), find the
// leader and tell whether the members have caught up (/v3/maintenance/status), and whether a
// write is in a member's write-ahead log; the kit does the rest.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem/kit"
)

var about = kit.About{Name: "etcd", DRMs: []string{"qce", "qpe", "qne", "qcne"}, PortsPerReplica: 2, Ports: []int{2379, 2380}, Releases: kit.Releases{Path: "etcd/<version>/etcd", Key: "server"}}

func main() { kit.Serve(about, &system{}) }

// Config is the plugin's section of modulo's configuration.
type Config struct {
	// Server is the etcd binary: a path, or a name looked up in PATH.
	Server string `toml:"server"`
	// HeartbeatMS and ElectionMS are etcd's --heartbeat-interval and --election-timeout. The
	// defaults (50 and 500, etcd's are 100 and 1000) elect a new leader twice as fast on
	// loopback; a leader whose followers are suspended keeps leading for ElectionMS, which is
	// what a write that reaches only a minority has to be logged in.
	HeartbeatMS int `toml:"heartbeat_ms"`
	ElectionMS  int `toml:"election_ms"`
	// Flags are more of etcd's flags, after the plugin's: ["--unsafe-no-fsync"] (etcd 3.5
	// and later) turns fsync off, which etcd documents as unsafe, for Q/P/E's power losses.
	Flags []string `toml:"flags"`
}

// system is how the kit runs and talks to one etcd member.
type system struct{ cfg Config }

// client reuses no connection: a restarted member is a new server on an old address, and a
// request must not go to a connection that its predecessor left.
var client = http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func (s *system) Configure(decode func(any) error) error {
	s.cfg = Config{Server: "etcd", HeartbeatMS: 50, ElectionMS: 500}
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if s.cfg.HeartbeatMS < 1 || s.cfg.ElectionMS < 5*s.cfg.HeartbeatMS {
		return fmt.Errorf("heartbeat_ms must be at least 1 and election_ms at least 5 times it, got %d and %d", s.cfg.HeartbeatMS, s.cfg.ElectionMS)
	}
	return nil
}

func (s *system) Version(ctx context.Context) (string, error) {
	out, err := kit.Output(ctx, s.cfg.Server, "--version")
	first, _, _ := strings.Cut(out, "\n") // "etcd Version: 3.4.23"
	return strings.TrimSpace(strings.TrimPrefix(first, "etcd Version:")), err
}

func url(r *kit.Replica, port int) string { return "http://" + r.Addr(port) }

// Command starts a member of the cluster that every replica belongs to; on a restart etcd
// finds its data directory and ignores the --initial-* flags.
func (s *system) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	var peers []string
	for _, p := range c.Replicas {
		peers = append(peers, p.Name+"="+url(p, 1))
	}
	return kit.Command{Path: s.cfg.Server, Args: append([]string{
		"--name", r.Name, "--data-dir", filepath.Join(r.Dir, "data"),
		"--listen-client-urls", url(r, 0), "--advertise-client-urls", url(r, 0),
		"--listen-peer-urls", url(r, 1), "--initial-advertise-peer-urls", url(r, 1),
		"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr",
		"--heartbeat-interval", strconv.Itoa(s.cfg.HeartbeatMS), "--election-timeout", strconv.Itoa(s.cfg.ElectionMS),
	}, s.cfg.Flags...)}, nil
}

// StateFiles is a member's data directory: its WAL and snapshots, and its identity in the
// cluster.
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{"data"} }

// call posts a request to member r's JSON gateway and decodes the answer into resp.
func (s *system) call(ctx context.Context, r *kit.Replica, path string, req, resp any) error {
	body, _ := json.Marshal(req) // maps of strings, bytes and bools always marshal
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url(r, 0)+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hresp, err := client.Do(hreq)
	if err != nil {
		return err
	}
	defer hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(hresp.Body, 200))
		return fmt.Errorf("%s: %s: %s", path, hresp.Status, bytes.TrimSpace(msg))
	}
	return json.NewDecoder(hresp.Body).Decode(resp)
}

// Write puts the key; through the leader, the answer comes once the write has committed.
// ([]byte fields are base64 in JSON, as the gateway wants them.)
func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	return s.call(ctx, r, "/v3/kv/put", map[string][]byte{"key": []byte(key), "value": []byte(value)}, &struct{}{})
}

// Delete deletes the key through the leader r, for break_realisation = "lose-write".
func (s *system) Delete(ctx context.Context, r *kit.Replica, key string) error {
	return s.call(ctx, r, "/v3/kv/deleterange", map[string][]byte{"key": []byte(key)}, &struct{}{})
}

// ReadAll reads every key from r alone: a serializable range from "\x00" to the end.
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	var resp struct{ Kvs []struct{ Key, Value []byte } }
	req := map[string]any{"key": []byte{0}, "range_end": []byte{0}, "serializable": true}
	if err := s.call(ctx, r, "/v3/kv/range", req, &resp); err != nil {
		return nil, err
	}
	data := map[string]string{}
	for _, kv := range resp.Kvs {
		data[string(kv.Key)] = string(kv.Value)
	}
	return data, nil
}

// status is what /v3/maintenance/status says of a member (64-bit numbers are strings).
type status struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader, RaftIndex, RaftAppliedIndex string
}

// statuses asks every member of rs for its status; leader is the index of the leader they
// all follow, or -1 (with what it saw) until they agree on one among them.
func (s *system) statuses(ctx context.Context, rs []*kit.Replica) (sts []status, leader int, seen string) {
	leader = -1
	for i, r := range rs {
		var st status
		if err := s.call(ctx, r, "/v3/maintenance/status", struct{}{}, &st); err != nil {
			return nil, -1, r.Name + " does not answer: " + err.Error()
		}
		if st.Leader == "" || st.Leader == "0" || i > 0 && st.Leader != sts[0].Leader {
			return nil, -1, fmt.Sprintf("%s follows leader %q", r.Name, st.Leader)
		}
		if st.Header.MemberID == st.Leader {
			leader = i
		}
		sts = append(sts, st)
	}
	if leader < 0 {
		return nil, -1, "the leader is not among " + fmt.Sprint(rs)
	}
	return sts, leader, ""
}

// CaughtUp: one leader, and every member has applied everything the leader committed.
func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	sts, l, seen := s.statuses(ctx, online)
	if l < 0 {
		return false, seen, nil
	}
	for i, st := range sts {
		if st.RaftIndex != sts[l].RaftIndex || st.RaftAppliedIndex != st.RaftIndex {
			return false, fmt.Sprintf("%s committed %s and applied %s; leader %s committed %s",
				online[i].Name, st.RaftIndex, st.RaftAppliedIndex, online[l].Name, sts[l].RaftIndex), nil
		}
	}
	return true, "", nil
}

func (s *system) Leader(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	_, l, seen := s.statuses(ctx, online)
	if l < 0 {
		return nil, seen, nil
	}
	return online[l], "", nil
}

// Logged looks for the value, which is unique to the write, in r's write-ahead log: etcd
// stores a put's key and value verbatim in the log entry.
func (s *system) Logged(_ context.Context, r *kit.Replica, _, value string) (bool, error) {
	wals, _ := filepath.Glob(filepath.Join(r.Dir, "data", "member", "wal", "*.wal")) // the pattern is valid
	for _, w := range wals {
		b, err := os.ReadFile(w)
		if err != nil {
			return false, err
		}
		if bytes.Contains(b, []byte(value)) {
			return true, nil
		}
	}
	return false, nil
}
