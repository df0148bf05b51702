package main

import (
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

// What Q/C/E+pause needs beyond the tutorial's plugin (docs/writing-a-plugin.md), which main.go
// is: how long the kit waits after a paused member goes on.

// DetectionTime is twice etcd's election timeout: a leader that went on after its followers
// elected another, or a follower that missed a term, finds out from the first heartbeat or
// election after it; until then the members' commit and applied indexes agree with an old
// leader's uncommitted tail still in flight, and the cluster looks caught up.
func (s *system) DetectionTime(*kit.Cluster) time.Duration {
	return 2 * time.Duration(s.cfg.ElectionMS) * time.Millisecond
}
