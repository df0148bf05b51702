package main

import (
	"context"
	"fmt"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
)

// SyncLines are the lines a replica logs for each way its master resyncs it, the same from
// 2.8 to 7.x: a full resync (a new RDB), or a partial one from the master's backlog.
func (s *system) SyncLines() []kit.LineKind {
	return []kit.LineKind{
		{Text: "Full resync from master", Kind: "FULL"},
		{Text: "Successful partial resynchronization with master", Kind: "PARTIAL"},
	}
}

// Observe says the replica's role and replication offset (INFO replication, read-only).
func (s *system) Observe(ctx context.Context, _ *kit.Cluster, r *kit.Replica) (map[string]string, error) {
	fields := map[string]string{}
	info, err := s.info(ctx, r, "replication")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	fields[cem.ObserveRole] = info["role"]
	if off, ok := info["slave_repl_offset"]; ok {
		fields[cem.ObservePosition] = off
	} else {
		fields[cem.ObservePosition] = info["master_repl_offset"]
	}
	return fields, nil
}
