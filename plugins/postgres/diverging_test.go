package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// TestDivergingTimelines replays the schedule of testdata/diverging-timelines.txt on real
// servers: replicas 1 and 2, promoted independently, are both on timeline 2 after step 3;
// at step 6 pg_rewind says "no rewind required" for replica 1 onto replica 2, and replica 1
// keeps the write k4.1 that replica 2 never had: the replicas must differ on it alone.
func TestDivergingTimelines(t *testing.T) {
	plugintest.Servers(t)
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "diverging-timelines.txt"), "pgl", aem.Params{Ops: 2, Replicas: 3})
	p := kit.New(about, &system{})
	_, reports := plugintest.ReplayKept(t, p, nil, "pgl", aem.Params{Ops: 2, Replicas: 3}, id, steps)
	timelines := map[int]string{}
	var rewind string
	for i, rep := range reports {
		for _, o := range rep.Observations {
			if i == 2 {
				timelines[o.Replica] = o.Fields[cem.ObserveEpoch]
			}
			if i == 5 && o.Replica == 1 {
				rewind = o.Fields["rewind"]
			}
		}
	}
	if timelines[1] != "timeline 2" || timelines[2] != "timeline 2" {
		t.Errorf("after step 3 replicas 1 and 2 are on %q and %q, want both on timeline 2", timelines[1], timelines[2])
	}
	if !strings.Contains(rewind, "no rewind required") {
		t.Errorf("step 6 observed rewind=%q for replica 1, want pg_rewind's \"no rewind required\"", rewind)
	}
	snap, err := p.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := oracle.Compare(snap)
	if d.Converged() || len(d.Keys) != 1 || d.Keys[0].Key != "k4.1" {
		t.Fatalf("at the end: %s; want the replicas to differ on k4.1 alone (PostgreSQL's diverging timelines)", d.Line())
	}
	t.Logf("after %s: %s; replica 1's rewind at step 6: %s", schedules.Body(steps), d.Line(), rewind)
}
