// Command modulo-plugin-redis is modulo's Redis plugin: it realises the DRMs S/S/R, S/L/R and
// S/CL/R on redis-server (Debian's 7.0 by default), and S/PL/R, S/CL/R with every crash a power
// loss, built from package kit, which runs the cluster and realises the models' links, failures
// and waits.
//
// Each replica is one redis-server at the address the kit gives it (its own network namespace
// and port 6379, or 127.0.0.1 at a port of the cluster's block) with a directory of its own
// (redis-<i>: redis.conf, log, pid file, and data/, the server's dir: its AOF and RDB files).
// The plugin asks the configured binary its version and writes only the configuration and
// commands that version accepts (package dialect: SLAVEOF
// before 5.0, no protected-mode before 3.2, no diskless sync before 2.8.18, the AOF in
// appendonlydir from 7.0, ...). Its waits observe the servers (INFO on both sides of a link,
// GET); the fixed waits wait_before_writes and wait_after_writes are off by default. It sends
// nothing that enters a replication stream but the schedule's writes. The configuration keys,
// their defaults and the per-DRM "paper" preset are those of Config.
package main

import "github.com/modulo-testing/modulo/cem/kit"

var about = kit.About{
	Name: "redis",
	DRMs: []string{"ssr", "slr", "snr", "sclr"},
	Declare: []kit.DRM{{
		Name: "splr", Title: "S/PL/R", Rules: "crash-link", System: "Redis", PowerLoss: true,
		Summary: "no quorum, power losses (SIGKILL, then the disk loses what was not synced) and link failures, online and offline (snapshot) resync",
		Ops:     1, Replicas: 2, OpsRange: []int{1, 2}, ReplicasRange: []int{2},
	}},
	PortsPerReplica: 1,
	Ports:           []int{6379},
	Releases:        kit.Releases{Path: "redis/<version>/redis-server", Key: "server"},
}

func main() { kit.Serve(about, &system{}) }
