package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
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

// callTimeout bounds the driver's own waits (server selection, connecting), so that a poll of
// a member that is down fails fast and the poll is repeated, within the caller's deadline.
const callTimeout = 2 * time.Second

// conn is a direct connection to one start of one member.
type conn struct {
	name   string
	host   string
	client *mongo.Client
}

// dial connects to r directly: the connection talks to this one member whatever its state
// and never follows the replica set to its primary; to a single server the driver sends reads
// as primaryPreferred, so that a secondary serves them too. The driver connects lazily.
func dial(r *kit.Replica) (*conn, error) {
	host := r.Addr(0)
	client, err := mongo.Connect(options.Client().
		SetHosts([]string{host}).
		SetDirect(true).
		SetAppName("modulo").
		SetConnectTimeout(callTimeout).
		SetServerSelectionTimeout(callTimeout).
		SetHeartbeatInterval(500 * time.Millisecond). // the driver's minimum
		SetMaxPoolSize(4).
		// A retried write would be a write the schedule does not account for; polls repeat
		// themselves.
		SetRetryWrites(false).
		SetRetryReads(false).
		// Reads return what the member holds, majority-committed or not: that is what the
		// replicas are compared on.
		SetReadConcern(readconcern.Local()))
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", r.Name, err)
	}
	return &conn{name: r.Name, host: host, client: client}, nil
}

// close releases the connection pool; the server may be gone already.
func (c *conn) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_ = c.client.Disconnect(ctx)
}

// command runs cmd on the member's admin database and returns the reply.
func (c *conn) command(ctx context.Context, cmd bson.D) (bson.Raw, error) {
	raw, err := c.client.Database("admin").RunCommand(ctx, cmd).Raw()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.name, cmd[0].Key, err)
	}
	return raw, nil
}

// ping tells whether the member answers commands.
func (c *conn) ping(ctx context.Context) error {
	_, err := c.command(ctx, bson.D{{Key: "ping", Value: 1}})
	return err
}

// status is the member's replSetGetStatus reply.
func (c *conn) status(ctx context.Context) (replStatus, error) {
	raw, err := c.command(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}})
	if err != nil {
		return replStatus{}, err
	}
	s, err := parseStatus(raw, c.host)
	if err != nil {
		return s, fmt.Errorf("%s: %w", c.name, err)
	}
	return s, nil
}

// writable tells whether the member takes writes as primary: a newly elected primary is
// PRIMARY in replSetGetStatus while it still catches up and drains, before it takes any.
func (c *conn) writable(ctx context.Context) (bool, error) {
	raw, err := c.command(ctx, bson.D{{Key: "hello", Value: 1}})
	if err != nil {
		return false, err
	}
	v, err := raw.LookupErr("isWritablePrimary")
	if err != nil {
		return false, fmt.Errorf("%s: hello reply has no isWritablePrimary", c.name)
	}
	return v.Boolean(), nil
}

// initiate sends replSetInitiate with the given configuration.
func (c *conn) initiate(ctx context.Context, config bson.D) error {
	_, err := c.command(ctx, bson.D{{Key: "replSetInitiate", Value: config}})
	return err
}

// stepUp asks the member to run for election at once (replSetStepUp, in MongoDB since 3.4,
// which mongod itself sends to hand over on stepdown) and returns when the election is decided.
func (c *conn) stepUp(ctx context.Context) error {
	_, err := c.command(ctx, bson.D{{Key: "replSetStepUp", Value: 1}})
	return err
}

// delete deletes the document of key with w:majority, j:true: once it has committed.
func (c *conn) delete(ctx context.Context, key string) error {
	journal := true
	coll := c.client.Database(dataDB).Collection(dataColl, options.Collection().
		SetWriteConcern(&writeconcern.WriteConcern{W: "majority", Journal: &journal}))
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: key}}); err != nil {
		return fmt.Errorf("%s: delete %s: %w", c.name, key, err)
	}
	return nil
}

// notPrimaryCodes are the server error codes of a write refused because the member is not, or
// no longer, a writable primary: NotWritablePrimary, NotPrimaryNoSecondaryOk,
// InterruptedDueToReplStateChange, PrimarySteppedDown.
var notPrimaryCodes = []int{10107, 13435, 11602, 189}

// write upserts {_id: key, v: value} through the primary with w:majority, j:true: it returns
// once the write has committed, as the kit wants of a quorum system. A write that reaches only
// a minority never returns; the kit sends it without waiting and checks the oplogs instead.
func (c *conn) write(ctx context.Context, key, value string) error {
	journal := true
	coll := c.client.Database(dataDB).Collection(dataColl, options.Collection().
		SetWriteConcern(&writeconcern.WriteConcern{W: "majority", Journal: &journal}))
	_, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: key}},
		bson.D{{Key: "_id", Value: key}, {Key: "v", Value: value}}, options.Replace().SetUpsert(true))
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, code := range notPrimaryCodes {
			if se.HasErrorCode(code) {
				// The primary stepped down before the divergence was done with it: it lost its
				// majority longer than electionTimeoutMillis ago.
				return fmt.Errorf("%s: write %s: not primary (a larger election_timeout keeps a primary without majority longer): %w", c.name, key, err)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", c.name, key, err)
	}
	return nil
}

// oplogEntry finds the oplog entry of the write of value (unique to the write: an insert or a
// replacement whose document holds it) and returns its optime. Reading local.oplog.rs changes
// nothing that replicates.
func (c *conn) oplogEntry(ctx context.Context, value string) (opTime, bool, error) {
	var e opTime
	err := c.client.Database("local").Collection("oplog.rs").
		FindOne(ctx, bson.D{{Key: "ns", Value: dataDB + "." + dataColl}, {Key: "o.v", Value: value}}).Decode(&e)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return e, false, nil
	case err != nil:
		return e, false, fmt.Errorf("%s: oplog: %w", c.name, err)
	}
	return e, true, nil
}

// readAll returns every document the member holds as key -> value.
func (c *conn) readAll(ctx context.Context) (map[string]string, error) {
	cur, err := c.client.Database(dataDB).Collection(dataColl).Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", c.name, err)
	}
	var docs []struct {
		ID string `bson:"_id"`
		V  string `bson:"v"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("%s: read: %w", c.name, err)
	}
	data := make(map[string]string, len(docs))
	for _, d := range docs {
		data[d.ID] = d.V
	}
	return data, nil
}
