package main

import (
	"context"
	"strconv"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
)

// Observe says what r's server reports of its replication (SHOW STATUS): role = its state
// (wsrep_local_state_comment: Synced, Donor/Desynced, Joiner, Joined, Initialized),
// status = wsrep_cluster_status (Primary, non-Primary), size = wsrep_cluster_size, position =
// wsrep_last_committed, and history = which cluster state UUID (wsrep_cluster_state_uuid) it
// is in, numbered in the order the plugin saw them: a random UUID would differ in every run of
// the schedule, where "2" says as well that a second history began.
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	st, err := readStatus(ctx, r)
	if err != nil {
		return nil, err
	}
	uuid := st["cluster_state_uuid"]
	if _, ok := s.histories[uuid]; !ok {
		s.histories[uuid] = len(s.histories) + 1
	}
	return map[string]string{
		cem.ObserveRole:     st["local_state_comment"],
		"status":            st["cluster_status"],
		"size":              st["cluster_size"],
		cem.ObservePosition: st["last_committed"],
		"history":           strconv.Itoa(s.histories[uuid]),
	}, nil
}

// SyncLines are what the rsync state transfer script logs on the joiner, in the server's log:
// a state snapshot transfer (the data directory copied from a donor), or an incremental one
// (the writesets the node missed, from a donor's Galera cache; the script runs in both). And
// Galera's own word that a node cannot go on until an operator restarts it ("Receiving IST
// failed, node restart required"), after which its server neither exits nor rejoins: a
// convergence that then never completes is Galera's liveness failure (kit.LineKind.Stuck).
func (s *system) SyncLines() []kit.LineKind {
	return []kit.LineKind{
		{Text: "rsync SST completed on joiner", Kind: "SST"},
		{Text: "rsync IST completed on joiner", Kind: "IST"},
		{Text: "node restart required", Kind: "RESTART-REQUIRED", Stuck: true},
	}
}

// Isolated tells whether r, cut off from its peers, has left the primary component: Galera
// drops an unanswering peer from the component after evs.suspect_timeout, and a node left
// without a majority of the last primary component is non-Primary.
func (s *system) Isolated(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (bool, string, error) {
	st, err := readStatus(ctx, r)
	if err != nil {
		return false, err.Error(), nil
	}
	return !st.primary(), st.String(), nil
}

// DetectionTime is how long a node takes to drop a peer that stopped answering: Galera's
// evs.suspect_timeout (5 s by default), one evs.inactive_check_period (0.5 s) and the view
// change after it. A paused node that goes on, or the nodes around it, report the component
// they had until then.
func (s *system) DetectionTime(*kit.Cluster) time.Duration { return 6500 * time.Millisecond }
