package plugintest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// Campaign runs a whole campaign as a user does, with the modulo and plugins that BuildModulo
// built into bin: modulo gen writes every schedule of drm with params, and modulo run runs
// them on workers clusters at once, with config (TOML: the plugins' tables) and the plugins'
// default step timeout. It returns the campaign's records; a run that exits with another
// status than 0 (every schedule passed) or 1 (some did not) fails t, quoting its output.
func Campaign(t *testing.T, bin, drm string, params Params, config string, workers int) []results.Record {
	t.Helper()
	// Ten ports per cluster of up to five replicas of three ports each, rounded as modulo
	// rounds its stride.
	base := FreePorts(t, workers*20)
	work := t.TempDir()
	modulo := filepath.Join(bin, "modulo")
	file := filepath.Join(work, drm+".sched")
	gen := exec.Command(modulo, "gen", "--drm", drm, "--ops", strconv.Itoa(params.Ops), "--replicas", strconv.Itoa(params.Replicas), "-o", file)
	gen.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("modulo gen: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(work, "modulo.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, modulo, "run", file, "--config", cfgPath, "--plugin-dir", bin,
		"--results-dir", filepath.Join(work, "results"), "--workers", strconv.Itoa(workers), "--base-port", strconv.Itoa(base))
	// A test killed (go test's timeout, a CI job cancelled) must not leave the campaign
	// running: modulo gets SIGTERM when the test's thread that started it ends, and tears its
	// clusters down.
	run.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var output bytes.Buffer
	run.Stdout, run.Stderr = &output, &output
	runtime.LockOSThread() // Pdeathsig fires when the thread that forked the child exits
	err := run.Start()
	runtime.UnlockOSThread()
	if err == nil {
		err = run.Wait()
	}
	out := output.Bytes()
	recs, rerr := results.ReadRecords(filepath.Join(work, "results", drm, "records.jsonl"))
	if err != nil && (run.ProcessState == nil || run.ProcessState.ExitCode() != 1) {
		// The results directory goes with the test: what each schedule that did not pass
		// ended with is all a CI log keeps of why.
		t.Fatalf("modulo run: %v\n%s%s", err, out, notPassed(recs))
	}
	if rerr != nil {
		t.Fatalf("%v; modulo run said:\n%s", rerr, out)
	}
	return recs
}

// notPassed lists the records that did not pass, a line each with the verdict's detail.
func notPassed(recs []results.Record) string {
	var b strings.Builder
	for _, r := range recs {
		if r.Verdict != oracle.Pass {
			fmt.Fprintf(&b, "%s %s %s: %s\n", r.ID, r.Verdict, r.Class, r.Detail)
		}
	}
	return b.String()
}

// lostWriteDetail is how the oracle names an acknowledged write and the replica that lost it.
var lostWriteDetail = regexp.MustCompile(`k\d+\.\d+.*replica \d|replica \d.*k\d+\.\d+`)

// CheckPowerLoss checks the records of a campaign of power losses: no harness error, and lost
// writes (each verdict naming the write and the replica) when lose, none otherwise. It logs
// the verdicts' counts.
func CheckPowerLoss(t *testing.T, recs []results.Record, lose bool) {
	t.Helper()
	counts := map[string]int{}
	lost := 0
	for _, r := range recs {
		counts[string(r.Verdict)+" "+string(r.Class)]++
		switch {
		case r.Verdict == oracle.Error:
			t.Errorf("schedule %s: error: %s", r.ID, r.Detail)
		case r.Class == oracle.LostWrite:
			lost++
			if !lose {
				t.Errorf("schedule %s lost an acknowledged write: %s", r.ID, r.Detail)
			} else if !lostWriteDetail.MatchString(r.Detail) {
				t.Errorf("schedule %s: the lost write's verdict names no write and replica: %s", r.ID, r.Detail)
			}
		}
	}
	t.Logf("%d schedules: %v", len(recs), counts)
	if lose && lost == 0 {
		t.Errorf("no schedule of %d lost an acknowledged write: the power losses dropped nothing that mattered", len(recs))
	}
}

// CachedServer is the server binary rel (such as "etcd/3.5.21/etcd") in modulo's cache, where
// scripts/setup builds the releases no distribution here ships ($MODULO_CACHE, else the
// user's cache directory's modulo); t fails when it is not built.
func CachedServer(t testing.TB, rel string) string {
	t.Helper()
	cache, err := kit.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cache, rel)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not built (%v): run scripts/setup", rel, err)
	}
	return path
}

// PagesLost is the kit's keys (a plugin table's TOML) for a power loss that takes every page a
// server wrote and did not sync, and nothing else: one before the kernel wrote them back (its
// writeback interval is 30 s), as LazyFS's clear-cache loses them. Any machine gives it; a
// finding that needs only it needs no tear.
const PagesLost = "disk_unit = \"page\"\ndisk_keeps = \"none\"\n"
