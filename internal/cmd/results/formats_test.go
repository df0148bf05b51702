package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joshdk/go-junit"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// fixture is a small campaign that TestRunFormats writes through the results package: a schedule
// for every kind of line the formats must get right, and 84 of the file's 90 never run.
type fixture struct {
	dir      string
	started  time.Time
	names    map[string]string // the test case name of each schedule, by ID
	pass     string            // passed
	fail     string            // failed a check, with a detail that XML must escape
	errored  string            // an error of the harness, with no failure folder
	incomp   string            // incomplete
	retried  string            // an error, then a pass: the pass holds
	flaky    string            // failed, but its replay did not reproduce that
	notModel string            // passed, but is not a schedule of the model: no body known
}

// Details of the fixture's non-passes: values quoted as the oracle quotes them, with the
// characters that XML must escape.
const (
	failDetail   = `after step 2: 1 key differs: k1.1 (r0="a<b & \"c\"" r1=<missing>)`
	errorDetail  = `plugin exited: read |0: file already closed & "gone"`
	incompDetail = `step 2 C[0,1]<1,-,1>: not reached before the deadline: replica 1 in sync`
	flakyDetail  = `1 key differs: k1.1 (r0="x" r1=<missing>)`
)

// writeFixture writes the fixture campaign into a new directory.
func writeFixture(t *testing.T) fixture {
	t.Helper()
	d, err := drms.Lookup("slr")
	if err != nil {
		t.Fatal(err)
	}
	h, ss, err := schedules.Generated(d, aem.Params{Ops: 2, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{
		dir: t.TempDir(), started: time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC), names: map[string]string{},
		pass: ss[0].ID, fail: ss[1].ID, errored: ss[2].ID, incomp: ss[3].ID, retried: ss[4].ID, flaky: ss[5].ID,
		notModel: "0123456789abcdef",
	}
	for _, s := range ss {
		f.names[s.ID] = s.ID + " " + string(schedules.Body(s.Steps))
	}
	f.names[f.notModel] = f.notModel
	st, err := results.Open(f.dir, results.Campaign{
		DRM: "slr", Ops: 2, Replicas: 3, ScheduleFile: "slr.sched", Plugin: "redis", PluginVersion: "0.1.0",
		ServerVersion: "7.0.15", Modulo: "0.1.0", Started: f.started, Schedules: uint64(len(ss)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Each record took a second more than the one before.
	n := 0
	record := func(r results.Record) results.Record {
		n++
		r.DRM, r.Plugin, r.PluginVersion, r.ServerVersion = "slr", "redis", "0.1.0", "7.0.15"
		r.Start = f.started.Add(time.Duration(n) * time.Minute)
		r.End = r.Start.Add(time.Duration(n)*time.Second + 250*time.Millisecond)
		return r
	}
	failed := func(s schedules.Schedule, r results.Record) {
		t.Helper()
		r = record(r)
		if err := st.WriteFailure(results.Failure{Header: h, Schedule: s, Record: r, Detail: r.Detail}); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []results.Record{
		{ID: f.pass, Verdict: oracle.Pass},
		{ID: f.errored, Verdict: oracle.Error, Detail: errorDetail},
		{ID: f.retried, Verdict: oracle.Error, Detail: "port busy"},
		{ID: f.retried, Verdict: oracle.Pass},
		{ID: f.notModel, Verdict: oracle.Pass},
	} {
		if err := st.Append(record(r)); err != nil {
			t.Fatal(err)
		}
	}
	failed(ss[1], results.Record{ID: f.fail, Verdict: oracle.Fail, Class: oracle.LostWrite, Step: 2, Detail: failDetail, AtEnd: "pass"})
	failed(ss[3], results.Record{ID: f.incomp, Verdict: oracle.Incomplete, Detail: incompDetail})
	// A record older than the classes says none: a divergence.
	failed(ss[5], results.Record{ID: f.flaky, Verdict: oracle.Fail, Detail: flakyDetail})
	if err := results.AppendReproduction(f.dir, results.Reproduction{
		ID: f.flaky, Want: oracle.Fail, Repeat: 2, Verdicts: map[oracle.Verdict]int{oracle.Pass: 2}, By: "replay",
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRunFormats prints the fixture campaign in every format and reads each back as its
// readers would.
func TestRunFormats(t *testing.T) {
	f := writeFixture(t)
	tests := []struct {
		format string
		check  func(*testing.T, fixture, []byte)
	}{
		{"", checkText},
		{"text", checkText},
		{"json", checkJSON},
		{"junit", checkJUnit},
	}
	for _, tt := range tests {
		t.Run("format="+tt.format, func(t *testing.T) {
			var out bytes.Buffer
			if err := Run(&Options{Out: &out, Dir: f.dir, Format: tt.format}); err != nil {
				t.Fatal(err)
			}
			tt.check(t, f, out.Bytes())
		})
	}
}

// checkText checks that the text is the summary's, as it was before --format.
func checkText(t *testing.T, f fixture, out []byte) {
	s, err := results.ReadSummary(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := s.WriteText(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want.Bytes()) {
		t.Errorf("text:\n%s\nwant:\n%s", out, want.Bytes())
	}
}

// The JSON document as the command's help documents it, read as a program would.
type (
	docJSON struct {
		Campaigns []entryJSON `json:"campaigns"`
	}
	entryJSON struct {
		Dir      string `json:"dir"`
		Campaign struct {
			DRM           string `json:"drm"`
			Ops           int    `json:"ops"`
			Replicas      int    `json:"replicas"`
			ScheduleFile  string `json:"schedule_file"`
			Plugin        string `json:"plugin"`
			PluginVersion string `json:"plugin_version"`
			ServerVersion string `json:"server_version"`
			ModuloVersion string `json:"modulo_version"`
			Started       string `json:"started"`
		} `json:"campaign"`
		Summary struct {
			Total         int            `json:"total"`
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
		} `json:"summary"`
		Groups    []groupJSON  `json:"groups"`
		NotPassed []recordJSON `json:"not_passed"`
	}
	groupJSON struct {
		Signature     string   `json:"signature"`
		Schedules     []string `json:"schedules"`
		Runs          int      `json:"independent_runs"`
		FirstSeen     string   `json:"first_seen"`
		Shortest      string   `json:"shortest"`
		ShortestSteps int      `json:"shortest_steps"`
		Replayed      int      `json:"replayed"`
		Reproduced    int      `json:"reproduced"`
		Repeat        int      `json:"runs_replayed"`
		Followed      int      `json:"runs_followed"`
		Made          int      `json:"runs_made"`
	}
	recordJSON struct {
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
)

// checkJSON checks that the document has every documented field and no other, and what they hold.
func checkJSON(t *testing.T, f fixture, out []byte) {
	var doc docJSON
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	if dec.More() {
		t.Errorf("more than one JSON document:\n%s", out)
	}
	// Every documented field is there, even when it holds its zero value.
	var raw struct {
		Campaigns []struct {
			Campaign, Summary map[string]any
			NotPassed         []map[string]any `json:"not_passed"`
			Groups            []map[string]any
		}
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Campaigns) != 1 {
		t.Fatalf("%d campaigns, want 1:\n%s", len(raw.Campaigns), out)
	}
	wantKeys := map[string][]string{
		"campaign":   {"drm", "ops", "replicas", "schedule_file", "plugin", "plugin_version", "server_version", "modulo_version", "started"},
		"summary":    {"total", "done", "pass", "fail", "flaky", "incomplete", "error", "nonconformant", "unrealisable", "failed_by_class", "not_passed_by_kind"},
		"not_passed": {"id", "verdict", "flaky", "class", "step", "detail", "at_end", "failure_dir", "signature", "group"},
		"groups": {"signature", "schedules", "independent_runs", "first_seen", "shortest", "shortest_steps",
			"replayed", "reproduced", "runs_replayed", "runs_followed", "runs_made"},
	}
	objects := map[string][]map[string]any{
		"campaign":   {raw.Campaigns[0].Campaign},
		"summary":    {raw.Campaigns[0].Summary},
		"not_passed": raw.Campaigns[0].NotPassed,
		"groups":     raw.Campaigns[0].Groups,
	}
	for what, objs := range objects {
		for _, o := range objs {
			if got, want := slices.Sorted(maps.Keys(o)), slices.Sorted(slices.Values(wantKeys[what])); !slices.Equal(got, want) {
				t.Errorf("%s has fields %q, want %q", what, got, want)
			}
		}
	}

	e := doc.Campaigns[0]
	c := e.Campaign
	if e.Dir != f.dir || c.DRM != "slr" || c.Ops != 2 || c.Replicas != 3 || c.ScheduleFile != "slr.sched" || c.Plugin != "redis" ||
		c.PluginVersion != "0.1.0" || c.ServerVersion != "7.0.15" || c.ModuloVersion != "0.1.0" || c.Started != "2026-01-02T03:04:05.6Z" {
		t.Errorf("dir %q, campaign %+v", e.Dir, c)
	}
	sum := e.Summary
	if sum.Total != 90 || sum.Done != 6 || sum.Pass != 3 || sum.Fail != 1 || sum.Flaky != 1 || sum.Incomplete != 1 || sum.Error != 1 || sum.Unrealisable != 0 ||
		!maps.Equal(sum.FailedByClass, map[string]int{"lost-write": 1}) || len(sum.NotPassedKind) != 0 {
		t.Errorf("summary %+v", sum)
	}
	// The records hold no difference (as records before modulo kept one): each signature is
	// its detail, normalised, and each schedule a group of its own, in the order recorded.
	want := []recordJSON{
		{ID: f.errored, Verdict: "error", Detail: errorDetail, Group: 1,
			Signature: `error: plugin exited: read |N: file already closed & "gone"`},
		{ID: f.fail, Verdict: "fail", Class: "lost-write", Step: 2, Detail: failDetail, AtEnd: "pass", FailureDir: filepath.Join("failures", f.fail), Group: 2,
			Signature: `fail (lost-write): N key differs: k1.N (r0="a<b & \"c\"" r1=<missing>)`},
		{ID: f.incomp, Verdict: "incomplete", Detail: incompDetail, FailureDir: filepath.Join("failures", f.incomp), Group: 3,
			Signature: "incomplete: at a convergence: not reached before the deadline: replica N in sync"},
		{ID: f.flaky, Verdict: "fail", Flaky: true, Class: "divergence", Detail: flakyDetail, FailureDir: filepath.Join("failures", f.flaky), Group: 4,
			Signature: `fail (divergence): N key differs: k1.N (r0="x" r1=<missing>)`},
	}
	if !slices.Equal(e.NotPassed, want) {
		t.Errorf("not_passed:\n%+v\nwant:\n%+v", e.NotPassed, want)
	}
	if len(e.Groups) != len(want) {
		t.Fatalf("%d groups, want %d: %+v", len(e.Groups), len(want), e.Groups)
	}
	for i, g := range e.Groups {
		if w := want[i]; g.Signature != w.Signature || !slices.Equal(g.Schedules, []string{w.ID}) || g.Runs != 1 || g.Shortest != w.ID {
			t.Errorf("group %d: %+v, want %s alone, signature %q", i+1, g, w.ID, w.Signature)
		}
	}
}

// checkJUnit reads the XML with a JUnit parser that CI tools use (go-junit), and checks what
// it makes of each schedule; the counts the suite declares are read with encoding/xml, since
// the parser counts the test cases itself.
func checkJUnit(t *testing.T, f fixture, out []byte) {
	if !bytes.HasPrefix(out, []byte(xml.Header)) {
		t.Errorf("no XML declaration:\n%s", out)
	}
	suites, err := junit.Ingest(out)
	if err != nil {
		t.Fatalf("go-junit: %v\n%s", err, out)
	}
	if len(suites) != 1 {
		t.Fatalf("%d suites, want 1:\n%s", len(suites), out)
	}
	s := suites[0]
	if s.Name != "modulo slr ops=2 replicas=3" {
		t.Errorf("suite name %q", s.Name)
	}
	if want := (junit.Totals{Tests: 7, Passed: 4, Failed: 2, Error: 1, Duration: s.Totals.Duration}); s.Totals != want {
		t.Errorf("totals %+v, want %+v", s.Totals, want)
	}
	type problem struct{ status, message, typ, body string }
	want := map[string]problem{
		f.pass:     {status: "passed"},
		f.retried:  {status: "passed"},
		f.notModel: {status: "passed"},
		f.flaky:    {status: "passed"}, // a flakyFailure, which go-junit does not read
		f.fail: {"failed", "lost-write: " + failDetail, "lost-write",
			failDetail + "\nsignature: fail (lost-write): N key differs: k1.N (r0=\"a<b & \\\"c\\\"\" r1=<missing>)"},
		f.incomp: {"failed", "incomplete: " + incompDetail, "incomplete",
			incompDetail + "\nsignature: incomplete: at a convergence: not reached before the deadline: replica N in sync"},
		f.errored: {"error", "error: " + errorDetail, "error",
			errorDetail + "\nsignature: error: plugin exited: read |N: file already closed & \"gone\""},
	}
	// The records' durations, in the order recorded: f.retried's second record is the fourth.
	took := map[string]time.Duration{f.pass: 1250 * time.Millisecond, f.retried: 4250 * time.Millisecond}
	var names []string
	for _, tc := range s.Tests {
		names = append(names, tc.Name)
		id, _, _ := strings.Cut(tc.Name, " ")
		w, ok := want[id]
		if !ok {
			t.Errorf("test case %q is no schedule of the campaign", tc.Name)
			continue
		}
		got := problem{status: string(tc.Status), message: tc.Message}
		if e, ok := tc.Error.(junit.Error); ok {
			got.typ, got.body = e.Type, e.Body
		}
		if got != w {
			t.Errorf("test case %s: %+v, want %+v", id, got, w)
		}
		if tc.Name != f.names[id] || tc.Classname != "modulo.slr" {
			t.Errorf("test case %s: name %q, classname %q; want name %q", id, tc.Name, tc.Classname, f.names[id])
		}
		if d, ok := took[id]; ok && tc.Duration != d {
			t.Errorf("test case %s: time %v, want %v", id, tc.Duration, d)
		}
	}
	if len(names) != len(want) {
		t.Errorf("test cases %q, want one for each of the %d schedules recorded", names, len(want))
	}

	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Tests     int    `xml:"tests,attr"`
			Failures  int    `xml:"failures,attr"`
			Errors    int    `xml:"errors,attr"`
			Skipped   int    `xml:"skipped,attr"`
			Timestamp string `xml:"timestamp,attr"`
			Cases     []struct {
				Name         string `xml:"name,attr"`
				FlakyFailure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"flakyFailure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	ds := doc.Suites[0]
	if ds.Tests != 7 || ds.Failures != 2 || ds.Errors != 1 || ds.Skipped != 0 || ds.Timestamp != "2026-01-02T03:04:05Z" ||
		doc.Tests != 7 || doc.Failures != 2 || doc.Errors != 1 {
		t.Errorf("testsuites declare tests=%d failures=%d errors=%d; testsuite tests=%d failures=%d errors=%d skipped=%d timestamp=%q",
			doc.Tests, doc.Failures, doc.Errors, ds.Tests, ds.Failures, ds.Errors, ds.Skipped, ds.Timestamp)
	}
	for _, tc := range ds.Cases {
		flaky := strings.HasPrefix(tc.Name, f.flaky+" ")
		if ff := tc.FlakyFailure; flaky != (ff != nil) || flaky && (ff.Type != "divergence" || ff.Message != "divergence: "+flakyDetail) {
			t.Errorf("test case %q: flakyFailure %+v", tc.Name, ff)
		}
	}
}

// TestRunFormatsSeveralCampaigns makes one document of a directory of campaigns.
func TestRunFormatsSeveralCampaigns(t *testing.T) {
	dirs, err := results.Campaigns(campaigns)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(&Options{Out: &out, Dir: campaigns, Format: "json"}); err != nil {
		t.Fatal(err)
	}
	var doc docJSON
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range doc.Campaigns {
		got = append(got, e.Dir)
	}
	if !slices.Equal(got, dirs) {
		t.Errorf("JSON of campaigns %q, want %q", got, dirs)
	}

	out.Reset()
	if err := Run(&Options{Out: &out, Dir: campaigns, Format: "junit"}); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) != len(dirs) {
		t.Errorf("%d test suites for %d campaigns", len(suites), len(dirs))
	}
}

// TestJUnitOfRealFailures: the JUnit file of a real campaign with failures (MariaDB's replica
// ahead of its primary, results/testdata/campaigns/mdl-1x2) is read by a JUnit parser as 8
// tests, 2 of them failed with the class divergence and the differing key in the message.
func TestJUnitOfRealFailures(t *testing.T) {
	var out bytes.Buffer
	if err := Run(&Options{Out: &out, Dir: filepath.Join(campaigns, "mdl-1x2"), Format: "junit"}); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(out.Bytes())
	if err != nil || len(suites) != 1 {
		t.Fatalf("%d suites (%v), want 1", len(suites), err)
	}
	s := suites[0]
	if s.Totals.Tests != 8 || s.Totals.Passed != 6 || s.Totals.Failed != 2 {
		t.Errorf("totals %+v, want 8 tests, 6 passed, 2 failed", s.Totals)
	}
	for _, tc := range s.Tests {
		if tc.Status != junit.StatusFailed {
			continue
		}
		if tc.Error == nil || !strings.HasPrefix(tc.Message, "divergence: ") || !strings.Contains(tc.Message, "k1.1") {
			t.Errorf("failed test %q: message %q, want the class divergence and the key k1.1", tc.Name, tc.Message)
		}
	}
}

// TestUnrealisableInFormats: a schedule the plugin could not realise is counted on its own in
// every format: JUnit's skip with the plugin's reason (not a failure, an error or a pass), the
// JSON summary's "unrealisable", and the text summary's count.
func TestUnrealisableInFormats(t *testing.T) {
	d, err := drms.Lookup("qce")
	if err != nil {
		t.Fatal(err)
	}
	h, ss, err := schedules.Generated(d, aem.Params{Ops: 1, Replicas: 5})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := results.Open(dir, results.Campaign{DRM: "qce", Ops: 1, Replicas: 5, ScheduleFile: "qce.sched", Plugin: "galera",
		PluginVersion: "0.1.0", ServerVersion: "10.11.19", Modulo: "0.1.0", Started: start, Schedules: uint64(len(ss))})
	if err != nil {
		t.Fatal(err)
	}
	const reason = "step 1 D[0,0,0,1,1]: cannot be realised: write k1.1 reaches galera-4, which it is not sent through"
	pass := results.Record{ID: ss[0].ID, Verdict: oracle.Pass, Start: start, End: start.Add(time.Second)}
	unreal := results.Record{ID: ss[1].ID, Verdict: oracle.Unrealisable, Detail: reason, Start: start, End: start.Add(time.Second)}
	for _, r := range []results.Record{pass, unreal} {
		r.DRM, r.Plugin, r.PluginVersion, r.ServerVersion = "qce", "galera", "0.1.0", "10.11.19"
		if r.Verdict != oracle.Pass {
			if err := st.WriteFailure(results.Failure{Header: h, Schedule: ss[1], Record: r, Detail: r.Detail}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	var out bytes.Buffer
	if err := Run(&Options{Out: &out, Dir: dir, Format: "junit"}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Skipped  int `xml:"skipped,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites:\n%s", len(doc.Suites), out.String())
	}
	s := doc.Suites[0]
	if s.Tests != 2 || s.Failures != 0 || s.Errors != 0 || s.Skipped != 1 {
		t.Errorf("suite tests=%d failures=%d errors=%d skipped=%d, want 2, 0, 0, 1", s.Tests, s.Failures, s.Errors, s.Skipped)
	}
	for _, c := range s.Cases {
		unrealisable := strings.HasPrefix(c.Name, unreal.ID+" ")
		if sk := c.Skipped; unrealisable != (sk != nil) || unrealisable && (sk.Message != reason || sk.Type != "unrealisable") {
			t.Errorf("test case %q: skipped %+v, want the reason on the unrealisable one alone", c.Name, sk)
		}
	}

	out.Reset()
	if err := Run(&Options{Out: &out, Dir: dir, Format: "json"}); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Campaigns []struct {
			Summary struct {
				Pass, Error, Unrealisable int
			} `json:"summary"`
		} `json:"campaigns"`
	}
	if err := json.Unmarshal(out.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Campaigns) != 1 || js.Campaigns[0].Summary.Unrealisable != 1 || js.Campaigns[0].Summary.Error != 0 || js.Campaigns[0].Summary.Pass != 1 {
		t.Errorf("JSON summary %+v, want pass 1, error 0, unrealisable 1", js.Campaigns)
	}

	out.Reset()
	if err := Run(&Options{Out: &out, Dir: dir}); err != nil && !strings.Contains(err.Error(), "1 the plugin cannot realise") {
		t.Fatalf("text: %v", err)
	}
	if !strings.Contains(out.String(), "error 0, unrealisable 1") {
		t.Errorf("text summary does not count the unrealisable apart:\n%s", out.String())
	}
}
