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
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

// How the abstract failures and recoveries become concrete actions:
//
//   - S/S/R: offline is suspended (SIGSTOP of the server's process group); links are the
//     model's links, and a suspended replica keeps its link. One exception: a divergence
//     may hand writes to a replica whose source is suspended (the source misses them). The
//     plugin then first promotes the replica (REPLICAOF NO ONE): for a client it is the only
//     reachable master of its data, and a write into a replica that diverges it from its
//     source is something Redis documents as unsupported (redis/redis#6695), so writing
//     into it with replica-read-only off would report a false convergence failure. The
//     first convergence after which it and its source are both online links it to its
//     source again (wantLink, relink), which resyncs it for real.
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
	switch {
	case p.drm == "sclr" && (src == aem.NoSource || !s.On[i] || !s.On[src]):
		return aem.NoSource
	case p.drm == "ssr" && p.reps[i].promoted && (src == aem.NoSource || !s.On[i] || !s.On[src]):
		// Linked to a suspended source it could not resync: it waits as a master for both to
		// be online (and a replica of a replica that cannot reach its source refuses to
		// serve a sync).
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
// S/CL/R replicas outside the layout (failure kind "-"), online or not, are left as they are.
// When the step broke a replication link and failure_wait is set, it waits that long.
func (p *Plugin) diverge(ctx context.Context, t *aem.Transition) error {
	linked := p.links()
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
	return p.waitAfterFailures(ctx, linked)
}

// link is one replication link between running servers: replica follows source.
type link struct{ replica, source int }

// links lists the replication links between running servers.
func (p *Plugin) links() []link {
	var ls []link
	for i, r := range p.reps {
		if r.running() && r.link != aem.NoSource && p.reps[r.link].running() {
			ls = append(ls, link{i, r.link})
		}
	}
	return ls
}

// waitAfterFailures waits failure_wait when a link of before is gone: the one fixed wait of
// the plugin, deliberate (see Config.FailureWait).
func (p *Plugin) waitAfterFailures(ctx context.Context, before []link) error {
	if p.cfg.FailureWait <= 0 {
		return nil
	}
	after := p.links()
	if !slices.ContainsFunc(before, func(l link) bool { return !slices.Contains(after, l) }) {
		return nil
	}
	p.act(-1, "wait %v after the broken links (failure_wait)", p.cfg.FailureWait)
	t := time.NewTimer(p.cfg.FailureWait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("failure_wait: %w", ctx.Err())
	}
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
// would not bring it to and waits until every receiving replica holds it. In S/S/R a receiving
// replica whose source is suspended is promoted first (see the top of this file).
func (p *Plugin) write(ctx context.Context, t *aem.Transition, j int) error {
	recv := make([]bool, len(p.reps))
	for i, v := range t.Writes {
		recv[i] = v >= j
		if recv[i] && (!p.reps[i].running() || p.reps[i].stopped) {
			return fmt.Errorf("replica %d must receive write %d but its server is down or suspended", i, j)
		}
	}
	sets := p.nextSets(j)
	via, err := p.promoteReceivers(ctx, recv, sets[0])
	if err != nil {
		return err
	}
	for i, r := range p.reps {
		if !recv[i] && r.running() && !r.stopped && r.link != aem.NoSource && recv[r.link] {
			return fmt.Errorf("realisation error: replica %d must miss write %d but replicates from replica %d, which receives it", i, j, r.link)
		}
	}
	for i, r := range p.reps {
		if recv[i] && !via[i] {
			for _, s := range sets {
				if err := p.set(ctx, r, s); err != nil {
					return err
				}
			}
		}
	}
	last := sets[len(sets)-1]
	for i, r := range p.reps {
		if recv[i] {
			if err := p.awaitHolds(ctx, r, last); err != nil {
				return err
			}
		}
	}
	return nil
}

// promoteReceivers promotes, in S/S/R, every receiving replica whose source is suspended, the
// highest in its chain first: its replicas may then get the write by replication. It returns
// which receivers replication reaches; any other receiver is a realisation error.
func (p *Plugin) promoteReceivers(ctx context.Context, recv []bool, first kv) ([]bool, error) {
	for {
		via := p.replicated(recv)
		promote, stuck := -1, -1
		for i, r := range p.reps {
			if !recv[i] || via[i] || r.link == aem.NoSource {
				continue
			}
			if p.drm == "ssr" && p.reps[r.link].stopped {
				promote = i
				break
			}
			stuck = i
		}
		if promote < 0 {
			if stuck >= 0 {
				r := p.reps[stuck]
				return nil, fmt.Errorf("realisation error: replica %d must take %s, which its source replica %d does not pass on", stuck, first.key, r.link)
			}
			return via, nil
		}
		r := p.reps[promote]
		p.act(promote, "promote: it takes %s while its source, replica %d, is suspended", first.key, r.link)
		if err := p.replicaOf(ctx, r, aem.NoSource); err != nil {
			return nil, err
		}
		r.promoted = true
	}
}

// replicated tells, for each replica, whether replication brings it a write that exactly the
// replicas in recv receive: it replicates from a receiving master or, down a chain, from a
// receiving replica that got it by replication. Writes sent to a replica stay local to it
// (Redis 4.0 and later), which the plugin never does: a replica it writes into is a master.
func (p *Plugin) replicated(recv []bool) []bool {
	n := len(p.reps)
	via := make([]bool, n)
	passes := func(i int) bool { return recv[i] && (p.reps[i].link == aem.NoSource || via[i]) }
	for range n { // links form a forest: n rounds reach every depth
		for i, r := range p.reps {
			via[i] = recv[i] && r.link != aem.NoSource && passes(r.link)
		}
	}
	return via
}

// kv is one SET: a key of one database and its value.
type kv struct {
	db         int
	key, value string
}

// nextSets returns the SETs that realise write j of the step being realised: sets_per_write
// keys, spread over the databases in turn, each value unique to the schedule and padded to
// value_size.
func (p *Plugin) nextSets(j int) []kv {
	sets := make([]kv, p.cfg.SetsPerWrite)
	for m := range sets {
		id := fmt.Sprintf("%d.%d.%d", p.step+1, j, m+1)
		value := p.spec.ScheduleID + ":" + id
		if pad := p.cfg.ValueSize - len(value); pad > 0 {
			value += strings.Repeat(".", pad)
		}
		sets[m] = kv{db: p.sets % p.cfg.Databases, key: p.cfg.KeyPrefix + id, value: value}
		p.sets++
	}
	return sets
}

// set sends one SET to r.
func (p *Plugin) set(ctx context.Context, r *replica, s kv) error {
	if err := r.db(s.db).Set(ctx, s.key, s.value, 0).Err(); err != nil {
		return fmt.Errorf("%s: SET %s in database %d: %w", r, s.key, s.db, err)
	}
	p.act(r.index, "SET %s %s", dbKey(s.db, s.key), shortValue(s.value))
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

// awaitHolds waits until r holds s.
func (p *Plugin) awaitHolds(ctx context.Context, r *replica, s kv) error {
	return p.await(ctx, fmt.Sprintf("%s to hold %s", r, dbKey(s.db, s.key)), func(ctx context.Context) (bool, string, error) {
		return p.holds(ctx, r, s)
	})
}

// holds tells whether r holds s, and what it holds instead.
func (p *Plugin) holds(ctx context.Context, r *replica, s kv) (bool, string, error) {
	if !r.running() {
		return false, "", r.exitedError()
	}
	got, err := r.db(s.db).Get(ctx, s.key).Result()
	if err != nil {
		return false, err.Error(), nil
	}
	return got == s.value, "holds " + strconv.Quote(shortValue(got)), nil
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
	if err := p.awaitConverged(ctx, next); err != nil {
		return err
	}
	if *p.cfg.Probe && len(p.model.Next(p.params, next, nil)) == 0 {
		return p.probe(ctx, next)
	}
	return nil
}

// probe ends the last convergence: one more write through the root of each replication tree
// of s, a SET in each database in use, and a wait for it to reach every replica of the tree.
// A replica it does not reach within the step timeout is recorded and left for the comparison
// of the replicas' data to report, since that is a convergence failure, not a step that
// could not be realised.
func (p *Plugin) probe(ctx context.Context, s *aem.State) error {
	for root, r := range p.reps {
		if s.Src[root] != aem.NoSource {
			continue
		}
		var sets []kv
		for db := range p.cfg.Databases {
			sets = append(sets, kv{db: db, key: p.cfg.KeyPrefix + "probe", value: fmt.Sprintf("%s:probe.%d", p.spec.ScheduleID, root)})
		}
		for _, kv := range sets {
			if err := p.set(ctx, r, kv); err != nil {
				return err
			}
		}
		last := sets[len(sets)-1]
		for i, m := range p.reps {
			if i == root || p.treeRoot(s, i) != root {
				continue
			}
			seen := ""
			err := cem.WaitFor(ctx, p.spec.StepTimeout, "probe", func(ctx context.Context) (bool, error) {
				ok, s, err := p.holds(ctx, m, last)
				seen = s
				return ok, err
			})
			var te *cem.WaitTimeoutError
			if errors.As(err, &te) {
				p.act(i, "probe: does not hold %s after %v (%s)", dbKey(last.db, last.key), p.spec.StepTimeout, seen)
				continue
			}
			if err != nil {
				return fmt.Errorf("probe: %w", err)
			}
		}
	}
	return nil
}

// treeRoot is the root of replica i's tree in s's links.
func (p *Plugin) treeRoot(s *aem.State, i int) int {
	for k := 0; k < len(s.Src) && s.Src[i] != aem.NoSource; k++ {
		i = s.Src[i]
	}
	return i
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
		if want != aem.NoSource {
			r.promoted = false // linked to its source again, which resyncs it
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
// removing d's AOF (appendonly.aof, or appendonlydir from 7.0) so that the copy is what d
// loads at its next start.
func (p *Plugin) snapshotInto(ctx context.Context, primary, d int) error {
	src, dst := p.reps[primary], p.reps[d]
	rdb := filepath.Join(src.dir, dialect.RDB)
	// A child already running (a full sync's snapshot, an AOF rewrite) would turn BGSAVE into
	// an error; the step before left the primary idle, but make sure.
	err := p.await(ctx, fmt.Sprintf("%s idle before BGSAVE", src), func(ctx context.Context) (bool, string, error) {
		info, err := src.info(ctx, "persistence")
		if err != nil {
			return false, "", err
		}
		ok, busy := idle(info)
		return ok, busy, nil
	})
	if err != nil {
		return err
	}
	before, _ := os.Stat(rdb) // none before the first snapshot
	if err := src.client.BgSave(ctx).Err(); err != nil {
		return fmt.Errorf("%s: BGSAVE: %w", src, err)
	}
	p.act(primary, "BGSAVE")
	// BGSAVE returns with the child started (rdb_bgsave_in_progress:1), which writes a
	// temporary file and renames it over dump.rdb: the snapshot is done when no child runs
	// and dump.rdb is another file. This holds on every version; INFO's rdb_saves is 7.0+
	// and LASTSAVE counts whole seconds.
	err = p.await(ctx, fmt.Sprintf("%s to finish BGSAVE", src), func(ctx context.Context) (bool, string, error) {
		info, err := src.info(ctx, "persistence")
		if err != nil {
			return false, "", err
		}
		if info["rdb_bgsave_in_progress"] != "0" {
			return false, "BGSAVE in progress", nil
		}
		if info["rdb_last_bgsave_status"] != "ok" {
			return false, "", fmt.Errorf("%s: BGSAVE failed: %s", src, lastLogLine(src.proc.LogPath))
		}
		after, err := os.Stat(rdb)
		if err != nil || before != nil && os.SameFile(before, after) {
			return false, "no new " + dialect.RDB, nil
		}
		return true, "", nil
	})
	if err != nil {
		return err
	}
	if err := copyFile(rdb, filepath.Join(dst.dir, dialect.RDB)); err != nil {
		return fmt.Errorf("copy snapshot of %s into %s: %w", src, dst, err)
	}
	if err := os.RemoveAll(filepath.Join(dst.dir, dst.dialect.AOF)); err != nil {
		return fmt.Errorf("%s: remove AOF: %w", dst, err)
	}
	dst.fromSnapshot = true
	p.act(d, "copied %s of replica %d and removed %s", dialect.RDB, primary, dst.dialect.AOF)
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
		from = dialect.RDB + " (--appendonly no)"
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
		// CONFIG SET appendonly yes starts the rewrite before it returns (or schedules it
		// while another child runs): once the server is idle, the AOF is written.
		ok, busy := idle(info)
		return ok && info["aof_enabled"] == "1", busy, nil
	})
}

// replicaOf points r's server at replica src (aem.NoSource: NO ONE), with the command its
// version knows: SLAVEOF before 5.0, REPLICAOF from 5.0.
func (p *Plugin) replicaOf(ctx context.Context, r *replica, src int) error {
	host, port := "NO", "ONE"
	if src != aem.NoSource {
		host, port = p.reps[src].addr()
	}
	cmd := r.dialect.ReplicaOf
	if err := r.client.Do(ctx, cmd, host, port).Err(); err != nil {
		return fmt.Errorf("%s: %s %s %s: %w", r, cmd, host, port, err)
	}
	r.link = src
	p.act(r.index, "%s %s %s", cmd, host, port)
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
// the tree's root for acknowledgements (requestAcks, 3.0 and later) and then also accepts an
// acknowledgement of the root's offset right after its request: every write came before it,
// and the GETACK that follows it is never part of an acknowledgement.
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
	if !root.running() || root.stopped || root.link != aem.NoSource || !root.dialect.Wait {
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
