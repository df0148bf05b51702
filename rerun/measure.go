package rerun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/results"
)

// MeasureOptions say how to measure how often a recorded schedule's verdict reproduces.
type MeasureOptions struct {
	// Repeat is how many runs to judge: runs that followed the recorded course, with Follow.
	Repeat int
	// Follow abandons a run whose observations leave the recorded run's, and makes runs until
	// Repeat of them followed the course to a verdict, or Tries were made (4 times Repeat when
	// 0).
	Follow bool
	Tries  int
	// FromPrefix restores, in each run, the saved prefix the recorded run restored (its
	// failure folder keeps it), where a run otherwise makes every step from scratch.
	FromPrefix bool
	// Start names the directory the runs are kept in (RunsDir); zero for now.
	Start time.Time
}

// RunsDir is where the runs of a measurement started at start are kept, relative to the
// campaign's directory.
func (t *Target) RunsDir(start time.Time) string {
	return filepath.Join(results.ReplaysDir, t.Schedule.ID, start.UTC().Format(results.Stamp))
}

// OptionError says that options cannot apply to a target: the user's to fix.
type OptionError struct{ msg string }

func (e *OptionError) Error() string { return e.msg }

func optionErrorf(format string, args ...any) error {
	return &OptionError{fmt.Sprintf(format, args...)}
}

// Measured is what a measurement found.
type Measured struct {
	// Result holds the runs judged: with Follow, those that followed the recorded course.
	Result Result
	// Made counts every run made, those abandoned for leaving the course included.
	Made int
	// Reproduction is what was appended to the campaign's reproductions; nil when no run was
	// judged.
	Reproduction *results.Reproduction
	// Dir is where the runs are kept, relative to the campaign's directory.
	Dir string
}

// Check checks that the options apply to the target before anything runs: an *OptionError
// when they do not.
func (t *Target) Check(o *MeasureOptions) error {
	if o.Repeat < 1 {
		return optionErrorf("--repeat must be at least 1, got %d", o.Repeat)
	}
	if o.Tries != 0 && !o.Follow {
		return optionErrorf("--tries bounds the runs of --follow: add --follow, or drop --tries")
	}
	if o.Follow {
		if o.Tries == 0 {
			o.Tries = 4 * o.Repeat
		}
		if o.Tries < o.Repeat {
			return optionErrorf("--tries %d is fewer than the %d runs --repeat asks to follow the course", o.Tries, o.Repeat)
		}
		if recorded, ok := t.Recorded(); !ok || len(recorded.Observations) == 0 {
			return optionErrorf("--follow follows the observations of the recorded run, and schedule %s's record has none (its plugin observes nothing)", t.Schedule.ID)
		}
	}
	if o.FromPrefix {
		if _, err := t.keptPrefix(); err != nil {
			return err
		}
	}
	return nil
}

// Measure runs the prepared target as o says (checked by Check) and appends what reproduced
// to the campaign's reproductions, by the command by ("replay").
func (t *Target) Measure(ctx context.Context, o MeasureOptions, by string) (Measured, error) {
	var m Measured
	var prefix *executor.Prefix
	if o.FromPrefix {
		p, err := t.keptPrefix()
		if err != nil {
			return m, err
		}
		prefix = p
	}
	start := o.Start
	if start.IsZero() {
		start = time.Now()
	}
	m.Dir = t.RunsDir(start)
	ropts := Options{Repeat: o.Repeat, Dir: filepath.Join(t.Summary.Dir, m.Dir), Prefix: prefix}
	if o.Follow {
		recorded, _ := t.Recorded()
		ropts.Course, ropts.Tries = recorded.Observations, o.Tries
	}
	res, err := Run(ctx, t.Setup, t.Header, t.Schedule, ropts)
	if err != nil {
		return m, err
	}
	m.Made, m.Result = len(res.Records), res
	if o.Follow {
		// What reproduces is judged on the runs that took the recorded course alone.
		m.Result = res.OnCourse()
	}
	if len(m.Result.Records) == 0 {
		return m, nil
	}
	rep := t.Reproduction(m.Result, by, m.Dir, start)
	if o.Follow {
		rep.Made = m.Made
	}
	rep.FromPrefix = prefix != nil
	if err := results.AppendReproduction(t.Summary.Dir, rep); err != nil {
		return m, err
	}
	m.Reproduction = &rep
	return m, nil
}

// Line says what a measurement found, in one line: "reproduced fail in 4 of the 5 runs that
// followed the recorded course (fail 4, pass 1); 5 of 20 followed it".
func (m Measured) Line(t *Target) string {
	if m.Reproduction == nil {
		if m.Made > 0 {
			return fmt.Sprintf("none of the %d runs followed the recorded course: each left it; nothing is recorded of how often it reproduces", m.Made)
		}
		return "no run reached a verdict"
	}
	rep := m.Reproduction
	line := fmt.Sprintf("reproduced %s in %d of %d runs (%s)", t.Want, rep.Reproduced, rep.Repeat, m.Result.Tally())
	if rep.Made > 0 {
		line = fmt.Sprintf("reproduced %s in %d of the %d runs that followed the recorded course (%s); %d of %d followed it",
			t.Want, rep.Reproduced, rep.Repeat, m.Result.Tally(), rep.Repeat, rep.Made)
	}
	if rep.Flaky() {
		line += ": flaky, not a bug until it fails again"
	}
	return line
}

// keptPrefix reads the saved prefix that the recorded run restored, from its failure folder:
// an *OptionError when there is none to restore.
func (t *Target) keptPrefix() (*executor.Prefix, error) {
	id := t.Schedule.ID
	recorded, ok := t.Recorded()
	if !ok || recorded.Restored == nil {
		return nil, optionErrorf("--from-prefix restores the prefix the recorded run restored, and schedule %s's run started afresh: drop --from-prefix", id)
	}
	p, err := results.ReadPrefix(t.Summary.Dir, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, optionErrorf("--from-prefix: %v (a failure recorded before modulo kept restored prefixes, or one beyond the budget): replay from scratch without it", err)
	}
	if err != nil {
		return nil, err
	}
	if p.Saved.Digest != recorded.Restored.Digest || p.From != recorded.Restored.From {
		return nil, fmt.Errorf("--from-prefix: %s holds the prefix %s saved (sha256 %s), and the record says the run restored %s's (sha256 %s)",
			p.Dir, p.From, p.Saved.Digest, recorded.Restored.From, recorded.Restored.Digest)
	}
	return &executor.Prefix{Dir: p.Dir, From: p.From, Saved: p.Saved, Steps: p.Steps}, nil
}
