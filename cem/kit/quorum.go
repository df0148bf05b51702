package kit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/fault"
)

// quorumEngine realises the quorum models (Q/C/Z and its kin): an offline replica has failed
// by its kind (crashed, lost power, cut off, paused: package cem/fault), every write goes
// through the leader, every replica fails at the end of a divergence, and a convergence
// recovers its group and waits until the cluster has caught up.
//
// Online abstract replicas are equal when a divergence starts, so the engine may choose which
// server realises which of them: it maps an abstract replica that receives the most writes of
// the divergence to the real leader (every write goes through the leader, so it receives all
// of them). The mapping then holds for the rest of the schedule.
type quorumEngine struct {
	p    *Plugin
	q    Quorum
	logs LogReader // nil when the system cannot realise writes that reach only a minority
}

// online returns the servers of the online abstract replicas.
func (e *quorumEngine) online(s *aem.State) []*Replica {
	var rs []*Replica
	for a, on := range s.On {
		if on {
			rs = append(rs, e.p.replica(a))
		}
	}
	return rs
}

func (e *quorumEngine) start(ctx context.Context) error {
	if err := e.p.awaitCaughtUp(ctx, e.p.c.Replicas); err != nil {
		return err
	}
	seeder, ok := e.p.sys.(Seeder)
	if !ok {
		return nil
	}
	data := seeder.InitialData(e.p.c)
	if len(data) == 0 {
		if e.p.update {
			return e.noInitialKeys()
		}
		return nil
	}
	leader, err := e.leader(ctx)
	if err != nil {
		return err
	}
	for _, kv := range data {
		if err := e.p.call(ctx, fmt.Sprintf("%s to accept initial key %s", leader.Name, kv.Key), func(ctx context.Context) error {
			return e.p.sys.Write(ctx, leader, kv.Key, kv.Value)
		}); err != nil {
			return err
		}
	}
	e.p.act(leader, "initial data: %d keys, %s to %s", len(data), data[0].Key, data[len(data)-1].Key)
	return e.p.awaitCaughtUp(ctx, e.p.c.Replicas)
}

func (e *quorumEngine) check() error {
	for a, on := range e.p.state.On {
		r := e.p.replica(a)
		if on != (r.running() && !r.suspended && !r.cut && !r.diskFails) {
			return fmt.Errorf("%s runs=%v suspended=%v cut off=%v disk fails=%v, but abstract replica %d has online=%v", r.Name, r.running(), r.suspended, r.cut, r.diskFails, a, on)
		}
	}
	return nil
}

func (e *quorumEngine) group(int) int { return 0 }

func (e *quorumEngine) apply(ctx context.Context, t *aem.Transition, next *aem.State) error {
	if t.Kind == aem.Divergence {
		return e.diverge(ctx, t)
	}
	var group []*Replica
	kinds := map[*Replica]fault.Kind{}
	for _, a := range t.Group {
		r := e.p.replica(a)
		kinds[r] = r.failed
		group = append(group, r)
	}
	order, oneByOne, err := e.p.startOrder(ctx, group)
	if err != nil {
		return err
	}
	for i, r := range order {
		if err := e.p.recover(ctx, r); err != nil {
			return err
		}
		if oneByOne && r.running() {
			if err = e.p.awaitReady(ctx, r, order[:i]...); err != nil {
				break // a server that exited is judged below
			}
		}
	}
	if err == nil {
		for _, r := range group {
			if err := kinds[r].Settled(ctx, server{e.p, r}); err != nil {
				return err
			}
		}
		err = e.recover(ctx, group, next)
	}
	for _, r := range group {
		if err != nil && r.proc != nil && !r.proc.Running() {
			e.p.unrecoverable(r)
			return nil
		}
	}
	return err
}

// recover waits until the restarted group serves and the cluster has caught up.
func (e *quorumEngine) recover(ctx context.Context, group []*Replica, next *aem.State) error {
	for _, r := range group {
		if err := e.p.awaitReady(ctx, r, group...); err != nil {
			return err
		}
	}
	if e.p.skipWait(next) {
		return nil
	}
	return e.p.awaitCaughtUp(ctx, e.online(next))
}

// leader waits until the online replicas agree on a leader among them.
func (e *quorumEngine) leader(ctx context.Context) (*Replica, error) {
	online := e.online(&e.p.state)
	var leader *Replica
	err := e.p.await(ctx, "one leader among "+names(online), online, func(ctx context.Context) (bool, string, error) {
		l, seen, err := e.q.Leader(ctx, e.p.c, online)
		switch {
		case err != nil || l == nil:
			return false, seen, err
		case !slices.Contains(online, l):
			return false, l.Name + " leads, but it is not online", nil
		}
		leader = l
		return true, "", nil
	})
	return leader, err
}

// placeLeader permutes the mapping so that an abstract replica that receives the most writes of
// the divergence is realised by the leader.
func (e *quorumEngine) placeLeader(writes []int, leader *Replica) {
	p := e.p
	top := slices.Max(writes)
	la := p.abstractOf(leader.Index)
	if writes[la] == top {
		return
	}
	for a, w := range writes {
		if w == top && p.state.On[a] {
			p.conc[a], p.conc[la] = p.conc[la], p.conc[a]
			p.act(nil, "map abstract replica %d to %s (the leader) and abstract replica %d to %s",
				a, p.replica(a).Name, la, p.replica(la).Name)
			return
		}
	}
}

// pendingWrite is a write sent without waiting for its answer: p.writes[index], sent to
// replica to at sent.
type pendingWrite struct {
	index  int
	to     *Replica
	sent   time.Time
	cancel context.CancelFunc
	done   chan writeAnswer
}

// writeAnswer is what the system's Write returned, and when.
type writeAnswer struct {
	err error
	at  time.Time
}

// diverge realises D v: write j reaches exactly the replicas with v[i] >= j, and those with
// v[i] = j-1 are crashed just before it; at the end every replica is crashed. A write that
// reaches only a minority is realised as LogReader says.
func (e *quorumEngine) diverge(ctx context.Context, t *aem.Transition) (err error) {
	p := e.p
	leader, err := e.leader(ctx)
	if err != nil {
		return err
	}
	e.placeLeader(t.Writes, leader)
	quorum := len(p.conc)/2 + 1
	var pending []pendingWrite
	var failedAt time.Time // when the kit began failing every replica, the writes' receivers too
	defer func() { err = errors.Join(err, e.settle(pending, failedAt)) }()
	// unlogged are the minority writes sent to receivers and not yet seen in their logs. A run of
	// minority writes to the same receivers is sent back to back and awaited together, before
	// the next failure: the leader of a minority keeps leading only until it notices that it
	// lost its quorum (etcd's CheckQuorum: one to two election timeouts), and a write sent after
	// the previous one reached a slow disk could find it a follower already, and never be logged.
	// Their order in the log is the system's.
	var unlogged []cem.Write
	var unloggedAt []*Replica // their receivers
	var sent []cem.Write      // write j is sent[j-1]
	awaitUnlogged := func() error {
		for _, r := range unloggedAt {
			for _, w := range unlogged {
				if err := e.awaitLogged(ctx, r, w.Key, w.Value); err != nil {
					return err
				}
			}
		}
		unlogged = nil
		return nil
	}
	for j := 1; j <= t.WriteCount(); j++ {
		var failing []int // abstract replicas
		var receivers []*Replica
		for a, w := range t.Writes {
			switch {
			case !p.state.On[a]:
			case w == j-1:
				failing = append(failing, a)
			case w >= j:
				receivers = append(receivers, p.replica(a))
			}
		}
		key, value, err := e.nextWrite(j)
		if err != nil {
			return err
		}
		sent = append(sent, cem.Write{Key: key, Value: value})
		if len(failing) > 0 { // write j reaches fewer replicas than write j-1
			if err := awaitUnlogged(); err != nil {
				return err
			}
		}
		if len(receivers) >= quorum {
			for _, a := range failing {
				if err := e.fail(ctx, t, a, false); err != nil {
					return err
				}
			}
			if err := p.writeWith(ctx, leader, key, value, e.put); err != nil {
				return err
			}
			for _, r := range receivers {
				if err := e.p.awaitHolds(ctx, r, key, value); err != nil {
					return err
				}
			}
			continue
		}
		if e.logs == nil {
			return fmt.Errorf("write %s reaches %d of %d replicas, which cannot commit it: to realise it, the %s plugin must implement kit.LogReader: %w",
				key, len(receivers), len(p.conc), p.about.Name, ErrUnrealisable)
		}
		for _, a := range failing {
			if err := e.fail(ctx, t, a, true); err != nil {
				return err
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		w := pendingWrite{index: len(p.writes), to: leader, sent: time.Now(), cancel: cancel, done: make(chan writeAnswer, 1)}
		go func() {
			err := e.put(wctx, leader, key, value)
			w.done <- writeAnswer{err, time.Now()}
		}()
		pending = append(pending, w)
		p.sentWrite(cem.Write{Key: key, Value: value, Minority: true, Answer: cem.NoAnswer, Async: p.async})
		p.act(leader, "write %s = %q sent (%d of %d replicas receive it: it cannot commit)", key, value, len(receivers), len(p.conc))
		unlogged, unloggedAt = append(unlogged, cem.Write{Key: key, Value: value}), receivers
	}
	if err := awaitUnlogged(); err != nil {
		return err
	}
	if err := e.noLeak(ctx, t, sent); err != nil {
		return err
	}
	failedAt = time.Now()
	for a, on := range p.state.On {
		if on {
			if err := e.fail(ctx, t, a, false); err != nil {
				return err
			}
		}
	}
	// Every replica online at the divergence's start has failed: once the system has noticed
	// each failure, the divergence is done.
	for a, on := range p.state.On {
		if r := p.replica(a); on {
			if err := r.failed.Noticed(ctx, server{p, r}); err != nil {
				return err
			}
		}
	}
	return nil
}

// leakCheckTimeout bounds each question of noLeak: LogReader reads files, and a system whose
// Logged asks a server could wait on one that is stopped.
const leakCheckTimeout = 5 * time.Second

// noLeak checks that the divergence's failures took effect: write j of t (sent[j-1]) must not
// be in the log of an online replica that the model keeps it from (t.Writes[a] < j), which the
// kit stopped, cut off or took down before it. A write there is the realisation's doing (a
// failure that did nothing, a write delivered past it), not the system's: a
// *cem.NonconformantError. A server left running on a failing disk is not judged: its disk
// fails from a drawn byte (fault.DiskError), and what it logs before is its kind's to allow. A
// LogReader that cannot tell (kit.ErrUnrealisable, an error) leaves the replica unjudged, the
// error recorded.
func (e *quorumEngine) noLeak(ctx context.Context, t *aem.Transition, sent []cem.Write) error {
	if e.logs == nil {
		return nil
	}
	p := e.p
	start, asked := time.Now(), 0
	for i, w := range sent {
		for a, v := range t.Writes {
			if !p.state.On[a] || v > i {
				continue
			}
			r := p.replica(a)
			if !r.suspended && !r.cut && r.running() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, leakCheckTimeout)
			held, err := e.logs.Logged(cctx, r, w.Key, w.Value)
			cancel()
			asked++
			switch {
			case errors.Is(err, ErrUnrealisable):
			case err != nil:
				p.act(r, "conformance: cannot tell whether write %s reached it: %v", w.Key, err)
			case held:
				how := fmt.Sprintf("taken down before it (%s)", p.kindOf(t, a).Failure())
				switch {
				case r.suspended:
					how = "stopped before it (SIGSTOP)"
				case r.cut:
					how = "cut off before it"
				}
				return &cem.NonconformantError{Step: p.step, Check: "write-leaked",
					Detail: fmt.Sprintf("write %s = %q is in the log of %s, which the model keeps it from: the kit recorded it %s, and that did not take effect",
						w.Key, w.Value, r.Name, how)}
			}
		}
	}
	if asked > 0 {
		p.act(nil, "conformance: no write in the log of a replica the model keeps it from (%d logs read in %d ms)", asked, time.Since(start).Milliseconds())
	}
	return nil
}

// fail fails abstract replica a in divergence t by the kind t gives it (the DRM's one where t
// names none). Before a write that reaches only a minority, a replica whose kind cannot be
// injected silently (a crash closes connections at once) is stopped instead, so that it never
// sees the write, and fails at the divergence's end; a replica that failed already is left.
func (e *quorumEngine) fail(ctx context.Context, t *aem.Transition, a int, minority bool) error {
	r := e.p.replica(a)
	if r.failed != nil {
		return nil
	}
	k := e.p.kindOf(t, a)
	if minority && !k.Silent() {
		return e.p.suspend(ctx, r)
	}
	return e.p.fail(ctx, r, k)
}

// nextWrite names the key and value of write j of the step: a new key, or with workload =
// "update" an initial key, as the kit's doc comment (WorkloadKey) says.
func (e *quorumEngine) nextWrite(j int) (key, value string, err error) {
	name := e.p.key(j)
	if !e.p.update {
		return name, e.p.value(name), nil
	}
	data := e.p.sys.(Seeder).InitialData(e.p.c)
	if len(data) == 0 {
		return "", "", e.noInitialKeys()
	}
	return data[(e.p.step+j-1)%len(data)].Key, e.p.value(name), nil
}

// noInitialKeys says that workload = "update" has nothing to update: at the start, and after a
// restore, which does not start the cluster anew.
func (e *quorumEngine) noInitialKeys() error {
	return fmt.Errorf("%s = %q updates initial keys, and the %s plugin's settings make none", WorkloadKey, WorkloadUpdate, e.p.about.Name)
}

// put writes a step's write: through Update when the workload updates and the system has it.
func (e *quorumEngine) put(ctx context.Context, r *Replica, key, value string) error {
	if u, ok := e.p.sys.(Updater); ok && e.p.update {
		return u.Update(ctx, r, key, value)
	}
	return e.p.sys.Write(ctx, r, key, value)
}

// awaitLogged waits until the write that cannot commit is in r's log.
func (e *quorumEngine) awaitLogged(ctx context.Context, r *Replica, key, value string) error {
	err := e.p.await(ctx, fmt.Sprintf("write %s in the log of %s", key, r.Name), []*Replica{r}, func(ctx context.Context) (bool, string, error) {
		ok, err := e.logs.Logged(ctx, r, key, value)
		return ok, "", err
	})
	if err == nil {
		e.p.act(r, "write %s is in its log", key)
	}
	return err
}

// settle ends the writes sent without waiting, once their leader is gone, waits until the
// system's Write has returned (it must return soon after its context ends), and records each
// answer in the step's writes (cem.Answer): an error counts as a refusal only where it came
// before the kit began failing the servers (failedAt; zero when it never did) and before it
// ended the wait, since afterwards it is the lost connection. An acknowledgement counts
// whenever it came.
func (e *quorumEngine) settle(pending []pendingWrite, failedAt time.Time) error {
	p := e.p
	var errs []error
	ended := time.Now()
	for _, w := range pending {
		w.cancel()
	}
	for _, w := range pending {
		sw := &p.writes[w.index]
		var a writeAnswer
		select {
		case a = <-w.done:
		case <-time.After(p.c.Spec.StepTimeout):
			errs = append(errs, fmt.Errorf("the write of %s did not return after its context ended", sw.Key))
			continue
		}
		after := a.at.Sub(w.sent)
		switch {
		case a.err == nil:
			sw.Acked, sw.Answer, sw.AnsweredAfter = true, cem.Acknowledged, after
			p.acked = append(p.acked, *sw)
			if p.async {
				p.act(w.to, "write %s acknowledged %s after it was sent, before a quorum held it: the system acknowledges before replicating, so it must survive", sw.Key, after.Round(time.Millisecond))
			} else {
				p.act(w.to, "write %s acknowledged %s after it was sent, though only a minority received it: it cannot have committed", sw.Key, after.Round(time.Millisecond))
			}
		case a.at.Before(ended) && (failedAt.IsZero() || a.at.Before(failedAt)):
			sw.Answer, sw.AnsweredAfter = cem.Refused, after
			p.act(w.to, "write %s refused %s after it was sent: %v", sw.Key, after.Round(time.Millisecond), a.err)
		default:
			p.act(w.to, "write %s got no answer while its servers ran (%v)", sw.Key, a.err)
		}
	}
	return errors.Join(errs...)
}

// leaveBehind crashes one follower after a probe write that every replica holds, and writes
// BehindKey without it when a quorum remains.
func (e *quorumEngine) leaveBehind(ctx context.Context) error {
	p := e.p
	online := e.online(&p.state)
	leader, err := e.leader(ctx)
	if err != nil {
		return err
	}
	if err := p.write(ctx, leader, ProbeKey, p.value(ProbeKey)); err != nil {
		return err
	}
	if err := e.p.awaitCaughtUp(ctx, online); err != nil {
		return err
	}
	var victim *Replica
	for _, r := range online {
		if r != leader {
			victim = r
		}
	}
	if err := p.fail(ctx, victim, fault.Crash{}); err != nil {
		return err
	}
	p.act(victim, "%s = %q: left behind, down", BreakKey, BreakLeaveBehind)
	rest := slices.DeleteFunc(slices.Clone(online), func(r *Replica) bool { return r == victim })
	if len(rest) < len(p.conc)/2+1 {
		return nil
	}
	if err := p.write(ctx, leader, BehindKey, p.value(BehindKey)); err != nil {
		return err
	}
	return e.p.awaitCaughtUp(ctx, rest)
}

// loseWrite realises break_realisation = "lose-write": the key of the schedule's first
// acknowledged write is deleted, unreported, from every online replica.
func (e *quorumEngine) loseWrite(ctx context.Context) error {
	p := e.p
	if len(p.acked) == 0 {
		p.act(nil, "%s = %q: no acknowledged write to lose", BreakKey, BreakLoseWrite)
		return nil
	}
	w := p.acked[0]
	leader, err := e.leader(ctx)
	if err != nil {
		return err
	}
	err = p.call(ctx, fmt.Sprintf("%s to delete %s", leader.Name, w.Key), func(ctx context.Context) error {
		return p.sys.(Deleter).Delete(ctx, leader, w.Key)
	})
	if err != nil {
		return err
	}
	p.act(leader, "%s = %q: delete %s, not reported", BreakKey, BreakLoseWrite, w.Key)
	return p.awaitCaughtUp(ctx, e.online(&p.state))
}

// names lists replicas' names for messages.
func names(rs []*Replica) string {
	ns := make([]string, len(rs))
	for i, r := range rs {
		ns[i] = r.Name
	}
	return strings.Join(ns, ", ")
}

func (e *quorumEngine) policy() error { return nil }
