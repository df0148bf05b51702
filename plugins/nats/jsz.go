package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
)

// jsz is what a server's monitoring endpoint /jsz?accounts=true&streams=true says of its own
// JetStream: the meta group as it sees it, and the streams it hosts with their state in its own
// store. Every server answers for itself alone, which is why the plugin reads it of each.
type jsz struct {
	Meta *struct {
		Leader string `json:"leader"`
	} `json:"meta_cluster"`
	Accounts []struct {
		Name    string         `json:"name"`
		Streams []streamDetail `json:"stream_detail"`
	} `json:"account_details"`
}

type streamDetail struct {
	Name    string `json:"name"`
	Cluster *struct {
		Leader string `json:"leader"`
		// LeaderSince (nats-server 2.11 and later) is set by the leader alone, once it has
		// applied every entry of its log up to its first of its term: only then does it take
		// writes, and that entry commits only with a quorum.
		LeaderSince *time.Time `json:"leader_since"`
		Replicas    []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
		} `json:"replicas"`
	} `json:"cluster"`
	State streamState `json:"state"`
}

// streamState is the stream's state in one server's store.
type streamState struct {
	Msgs       uint64 `json:"messages"`
	FirstSeq   uint64 `json:"first_seq"`
	LastSeq    uint64 `json:"last_seq"`
	NumDeleted int    `json:"num_deleted"`
}

func (st streamState) String() string {
	return fmt.Sprintf("first=%d last=%d messages=%d deleted=%d", st.FirstSeq, st.LastSeq, st.Msgs, st.NumDeleted)
}

// client reuses no connection: a restarted server is a new server on an old address.
var client = http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// readJsz asks r's server for its /jsz.
func readJsz(ctx context.Context, r *kit.Replica) (*jsz, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr(monitorPort)+"/jsz?accounts=true&streams=true", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s's /jsz: %w", r.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("%s's /jsz: %s: %s", r.Name, resp.Status, msg)
	}
	var j jsz
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		return nil, fmt.Errorf("%s's /jsz: %w", r.Name, err)
	}
	return &j, nil
}

// stream is the schedule's stream as the server hosts it, or nil when it hosts none.
func (j *jsz) stream() *streamDetail {
	for _, a := range j.Accounts {
		for i := range a.Streams {
			if a.Name == account && a.Streams[i].Name == streamName {
				return &a.Streams[i]
			}
		}
	}
	return nil
}

// metaLeader is the server the replica follows as the meta group's leader, "" for none.
func (j *jsz) metaLeader() string {
	if j.Meta == nil {
		return ""
	}
	return j.Meta.Leader
}

// outside tells whether r's server serves the stream outside its Raft group: nats-server 2.9
// reports a stream that has no Raft node (its meta layer assigned it none) as led by the server
// itself, with no replicas, where a leader of a replicated stream lists its peers.
func (sd *streamDetail) outside(r *kit.Replica) bool {
	return sd.Cluster != nil && sd.Cluster.Leader == r.Name && len(sd.Cluster.Replicas) == 0
}

// streamLeader is the server the replica follows as the stream's leader, "" for none.
func (sd *streamDetail) leader() string {
	if sd == nil || sd.Cluster == nil {
		return ""
	}
	return sd.Cluster.Leader
}

// reportsLeaderSince tells whether nats-server of version (as "2.12.2") says in /jsz when a
// stream's leader took up its leadership: from 2.11 on. A leader there takes no writes before
// (in 2.9 a leader takes them once elected).
func reportsLeaderSince(version string) bool {
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 2 || ma == 2 && mi >= 11)
}

// leading says, "" when it does, why the leader's own view lv does not show a leader that takes
// writes: elected, it has not yet applied its first entry of its term.
func leading(lv *view, since bool) string {
	if since && lv.stream.Cluster.LeaderSince == nil {
		return fmt.Sprintf("the leader %s has not yet taken up its leadership (its first entry of its term is not applied)", lv.r.Name)
	}
	return ""
}
