// Command mongodb is modulo's MongoDB plugin (built as modulo-plugin-mongodb): it realises the
// DRM Q/C/M on a replica set of mongod processes, each at the address the kit gives it. It is built from package kit,
// as the etcd and ZooKeeper plugins are: it says how to start a member, write and read the
// schedule's documents, find the primary (calling an election when there is none), tell whether
// the members hold the same optimes and whether a write is durable in a member's oplog; the kit
// does the rest. No mongod comes with it: it uses the one the configuration, $MODULO_MONGOD or
// PATH names (MongoDB 4.4.2 or later).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

var about = kit.About{Name: "mongodb", DRMs: []string{"qcm"}, PortsPerReplica: 1, Ports: []int{27017}}

func main() { kit.Serve(about, &system{}) }

// system is how the kit runs and talks to one replica-set member. Its state is the cluster's:
// Prepare resets it.
type system struct {
	cfg       Config
	mongod    string
	conns     map[*kit.Replica]*conn // the connection to each member's current start
	initiated bool                   // replSetInitiate was sent
	stepUp    time.Time              // when the last election was called
}

func (s *system) Version(ctx context.Context) (string, error) {
	mongod, err := s.cfg.mongodPath()
	if err != nil {
		return "", err
	}
	out, err := kit.Output(ctx, mongod, "--version")
	if err != nil {
		return "", err
	}
	return parseVersion(out)
}

// Prepare finds mongod and forgets the previous cluster's connections.
func (s *system) Prepare(ctx context.Context, c *kit.Cluster) error {
	if n := len(c.Replicas); n > maxVoters {
		return fmt.Errorf("a replica set has at most %d voting members, and every Q/C/M replica votes; got %d replicas", maxVoters, n)
	}
	mongod, err := s.cfg.mongodPath()
	if err != nil {
		return err
	}
	s.closeAll(ctx)
	s.mongod, s.conns, s.initiated, s.stepUp = mongod, map[*kit.Replica]*conn{}, false, time.Time{}
	return nil
}

// Command starts a member on its own data; its connection is made anew for the new start.
func (s *system) Command(_ *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	db := filepath.Join(r.Dir, "db")
	if err := os.MkdirAll(db, 0o755); err != nil {
		return kit.Command{}, err
	}
	if old := s.conns[r]; old != nil {
		old.close(context.Background())
		delete(s.conns, r)
	}
	return kit.Command{Path: s.mongod, Args: s.cfg.mongodArgs(r.Host, r.Ports[0], db)}, nil
}

// conn returns the connection to r's current start.
func (s *system) conn(r *kit.Replica) (*conn, error) {
	if c := s.conns[r]; c != nil {
		return c, nil
	}
	c, err := dial(r)
	if err != nil {
		return nil, err
	}
	s.conns[r] = c
	return c, nil
}

func (s *system) closeAll(ctx context.Context) {
	for _, c := range s.conns {
		c.close(ctx)
	}
}

func (s *system) Ready(ctx context.Context, r *kit.Replica) (bool, string, error) {
	c, err := s.conn(r)
	if err != nil {
		return false, "", err
	}
	if err := c.ping(ctx); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

func (s *system) Write(ctx context.Context, r *kit.Replica, key, value string) error {
	c, err := s.conn(r)
	if err != nil {
		return err
	}
	return c.write(ctx, key, value)
}

// Delete deletes the document of key through the primary r, for break_realisation =
// "lose-write".
func (s *system) Delete(ctx context.Context, r *kit.Replica, key string) error {
	c, err := s.conn(r)
	if err != nil {
		return err
	}
	return c.delete(ctx, key)
}

func (s *system) ReadAll(ctx context.Context, r *kit.Replica) (map[string]string, error) {
	c, err := s.conn(r)
	if err != nil {
		return nil, err
	}
	return c.readAll(ctx)
}

// views asks each replica of rs for its replSetGetStatus; a replica that does not answer gets
// its error in its view.
func (s *system) views(ctx context.Context, rs []*kit.Replica) []view {
	vs := make([]view, len(rs))
	for i, r := range rs {
		vs[i].member = r.Index
		c, err := s.conn(r)
		if err == nil {
			vs[i].status, err = c.status(ctx)
		}
		vs[i].err = err
	}
	return vs
}

// primary returns the one PRIMARY among online, or nil with what it saw. With none, it calls an
// election on the freshest member (at most once per heartbeat interval: what makes one fail, a
// voter that has not yet heard of the candidate, changes at that pace), so that failovers
// happen when a schedule's recovery asks, not after electionTimeoutMillis. The first call of a
// cluster initiates the replica set.
func (s *system) primary(ctx context.Context, c *kit.Cluster, online []*kit.Replica) (*kit.Replica, []view, string, error) {
	if !s.initiated {
		first, err := s.conn(c.Replicas[0])
		if err != nil {
			return nil, nil, "", err
		}
		var hosts []string
		for _, r := range c.Replicas {
			hosts = append(hosts, r.Addr(0))
		}
		if err := first.initiate(ctx, initiateConfig(hosts, &s.cfg)); err != nil {
			return nil, nil, err.Error(), nil
		}
		s.initiated = true
		c.Record(c.Replicas[0], "replSetInitiate: %d members, every one votes with priority 1", len(c.Replicas))
	}
	vs := s.views(ctx, online)
	e := electionOf(vs)
	switch {
	case !e.ready:
		return nil, vs, e.why, nil
	case e.primaries == 1:
		return byIndex(online, e.primary), vs, "", nil
	case time.Since(s.stepUp) < s.cfg.HeartbeatInterval:
		return nil, vs, "an election was called less than a heartbeat ago", nil
	}
	r := byIndex(online, e.freshest)
	s.stepUp = time.Now()
	conn, err := s.conn(r)
	if err == nil {
		err = conn.stepUp(ctx)
	}
	c.Record(r, "replSetStepUp, as the freshest member: %s", errText(err))
	return nil, vs, "election called on " + r.Name, nil
}

func byIndex(rs []*kit.Replica, index int) *kit.Replica {
	for _, r := range rs {
		if r.Index == index {
			return r
		}
	}
	return nil
}

// errText is err's text, or "ok".
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (s *system) Leader(ctx context.Context, c *kit.Cluster, online []*kit.Replica) (*kit.Replica, string, error) {
	p, _, seen, err := s.primary(ctx, c, online)
	return p, seen, err
}

// CaughtUp: one writable primary, and every member has applied and made durable the same
// optime. Equal optimes are what can be observed of a resync; that the data behind them is
// equal too is what the oracle checks.
func (s *system) CaughtUp(ctx context.Context, c *kit.Cluster, online []*kit.Replica) (bool, string, error) {
	p, vs, seen, err := s.primary(ctx, c, online)
	if p == nil {
		return false, seen, err
	}
	if ok, _, why := inSync(vs, p.Index); !ok {
		return false, why, nil
	}
	conn, err := s.conn(p)
	if err != nil {
		return false, "", err
	}
	if w, err := conn.writable(ctx); err != nil || !w {
		return false, p.Name + " is PRIMARY but does not take writes yet", nil
	}
	return true, "", nil
}

// Holds tells whether r has the write in its oplog and has made it durable: a divergence
// SIGKILLs members right after the writes they must keep, so applied is not enough.
func (s *system) Holds(ctx context.Context, r *kit.Replica, key, value string) (bool, string, error) {
	c, err := s.conn(r)
	if err != nil {
		return false, "", err
	}
	at, found, err := c.oplogEntry(ctx, value)
	switch {
	case err != nil:
		return false, err.Error(), nil
	case !found:
		return false, "no oplog entry for " + key, nil
	}
	st, err := c.status(ctx)
	if err != nil {
		return false, err.Error(), nil
	}
	ok, why := holdDurably([]view{{member: r.Index, status: st}}, at)
	return ok, why, nil
}

// Logged is Holds: a write that cannot commit is in r's oplog as a committed one is.
func (s *system) Logged(ctx context.Context, r *kit.Replica, key, value string) (bool, error) {
	ok, _, err := s.Holds(ctx, r, key, value)
	return ok, err
}
