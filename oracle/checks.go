package oracle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/words"
)

// Class says which check a failed schedule failed.
type Class string

// The classes of failure, each a check of its own.
const (
	// Diverged: replicas that the system promises to converge hold different data (or one of
	// them cannot be read).
	Diverged Class = "divergence"
	// LostWrite: a write the system acknowledged is missing, or holds another value, on a
	// replica of the group that converged.
	LostWrite Class = "lost-write"
	// SelfCheck: the system's own consistency check raised an alarm.
	SelfCheck Class = "self-check"
	// BrokenReplication: the system itself says that a replica can never resync with its
	// source: while it should be syncing, its server logs again and again a line that its
	// plugin names as broken replication (PostgreSQL's "record with incorrect prev-link").
	// The replica stays behind for good: a convergence failure, not an incomplete schedule.
	BrokenReplication Class = "broken-replication"
	// Unrecoverable: a replica's server exited on its own: restarted after a failure, before
	// its cluster caught up (the system cannot recover the replica from what the failure left
	// on its disk), or anywhere else in the schedule (a PANIC, an abort, an exit status). The
	// step's waits ended there. A server killed by another process (the kernel's out-of-memory
	// killer) is the machine's: an error.
	Unrecoverable Class = "unrecoverable"
	// Liveness: the cluster never reached the state a step needed, and a replica's server,
	// up, said during the step that it cannot go on without an operator (Galera's "node
	// restart required"), or every online server, up, answered at the deadline that the
	// system has no leader (NATS): the system's own liveness failure, where without that word
	// the schedule would be incomplete.
	Liveness Class = "liveness"
	// MinorityAck: the system acknowledged a write that only a minority of its replicas
	// received, which cannot have committed, and its plugin does not declare that it
	// acknowledges before replicating (cem.Write.Async). In a Raft or Zab system that is a
	// safety failure of its own, whether or not the write is later lost.
	MinorityAck Class = "minority-ack"
)

// Classes lists the classes of failure, in the order summaries name them.
var Classes = []Class{Diverged, LostWrite, MinorityAck, BrokenReplication, Unrecoverable, Liveness, SelfCheck}

// Alarms judges the alarms a step raised: the class of failure (an unrecoverable replica when
// any alarm says so, else a lost write when a server lost what it held at a power loss, else
// broken replication when any says that, else a liveness failure when any says that, else a
// failed self-check) and one line naming every alarm.
func Alarms(alarms []cem.Alarm) (Class, string) {
	rank := func(c Class) int {
		return slices.Index([]Class{Unrecoverable, LostWrite, BrokenReplication, Liveness, SelfCheck}, c)
	}
	class, parts := SelfCheck, make([]string, len(alarms))
	for i, a := range alarms {
		parts[i] = fmt.Sprintf("replica %d: %s", a.Replica, a.What)
		c := SelfCheck
		switch {
		case a.Unrecoverable:
			c = Unrecoverable
		case a.Lost:
			c = LostWrite
		case a.Broken:
			c = BrokenReplication
		case a.Stuck:
			c = Liveness
		}
		if rank(c) < rank(class) {
			class = c
		}
	}
	switch class {
	case Unrecoverable:
		return class, "a server exited: " + strings.Join(parts, "; ")
	case LostWrite:
		return class, "a server lost what it held at its power loss: " + strings.Join(parts, "; ")
	case BrokenReplication:
		return class, "the system says replication is broken: " + strings.Join(parts, "; ")
	case Liveness:
		return class, "the system says it cannot go on: " + strings.Join(parts, "; ")
	}
	return class, "the system's own check: " + strings.Join(parts, "; ")
}

// Check says when a run is judged.
type Check string

const (
	// EveryConvergence judges the cluster after every convergence step, and at the end.
	EveryConvergence Check = "every-convergence"
	// End judges it once, at the end, as the Modulo paper did.
	End Check = "end"
)

// ParseCheck reads a check setting; empty means EveryConvergence.
func ParseCheck(s string) (Check, error) {
	switch Check(s) {
	case "", EveryConvergence:
		return EveryConvergence, nil
	case End:
		return End, nil
	}
	return "", fmt.Errorf("check must be %q or %q, got %q", EveryConvergence, End, s)
}

// Promised returns the group each replica must have converged in once a convergence has
// settled in abstract state s, or NotCompared: for a quorum model, the online replicas form
// one group; for a link model (s.Src set), each online replica whose sources up to its tree's
// root are all online belongs to its root's group, since only along such a chain can a resync
// have happened.
func Promised(s *aem.State) []int {
	group := make([]int, len(s.On))
	for i := range group {
		group[i] = NotCompared
		if !s.On[i] {
			continue
		}
		if s.Src == nil {
			group[i] = 0
			continue
		}
		root, whole := i, true
		for k := 0; k < len(s.Src) && s.Src[root] != aem.NoSource; k++ {
			root = s.Src[root]
			whole = whole && s.On[root]
		}
		if whole {
			group[i] = root
		}
	}
	return group
}

// Lost is an acknowledged write that a replica does not hold as written.
type Lost struct {
	Key, Value string
	Replica    int
	Got        Value // what the replica holds instead
}

// LostWrites checks that every compared, readable replica holds every write acknowledged as
// durable, with its value. Per key, the last acknowledged write counts, and any write of the
// key sent after it may have replaced it: a replica must hold one of their values. (A later
// write the system did not acknowledge may still have been applied; an earlier one never
// counts, since the acknowledged write replaced it.)
func LostWrites(writes []cem.Write, snap cem.Snapshot, group []int) []Lost {
	lastAcked := map[string]int{}
	var order []string
	for i, w := range writes {
		if !w.Acked {
			continue
		}
		if _, ok := lastAcked[w.Key]; !ok {
			order = append(order, w.Key)
		}
		lastAcked[w.Key] = i
	}
	var lost []Lost
	for _, k := range order {
		acked := writes[lastAcked[k]]
		allowed := map[string]bool{acked.Value: true}
		for _, w := range writes[lastAcked[k]+1:] {
			if w.Key == k {
				allowed[w.Value] = true
			}
		}
		for i, r := range snap.Replicas {
			if group[i] == NotCompared || r.Err != "" {
				continue
			}
			if v, ok := r.Data[k]; !ok || !allowed[v] {
				lost = append(lost, Lost{Key: k, Value: acked.Value, Replica: i, Got: Value{Text: v, Present: ok}})
			}
		}
	}
	return lost
}

// MinorityAcks returns the writes that only a minority received and that the system
// acknowledged, where its plugin does not declare asynchronous acknowledgement.
func MinorityAcks(writes []SentWrite) []SentWrite {
	var acks []SentWrite
	for _, w := range writes {
		if w.Minority && w.Answer == cem.Acknowledged && !w.Async {
			acks = append(acks, w)
		}
	}
	return acks
}

// MinorityAckLine says in one line which writes the system acknowledged that only a minority
// received, naming at most DetailKeys.
func MinorityAckLine(acks []SentWrite) string {
	var parts []string
	for _, w := range acks[:min(len(acks), DetailKeys)] {
		parts = append(parts, fmt.Sprintf("%s (step %d, acknowledged after %d ms)", w.Key, w.Step+1, w.AnsweredMS))
	}
	s := fmt.Sprintf("the system acknowledged %d %s that only a minority of replicas received, which cannot have committed: %s",
		len(acks), words.Plural(len(acks), "write", "writes"), strings.Join(parts, ", "))
	if len(acks) > DetailKeys {
		s += fmt.Sprintf(", and %d more", len(acks)-DetailKeys)
	}
	return s
}

// LostLine says in one line which acknowledged writes are lost, naming at most DetailKeys.
func LostLine(lost []Lost) string {
	var parts []string
	for _, l := range lost[:min(len(lost), DetailKeys)] {
		got := "<missing>"
		if l.Got.Present {
			got = ShortValue(l.Got.Text)
		}
		parts = append(parts, fmt.Sprintf("%s on replica %d (acknowledged %s, holds %s)", l.Key, l.Replica, ShortValue(l.Value), got))
	}
	s := fmt.Sprintf("%d acknowledged %s lost: %s", len(lost), words.Plural(len(lost), "write", "writes"), strings.Join(parts, ", "))
	if len(lost) > DetailKeys {
		s += fmt.Sprintf(", and %d more", len(lost)-DetailKeys)
	}
	return s
}
