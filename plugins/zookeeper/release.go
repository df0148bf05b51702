package main

import (
	"fmt"
	"strconv"
	"strings"
)

// release is a ZooKeeper release's major and minor number, which decide what its servers can
// be asked: 3.4 has no local sessions and no snapshot size factor (3.5 added both), no
// zk_peer_state in mntr and no digests of its data tree (3.6).
type release struct{ major, minor int }

// parseRelease reads the release of a version such as "3.9.5" or "3.8.0-1".
func parseRelease(version string) (release, error) {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return release{}, fmt.Errorf("ZooKeeper version %q is not of the form major.minor.patch", version)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return release{}, fmt.Errorf("ZooKeeper version %q is not of the form major.minor.patch", version)
	}
	return release{major, minor}, nil
}

func (r release) atLeast(major, minor int) bool {
	return r.major > major || r.major == major && r.minor >= minor
}

// resolve fits the configuration to the release the jars are of: unset local_sessions and
// init_limit become what suits the release, and a key the release cannot honour is an error
// naming it.
func (c *Config) resolve(version string) error {
	rel, err := parseRelease(version)
	if err != nil {
		return err
	}
	modern := rel.atLeast(3, 5)
	if c.LocalSessions == nil {
		c.LocalSessions = &modern
	}
	if c.InitLimit == nil {
		// A 3.4 follower that finds its new leader not listening yet sleeps a fixed second
		// before it tries again (Learner.connectToLeader; 3.5 made it
		// leaderConnectDelayDuringRetryMs); a leader that waits only 1 s for its quorum then
		// gives up and a new election starts, again and again (steps of 5 to 20 s measured).
		limit := 10
		if !modern {
			limit = 30
		}
		c.InitLimit = &limit
	}
	switch {
	case *c.LocalSessions && !modern:
		return fmt.Errorf("local_sessions: ZooKeeper %s has none (3.5 added them); leave it unset or false", version)
	case c.SnapshotSizeFactor != nil && !modern:
		return fmt.Errorf("snapshot_size_factor: ZooKeeper %s has none (3.5 added it; 3.4 serves DIFFs from its in-memory log only)", version)
	}
	return nil
}
