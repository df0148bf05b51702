// Package replay is `modulo replay`: run one recorded schedule again, showing every concrete
// action, and tell how often its verdict reproduces.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/cmdutil"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/rerun"
	"github.com/modulo-testing/modulo/results"
)

// Options are replay's inputs, apart from flag parsing.
type Options struct {
	Out    io.Writer // the runs as they go, and the reproduction line
	ErrOut io.Writer // the plugin's messages
	// Context, when set, stops the runs as Ctrl-C does when it is cancelled.
	Context context.Context

	Dir    string // the campaign's results directory
	ID     string
	Repeat int
	// Keep leaves the cluster up after the run, until Ctrl-C, and keeps the run's actions,
	// data and logs whatever its verdict.
	Keep bool
	// Trace keeps the actions of every run, those that pass included, in the run's directory.
	Trace bool
	// Follow abandons a run whose observations leave the recorded run's, and makes runs until
	// Repeat of them followed the recorded course to a verdict, or Tries were made.
	Follow bool
	Tries  int
	// FromPrefix restores, in each run, the saved prefix the recorded run restored, kept in its
	// failure folder, where a replay otherwise runs every step from scratch.
	FromPrefix bool
	cmdutil.Settings
}

// NewCmd returns the replay command; runF replaces Run in tests.
func NewCmd(out io.Writer, runF func(*Options) error) *cobra.Command {
	opts := &Options{Out: out}
	var setFlags func()
	cmd := &cobra.Command{
		Use:   "replay DIR ID [--repeat K]",
		Short: "Run one recorded schedule again, showing every concrete action",
		Long: `Run schedule ID of the campaign whose results are in DIR again, on a fresh real cluster,
through the same plugin as 'modulo run', and show what happens: each step as it starts, then
the concrete actions the plugin took for it (kills, suspends, writes, REPLICAOF...) with their
times, as the step returns - the plugin reports a step's actions when the step is done - and
then the verdict.

--repeat K runs it K times and tells how often the recorded verdict reproduces (k of K). The
result is appended to DIR/reproductions.jsonl; 'modulo results' labels a failure that
reproduced 0 times flaky rather than a bug. Every run keeps its own results in
DIR/replays/ID/<time>/<k>/: its record and, for a run that does not pass, its failure folder
(failures/ID/: actions, each replica's data, the servers' logs); --trace keeps the actions of
a run that passes too (traces/ID.txt), and --keep its whole folder (passes/ID/). The
campaign's records are not touched.

--follow keeps only the runs that take the recorded course: a run whose observations after a
step (each replica's role, position, how it resynced, whether it was cut off; not terms or a
plugin's own fields, which count elections) differ from the recorded run's is abandoned there, and runs are made until --repeat of them followed the course to a verdict, or
--tries runs were made (default: 4 times --repeat). It reports how often the failure reproduces
when the cluster does what it did: "failed in 4 of the 5 runs that followed the recorded
course; 5 of 20 followed it". A failure whose course is a race (a state transfer or not, a
torn write or not) reads flaky without it.

--from-prefix replays a schedule whose campaign run restored a prefix that another
schedule's run saved (results: "steps 1-K restored from X's run") from that very saved
cluster, kept in its failure folder (failures/ID/prefix/), rather than from scratch: the bytes a
power loss tore and the state a rejoin starts from are the recorded run's, and only the steps
after the prefix run again.

--keep leaves the cluster running after the run's verdict, printing each server's pid and log
and where it listens, so that the failure can be looked at live: on loopback its ports
(redis-cli -p PORT, zkCli.sh...), in network namespaces (the default as root) the nsenter
command that runs a client in the server's own namespace (nsenter --net=/proc/PID/ns/net
redis-cli). Ctrl-C tears it down. The run then keeps its actions, each replica's data and the
servers' logs whatever its verdict, in failures/ID/ of its directory, or passes/ID/ for a
pass, and says where.

The plugin runs with the campaign's plugin table (kept in campaign.json) unless --config
names a file, whose table is used instead. ID may also be the smallest schedule a shrink
found ('modulo shrink').

The exit status is 1 when a run failed, 3 when none failed but some were incomplete, errors
or not made, 0 when every run passed, 2 on bad input.`,
		Example: `  modulo replay modulo-results/slr 0b98d909dcdb6ee8
  modulo replay modulo-results/slr 0b98d909dcdb6ee8 --repeat 10
  modulo replay modulo-results/qpg 893c16be01c54504 --repeat 5 --follow
  modulo replay modulo-results/slr 0b98d909dcdb6ee8 --keep`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.ID = args[0], args[1]
			opts.ErrOut = cmd.ErrOrStderr()
			opts.Context = cmd.Context()
			setFlags()
			if runF != nil {
				return runF(opts)
			}
			return Run(opts)
		},
	}
	cmd.Flags().IntVar(&opts.Repeat, "repeat", 1, "run it `K` times and report how often the verdict reproduces")
	cmd.Flags().BoolVar(&opts.Trace, "trace", false, "keep the actions of every run, those that pass too, in the run's directory (traces/<ID>.txt)")
	cmd.Flags().BoolVar(&opts.Follow, "follow", false, "abandon a run that leaves the recorded run's course, and run until --repeat runs followed it (or --tries were made)")
	cmd.Flags().IntVar(&opts.Tries, "tries", 0, "with --follow, make at most `N` runs (default: 4 times --repeat)")
	cmd.Flags().BoolVar(&opts.FromPrefix, "from-prefix", false, "restore, in each run, the saved prefix the recorded run restored (kept in its failure folder), instead of running every step from scratch")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "leave the cluster running after the last step, saying how to reach each server, until Ctrl-C tears it down; keep the run's actions, data and logs whatever its verdict")
	setFlags = cmdutil.AddSettingFlags(cmd, &opts.Settings)
	return cmd
}

// hold says where the kept cluster's servers are and waits for Ctrl-C. A server in a network
// namespace of its own is reached from inside that namespace, which nsenter enters by the
// server's pid.
func hold(ctx context.Context, out io.Writer, k executor.Kept) {
	if k.Namespaces {
		fmt.Fprintf(out, "the cluster is kept running in %s, each server in a network namespace of its own on its system's own ports; run a client in a server's namespace with the nsenter line below (its address: ip -4 addr show eth0 there):\n", k.Dir)
	} else {
		fmt.Fprintf(out, "the cluster is kept running in %s, on ports %d-%d of 127.0.0.1:\n", k.Dir, k.BasePort, k.BasePort+k.Ports-1)
	}
	files, err := proc.PidFiles(k.Dir)
	if err != nil {
		fmt.Fprintf(out, "  (its pid files cannot be read: %v)\n", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f.Path), proc.PidFileSuffix)
		fmt.Fprintf(out, "  %s: pid %d, log %s", name, f.Pid, filepath.Join(filepath.Dir(f.Path), name+".log"))
		if k.Namespaces {
			fmt.Fprintf(out, ", nsenter --net=/proc/%d/ns/net", f.Pid)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out, "press Ctrl-C to tear it down")
	<-ctx.Done()
}

// keptFolder is where the run whose results directory is dir keeps the actions, data and
// logs of its schedule, which record rec ran (executor.Campaign.KeepPasses for a pass).
func keptFolder(dir string, rec results.Record) string {
	if rec.Verdict == oracle.Pass {
		return filepath.Join(dir, results.PassesDir, rec.ID)
	}
	return filepath.Join(dir, results.FailuresDir, rec.ID)
}

// explainDifferences prints, for every run whose verdict differs from the recorded one, the
// first observation in which it differs from the recorded run: why the verdict changed. When
// the recorded run restored a shared prefix and the runs did not (--from-prefix), it says so:
// they ran from scratch.
func explainDifferences(out io.Writer, t *rerun.Target, recs []results.Record) {
	recorded, ok := t.Recorded()
	if !ok {
		return
	}
	differ := slices.ContainsFunc(recs, func(r results.Record) bool { return r.Verdict != recorded.Verdict || r.Class != recorded.Class })
	restoredToo := slices.ContainsFunc(recs, func(r results.Record) bool { return r.Restored != nil }) // --from-prefix
	if rs := recorded.Restored; differ && rs != nil && !restoredToo {
		fmt.Fprintf(out, "the recorded run restored its first %d steps from the cluster that schedule %s's run saved (sha256 %s); a replay runs every step from scratch, unless --from-prefix restores that cluster\n",
			rs.Steps, rs.From, rs.Digest)
	}
	if len(recorded.Observations) == 0 {
		return
	}
	for k, r := range recs {
		if r.Verdict == recorded.Verdict && r.Class == recorded.Class {
			continue
		}
		name := fmt.Sprintf("run %d", k+1)
		d := results.FirstDifference(recorded.Observations, r.Observations, "the recorded run", name)
		if d == "" {
			d = "every observation is the same as in the recorded run"
		}
		fmt.Fprintf(out, "%s: %s, where the recorded run had %s: %s\n", name, r.Outcome(), recorded.Outcome(), d)
	}
}

// Run replays the schedule opts name.
func Run(opts *Options) error {
	if opts.Repeat < 1 {
		return cmdutil.Usagef("--repeat must be at least 1, got %d", opts.Repeat)
	}
	ctx, stop := cmdutil.Interruptible(opts.Context)
	defer stop()
	errOut := cmdutil.Stderr(opts.ErrOut)

	t, err := rerun.Find(opts.Dir, opts.ID)
	if rerun.IsBadTarget(err) {
		return cmdutil.Usage(err)
	}
	if err != nil {
		return err
	}
	if opts.Keep && opts.Repeat != 1 {
		return cmdutil.Usagef("--keep keeps the cluster of one run: drop --repeat")
	}
	if opts.Follow && opts.Keep {
		return cmdutil.Usagef("--keep keeps the cluster of one run: drop --follow")
	}
	mopts := rerun.MeasureOptions{Repeat: opts.Repeat, Follow: opts.Follow, Tries: opts.Tries, FromPrefix: opts.FromPrefix}
	var bad *rerun.OptionError
	if err := t.Check(&mopts); errors.As(err, &bad) {
		return cmdutil.Usage(err)
	} else if err != nil {
		return err
	}
	if err := t.Prepare(ctx, opts.ConfigFile, opts.Overrides, errOut); err != nil {
		return err
	}
	t.Setup.Out, t.Setup.Trace = opts.Out, opts.Trace
	if opts.Keep {
		t.Setup.Hold = func(ctx context.Context, k executor.Kept) { hold(ctx, opts.Out, k) }
		t.Setup.KeepPasses = true // the user asked to keep this run
	}
	mopts.Start = time.Now()
	fmt.Fprintf(opts.Out, "replay %s, %d %s; runs kept in %s\n", opts.ID, opts.Repeat, words.Plural(opts.Repeat, "run", "runs"), filepath.Join(opts.Dir, t.RunsDir(mopts.Start)))
	t.Describe(opts.Out)
	if opts.FromPrefix {
		recorded, _ := t.Recorded() // Check found it restored
		rs := recorded.Restored
		fmt.Fprintf(opts.Out, "each run restores the cluster that %s's run saved after step %d (sha256 %s), as the recorded run did, and runs the steps after it\n",
			rs.From, rs.Steps, rs.Digest)
	}
	m, err := t.Measure(ctx, mopts, "replay")
	if err != nil {
		return err
	}
	if m.Reproduction != nil || m.Made > 0 {
		fmt.Fprintln(opts.Out, m.Line(t))
	}
	if m.Reproduction != nil {
		explainDifferences(opts.Out, t, m.Result.Records)
	}
	if opts.Keep && len(m.Result.Records) == 1 {
		fmt.Fprintf(opts.Out, "the run's actions, data and logs are kept in %s\n", keptFolder(filepath.Join(opts.Dir, m.Dir, "1"), m.Result.Records[0]))
	}
	if m.Result.Interrupted {
		fmt.Fprintf(errOut, "modulo: interrupted after %d of %d runs\n", m.Made, opts.Repeat)
	}
	res := m.Result
	return cmdutil.Outcome{Tally: res.Tally(), Noun: "run", Missing: opts.Repeat - len(res.Records), NotRun: "not made"}.Err()
}
