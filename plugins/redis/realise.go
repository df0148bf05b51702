package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
)

// How the abstract failures and recoveries become concrete actions:
//
//   - S/S/R: offline is suspended (SIGSTOP of the server's process group); links are the
//     model's links at all times, and a suspended replica keeps its link.
//   - S/L/R: every server runs at all times; a link failure is REPLICAOF NO ONE on the replica
//     that loses its source. Offline is only abstract: links are the model's links.
//   - S/CL/R: CRASH is SIGKILL; a crashed replica comes back by restarting from its own
//     directory with the same configuration. A server replicates from its source only while
//     both are online: going offline disconnects it (REPLICAOF NO ONE) from its source and its
//     replicas, coming back online reconnects it. A disconnected NONE replica keeps running; a
//     primary that an OFFLINE_2 takes over from is suspended (SIGSTOP): it "goes down" without
//     losing its process, as it is not crashed, and nobody can reach it until it comes back.

// wantLink is the source replica i's server should replicate from when the model is in s.
func (p *Plugin) wantLink(s *aem.State, i int) int {
	src := s.Src[i]
	if p.drm == "sclr" && (src == aem.NoSource || !s.On[i] || !s.On[src]) {
		return aem.NoSource
	}
	return src
}

// checkConcrete compares the servers with the abstract state before a step, so that a
// realisation that drifted from the model fails loudly instead of testing something else.
func (p *Plugin) checkConcrete() error {
	for i, r := range p.reps {
		on := p.state.On[i]
		var problem string
		switch {
		case p.drm != "sclr" && !r.running():
			problem = "is down"
		case p.drm == "ssr" && r.stopped == on:
			problem = fmt.Sprintf("is suspended=%v while online=%v", r.stopped, on)
		case p.drm == "slr" && r.stopped:
			problem = "is suspended"
		case p.drm == "sclr" && on && (!r.running() || r.stopped):
			problem = "is online but its server is down or suspended"
		case p.drm == "sclr" && p.state.Crashed[i] && r.running():
			problem = "is crashed but its server runs"
		case p.cfg.BreakRealisation == "" && r.running() && r.link != p.wantLink(&p.state, i):
			problem = fmt.Sprintf("replicates from %d, the model wants %d", r.link, p.wantLink(&p.state, i))
		}
		if problem != "" {
			return fmt.Errorf("realisation out of step with the model (%s): %s %s", p.state, r, problem)
		}
	}
	return nil
}

// diverge realises D v: write j reaches exactly the replicas with v[i] >= j, and the replicas
// with v[i] = j-1 fail just before it. Afterwards the failures the model marks are applied.
func (p *Plugin) diverge(ctx context.Context, t *aem.Transition) error {
	inLayout := func(i int) bool {
		if t.Failures != nil {
			return t.Failures[i] != aem.NotInLayout
		}
		return p.state.On[i]
	}
	top := t.WriteCount()
	for j := 1; j <= top; j++ {
		for i, v := range t.Writes {
			if inLayout(i) && v == j-1 {
				if err := p.failBefore(ctx, t, i, j); err != nil {
					return err
				}
			}
		}
		if err := p.write(ctx, t, j); err != nil {
			return err
		}
	}
	switch p.drm {
	case "ssr": // every replica ends suspended
		for i, r := range p.reps {
			if !r.stopped {
				if err := p.stop(i); err != nil {
					return err
				}
			}
		}
	case "sclr":
		// Disconnect first, so that no NONE replica sees its source die and retries it.
		for i, f := range t.Failures {
			if f == aem.FailNone && p.state.Src[i] != aem.NoSource {
				if err := p.replicaOf(ctx, p.reps[i], aem.NoSource); err != nil {
					return err
				}
			}
		}
		for i, f := range t.Failures {
			if f == aem.FailCrash && t.Writes[i] == top {
				if err := p.crash(ctx, i); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// failBefore fails replica i just before write j, which it must not receive.
func (p *Plugin) failBefore(ctx context.Context, t *aem.Transition, i, j int) error {
	switch p.drm {
	case "ssr":
		return p.stop(i)
	case "slr":
		// The link fails where the source goes on receiving; a replica whose source misses
		// write j too keeps its link.
		if src := p.state.Src[i]; src != aem.NoSource && t.Writes[src] >= j {
			return p.replicaOf(ctx, p.reps[i], aem.NoSource)
		}
		return nil
	default:
		if t.Failures[i] != aem.FailCrash {
			return fmt.Errorf("replica %d misses write %d but its failure kind is not CRASH", i, j)
		}
		return p.crash(ctx, i)
	}
}

// write injects write j of the step: it sends it to every receiving replica that replication
// would not bring it to and waits until every receiving replica holds it.
func (p *Plugin) write(ctx context.Context, t *aem.Transition, j int) error {
	n := len(p.reps)
	recv := make([]bool, n)
	for i, v := range t.Writes {
		recv[i] = v >= j
		if recv[i] && (!p.reps[i].running() || p.reps[i].stopped) {
			return fmt.Errorf("replica %d must receive write %d but its server is down or suspended", i, j)
		}
	}
	// via[i]: replication brings the write to i. A server passes on what it receives only if
	// it is a top-level master (its link is none) or got it from its own source: writes sent to
	// a replica stay local to it (Redis 4.0 and later).
	via := make([]bool, n)
	passes := func(i int) bool { return recv[i] && (p.reps[i].link == aem.NoSource || via[i]) }
	for range n { // links form a forest: n rounds reach every depth
		for i, r := range p.reps {
			via[i] = recv[i] && r.link != aem.NoSource && passes(r.link)
		}
	}
	for i, r := range p.reps {
		if !recv[i] && r.running() && !r.stopped && r.link != aem.NoSource && passes(r.link) {
			return fmt.Errorf("realisation error: replica %d must miss write %d but replicates from replica %d, which receives it", i, j, r.link)
		}
	}
	key := fmt.Sprintf("k%d.%d", p.step+1, j)
	value := fmt.Sprintf("%s:%d.%d", p.spec.ScheduleID, p.step+1, j)
	for i, r := range p.reps {
		if recv[i] && !via[i] {
			if err := r.client.Set(ctx, key, value, 0).Err(); err != nil {
				return fmt.Errorf("%s: SET %s: %w", r, key, err)
			}
			p.act(i, "SET %s %s", key, value)
		}
	}
	for i, r := range p.reps {
		if !recv[i] {
			continue
		}
		err := p.await(ctx, fmt.Sprintf("%s to hold write %s", r, key), func(ctx context.Context) (bool, string, error) {
			if !r.running() {
				return false, "", r.exitedError()
			}
			got, err := r.client.Get(ctx, key).Result()
			if err != nil {
				return false, err.Error(), nil
			}
			return got == value, "holds " + strconv.Quote(got), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// converge realises C: the group comes back, the servers' links become the model's and every
// online replica with an online source is waited for until it is in sync.
func (p *Plugin) converge(ctx context.Context, t *aem.Transition, next *aem.State) error {
	if t.Resync != aem.Online {
		if err := p.offlineResync(ctx, t); err != nil {
			return err
		}
	} else {
		for i, r := range p.reps {
			if !next.On[i] {
				continue
			}
			if !r.running() {
				if err := p.restart(ctx, i); err != nil {
					return err
				}
			}
			if r.stopped {
				if err := p.cont(i); err != nil {
					return err
				}
			}
		}
	}
	if err := p.relink(ctx, t, next); err != nil {
		return err
	}
	return p.awaitConverged(ctx, next)
}

// relink makes every running server's link what the model wants in next: unlinks first, then
// new links from the primaries down, each waited for before the next, because a replica
// refuses to serve a sync while it syncs itself and its replica would retry only at its next
// once-a-second cron. With break_realisation = "skip-relink" the recovering replicas are not
// linked to their sources.
func (p *Plugin) relink(ctx context.Context, t *aem.Transition, next *aem.State) error {
	for _, i := range p.linkOrder(next) {
		r := p.reps[i]
		want := p.wantLink(next, i)
		if !r.running() || r.link == want {
			continue
		}
		if r.stopped {
			return fmt.Errorf("realisation error: %s is suspended but the model moves its link to %d", r, want)
		}
		if p.cfg.BreakRealisation == breakSkipRelink && want != aem.NoSource && slices.Contains(t.Group, i) {
			p.act(i, "skipped REPLICAOF (break_realisation = %q)", breakSkipRelink)
			continue
		}
		if err := p.replicaOf(ctx, r, want); err != nil {
			return err
		}
		if want != aem.NoSource && next.On[want] {
			if err := p.awaitInSync(ctx, r, p.reps[want]); err != nil {
				return err
			}
		}
	}
	return nil
}

// linkOrder orders the replicas for relinking towards s: those that lose their link first,
// then the others by their depth in s's forest, sources before their replicas.
func (p *Plugin) linkOrder(s *aem.State) []int {
	key := func(i int) int {
		if p.wantLink(s, i) == aem.NoSource {
			return -1
		}
		d := 0
		for src := s.Src[i]; src != aem.NoSource && d <= len(s.Src); src = s.Src[src] {
			d++
		}
		return d
	}
	order := make([]int, len(s.Src))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return key(a) - key(b) })
	return order
}

// offlineResync realises OFFLINE_1 and OFFLINE_2 for the crashed replica d: a snapshot of the
// primary replaces d's data. OFFLINE_1 leaves d down; OFFLINE_2 starts d from the snapshot as
// the primary and takes the old primary down (suspended, see above).
func (p *Plugin) offlineResync(ctx context.Context, t *aem.Transition) error {
	d := t.Group[0]
	primary := t.Sources[d]
	if t.Resync == aem.Offline2 {
		primary = aem.NoSource
		for q, src := range t.Sources {
			if q != d && src == d && p.state.Src[q] == aem.NoSource {
				primary = q
			}
		}
	}
	if primary == aem.NoSource || p.reps[d].running() {
		return fmt.Errorf("offline resync of replica %d: no primary to copy from, or the replica is running", d)
	}
	if err := p.snapshotInto(ctx, primary, d); err != nil {
		return err
	}
	if t.Resync == aem.Offline1 {
		return nil
	}
	if err := p.stop(primary); err != nil {
		return err
	}
	return p.restart(ctx, d)
}

// snapshotInto makes the primary write a fresh RDB snapshot and copies it into d's directory,
// removing d's AOF so that the copy is what d loads at its next start.
func (p *Plugin) snapshotInto(ctx context.Context, primary, d int) error {
	src, dst := p.reps[primary], p.reps[d]
	// A child already running (a full sync's snapshot, an AOF rewrite) would turn BGSAVE into
	// an error; the step before left the primary idle, but make sure.
	saves := 0
	err := p.await(ctx, fmt.Sprintf("%s idle before BGSAVE", src), func(ctx context.Context) (bool, string, error) {
		info, err := src.info(ctx, "persistence")
		if err != nil {
			return false, "", err
		}
		ok, busy := idle(info)
		saves, _ = strconv.Atoi(info["rdb_saves"])
		return ok, busy, nil
	})
	if err != nil {
		return err
	}
	if err := src.client.BgSave(ctx).Err(); err != nil {
		return fmt.Errorf("%s: BGSAVE: %w", src, err)
	}
	p.act(primary, "BGSAVE")
	// rdb_saves counts finished snapshots; LASTSAVE only has a resolution of one second.
	err = p.await(ctx, fmt.Sprintf("%s to finish BGSAVE", src), func(ctx context.Context) (bool, string, error) {
		info, err := src.info(ctx, "persistence")
		if err != nil {
			return false, "", err
		}
		n, _ := strconv.Atoi(info["rdb_saves"])
		if info["rdb_bgsave_in_progress"] != "0" || n <= saves {
			return false, fmt.Sprintf("rdb_saves=%d, in progress=%s", n, info["rdb_bgsave_in_progress"]), nil
		}
		if info["rdb_last_bgsave_status"] != "ok" {
			return false, "", fmt.Errorf("%s: BGSAVE failed: %s", src, lastLogLine(src.proc.LogPath))
		}
		return true, "", nil
	})
	if err != nil {
		return err
	}
	if err := copyFile(filepath.Join(src.dir, rdbName), filepath.Join(dst.dir, rdbName)); err != nil {
		return fmt.Errorf("copy snapshot of %s into %s: %w", src, dst, err)
	}
	if err := os.RemoveAll(filepath.Join(dst.dir, aofDirName)); err != nil {
		return fmt.Errorf("%s: remove AOF: %w", dst, err)
	}
	dst.fromSnapshot = true
	p.act(d, "copied %s of replica %d into %s and removed %s", rdbName, primary, dst.dir, aofDirName)
	return nil
}

// copyFile copies src to dst through a temporary file, so that dst is never half written.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err := errors.Join(err, out.Sync(), out.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// stop suspends replica i's server.
func (p *Plugin) stop(i int) error {
	r := p.reps[i]
	if err := r.proc.Stop(); err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	r.stopped = true
	p.act(i, "SIGSTOP process group %d", r.proc.Pid)
	return nil
}

// cont resumes replica i's server.
func (p *Plugin) cont(i int) error {
	r := p.reps[i]
	if err := r.proc.Cont(); err != nil {
		return fmt.Errorf("%s: %w", r, err)
	}
	r.stopped = false
	p.act(i, "SIGCONT process group %d", r.proc.Pid)
	return nil
}

// crash SIGKILLs replica i's server with every process it forked.
func (p *Plugin) crash(ctx context.Context, i int) error {
	r := p.reps[i]
	pid := r.proc.Pid
	if err := r.kill(ctx); err != nil {
		return err
	}
	p.act(i, "SIGKILL process group %d", pid)
	return nil
}

// restart starts replica i's server again from its directory and waits until it serves. After
// an offline resync it loads the copied snapshot, and AOF persistence is then turned back on
// (which rewrites the AOF from the loaded data) and waited for.
func (p *Plugin) restart(ctx context.Context, i int) error {
	r := p.reps[i]
	if err := r.start(p.server); err != nil {
		return err
	}
	from := "its own data"
	if r.fromSnapshot {
		from = rdbName + " (appendonly no)"
	}
	p.act(i, "started redis-server pid %d from %s", r.proc.Pid, from)
	if err := p.awaitUp(ctx, r); err != nil {
		return err
	}
	if !r.fromSnapshot {
		return nil
	}
	r.fromSnapshot = false
	if !*p.cfg.AppendOnly {
		return nil
	}
	if err := r.client.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		return fmt.Errorf("%s: CONFIG SET appendonly yes: %w", r, err)
	}
	p.act(i, "CONFIG SET appendonly yes")
	return p.await(ctx, fmt.Sprintf("%s to rewrite its AOF", r), func(ctx context.Context) (bool, string, error) {
		info, err := r.info(ctx, "persistence")
		if err != nil {
			return false, "", err
		}
		if info["aof_last_bgrewrite_status"] != "ok" {
			return false, "", fmt.Errorf("%s: AOF rewrite failed: %s", r, lastLogLine(r.proc.LogPath))
		}
		ok, busy := idle(info)
		return ok && info["aof_enabled"] == "1" && info["aof_rewrites"] != "0", busy, nil
	})
}

// replicaOf points r's server at replica src (aem.NoSource: REPLICAOF NO ONE).
func (p *Plugin) replicaOf(ctx context.Context, r *replica, src int) error {
	host, port := "NO", "ONE"
	if src != aem.NoSource {
		host, port = p.reps[src].addr()
	}
	if err := r.client.ReplicaOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("%s: REPLICAOF %s %s: %w", r, host, port, err)
	}
	r.link = src
	p.act(r.index, "REPLICAOF %s %s", host, port)
	return nil
}

// awaitUp waits until r's server answers PING, which it does once its data is loaded.
func (p *Plugin) awaitUp(ctx context.Context, r *replica) error {
	return p.await(ctx, fmt.Sprintf("%s to answer PING on port %d", r, r.port), func(ctx context.Context) (bool, string, error) {
		ok, err := r.ping(ctx)
		return ok, "", err
	})
}

// awaitConverged waits until every online server is idle and every online replica with an
// online source (and a link to it) is in sync with it.
func (p *Plugin) awaitConverged(ctx context.Context, s *aem.State) error {
	for i, r := range p.reps {
		if !s.On[i] {
			continue
		}
		src := p.wantLink(s, i)
		if src == aem.NoSource || !s.On[src] || r.link != src {
			if err := p.await(ctx, fmt.Sprintf("%s idle", r), func(ctx context.Context) (bool, string, error) {
				info, err := r.info(ctx, "persistence")
				if err != nil {
					return false, "", err
				}
				ok, busy := idle(info)
				return ok, busy, nil
			}); err != nil {
				return err
			}
			continue
		}
		if err := p.awaitInSync(ctx, r, p.reps[src]); err != nil {
			return err
		}
	}
	return nil
}

// awaitInSync waits until replica r is in sync with its source, seen from both sides: the
// replica has its link up, no sync in progress and the source's offset; the source lists the
// replica online and has its acknowledgement of that offset (a replica resumed after SIGSTOP
// still reports its link up before noticing that the source dropped it); neither server loads
// data or runs a snapshot or an AOF rewrite.
//
// Replicas acknowledge on their own once a second. Rather than wait for that, the wait asks
// the tree's root for acknowledgements (requestAcks) and then also accepts an acknowledgement
// of the root's offset right after its request: every write came before it, and the GETACK
// that follows it is never part of an acknowledgement.
func (p *Plugin) awaitInSync(ctx context.Context, r, src *replica) error {
	target := int64(-1)
	var asked time.Time
	return p.await(ctx, fmt.Sprintf("%s in sync with %s", r, src), func(ctx context.Context) (bool, string, error) {
		ri, err := r.info(ctx, "replication", "persistence")
		if err != nil {
			return false, "", err
		}
		si, err := src.info(ctx, "replication", "persistence")
		if err != nil {
			return false, "", err
		}
		if ri["role"] != "slave" || ri["master_port"] != strconv.Itoa(src.port) {
			return false, "role " + ri["role"] + " of port " + ri["master_port"], nil
		}
		if ri["master_link_status"] != "up" || ri["master_sync_in_progress"] != "0" {
			return false, "link " + ri["master_link_status"] + ", sync in progress " + ri["master_sync_in_progress"], nil
		}
		for who, info := range map[string]map[string]string{"replica": ri, "source": si} {
			if ok, busy := idle(info); !ok {
				return false, who + " busy: " + busy, nil
			}
		}
		srcOff, _ := strconv.ParseInt(si["master_repl_offset"], 10, 64)
		repOff, _ := strconv.ParseInt(ri["slave_repl_offset"], 10, 64)
		if repOff != srcOff {
			return false, fmt.Sprintf("offset %d vs %d", repOff, srcOff), nil
		}
		view, listed := replicaView(si, r.port)
		switch {
		case !listed:
			return false, "the source does not list the replica", nil
		case view.state != "online":
			return false, "the source sees it " + view.state, nil
		case view.offset == srcOff || target >= 0 && view.offset >= target:
			return true, "", nil
		}
		if time.Since(asked) >= ackRequestInterval {
			asked = time.Now()
			if target, err = p.requestAcks(ctx, src); err != nil {
				return false, "", err
			}
		}
		return false, fmt.Sprintf("the source has its acknowledgement of offset %d of %d", view.offset, srcOff), nil
	})
}

// ackRequestInterval spaces the acknowledgement requests of one wait.
const ackRequestInterval = 200 * time.Millisecond

// ackWait bounds how long WAIT blocks in requestAcks; the acknowledgements it asks for come
// back within a millisecond or two when the tree is healthy, and the caller polls on anyway.
const ackWait = 20 * time.Millisecond

// requestAcks makes the root of src's tree ask every replica below it for an acknowledgement
// now: PUBLISH puts a message (no data) into the replication stream, and a WAIT for it makes the
// root send REPLCONF GETACK, which the replicas pass down the tree. It returns the root's offset
// after the PUBLISH, which the acknowledgements it triggers reach, or -1 when the root cannot
// be asked (it is suspended).
func (p *Plugin) requestAcks(ctx context.Context, src *replica) (int64, error) {
	root := src
	for k := 0; root.link != aem.NoSource && k < len(p.reps); k++ {
		root = p.reps[root.link]
	}
	if !root.running() || root.stopped || root.link != aem.NoSource {
		return -1, nil
	}
	// WAIT counts acknowledgements of the connection's own last write: one connection.
	conn := root.client.Conn()
	defer conn.Close()
	if err := conn.Publish(ctx, ackChannel, "ack").Err(); err != nil {
		return -1, fmt.Errorf("%s: PUBLISH: %w", root, err)
	}
	text, err := conn.Info(ctx, "replication").Result()
	if err != nil {
		return -1, fmt.Errorf("%s: INFO: %w", root, err)
	}
	target := int64(-1)
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			target, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if err := conn.Wait(ctx, 1, ackWait).Err(); err != nil {
		return -1, fmt.Errorf("%s: WAIT: %w", root, err)
	}
	return target, nil
}

// ackChannel is the Pub/Sub channel of requestAcks's messages; nobody subscribes to it.
const ackChannel = "modulo:ack"
