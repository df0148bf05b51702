package main

import "go.mongodb.org/mongo-driver/v2/bson"

// replSetName is the replica set's name (--replSet and the configuration's _id).
const replSetName = "modulo"

// maxVoters is the most voting members a replica set may have; the model's quorum counts every
// replica, so every member votes.
const maxVoters = 7

// initiateConfig is the replSetInitiate document for members at hosts, each "host:port" as
// replSetGetStatus will name it (see
// https://www.mongodb.com/docs/manual/reference/replica-configuration/). The choices, and why:
//
//   - Every member votes and has priority 1. The model's quorum is any n/2+1 replicas, so any
//     majority must be able to elect any of its members; equal priorities also rule out
//     priority takeovers, which would be failovers no schedule asked for.
//   - electionTimeoutMillis (default 10 s) is long on purpose. The plugin calls every election
//     itself with replSetStepUp, so it never waits for this timeout; what the timeout does
//     decide is how long a primary that has lost its majority goes on accepting w:1 writes
//     before it steps down (checkMemberTimeouts), and a divergence writes to exactly such a
//     primary.
//   - catchUpTakeoverDelayMillis -1 turns catch-up takeovers off: the plugin elects the
//     freshest member, and any later takeover would be a failover the schedule did not ask for.
//   - catchUpTimeoutMillis (default 2 s) bounds how long a new primary fetches newer writes
//     from the others instead of MongoDB's unbounded default; as the plugin elects the
//     freshest member there is nothing to fetch, so the bound only guards against stalls.
//   - heartbeatIntervalMillis (default 500 ms, MongoDB's is 2 s) is how soon a restarted member
//     learns who is primary and the primary learns it is back, which is on every convergence's
//     path.
//   - chainingAllowed false makes secondaries replicate from the primary, so that killing a
//     secondary during a divergence does not cut off another one. MongoDB 5.0.2 and later
//     ignore it unless enableOverrideClusterChainingSetting is set; the plugin's waits observe
//     optimes and do not depend on it.
func initiateConfig(hosts []string, c *Config) bson.D {
	members := bson.A{}
	for i, host := range hosts {
		members = append(members, bson.D{
			{Key: "_id", Value: int32(i)},
			{Key: "host", Value: host},
			{Key: "priority", Value: 1.0},
			{Key: "votes", Value: int32(1)},
		})
	}
	return bson.D{
		{Key: "_id", Value: replSetName},
		{Key: "protocolVersion", Value: int64(1)},
		{Key: "members", Value: members},
		{Key: "settings", Value: bson.D{
			{Key: "chainingAllowed", Value: false},
			{Key: "heartbeatIntervalMillis", Value: int32(c.HeartbeatInterval.Milliseconds())},
			{Key: "electionTimeoutMillis", Value: int32(c.ElectionTimeout.Milliseconds())},
			{Key: "catchUpTimeoutMillis", Value: int32(c.CatchUpTimeout.Milliseconds())},
			{Key: "catchUpTakeoverDelayMillis", Value: int32(-1)},
		}},
	}
}
