package kit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/fault"
)

// A link model acknowledges no write as the cluster's (a write is its server's: a relink may
// discard it, and the comparison judges only replicas that differ), so a disk that loses what
// a server had written would pass unseen wherever the replicas then agree on less. Where such a
// model's server loses power, the kit therefore reads what the server holds just before, and
// again once it serves after its restart: every key must still hold its value. A key missing
// or changed is a lost write of the server's own (cem.Alarm.Lost), whatever the replicas later
// agree on. Whether the system promised to keep it is its configuration's word (Redis's
// appendfsync everysec keeps the last second of writes in memory only, PostgreSQL's fsync =
// off nothing): the campaign's report says which was run.

// held is what a server held when it lost power.
type held struct {
	Data map[string]string `json:"data"`
	// History is the replica's history then: a restart after its data was replaced (a copied
	// snapshot) or rewritten (a rewind while down) is not checked against it.
	History int `json:"history"`
}

// noteHeld reads what r's server holds before it fails by k, where k is a power loss on a link
// model: its restart is then checked against it (checkKept).
func (p *Plugin) noteHeld(ctx context.Context, r *Replica, k fault.Kind) error {
	if p.acks || k.Failure() != aem.FailPowerLoss || !r.running() || r.suspended {
		return nil
	}
	data, err := p.readServer(ctx, r, "before its power loss")
	if err != nil {
		return err
	}
	if p.held == nil {
		p.held = map[int]held{}
	}
	p.held[r.Index] = held{Data: data, History: r.history}
	p.act(r, "holds %d keys before its power loss", len(data))
	return nil
}

// checkKept compares what r's server holds, once it serves after a restart, with what it held
// when it lost power, and raises the alarm of a lost write for every key it no longer holds.
func (p *Plugin) checkKept(ctx context.Context, r *Replica) error {
	before, ok := p.held[r.Index]
	if !ok {
		return nil
	}
	delete(p.held, r.Index)
	if before.History != r.history {
		p.act(r, "not checked against what it held at its power loss: its data was replaced since")
		return nil
	}
	now, err := p.readServer(ctx, r, "after its restart")
	if err != nil {
		return err
	}
	lost := lostKeys(before.Data, now)
	if len(lost) == 0 {
		p.act(r, "holds the %d keys it held at its power loss", len(before.Data))
		return nil
	}
	what := fmt.Sprintf("%s lost at its power loss %d of the %d keys it held: %s", r.Name, len(lost), len(before.Data), strings.Join(lost, ", "))
	p.act(r, "lost: %s", what)
	p.alarms = append(p.alarms, cem.Alarm{Replica: p.abstractOf(r.Index), What: what, Lost: true})
	return nil
}

// readServer reads what r's server holds (ReadAll), when says when, within the step timeout.
func (p *Plugin) readServer(ctx context.Context, r *Replica, when string) (data map[string]string, err error) {
	err = p.call(ctx, r.Name+" to be read "+when, func(ctx context.Context) error {
		data, err = p.sys.ReadAll(ctx, r)
		return err
	})
	return data, err
}

// lostKeys lists, in order, the keys of before that now lacks or holds with another value,
// each with what became of it.
func lostKeys(before, now map[string]string) []string {
	var lost []string
	for k, v := range before {
		switch got, ok := now[k]; {
		case !ok:
			lost = append(lost, k+" (missing)")
		case got != v:
			lost = append(lost, k+" (another value)")
		}
	}
	slices.Sort(lost)
	return lost
}
