// Command quorumbench measures the time per schedule of the quorum DRMs against one another in
// one run: the same campaign (every schedule of ops and replicas) of each DRM, one after the
// other on the same machine, every schedule from scratch (--share-prefixes=false), and prints
// per DRM the median and 90th percentile per schedule, the median divergence and convergence
// step, and the ratio of each median to the first DRM's.
//
//	scripts/setup && go run ./scripts/quorumbench                    # qcn, qcz, qce at ops=1
//	go run ./scripts/quorumbench -ops 2 -workers 2
//	go run ./scripts/quorumbench -drms qcz,qnz,qce,qne -ops 2        # a partition step against a crash step
//	go run ./scripts/quorumbench -drms slr,snr -ops 1                # Redis: a link failure as a partition against REPLICAOF NO ONE
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

type options struct {
	modulo, work, drms, stepTimeout string
	ops, replicas, workers          int
	basePort                        int
}

func main() {
	var o options
	flag.StringVar(&o.modulo, "modulo", "bin/modulo", "the modulo binary (its plugins next to it)")
	flag.StringVar(&o.work, "work", "quorumbench", "directory for the schedule files and the campaigns' results")
	flag.StringVar(&o.drms, "drms", "qcn,qcz,qce", "the DRMs, comma-separated; ratios are to the first")
	flag.IntVar(&o.ops, "ops", 1, "the campaigns' ops")
	flag.IntVar(&o.replicas, "replicas", 3, "the campaigns' replicas")
	flag.IntVar(&o.workers, "workers", 1, "workers of each run")
	flag.IntVar(&o.basePort, "base-port", 31500, "first port of worker 0")
	flag.StringVar(&o.stepTimeout, "step-timeout", "60s", "every run's step timeout (nats-server 2.9 elects a leader 4 to 9 s after it lost one)")
	flag.Parse()
	if err := bench(o); err != nil {
		fmt.Fprintln(os.Stderr, "quorumbench:", err)
		os.Exit(1)
	}
}

// measure is one DRM's campaign.
type measure struct {
	drm                  string
	schedules            int
	median, p90          time.Duration
	divergence, converge time.Duration // median step of each kind
	verdicts             map[string]int
}

func bench(o options) error {
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	var ms []measure
	for _, drm := range strings.Split(o.drms, ",") {
		m, err := campaign(o, drm)
		if err != nil {
			return fmt.Errorf("%s: %w", drm, err)
		}
		ms = append(ms, m)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "ops=%d replicas=%d, %d workers\tschedules\tmedian/schedule\tp90\tdivergence step\tconvergence step\tratio to %s\tverdicts\t\n", o.ops, o.replicas, o.workers, ms[0].drm)
	for _, m := range ms {
		fmt.Fprintf(w, "%s\t%d\t%v\t%v\t%v\t%v\t%.2f\t%v\t\n", m.drm, m.schedules, m.median.Round(time.Millisecond), m.p90.Round(time.Millisecond),
			m.divergence.Round(time.Millisecond), m.converge.Round(time.Millisecond), m.median.Seconds()/ms[0].median.Seconds(), m.verdicts)
	}
	return w.Flush()
}

// campaign generates and runs drm's campaign, and measures it from its records.
func campaign(o options, drm string) (measure, error) {
	m := measure{drm: drm, verdicts: map[string]int{}}
	name := fmt.Sprintf("%s-%dx%d", drm, o.ops, o.replicas)
	file := filepath.Join(o.work, name+".sched")
	gen := exec.Command(o.modulo, "gen", "--drm", drm, "--ops", strconv.Itoa(o.ops), "--replicas", strconv.Itoa(o.replicas), "-o", file)
	if out, err := gen.CombinedOutput(); err != nil {
		return m, fmt.Errorf("%s: %v: %s", gen, err, out)
	}
	resultsDir := filepath.Join(o.work, "results")
	if err := os.RemoveAll(filepath.Join(resultsDir, name)); err != nil {
		return m, err
	}
	run := exec.Command(o.modulo, "run", file, "--results-dir", resultsDir, "--workers", strconv.Itoa(o.workers),
		"--base-port", strconv.Itoa(o.basePort), "--share-prefixes=false", "--step-timeout", o.stepTimeout)
	run.Stderr = os.Stderr
	var exit *exec.ExitError
	if err := run.Run(); err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: some schedules failed
		return m, fmt.Errorf("run: %w", err)
	}
	records, err := results.ReadRecords(filepath.Join(resultsDir, name, results.RecordsFile))
	if err != nil {
		return m, err
	}
	steps, err := scheduleSteps(file)
	if err != nil {
		return m, err
	}
	var per, div, conv []time.Duration
	for _, r := range records {
		m.verdicts[string(r.Verdict)]++
		per = append(per, r.End.Sub(r.Start))
		for i, ms := range r.StepsMS {
			d := time.Duration(ms * float64(time.Millisecond))
			if st := steps[r.ID]; i < len(st) && st[i].Kind == aem.Divergence {
				div = append(div, d)
			} else {
				conv = append(conv, d)
			}
		}
	}
	m.schedules = len(records)
	m.median, m.p90 = results.Percentile(per, 0.5), results.Percentile(per, 0.9)
	m.divergence, m.converge = results.Percentile(div, 0.5), results.Percentile(conv, 0.5)
	return m, nil
}

// scheduleSteps reads the steps of every schedule of a schedule file, by ID. It reads the lines
// itself, as the file's header names a DRM that only its plugin declares.
func scheduleSteps(file string) (map[string][]aem.Transition, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	steps := map[string][]aem.Transition{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, body, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(id, "#") {
			continue
		}
		if steps[id], err = schedules.ParseBody(body); err != nil {
			return nil, fmt.Errorf("%s: schedule %s: %w", file, id, err)
		}
	}
	return steps, sc.Err()
}
