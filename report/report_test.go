package report_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/report"
	"github.com/modulo-testing/modulo/results"
)

// campaigns are the real campaigns recorded in results/testdata/campaigns (see its README).
const campaigns = "../results/testdata/campaigns"

// recorded are the real campaigns the report is drawn from in the tests: Redis's, one with
// failures, and PostgreSQL's (testdata, see its README), whose failures have several events a
// step and an observation a replica.
var recorded = []string{
	filepath.Join(campaigns, "slr-1x3"), filepath.Join(campaigns, "slr-2x3-broken"),
	"testdata/pgl-1x3", "testdata/pgl-2x3",
}

// render reads the campaign of directory dir and renders its report.
func render(t *testing.T, dir string) (*results.Summary, []byte) {
	t.Helper()
	s, err := results.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	return s, b.Bytes()
}

// node helpers over golang.org/x/net/html's tree.

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), class)
}

// find returns every element under n (n included) for which match holds, in document order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tagClass(tag, class string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == tag && (class == "" || hasClass(n, class)) }
}

func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	ns := find(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if len(ns) != 1 {
		t.Fatalf("%d elements with id %q, want 1", len(ns), id)
	}
	return ns[0]
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return f
}

// sumCounts adds up the data-count of the bars of a chart.
func sumCounts(t *testing.T, chart *html.Node) int {
	t.Helper()
	n := 0
	for _, b := range find(chart, tagClass("rect", "bar")) {
		n += int(number(t, attr(b, "data-count")))
	}
	return n
}

// TestReportSelfContained checks that the page asks for nothing outside itself: no script,
// no stylesheet, image or frame to load, no URL in its style, and a policy that forbids
// loading anything should something slip through.
func TestReportSelfContained(t *testing.T) {
	for _, dir := range recorded {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, page := render(t, dir)
			doc, err := html.Parse(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range []string{"script", "link", "img", "iframe", "object", "embed", "image", "use"} {
				if ns := find(doc, tagClass(tag, "")); len(ns) > 0 {
					t.Errorf("%d <%s> elements", len(ns), tag)
				}
			}
			for _, n := range find(doc, func(*html.Node) bool { return true }) {
				for _, a := range n.Attr {
					if a.Key == "src" || a.Key == "href" || a.Key == "xlink:href" {
						if !strings.HasPrefix(a.Val, "#") {
							t.Errorf("<%s %s=%q> points outside the page", n.Data, a.Key, a.Val)
						}
					}
				}
			}
			style := find(doc, tagClass("style", ""))
			if len(style) != 1 || strings.Contains(text(style[0]), "url(") || strings.Contains(text(style[0]), "@import") {
				t.Errorf("%d <style> elements, or one that loads something", len(style))
			}
			csp := find(doc, func(n *html.Node) bool {
				return n.Data == "meta" && attr(n, "http-equiv") == "Content-Security-Policy"
			})
			if len(csp) != 1 || !strings.HasPrefix(attr(csp[0], "content"), "default-src 'none'") {
				t.Errorf("no Content-Security-Policy forbidding loads")
			}
		})
	}
}

// TestReportContent renders each recorded campaign and checks the page against the campaign
// read independently: the counts, the coverage curve, the histograms' totals, and for every
// schedule that did not pass its timeline and its data with the differences marked.
func TestReportContent(t *testing.T) {
	for _, dir := range recorded {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, page := render(t, dir)
			doc, err := html.Parse(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}

			done := byID(t, doc, "done")
			if attr(done, "data-done") != strconv.Itoa(s.Done()) || attr(done, "data-total") != strconv.FormatUint(s.Total, 10) {
				t.Errorf("done: %q of %q, want %d of %d", attr(done, "data-done"), attr(done, "data-total"), s.Done(), s.Total)
			}

			n := s.Counts()
			want := map[string]int{"pass": n.Pass, "fail": n.Fail, "flaky": n.Flaky, "incomplete": n.Incomplete, "error": n.Error}
			verdicts := byID(t, doc, "verdicts")
			for _, td := range find(verdicts, tagClass("td", "count")) {
				v := attr(td, "data-verdict")
				w, ok := want[v]
				if v == "not run" {
					w, ok = int(s.Total)-len(s.Latest), true
				}
				if !ok || text(td) != strconv.Itoa(w) {
					t.Errorf("verdict %q: %s, want %d", v, text(td), w)
				}
				delete(want, v)
			}
			if len(want) > 0 {
				t.Errorf("verdicts missing from the page: %v", want)
			}

			// The groups: a row each, with its schedules' count and its signature.
			if groups := s.Groups(); len(groups) > 0 {
				rows := find(byID(t, doc, "groups"), func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "tr" })[1:]
				if len(rows) != len(groups) {
					t.Fatalf("%d rows in the groups table, want %d", len(rows), len(groups))
				}
				for i, g := range groups {
					cells := find(rows[i], func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "td" })
					if len(cells) != 6 || text(cells[1]) != strconv.Itoa(len(g.IDs)) || text(cells[5]) != g.Signature {
						t.Errorf("group %d: row %q, want %d schedules and %q", i+1, text(rows[i]), len(g.IDs), g.Signature)
					}
				}
			}

			// The coverage curve: a point per schedule with a verdict (and the origin), rising
			// to the share done; a mark per failure.
			cov := byID(t, doc, "coverage")
			curve := find(cov, tagClass("polyline", "curve"))
			if len(curve) != 1 {
				t.Fatalf("%d coverage curves", len(curve))
			}
			pts := strings.Fields(attr(curve[0], "points"))
			if len(pts) != s.Done()+1 {
				t.Errorf("%d points on the curve, want %d", len(pts), s.Done()+1)
			}
			var ys []float64
			for _, p := range pts {
				_, y, _ := strings.Cut(p, ",")
				ys = append(ys, number(t, y))
			}
			chart := byID(t, doc, "coverage-curve")
			top, bottom := number(t, attr(chart, "data-top")), number(t, attr(chart, "data-bottom"))
			// Each point rises by one schedule's share, drawn to a tenth of a pixel: a rise too
			// small to draw (one of pgl-2x3's 42,304 schedules) leaves the curve flat.
			drawn := s.Total > 0 && (bottom-top)/float64(s.Total) >= 0.1
			for i := 1; i < len(ys); i++ {
				if ys[i] > ys[i-1] || ys[i] == ys[i-1] && drawn { // SVG's y grows downwards
					t.Errorf("the curve does not rise at point %d: %v", i, ys)
					break
				}
			}
			if share := (bottom - ys[len(ys)-1]) / (bottom - top); s.Total > 0 && abs(share-float64(s.Done())/float64(s.Total)) > 0.01 {
				t.Errorf("the curve ends at %.3f, want %.3f", share, float64(s.Done())/float64(s.Total))
			}
			fails := map[string]bool{}
			for _, r := range s.All {
				if r.Verdict == oracle.Fail {
					fails[r.ID] = true
				}
			}
			if marks := find(cov, tagClass("circle", "found")); len(marks) != len(fails) {
				t.Errorf("%d failures marked on the curve, want %d", len(marks), len(fails))
			}

			// The histograms hold every run, and every step of every run.
			if got := sumCounts(t, byID(t, doc, "time-per-schedule")); got != len(s.Latest) {
				t.Errorf("time per schedule: %d runs, want %d", got, len(s.Latest))
			}
			steps, reads := 0, 0
			for _, r := range s.Latest {
				steps += len(r.StepsMS)
				if r.ReadMS > 0 {
					reads++
				}
			}
			kinds := map[string]int{}
			for _, c := range find(byID(t, doc, "timing"), func(n *html.Node) bool { return n.Data == "svg" && attr(n, "data-kind") != "" }) {
				kinds[attr(c, "data-kind")] = sumCounts(t, c)
			}
			if kinds["start"] != len(s.Latest) || kinds["read"] != reads ||
				kinds["divergence"]+kinds["convergence"]+kinds["offline resync"] != steps || kinds["divergence"] == 0 || kinds["convergence"] == 0 {
				t.Errorf("histograms by kind %v: want %d starts, %d reads, %d steps", kinds, len(s.Latest), reads, steps)
			}

			// Every schedule that did not pass, drawn.
			sections := find(doc, tagClass("section", "failure"))
			np := s.NotPassed()
			if len(sections) != len(np) {
				t.Fatalf("%d failure sections, want %d", len(sections), len(np))
			}
			if len(np) == 0 && len(find(doc, func(n *html.Node) bool { return attr(n, "id") == "no-failures" })) != 1 {
				t.Error("no word that every schedule passed")
			}
			for _, sec := range sections {
				id := strings.TrimPrefix(attr(sec, "id"), "f-")
				i := slices.IndexFunc(np, func(r results.Record) bool { return r.ID == id })
				if i < 0 {
					t.Errorf("section for %s, which is not a non-pass", id)
					continue
				}
				checkFailure(t, s, np[i], sec)
			}
		})
	}
}

// checkFailure checks the section of one schedule that did not pass against its folder.
func checkFailure(t *testing.T, s *results.Summary, r results.Record, sec *html.Node) {
	t.Helper()
	f, err := results.ReadFailure(s.Dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if attr(sec, "data-label") != s.Label(r) || attr(sec, "data-verdict") != string(r.Verdict) {
		t.Errorf("%s: labelled %q (%q), want %q (%q)", r.ID, attr(sec, "data-label"), attr(sec, "data-verdict"), s.Label(r), r.Verdict)
	}
	if code := find(sec, tagClass("code", "schedule")); len(code) != 1 || text(code[0]) != f.Body {
		t.Errorf("%s: schedule not shown", r.ID)
	}

	// The timeline: a row per replica, a cell per step and one for the start.
	tl := find(sec, tagClass("table", "timeline"))
	if len(tl) != 1 {
		t.Fatalf("%s: %d timelines", r.ID, len(tl))
	}
	rows := find(tl[0], tagClass("tr", "replica"))
	if len(rows) != s.Header.Params.Replicas {
		t.Errorf("%s: %d replica rows, want %d", r.ID, len(rows), s.Header.Params.Replicas)
	}
	for _, row := range rows {
		cells := find(row, tagClass("td", "cell"))
		if len(cells) != len(f.Schedule.Steps)+1 {
			t.Errorf("%s replica %s: %d cells, want %d", r.ID, attr(row, "data-replica"), len(cells), len(f.Schedule.Steps)+1)
		}
		for _, c := range cells {
			if !hasClass(c, "online") && !hasClass(c, "offline") && !hasClass(c, "crashed") {
				t.Errorf("%s: a cell of class %q", r.ID, attr(c, "class"))
			}
		}
	}
	cellOf := func(replica, step int) *html.Node {
		if replica >= len(rows) {
			return nil
		}
		if cells := find(rows[replica], tagClass("td", "cell")); step < len(cells) {
			return cells[step]
		}
		return nil
	}
	// Each divergence's writes show in the cells of the replicas that receive them.
	for j, st := range f.Schedule.Steps {
		for i, w := range st.Writes {
			cell := cellOf(i, j+1)
			if w == 0 || cell == nil {
				continue
			}
			if !strings.Contains(text(cell), "+"+strconv.Itoa(w)+" write") {
				t.Errorf("%s: replica %d's cell of step %d does not say it received %d writes: %q", r.ID, i, j+1, w, text(cell))
			}
		}
	}
	// What the plugin observed of each replica after each step shows in its cell, without
	// hovering: its role, its epoch and its position.
	for _, so := range r.Observations {
		for _, o := range so.Replicas {
			cell := cellOf(o.Replica, so.Step)
			if cell == nil {
				t.Errorf("%s: replica %d observed after step %d, which the timeline lacks", r.ID, o.Replica, so.Step)
				continue
			}
			for _, k := range []string{cem.ObserveRole, cem.ObserveEpoch, cem.ObservePosition} {
				if v := o.Fields[k]; v != "" && !strings.Contains(text(cell), v) {
					t.Errorf("%s: replica %d's cell of step %d does not show its observed %s %q: %q", r.ID, o.Replica, so.Step, k, v, text(cell))
				}
			}
		}
	}
	// A failure's column is marked where its check saw it: the step it names, or the last.
	if r.Verdict == oracle.Fail {
		want := r.Step
		if want == 0 {
			want = len(f.Schedule.Steps)
		}
		var marked []int
		for k, th := range find(tl[0], tagClass("th", "col")) {
			if hasClass(th, "seen") {
				marked = append(marked, k)
			}
		}
		if !slices.Equal(marked, []int{want}) || !strings.Contains(text(find(tl[0], tagClass("th", "seen"))[0]), string(r.FailClass())) {
			t.Errorf("%s: columns %v marked as where the failing check saw the failure, want step %d naming %s", r.ID, marked, want, r.FailClass())
		}
	}

	// The data: a row per key, the differing keys marked, each differing row with a marked cell.
	if f.Snapshot == nil {
		return
	}
	d := oracle.Compare(*f.Snapshot)
	tables := find(sec, tagClass("table", "data"))
	if len(tables) != 1 {
		t.Fatalf("%s: %d data tables", r.ID, len(tables))
	}
	marked := find(tables[0], tagClass("tr", "differs"))
	if len(marked) != len(d.Keys) {
		t.Errorf("%s: %d rows marked as differing, want %d", r.ID, len(marked), len(d.Keys))
	}
	for k, row := range marked {
		if key := find(row, tagClass("th", "key")); len(key) != 1 || text(key[0]) != d.Keys[k].Key {
			t.Errorf("%s: marked row %d is not key %s", r.ID, k, d.Keys[k].Key)
		}
		if len(find(row, tagClass("td", "differs"))) == 0 {
			t.Errorf("%s: key %s: no cell marked", r.ID, d.Keys[k].Key)
		}
	}
	if rep, ok := s.Reproductions[r.ID]; ok {
		if sp := find(sec, tagClass("span", "replayed")); len(sp) != 1 || !strings.Contains(text(sp[0]), strconv.Itoa(rep.Reproduced)+" of "+strconv.Itoa(rep.Repeat)) {
			t.Errorf("%s: reproduction %s not shown", r.ID, rep.Rate())
		}
	}
	if sh, ok := s.Shrunk[r.ID]; ok {
		if p := find(sec, tagClass("p", "shrunk")); len(p) != 1 || !strings.Contains(text(p[0]), sh.Smallest.Body) {
			t.Errorf("%s: shrink to %s not shown", r.ID, sh.Smallest.ID)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestReportManyFailures draws the first MaxDrawn schedules that did not pass and lists the
// rest, so that a campaign with thousands of failures still gives a page a browser opens.
func TestReportManyFailures(t *testing.T) {
	s, err := results.ReadSummary(filepath.Join(campaigns, "slr-2x3-broken"))
	if err != nil {
		t.Fatal(err)
	}
	// More failures than are drawn: copies of a real record under IDs of their own, whose
	// failure folders do not exist, which the page must say.
	fail := s.NotPassed()[0]
	extra := report.MaxDrawn + 7
	for i := range extra {
		r := fail
		r.ID = fmt.Sprintf("f%015x", i)
		s.Latest = append(s.Latest, r)
		s.All = append(s.All, r)
	}
	var b bytes.Buffer
	if err := report.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	np := len(s.NotPassed())
	if got := len(find(doc, tagClass("section", "failure"))); got != report.MaxDrawn {
		t.Errorf("%d failures drawn, want %d", got, report.MaxDrawn)
	}
	if got := len(find(doc, tagClass("tr", "listed"))); got != np-report.MaxDrawn {
		t.Errorf("%d failures only listed, want %d", got, np-report.MaxDrawn)
	}
	if problems := find(doc, tagClass("p", "problem")); len(problems) == 0 || !strings.Contains(text(problems[0]), "no such file or directory") {
		t.Error("a missing failure folder is not said")
	}
}

// TestReportRestored: a failure whose first steps were restored from another schedule's run
// says so beside its detail, and whose values its detail quotes; one run from scratch says
// nothing of the kind.
func TestReportRestored(t *testing.T) {
	s, err := results.ReadSummary(filepath.Join(campaigns, "slr-2x3-broken"))
	if err != nil {
		t.Fatal(err)
	}
	np := s.NotPassed()
	if len(np) < 2 {
		t.Fatalf("the campaign has %d failures, want two at least", len(np))
	}
	from := np[1].ID
	for i := range s.Latest {
		if s.Latest[i].ID == np[0].ID {
			s.Latest[i].Restored = &results.Restored{Steps: 2, From: from, Digest: "bca54e48"}
			s.Latest[i].Detail = `1 key differs: k1.1 (r0="` + from + `:k1.1" r1=<missing>)`
		}
	}
	var b bytes.Buffer
	if err := report.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	notes := find(doc, tagClass("p", "restored"))
	if len(notes) != 1 {
		t.Fatalf("%d restored notes, want 1 (the one restored failure)", len(notes))
	}
	want := "steps 1-2 restored from " + from + `'s run; the values "` + from + `:..." were written in those steps, by that run`
	if got := text(notes[0]); got != want {
		t.Errorf("the note says %q, want %q", got, want)
	}
}
