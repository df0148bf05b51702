package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
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

// unobserved is the system without its Observer and SelfChecker: the plugin as it was before
// the oracle's new checks.
type unobserved struct {
	kit.System
	kit.Configurable
	kit.Preparer
	kit.Quorum
	kit.LogReader
	kit.Holder
}

// BenchmarkChecks measures what the oracle's new checks cost per schedule, in one run: each of
// the first Q/C/Z ops=2 schedules is run twice back to back, once as before (no observations,
// no self-check, one read at the end) and once with them (observations after every step, the
// digest self-check and a read after every convergence), and the medians and their ratio are
// reported.
func BenchmarkChecks(b *testing.B) {
	params := aem.Params{Ops: 2, Replicas: 3}
	all := qczSchedules(b, params.Ops, params.Replicas)
	d, err := drms.Lookup("qcz")
	if err != nil {
		b.Fatal(err)
	}
	once := func(sc schedules.Schedule, checked bool) time.Duration {
		begin := time.Now()
		s := &system{}
		var p cem.CEM = kit.New(about, unobserved{s, s, s, s, s, s})
		if checked {
			p = kit.New(about, s)
		}
		start(b, p, testSpec(b, params, sc.ID, nil))
		ctx := context.Background()
		state := d.Model.Init(params)
		for i, tr := range sc.Steps {
			if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: tr.String()}); err != nil {
				b.Fatalf("%s: step %d: %v", sc.ID, i+1, err)
			}
			state = d.Model.Apply(params, &state, &tr)
			if checked && tr.Kind == aem.Convergence && i < len(sc.Steps)-1 {
				snap, err := p.Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				oracle.CompareGroups(snap, oracle.Promised(&state))
			}
		}
		if _, err := p.Read(ctx); err != nil {
			b.Fatal(err)
		}
		if err := p.Teardown(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(begin)
	}
	var plain, checked []time.Duration
	b.ResetTimer()
	for i := range b.N {
		sc := all[i%len(all)]
		plain = append(plain, once(sc, false))
		checked = append(checked, once(sc, true))
	}
	b.StopTimer()
	slices.Sort(plain)
	slices.Sort(checked)
	mp, mc := plain[len(plain)/2], checked[len(checked)/2]
	b.ReportMetric(mp.Seconds(), "median-s/schedule-before")
	b.ReportMetric(mc.Seconds(), "median-s/schedule-checked")
	b.ReportMetric(mc.Seconds()/mp.Seconds(), "ratio")
}
