package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

// ackRequest is the last acknowledgement request of the wait for one replica's link.
type ackRequest struct {
	target int64 // the root's offset after the request, or -1
	asked  time.Time
}

// ackRequestInterval spaces the acknowledgement requests of one wait.
const ackRequestInterval = 200 * time.Millisecond

// ackWait bounds how long WAIT blocks in requestAcks; the acknowledgements it asks for come
// back within a millisecond or two when the tree is healthy, and the kit polls on anyway.
const ackWait = 20 * time.Millisecond

// ackChannel is the Pub/Sub channel of requestAcks's messages; nobody subscribes to it.
const ackChannel = "modulo:ack"

// InSync tells whether r is in sync with its source, seen from both sides: r has its link up,
// no sync in progress and the source's offset; the source lists r online and has its
// acknowledgement of that offset (a replica resumed after SIGSTOP still reports its link up
// before noticing that the source dropped it); neither server loads data or runs a snapshot or
// an AOF rewrite.
//
// Replicas acknowledge on their own once a second. Rather than wait for that, InSync asks the
// tree's root for acknowledgements (requestAcks, 3.0 and later) and then also accepts an
// acknowledgement of the root's offset right after its request: every write came before it,
// and the GETACK that follows it is never part of an acknowledgement.
func (s *system) InSync(ctx context.Context, r, src *kit.Replica) (bool, string, error) {
	ri, err := s.info(ctx, r, "replication", "persistence")
	if err != nil {
		return false, "", err
	}
	si, err := s.info(ctx, src, "replication", "persistence")
	if err != nil {
		return false, "", err
	}
	if ri["role"] != "slave" || ri["master_port"] != strconv.Itoa(src.Ports[0]) {
		return false, "role " + ri["role"] + " of port " + ri["master_port"], nil
	}
	if ri["master_link_status"] != "up" || ri["master_sync_in_progress"] != "0" {
		return false, "link " + ri["master_link_status"] + ", sync in progress " + ri["master_sync_in_progress"], nil
	}
	for who, info := range map[string]map[string]string{"replica": ri, "source": si} {
		if ok, busy := idle(info); !ok {
			return false, who + " busy: " + busy, nil
		}
	}
	srcOff, _ := strconv.ParseInt(si["master_repl_offset"], 10, 64)
	repOff, _ := strconv.ParseInt(ri["slave_repl_offset"], 10, 64)
	if repOff != srcOff {
		return false, fmt.Sprintf("offset %d vs %d", repOff, srcOff), nil
	}
	view, listed := replicaView(si, r.Ports[0])
	req := s.acks[r]
	switch {
	case !listed:
		return false, "the source does not list the replica", nil
	case view.state != "online":
		return false, "the source sees it " + view.state, nil
	case view.offset == srcOff || req != nil && req.target >= 0 && view.offset >= req.target:
		return true, "", nil
	}
	if req == nil || time.Since(req.asked) >= ackRequestInterval {
		target, err := s.requestAcks(ctx, src)
		if err != nil {
			return false, "", err
		}
		s.acks[r] = &ackRequest{target: target, asked: time.Now()}
	}
	return false, fmt.Sprintf("the source has its acknowledgement of offset %d of %d", view.offset, srcOff), nil
}

// requestAcks makes the root of src's tree ask every replica below it for an acknowledgement
// now: PUBLISH puts a message (no data) into the replication stream, and a WAIT for it makes
// the root send REPLCONF GETACK, which the replicas pass down the tree. It returns the root's
// offset after the PUBLISH, which the acknowledgements it triggers reach, or -1 when the root
// cannot be asked (it is suspended, or its version has no WAIT).
func (s *system) requestAcks(ctx context.Context, src *kit.Replica) (int64, error) {
	root := s.c.Root(src)
	if root.Suspended() || !s.dialect.Wait {
		return -1, nil
	}
	// WAIT counts acknowledgements of the connection's own last write: one connection.
	conn := s.client(root, 0).Conn()
	defer conn.Close()
	if err := conn.Publish(ctx, ackChannel, "ack").Err(); err != nil {
		return -1, fmt.Errorf("%s: PUBLISH: %w", root.Name, err)
	}
	text, err := conn.Info(ctx, "replication").Result()
	if err != nil {
		return -1, fmt.Errorf("%s: INFO: %w", root.Name, err)
	}
	target := int64(-1)
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			target, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if err := conn.Wait(ctx, 1, ackWait).Err(); err != nil {
		return -1, fmt.Errorf("%s: WAIT: %w", root.Name, err)
	}
	return target, nil
}

// replicaEntry is one "slaveN:ip=...,port=...,state=...,offset=...,lag=..." line of a
// source's INFO replication: the source's own view of a replica.
type replicaEntry struct {
	state  string
	offset int64
}

// replicaView finds the source's view of the replica listening on port.
func replicaView(info map[string]string, port int) (replicaEntry, bool) {
	for k, v := range info {
		if !strings.HasPrefix(k, "slave") || !strings.Contains(v, "state=") {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(f, "="); ok {
				fields[a] = b
			}
		}
		if fields["port"] != strconv.Itoa(port) {
			continue
		}
		off, err := strconv.ParseInt(fields["offset"], 10, 64)
		if err != nil {
			continue
		}
		return replicaEntry{state: fields["state"], offset: off}, true
	}
	return replicaEntry{}, false
}
