// Command knownbugs is modulo's known-bug benchmark: for each convergence failure the Modulo
// paper found, it runs the campaign a user would run (the DRM and size the paper used, with
// `modulo run --preset paper` where the paper's settings matter) on the old build that has the
// bug and on a build where it is fixed or that is current (Debian's redis-server; ZooKeeper
// 3.9.5), and prints a table: schedules run, failures found, the first failing schedule and
// the time to it, and how often a replay reproduces it.
//
//	scripts/setup && go run ./scripts/knownbugs            # every row
//	go run ./scripts/knownbugs -only ZOOKEEPER-3947         # the rows of one bug
//
// The schedules that fail are for the campaigns to find: none is named here. A campaign too
// large to run whole (S/S/R with four replicas: 13,586 schedules; Q/C/Z with five writes:
// 172,997) runs a uniform sample drawn with a fixed seed, so that the same sample runs
// everywhere, or the schedules that begin with the steps of the paper's own schedule.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// campaign is one row of the table: a bug, the campaign that should find it, the build.
type campaign struct {
	bug, system, drm string
	ops, n           int
	old              string // the release that has the bug
	preset           string // modulo run --preset, if any
	sample           bool   // run a sample of the schedules, not all
	prefix           string // run the schedules whose steps begin with these, not all
}

var campaigns = []campaign{
	{bug: "redis 4407", system: "redis", drm: "slr", ops: 1, n: 3, old: "4.0.0", preset: "paper"},
	{bug: "redis 4407", system: "redis", drm: "slr", ops: 1, n: 3, old: "4.0.2", preset: "paper"},
	{bug: "redis 4316 case 2", system: "redis", drm: "sclr", ops: 1, n: 2, old: "4.0.0", preset: "paper"},
	{bug: "redis 4316 case 1", system: "redis", drm: "sclr", ops: 2, n: 2, old: "4.0.0", preset: "paper"},
	{bug: "redis 2694", system: "redis", drm: "ssr", ops: 2, n: 4, old: "2.8.0", preset: "paper", sample: true},
	// The paper's ZooKeeper bugs, #1 to #5 (transitions in the paper's schedules: 11, 11, 7, 10,
	// 10; 3.5.8, where it found #3, is not here: 3.7.0 is the nearest release built).
	// #5 without the preset: its five initial znodes are the logs' first, committed,
	// transactions, and the truncation below a log's first record then never happens at ops=2.
	{bug: "ZOOKEEPER-3947 (#5)", system: "zookeeper", drm: "qcz", ops: 2, n: 3, old: "3.7.0"},
	// #1: the paper prints its schedule (§3.1); these are the ones that begin as it does.
	{bug: "ZOOKEEPER-2945 (#1)", system: "zookeeper", drm: "qcz", ops: 5, n: 3, old: "3.4.11", preset: "paper",
		prefix: "D[0,0,1] C[0,1] D[1,1,0] C[0,1] D[0,1,0] C[0,2]"},
	{bug: "ZOOKEEPER-2946 (#2)", system: "zookeeper", drm: "qcz", ops: 5, n: 3, old: "3.4.11", preset: "paper", sample: true},
	{bug: "ZOOKEEPER-3972 (#3)", system: "zookeeper", drm: "qcz", ops: 3, n: 3, old: "3.7.0", preset: "paper", sample: true},
	{bug: "ZOOKEEPER-3946 (#4)", system: "zookeeper", drm: "qcz", ops: 5, n: 3, old: "3.7.0", preset: "paper", sample: true},
}

type options struct {
	modulo, work, debian, zookeeper, only string
	workers, replays, sample              int
	seed                                  uint64
	basePort                              int
}

func main() {
	var o options
	flag.StringVar(&o.modulo, "modulo", "bin/modulo", "the modulo binary (scripts/setup builds it), its plugins beside it")
	flag.StringVar(&o.work, "work", "", "directory for schedule files, configurations and results (default: a new temporary one)")
	flag.StringVar(&o.debian, "debian", "/usr/bin/redis-server", "the fixed redis-server to compare with")
	flag.StringVar(&o.zookeeper, "zookeeper", "3.9.5", "the current ZooKeeper release to compare with, as scripts/build-zookeeper built it")
	flag.StringVar(&o.only, "only", "", "run only the rows whose bug begins with one of these, comma-separated (such as \"redis 4407,ZOOKEEPER\")")
	flag.IntVar(&o.workers, "workers", 2, "clusters at once per campaign")
	flag.IntVar(&o.replays, "replays", 3, "replays of each campaign's first failing schedule")
	flag.IntVar(&o.sample, "sample", 200, "schedules drawn from a campaign too large to run whole")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the sample")
	flag.IntVar(&o.basePort, "base-port", 21000, "first port of the campaigns' clusters")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "knownbugs:", err)
		os.Exit(1)
	}
}

// row is what one campaign on one server found.
type row struct {
	campaign
	server, version  string
	run, failed      int
	unfinished       int // incomplete or error
	first            string
	toFirst, elapsed time.Duration
	replayed         string
	classes          map[string]int
}

func run(o options) error {
	if o.work == "" {
		dir, err := os.MkdirTemp("", "modulo-knownbugs-")
		if err != nil {
			return err
		}
		o.work = dir
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	cache, err := kit.CacheDir()
	if err != nil {
		return err
	}
	var rows []row
	for _, c := range campaigns {
		if o.only != "" && !slices.ContainsFunc(strings.Split(o.only, ","), func(p string) bool { return strings.HasPrefix(c.bug, p) }) {
			continue
		}
		file, err := scheduleFile(o, c)
		if err != nil {
			return err
		}
		builds, err := c.builds(o, cache)
		if err != nil {
			return err
		}
		for _, b := range builds {
			r, err := runCampaign(o, c, file, b)
			if err != nil {
				return err
			}
			rows = append(rows, r)
			fmt.Fprintf(os.Stderr, "knownbugs: %s on %s: %d of %d schedules failed\n", c.bug, r.version, r.failed, r.run)
		}
	}
	printTable(os.Stdout, rows, o)
	return nil
}

// build is a server a campaign runs on: tag names its results, section is the plugin's table.
type build struct{ tag, section string }

// builds are the old release that has c's bug and the one to compare with.
func (c campaign) builds(o options, cache string) ([]build, error) {
	switch c.system {
	case "redis":
		old := filepath.Join(cache, "redis", c.old, "redis-server")
		if _, err := os.Stat(old); err != nil {
			return nil, fmt.Errorf("redis-server %s is not built: run scripts/build-redis (%w)", c.old, err)
		}
		return []build{
			{tag: "redis-" + c.old, section: fmt.Sprintf("[redis]\nserver = %q\n", old)},
			{tag: "redis-debian-for-" + c.old, section: fmt.Sprintf("[redis]\nserver = %q\n", o.debian)},
		}, nil
	case "zookeeper":
		var bs []build
		for _, v := range []string{c.old, o.zookeeper} {
			dir := filepath.Join(cache, "zookeeper", v)
			if _, err := os.Stat(filepath.Join(dir, "zookeeper.jar")); err != nil {
				return nil, fmt.Errorf("ZooKeeper %s is not built: run scripts/build-zookeeper (%w)", v, err)
			}
			bs = append(bs, build{tag: "zookeeper-" + v, section: fmt.Sprintf("[zookeeper]\njar_dir = %q\n", dir)})
		}
		return bs, nil
	}
	return nil, fmt.Errorf("row %s: no system %q", c.bug, c.system)
}

// scheduleFile generates c's schedules, or the sample or prefix of them it runs, and returns
// the file.
func scheduleFile(o options, c campaign) (string, error) {
	name := fmt.Sprintf("%s-ops%d-n%d", c.drm, c.ops, c.n)
	full := filepath.Join(o.work, name+".sched")
	if _, err := os.Stat(full); err != nil {
		gen := exec.Command(o.modulo, "gen", "--drm", c.drm, "--ops", strconv.Itoa(c.ops), "--replicas", strconv.Itoa(c.n), "-o", full)
		if out, err := gen.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %w: %s", strings.Join(gen.Args, " "), err, out)
		}
	}
	switch {
	case c.sample:
		sampled := filepath.Join(o.work, fmt.Sprintf("%s-sample%d-seed%d.sched", name, o.sample, o.seed))
		return sampled, sample(full, sampled, o.sample, o.seed)
	case c.prefix != "":
		picked := filepath.Join(o.work, fmt.Sprintf("%s-prefix%d.sched", name, len(strings.Fields(c.prefix))))
		return picked, withPrefix(full, picked, c.prefix)
	}
	return full, nil
}

// withPrefix writes to dst the schedules of src whose steps begin with prefix's, under src's
// header with the count changed.
func withPrefix(src, dst, prefix string) error {
	return filter(src, dst, func(body []string) []string {
		var kept []string
		for _, l := range body {
			if _, steps, ok := strings.Cut(l, " "); ok && strings.HasPrefix(steps+" ", prefix+" ") {
				kept = append(kept, l)
			}
		}
		return kept
	})
}

// sample writes to dst k schedules of src drawn uniformly without replacement with a PCG
// seeded by seed, in src's order, under src's header with the count changed.
func sample(src, dst string, k int, seed uint64) error {
	return filter(src, dst, func(body []string) []string {
		k = min(k, len(body))
		rng := rand.New(rand.NewPCG(seed, 0))
		picked := rng.Perm(len(body))[:k]
		slices.Sort(picked)
		kept := make([]string, k)
		for i, p := range picked {
			kept[i] = body[p]
		}
		return kept
	})
}

// filter writes to dst the schedules of src that keep returns, under src's header with the
// count changed.
func filter(src, dst string, keep func(body []string) []string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var header, body []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(l, "#") {
			header = append(header, l)
		} else {
			body = append(body, l)
		}
	}
	kept := keep(body)
	if len(kept) == 0 {
		return fmt.Errorf("%s: no schedule left for %s", src, dst)
	}
	var b bytes.Buffer
	for _, h := range header {
		if strings.HasPrefix(h, "# schedules: ") {
			h = "# schedules: " + strconv.Itoa(len(kept))
		}
		b.WriteString(h + "\n")
	}
	for _, l := range kept {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(dst, b.Bytes(), 0o644)
}

var (
	reproduced = regexp.MustCompile(`reproduced \w+ in (\d+) of (\d+) runs`)
	// detailKey is a key of a failure's detail: "db1/k1.1 (" or "k1.1 (".
	detailKey = regexp.MustCompile(`(?:db(\d+)/)?(k[0-9.]+) \(`)
)

// runCampaign runs file on build b, as a user would, and reads what the campaign recorded.
func runCampaign(o options, c campaign, file string, b build) (row, error) {
	r := row{campaign: c, server: b.tag}
	// One results directory per row and build: a second row with the same schedule file must
	// run its campaign, not resume the first row's.
	slug := strings.NewReplacer(" ", "-", "(", "", ")", "", "#", "").Replace(c.bug)
	resultsDir := filepath.Join(o.work, "results-"+slug+"-on-"+b.tag)
	config := filepath.Join(o.work, "config-"+slug+"-on-"+b.tag+".toml")
	text := fmt.Sprintf("results_dir = %q\nbase_port = %d\n%s", resultsDir, o.basePort, b.section)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		return r, err
	}
	args := []string{"run", file, "--config", config, "--workers", strconv.Itoa(o.workers)}
	if c.preset != "" {
		args = append(args, "--preset", c.preset)
	}
	start := time.Now()
	cmd := exec.Command(o.modulo, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	r.elapsed = time.Since(start)
	// 1: failures found; 3: none, but some schedules incomplete or errored (the table counts them).
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && (exit.ExitCode() == 1 || exit.ExitCode() == 3)) {
		return r, fmt.Errorf("modulo run %s on %s: %w: %s", file, b.tag, err, lastLine(stderr.String()))
	}
	dir := filepath.Join(resultsDir, strings.TrimSuffix(filepath.Base(file), ".sched"))
	camp, err := results.ReadCampaign(filepath.Join(dir, results.CampaignFile))
	if err != nil {
		return r, err
	}
	recs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		return r, err
	}
	r.version, r.run, r.classes = camp.ServerVersion, len(recs), map[string]int{}
	var first *results.Record
	for i := range recs {
		rec := &recs[i]
		if rec.Verdict == oracle.Incomplete || rec.Verdict == oracle.Error || rec.Verdict == oracle.Unrealisable || rec.Verdict == oracle.Nonconformant {
			r.unfinished++
		}
		if rec.Verdict != oracle.Fail {
			continue
		}
		r.failed++
		r.classes[classify(c.system, rec)]++
		if first == nil || rec.End.Before(first.End) {
			first = rec
		}
	}
	if first == nil {
		return r, nil
	}
	r.first, r.toFirst = first.ID, first.End.Sub(camp.Started)
	if o.replays > 0 {
		out, _ := exec.Command(o.modulo, "replay", dir, first.ID, "--repeat", strconv.Itoa(o.replays), "--base-port", strconv.Itoa(o.basePort)).CombinedOutput()
		if m := reproduced.FindSubmatch(out); m != nil {
			r.replayed = string(m[1]) + "/" + string(m[2])
		} else {
			r.replayed = "? (" + lastLine(string(out)) + ")"
		}
	}
	return r, nil
}

// classify names what a failure shows: in Redis, the same key in two databases is a write
// that went to the wrong database (redis issue 4316 case 2), anything else a divergence of
// data; elsewhere, the check it failed.
func classify(system string, rec *results.Record) string {
	if system != "redis" {
		return string(rec.Class)
	}
	keys := detailKey.FindAllStringSubmatch(rec.Detail, -1)
	dbs := map[string]map[string]bool{}
	for _, k := range keys {
		if dbs[k[2]] == nil {
			dbs[k[2]] = map[string]bool{}
		}
		dbs[k[2]][k[1]] = true
		if len(dbs[k[2]]) > 1 {
			return "a key in the wrong database"
		}
	}
	return "other data"
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func printTable(f *os.File, rows []row, o options) {
	w := bufio.NewWriter(f)
	defer w.Flush()
	fmt.Fprintf(w, "Known-bug benchmark: modulo run, %d workers; work in %s\n\n", o.workers, o.work)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bug\tcampaign\tserver\tschedules run\tfailures\tincomplete or error\tfirst failing\ttime to it\tcampaign time\treplayed\tfailures by what they show")
	for _, r := range rows {
		what := fmt.Sprintf("%s ops=%d n=%d", r.drm, r.ops, r.n)
		switch {
		case r.sample:
			what += fmt.Sprintf(" (sample of %d, seed %d)", o.sample, o.seed)
		case r.prefix != "":
			what += " (beginning " + r.prefix + ")"
		}
		if r.preset != "" {
			what += " --preset " + r.preset
		}
		first, to, replayed := "-", "-", "-"
		if r.first != "" {
			first, to, replayed = r.first, r.toFirst.Round(100*time.Millisecond).String(), r.replayed
		}
		var classes []string
		for _, k := range slices.Sorted(maps.Keys(r.classes)) {
			classes = append(classes, fmt.Sprintf("%s: %d", k, r.classes[k]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.bug, what, r.version, r.run, r.failed, r.unfinished, first, to,
			r.elapsed.Round(time.Second), replayed, strings.Join(classes, ", "))
	}
	tw.Flush()
}
