// Package run is `modulo run`: run a schedule file's schedules on real clusters and judge each.
package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/config"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// Options are run's inputs, apart from flag parsing. The overrides are set for the flags given.
type Options struct {
	Out    io.Writer // the summary line
	ErrOut io.Writer // progress and messages
	// Context, when set, stops the run as Ctrl-C does when it is cancelled.
	Context context.Context

	File       string
	DRM        string   // empty: the file's
	IDs        []string // empty: every schedule
	ConfigFile string
	// Preset, when set, names a preset of the plugin's settings: it becomes the preset key of
	// the plugin's table, over the configuration file's.
	Preset string
	// Retry lists the recorded verdicts whose schedules run again (incomplete, fail, pass).
	Retry []string
	// Order is OrderFile (also when empty) or OrderCoverage.
	Order string
	// Trace keeps the actions of every schedule that passes, in <results>/traces.
	Trace bool
	// Shard is "K/N" to run only shard K of N of the file; ShardCount is N for an engine's
	// task index. Without either, an engine's environment (Getenv) may name the shard.
	Shard      string
	ShardCount int
	Getenv     func(string) string // os.Getenv when nil

	config.Overrides
}

// The orders in which run takes a file's schedules.
const (
	OrderFile     = "file"     // the file's: canonical, for a generated file
	OrderCoverage = "coverage" // every transition of the state graph taken as early as possible
)

// retryVerdicts reads --retry.
func retryVerdicts(names []string) ([]oracle.Verdict, error) {
	var vs []oracle.Verdict
	for _, n := range names {
		v := oracle.Verdict(n)
		if v != oracle.Incomplete && v != oracle.Fail && v != oracle.Pass && v != oracle.Unrealisable && v != oracle.Nonconformant {
			return nil, fmt.Errorf("--retry takes incomplete, fail, pass, nonconformant or unrealisable (errors always run again), not %q", n)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// NewCmd returns the run command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	var resultsDir, pluginDir string
	var workers, basePort int
	var stepTimeout time.Duration
	var check string
	var ephemeral, share bool
	cmd := &cobra.Command{
		Use:   "run SCHEDULE_FILE [--drm NAME] [--workers N] [--ids ID,...]",
		Short: "Run schedules on real clusters and check that their replicas converge",
		Long: `Run the schedules of a schedule file on real local clusters, through the plugin of the
file's DRM, and judge each one by the data its replicas hold after every convergence step
and at the end (--check end: at the end only, as the Modulo paper did):

  pass        every replica holds the same data
  fail        a check failed, after step k or at the end; its class says which:
                divergence  replicas that must have converged differ: which keys, each value
                lost-write  a write the system acknowledged is missing or changed, or
                            a server restarted after a power loss lacks what it held
                broken-replication  the system says a replica can never resync: its
                            server logs a broken link again and again (PostgreSQL's
                            "record with incorrect prev-link"), or it refuses to
                            replicate at all (MariaDB's ERROR 1201)
                unrecoverable  a server exited on its own: at its restart after a
                            failure (ZooKeeper refusing its log after a power
                            loss), or anywhere else (a PANIC, an abort)
                liveness    the cluster never reached a step's state, and a server
                            said it cannot go on without an operator (Galera's
                            "node restart required")
                self-check  the system's own consistency check raised an alarm
  incomplete  the cluster never reached the state a step needed before the step timeout
  error       the harness failed: a dead plugin, a busy port, a server that would not start
  nonconformant  modulo's fault: after a step the cluster was not where the model has it,
              through the realisation's doing (a failure that did not take effect, a write
              that reached a replica the model keeps it from), with the check that caught it
  unrealisable  the plugin cannot make its system do what a step asks (its reason is
              recorded): a schedule this realisation cannot give, so not tested

--workers schedules run at once, each on a cluster of its own: worker k uses the ports from
base_port + k*stride (stride: the ports a cluster needs, rounded up to a multiple of 10) and
the directory <results>/work/w<k>.

Schedules share prefixes: in Q/C/Z every divergence ends with every server down, so the
cluster is then its data directories. Where the plugin can save them (ZooKeeper, etcd), a
worker runs the schedules that share a prefix in turn, saves the cluster after each shared
divergence (<results>/work/w<k>.saved, at most share_budget_mb) and restores the deepest
saved one instead of replaying the prefix: the same test, checked byte for byte, with the
record naming the schedule whose run it restored (a replay always runs from scratch).
Generated files list such schedules together; --order coverage shares less.

Results go to <results_dir>/<schedule file name>: campaign.json, records.jsonl (one record per
schedule) and failures/<ID>/ for every schedule that did not pass (the schedule, the actions
taken, each replica's data, the servers' logs and data). Running the same file again resumes:
schedules recorded with the same DRM, plugin and server versions are skipped, but errors;
--retry incomplete,fail runs those verdicts again too, appending new records (the history is
kept). A campaign is one configuration: resuming it with another server, plugin table, preset
or --check is refused. Ctrl-C stops cleanly; schedules it cut short are run by the next run.

A campaign too large for one machine runs in shards, one per machine or task: --shard K/N runs
only the K-th of N parts of the file (K from 1). The parts are a pure function of the file and
N (the same on every machine), of equal expected work (steps, and a start per cluster), and
keep schedules that share a prefix together wherever that costs less than the imbalance it
avoids. Without --shard, the engine's environment names the shard, and the run says which
it used:

  Slurm array job          shard SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (+1) of
                           SLURM_ARRAY_TASK_COUNT; the array must have no gaps (--array=0-15)
  Kubernetes Indexed Job   shard JOB_COMPLETION_INDEX (+1) of --shard-count N, or of
                           MODULO_SHARD_COUNT (set it to the Job's completions)

A shard's results go to <results_dir>/<file name>.shard-K-of-N, recording the shard; running
the shard again resumes it. 'modulo results merge' makes one campaign of the shards.

The plugin binary, modulo-plugin-<name>, is looked up in plugin_dir, next to modulo, then on
$PATH. Settings come from --config FILE, in TOML, with flags overriding it; every key has
a default:

  results_dir = "modulo-results"
  base_port = 20000
  workers = 2              # default: one per CPU
  step_timeout = "30s"
  plugin_dir = "bin"
  check = "every-convergence"
  share_prefixes = true
  share_budget_mb = 1024
  failure_budget_mb = 256  # a failure folder's copy of its cluster; beyond it, largest files left out
  min_free_mb = 1024       # below this free disk, the campaign stops before its next schedule (exit 2)
  allow_ephemeral_ports = false
  [redis]                  # handed to the plugin as is
  server = "/usr/bin/redis-server"

The last line printed is the summary: "schedules: N, pass: N, fail: N, incomplete: N,
error: N". The exit status is 0 when every schedule passed, 1 when any failed, 3 when none
failed but some were incomplete, errors or not run, 2 on bad input.`,
		Example: `  modulo gen --drm ssr --ops 1 --replicas 3 -o ssr.sched
  modulo run ssr.sched --workers 2
  modulo run ssr.sched --ids 9e00953181d87464,3f9a0c2d41b7e6a1
  modulo run ssr.sched --retry incomplete
  modulo run ssr.sched --shard 2/4 --base-port 21000   # the second quarter of the file`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			opts.ErrOut = cmd.ErrOrStderr()
			opts.Context = cmd.Context()
			f := cmd.Flags()
			if f.Changed("results-dir") {
				opts.ResultsDir = &resultsDir
			}
			if f.Changed("plugin-dir") {
				opts.PluginDir = &pluginDir
			}
			if f.Changed("workers") {
				opts.Workers = &workers
			}
			if f.Changed("base-port") {
				opts.BasePort = &basePort
			}
			if f.Changed("step-timeout") {
				opts.StepTimeout = &stepTimeout
			}
			if f.Changed(cmdutil.EphemeralFlag) {
				opts.AllowEphemeralPorts = &ephemeral
			}
			if f.Changed("share-prefixes") {
				opts.SharePrefixes = &share
			}
			if f.Changed("check") {
				c := oracle.Check(check)
				opts.Check = &c
			}
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DRM, "drm", "", "the DRM the file must hold: "+strings.Join(drms.Names(), ", ")+" (default: the file's)")
	f.StringSliceVar(&opts.IDs, "ids", nil, "run only the schedules with these `IDs`")
	f.StringVar(&opts.ConfigFile, "config", "", "read settings from the TOML `FILE`")
	f.StringVar(&opts.Preset, "preset", "", "use the plugin's preset settings `NAME` (redis, zookeeper: paper); the plugin's table overrides them")
	f.StringVar(&resultsDir, "results-dir", "", "put the campaign's results under `DIR` (default modulo-results)")
	f.StringVar(&pluginDir, "plugin-dir", "", "look for the plugin binary in `DIR` first")
	f.IntVar(&workers, "workers", 0, "run `N` schedules at once (default: one per CPU)")
	f.IntVar(&basePort, "base-port", 0, "first `PORT` of worker 0's range on 127.0.0.1, for a plugin that runs on loopback, not in network namespaces (default 20000)")
	f.DurationVar(&stepTimeout, "step-timeout", 0, "how long a step may take to reach its state (default "+cem.DefaultStepTimeout.String()+")")
	f.BoolVar(&ephemeral, cmdutil.EphemeralFlag, false, cmdutil.EphemeralUsage)
	f.StringVar(&opts.Order, "order", OrderFile, "run the schedules in the file's `ORDER` (file), or so that every transition of the model's state graph (a state and a step out of it) is taken as early as possible (coverage), then the rest")
	f.StringSliceVar(&opts.Retry, "retry", nil, "run again the schedules whose recorded verdict is one of these `VERDICTS` (incomplete, fail, pass), appending new records; errors always run again")
	f.BoolVar(&opts.Trace, "trace", false, "keep the actions of every schedule that passes too, in <campaign>/traces/<ID>.txt (a failure folder has them always)")
	f.BoolVar(&share, "share-prefixes", true, "restore a cluster saved after a prefix that schedules share instead of replaying it, where the plugin can (--share-prefixes=false: every schedule from scratch)")
	f.StringVar(&opts.Shard, "shard", "", "run only shard `K/N` of the file, K from 1 (default: the shard a Slurm array task or Kubernetes Indexed Job names, else the whole file)")
	f.IntVar(&opts.ShardCount, "shard-count", 0, "the number `N` of shards, for an engine's task index without a count (JOB_COMPLETION_INDEX; default $MODULO_SHARD_COUNT)")
	f.StringVar(&check, "check", "", "when to judge: every-convergence (after every convergence step and at the end; the default) or end (at the end only, as the Modulo paper did)")
	return cmd
}

// Run runs the schedules opts select and prints the summary line.
func Run(opts *Options) error {
	ctx, stop := cmdutil.Interruptible(opts.Context)
	defer stop()
	errOut := cmdutil.Stderr(opts.ErrOut)

	cfg, err := config.LoadWith(opts.ConfigFile, opts.Overrides)
	if err != nil {
		return cmdutil.Usage(err)
	}
	retry, err := retryVerdicts(opts.Retry)
	if err != nil {
		return cmdutil.Usage(err)
	}
	r, f, err := schedules.Open(opts.File)
	if err != nil {
		return cmdutil.Usage(err)
	}
	defer f.Close()
	h := r.Header
	if opts.DRM != "" {
		d, err := drms.Lookup(opts.DRM)
		if err != nil {
			return cmdutil.Usage(err)
		}
		if d.Name != h.DRM.Name {
			return cmdutil.Usagef("%s holds %s schedules, not %s", opts.File, h.DRM.Name, d.Name)
		}
	}
	if opts.Preset != "" {
		if err := cfg.SetPreset(h.DRM.Plugin, opts.Preset); err != nil {
			return cmdutil.Usage(err)
		}
	}
	order := cmp.Or(opts.Order, OrderFile)
	if order != OrderFile && order != OrderCoverage {
		return cmdutil.Usagef("--order must be %s or %s, not %q", OrderFile, OrderCoverage, order)
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	shard, shardSource, err := shardOf(opts.Shard, opts.ShardCount, getenv)
	if err != nil {
		return cmdutil.Usage(err)
	}
	var shardInfo *results.ShardOf
	var part *schedules.Range
	switch {
	case shard != nil && len(opts.IDs) > 0:
		return cmdutil.Usage(errShardWithIDs)
	case shard != nil: // the partition reads, and so checks, the whole file
		rg, err := shardRange(opts.File, *shard)
		if err != nil {
			return cmdutil.Usage(err)
		}
		part = &rg
		shardInfo = &results.ShardOf{Shard: *shard, Partition: schedules.PartitionVersion, First: rg.First, FileSchedules: h.Count}
	case len(opts.IDs) == 0 && order == OrderFile: // otherwise selectSchedules reads the whole file
		if err := schedules.Validate(opts.File); err != nil {
			return cmdutil.Usage(err)
		}
	}
	next, total, err := selectSchedules(r, opts.File, opts.IDs, order, part)
	if err != nil {
		return err
	}

	prog := newProgress(errOut, isTerminal(errOut), total)
	info, launch, err := executor.Prepare(ctx, cfg, h.DRM, h.Params.Replicas, prog)
	if err != nil {
		return err
	}

	sum, err := fsutil.FileSHA256(opts.File)
	if err != nil {
		return err
	}
	dir := filepath.Join(cfg.ResultsDir, campaignName(opts.File, shard))
	campaignTotal := h.Count
	if part != nil {
		campaignTotal = uint64(part.Len())
	}
	store, err := results.Open(dir, results.Campaign{
		DRM: h.DRM.Name, Ops: h.Params.Ops, Replicas: h.Params.Replicas,
		ScheduleFile: opts.File, ScheduleSHA256: sum,
		Plugin: info.Name, PluginVersion: info.Version, ServerVersion: info.ServerVersion,
		Modulo: build.Version, Started: time.Now().UTC(),
		Schedules: campaignTotal, Shard: shardInfo, PluginConfig: string(cfg.Plugins[h.DRM.Plugin]),
		Check: cfg.Check, BasePort: cfg.BasePort, StepTimeout: cfg.StepTimeout.String(), Declared: h.DRM.Spec(),
	})
	if errors.Is(err, results.ErrOtherCampaign) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	defer store.Close()

	for _, sk := range store.Skipped {
		fmt.Fprintf(errOut, "modulo: warning: %s\n", sk)
	}
	recorded := store.RecordedCount()
	fmt.Fprintf(prog, "modulo: %d %s schedules (ops=%d, replicas=%d) of %s on %s %s with %s, %d %s; results in %s\n",
		total, h.DRM.Name, h.Params.Ops, h.Params.Replicas, opts.File, info.Name, info.Version, info.ServerVersion,
		cfg.Workers, words.Plural(cfg.Workers, "worker", "workers"), dir)
	if shard != nil {
		fmt.Fprintf(prog, "modulo: shard %s, schedules %d to %d of the file's %d (partition %s), as %s said\n",
			shard, part.First+1, part.End, h.Count, schedules.PartitionVersion, shardSource)
	}
	if recorded > 0 {
		fmt.Fprintf(prog, "modulo: resuming: %d schedules already recorded with these versions are skipped\n", recorded)
	}

	prog.start(recorded)
	summary, runErr := executor.Run(ctx, executor.Campaign{
		Header: h, Next: next, Total: total, Info: info,
		PluginConfig: cfg.Plugins[h.DRM.Plugin],
		Launch:       launch, Store: store,
		Workers: cfg.Workers, BasePort: cfg.BasePort, StepTimeout: cfg.StepTimeout, Check: cfg.Check, Retry: retry,
		Share: cfg.SharePrefixes, ShareBudget: int64(cfg.ShareBudgetMB) << 20, Trace: opts.Trace,
		FailureBudget: int64(cfg.FailureBudgetMB) << 20, MinFree: int64(cfg.MinFreeMB) << 20,
		Progress: prog.update,
	})
	prog.finish()
	if w := summary.Work; w.Restores > 0 {
		fmt.Fprintf(errOut, "modulo: shared prefixes: %d steps executed for %d schedules; %d clusters started, %d restored from %d saved\n",
			w.Steps, w.Schedules, w.Starts, w.Restores, w.Saves)
	}
	if summary.Skipped > 0 {
		fmt.Fprintf(errOut, "modulo: skipped %d schedules recorded by earlier runs\n", summary.Skipped)
	}
	if summary.Interrupted {
		fmt.Fprintf(errOut, "modulo: interrupted: %d schedules not run; run the same command again to run them\n",
			summary.Total-uint64(summary.Schedules()))
	}
	if _, err := fmt.Fprintln(opts.Out, summary.String()); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	if summary.Ran() > 0 {
		fmt.Fprintf(errOut, "modulo: next: modulo results %s (verdicts, failures); modulo report %s -o report.html (a page with timelines)\n", dir, dir)
	}
	return outcome(summary, filepath.Join(dir, results.FailuresDir)).Err()
}

// outcome is what the campaign's run did, for the exit status.
func outcome(s executor.Summary, failures string) cmdutil.Outcome {
	o := cmdutil.Outcome{Tally: s.Tally, Noun: "schedule", NotRun: "not run", See: failures}
	if s.Interrupted {
		o.Missing = int(s.Total) - s.Schedules()
	}
	return o
}

// selectSchedules returns the source of the schedules to run and their number: the whole
// file or a shard's part of it, streamed, or the schedules with the given IDs, read first so
// that an unknown ID is reported before anything runs.
func selectSchedules(r *schedules.Reader, file string, ids []string, order string, part *schedules.Range) (func() (schedules.Schedule, error), uint64, error) {
	next, count := r.Next, r.Header.Count
	if part != nil {
		next, count = inRange(r.Next, *part), uint64(part.Len())
	}
	if len(ids) == 0 && order == OrderFile {
		return next, count, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var picked []schedules.Schedule
	for {
		s, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, cmdutil.Usage(err)
		}
		if len(ids) == 0 || want[s.ID] {
			picked = append(picked, s)
			delete(want, s.ID)
		}
	}
	if len(want) > 0 {
		missing := slices.Sorted(maps.Keys(want))
		return nil, 0, cmdutil.Usagef("%s: no schedule with ID %s", file, strings.Join(missing, ", "))
	}
	if order == OrderCoverage {
		g, err := aem.NewGraph(r.Header.DRM.Model, r.Header.Params)
		if err != nil {
			return nil, 0, cmdutil.Usage(err)
		}
		if picked, err = schedules.CoverageOrder(g, picked); err != nil {
			return nil, 0, cmdutil.Usage(fmt.Errorf("%s: %w", file, err))
		}
	}
	return schedules.Stream(picked), uint64(len(picked)), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
