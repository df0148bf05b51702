package results_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

// recordedCampaigns are the real campaigns of testdata/campaigns (see its README).
var recordedCampaigns = []string{"slr-1x3", "slr-2x3-broken", "qpn-course-1x5"}

// TestReadSummaryRecorded checks the summary of each recorded campaign against its files read
// independently: the schedule count of the model, a holding record per schedule, the
// verdicts counted from the records, and the flaky label from the reproductions.
func TestReadSummaryRecorded(t *testing.T) {
	for _, name := range recordedCampaigns {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "campaigns", name)
			s, err := results.ReadSummary(dir)
			if err != nil {
				t.Fatal(err)
			}
			g, err := aem.NewGraph(s.Header.DRM.Model, s.Header.Params)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := g.Count(); s.Total != n {
				t.Errorf("total %d, the model has %d schedules", s.Total, n)
			}
			recs, err := results.ReadRecords(filepath.Join(dir, results.RecordsFile))
			if err != nil {
				t.Fatal(err)
			}
			last := map[string]oracle.Verdict{}
			for _, r := range recs {
				last[r.ID] = r.Verdict
			}
			if len(s.Latest) != len(last) || len(s.All) != len(recs) {
				t.Errorf("%d latest of %d records; the file has %d schedules in %d records", len(s.Latest), len(s.All), len(last), len(recs))
			}
			reps, err := results.ReadReproductions(dir)
			if err != nil {
				t.Fatal(err)
			}
			flaky := map[string]bool{}
			for _, r := range reps {
				flaky[r.ID] = r.Reproduced == 0 // the latest holds
			}
			var want results.Counts
			for id, v := range last {
				switch {
				case v != oracle.Pass && flaky[id]:
					want.Flaky++
				case v == oracle.Pass:
					want.Pass++
				case v == oracle.Fail:
					want.Fail++
				case v == oracle.Incomplete:
					want.Incomplete++
				default:
					want.Error++
				}
			}
			if got := s.Counts(); got != want {
				t.Errorf("counts %+v, want %+v", got, want)
			}
			if s.Done() != len(last)-want.Error {
				t.Errorf("done %d, want %d", s.Done(), len(last)-want.Error)
			}
			for _, r := range s.Latest {
				if label := s.Label(r); (label == "flaky") != (r.Verdict != oracle.Pass && flaky[r.ID]) {
					t.Errorf("%s (%s) labelled %s", r.ID, r.Verdict, label)
				}
			}
			for id, sh := range s.Shrunk {
				if id != sh.Of.ID || sh.Smallest.Steps > sh.Of.Steps || sh.Smallest.Ops > sh.Of.Ops || sh.Reproduced == 0 {
					t.Errorf("shrink of %s: %+v", id, sh)
				}
			}
		})
	}
}

// TestWriteText pins what `modulo results` prints for the recorded campaigns.
func TestWriteText(t *testing.T) {
	for _, name := range recordedCampaigns {
		t.Run(name, func(t *testing.T) {
			s, err := results.ReadSummary(filepath.Join("testdata", "campaigns", name))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := s.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "summary-"+name+".golden"), b.Bytes())
		})
	}
}

func TestReadSummaryNotCampaign(t *testing.T) {
	_, err := results.ReadSummary(t.TempDir())
	if !errors.Is(err, results.ErrNotCampaign) || !strings.Contains(err.Error(), "no campaign.json") {
		t.Fatalf("error = %v, want one wrapping ErrNotCampaign", err)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one", ms(7), 0.9, 7 * time.Millisecond},
		{"median of odd", ms(5, 1, 3), 0.5, 3 * time.Millisecond},
		{"median of even takes the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p90 of ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Millisecond},
		{"p90 of eleven", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 0.9, 10 * time.Millisecond},
		{"p100", ms(1, 2, 3), 1, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := results.Percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("Percentile = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReproductions(t *testing.T) {
	dir := t.TempDir()
	if got, err := results.ReadReproductions(dir); err != nil || got != nil {
		t.Fatalf("no file: %v, %v; want none", got, err)
	}
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	want := []results.Reproduction{
		{ID: "0123456789abcdef", Want: oracle.Fail, Repeat: 3, Reproduced: 3, Verdicts: map[oracle.Verdict]int{oracle.Fail: 3},
			By: "replay", Dir: "replays/x", PluginConfig: "a = \"<b>\"\n", Start: at, End: at},
		{ID: "0123456789abcdef", Want: oracle.Fail, Repeat: 2, Reproduced: 0, Verdicts: map[oracle.Verdict]int{oracle.Pass: 2},
			By: "replay", Dir: "replays/y", Start: at, End: at},
	}
	for _, r := range want {
		if err := results.AppendReproduction(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, results.ReproductionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"a = \"<b>\"\n"`)) {
		t.Errorf("configuration escaped for HTML:\n%s", b)
	}
	// A torn last line (a kill in the middle of a write) is ignored.
	torn := append(b, `{"id":"fedcba`...)
	if err := os.WriteFile(filepath.Join(dir, results.ReproductionsFile), torn, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadReproductions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Rate() != "3/3" || got[1].Rate() != "0/2" || got[0].Flaky() || !got[1].Flaky() || got[0].PluginConfig != want[0].PluginConfig {
		t.Errorf("read back %+v", got)
	}

	bad := append([]byte("not json\n"), b...)
	if err := os.WriteFile(filepath.Join(dir, results.ReproductionsFile), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := results.ReadReproductions(dir); err == nil || !strings.Contains(err.Error(), "reproductions.jsonl:1: not a reproduction") {
		t.Errorf("corrupt line: error %v", err)
	}
}

// TestWriteShrunk writes a shrink and reads it back, and reads its schedule file as any
// schedule file is read: validated, with the smallest's write count in its header.
func TestWriteShrunk(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	small := all[0]
	h.Generator = "modulo test, shrink of 0123456789abcdef"
	body := string(schedules.Body(small.Steps))
	sh := results.Shrunk{
		Of:       results.Shape{ID: "0123456789abcdef", Body: "D[1,0,0] C[1]<-,0,->", Steps: 4, Ops: 2},
		Smallest: results.Shape{ID: small.ID, Body: body, Steps: len(small.Steps), Ops: 1},
		Repeat:   3, Reproduced: 2, Want: oracle.Fail,
		Tries: []results.ShrinkTry{{Shape: results.Shape{ID: small.ID, Body: body, Steps: len(small.Steps), Ops: 1},
			Edit: "dropped steps 3-4", Runs: 1, Verdicts: map[oracle.Verdict]int{oracle.Fail: 1}, Failed: true}},
	}
	dir := t.TempDir()
	h.Params.Ops = 2 // the campaign's; the file must say the smallest's
	if err := results.WriteShrunk(dir, h, sh); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadShrunk(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g := got[sh.Of.ID]; len(got) != 1 || g.Smallest != sh.Smallest || g.Rate() != "2/3" || len(g.Tries) != 1 || !g.Tries[0].Failed {
		t.Errorf("read back %+v", got)
	}
	fh, ss, err := schedules.ReadAll(filepath.Join(results.ShrunkPath(dir, sh.Of.ID), results.ShrunkSched))
	if err != nil {
		t.Fatal(err)
	}
	if fh.Params.Ops != 1 || fh.Count != 1 || fh.Generator != h.Generator || len(ss) != 1 || ss[0].ID != small.ID {
		t.Errorf("schedule file: header %+v, schedules %+v", fh, ss)
	}
}

// TestFindSchedules finds schedules by ID by enumerating the model again, as the report
// and replay do without the schedule file.
func TestFindSchedules(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	c := results.Campaign{DRM: h.DRM.Name, Ops: h.Params.Ops, Replicas: h.Params.Replicas}
	want := map[string]bool{all[0].ID: true, all[len(all)-1].ID: true, "ffffffffffffffff": true}
	found, err := results.FindSchedules(c, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Fatalf("found %d schedules, want 2", len(found))
	}
	for _, s := range []schedules.Schedule{all[0], all[len(all)-1]} {
		if got := found[s.ID]; string(schedules.Body(got.Steps)) != string(schedules.Body(s.Steps)) || got.Line != s.Line {
			t.Errorf("%s: found %+v, want %+v", s.ID, got, s)
		}
	}
	if _, err := results.FindSchedules(results.Campaign{DRM: "raft", Ops: 1, Replicas: 3}, want); err == nil {
		t.Error("an unknown DRM is no error")
	}
}

// TestWriteTextLongValues: a failure recorded with whole 10 KB values (the paper's Redis preset
// pads values to 10 KB, and records written before values were shortened hold them whole)
// reads in one short line, each value as its first bytes, length and digest.
func TestWriteTextLongValues(t *testing.T) {
	dir := t.TempDir()
	st, err := results.Open(dir, results.Campaign{DRM: "ssr", Ops: 1, Replicas: 2, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	long := "k1.1" + strings.Repeat(".", 10236)
	err = st.Append(results.Record{ID: "0123456789abcdef", DRM: "ssr", Verdict: oracle.Fail, Class: oracle.LostWrite,
		Detail: `1 acknowledged write lost: k1.1 on replica 1 (acknowledged "` + long + `", holds "` + long[:10000] + `")`,
		AtEnd:  `fail: 1 key differs: k1.1 (r0="` + long + `" r1="` + long[:10000] + `")`})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := results.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	line := b.String()[strings.LastIndex(b.String(), "0123456789abcdef"):]
	head := `"k1.1` + strings.Repeat(".", 28) + `"…`
	for _, want := range []string{
		"acknowledged " + head + " (10240 bytes, sha256 ",
		"holds " + head + " (10000 bytes, sha256 ",
		"r1=" + head + " (10000 bytes, sha256 ",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the failure's line does not say %q:\n%s", want, line)
		}
	}
	if len(line) > 600 || strings.Count(line, "\n") != 1 { // whole, its four values would take 40 KB
		t.Errorf("the failure takes %d bytes in %d lines:\n%s", len(line), strings.Count(line, "\n"), line)
	}
}

// TestNotPassedKindCounts: the recorded NATS campaign's one failure takes a power loss, a
// partition and a pause; a Redis DRM names no kinds.
func TestNotPassedKindCounts(t *testing.T) {
	for _, tt := range []struct {
		name     string
		want     map[aem.Failure]int
		wantRead int
	}{
		{"qpn-course-1x5", map[aem.Failure]int{aem.FailPowerLoss: 1, aem.FailPartition: 1, aem.FailPause: 1}, 1},
		{"slr-2x3-broken", map[aem.Failure]int{}, 0},
	} {
		s, err := results.ReadSummary(filepath.Join("testdata", "campaigns", tt.name))
		if err != nil {
			t.Fatal(err)
		}
		count, read := s.NotPassedKindCounts()
		if !maps.Equal(count, tt.want) || read != tt.wantRead {
			t.Errorf("%s: %v from %d folders, want %v from %d", tt.name, count, read, tt.want, tt.wantRead)
		}
	}
}

// TestRestoredNote: a record whose prefix was restored says from which run, and, where its
// verdict quotes a value of that run, that the value was written there.
func TestRestoredNote(t *testing.T) {
	restored := &results.Restored{Steps: 3, From: "345a89c90e1e93f7", Digest: "a3aff36f"}
	tests := []struct {
		name string
		r    results.Record
		want string
	}{
		{"a value of the restored run", results.Record{ID: "2e9231c9e7ba1fcb", Restored: restored,
			Detail: `after step 4: 1 acknowledged write lost: k3.1 on replica 0 (acknowledged "345a89c90e1e93f7:k3.1", holds <missing>)`},
			`steps 1-3 restored from 345a89c90e1e93f7's run; the values "345a89c90e1e93f7:..." were written in those steps, by that run`},
		{"at the end only", results.Record{ID: "2e9231c9e7ba1fcb", Restored: restored,
			Detail: "after step 4: 1 key differs", AtEnd: `fail: 1 key differs: k3.1 (r0="345a89c90e1e93f7:k3.1" r1=<missing>)`},
			`steps 1-3 restored from 345a89c90e1e93f7's run; the values "345a89c90e1e93f7:..." were written in those steps, by that run`},
		{"its own values", results.Record{ID: "2e9231c9e7ba1fcb", Restored: restored,
			Detail: `1 acknowledged write lost: k4.1 on replica 0 (acknowledged "2e9231c9e7ba1fcb:k4.1", holds <missing>)`},
			"steps 1-3 restored from 345a89c90e1e93f7's run"},
	}
	for _, tt := range tests {
		if got := results.RestoredNote(tt.r); got != tt.want {
			t.Errorf("%s: %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestAnswers: the summary counts the answers to the writes only a minority received over
// the holding records, in the order acknowledged, refused, no answer.
func TestAnswers(t *testing.T) {
	for _, tt := range []struct {
		name    string
		records []map[cem.Answer]int // per schedule, its holding record's answers
		want    string
	}{
		{"none sent", []map[cem.Answer]int{nil, nil}, ""},
		{"one schedule", []map[cem.Answer]int{{cem.NoAnswer: 2}}, "no answer 2 (of 2 writes only a minority received)"},
		{"every answer", []map[cem.Answer]int{{cem.NoAnswer: 1, cem.Refused: 1}, {cem.Acknowledged: 1}},
			"acknowledged 1, refused 1, no answer 1 (of 3 writes only a minority received)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s results.Summary
			for i, answers := range tt.records {
				s.Latest = append(s.Latest, results.Record{ID: fmt.Sprint(i), Answers: answers})
			}
			if got := s.Answers(); got != tt.want {
				t.Errorf("Answers() = %q, want %q", got, tt.want)
			}
		})
	}
}
