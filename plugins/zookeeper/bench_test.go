package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/oracle"
)

// BenchmarkQCZOps2 runs Q/C/Z schedules of ops=2 on three replicas, one after another on one
// worker, in canonical order (run all 80 with -benchtime=80x), each on a fresh ensemble: start,
// every step, the final read and the teardown. It reports the median and the 90th percentile
// per schedule.
func BenchmarkQCZOps2(b *testing.B) {
	params := aem.Params{Ops: 2, Replicas: 3}
	all := qczSchedules(b, params.Ops, params.Replicas)
	var perSchedule []time.Duration
	b.ResetTimer()
	for i := range b.N {
		sc := all[i%len(all)]
		begin := time.Now()
		p, snap := run(b, sc, params, nil)
		if err := p.Teardown(context.Background()); err != nil {
			b.Fatal(err)
		}
		if d := oracle.Compare(snap); !d.Converged() {
			b.Logf("schedule %s: the replicas differ: %s", sc.ID, d.Line())
		}
		perSchedule = append(perSchedule, time.Since(begin))
	}
	b.StopTimer()
	slices.Sort(perSchedule)
	b.ReportMetric(perSchedule[len(perSchedule)/2].Seconds(), "median-s/schedule")
	b.ReportMetric(perSchedule[len(perSchedule)*9/10].Seconds(), "p90-s/schedule")
}
