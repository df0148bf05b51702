package results

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// Folder is a failure folder read back: what WriteFailure wrote, but for logs and the cluster
// directory, which stay files.
type Folder struct {
	Dir      string
	Schedule schedules.Schedule
	Body     string // the schedule's transitions as its line holds them
	Verdict  oracle.Verdict
	Detail   string // complete
	Actions  []StepActions
	// Snapshot is every replica's data; nil when the run did not get that far.
	Snapshot *cem.Snapshot
}

// readScheduleText reads the schedule a failure folder (dir) ran, and its body as the line
// holds it.
func readScheduleText(dir string) (schedules.Schedule, string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ScheduleText))
	if err != nil {
		return schedules.Schedule{}, "", err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	id, body, ok := strings.Cut(first, " ")
	if !ok || len(id) != schedules.IDLen {
		return schedules.Schedule{}, "", fmt.Errorf("%s: first line is not a schedule line: %q", ScheduleText, first)
	}
	steps, err := schedules.ParseBody(body)
	if err != nil {
		return schedules.Schedule{}, "", fmt.Errorf("%s: %w", ScheduleText, err)
	}
	return schedules.Schedule{ID: id, Steps: steps}, body, nil
}

// ReadFailure reads failures/<id>/ of the campaign directory dir.
func ReadFailure(dir, id string) (Folder, error) {
	f := Folder{Dir: filepath.Join(dir, FailuresDir, id)}
	if err := f.read(); err != nil {
		return f, fmt.Errorf("failure folder %s: %w", f.Dir, err)
	}
	return f, nil
}

func (f *Folder) read() error {
	var err error
	if f.Schedule, f.Body, err = readScheduleText(f.Dir); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(f.Dir, VerdictText))
	if err != nil {
		return err
	}
	head, detail, _ := strings.Cut(string(b), "\n\n")
	v, ok := strings.CutPrefix(head, "verdict: ")
	if !ok {
		return fmt.Errorf("%s: no verdict line", VerdictText)
	}
	f.Verdict, f.Detail = oracle.Verdict(v), strings.TrimRight(detail, "\n")

	if f.Actions, err = readActions(filepath.Join(f.Dir, ActionsText)); err != nil {
		return err
	}

	var rs []replicaJSON
	err = readJSON(filepath.Join(f.Dir, ReplicasJSON), &rs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	snap := &cem.Snapshot{Replicas: make([]cem.ReplicaData, len(rs))}
	for i, r := range rs {
		if r.Replica != i {
			return fmt.Errorf("%s: entry %d is replica %d", ReplicasJSON, i, r.Replica)
		}
		snap.Replicas[i] = cem.ReplicaData{Data: r.Data, Err: r.Err, Group: r.Group}
	}
	f.Snapshot = snap
	return nil
}

// readActions reads back what writeActions wrote.
func readActions(path string) ([]StepActions, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var steps []StepActions
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		bad := func(why string) error {
			return fmt.Errorf("%s:%d: %s: %q", filepath.Base(path), n, why, line)
		}
		switch {
		case line == "no step was taken" && n == 1:
			return nil, nil
		case strings.HasPrefix(line, "step "):
			fields := strings.Fields(line)
			i, err := strconv.Atoi(fields[1])
			if len(fields) != 3 || err != nil || i != len(steps)+1 {
				return nil, bad("not the next step")
			}
			steps = append(steps, StepActions{Step: i - 1, Transition: fields[2]})
		case strings.HasPrefix(line, "  ") && len(steps) > 0:
			a, err := parseAction(line)
			if err != nil {
				return nil, bad(err.Error())
			}
			st := &steps[len(steps)-1]
			st.Actions = append(st.Actions, a)
		default:
			return nil, bad("neither a step nor an action")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return steps, nil
}

// parseAction reads "  TIME  replica N  WHAT" or "  TIME  cluster  WHAT"; TIME is "-" when
// the plugin gave none.
func parseAction(line string) (cem.Action, error) {
	a := cem.Action{Replica: -1}
	when, rest, _ := strings.Cut(strings.TrimLeft(line, " "), " ")
	if when != "-" {
		t, err := time.Parse(actionTime, when)
		if err != nil {
			return a, errors.New("bad time")
		}
		a.Time = t
	}
	rest = strings.TrimLeft(rest, " ")
	if r, ok := strings.CutPrefix(rest, "replica "); ok {
		num, what, _ := strings.Cut(r, " ")
		i, err := strconv.Atoi(num)
		if err != nil {
			return a, errors.New("bad replica")
		}
		a.Replica, rest = i, what
	} else if r, ok := strings.CutPrefix(rest, "cluster "); ok {
		rest = r
	} else {
		return a, errors.New("neither replica N nor cluster")
	}
	a.What = strings.TrimLeft(rest, " ")
	return a, nil
}

// ReadEvidence reads what schedule id's fail was judged from (JudgedJSON) in the campaign
// directory dir; an error wrapping fs.ErrNotExist when its failure folder keeps none (a
// non-pass that was not a fail, or a fail recorded before modulo kept it).
func ReadEvidence(dir, id string) (oracle.Evidence, error) {
	var e oracle.Evidence
	if err := readJSON(filepath.Join(dir, FailuresDir, id, JudgedJSON), &e); err != nil {
		return e, fmt.Errorf("evidence of %s: %w", id, err)
	}
	return e, nil
}
