package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
)

// SyncLines are the lines a follower logs (Learner.syncWithLeader) for each way the leader
// can bring it in sync: a diff of proposals, a snapshot of the whole tree, or a truncation of
// its log to the leader's last zxid (which may then be followed by a diff); and the line a
// leader logs (3.5 and later, LearnerHandler.syncFollower) when it serves a follower's diff
// from its transaction log files as well as its in-memory log, which only a follower behind
// that in-memory log needs and only logs smaller than snapshot_size_factor times the snapshot
// allow: the sync path that the log files' size decides.
func (s *system) SyncLines() []kit.LineKind {
	return []kit.LineKind{
		{Text: "Getting a diff from the leader", Kind: "DIFF"},
		{Text: "Getting a snapshot from leader", Kind: "SNAP"},
		{Text: "Truncating log to get in sync with the leader", Kind: "TRUNC"},
		{Text: "Use txnlog and committedLog for peer sid", Kind: "SERVED-TXNLOG"},
	}
}

// Observe says the replica's mode, its epoch and zxid (srvr).
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	fields := map[string]string{}
	st, err := srvr(ctx, r.Addr(0))
	switch {
	case err != nil:
		fields["srvr"] = err.Error()
	case !st.Serving:
		fields[cem.ObserveRole] = "not serving"
	default:
		fields[cem.ObserveRole] = st.Mode
		fields[cem.ObserveEpoch] = strconv.FormatInt(st.Zxid>>32, 10)
		fields[cem.ObservePosition] = zxidString(st.Zxid)
	}
	return fields, nil
}

// SelfCheck reads the count of digest mismatches that the server found between its data tree
// and the digests the leader sent with each transaction (zk_digest_mismatches_count in mntr,
// ZooKeeper 3.6 and later with digest.enabled, the default).
func (s *system) SelfCheck(ctx context.Context, r *kit.Replica) (string, error) {
	m, err := mntr(ctx, r.Addr(0))
	if err != nil {
		return "", err
	}
	n, ok := m["zk_digest_mismatches_count"]
	if !ok || n == "0" {
		return "", nil
	}
	return fmt.Sprintf("zk_digest_mismatches_count = %s", n), nil
}
