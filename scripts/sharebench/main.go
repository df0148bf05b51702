// Command sharebench is modulo's prefix-sharing benchmark: it runs one Q/C/Z campaign twice,
// every schedule from scratch (--share-prefixes=false) and with shared prefixes, one after
// the other on the same machine, and prints both wall times, their ratio, the steps executed
// and the clusters started and restored, the verdicts side by side (naming every schedule
// whose verdict differs), and a projection of a deeper campaign from the shared run's
// measured costs.
//
//	scripts/setup && go run ./scripts/sharebench                  # ops=3: 1,035 schedules
//	go run ./scripts/sharebench -ops 2 -project 3                 # a quick look
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

type options struct {
	modulo, work, drm      string
	ops, replicas, workers int
	project, basePort      int
	only                   string
}

func main() {
	var o options
	flag.StringVar(&o.modulo, "modulo", "bin/modulo", "the modulo binary (its plugins next to it)")
	flag.StringVar(&o.work, "work", "sharebench", "directory for the schedule file and both campaigns' results")
	flag.StringVar(&o.drm, "drm", "qcz", "the DRM: one whose plugin restores clusters")
	flag.IntVar(&o.ops, "ops", 3, "the campaign's ops")
	flag.IntVar(&o.replicas, "replicas", 3, "the campaign's replicas")
	flag.IntVar(&o.workers, "workers", 2, "workers of each run")
	flag.IntVar(&o.project, "project", 4, "project the shared run's costs onto the campaign with these ops")
	flag.IntVar(&o.basePort, "base-port", 31500, "first port of worker 0")
	flag.StringVar(&o.only, "only", "", "run only plain or shared (the other run's results are read if present)")
	flag.Parse()
	if err := bench(o); err != nil {
		fmt.Fprintln(os.Stderr, "sharebench:", err)
		os.Exit(1)
	}
}

// run is one campaign's measure.
type run struct {
	name    string
	wall    time.Duration
	records map[string]results.Record
	work    schedules.Work
}

func bench(o options) error {
	d, err := drms.Lookup(o.drm)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	file := filepath.Join(o.work, fmt.Sprintf("%s-%dx%d.sched", o.drm, o.ops, o.replicas))
	gen := exec.Command(o.modulo, "gen", "--drm", o.drm, "--ops", strconv.Itoa(o.ops), "--replicas", strconv.Itoa(o.replicas), "-o", file)
	if out, err := gen.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", gen, err, out)
	}
	var runs []run
	for _, share := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "shared"}[share]
		resultsDir := filepath.Join(o.work, name)
		r := run{name: name}
		if o.only == "" || o.only == name {
			if err := os.RemoveAll(resultsDir); err != nil {
				return err
			}
			cmd := exec.Command(o.modulo, "run", file, "--results-dir", resultsDir, "--workers", strconv.Itoa(o.workers),
				"--base-port", strconv.Itoa(o.basePort), "--share-prefixes="+strconv.FormatBool(share))
			cmd.Stderr = os.Stderr
			var out bytes.Buffer
			cmd.Stdout = &out
			start := time.Now()
			err := cmd.Run()
			r.wall = time.Since(start)
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: some schedules failed
				return fmt.Errorf("%s run: %w", name, err)
			}
			fmt.Fprintf(os.Stderr, "sharebench: %s run: %s in %v\n", name, bytes.TrimSpace(out.Bytes()), r.wall.Round(time.Second))
		}
		if r.records, err = readRecords(resultsDir, file); err != nil {
			return err
		}
		if r.wall == 0 {
			r.wall = span(r.records)
		}
		r.work = workOf(r.records)
		runs = append(runs, r)
	}
	plain, shared := runs[0], runs[1]

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%s ops=%d replicas=%d, %d workers\tschedules\twall\tsteps executed\tclusters started\trestored\t\n", o.drm, o.ops, o.replicas, o.workers)
	for _, r := range runs {
		fmt.Fprintf(w, "%s\t%d\t%v\t%d\t%d\t%d\t\n", r.name, len(r.records), r.wall.Round(time.Second), r.work.Steps, r.work.Starts, r.work.Restores)
	}
	w.Flush()
	fmt.Printf("ratio: %.2fx faster with shared prefixes (%.2fx fewer steps)\n",
		plain.wall.Seconds()/shared.wall.Seconds(), float64(plain.work.Steps)/float64(shared.work.Steps))

	verdicts(plain, shared)
	return project(o, d, shared)
}

func readRecords(dir, file string) (map[string]results.Record, error) {
	campaign := filepath.Join(dir, filepath.Base(file[:len(file)-len(filepath.Ext(file))]))
	rs, err := results.ReadRecords(filepath.Join(campaign, results.RecordsFile))
	if err != nil {
		return nil, err
	}
	m := map[string]results.Record{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m, nil
}

// span is the time from the first record's start to the last one's end.
func span(rs map[string]results.Record) time.Duration {
	var first, last time.Time
	for _, r := range rs {
		if first.IsZero() || r.Start.Before(first) {
			first = r.Start
		}
		if r.End.After(last) {
			last = r.End
		}
	}
	return last.Sub(first)
}

// workOf counts the steps executed and the clusters started and restored, from the records
// (the saves are in the run's last lines).
func workOf(rs map[string]results.Record) schedules.Work {
	var w schedules.Work
	for _, r := range rs {
		w.Schedules++
		w.Steps += len(r.StepsMS)
		if r.Restored != nil {
			w.Restores++
			w.Steps -= r.Restored.Steps
		} else {
			w.Starts++
		}
	}
	return w
}

// verdicts prints the verdicts of both runs side by side: the counts, then every schedule
// whose verdict differs, with what each run found.
func verdicts(plain, shared run) {
	count := func(r run) map[string]int {
		m := map[string]int{}
		for _, rec := range r.records {
			m[string(rec.Verdict)]++
		}
		return m
	}
	fmt.Printf("verdicts: plain %v, shared %v\n", count(plain), count(shared))
	var ids []string
	for id := range plain.records {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	differ := 0
	for _, id := range ids {
		p, s := plain.records[id], shared.records[id]
		if p.Verdict == s.Verdict {
			continue
		}
		differ++
		restored := "from scratch"
		if s.Restored != nil {
			restored = fmt.Sprintf("restored %d steps from %s", s.Restored.Steps, s.Restored.From)
		}
		fmt.Printf("  differs: %s plain %s %q; shared (%s) %s %q\n", id, p.Verdict, p.Detail, restored, s.Verdict, s.Detail)
	}
	fmt.Printf("schedules whose verdict differs: %d of %d\n", differ, len(ids))
}

// project estimates the wall time of the campaign with o.project ops, shared, from the costs
// the shared run measured: a step, a start, a restore, and the rest of a schedule (reads,
// saves, teardown), and how well the workers kept busy.
func project(o options, d drms.DRM, shared run) error {
	var stepMS, startMS, restoreMS, otherMS, busy float64
	var steps, starts, restores int
	for _, r := range shared.records {
		total := float64(r.End.Sub(r.Start).Microseconds()) / 1000
		busy += total
		own := r.StartMS + r.ReadMS
		for _, ms := range r.StepsMS {
			stepMS += ms
			own += ms
		}
		steps += len(r.StepsMS)
		if r.Restored != nil {
			steps -= r.Restored.Steps
			restoreMS += r.StartMS
			restores++
		} else {
			startMS += r.StartMS
			starts++
		}
		otherMS += total - own + r.ReadMS
	}
	n := float64(len(shared.records))
	per := func(ms float64, k int) float64 { return ms / float64(max(k, 1)) }
	efficiency := busy / (shared.wall.Seconds() * 1000 * float64(o.workers))
	p := aem.Params{Ops: o.project, Replicas: o.replicas}
	g, err := aem.NewGraph(d.Model, p)
	if err != nil {
		return err
	}
	total, err := g.Count()
	if err != nil {
		return err
	}
	_, all, err := schedules.Generated(d, p)
	if err != nil {
		return err
	}
	gr := schedules.Grouper{Model: d.Model, Params: p, Max: max(int(total)/(8*o.workers), 16)} // as the executor cuts them
	var units [][]schedules.Schedule
	for _, s := range all {
		if u := gr.Add(s); u != nil {
			units = append(units, u)
		}
	}
	units = append(units, gr.Flush())
	shares, plain := schedules.Plan(d.Model, p, units, true), schedules.Plan(d.Model, p, units, false)
	cost := func(w schedules.Work) time.Duration {
		ms := float64(w.Steps)*per(stepMS, steps) + float64(w.Starts)*per(startMS, starts) +
			float64(w.Restores)*per(restoreMS, restores) + float64(w.Schedules)*otherMS/n
		return time.Duration(ms / float64(o.workers) / efficiency * float64(time.Millisecond))
	}
	fmt.Printf("measured (shared run): a step %.0f ms, a start %.0f ms, a restore %.0f ms, the rest of a schedule %.0f ms; workers busy %.0f%% of the time\n",
		per(stepMS, steps), per(startMS, starts), per(restoreMS, restores), otherMS/n, 100*efficiency)
	fmt.Printf("projection, %s ops=%d replicas=%d (%d schedules), %d workers: shared %d steps, %d starts, %d restores: %v; plain %d steps: %v\n",
		o.drm, o.project, o.replicas, total, o.workers, shares.Steps, shares.Starts, shares.Restores, cost(shares).Round(time.Minute), plain.Steps, cost(plain).Round(time.Minute))
	return nil
}
