package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

// roundTripTimeout bounds the session and sync that prove a leader serves requests: they go
// to a server that srvr just showed serving, and take milliseconds.
const roundTripTimeout = 2 * time.Second

// survey asks every online server for srvr. When every one serves as leader or follower and
// exactly one leads, it returns their statuses and the leader's index; otherwise leader is -1.
// seen says what it saw either way.
func survey(ctx context.Context, online []*kit.Replica) (sts []srvrStatus, leader int, seen string) {
	leader = -1
	var obs []string
	for i, r := range online {
		st, err := srvr(ctx, r.Addr(0))
		switch {
		case err != nil:
			return nil, -1, r.Name + " does not answer srvr: " + err.Error()
		case !st.Serving:
			return nil, -1, r.Name + " does not serve yet"
		case st.Mode == "leader" && leader >= 0:
			return nil, -1, fmt.Sprintf("%s and %s both lead", online[leader].Name, r.Name) // the old one has not noticed yet
		case st.Mode == "leader":
			leader = i
		case st.Mode != "follower":
			return nil, -1, r.Name + " is " + st.Mode
		}
		sts = append(sts, st)
		obs = append(obs, fmt.Sprintf("%s %s zxid %s, %d nodes", r.Name, st.Mode, zxidString(st.Zxid), st.Nodes))
	}
	seen = strings.Join(obs, "; ")
	if leader < 0 {
		return nil, -1, "no leader: " + seen
	}
	return sts, leader, seen
}

// Leader is the one server that every online server serves under. The kit asks for it at the
// start of every divergence; where sessions are global, it opens there the session through
// which the divergence's writes go (Write), ending the last divergence's.
func (s *system) Leader(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	_, l, seen := survey(ctx, online)
	if l < 0 {
		return nil, seen, nil
	}
	if !*s.cfg.LocalSessions {
		if s.lasting != nil {
			s.lasting.close()
		}
		var err error
		if s.lasting, err = openLasting(ctx, online[l].Addr(0)); err != nil {
			return nil, "a session with " + online[l].Name + ": " + err.Error(), nil
		}
	}
	return online[l], "", nil
}

// CaughtUp: every online server serves under one leader, the followers have the leader's
// zxid, the leader counts every follower as synced, and a session and
// a sync through the leader answer. The round trip is needed after a new epoch, when a leader
// can be "leading - broadcast" before it serves clients; it costs a few milliseconds, so it
// is done every time.
func (s *system) CaughtUp(ctx context.Context, _ *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	sts, l, seen := survey(ctx, online)
	if l < 0 {
		return false, seen, nil
	}
	leader, lz := online[l], sts[l].Zxid
	// A leader that has committed nothing in its epoch reports the epoch's first zxid (counter
	// 0); its followers report the last transaction they synced, which is the last one on the
	// leader's disk, or that same first zxid when they synced from its snapshot. A leader
	// re-elected with nothing committed has also taken a snapshot named after its earlier
	// epoch's start, which followers synced by a DIFF never report: the last transaction on its
	// disk counts then. And a leader whose log runs ahead of its tree (a DIFF it logged as a
	// follower and never applied, its sync cut short) took up its epoch with the snapshot it
	// wrote of its tree, whose zxid its synced followers report.
	diskZxid, diskTxn, snapZxid := int64(-1), int64(-1), int64(-1)
	if zxidCounter(lz) == 0 {
		var err error
		if diskZxid, diskTxn, err = lastZxidOnDisk(dataDir(leader)); err != nil {
			return false, "", fmt.Errorf("%s: last zxid on disk: %w", leader.Name, err)
		}
		if snapZxid, err = newestSnapshot(dataDir(leader)); err != nil {
			return false, "", fmt.Errorf("%s: newest snapshot: %w", leader.Name, err)
		}
	}
	// Node counts are in seen but not compared: at one zxid they differ only when the data
	// does, and that is for the final comparison to report as a divergence, not for this wait
	// to time out on (ZooKeeper 3.8.0 keeps a write it truncates to zxid 0).
	for i, st := range sts {
		if i != l && st.Zxid != lz && st.Zxid != diskZxid && st.Zxid != diskTxn && st.Zxid != snapZxid {
			return false, seen, nil
		}
	}
	m, err := mntr(ctx, leader.Addr(0))
	if err != nil {
		return false, leader.Name + " does not answer mntr: " + err.Error(), nil
	}
	// 3.4's mntr has no zk_peer_state; its synced followers are those past their sync.
	state, hasState := m["zk_peer_state"]
	if hasState && state != "leading - broadcast" || m["zk_synced_followers"] != strconv.Itoa(len(online)-1) {
		return false, fmt.Sprintf("leader %s: %q, %s synced followers", leader.Name, m["zk_peer_state"], m["zk_synced_followers"]), nil
	}
	if err := roundTrip(ctx, leader); err != nil {
		return false, "session and sync through leader " + leader.Name + ": " + err.Error(), nil
	}
	return true, "", nil
}

// roundTrip proves that a leader serves requests: a session to it and a sync through it.
func roundTrip(ctx context.Context, leader *kit.Replica) error {
	ctx, cancel := context.WithTimeout(ctx, roundTripTimeout)
	defer cancel()
	sess, err := openSession(ctx, leader.Addr(0))
	if err != nil {
		return err
	}
	defer sess.close()
	return sess.sync(ctx, "/")
}

// Isolated tells whether r, cut off from its peers, has left its quorum: a follower or leader
// that lost its quorum goes back to leader election and serves no requests.
func (s *system) Isolated(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (bool, string, error) {
	st, err := srvr(ctx, r.Addr(0))
	if err != nil {
		return false, err.Error(), nil
	}
	if st.Serving {
		return false, "still serving as " + st.Mode, nil
	}
	return true, "", nil
}

// DetectionTime is how long a server takes to notice a peer that stopped answering: a leader
// drops a follower silent for syncLimit ticks, and a follower gives up on a leader silent as
// long (its socket's read timeout); twice that, for the election that follows to begin.
func (s *system) DetectionTime(*kit.Cluster) time.Duration {
	return 2 * time.Duration(s.cfg.SyncLimit*s.cfg.TickTimeMS) * time.Millisecond
}
