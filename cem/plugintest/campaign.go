package plugintest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
	out, err := run.CombinedOutput()
	if err != nil && run.ProcessState.ExitCode() != 1 {
		t.Fatalf("modulo run: %v\n%s", err, out)
	}
	recs, err := results.ReadRecords(filepath.Join(work, "results", drm, "records.jsonl"))
	if err != nil {
		t.Fatalf("%v; modulo run said:\n%s", err, out)
	}
	return recs
}
