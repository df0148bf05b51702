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
//	go run ./scripts/quorumbench -drms qcz+pause,qce+pause -ops 1    # a pause step against a crash step, in the same campaign
//	go run ./scripts/quorumbench -drms qcg,qcz,mdl -ops 2 -sample 24 # Galera against ZooKeeper and MariaDB's replication
//
// For a DRM whose divergences name failure kinds, it prints too, per kind, the median
// divergence step whose every failure is of that kind (for a kind that breaks disks, which no
// divergence gives every replica: whose other failures are crashes) and the median convergence
// step whose every replica comes back from it, with their ratios to the crash's.
//
//	go run ./scripts/quorumbench -drms qce+power-loss+disk-error+corruption -ops 1   # disk faults against a crash
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
	// sample, when not 0, runs at most that many schedules of each DRM, drawn uniformly
	// (gen --sample, seed 1): for a DRM whose file is far larger than the others'.
	sample int
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
	flag.IntVar(&o.sample, "sample", 0, "run at most N schedules of each DRM, drawn uniformly with seed 1 (0: all)")
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
	// byKind are the steps that fail, or bring back, replicas of one failure kind only.
	byKind map[aem.Failure]*kindSteps
}

// kindSteps are the steps of one failure kind: divergences whose every failure is of it, and
// convergences whose every replica failed by it.
type kindSteps struct{ div, conv []time.Duration }

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
	if err := w.Flush(); err != nil {
		return err
	}
	for _, m := range ms {
		if len(m.byKind) == 0 {
			continue
		}
		crash := m.byKind[aem.FailCrash]
		ratio := func(d time.Duration, of []time.Duration) string {
			if crash == nil || len(of) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", d.Seconds()/results.Percentile(of, 0.5).Seconds())
		}
		fmt.Fprintf(w, "\n%s, by failure kind\tdivergence steps\tmedian\tratio to crash\tconvergence steps\tmedian\tratio to crash\t\n", m.drm)
		for _, f := range aem.Kinds {
			k := m.byKind[f]
			if k == nil {
				continue
			}
			d, c := results.Percentile(k.div, 0.5), results.Percentile(k.conv, 0.5)
			var cd, cc []time.Duration
			if crash != nil {
				cd, cc = crash.div, crash.conv
			}
			name := f.String()
			if f.Disk() {
				name += " (divergences: the others crash)"
			}
			fmt.Fprintf(w, "%s\t%d\t%v\t%s\t%d\t%v\t%s\t\n", name, len(k.div), d.Round(time.Millisecond), ratio(d, cd), len(k.conv), c.Round(time.Millisecond), ratio(c, cc))
		}
	}
	return w.Flush()
}

// stepKinds says, for each step of a schedule of a model whose divergences name failure
// kinds, the one kind of every replica it fails or brings back, or NotInLayout where they are
// several (or none).
func stepKinds(steps []aem.Transition, replicas int) []aem.Failure {
	failed := make([]aem.Failure, replicas)
	out := make([]aem.Failure, len(steps))
	one := func(of []aem.Failure) aem.Failure {
		k := aem.NotInLayout
		for _, f := range of {
			switch {
			case f == aem.NotInLayout:
			case k == aem.NotInLayout:
				k = f
			case k != f:
				return aem.NotInLayout
			}
		}
		return k
	}
	for i, t := range steps {
		if t.Kind == aem.Divergence {
			out[i] = one(t.Failures)
			if out[i] == aem.NotInLayout {
				out[i] = withCrashes(t.Failures)
			}
			for r, f := range t.Failures {
				if f != aem.NotInLayout {
					failed[r] = f
				}
			}
			continue
		}
		var back []aem.Failure
		for _, r := range t.Group {
			back = append(back, failed[r])
			failed[r] = aem.NotInLayout
		}
		out[i] = one(back)
	}
	return out
}

// withCrashes is the kind that breaks disks of a divergence whose other failures are all
// crashes: no divergence breaks every replica's disk (docs/aem.md), so its cost is measured
// against the crashes beside it. NotInLayout for any other divergence.
func withCrashes(of []aem.Failure) aem.Failure {
	disk := aem.NotInLayout
	for _, f := range of {
		switch {
		case f == aem.NotInLayout || f == aem.FailCrash:
		case f.Disk() && (disk == aem.NotInLayout || disk == f):
			disk = f
		default:
			return aem.NotInLayout
		}
	}
	return disk
}

// campaign generates and runs drm's campaign, and measures it from its records.
func campaign(o options, drm string) (measure, error) {
	m := measure{drm: drm, verdicts: map[string]int{}}
	name := fmt.Sprintf("%s-%dx%d", drm, o.ops, o.replicas)
	file := filepath.Join(o.work, name+".sched")
	args := []string{"gen", "--drm", drm, "--ops", strconv.Itoa(o.ops), "--replicas", strconv.Itoa(o.replicas), "-o", file}
	if o.sample > 0 {
		args = append(args, "--sample", strconv.Itoa(o.sample), "--seed", "1")
	}
	gen := exec.Command(o.modulo, args...)
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
	// 1: some schedules failed; 3: some were incomplete. Both are verdicts the table counts.
	if err := run.Run(); err != nil && !(errors.As(err, &exit) && (exit.ExitCode() == 1 || exit.ExitCode() == 3)) {
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
	m.byKind = map[aem.Failure]*kindSteps{}
	for _, r := range records {
		m.verdicts[string(r.Verdict)]++
		per = append(per, r.End.Sub(r.Start))
		st := steps[r.ID]
		var kinds []aem.Failure
		if len(st) > 0 && st[0].Failures != nil {
			kinds = stepKinds(st, o.replicas)
		}
		for i, ms := range r.StepsMS {
			d := time.Duration(ms * float64(time.Millisecond))
			isDiv := i < len(st) && st[i].Kind == aem.Divergence
			if isDiv {
				div = append(div, d)
			} else {
				conv = append(conv, d)
			}
			if i >= len(kinds) || kinds[i] == aem.NotInLayout {
				continue
			}
			k := m.byKind[kinds[i]]
			if k == nil {
				k = &kindSteps{}
				m.byKind[kinds[i]] = k
			}
			if isDiv {
				k.div = append(k.div, d)
			} else {
				k.conv = append(k.conv, d)
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
