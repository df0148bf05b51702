package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
)

// BenchmarkQCZOps2 runs Q/C/Z schedules of ops=2 on three replicas, one after another on one
// worker, in canonical order (run all 80 with -benchtime=80x), each on a fresh ensemble: start,
// every step, the final read and the teardown. It reports the median and the 90th percentile
// per schedule, and where the time went on average (s/schedule): JVM start (forking replicas
// until they answer srvr), election (until they log LEADING or FOLLOWING), resync (until every
// online replica serves with the same zxid), writes (divergences: crashes, writes and their
// confirmation on disk), check (the final read) and teardown.
func BenchmarkQCZOps2(b *testing.B) {
	all := qczSchedules(b, 2, 3)
	ctx := context.Background()
	var perSchedule []time.Duration
	var sum timings
	var teardown time.Duration
	b.ResetTimer()
	for i := range b.N {
		sc := all[i%len(all)]
		spec := testSpec(b, 2, 3, sc.ID, "")
		p := NewPlugin()
		b.Cleanup(func() { _ = p.Teardown(context.Background()) })
		begin := time.Now()
		if err := p.Start(ctx, spec); err != nil {
			b.Fatalf("schedule %s: start: %v", sc.ID, err)
		}
		for j, tr := range sc.Steps {
			if _, err := p.Apply(ctx, cem.Step{Index: j, Transition: tr.String()}); err != nil {
				b.Fatalf("schedule %s: step %d %s: %v", sc.ID, j+1, tr.String(), err)
			}
		}
		snap, err := p.Read(ctx)
		if err != nil {
			b.Fatalf("schedule %s: read: %v", sc.ID, err)
		}
		if differ, why := compare(snap); differ {
			b.Logf("schedule %s: replicas differ: %s", sc.ID, why)
		}
		t := p.c.timings
		td := time.Now()
		if err := p.Teardown(ctx); err != nil {
			b.Fatal(err)
		}
		teardown += time.Since(td)
		perSchedule = append(perSchedule, time.Since(begin))
		sum.jvm += t.jvm
		sum.election += t.election
		sum.resync += t.resync
		sum.writes += t.writes
		sum.check += t.check
	}
	b.StopTimer()
	slices.Sort(perSchedule)
	n := float64(len(perSchedule))
	b.ReportMetric(perSchedule[len(perSchedule)/2].Seconds(), "median-s/schedule")
	b.ReportMetric(perSchedule[len(perSchedule)*9/10].Seconds(), "p90-s/schedule")
	b.ReportMetric(sum.jvm.Seconds()/n, "jvm-s/schedule")
	b.ReportMetric(sum.election.Seconds()/n, "election-s/schedule")
	b.ReportMetric(sum.resync.Seconds()/n, "resync-s/schedule")
	b.ReportMetric(sum.writes.Seconds()/n, "writes-s/schedule")
	b.ReportMetric(sum.check.Seconds()/n, "check-s/schedule")
	b.ReportMetric(teardown.Seconds()/n, "teardown-s/schedule")
}
