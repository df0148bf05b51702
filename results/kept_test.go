package results_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// keptCampaigns are every real campaign kept in the repository's test data: this package's
// (testdata/campaigns) and the report's (../report/testdata).
func keptCampaigns(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, parent := range []string{filepath.Join("testdata", "campaigns"), filepath.Join("..", "report", "testdata")} {
		found, err := results.Campaigns(parent)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, found...)
	}
	if len(dirs) < 6 {
		t.Fatalf("found %d kept campaigns (%q), want every one of the two testdata directories", len(dirs), dirs)
	}
	return dirs
}

// TestKeptCampaigns judges the kept campaigns again with the current oracle, as etcd's
// robustness tests judge their kept reports again (TestDataReports): every recorded fail is
// judged from the evidence its failure folder keeps (judged.json) and must come out as
// recorded, with the same class and step; a schedule recorded otherwise must keep no such
// evidence. Then the campaign's groups, with each fail's difference as the current oracle
// finds it, must be those of testdata/groups/<name>.golden (go test -update rewrites them, for
// a change meant to regroup). A change to the oracle or to the signatures that flips a kept
// verdict, or splits or merges a group, fails here, as does a verdict flipped by hand.
func TestKeptCampaigns(t *testing.T) {
	for _, dir := range keptCampaigns(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			s, err := results.ReadSummary(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range s.Latest {
				problem, again := judgeAgain(s.Dir, r)
				if problem != "" {
					t.Errorf("%s: %s", r.ID, problem)
				}
				s.Latest[i] = again
			}
			var b strings.Builder
			for i, g := range s.Groups() {
				fmt.Fprintf(&b, "group %d: %s\n  %s\n", i+1, g.Signature, strings.Join(g.IDs, " "))
			}
			checkGolden(t, filepath.Join("testdata", "groups", name+".golden"), []byte(b.String()))
		})
	}
}

// judgeAgain says how record r disagrees with what the current oracle makes of its evidence,
// or "" when it agrees, and returns r with the difference the current oracle finds.
func judgeAgain(dir string, r results.Record) (string, results.Record) {
	e, err := results.ReadEvidence(dir, r.ID)
	if r.Verdict != oracle.Fail {
		if err == nil {
			return fmt.Sprintf("recorded %s, yet its failure folder keeps the evidence of a fail", r.Verdict), r
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err.Error(), r
		}
		return "", r
	}
	if err != nil {
		return fmt.Sprintf("recorded fail, without the evidence to judge it again: %v", err), r
	}
	got := oracle.Judge(e)
	r.Difference = got.Difference
	switch {
	case got.Class == "":
		return fmt.Sprintf("recorded fail (%s), and the current oracle judges its evidence a pass", r.Class), r
	case got.Class != r.Class:
		return fmt.Sprintf("recorded fail (%s), and the current oracle judges it fail (%s)", r.Class, got.Class), r
	case e.Step != r.Step:
		return fmt.Sprintf("recorded after step %d, and its evidence is of step %d", r.Step, e.Step), r
	}
	return "", r
}

// TestJudgeAgainFlipped: a verdict flipped by hand, either way, or a class changed, is caught.
func TestJudgeAgainFlipped(t *testing.T) {
	dir := filepath.Join("testdata", "campaigns", "mdl-1x2")
	s, err := results.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fail, pass *results.Record
	for i, r := range s.Latest {
		switch r.Verdict {
		case oracle.Fail:
			fail = &s.Latest[i]
		case oracle.Pass:
			pass = &s.Latest[i]
		}
	}
	if fail == nil || pass == nil {
		t.Fatalf("%s: want a fail and a pass to flip", dir)
	}
	if p, _ := judgeAgain(dir, *fail); p != "" {
		t.Fatalf("as recorded: %s", p)
	}
	flips := []struct {
		name string
		r    results.Record
	}{
		{"fail to pass", withVerdict(*fail, oracle.Pass, "")},
		{"fail to incomplete", withVerdict(*fail, oracle.Incomplete, "")},
		{"another class", withVerdict(*fail, oracle.Fail, oracle.SelfCheck)},
		{"pass to fail", withVerdict(*pass, oracle.Fail, fail.Class)},
	}
	for _, f := range flips {
		if p, _ := judgeAgain(dir, f.r); p == "" {
			t.Errorf("%s: not caught", f.name)
		}
	}
}

func withVerdict(r results.Record, v oracle.Verdict, c oracle.Class) results.Record {
	r.Verdict, r.Class = v, c
	return r
}

// TestKeptObservationSteps: the kept campaigns' records, written when observations numbered
// their steps from 0, read as observed after steps 1 to the last step taken, as their
// actions.txt and every message number them.
func TestKeptObservationSteps(t *testing.T) {
	observed := 0
	for _, dir := range keptCampaigns(t) {
		recs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			for _, so := range r.Observations {
				observed++
				if so.Step < 1 || so.Step > len(r.StepsMS) {
					t.Errorf("%s: %s observed after step %d, not one of its %d steps taken", filepath.Base(dir), r.ID, so.Step, len(r.StepsMS))
				}
			}
		}
	}
	if observed == 0 {
		t.Fatal("no kept record observed anything")
	}
}
