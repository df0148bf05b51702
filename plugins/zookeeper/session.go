package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessionTimeout is the timeout the plugin's sessions ask for; the server clamps it to
// 2..20 ticks. The plugin never lets a session idle that long.
const sessionTimeout = 2 * time.Second

// session is a client session with one replica and no other: go-zookeeper would move a
// session with several servers to another one when its server goes away, and the plugin
// must know which replica it writes to and reads from.
type session struct {
	conn *zk.Conn
	addr string
}

// quietLogger keeps go-zookeeper from printing every connection event: a plugin's stdout and
// stderr belong to the plugin protocol and its log.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// openSession connects to the replica at addr and waits until the session is established.
// The replica must be serving: one that is not closes the connection, and go-zookeeper then
// retries after a second.
func openSession(ctx context.Context, addr string) (*session, error) {
	return connect(ctx, addr, nil)
}

// openLasting opens a session with the replica at addr that outlives its calls and ends, never
// to reconnect, when its connection drops: go-zookeeper would connect again to the restarted
// server, and a global session found expired there is replaced by a new one, a transaction
// of the plugin's in a later step.
func openLasting(ctx context.Context, addr string) (*session, error) {
	var conn atomic.Pointer[zk.Conn]
	s, err := connect(ctx, addr, func(ev zk.Event) {
		if c := conn.Load(); c != nil && ev.State == zk.StateDisconnected {
			go c.Close()
		}
	})
	if err == nil {
		conn.Store(s.conn)
	}
	return s, err
}

// connect opens a session with the replica at addr; onEvent, if not nil, sees every event of
// its connection.
func connect(ctx context.Context, addr string, onEvent zk.EventCallback) (*session, error) {
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false),
		zk.WithEventCallback(onEvent))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("connect to %s: connection closed", addr)
			}
			switch ev.State {
			case zk.StateHasSession:
				return &session{conn: conn, addr: addr}, nil
			case zk.StateExpired, zk.StateAuthFailed:
				conn.Close()
				return nil, fmt.Errorf("connect to %s: %s", addr, ev.State)
			}
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("connect to %s: %w", addr, ctx.Err())
		}
	}
}

// do runs one synchronous call, which go-zookeeper cannot cancel, so that ctx bounds it: when
// ctx ends first, the session is closed, which fails the call.
func (s *session) do(ctx context.Context, what string, call func() error) error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s on %s: %w", what, s.addr, err)
		}
		return nil
	case <-ctx.Done():
		s.conn.Close()
		<-done
		return fmt.Errorf("%s on %s: %w", what, s.addr, ctx.Err())
	}
}

// create creates path with data (persistent, open ACL) and waits for the result: on a leader,
// for the write to commit.
func (s *session) create(ctx context.Context, path string, data []byte) error {
	return s.do(ctx, "create "+path, func() error {
		_, err := s.conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
		return err
	})
}

// set sets the data of path, whatever its version, and waits for the result: on a leader, for
// the write to commit.
func (s *session) set(ctx context.Context, path string, data []byte) error {
	return s.do(ctx, "set "+path, func() error {
		_, err := s.conn.Set(path, data, -1)
		return err
	})
}

// delete deletes path, whatever its version, and waits for the result: on a leader, for the
// delete to commit.
func (s *session) delete(ctx context.Context, path string) error {
	return s.do(ctx, "delete "+path, func() error { return s.conn.Delete(path, -1) })
}

// sync makes the replica catch up with the leader, so that reads after it see every write the
// leader had committed when it answered.
func (s *session) sync(ctx context.Context, path string) error {
	return s.do(ctx, "sync "+path, func() error {
		_, err := s.conn.Sync(path)
		return err
	})
}

// readTop returns the data of every top-level znode but ZooKeeper's own subtree, by name.
func (s *session) readTop(ctx context.Context) (map[string]string, error) {
	data := map[string]string{}
	err := s.do(ctx, "read /", func() error {
		names, _, err := s.conn.Children("/")
		if err != nil {
			return err
		}
		for _, name := range names {
			if name == "zookeeper" {
				continue
			}
			b, _, err := s.conn.Get("/" + name)
			if errors.Is(err, zk.ErrNoNode) {
				continue // deleted meanwhile; nothing deletes, but it is not a read error
			}
			if err != nil {
				return fmt.Errorf("get /%s: %w", name, err)
			}
			data[name] = string(b)
		}
		return nil
	})
	return data, err
}

func (s *session) close() { s.conn.Close() }
