package kit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/modulo-testing/modulo/aem"
)

// linkEngine realises the link models, whose replicas replicate along explicit links; abstract
// and concrete replicas are the same. How the abstract failures and recoveries become actions:
//
//   - S/S/R: offline is suspended (SIGSTOP of the server's process group); links are the
//     model's links, and a suspended replica keeps its link. One exception: a divergence may
//     hand writes to a replica whose source is suspended (the source misses them). The kit
//     then first promotes the replica (Unfollow): a write into a server that follows another
//     would diverge it from its source in a way replication does not promise to repair (Redis
//     documents it as unsupported, redis/redis#6695), a false convergence failure. The first
//     convergence after which it and its source are both online links it again, which
//     resyncs it for real.
//   - S/L/R: every server runs at all times; a link failure is Unfollow on the replica that
//     loses its source. Offline is only abstract: links are the model's links. In a DRM whose
//     failures are partitions (S/N/R) a link failure is a partition between the replica and
//     its source instead: its server goes on following a source it cannot reach, until the
//     convergence that brings it back heals the partition. Where the model then links it to
//     the same source, nothing more is done: the system reconnects by itself; elsewhere it is
//     first detached (Unfollow) while still cut off, then linked as the model says.
//   - S/CL/R: CRASH is SIGKILL; a crashed replica comes back by restarting from its own
//     directory. A server follows its source only while both are online: going offline
//     disconnects it (Unfollow) from its source and its followers, coming back reconnects it. A
//     disconnected replica keeps running and takes no write: a NONE replica that had a source
//     (REPLICAOF NO ONE), and the primary that an OFFLINE_2 takes over from.
type linkEngine struct {
	p       *Plugin
	l       Linker
	snap    Snapshotter // S/CL/R's offline resyncs, and fresh copies of refused links; may be nil elsewhere
	variant aem.Rules
	// cutsLinks says that a link failure is a partition between the replica and its source
	// (drms.DRM.Partition: S/N/R), not the link undone.
	cutsLinks bool
	// LinkPolicy: the waits before and after a divergence's writes, and the probe.
	waitBefore, waitAfter time.Duration
	probe                 bool
}

func (e *linkEngine) policy() error {
	lp, ok := e.p.sys.(LinkPolicy)
	if !ok {
		return nil
	}
	e.waitBefore, e.waitAfter = lp.FailureWaits()
	e.probe = lp.Probe()
	limit := e.p.c.Spec.StepTimeout
	for _, w := range []struct {
		name string
		d    time.Duration
	}{{"before the writes", e.waitBefore}, {"after the writes", e.waitAfter}} {
		if w.d < 0 || w.d >= limit {
			return fmt.Errorf("the failure wait %s (%v) must be at least 0 and shorter than the step timeout (%v), which bounds every step", w.name, w.d, limit)
		}
	}
	return nil
}

func (e *linkEngine) reps() []*Replica { return e.p.c.Replicas }

// wantLink is the source replica i's server should follow when the model is in s.
func (e *linkEngine) wantLink(s *aem.State, i int) int {
	src := s.Src[i]
	apart := src == aem.NoSource || !s.On[i] || !s.On[src]
	switch {
	case e.variant == aem.CrashLinkRules && apart:
		return aem.NoSource
	case e.variant == aem.SuspendRules && e.reps()[i].promoted && apart:
		// Promoted while its source was suspended: it stays a primary until both are online.
		return aem.NoSource
	}
	return src
}

func (e *linkEngine) start(ctx context.Context) error {
	s := &e.p.state
	// Link one replica at a time, sources first: a replica that syncs itself may refuse to
	// serve a sync (Redis does), and its follower would retry only later.
	for _, i := range e.linkOrder(s) {
		if src := e.wantLink(s, i); src != aem.NoSource {
			if err := e.follow(ctx, e.reps()[i], e.reps()[src]); err != nil {
				return err
			}
			if err := e.awaitInSync(ctx, e.reps()[i], e.reps()[src]); err != nil {
				return err
			}
		}
	}
	return e.awaitConverged(ctx, s)
}

func (e *linkEngine) check() error {
	s := &e.p.state
	for i, r := range e.reps() {
		on := s.On[i]
		switch {
		case e.variant != aem.CrashLinkRules && !r.running():
			return fmt.Errorf("%s is down", r.Name)
		case e.variant == aem.SuspendRules && r.suspended == on:
			return fmt.Errorf("%s is suspended=%v while online=%v", r.Name, r.suspended, on)
		case e.variant == aem.LinkRules && r.suspended:
			return fmt.Errorf("%s is suspended", r.Name)
		case e.variant == aem.CrashLinkRules && on && (!r.running() || r.suspended):
			return fmt.Errorf("%s is online but its server is down or suspended", r.Name)
		case e.variant == aem.CrashLinkRules && s.Crashed(i) && r.running():
			return fmt.Errorf("%s is crashed but its server runs", r.Name)
		case r.running() && r.link != e.wantLink(s, i) && e.p.brk != BreakSkipRelink:
			return fmt.Errorf("%s follows %d, the model wants %d", r.Name, r.link, e.wantLink(s, i))
		}
	}
	return nil
}

// group is the root of replica a's replication tree in the model's links: the replicas the
// model links must converge, whether or not the servers are linked as the model says.
func (e *linkEngine) group(a int) int { return e.root(&e.p.state, a) }

// root is the root of replica a's tree in s's links, as wantLink reads them.
func (e *linkEngine) root(s *aem.State, a int) int {
	for k := 0; k < len(s.Src) && e.wantLink(s, a) != aem.NoSource; k++ {
		a = e.wantLink(s, a)
	}
	return a
}

func (e *linkEngine) apply(ctx context.Context, t *aem.Transition, next *aem.State) error {
	if t.Kind == aem.Divergence {
		return e.diverge(ctx, t)
	}
	return e.converge(ctx, t, next)
}

// diverge realises D v: write j reaches exactly the replicas with v[i] >= j, and the replicas
// with v[i] = j-1 fail just before it. Afterwards the failures the model marks are applied,
// and the failure wait is waited if a link is gone.
func (e *linkEngine) diverge(ctx context.Context, t *aem.Transition) error {
	before := e.links()
	if err := e.fail(ctx, t); err != nil {
		return err
	}
	var cut []*Replica
	for _, r := range e.reps() {
		if r.cutFrom != aem.NoSource && slices.Contains(before, link{r.Index, r.cutFrom}) {
			cut = append(cut, r)
		}
	}
	if err := e.p.awaitIsolated(ctx, cut); err != nil {
		return err
	}
	return e.waitIfBroken(ctx, before, e.waitAfter, "after the writes")
}

func (e *linkEngine) fail(ctx context.Context, t *aem.Transition) error {
	p := e.p
	inLayout := func(i int) bool {
		if t.Failures != nil {
			return t.Failures[i] != aem.NotInLayout
		}
		return p.state.On[i]
	}
	top := t.WriteCount()
	for j := 1; j <= top; j++ {
		before := e.links()
		for i, v := range t.Writes {
			if inLayout(i) && v == j-1 {
				if err := e.failBefore(ctx, t, i, j); err != nil {
					return err
				}
			}
		}
		if err := e.waitIfBroken(ctx, before, e.waitBefore, "before write "+strconv.Itoa(j)); err != nil {
			return err
		}
		if err := e.write(ctx, t, j); err != nil {
			return err
		}
	}
	switch e.variant {
	case aem.SuspendRules: // every replica ends suspended
		for _, r := range e.reps() {
			if !r.suspended {
				if err := p.suspend(ctx, r); err != nil {
					return err
				}
			}
		}
	case aem.CrashLinkRules:
		// Disconnect first, so that no NONE replica sees its source die and retries it.
		for i, f := range t.Failures {
			if r := e.reps()[i]; f == aem.FailNone && r.link != aem.NoSource {
				if err := e.unfollow(ctx, r); err != nil {
					return err
				}
			}
		}
		for i, f := range t.Failures {
			if f.Down() && t.Writes[i] == top {
				if err := p.fail(ctx, e.reps()[i], p.kindOf(t, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// link is one replication link between running servers: replica follows source.
type link struct{ replica, source int }

// links lists the replication links between running servers.
func (e *linkEngine) links() []link {
	var ls []link
	for i, r := range e.reps() {
		if r.running() && r.link != aem.NoSource && e.reps()[r.link].running() {
			ls = append(ls, link{i, r.link})
		}
	}
	return ls
}

// waitIfBroken waits d when a link of before is gone.
func (e *linkEngine) waitIfBroken(ctx context.Context, before []link, d time.Duration, when string) error {
	if d <= 0 {
		return nil
	}
	after := e.links()
	if !slices.ContainsFunc(before, func(l link) bool { return !slices.Contains(after, l) }) {
		return nil
	}
	e.p.act(nil, "wait %v %s: a link broke (failure wait)", d, when)
	return sleep(ctx, d, "failure wait")
}

// failBefore fails replica i just before write j, which it must not receive.
func (e *linkEngine) failBefore(ctx context.Context, t *aem.Transition, i, j int) error {
	r := e.reps()[i]
	switch e.variant {
	case aem.SuspendRules:
		return e.p.suspend(ctx, r)
	case aem.LinkRules:
		// The link fails where the source goes on receiving; a replica whose source misses
		// write j too keeps its link.
		if src := e.p.state.Src[i]; src != aem.NoSource && t.Writes[src] >= j {
			if e.cutsLinks {
				return e.cutLink(r)
			}
			return e.unfollow(ctx, r)
		}
		return nil
	}
	if !t.Failures[i].Down() {
		return fmt.Errorf("replica %d misses write %d but its failure kind, %s, stops no server", i, j, t.Failures[i])
	}
	return e.p.fail(ctx, r, e.p.kindOf(t, i))
}

// write injects write j of the step: it sends it to every receiving replica that replication
// would not bring it to, which never follows another (an S/S/R receiver whose source is
// suspended is promoted first), and waits until every receiving replica holds it.
func (e *linkEngine) write(ctx context.Context, t *aem.Transition, j int) error {
	reps := e.reps()
	recv := make([]bool, len(reps))
	for i, v := range t.Writes {
		recv[i] = v >= j
		switch {
		case recv[i] && !reps[i].running():
			return fmt.Errorf("write %d: %w", j, e.p.exitedError(reps[i]))
		case recv[i] && reps[i].suspended:
			return fmt.Errorf("%s must receive write %d but it is suspended", reps[i].Name, j)
		}
	}
	via, err := e.promoteReceivers(ctx, recv, j)
	if err != nil {
		return err
	}
	for i, r := range reps {
		if !recv[i] && r.running() && !r.suspended && r.link != aem.NoSource && recv[r.link] {
			return fmt.Errorf("%s must miss write %d but follows %s, which receives it", r.Name, j, reps[r.link].Name)
		}
	}
	key := e.p.key(j)
	value := e.p.value(key)
	e.p.written = append(e.p.written, key)
	for i, r := range reps {
		if recv[i] && !via[i] {
			if err := e.p.write(ctx, r, key, value); err != nil {
				return err
			}
		}
	}
	for i, r := range reps {
		if recv[i] {
			if err := e.p.awaitHolds(ctx, r, key, value); err != nil {
				return err
			}
		}
	}
	return nil
}

// promoteReceivers promotes, in S/S/R, every receiver of write j whose source is suspended, the
// highest in its chain first: its followers may then get the write by replication. It returns
// which receivers replication reaches; a receiver that follows another and is not reached is
// a realisation error.
func (e *linkEngine) promoteReceivers(ctx context.Context, recv []bool, j int) ([]bool, error) {
	reps := e.reps()
	for {
		via := e.replicated(recv)
		var promote, stuck *Replica
		for i, r := range reps {
			if !recv[i] || via[i] || r.link == aem.NoSource {
				continue
			}
			if e.variant == aem.SuspendRules && reps[r.link].suspended {
				promote = r
				break
			}
			stuck = r
		}
		if promote == nil {
			if stuck != nil {
				return nil, fmt.Errorf("%s must receive write %d, which its source %s does not pass on", stuck.Name, j, reps[stuck.link].Name)
			}
			return via, nil
		}
		e.p.act(promote, "promoted: it receives write %d while its source, %s, is suspended", j, reps[promote.link].Name)
		if err := e.unfollow(ctx, promote); err != nil {
			return nil, err
		}
		promote.promoted = true
	}
}

// replicated tells, for each replica, whether replication brings it a write that exactly the
// replicas in recv receive: it follows a receiving primary or, down a chain, a receiving
// replica that got it by replication.
func (e *linkEngine) replicated(recv []bool) []bool {
	reps := e.reps()
	via := make([]bool, len(reps))
	passes := func(i int) bool { return recv[i] && (reps[i].link == aem.NoSource || via[i]) }
	for range reps { // links form a forest: n rounds reach every depth
		for i, r := range reps {
			via[i] = recv[i] && r.link != aem.NoSource && passes(r.link)
		}
	}
	return via
}

// converge realises C: the group comes back, the servers' links become the model's and every
// online replica with an online source is waited for until it is in sync.
func (e *linkEngine) converge(ctx context.Context, t *aem.Transition, next *aem.State) error {
	if t.Resync != aem.Online {
		if err := e.offlineResync(ctx, t); err != nil {
			return err
		}
	} else {
		if err := e.heal(ctx, next); err != nil {
			return err
		}
		for i, r := range e.reps() {
			if !next.On[i] {
				continue
			}
			if !r.running() {
				if err := e.p.restart(ctx, r); err != nil {
					return err
				}
			}
			if r.suspended {
				if err := e.p.resume(r); err != nil {
					return err
				}
			}
		}
	}
	skip := e.p.skipWait(next)
	if err := e.relink(ctx, t, next, !skip); err != nil {
		return err
	}
	if skip {
		return nil
	}
	if err := e.awaitConverged(ctx, next); err != nil {
		return err
	}
	if e.probe && e.p.last(next) {
		return e.probeTrees(ctx, next)
	}
	return nil
}

// probeTrees writes every key the schedule wrote once more, with a final value, through the
// root of each of s's trees, then waits until every link of s is in sync again. What the
// writes left on each replica is the comparison's to judge. A tree whose replicas already
// hold different data is not probed: the final writes would overwrite the very keys that
// differ (a key that only a diverged replica holds, say) and hide the divergence.
func (e *linkEngine) probeTrees(ctx context.Context, s *aem.State) error {
	p := e.p
	for root, r := range e.reps() {
		if e.wantLink(s, root) != aem.NoSource || !s.On[root] {
			continue
		}
		differs, err := e.treeDiffers(ctx, s, root)
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		if differs != "" {
			p.act(r, "probe skipped: %s", differs)
			continue
		}
		for _, key := range p.written {
			if err := p.write(ctx, r, key, finalValue(p.value(key))); err != nil {
				return fmt.Errorf("probe: %w", err)
			}
		}
	}
	return e.awaitConverged(ctx, s)
}

// treeDiffers reads every online replica of root's tree in s and says which holds other data
// than root, or "" when they all hold the same.
func (e *linkEngine) treeDiffers(ctx context.Context, s *aem.State, root int) (string, error) {
	p := e.p
	read := func(m *Replica) (data map[string]string, err error) {
		err = p.call(ctx, "read "+m.Name, func(ctx context.Context) (err error) {
			data, err = p.sys.ReadAll(ctx, m)
			return err
		})
		return data, err
	}
	want, err := read(e.reps()[root])
	if err != nil {
		return "", err
	}
	for i, m := range e.reps() {
		if i == root || !s.On[i] || e.root(s, i) != root {
			continue
		}
		data, err := read(m)
		if err != nil {
			return "", err
		}
		if !maps.Equal(want, data) {
			return fmt.Sprintf("%s already holds other data than %s", m.Name, e.reps()[root].Name), nil
		}
	}
	return "", nil
}

// finalValue is the value the probe writes in place of a key's value.
func finalValue(v string) string { return v + ":final" }

// relink makes every running server's link what the model wants in next: unlinks first, then
// new links from the primaries down, each waited for before the next (when wait). With
// break_realisation = "skip-relink" the replicas of t's group are not linked to their sources.
func (e *linkEngine) relink(ctx context.Context, t *aem.Transition, next *aem.State, wait bool) error {
	_, rewrites := e.p.sys.(Relinker)
	for _, i := range e.linkOrder(next) {
		r := e.reps()[i]
		want := e.wantLink(next, i)
		// A follower of a replica whose history was rewritten since it linked holds a history
		// that its source no longer has: it is relinked too (sources come first in the order).
		stale := rewrites && want != aem.NoSource && r.link == want && r.linkedHistory != e.reps()[want].history
		if !r.running() || r.link == want && !stale {
			continue
		}
		if stale {
			e.p.act(r, "relink: the history of its source %s was rewritten", e.reps()[want].Name)
		}
		if r.suspended {
			return fmt.Errorf("%s is suspended but the model moves its link to %d", r.Name, want)
		}
		if want == aem.NoSource {
			if err := e.unfollow(ctx, r); err != nil {
				return err
			}
			continue
		}
		if e.p.brk == BreakSkipRelink && slices.Contains(t.Group, i) {
			e.p.act(r, "skipped: follow %s (%s = %q)", e.reps()[want].Name, BreakKey, BreakSkipRelink)
			continue
		}
		if err := e.follow(ctx, r, e.reps()[want]); err != nil {
			return err
		}
		r.promoted = false // it follows its source again, which resyncs it
		if wait && e.chainOnline(next, i) {
			if err := e.awaitInSync(ctx, r, e.reps()[want]); err != nil {
				return err
			}
		}
	}
	return nil
}

// linkOrder orders the replicas for relinking towards s: those that lose their link first,
// then the others by their depth in s's forest, sources before their followers.
func (e *linkEngine) linkOrder(s *aem.State) []int {
	key := func(i int) int {
		if e.wantLink(s, i) == aem.NoSource {
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
// primary t.From replaces d's data, and no link changes. OFFLINE_1 leaves d down; OFFLINE_2
// starts d from the snapshot as a primary (a copy that starts following t.From is then
// promoted, Unfollow), while the old primary, abstractly down and disconnected, keeps running
// unlinked, as the original tool left it.
func (e *linkEngine) offlineResync(ctx context.Context, t *aem.Transition) error {
	d := t.Group[0]
	if e.reps()[d].running() {
		return fmt.Errorf("offline resync of replica %d: its server runs", d)
	}
	from, to := e.reps()[t.From], e.reps()[d]
	follows, err := e.copySnapshot(ctx, from, to)
	if err != nil {
		return err
	}
	if t.Resync == aem.Offline1 {
		return nil
	}
	if err := e.p.restart(ctx, to); err != nil {
		return err
	}
	if follows {
		return e.unfollow(ctx, to) // a primary the system's way: a promotion
	}
	return nil
}

// copySnapshot replaces the data of to, whose server is down, with a snapshot of from, and
// says whether to's next start follows from.
func (e *linkEngine) copySnapshot(ctx context.Context, from, to *Replica) (follows bool, err error) {
	follows, err = e.snap.CopySnapshot(ctx, e.p.c, from, to)
	if err != nil {
		return false, fmt.Errorf("copy a snapshot of %s into %s: %w", from.Name, to.Name, err)
	}
	e.p.act(to, "copied a snapshot of %s into its directory", from.Name)
	to.startLink = aem.NoSource
	if follows {
		to.startLink, to.linkedHistory = from.Index, from.history
	}
	to.history++
	return follows, nil
}

// copyFresh gives r a fresh copy of src where the system refused r's link to src (refusal),
// as the system's documentation prescribes: r's server is stopped, a snapshot of src copied in,
// and the server started and linked to src.
func (e *linkEngine) copyFresh(ctx context.Context, r, src *Replica, refusal error) error {
	if e.snap == nil {
		return fmt.Errorf("%s: %w; the fresh copy the system prescribes needs a kit.Snapshotter, which it does not implement", r.Name, refusal)
	}
	e.p.act(r, "refused to follow %s, so copied afresh: %v", src.Name, refusal)
	if err := e.p.stop(ctx, r); err != nil {
		return err
	}
	follows, err := e.copySnapshot(ctx, src, r)
	if err != nil {
		return err
	}
	if err := e.p.restart(ctx, r); err != nil {
		return err
	}
	if follows {
		return nil
	}
	return e.link(ctx, r, src) // a second refusal is an error
}

// chainOnline tells whether every source above replica i in s, up to its tree's root, is
// online: only then can its link sync. A server whose own source is suspended may refuse to
// serve a sync (Redis 5 and later: NOMASTERLINK), so the wait belongs to the convergence that
// brings the chain back whole.
func (e *linkEngine) chainOnline(s *aem.State, i int) bool {
	for k := 0; k < len(s.Src) && e.wantLink(s, i) != aem.NoSource; k++ {
		i = e.wantLink(s, i)
		if !s.On[i] {
			return false
		}
	}
	return true
}

// awaitConverged waits until every online replica whose sources up to its root are online
// (and that follows its source) is in sync with it, then until every online replica has
// settled.
func (e *linkEngine) awaitConverged(ctx context.Context, s *aem.State) error {
	var online []*Replica
	for i, r := range e.reps() {
		if s.On[i] {
			online = append(online, r)
		}
	}
	// Sources before their followers: a follower found in sync with a source that has not yet
	// taken what its own source holds would be in sync with too little.
	for _, i := range e.linkOrder(s) {
		r := e.reps()[i]
		if src := e.wantLink(s, i); s.On[i] && src != aem.NoSource && e.chainOnline(s, i) && r.link == src {
			if err := e.awaitInSync(ctx, r, e.reps()[src]); err != nil {
				return err
			}
		}
	}
	return e.p.awaitCaughtUp(ctx, online)
}

// awaitInSync waits until r is in sync with its source src, or until the system says that
// replication to r is broken (ErrBroken, LineKind.Broken), which raises an alarm in place of
// the wait. Where the system refuses the link (ErrRefused), r is copied afresh from src, once.
func (e *linkEngine) awaitInSync(ctx context.Context, r, src *Replica) error {
	refusal, err := e.awaitInSyncOnce(ctx, r, src)
	if refusal == nil || err != nil {
		return err
	}
	if err := e.copyFresh(ctx, r, src, refusal); err != nil {
		return err
	}
	if refusal, err = e.awaitInSyncOnce(ctx, r, src); refusal != nil {
		err = refusal
	}
	if err != nil {
		return fmt.Errorf("%s after a fresh copy of %s: %w", r.Name, src.Name, err)
	}
	return nil
}

// awaitInSyncOnce waits until r is in sync with src, or broken, or until the system refuses the
// link, which it returns.
func (e *linkEngine) awaitInSyncOnce(ctx context.Context, r, src *Replica) (refusal, err error) {
	if r.broken {
		return nil, nil // the alarm is raised; the link has not changed since
	}
	watch, err := e.p.watchBroken(r)
	if err != nil {
		return nil, err
	}
	var broken string
	err = e.p.await(ctx, fmt.Sprintf("%s in sync with %s", r.Name, src.Name), []*Replica{r, src}, func(ctx context.Context) (bool, string, error) {
		ok, seen, err := e.l.InSync(ctx, r, src)
		switch {
		case errors.Is(err, ErrBroken):
			broken = err.Error()
			return true, seen, nil
		case errors.Is(err, ErrRefused):
			refusal = err
			return true, seen, nil
		}
		if ok || err != nil {
			return ok, seen, err
		}
		if broken, err = watch(); broken != "" || err != nil {
			return true, seen, err
		}
		return false, seen, nil
	})
	if err != nil || broken == "" {
		return refusal, err
	}
	e.p.alarms = append(e.p.alarms, e.p.brokenAlarm(r, fmt.Sprintf("%s, while it should sync with %s", broken, src.Name)))
	return nil, nil
}

// follow makes r follow src; where the system refuses, r is copied afresh from src first.
func (e *linkEngine) follow(ctx context.Context, r, src *Replica) error {
	err := e.link(ctx, r, src)
	if errors.Is(err, ErrRefused) {
		return e.copyFresh(ctx, r, src, err)
	}
	return err
}

// link makes r follow src as the system does it: live, or through a restart (ErrNeedsStop).
func (e *linkEngine) link(ctx context.Context, r, src *Replica) error {
	err := e.p.call(ctx, fmt.Sprintf("%s to follow %s", r.Name, src.Name), func(ctx context.Context) error {
		return e.l.Follow(ctx, r, src)
	})
	if errors.Is(err, ErrNeedsStop) {
		return e.relinkStopped(ctx, r, src)
	}
	if errors.Is(err, ErrBroken) && e.p.step >= 0 {
		// The system took a step's order and said it cannot replicate r at all: its failure,
		// judged as broken replication, with no wait for a link it will not make. At the
		// cluster's start it is an error: there is no step to judge.
		r.link, r.linkedHistory = src.Index, src.history
		e.p.alarms = append(e.p.alarms, e.p.brokenAlarm(r, err.Error()))
		return nil
	}
	if err != nil {
		return err
	}
	r.link, r.linkedHistory, r.broken = src.Index, src.history, false
	e.p.act(r, "follow %s", src.Name)
	return nil
}

func (e *linkEngine) unfollow(ctx context.Context, r *Replica) error {
	err := e.p.call(ctx, r.Name+" to follow nobody", func(ctx context.Context) error { return e.l.Unfollow(ctx, r) })
	if errors.Is(err, ErrNeedsStop) {
		return e.relinkStopped(ctx, r, nil)
	}
	if err != nil {
		return err
	}
	// A server that stopped following stays so when it restarts: a PostgreSQL promotion is
	// for good, and a Redis master starts as one.
	r.link, r.startLink, r.broken = aem.NoSource, aem.NoSource, false
	e.p.act(r, "follow nobody")
	return nil
}

// cutLink fails r's link by a partition between r and its source: r's server still follows the
// source, which it can no longer reach, and the model's link is gone.
func (e *linkEngine) cutLink(r *Replica) error {
	src := e.reps()[r.link]
	if err := e.p.c.net.Cut(r.Index, src.Index); err != nil {
		return err
	}
	r.cutFrom, r.link = src.Index, aem.NoSource
	e.p.act(r, "partitioned: cut off from its source %s (it still follows it)", src.Name)
	return nil
}

// heal heals the partition of every replica that next brings online: one that the model links
// to the source it was cut from again follows it still, and reconnects by itself; any other is
// detached first (Unfollow), while it is still cut off, and relink then links it as the model
// says.
func (e *linkEngine) heal(ctx context.Context, next *aem.State) error {
	for i, r := range e.reps() {
		if r.cutFrom == aem.NoSource || !next.On[i] {
			continue
		}
		src := e.reps()[r.cutFrom]
		r.link = r.cutFrom // what the server follows
		if e.wantLink(next, i) != r.cutFrom {
			if err := e.unfollow(ctx, r); err != nil {
				return err
			}
		}
		if err := e.p.c.net.Mend(r.Index, src.Index); err != nil {
			return err
		}
		r.cutFrom = aem.NoSource
		e.p.act(r, "healed: reaches %s again", src.Name)
	}
	return nil
}

// relinkStopped relinks r to src (nil: to nobody) through a restart: it stops r's server,
// has the system prepare it (Relinker) and starts it again.
func (e *linkEngine) relinkStopped(ctx context.Context, r, src *Replica) error {
	p := e.p
	rl, ok := p.sys.(Relinker)
	if !ok {
		return fmt.Errorf("%s: Follow or Unfollow asked for a stop (kit.ErrNeedsStop), but the system implements no kit.Relinker", r.Name)
	}
	to, name := aem.NoSource, "nobody"
	if src != nil {
		to, name = src.Index, src.Name
	}
	if err := p.stop(ctx, r); err != nil {
		return err
	}
	var rewritten bool
	err := p.call(ctx, fmt.Sprintf("%s to be prepared to follow %s", r.Name, name), func(ctx context.Context) (err error) {
		rewritten, err = rl.Relink(ctx, p.c, r, src)
		return err
	})
	if err != nil {
		return err
	}
	if rewritten {
		r.history++
		p.act(r, "relinked to %s while down: its history was rewritten", name)
	} else {
		p.act(r, "relinked to %s while down", name)
	}
	r.startLink = to // it starts following to, as Relink prepared it, now and after a crash
	if src != nil {
		r.linkedHistory = src.history
	}
	return p.restart(ctx, r)
}

// leaveBehind writes ProbeKey to every tree and waits until every running replica holds it,
// then unlinks a replica that follows another and writes BehindKey to the root of its tree:
// the model still links them, so they must converge, and they cannot.
func (e *linkEngine) leaveBehind(ctx context.Context) error {
	p := e.p
	var live []*Replica
	for _, r := range e.reps() {
		if r.running() && !r.suspended {
			live = append(live, r)
		}
	}
	value := p.value(ProbeKey)
	for _, r := range live {
		if r.link == aem.NoSource {
			if err := p.write(ctx, r, ProbeKey, value); err != nil {
				return err
			}
		}
	}
	for _, r := range live {
		if err := p.awaitHolds(ctx, r, ProbeKey, value); err != nil {
			return err
		}
	}
	i := slices.IndexFunc(live, func(r *Replica) bool { return r.link != aem.NoSource })
	if i < 0 {
		return errors.New("leave-behind: no running replica follows another at the end of the schedule")
	}
	x := live[i]
	if err := e.unfollow(ctx, x); err != nil {
		return err
	}
	root := e.reps()[e.group(x.Index)]
	if err := p.write(ctx, root, BehindKey, p.value(BehindKey)); err != nil {
		return err
	}
	p.act(x, "%s = %q: left behind, unlinked from the tree of %s", BreakKey, BreakLeaveBehind, root.Name)
	return nil
}
