// Command modulo-plugin-nats is modulo's NATS JetStream plugin: it realises the DRM Q/C/N, the
// Q/C/Z model on one replicated JetStream stream, on a cluster of nats-server processes (Debian's
// 2.9.10), each at an address of its own on 4222, 6222 and 8222 (the kit's network namespaces)
// or on loopback at a client, a route and a monitoring port of 127.0.0.1, with a store of its
// own.
// It is built from package kit: it says how to start a server, publish a write to the stream,
// read what one server's store holds, find the stream's leader and tell whether the servers
// hold the same stream; the kit does the rest. README.md tells how each step is realised.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
)

var about = kit.About{
	Name: "nats",
	Declare: []kit.DRM{{
		Name: "qcn", Title: "Q/C/N", Rules: "quorum", System: "NATS JetStream",
		Summary: "the Q/C/Z model on one JetStream stream replicated by every server",
		Ops:     2, Replicas: 3, OpsRange: []int{1, 2, 3, 4, 5}, ReplicasRange: []int{3, 4, 5},
	}, {
		Name: "qpn", Title: "Q/P/N", Rules: "quorum", System: "NATS JetStream", PowerLoss: true,
		Summary: "the Q/C/N model with power losses: a crash drops what was not fsynced",
		Ops:     2, Replicas: 3, OpsRange: []int{1, 2, 3}, ReplicasRange: []int{3, 5},
	}, {
		Name: "qnn", Title: "Q/N/N", Rules: "quorum", System: "NATS JetStream", Partition: true,
		Summary: "the Q/C/N model with partitions: a failed server stays up, cut off from its peers",
		Ops:     2, Replicas: 3, OpsRange: []int{1, 2, 3}, ReplicasRange: []int{3, 5},
	}, {
		Name: "qcnn", Title: "Q/CN/N", Rules: "crash-partition", System: "NATS JetStream",
		Summary: "the Q/C/N model with each failed server crashed or cut off by a partition",
		Ops:     1, Replicas: 3, OpsRange: []int{1, 2}, ReplicasRange: []int{3},
	}},
	PortsPerReplica: 3,
	// nats-server's own client, route and monitoring ports, where each replica has an address
	// of its own (network = "namespaces", Q/N/N).
	Ports:    []int{4222, 6222, 8222},
	Releases: kit.Releases{Path: "nats-server/<version>/nats-server", Key: "server"},
}

func main() { kit.Serve(about, &system{}) }

// The interfaces the kit finds by assertion: a wrong signature would silently leave one out.
var (
	_ kit.Configurable = (*system)(nil)
	_ kit.Isolation    = (*system)(nil)
	_ kit.Preparer     = (*system)(nil)
	_ kit.Quorum       = (*system)(nil)
	_ kit.LogReader    = (*system)(nil)
	_ kit.DiskState    = (*system)(nil)
	_ kit.Observer     = (*system)(nil)
	_ kit.SyncLogger   = (*system)(nil)
)

// The ports of a replica, in the order the kit gives them.
const (
	clientPort = iota
	routePort
	monitorPort
)

const (
	account    = "$G"      // the account of a server without accounts configured
	streamName = "modulo"  // the schedule's stream
	subjects   = "modulo." // a write of key k is published to subject modulo.k
)

// Config is the [nats] table.
type Config struct {
	// Server is the nats-server binary: a path, or a name looked up in PATH.
	Server string `toml:"server"`
	// SettleMS is how long the servers' views of the stream must stay the same before a
	// convergence takes a stream that some online servers do not host (or none does) or serve
	// outside its Raft group, or servers whose leader counts them current with another state
	// than its, as what the cluster settled on, rather than waiting for what will not come.
	// Longer than nats-server's longest election timeout (9 s in 2.9), so that a server still
	// recovering its assignments has found its leader.
	SettleMS int `toml:"settle_ms"`
	// SyncInterval is JetStream's sync_interval (nats-server 2.10 and later): how often the
	// store fsyncs, "always" for every write; empty leaves the server's default (every two
	// minutes), under which a whole-cluster power loss loses acknowledged writes
	// (nats-server#7564).
	SyncInterval string `toml:"sync_interval"`
}

// system is how the kit runs and talks to one nats-server. Its state is the cluster's:
// Prepare resets it.
type system struct {
	cfg     Config
	id      string // the schedule's ID, which the stream's state is read under
	created bool   // the stream was created in this cluster
	// leaderSince: the server's /jsz says when a stream's leader took up its leadership;
	// versionRead: its version was read since the last Configure.
	leaderSince, versionRead bool
	// settled is what CaughtUp last saw of a stream that not every online server hosts, and
	// since when it has seen just that.
	settled string
	since   time.Time
}

func (s *system) Configure(decode func(any) error) error {
	s.cfg, s.versionRead = Config{Server: "nats-server", SettleMS: 12000}, false
	if err := decode(&s.cfg); err != nil {
		return err
	}
	if s.cfg.SettleMS < 1000 {
		return fmt.Errorf("settle_ms must be at least 1000, got %d", s.cfg.SettleMS)
	}
	return nil
}

func (s *system) Version(ctx context.Context) (string, error) {
	out, err := kit.Output(ctx, s.cfg.Server, "--version")
	return strings.TrimPrefix(strings.TrimSpace(out), "nats-server: v"), err // "nats-server: v2.9.10"
}

func (s *system) Prepare(ctx context.Context, c *kit.Cluster) error {
	s.id, s.created, s.settled, s.since = c.Spec.ScheduleID, false, "", time.Time{}
	if !s.versionRead {
		v, err := s.Version(ctx)
		if err != nil {
			return fmt.Errorf("the version of %s: %w", s.cfg.Server, err)
		}
		s.leaderSince, s.versionRead = reportsLeaderSince(v), true
	}
	return nil
}

// Command starts a server of the cluster that every replica belongs to, with routes to all the
// others, JetStream on and its store under r.Dir/store, debug logging on for the Raft lines
// that SyncLines reads.
func (s *system) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	var routes []string
	for _, p := range c.Replicas {
		if p != r {
			routes = append(routes, "nats://"+p.Addr(routePort))
		}
	}
	args := []string{
		"--name", r.Name, "--addr", r.Host, "--port", strconv.Itoa(r.Ports[clientPort]),
		"--http_port", strconv.Itoa(r.Ports[monitorPort]),
		"--cluster_name", "modulo", "--cluster", "nats://" + r.Addr(routePort), "--routes", strings.Join(routes, ","),
		"--jetstream", "--store_dir", filepath.Join(r.Dir, "store"), "--debug",
	}
	if s.cfg.SyncInterval != "" {
		// No flag sets it: a configuration file does, which the flags above then complete.
		conf := filepath.Join(r.Dir, "jetstream.conf")
		text := fmt.Sprintf("jetstream {\n  sync_interval: %q\n}\n", s.cfg.SyncInterval)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return kit.Command{}, err
		}
		args = append(args, "--config", conf)
	}
	return kit.Command{Path: s.cfg.Server, Args: args}, nil
}

// StateFiles is a server's store: its streams, the Raft groups' logs, terms and snapshots, and
// the meta group's assignments.
func (s *system) StateFiles(*kit.Cluster, *kit.Replica) []string { return []string{"store"} }

// streamDir is the stream's file store in r's store; raftDirs are its Raft groups' (the meta
// group's is _meta_).
func streamDir(r *kit.Replica) string {
	return filepath.Join(r.Dir, "store", "jetstream", account, "streams", streamName, "msgs")
}

func raftDirs(r *kit.Replica) []string {
	dirs, _ := filepath.Glob(filepath.Join(r.Dir, "store", "jetstream", "$SYS", "_js_", "S-*")) // the pattern is valid
	return dirs
}

// connect opens a connection to r's server that never reconnects: a restarted server is a new
// server, and a write must not reach it through its predecessor's connection.
func connect(ctx context.Context, r *kit.Replica) (*nats.Conn, error) {
	timeout := 2 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	nc, err := nats.Connect("nats://"+r.Addr(clientPort), nats.NoReconnect(), nats.Timeout(timeout), nats.Name("modulo"))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", r.Name, err)
	}
	return nc, nil
}

// Write publishes the value to subject modulo.<key> with the key as its message ID, and
// returns once the stream has acknowledged it: its leader answers once a quorum stored it.
func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	nc, err := connect(ctx, r)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	// A stream whose leader is being elected answers nothing; a client publishes again with
	// the same message ID, which the stream takes once (a healed server whose term rose while
	// it was cut off deposes the leader it rejoins, after the cluster caught up). An answer
	// that the retry is a duplicate says that an earlier try was stored.
	for retried := false; ; retried = true {
		ack, err := js.Publish(subjects+key, []byte(value), nats.MsgId(key), nats.ExpectStream(streamName), nats.Context(ctx))
		switch {
		case errors.Is(err, nats.ErrNoStreamResponse) && ctx.Err() == nil:
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		case err != nil:
			return fmt.Errorf("publish %s through %s: %w", key, r.Name, err)
		case ack.Duplicate && !retried:
			return fmt.Errorf("publish %s through %s: the stream took it for a duplicate of sequence %d", key, r.Name, ack.Sequence)
		}
		return nil
	}
}

// ReadAll reads the stream as r's server alone holds it: its state from the server's /jsz,
// and every message of that state from the block files of its store. A replica that hosts
// no stream holds nothing. The data are every key's payload (the write's value), the payload
// of every sequence ("@<seq>"), and the stream's state ("@stream", under the schedule's ID as
// every value is), so that replicas that hold the same writes at other sequences, or differ
// only in whether the stream exists, differ.
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		j, err := readJsz(ctx, r)
		if err != nil {
			return nil, err
		}
		sd := j.stream()
		if sd == nil {
			return map[string]string{}, nil
		}
		data, held, err := storeData(r, s.id, sd.State)
		if err != nil || held == sd.State.Msgs {
			return data, err
		}
		// The server writes its blocks a few milliseconds after it stores a message.
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s's store holds %d of the messages its server reports (%s)", r.Name, held, sd.State)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// storeData reads the messages of state from r's store, and says how many it found.
func storeData(r *kit.Replica, id string, state streamState) (map[string]string, uint64, error) {
	msgs, err := readStore(streamDir(r))
	if err != nil {
		return nil, 0, fmt.Errorf("%s's store: %w", r.Name, err)
	}
	data := map[string]string{"@stream": id + ": " + state.String()}
	var held uint64
	for seq, m := range msgs {
		if seq < state.FirstSeq || seq > state.LastSeq {
			continue
		}
		held++
		key := msgID(m.Header)
		if key == "" {
			key = "(no message ID) " + m.Subject
		}
		data[key] = string(m.Payload)
		data["@"+strconv.FormatUint(seq, 10)] = string(m.Payload)
	}
	return data, held, nil
}

// view is what one server says of the cluster.
type view struct {
	r      *kit.Replica
	meta   string        // the meta group's leader
	stream *streamDetail // nil when the server hosts no stream
}

// views asks every server of online for its /jsz; seen says which did not answer.
func views(ctx context.Context, online []*kit.Replica) ([]view, string) {
	var vs []view
	for _, r := range online {
		j, err := readJsz(ctx, r)
		if err != nil {
			return nil, r.Name + " does not answer: " + err.Error()
		}
		vs = append(vs, view{r: r, meta: j.metaLeader(), stream: j.stream()})
	}
	return vs, ""
}

// Isolated tells whether r, cut off from its peers, has lost the stream's leader: a follower
// that heard from no leader campaigns, and a leader that lost its quorum steps down.
func (s *system) Isolated(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (bool, string, error) {
	j, err := readJsz(ctx, r)
	if err != nil {
		return false, err.Error(), nil
	}
	if l := j.stream().leader(); l != "" {
		return false, "still follows " + l + " as the stream's leader", nil
	}
	return true, "", nil
}

// Stalled (kit.Staller), asked when a step's wait ended at its deadline with every online
// server up: every one of them answers that the meta group has no leader, or that the stream,
// which each hosts, has none. nats-server 2.9 elects within 9 s; a wait of the step timeout
// (60 s given) without a leader is its own liveness failure (2.9.10 can leave a group without
// one for good: the server whose log is up to date never campaigns while it refuses votes,
// nats-server 5fe8be82d, fixed in 2.11.0).
func (s *system) Stalled(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (string, error) {
	vs, _ := views(ctx, online)
	return stalled(vs), nil
}

// stalled is Stalled's answer from the servers' views: "" where one did not answer (vs nil),
// or any names a leader.
func stalled(vs []view) string {
	if vs == nil {
		return ""
	}
	if !slices.ContainsFunc(vs, func(v view) bool { return v.meta != "" }) {
		return fmt.Sprintf("each of the %d servers' /jsz names no meta leader", len(vs))
	}
	if !slices.ContainsFunc(vs, func(v view) bool { return v.stream == nil || v.stream.leader() != "" }) {
		return fmt.Sprintf("each of the %d servers hosts stream %s and its /jsz names no leader of it", len(vs), streamName)
	}
	return ""
}

// Leader is the server that every online server follows as the stream's leader.
func (s *system) Leader(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	vs, seen := views(ctx, online)
	if vs == nil {
		return nil, seen, nil
	}
	lv, seen := streamLeader(vs)
	if lv == nil {
		return nil, seen, nil
	}
	return lv.r, "", nil
}

// streamLeader is the view of the server that every view follows as the stream's leader, or
// nil with what the views say instead.
func streamLeader(vs []view) (*view, string) {
	name := vs[0].stream.leader()
	for _, v := range vs {
		switch {
		case v.stream == nil:
			return nil, v.r.Name + " hosts no stream " + streamName
		case v.stream.leader() != name:
			return nil, fmt.Sprintf("%s follows %q as the stream's leader, %s follows %q", v.r.Name, v.stream.leader(), vs[0].r.Name, name)
		}
	}
	for i := range vs {
		if vs[i].r.Name == name {
			return &vs[i], ""
		}
	}
	return nil, fmt.Sprintf("the stream's leader is %q, not one of the online servers", name)
}

// CaughtUp: one meta leader; every online server hosts the stream and follows one leader
// among them, which counts every one current and has taken up its leadership (2.11 and later:
// a leader elected a moment before a partition cuts it off would never take the next step's
// write); and every server's store holds the leader's state. At the cluster's start it first
// creates the stream. Three cases count as settled once the views have not changed for
// settle_ms, so that the replicas' data say what is wrong where waiting would only end the
// schedule incomplete: some online servers host no stream (or none does), a server serves the
// stream outside its Raft group (its meta layer holds no assignment for a stream its store
// holds), and servers that the leader counts current hold another state than its.
func (s *system) CaughtUp(ctx context.Context, c *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	vs, seen := views(ctx, online)
	if vs == nil {
		return false, seen, nil
	}
	meta := vs[0].meta
	for _, v := range vs {
		if v.meta == "" || v.meta != meta {
			return false, fmt.Sprintf("%s follows %q as the meta leader, %s follows %q", v.r.Name, v.meta, vs[0].r.Name, meta), nil
		}
	}
	if !s.created {
		if c.Divergences() > 0 {
			s.created = true // restored from a saved prefix, which created it
		} else {
			return false, "the stream is being created", s.create(ctx, c, vs[0].r)
		}
	}
	hosts := 0
	for _, v := range vs {
		switch {
		case v.stream == nil:
		case v.stream.outside(v.r):
			return s.settle(vs, v.r.Name+" serves the stream outside its Raft group")
		default:
			hosts++
		}
	}
	if hosts < len(vs) {
		return s.settle(vs, fmt.Sprintf("%d of the %d online servers host stream %s", hosts, len(vs), streamName))
	}
	lv, seen := streamLeader(vs)
	if lv == nil {
		s.settled = ""
		return false, seen, nil
	}
	if seen := notCurrent(vs, lv); seen != "" {
		s.settled = ""
		return false, seen, nil
	}
	if seen := leading(lv, s.leaderSince); seen != "" {
		s.settled = ""
		return false, seen, nil
	}
	if seen := otherState(vs, lv); seen != "" {
		return s.settle(vs, seen)
	}
	s.settled = ""
	return true, "", nil
}

// notCurrent says which server the leader (its view lv) does not count current, "" when it
// counts them all.
func notCurrent(vs []view, lv *view) string {
	for _, p := range lv.stream.Cluster.Replicas {
		for _, v := range vs {
			if p.Name == v.r.Name && !p.Current {
				return fmt.Sprintf("the leader %s does not count %s current", lv.r.Name, v.r.Name)
			}
		}
	}
	return ""
}

// otherState says which server's store holds another state than the leader's (its view lv),
// "" for none.
func otherState(vs []view, lv *view) string {
	for _, v := range vs {
		if v.stream.State != lv.stream.State {
			return fmt.Sprintf("%s holds %s, the leader %s holds %s", v.r.Name, v.stream.State, lv.r.Name, lv.stream.State)
		}
	}
	return ""
}

// settle reports the cluster settled once what the views say of the stream has stayed the same
// for settle_ms; seen says what is not as a caught-up cluster's.
func (s *system) settle(vs []view, seen string) (bool, string, error) {
	var what []string
	for _, v := range vs {
		if v.stream == nil {
			what = append(what, v.r.Name+": no stream")
		} else {
			what = append(what, fmt.Sprintf("%s: leader %q, %s", v.r.Name, v.stream.leader(), v.stream.State))
		}
	}
	now := strings.Join(what, "; ")
	if now != s.settled {
		s.settled, s.since = now, time.Now()
	}
	if wait := time.Duration(s.cfg.SettleMS)*time.Millisecond - time.Since(s.since); wait > 0 {
		return false, fmt.Sprintf("%s (settled if it stays so %s more)", seen, wait.Round(time.Second)), nil
	}
	return true, "", nil
}

// jsErrClusterNoPeers is nats-server's JetStream error code for "no suitable peers for
// placement" (JSClusterNoPeersErrF in its errors.json), which nats.go names no constant for.
const jsErrClusterNoPeers nats.ErrorCode = 10005

// create creates the stream through r: file storage, one replica per server. Its answer comes
// from the stream's new leader, through the routes, and is lost when the route to the client's
// server is not up yet: each attempt is bounded, and the next poll asks again (a stream that
// exists with this configuration is the answer, as nats-server creates it once).
func (s *system) create(ctx context.Context, c *kit.Cluster, r *kit.Replica) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := connect(ctx, r)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.Context(ctx))
	if err != nil {
		return err
	}
	_, err = js.AddStream(&nats.StreamConfig{
		Name: streamName, Subjects: []string{subjects + ">"}, Storage: nats.FileStorage, Replicas: len(c.Replicas),
	}, nats.Context(ctx))
	var apiErr *nats.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return nil // no answer: the next poll asks again
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrClusterNoPeers:
		// A meta leader elected a moment ago has not yet heard from its peers (2.12.2 answered
		// so at 2 of 28 starts of a campaign, and at one of the suite's): the cluster is not
		// ready yet, and the next poll asks again; a peer that never comes shows as the start's
		// timeout.
		return nil
	}
	if err != nil {
		return fmt.Errorf("create stream %s through %s: %w", streamName, r.Name, err)
	}
	s.created = true
	c.Record(r, "create stream %s: subjects %s>, file storage, %d replicas", streamName, subjects, len(c.Replicas))
	return nil
}

// Logged looks for the value, unique to the write, in the block files of r's Raft logs: the
// leader appends a published message to the stream's log before any follower has it.
func (s *system) Logged(_ context.Context, r *kit.Replica, _, value string) (bool, error) {
	var dirs []string
	for _, d := range raftDirs(r) {
		dirs = append(dirs, filepath.Join(d, "msgs"))
	}
	return filesContain(dirs, []byte(value))
}

// SyncLines are what a server logs as a stream's Raft group brings it back in line: its log
// truncated to the leader's, a catchup of the stream's messages, the stream's state reset, a
// snapshot installed.
func (s *system) SyncLines() []kit.LineKind {
	return []kit.LineKind{
		{Text: "Truncating and repairing WAL", Kind: "TRUNC"},
		{Text: "Catchup for stream", Kind: "CATCHUP"},
		{Text: "Resetting stream cluster state", Kind: "RESET"},
		{Text: "Installing snapshot", Kind: "SNAP"},
	}
}

// Observe says what r's server sees of the stream: its role in the stream's Raft group, the
// group's term (its tav.idx), the stream's last sequence in its store, and the last index of the
// group's log on disk and of its latest snapshot. nats-server 2.9 tells no applied index (its
// /raftz came in 2.10).
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	j, err := readJsz(ctx, r)
	if err != nil {
		return nil, err
	}
	fields := map[string]string{"meta": j.metaLeader()}
	sd := j.stream()
	switch {
	case sd == nil:
		fields[cem.ObserveRole] = "no stream"
	case sd.outside(r):
		fields[cem.ObserveRole] = "outside the group"
	case sd.leader() == r.Name:
		fields[cem.ObserveRole] = "leader"
	case sd.leader() == "":
		fields[cem.ObserveRole] = "no leader"
	default:
		fields[cem.ObserveRole] = "follower"
	}
	if sd != nil {
		fields[cem.ObservePosition] = strconv.FormatUint(sd.State.LastSeq, 10)
	}
	dirs := raftDirs(r)
	if len(dirs) != 1 {
		fields["groups"] = strconv.Itoa(len(dirs))
		return fields, nil
	}
	if term, err := readTerm(dirs[0]); err == nil {
		fields[cem.ObserveEpoch] = strconv.FormatUint(term, 10)
	}
	if wal, err := readStore(filepath.Join(dirs[0], "msgs")); err == nil {
		fields["log"] = strconv.FormatUint(lastSeq(wal), 10)
	}
	if snap := lastSnapshot(dirs[0]); snap != "" {
		fields["snapshot"] = snap
	}
	return fields, nil
}

// readTerm reads the term a Raft group's tav.idx holds (8 bytes, little-endian, then the vote).
func readTerm(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tav.idx"))
	if err != nil {
		return 0, err
	}
	if len(b) < 8 {
		return 0, fmt.Errorf("%s: %d bytes", filepath.Join(dir, "tav.idx"), len(b))
	}
	return binary.LittleEndian.Uint64(b), nil
}

// lastSnapshot is the "term.index" of a Raft group's latest snapshot (snapshots/snap.T.I), ""
// for none.
func lastSnapshot(dir string) string {
	ents, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
	var best [2]uint64
	found := false
	for _, e := range ents {
		var t, i uint64
		if n, _ := fmt.Sscanf(e.Name(), "snap.%d.%d", &t, &i); n == 2 && (!found || slices.Compare(best[:], []uint64{t, i}) < 0) {
			best, found = [2]uint64{t, i}, true
		}
	}
	if !found {
		return ""
	}
	return fmt.Sprintf("%d.%d", best[0], best[1])
}
