package main

import (
	"context"

	"github.com/modulo-testing/modulo/cem/kit"
)

// What Q/N/E and Q/CN/E need beyond the tutorial's plugin (docs/writing-a-plugin.md), which
// main.go is: the kit's wait for a cut-off member to see it.

// Isolated tells whether r, cut off from its peers, has lost its leader: a follower that
// heard from no leader for an election timeout campaigns, and a leader that heard from no
// quorum steps down (etcd's CheckQuorum); either follows no leader.
func (s *system) Isolated(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (bool, string, error) {
	var st status
	if err := s.call(ctx, r, "/v3/maintenance/status", struct{}{}, &st); err != nil {
		return false, err.Error(), nil
	}
	if st.Leader != "" && st.Leader != "0" {
		return false, "still follows leader " + st.Leader, nil
	}
	return true, "", nil
}
