package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

// ackRequestInterval spaces the acknowledgement requests to one replica.
const ackRequestInterval = 200 * time.Millisecond

// InSync tells whether r is in sync with its source, seen from both sides: r has its link up,
// no sync in progress and the source's offset; the source lists r online and has its
// acknowledgement of that offset (a replica resumed after SIGSTOP still reports its link up
// before noticing that the source dropped it); neither server loads data or runs a snapshot or
// an AOF rewrite.
//
// Replicas acknowledge on their own once a second. Rather than wait for that, InSync asks r
// itself for an acknowledgement (requestAck). It sends nothing to the source: whatever a
// client sends a master may end up in the replication stream, which the plugin must leave to
// the schedule's writes.
func (s *system) InSync(ctx context.Context, r, src *kit.Replica) (bool, string, error) {
	ri, err := s.info(ctx, r, "replication", "persistence")
	if err != nil {
		return false, "", err
	}
	si, err := s.info(ctx, src, "replication", "persistence")
	if err != nil {
		return false, "", err
	}
	if ri["role"] != "slave" || ri["master_host"] != src.Host || ri["master_port"] != strconv.Itoa(src.Ports[0]) {
		return false, "role " + ri["role"] + " of " + ri["master_host"] + ":" + ri["master_port"], nil
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
	view, listed := replicaView(si, r)
	switch {
	case !listed:
		return false, "the source does not list the replica", nil
	case view.state != "online":
		return false, "the source sees it " + view.state, nil
	case view.offset == srcOff:
		return true, "", nil
	}
	if s.dialect.GetAck && time.Since(s.acks[r]) >= ackRequestInterval {
		if err := requestAck(ctx, r); err != nil {
			return false, "", err
		}
		s.acks[r] = time.Now()
		// The acknowledgement comes back within a millisecond or two on a healthy link: look
		// for it briefly, as WAIT would block for it, rather than at the kit's next poll.
		if ok, err := s.awaitAck(ctx, r, src, srcOff); ok || err != nil {
			return ok, "", err
		}
	}
	return false, fmt.Sprintf("the source has its acknowledgement of offset %d of %d", view.offset, srcOff), nil
}

// ackWait bounds how long InSync looks for the acknowledgement it asked for.
const ackWait = 20 * time.Millisecond

// awaitAck polls src's view of replica r, for up to ackWait, until it acknowledges offset.
func (s *system) awaitAck(ctx context.Context, r, src *kit.Replica, offset int64) (bool, error) {
	deadline := time.Now().Add(ackWait)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		si, err := s.info(ctx, src, "replication")
		if err != nil {
			return false, err
		}
		if view, listed := replicaView(si, r); listed && view.state == "online" && view.offset == offset {
			return true, nil
		}
	}
	return false, nil
}

// requestAck makes replica r acknowledge its offset to its source now. It sends r the
// REPLCONF GETACK that a master sends its replicas: r answers it only by sending its source
// REPLCONF ACK on their link, as it does once a second anyway, and the client gets no reply
// (replconfCommand in replication.c, 3.0 to 7.0). Nothing enters any replication stream,
// nothing is stored, and no database is selected anywhere.
func requestAck(ctx context.Context, r *kit.Replica) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", r.Addr(0))
	if err != nil {
		return fmt.Errorf("%s: REPLCONF GETACK: %w", r.Name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("REPLCONF GETACK *\r\n")); err != nil {
		return fmt.Errorf("%s: REPLCONF GETACK: %w", r.Name, err)
	}
	return nil
}

// Isolated tells whether r, cut off from its source by a partition, says so: its link is down
// (repl_timeout after the last byte it had from the source).
func (s *system) Isolated(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (bool, string, error) {
	ri, err := s.info(ctx, r, "replication")
	if err != nil {
		return false, "", err
	}
	return ri["master_link_status"] == "down", "master_link_status " + ri["master_link_status"], nil
}

// replicaEntry is one "slaveN:ip=...,port=...,state=...,offset=...,lag=..." line of a
// source's INFO replication: the source's own view of a replica.
type replicaEntry struct {
	state  string
	offset int64
}

// replicaView finds the source's view of replica r, by the address it listens on.
func replicaView(info map[string]string, r *kit.Replica) (replicaEntry, bool) {
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
		if fields["ip"] != r.Host || fields["port"] != strconv.Itoa(r.Ports[0]) {
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
