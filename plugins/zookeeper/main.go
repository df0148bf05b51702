// Command modulo-plugin-zookeeper is modulo's plugin for ZooKeeper: it realises the Q/C/Z DRM
// on an ensemble of ZooKeeper servers, each a JVM of its own at an address of its own on
// ZooKeeper's own ports (the kit's network namespaces), or on loopback at ports of 127.0.0.1. It is built
// from package kit: it says how to start a server, write and read znodes through a session with
// one server, find the leader and tell whether the ensemble has caught up (four-letter words),
// and whether a write is in a server's transaction log on disk; the kit does the rest.
//
// Build it as modulo-plugin-zookeeper (go build -o bin/modulo-plugin-zookeeper
// ./plugins/zookeeper); modulo starts it, and it refuses to run by hand.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem/kit"
)

// about: each replica has a client, a quorum (follower to leader) and an election port.
// ZooKeeper's own ports, where each replica has an address of its own (network =
// "namespaces").
var about = kit.About{Name: "zookeeper", DRMs: []string{"qcz", "qpz", "qnz", "qcnz"}, PortsPerReplica: 3, Ports: []int{2181, 2888, 3888},
	Releases: kit.Releases{Path: "zookeeper/<version>", Key: "jar_dir"}}

func main() { kit.Serve(about, &system{}) }

// The interfaces the kit finds by assertion: a method that drifted from its interface would
// quietly turn a feature off.
var (
	_ kit.Configurable = (*system)(nil)
	_ kit.Preparer     = (*system)(nil)
	_ kit.Quorum       = (*system)(nil)
	_ kit.LogReader    = (*system)(nil)
	_ kit.Holder       = (*system)(nil)
	_ kit.Deleter      = (*system)(nil)
	_ kit.DiskState    = (*system)(nil)
	_ kit.Observer     = (*system)(nil)
	_ kit.SyncLogger   = (*system)(nil)
	_ kit.SelfChecker  = (*system)(nil)
	_ kit.Seeder       = (*system)(nil)
	_ kit.Updater      = (*system)(nil)
	_ kit.Presetter    = (*system)(nil)
	_ kit.Isolation    = (*system)(nil)
)

// system is how the kit runs and talks to one ZooKeeper server.
type system struct {
	cfg       Config
	in        *install // found by Prepare
	log4jFile string   // the cluster's log4j.properties
	cdsFlags  []string // start servers with the AppCDS archive
	// lasting is, where sessions are global (local_sessions off), the session with the leader
	// that Leader opened for a divergence's writes: its createSession commits while every
	// online server runs, so that a write that reaches only a minority can still be sent.
	lasting *session
	// decode is the kit's decoder of the plugin's section, kept from Configure for Prepare,
	// which resolves the preset for the cluster's DRM.
	decode func(any) error
}

// Configure checks the section; the settings of its preset for the cluster's DRM are applied
// by Prepare.
func (s *system) Configure(decode func(any) error) (err error) {
	s.decode = decode
	s.cfg, err = parseConfig(decode, "")
	return err
}

// Version reads ZooKeeper's version from zookeeper.jar, without starting a JVM.
func (s *system) Version(context.Context) (string, error) {
	in, err := findInstall(&s.cfg)
	if err != nil {
		return "", err
	}
	return in.version, nil
}

// StateFiles is a server's dataDir: myid, its epochs, its snapshots and transaction logs
// (preallocated, sparse). zoo.cfg is written anew by every Prepare.
func (s *system) StateFiles(_ *kit.Cluster, r *kit.Replica) []string {
	return []string{filepath.Base(dataDir(r))}
}

// Prepare applies the preset for the cluster's DRM, finds java and the jars, writes the
// cluster's log4j.properties, makes the AppCDS archive when there is none, and writes every
// server's zoo.cfg and myid.
func (s *system) Prepare(ctx context.Context, c *kit.Cluster) (err error) {
	if s.lasting != nil { // an earlier cluster's, whose servers may have had these ports
		s.lasting.close()
		s.lasting = nil
	}
	if s.cfg, err = parseConfig(s.decode, c.Spec.DRM); err != nil {
		return err
	}
	in, err := findInstall(&s.cfg)
	if err != nil {
		return err
	}
	s.in = in
	if err := s.cfg.resolve(in.version); err != nil {
		return err
	}
	s.log4jFile = filepath.Join(c.Spec.Dir, "log4j.properties")
	if err := os.WriteFile(s.log4jFile, []byte(log4jProperties), 0o644); err != nil {
		return err
	}
	s.cdsFlags = s.prepareCDS(ctx, c)
	for _, r := range c.Replicas {
		if err := writeServerFiles(&s.cfg, r, c.Replicas); err != nil {
			return err
		}
	}
	return nil
}

// Command runs the server from its zoo.cfg; on a restart it recovers from its data directory.
func (s *system) Command(_ *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	return kit.Command{Path: s.in.java, Args: s.javaArgs(r, s.cdsFlags)}, nil
}

// Write creates the znode "/"+key through a session with r alone: through the leader, the
// answer comes once the write has committed. With local sessions (the default) the session
// itself writes no transaction, so a write that reaches only a minority needs nothing else
// to commit before it is sent.
func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	return s.writeThrough(ctx, r, func(sess *session) error { return sess.create(ctx, "/"+key, []byte(value)) })
}

// Update sets the znode "/"+key, which exists (an initial znode), to value through a session
// with r alone: one setData transaction, for workload = "update".
func (s *system) Update(ctx context.Context, r *kit.Replica, key, value string) error {
	return s.writeThrough(ctx, r, func(sess *session) error { return sess.set(ctx, "/"+key, []byte(value)) })
}

// writeThrough runs a write on the divergence's lasting session when it is r's (global
// sessions), else on a session with r opened for it.
func (s *system) writeThrough(ctx context.Context, r *kit.Replica, write func(*session) error) error {
	if l := s.lasting; l != nil && l.addr == r.Addr(0) {
		return write(l)
	}
	sess, err := openSession(ctx, r.Addr(0))
	if err != nil {
		return err
	}
	defer sess.close()
	return write(sess)
}

// Presets lets the kit apply a preset's settings of its own keys (the paper's workload).
func (s *system) Presets() kit.Presets { return presets }

// InitialData is initial_znodes znodes /init.<i>, each value the schedule's prefix padded to
// initial_value_bytes.
func (s *system) InitialData(c *kit.Cluster) []kit.KeyValue {
	var data []kit.KeyValue
	for i := range s.cfg.InitialZnodes {
		key := "init." + strconv.Itoa(i)
		value := c.Spec.ScheduleID + ":" + key + ":"
		if pad := s.cfg.InitialValueBytes - len(value); pad > 0 {
			value += strings.Repeat(".", pad)
		}
		data = append(data, kit.KeyValue{Key: key, Value: value})
	}
	return data
}

// Delete deletes the znode "/"+key through the leader r, for break_realisation = "lose-write".
func (s *system) Delete(ctx context.Context, r *kit.Replica, key string) error {
	sess, err := openSession(ctx, r.Addr(0))
	if err != nil {
		return err
	}
	defer sess.close()
	return sess.delete(ctx, "/"+key)
}

// ReadAll reads every top-level znode but ZooKeeper's own, through a session with r alone,
// after a sync.
func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	sess, err := openSession(ctx, r.Addr(0))
	if err != nil {
		return nil, err
	}
	defer sess.close()
	if err := sess.sync(ctx, "/"); err != nil {
		return nil, err
	}
	return sess.readTop(ctx)
}

// Logged tells whether r's transaction log on disk holds the create of key with value, or its
// setData to value, committed or not: what a restart recovers.
func (s *system) Logged(_ context.Context, r *kit.Replica, key, value string) (bool, error) {
	return findWrite(dataDir(r), "/"+key, []byte(value))
}

// Holds confirms a committed write in r's log too: the kit crashes every server at the end of
// a divergence, and what counts is what r's disk holds, not its data tree in memory.
func (s *system) Holds(ctx context.Context, r *kit.Replica, key, value string) (bool, string, error) {
	ok, err := s.Logged(ctx, r, key, value)
	if ok || err != nil {
		return ok, "", err
	}
	return false, fmt.Sprintf("no write of /%s = %q in its txn log", key, value), nil
}
