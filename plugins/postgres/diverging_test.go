package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// TestInvertedHistory replays the schedule of testdata/inverted-history.txt on real servers:
// replica 2, promoted at step 3 onto a timeline whose WAL it never had, writes a timeline 3
// history whose switch points go backwards; pg_rewind onto it fails, and at step 4 replica 0,
// rewound onto a copy of it, exits at its start ("requested timeline 3 is not a child of this
// server's history"), which the kit reports as PostgreSQL's failure (unrecoverable).
func TestInvertedHistory(t *testing.T) {
	plugintest.Servers(t)
	params := aem.Params{Ops: 1, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "inverted-history.txt"), "pgl", params)
	p := kit.New(about, &system{})
	last := len(steps) - 1
	spec, reports := plugintest.ReplayKept(t, p, nil, "pgl", params, id, steps[:last])
	rewind := ""
	for _, a := range reports[2].Actions {
		if strings.Contains(a.What, "pg_rewind failed") {
			rewind = a.What
		}
	}
	if !strings.Contains(rewind, "could not find previous WAL record") {
		t.Errorf("at step 3 pg_rewind onto replica 2 did not fail with \"could not find previous WAL record\": %v", reports[2].Actions)
	}
	history, err := os.ReadFile(filepath.Join(spec.Dir, "postgres-2", "data", "pg_wal", "00000003.history"))
	if err != nil {
		t.Fatal(err)
	}
	if !inverted(string(history)) {
		t.Errorf("replica 2's timeline 3 history has increasing switch points:\n%s", history)
	}
	// PostgreSQL's refusal to start is its own failure, which the kit reports as an alarm of
	// class unrecoverable with the server's last error lines.
	rep, err := p.Apply(context.Background(), cem.Step{Index: last, Transition: steps[last].String()})
	class, line := oracle.Alarms(rep.Alarms)
	if err != nil || class != oracle.Unrecoverable || !strings.Contains(line, "requested timeline 3 is not a child of this server's history") {
		t.Fatalf("step %d %s: %v, alarms %q (%s); want replica 0 to exit on its own with \"requested timeline 3 is not a child of this server's history\"", last+1, steps[last], err, line, class)
	}
	t.Logf("after %s, replica 2's timeline 3 history:\n%s", schedules.Body(steps[:last]), history)
}

// inverted tells whether a timeline history file has a switch point below an earlier one.
func inverted(history string) bool {
	prev := uint64(0)
	for _, line := range strings.Split(history, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		hi, lo, ok := strings.Cut(fields[1], "/")
		h, err1 := strconv.ParseUint(hi, 16, 32)
		l, err2 := strconv.ParseUint(lo, 16, 32)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		lsn := h<<32 | l
		if lsn < prev {
			return true
		}
		prev = lsn
	}
	return false
}
