package results

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// outputFormat is a value of --format and what writes the summaries in it.
type outputFormat struct {
	name  string
	write func(io.Writer, []*results.Summary) error
}

// formats are the values of --format, the default first.
var formats = []outputFormat{{"text", writeText}, {"json", writeJSON}, {"junit", writeJUnit}}

// formatNames lists the formats' names for the help and errors: "text, json or junit".
func formatNames() string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// writeText writes each summary as Summary.WriteText does, a blank line between two.
func writeText(w io.Writer, sums []*results.Summary) error {
	for i, s := range sums {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := s.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

// The JSON document of --format json. Its field names are a promise to the programs that read
// it, listed in the command's help: rename none.
type (
	jsonDoc struct {
		Campaigns []jsonEntry `json:"campaigns"`
	}
	jsonEntry struct {
		Dir       string       `json:"dir"`
		Campaign  jsonCampaign `json:"campaign"`
		Summary   jsonSummary  `json:"summary"`
		Groups    []jsonGroup  `json:"groups"`
		NotPassed []jsonRecord `json:"not_passed"`
	}
	jsonCampaign struct {
		DRM           string    `json:"drm"`
		Ops           int       `json:"ops"`
		Replicas      int       `json:"replicas"`
		ScheduleFile  string    `json:"schedule_file"`
		Plugin        string    `json:"plugin"`
		PluginVersion string    `json:"plugin_version"`
		ServerVersion string    `json:"server_version"`
		ModuloVersion string    `json:"modulo_version"`
		Started       time.Time `json:"started"`
	}
	jsonSummary struct {
		Total         uint64         `json:"total"`
		Done          int            `json:"done"`
		Pass          int            `json:"pass"`
		Fail          int            `json:"fail"`
		Flaky         int            `json:"flaky"`
		Incomplete    int            `json:"incomplete"`
		Error         int            `json:"error"`
		Nonconformant int            `json:"nonconformant"`
		Unrealisable  int            `json:"unrealisable"`
		FailedByClass map[string]int `json:"failed_by_class"`
		NotPassedKind map[string]int `json:"not_passed_by_kind"`
	}
	jsonRecord struct {
		ID         string `json:"id"`
		Verdict    string `json:"verdict"`
		Flaky      bool   `json:"flaky"`
		Class      string `json:"class"`
		Step       int    `json:"step"`
		Detail     string `json:"detail"`
		AtEnd      string `json:"at_end"`
		FailureDir string `json:"failure_dir"`
		Signature  string `json:"signature"`
		Group      int    `json:"group"`
	}
	// jsonGroup is a results.Group; Group in jsonRecord is its 1-based place in Groups.
	jsonGroup struct {
		Signature     string    `json:"signature"`
		Schedules     []string  `json:"schedules"`
		Runs          int       `json:"independent_runs"`
		FirstSeen     time.Time `json:"first_seen"`
		Shortest      string    `json:"shortest"`
		ShortestSteps int       `json:"shortest_steps"`
		Replayed      int       `json:"replayed"`
		Reproduced    int       `json:"reproduced"`
		Repeat        int       `json:"runs_replayed"`
		Followed      int       `json:"runs_followed"`
		Made          int       `json:"runs_made"`
	}
)

// writeJSON writes the summaries as one JSON document.
func writeJSON(w io.Writer, sums []*results.Summary) error {
	doc := jsonDoc{Campaigns: make([]jsonEntry, len(sums))}
	for i, s := range sums {
		c, n := s.Campaign, s.Counts()
		e := jsonEntry{
			Dir: s.Dir,
			Campaign: jsonCampaign{
				DRM: c.DRM, Ops: c.Ops, Replicas: c.Replicas, ScheduleFile: c.ScheduleFile,
				Plugin: c.Plugin, PluginVersion: c.PluginVersion, ServerVersion: c.ServerVersion,
				ModuloVersion: c.Modulo, Started: c.Started,
			},
			Summary: jsonSummary{
				Total: s.Total, Done: s.Done(),
				Pass: n.Pass, Fail: n.Fail, Flaky: n.Flaky, Incomplete: n.Incomplete, Error: n.Error,
				Nonconformant: n.Nonconformant, Unrealisable: n.Unrealisable, FailedByClass: map[string]int{}, NotPassedKind: map[string]int{},
			},
			NotPassed: []jsonRecord{}, // [], not null, when every schedule passed
			Groups:    []jsonGroup{},
		}
		groups := s.Groups()
		for _, g := range groups {
			e.Groups = append(e.Groups, jsonGroup{
				Signature: g.Signature, Schedules: g.IDs, Runs: g.Runs, FirstSeen: g.First,
				Shortest: g.Shortest, ShortestSteps: g.ShortestSteps,
				Replayed: g.Replayed, Reproduced: g.Reproduced, Repeat: g.Repeat, Followed: g.Followed, Made: g.Made,
			})
		}
		groupOf := results.GroupNumbers(groups)
		byClass, _ := s.ClassCounts()
		for class, n := range byClass {
			e.Summary.FailedByClass[string(class)] = n
		}
		byKind, _ := s.NotPassedKindCounts()
		for kind, n := range byKind {
			e.Summary.NotPassedKind[kind.String()] = n
		}
		for _, r := range s.NotPassed() {
			rec := jsonRecord{
				ID: r.ID, Verdict: string(r.Verdict), Flaky: s.Label(r) == results.FlakyLabel,
				Step: r.Step, Detail: r.Detail, AtEnd: r.AtEnd, FailureDir: failureDir(s.Dir, r.ID),
				Signature: results.Signature(r), Group: groupOf[r.ID],
			}
			if r.Verdict == oracle.Fail {
				rec.Class = string(r.FailClass())
			}
			e.NotPassed = append(e.NotPassed, rec)
		}
		doc.Campaigns[i] = e
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // details quote values, which may hold <, > and &
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// failureDir returns schedule id's failure folder relative to the campaign's directory dir, or
// "" when there is none: every recorded non-pass has one, but a folder can have been deleted
// to save room.
func failureDir(dir, id string) string {
	rel := filepath.Join(results.FailuresDir, id)
	if fi, err := os.Stat(filepath.Join(dir, rel)); err != nil || !fi.IsDir() {
		return ""
	}
	return rel
}

// The JUnit XML of --format junit, as Ant wrote it and CI systems (Jenkins, GitLab, GitHub's
// test reporters) read it; Maven Surefire added flakyFailure and flakyError.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Timestamp  string          `xml:"timestamp,attr"`
		Properties []junitProperty `xml:"properties>property"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Classname    string        `xml:"classname,attr"`
		Name         string        `xml:"name,attr"`
		Time         string        `xml:"time,attr"`
		Skipped      *junitProblem `xml:"skipped"`
		Failure      *junitProblem `xml:"failure"`
		Error        *junitProblem `xml:"error"`
		FlakyFailure *junitProblem `xml:"flakyFailure"`
		FlakyError   *junitProblem `xml:"flakyError"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// writeJUnit writes the summaries as one JUnit XML document: a test suite per campaign, a
// test case per schedule with a verdict.
func writeJUnit(w io.Writer, sums []*results.Summary) error {
	var doc junitSuites
	var total time.Duration
	for _, s := range sums {
		suite, took, err := junitSuiteOf(s)
		if err != nil {
			return err
		}
		doc.Suites = append(doc.Suites, suite)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Errors += suite.Errors
		total += took
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	return nil
}

// junitSuiteOf returns the test suite of campaign s, and the time its schedules took.
func junitSuiteOf(s *results.Summary) (junitSuite, time.Duration, error) {
	c := s.Campaign
	// A test case's name holds its schedule's transitions; the records hold only IDs.
	ids := map[string]bool{}
	for _, r := range s.Latest {
		ids[r.ID] = true
	}
	found, err := results.FindSchedules(c, ids)
	if err != nil {
		return junitSuite{}, 0, fmt.Errorf("%s: name the test cases: %w", s.Dir, err)
	}
	suite := junitSuite{
		Name:      fmt.Sprintf("modulo %s ops=%d replicas=%d", c.DRM, c.Ops, c.Replicas),
		Tests:     len(s.Latest),
		Timestamp: c.Started.UTC().Format(time.RFC3339),
		Properties: []junitProperty{
			{"campaign", s.Dir}, {"schedule_file", c.ScheduleFile},
			{"plugin", c.Plugin}, {"plugin_version", c.PluginVersion},
			{"server_version", c.ServerVersion}, {"modulo_version", c.Modulo},
		},
	}
	var total time.Duration
	for _, r := range s.Latest {
		took := max(r.End.Sub(r.Start), 0)
		total += took
		tc := junitCase{Classname: "modulo." + c.DRM, Name: r.ID, Time: seconds(took)}
		if sc, ok := found[r.ID]; ok {
			tc.Name += " " + string(schedules.Body(sc.Steps))
		}
		if r.Verdict == oracle.Unrealisable {
			// Not given, so not tested: JUnit's skip, with the plugin's reason.
			tc.Skipped = &junitProblem{Message: r.Detail, Type: string(oracle.Unrealisable)}
			suite.Skipped++
		} else if r.Verdict != oracle.Pass {
			p, isError := junitProblemOf(r)
			// A schedule that its replays did not reproduce is not a bug until it fails
			// again (see Summary.Flaky): it passes, marked, and counts as neither.
			switch flaky := s.Flaky(r.ID); {
			case isError && flaky:
				tc.FlakyError = p
			case isError:
				tc.Error = p
				suite.Errors++
			case flaky:
				tc.FlakyFailure = p
			default:
				tc.Failure = p
				suite.Failures++
			}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Time = seconds(total)
	return suite, total, nil
}

// junitProblemOf returns what the test case of a record that did not pass holds, and whether
// it is an error (of the harness) rather than a failure. An incomplete schedule did not reach
// the state a step needed: a failure to a CI's eye, not a skip.
func junitProblemOf(r results.Record) (p *junitProblem, isError bool) {
	var kind string
	switch r.Verdict {
	case oracle.Fail:
		kind = string(r.FailClass())
	case oracle.Incomplete:
		kind = string(oracle.Incomplete)
	case oracle.Nonconformant: // modulo's, not the system's: an error to a CI's eye
		kind, isError = string(oracle.Nonconformant), true
	default: // as oracle.Tally counts a verdict it does not know
		kind, isError = string(oracle.Error), true
	}
	p = &junitProblem{Message: kind, Type: kind, Text: r.Detail + "\nsignature: " + results.Signature(r)}
	if r.Detail != "" {
		p.Message += ": " + r.Detail
	}
	return p, isError
}

// seconds writes d as JUnit's time attributes have it: seconds, to the millisecond.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
