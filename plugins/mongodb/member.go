package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modulo-testing/modulo/cem/proc"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// The data the schedules write: one document {_id: key, v: value} per write.
const (
	dataDB   = "modulo"
	dataColl = "kv"
)

// processName names each member's mongod log and pid files in its directory.
const processName = "mongod"

// callTimeout bounds the driver's own waits (server selection, connecting), so that a poll of
// a member that is down fails fast and the poll is repeated, within the caller's deadline.
const callTimeout = 2 * time.Second

// member is one mongod of the replica set: member index i of the configuration, on
// 127.0.0.1:port, with its data in dir/db.
type member struct {
	index  int
	port   int
	dir    string
	proc   *proc.Process // nil while down
	client *mongo.Client
}

func (m *member) String() string { return "member " + strconv.Itoa(m.index) }

// host is the member's address as the replica-set configuration names it.
func (m *member) host() string { return hostOf(m.port) }

func (m *member) dbPath() string { return filepath.Join(m.dir, "db") }

// start starts the member's mongod on its own data and a direct connection to it. The driver
// connects lazily: the caller waits for the member to answer.
func (m *member) start(mongod string, cfg *Config) error {
	if err := os.MkdirAll(m.dbPath(), 0o755); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	p, err := proc.StartProcess(proc.ProcessSpec{
		Name: processName, Dir: m.dir, Path: mongod, Args: cfg.mongodArgs(m.port, m.dbPath()),
	})
	if err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	m.proc = p
	// A direct connection talks to this one member whatever its state and never follows the
	// replica set to its primary; to a single server the driver sends reads as
	// primaryPreferred, so that they are served by a secondary too.
	client, err := mongo.Connect(options.Client().
		SetHosts([]string{m.host()}).
		SetDirect(true).
		SetAppName("modulo").
		SetConnectTimeout(callTimeout).
		SetServerSelectionTimeout(callTimeout).
		SetHeartbeatInterval(500 * time.Millisecond). // the driver's minimum
		SetMaxPoolSize(4).
		// A retried write would be a write the plan does not account for; polls repeat
		// themselves.
		SetRetryWrites(false).
		SetRetryReads(false).
		// Reads return what the member holds, majority-committed or not: that is what the
		// replicas are compared on.
		SetReadConcern(readconcern.Local()))
	if err != nil {
		return fmt.Errorf("%s: connect: %w", m, err)
	}
	m.client = client
	return nil
}

// kill SIGKILLs the member's process group and drops its connection.
func (m *member) kill(ctx context.Context) error {
	var errs []error
	if m.client != nil {
		// The server is gone either way; Disconnect only releases the pool.
		dctx, cancel := context.WithTimeout(ctx, callTimeout)
		_ = m.client.Disconnect(dctx)
		cancel()
		m.client = nil
	}
	if m.proc != nil {
		if err := m.proc.Kill(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
		}
		m.proc = nil
	}
	return errors.Join(errs...)
}

// exitedError says that a member's mongod exited on its own: a crash of the system under test,
// not something a wait can outlast.
type exitedError struct {
	member int
	pid    int
	log    string
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("member %d's mongod (pid %d) exited; see %s", e.member, e.pid, e.log)
}

// exited returns an *exitedError when the member's mongod has exited on its own.
func (m *member) exited() error {
	if m.proc != nil && !m.proc.Running() {
		return &exitedError{member: m.index, pid: m.proc.Pid, log: m.proc.LogPath}
	}
	return nil
}

// command runs cmd on the member's admin database and returns the reply.
func (m *member) command(ctx context.Context, cmd bson.D) (bson.Raw, error) {
	if err := m.exited(); err != nil {
		return nil, err
	}
	if m.client == nil {
		return nil, fmt.Errorf("%s is down", m)
	}
	raw, err := m.client.Database("admin").RunCommand(ctx, cmd).Raw()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", m, cmd[0].Key, err)
	}
	return raw, nil
}

// ping tells whether the member answers commands.
func (m *member) ping(ctx context.Context) error {
	_, err := m.command(ctx, bson.D{{Key: "ping", Value: 1}})
	return err
}

// status is the member's replSetGetStatus reply.
func (m *member) status(ctx context.Context) (replStatus, error) {
	raw, err := m.command(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}})
	if err != nil {
		return replStatus{}, err
	}
	s, err := parseStatus(raw, m.host())
	if err != nil {
		return s, fmt.Errorf("%s: %w", m, err)
	}
	return s, nil
}

// writable tells whether the member takes writes as primary: a newly elected primary is
// PRIMARY in replSetGetStatus while it still catches up and drains, before it takes any.
func (m *member) writable(ctx context.Context) (bool, error) {
	raw, err := m.command(ctx, bson.D{{Key: "hello", Value: 1}})
	if err != nil {
		return false, err
	}
	v, err := raw.LookupErr("isWritablePrimary")
	if err != nil {
		return false, fmt.Errorf("%s: hello reply has no isWritablePrimary", m)
	}
	return v.Boolean(), nil
}

// initiate sends replSetInitiate with the given configuration.
func (m *member) initiate(ctx context.Context, config bson.D) error {
	_, err := m.command(ctx, bson.D{{Key: "replSetInitiate", Value: config}})
	return err
}

// stepUp asks the member to run for election at once (replSetStepUp, in MongoDB since 3.4,
// which mongod itself sends to hand over on stepdown) and returns when the election is decided.
func (m *member) stepUp(ctx context.Context) error {
	_, err := m.command(ctx, bson.D{{Key: "replSetStepUp", Value: 1}})
	return err
}

// notPrimaryCodes are the server error codes of a write refused because the member is not, or
// no longer, a writable primary: NotWritablePrimary, NotPrimaryNoSecondaryOk,
// InterruptedDueToReplStateChange, PrimarySteppedDown.
var notPrimaryCodes = []int{10107, 13435, 11602, 189}

// errNotPrimary is returned by write when the member refused the write as not primary.
var errNotPrimary = errors.New("not primary")

// write upserts {_id: key, v: value} with write concern w:1, j:true: acknowledged by this
// member alone (a divergence needs writes that only a minority holds) once in its journal (the
// step ends with a SIGKILL that must not take the write with it).
func (m *member) write(ctx context.Context, key, value string) error {
	if m.client == nil {
		return fmt.Errorf("%s is down", m)
	}
	journal := true
	coll := m.client.Database(dataDB).Collection(dataColl, options.Collection().
		SetWriteConcern(&writeconcern.WriteConcern{W: 1, Journal: &journal}))
	_, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: key}},
		bson.D{{Key: "_id", Value: key}, {Key: "v", Value: value}}, options.Replace().SetUpsert(true))
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, c := range notPrimaryCodes {
			if se.HasErrorCode(c) {
				return fmt.Errorf("%s: write %s: %w: %w", m, key, errNotPrimary, err)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", m, key, err)
	}
	return nil
}

// readAll returns every document the member holds as key -> value.
func (m *member) readAll(ctx context.Context) (map[string]string, error) {
	if err := m.exited(); err != nil {
		return nil, err
	}
	if m.client == nil {
		return nil, fmt.Errorf("%s is down", m)
	}
	cur, err := m.client.Database(dataDB).Collection(dataColl).Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", m, err)
	}
	var docs []struct {
		ID string `bson:"_id"`
		V  string `bson:"v"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("%s: read: %w", m, err)
	}
	data := make(map[string]string, len(docs))
	for _, d := range docs {
		data[d.ID] = d.V
	}
	return data, nil
}
