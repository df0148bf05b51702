package results

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/fsutil"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// Names of the files of a failure folder.
const (
	ScheduleText = "schedule.txt" // the schedule's line and its paper-style rendering
	VerdictText  = "verdict.txt"  // the verdict and the complete detail
	ActionsText  = "actions.txt"  // the concrete actions taken, with their times
	ReplicasJSON = "replicas.json"
	// JudgedJSON holds what a fail was judged from (oracle.Evidence), for judging it again.
	JudgedJSON = "judged.json"
	// PrefixDir holds, for a schedule that restored a prefix another schedule's run saved,
	// that saved cluster, and PrefixJSON what that run reported of its steps (KeptPrefix):
	// what `replay --from-prefix` restores.
	PrefixDir  = "prefix"
	PrefixJSON = "prefix.json"
	LogsDir    = "logs"    // copies of the servers' *.log files
	ClusterDir = "cluster" // the cluster directory, moved here
	// TracesDir holds, with --trace, the actions of every schedule that passed: <ID>.txt.
	TracesDir = "traces"
	// PassesDir holds, for a run asked to keep its schedule whatever its verdict (replay
	// --keep), the folder of a schedule that passed, <ID>/: what a failure folder holds.
	PassesDir = "passes"
)

// StepActions are the actions the plugin took for one step.
type StepActions struct {
	Step       int // 0-based
	Transition string
	Actions    []cem.Action
}

// Failure is everything a failure folder holds about one schedule that did not pass.
type Failure struct {
	Header   schedules.Header
	Schedule schedules.Schedule
	Record   Record
	// Detail is the record's detail in full, where the record's is capped to one line.
	Detail  string
	Actions []StepActions
	// Snapshot is every replica's data; nil when the run did not get that far.
	Snapshot *cem.Snapshot
	// Evidence is what a fail was judged from; nil for other verdicts.
	Evidence *oracle.Evidence
	// Prefix is the saved prefix the run restored; nil for a run from scratch. Its directory
	// is copied into the folder, within ClusterBudget.
	Prefix *KeptPrefix
	// Cluster is the cluster directory, moved into the folder; empty when there was none.
	Cluster string
	// ClusterBudget bounds the disk the moved cluster directory takes, in bytes: beyond it,
	// its largest files are left out (the servers' logs are in logs/ whatever it says), and
	// LeftOutText names them. Zero means DefaultClusterBudget.
	ClusterBudget int64
}

// DefaultClusterBudget is Failure.ClusterBudget's default: an etcd failure of three members
// on power-loss file systems kept 367 MB (its WAL files whole), and a campaign of 60 such
// failures took 22 GB; the files a reader needs are small.
const DefaultClusterBudget = 256 << 20

// LeftOutText, in a failure folder's cluster directory, names the files its budget left out.
const LeftOutText = "LEFT-OUT.txt"

// FailureDir returns the failure folder of schedule id.
func (s *Store) FailureDir(id string) string { return filepath.Join(s.dir, FailuresDir, id) }

// PassDir returns the folder of schedule id, which passed, where a run keeps it (WritePass).
func (s *Store) PassDir(id string) string { return filepath.Join(s.dir, PassesDir, id) }

// WriteFailure writes the failure folder of f.Record.ID, replacing any left by an earlier run
// that was killed before recording. Call it before Append, so that every recorded non-pass
// has its complete folder.
func (s *Store) WriteFailure(f Failure) error {
	return writeFolder(s.FailureDir(f.Record.ID), f)
}

// WritePass writes, for a schedule that passed in a run asked to keep it, what a failure
// folder holds into PassDir: its actions, replicas' data, servers' logs and cluster directory.
// Call it before Append, as WriteFailure.
func (s *Store) WritePass(f Failure) error {
	return writeFolder(s.PassDir(f.Record.ID), f)
}

// writeFolder writes the folder of f into dir, replacing whatever dir held.
func writeFolder(dir string, f Failure) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("folder: %w", err)
	}
	err := errors.Join(
		writeText(filepath.Join(dir, ScheduleText), func(w io.Writer) error {
			return writeSchedule(w, f.Header, f.Schedule)
		}),
		writeText(filepath.Join(dir, VerdictText), func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "verdict: %s\n\n%s\n", f.Record.Verdict, strings.TrimRight(f.Detail, "\n"))
			return err
		}),
		writeText(filepath.Join(dir, ActionsText), func(w io.Writer) error { return writeActions(w, f.Actions) }),
	)
	if f.Snapshot != nil {
		err = errors.Join(err, writeJSON(filepath.Join(dir, ReplicasJSON), replicasOf(f.Snapshot)))
	}
	if f.Evidence != nil {
		err = errors.Join(err, writeJSON(filepath.Join(dir, JudgedJSON), f.Evidence))
	}
	if f.Prefix != nil {
		err = errors.Join(err, keepPrefix(dir, *f.Prefix, f.ClusterBudget))
	}
	if f.Cluster != "" {
		err = errors.Join(err, copyLogs(f.Cluster, filepath.Join(dir, LogsDir)))
		if mvErr := os.Rename(f.Cluster, filepath.Join(dir, ClusterDir)); mvErr != nil {
			err = errors.Join(err, fmt.Errorf("keep cluster directory: %w", mvErr))
		} else if _, pErr := fsutil.PunchZeros(filepath.Join(dir, ClusterDir)); pErr != nil {
			// Files written as zeros (etcd's preallocated WALs) would weigh what they claim:
			// 250 MB a failure of three members, and a campaign's failures fill a disk.
			err = errors.Join(err, fmt.Errorf("keep cluster directory: %w", pErr))
		} else if bErr := keepWithin(filepath.Join(dir, ClusterDir), f.ClusterBudget); bErr != nil {
			err = errors.Join(err, fmt.Errorf("keep cluster directory: %w", bErr))
		}
	}
	if err != nil {
		return fmt.Errorf("folder %s: %w", dir, err)
	}
	return nil
}

// KeptPrefix is a saved prefix a failure's run restored, as its failure folder keeps it:
// PrefixJSON holds this, and PrefixDir the saved cluster (Dir, when read back).
type KeptPrefix struct {
	// Dir is the saved cluster: where the run found it, or PrefixDir once kept.
	Dir  string `json:"-"`
	From string `json:"from"` // the schedule whose run saved it
	// Saved is what its save reported: the files, their size and digest.
	Saved cem.Saved `json:"saved"`
	// Steps are what that run reported of each step of the prefix.
	Steps []cem.StepReport `json:"steps"`
	// LeftOut, when set, says why PrefixDir was not kept (too large for the budget).
	LeftOut string `json:"left_out,omitempty"`
}

// keepPrefix copies the saved prefix p into the failure folder dir, unless it takes more than
// budget (DefaultClusterBudget for 0): then PrefixJSON says so, and a replay runs from
// scratch.
func keepPrefix(dir string, p KeptPrefix, budget int64) error {
	if budget <= 0 {
		budget = DefaultClusterBudget
	}
	if p.Saved.Bytes > budget {
		p.LeftOut = fmt.Sprintf("the saved cluster takes %d bytes, beyond the failure folder's budget of %d (failure_budget_mb)", p.Saved.Bytes, budget)
	} else {
		to := filepath.Join(dir, PrefixDir)
		if err := fsutil.CopyTree(p.Dir, to); err != nil {
			return fmt.Errorf("keep the restored prefix: %w", err)
		}
		if _, err := fsutil.PunchZeros(to); err != nil {
			return fmt.Errorf("keep the restored prefix: %w", err)
		}
	}
	return writeJSON(filepath.Join(dir, PrefixJSON), p)
}

// ReadPrefix reads the saved prefix that the failure folder of schedule id, in the campaign
// directory dir, keeps; an error wrapping fs.ErrNotExist when it keeps none.
func ReadPrefix(dir, id string) (KeptPrefix, error) {
	var p KeptPrefix
	folder := filepath.Join(dir, FailuresDir, id)
	if err := readJSON(filepath.Join(folder, PrefixJSON), &p); err != nil {
		return p, fmt.Errorf("restored prefix of %s: %w", id, err)
	}
	if p.LeftOut != "" {
		return p, fmt.Errorf("restored prefix of %s: not kept: %s: %w", id, p.LeftOut, fs.ErrNotExist)
	}
	p.Dir = filepath.Join(folder, PrefixDir)
	return p, nil
}

// keepWithin leaves out of the cluster directory dir its largest files, one by one, until the
// disk it takes is within budget (DefaultClusterBudget for 0), and names them in LeftOutText:
// a failure is read from its logs, actions and data, and replayed from scratch, neither of
// which needs a server's whole state.
func keepWithin(dir string, budget int64) error {
	if budget <= 0 {
		budget = DefaultClusterBudget
	}
	type file struct {
		path string
		used int64
	}
	var files []file
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		used, err := fsutil.Allocated(path)
		files, total = append(files, file{path, used}), total+used
		return err
	})
	if err != nil || total <= budget {
		return err
	}
	slices.SortStableFunc(files, func(a, b file) int { return cmp.Compare(b.used, a.used) })
	var lines []string
	for _, f := range files {
		if total <= budget {
			break
		}
		if err := os.Remove(f.path); err != nil {
			return err
		}
		total -= f.used
		rel, _ := filepath.Rel(dir, f.path)
		lines = append(lines, fmt.Sprintf("%s\t%d bytes on disk", rel, f.used))
	}
	head := fmt.Sprintf("Left out of this copy of the cluster's directory, largest first, to keep it within %d MiB (failure_budget_mb);\n"+
		"the servers' logs are whole in ../%s, and a replay runs from scratch.\n", budget>>20, LogsDir)
	return os.WriteFile(filepath.Join(dir, LeftOutText), []byte(head+strings.Join(lines, "\n")+"\n"), 0o644)
}

// TracePath returns the trace file of schedule id.
func (s *Store) TracePath(id string) string { return filepath.Join(s.dir, TracesDir, id+".txt") }

// WriteTrace writes the trace of schedule id, which passed: the schedule, then every action
// taken, as a failure folder's actions.txt has them.
func (s *Store) WriteTrace(h schedules.Header, sc schedules.Schedule, steps []StepActions) error {
	path := s.TracePath(sc.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return writeText(path, func(w io.Writer) error {
		if err := writeSchedule(w, h, sc); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return writeActions(w, steps)
	})
}

func writeText(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := errors.Join(write(f), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// writeSchedule writes the schedule's line as it stands in its file, then the schedule as
// `modulo show` prints it.
func writeSchedule(w io.Writer, h schedules.Header, s schedules.Schedule) error {
	fmt.Fprintf(w, "%s %s\n\n", s.ID, schedules.Body(s.Steps))
	fmt.Fprintf(w, "%s (%s on %s), ops=%d, replicas=%d, line %d of the schedule file\n",
		h.DRM.Title, h.DRM.Name, h.DRM.System, h.Params.Ops, h.Params.Replicas, s.Line)
	g, err := aem.NewGraph(h.DRM.Model, h.Params)
	if err != nil {
		return err
	}
	return schedules.Render(w, g, s)
}

// actionTime is the layout of an action's time in actions.txt: fixed width, in UTC.
const actionTime = "2006-01-02T15:04:05.000000Z"

func writeActions(w io.Writer, steps []StepActions) error {
	if len(steps) == 0 {
		_, err := fmt.Fprintln(w, "no step was taken")
		return err
	}
	for _, st := range steps {
		fmt.Fprintf(w, "step %d %s\n", st.Step+1, st.Transition)
		for _, a := range st.Actions {
			fmt.Fprintf(w, "  %s\n", FormatAction(a, actionTime))
		}
	}
	return nil
}

// FormatAction renders an action as "TIME  WHO  WHAT": its time in UTC in layout, padded
// to the layout's width ("-" when the plugin gave none), "replica N" or "cluster" padded
// to 10, and what was done.
func FormatAction(a cem.Action, layout string) string {
	when := "-"
	if !a.Time.IsZero() {
		when = a.Time.UTC().Format(layout)
	}
	who := "cluster"
	if a.Replica >= 0 {
		who = fmt.Sprintf("replica %d", a.Replica)
	}
	return fmt.Sprintf("%-*s  %-10s  %s", len(layout), when, who, a.What)
}

// replicaJSON is one replica in replicas.json.
type replicaJSON struct {
	Replica int               `json:"replica"`
	Err     string            `json:"err,omitempty"`
	Group   int               `json:"group,omitempty"`
	Data    map[string]string `json:"data"`
}

func replicasOf(snap *cem.Snapshot) []replicaJSON {
	rs := make([]replicaJSON, len(snap.Replicas))
	for i, r := range snap.Replicas {
		rs[i] = replicaJSON{Replica: i, Err: r.Err, Group: r.Group, Data: r.Data}
	}
	return rs
}

// writeJSON writes v to path as indented JSON (encoding/json sorts map keys), as a failure
// folder's files are.
func writeJSON(path string, v any) error {
	return writeText(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// readJSON reads back into v what writeJSON wrote to path; a JSON error names the file.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// copyLogs copies every *.log file under from to the same relative path under to.
func copyLogs(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || filepath.Ext(path) != ".log" {
			return nil
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return fsutil.CopyFile(path, dst)
	})
}
