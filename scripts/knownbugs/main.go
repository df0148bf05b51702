// Command knownbugs is modulo's known-bug benchmark: for each convergence failure the Modulo
// paper found in Redis, it runs the campaign a user would run (the DRM and size the paper used,
// `modulo run --preset paper`) on the old build that has the bug and on Debian's redis-server,
// where it is fixed, and prints a table: schedules run, failures found, the first failing
// schedule and the time to it, and how often a replay reproduces it.
//
//	scripts/build-redis && go run ./scripts/knownbugs
//
// The schedules that fail are for the campaigns to find: none is named here. A campaign too
// large to run whole (S/S/R with four replicas: 13,586 schedules) runs a uniform sample drawn
// with a fixed seed, so that the same sample runs everywhere.
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

	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// campaign is one row of the table: a bug, the campaign that should find it, the build.
type campaign struct {
	bug, drm string
	ops, n   int
	old      string // the Redis version that has the bug
	sample   bool   // run a sample of the schedules, not all
}

var campaigns = []campaign{
	{bug: "4407", drm: "slr", ops: 1, n: 3, old: "4.0.0"},
	{bug: "4407", drm: "slr", ops: 1, n: 3, old: "4.0.2"},
	{bug: "4316 case 2", drm: "sclr", ops: 1, n: 2, old: "4.0.0"},
	{bug: "4316 case 1", drm: "sclr", ops: 2, n: 2, old: "4.0.0"},
	{bug: "2694", drm: "ssr", ops: 2, n: 4, old: "2.8.0", sample: true},
}

type options struct {
	modulo, work, debian, only string
	workers, replays, sample   int
	seed                       uint64
	basePort                   int
}

func main() {
	var o options
	flag.StringVar(&o.modulo, "modulo", "bin/modulo", "the modulo binary (scripts/setup builds it), its plugins beside it")
	flag.StringVar(&o.work, "work", "", "directory for schedule files, configurations and results (default: a new temporary one)")
	flag.StringVar(&o.debian, "debian", "/usr/bin/redis-server", "the fixed redis-server to compare with")
	flag.StringVar(&o.only, "only", "", "run only the rows whose bug begins with one of these, comma-separated (such as 4407,4316)")
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
	cache, err := cacheDir()
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
		old := filepath.Join(cache, "redis", c.old, "redis-server")
		if _, err := os.Stat(old); err != nil {
			return fmt.Errorf("redis-server %s is not built: run scripts/build-redis (%w)", c.old, err)
		}
		for _, server := range []string{old, o.debian} {
			r, err := runCampaign(o, c, file, server)
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

// cacheDir is where scripts/build-redis puts its builds.
func cacheDir() (string, error) {
	if d := os.Getenv("MODULO_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "modulo"), nil
}

// scheduleFile generates c's schedules, or a sample of them, and returns the file.
func scheduleFile(o options, c campaign) (string, error) {
	name := fmt.Sprintf("%s-ops%d-n%d", c.drm, c.ops, c.n)
	full := filepath.Join(o.work, name+".sched")
	gen := exec.Command(o.modulo, "gen", "--drm", c.drm, "--ops", strconv.Itoa(c.ops), "--replicas", strconv.Itoa(c.n), "-o", full)
	if out, err := gen.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(gen.Args, " "), err, out)
	}
	if !c.sample {
		return full, nil
	}
	sampled := filepath.Join(o.work, fmt.Sprintf("%s-sample%d-seed%d.sched", name, o.sample, o.seed))
	return sampled, sample(full, sampled, o.sample, o.seed)
}

// sample writes to dst k schedules of src drawn uniformly without replacement with a PCG
// seeded by seed, in src's order, under src's header with the count changed.
func sample(src, dst string, k int, seed uint64) error {
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
	k = min(k, len(body))
	rng := rand.New(rand.NewPCG(seed, 0))
	picked := rng.Perm(len(body))[:k]
	slices.Sort(picked)
	var b bytes.Buffer
	for _, h := range header {
		if strings.HasPrefix(h, "# schedules: ") {
			h = "# schedules: " + strconv.Itoa(k)
		}
		b.WriteString(h + "\n")
	}
	for _, i := range picked {
		b.WriteString(body[i] + "\n")
	}
	return os.WriteFile(dst, b.Bytes(), 0o644)
}

var (
	reproduced = regexp.MustCompile(`reproduced \w+ in (\d+) of (\d+) runs`)
	// detailKey is a key of a failure's detail: "db1/k1.1 (" or "k1.1 (".
	detailKey = regexp.MustCompile(`(?:db(\d+)/)?(k[0-9.]+) \(`)
)

// runCampaign runs file on server with the paper preset, as a user would, and reads what the
// campaign recorded.
func runCampaign(o options, c campaign, file, server string) (row, error) {
	r := row{campaign: c, server: server}
	// One results directory per row and server: a second row with the same schedule file must
	// run its campaign, not resume the first row's.
	tag := c.old
	if server == o.debian {
		tag = "debian-for-" + c.old
	}
	resultsDir := filepath.Join(o.work, "results-"+tag)
	config := filepath.Join(o.work, "config-"+tag+".toml")
	text := fmt.Sprintf("results_dir = %q\nbase_port = %d\n[redis]\nserver = %q\n", resultsDir, o.basePort, server)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		return r, err
	}
	start := time.Now()
	cmd := exec.Command(o.modulo, "run", file, "--config", config, "--preset", "paper", "--workers", strconv.Itoa(o.workers))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	r.elapsed = time.Since(start)
	// 1: failures found; 3: none, but some schedules incomplete or errored (the table counts them).
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && (exit.ExitCode() == 1 || exit.ExitCode() == 3)) {
		return r, fmt.Errorf("modulo run %s on %s: %w: %s", file, server, err, lastLine(stderr.String()))
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
		if rec.Verdict == oracle.Incomplete || rec.Verdict == oracle.Error {
			r.unfinished++
		}
		if rec.Verdict != oracle.Fail {
			continue
		}
		r.failed++
		r.classes[classify(rec.Detail)]++
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

// classify names what a failure's detail shows: the same key in two databases is a write that
// went to the wrong database (redis issue 4316 case 2); anything else is a divergence of data.
func classify(detail string) string {
	keys := detailKey.FindAllStringSubmatch(detail, -1)
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
	fmt.Fprintf(w, "Known-bug benchmark: modulo run --preset paper, %d workers; work in %s\n\n", o.workers, o.work)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bug\tcampaign\tserver\tschedules run\tfailures\tincomplete or error\tfirst failing\ttime to it\tcampaign time\treplayed\tfailures by what they show")
	for _, r := range rows {
		what := fmt.Sprintf("%s ops=%d n=%d", r.drm, r.ops, r.n)
		if r.sample {
			what += fmt.Sprintf(" (sample of %d, seed %d)", o.sample, o.seed)
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
