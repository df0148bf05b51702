package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
)

// observeSQL reads, in one row, whether the server is a standby, its position in the WAL (the
// last replayed record on a standby, the current insert point on a primary) and the timeline
// it is on: the timeline of its current WAL file on a primary, which changes at promotion
// (pg_control_checkpoint's changes only at the next checkpoint), and on a standby the timeline
// its WAL receiver streams, or, with none running, its last restartpoint's.
const observeSQL = `SELECT pg_is_in_recovery(),
	CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
	CASE WHEN pg_is_in_recovery()
		THEN coalesce((SELECT received_tli FROM pg_stat_wal_receiver), (SELECT timeline_id FROM pg_control_checkpoint()))
		ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END`

// Observe says whether r is a primary or a standby, its timeline (the epoch a promotion
// starts) and its position (LSN): what tells two histories apart, and what pg_rewind compares;
// after a step that relinked r, also how (the field "rewind": pg_rewind's answer, such as
// "pg_rewind: no rewind required", or the fresh base backup taken in its place).
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	out, err := s.sql(ctx, r, observeSQL)
	fields := map[string]string{"psql": firstLine(fmt.Sprint(err))}
	if err == nil {
		fields = parseObservation(out)
	}
	if rewind, ok := s.rewind[r.Index]; ok {
		fields["rewind"] = rewind
		delete(s.rewind, r.Index)
	}
	return fields, nil
}

// parseObservation reads observeSQL's row: "t\t0/4008A98\t2".
func parseObservation(row string) map[string]string {
	f := strings.Split(strings.TrimSpace(row), "\t")
	if len(f) != 3 {
		return map[string]string{"psql": "unexpected row " + strconv.Quote(row)}
	}
	role := "primary"
	if f[0] == "t" {
		role = "standby"
	}
	return map[string]string{cem.ObserveRole: role, cem.ObserveEpoch: "timeline " + f[2], cem.ObservePosition: f[1]}
}

// SyncLines are the lines a standby's server logs as its WAL receiver meets its source: the
// start of streaming, and the WAL it refuses. A standby whose history differs from its
// source's refuses it again and again and never gets past it: "record with incorrect
// prev-link" (the source's records do not continue the standby's), "not in this server's
// history" (the source never had the standby's position), "forked off ... before current
// recovery point" (the source's timeline left the standby's history before the standby's
// position), or "invalid record length" at the point where the source's WAL should continue
// the standby's: PostgreSQL's own word that its replication is broken. The last also ends
// every recovery's local WAL, once; the kit believes it only said again and again while the
// replica's source is up.
func (s *system) SyncLines() []kit.LineKind {
	return []kit.LineKind{
		{Text: "started streaming WAL from primary", Kind: "STREAM"},
		{Text: "record with incorrect prev-link", Kind: "PREV-LINK", Broken: true},
		{Text: "invalid record length", Kind: "INVALID-RECORD", Broken: true},
		{Text: "is not in this server's history", Kind: "NOT-IN-HISTORY", Broken: true},
		{Text: "before current recovery point", Kind: "FORKED-BEHIND", Broken: true},
	}
}
