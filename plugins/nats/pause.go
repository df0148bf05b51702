package main

import (
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

// DetectionTime is how long a JetStream server that went on after a pause takes to learn what
// happened while it was stopped. nats-server's Raft timers are fixed (raft.go: a heartbeat
// every second, a campaign 100 to 800 ms after an election timer fires): a resumed leader
// learns of its successor's higher term from the first answer to its heartbeat, and a resumed
// follower whose election timer ran out while it was stopped campaigns at once. Two heartbeats
// and the longest campaign wait cover both; until then the servers still report the leader
// and the stream state they had before the pause, and the cluster looks caught up.
func (s *system) DetectionTime(*kit.Cluster) time.Duration {
	return 2*time.Second + 800*time.Millisecond
}
