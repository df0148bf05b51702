// Command redis is modulo's Redis plugin: it realises the DRMs S/S/R, S/L/R and S/CL/R on
// redis-server (Debian's 7.0 by default), driven by modulo over the plugin protocol of package
// cem.
//
// Each replica is one redis-server on 127.0.0.1:BasePort+i with a directory of its own
// (replica-i: redis.conf, data, redis-server.log, pid file), in a process group of its own.
// The plugin asks the configured binary its version and writes only the configuration and
// commands that version accepts (package dialect: SLAVEOF before 5.0, no protected-mode before
// 3.2, no diskless sync before 2.8.18, the AOF in appendonlydir from 7.0, ...).
//
// The plugin keeps the model's abstract state, so each step knows the links and who is online,
// suspended or crashed; realise.go says how each kind of transition becomes signals, REPLICAOF
// commands, writes and restarts, and every wait observes the servers (INFO, GET) rather than
// sleeping; the one fixed wait is failure_wait, off by default. Read names every key by its
// database ("db0/k1.1.1") and puts each replica in the group of its replication tree, since
// Redis replicates only along links. The configuration keys, their defaults and the "paper"
// preset are those of Config.
package main

import "github.com/modulo-testing/modulo/cem"

func main() { cem.Serve(New()) }
