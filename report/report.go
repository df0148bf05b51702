// Package report renders a campaign's results as one self-contained HTML page: no script, no
// request to any network, its style and its charts (inline SVG) inside the file, so that it
// opens anywhere and can be mailed or attached to a bug report.
//
// The page holds the campaign's description, the verdicts, the coverage curve (the share of
// all schedules with a verdict over the time the campaign ran, as the Modulo paper's Figure 4
// draws it), histograms of the time per schedule and per step kind, and for each schedule that
// did not pass its timeline per replica (as the paper's Figure 2, with what the plugin observed
// of each replica after each step, and the step where the failure was seen marked) beside each
// replica's final data with the differences marked.
//
// To look at it as a browser shows it, without a display:
//
//	chromium --headless --no-sandbox --disable-gpu --screenshot=report.png --window-size=1280,2000 file://$PWD/report.html
package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/internal/build"
	"github.com/modulo-testing/modulo/internal/words"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

//go:embed report.css
var css string

//go:embed report.html.tmpl
var pageText string

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":     func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"cls":    func(label string) string { return strings.ReplaceAll(label, " ", "-") },
	"add":    func(a, b float64) float64 { return a + b },
	"sub":    func(a, b float64) float64 { return a - b },
	"half":   func(a float64) float64 { return a / 2 },
	"neg":    func(a float64) float64 { return -a },
	"plural": words.Plural,
	"add1":   func(i int) int { return i + 1 },
}).Parse(pageText))

// MaxDrawn bounds the schedules drawn in full (timeline, data, actions); the rest are listed
// in a table, so that a campaign with thousands of failures still gives a page a browser opens.
const MaxDrawn = 100

// page is what the template renders.
type page struct {
	Title     string
	CSS       template.CSS
	Generated string
	Summary   *results.Summary
	Config    string
	Done      int
	Share     string
	Median    time.Duration
	P90       time.Duration
	Verdicts  []verdictCount
	Bar       []segment
	Coverage  *chart
	Times     *chart
	Kinds     []*chart
	Failures  []*failure
	// Groups are the non-passes grouped by signature (results.Summary.Groups).
	Groups []results.Group
	// Listed are the non-passes beyond MaxDrawn, listed without drawings.
	Listed   []*failure
	Problems []string
}

type verdictCount struct {
	Label string
	Count int
}

type segment struct {
	X, W  float64 // percent
	Label string
	Title string
}

type failure struct {
	Record results.Record
	Label  string
	Group  int // 1-based, in page.Groups
	Body   string
	Steps  int
	Detail string // complete
	// Restored says which steps were restored from another schedule's run, and whose values
	// the detail quotes (results.RestoredNote); empty for a run from scratch.
	Restored string
	Replayed *results.Reproduction
	Shrunk   *results.Shrunk
	Timeline *timeline
	Data     *dataTable
	Actions  []actionStep
	Problem  string // what could not be read of its failure folder
}

type actionStep struct {
	Title string
	Lines []string
}

// Write renders the report of campaign s to w.
func Write(w io.Writer, s *results.Summary) error {
	p := &page{
		Title:     fmt.Sprintf("modulo: %s ops=%d replicas=%d", s.Campaign.DRM, s.Campaign.Ops, s.Campaign.Replicas),
		CSS:       template.CSS(css),
		Generated: build.Generator + ", " + time.Now().UTC().Format(time.DateTime+" MST"),
		Summary:   s,
		Config:    results.OneLine(s.Campaign.PluginConfig),
		Done:      s.Done(),
	}
	p.Share = "-"
	if s.Total > 0 {
		p.Share = fmt.Sprintf("%.1f%%", 100*float64(p.Done)/float64(s.Total))
	}
	ds := s.Durations()
	p.Median, p.P90 = results.Percentile(ds, 0.5), results.Percentile(ds, 0.9)
	p.verdicts()
	p.Coverage = coverage(s)
	p.Times = newChart("time-per-schedule", "time per schedule", 560, 240)
	p.Times.XLabel = "time from start to verdict"
	secs := make([]float64, len(ds))
	for i, d := range ds {
		secs[i] = d.Seconds()
	}
	histogram(p.Times, secs, 30)
	if err := p.kinds(s); err != nil {
		return err
	}
	p.failures(s)
	return pageTemplate.Execute(w, p)
}

// verdicts counts the verdicts and lays out the bar of shares, schedules not run included.
func (p *page) verdicts() {
	n := p.Summary.Counts()
	p.Verdicts = []verdictCount{
		{"pass", n.Pass}, {"fail", n.Fail}, {"flaky", n.Flaky}, {"incomplete", n.Incomplete}, {"error", n.Error},
	}
	// A realisation that conforms and gives every schedule has neither: no row.
	for _, v := range []oracle.Verdict{oracle.Nonconformant, oracle.Unrealisable} {
		if c := n.Of(v); c > 0 {
			p.Verdicts = append(p.Verdicts, verdictCount{string(v), c})
		}
	}
	all := p.Summary.Total
	notRun := int64(all) - int64(len(p.Summary.Latest))
	if notRun > 0 {
		p.Verdicts = append(p.Verdicts, verdictCount{"not run", int(notRun)})
	}
	if all == 0 {
		return
	}
	x := 0.0
	for _, v := range p.Verdicts {
		if v.Count == 0 {
			continue
		}
		w := 100 * float64(v.Count) / float64(all)
		p.Bar = append(p.Bar, segment{X: x, W: w, Label: v.Label, Title: fmt.Sprintf("%s: %d (%.1f%%)", v.Label, v.Count, w)})
		x += w
	}
}

// coverage draws the share of the campaign's schedules with a verdict over the time the
// campaign ran, and marks each failure where it was found. Time runs only while schedules
// do: each record adds the time since the previous one ended, but no more than its own
// duration, so that the gap between a run and the run that resumed it does not count.
func coverage(s *results.Summary) *chart {
	c := newChart("coverage-curve", "coverage: schedules with a verdict, and the model's transitions they took, as shares of all", 1140, 300)
	c.XLabel, c.YLabel = "time the campaign ran", "share of all"
	recs := slices.Clone(s.All)
	slices.SortStableFunc(recs, func(a, b results.Record) int { return a.End.Compare(b.End) })
	type point struct{ t, share float64 }
	pts := []point{{0, 0}}
	took := transitionsTaken(s)
	tpts := []point{{0, 0}}
	var fails []point
	var failIDs []string
	var active time.Duration
	var prevEnd time.Time
	seen, failed := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		d := r.End.Sub(r.Start)
		if !prevEnd.IsZero() {
			d = min(d, r.End.Sub(prevEnd))
		}
		active += max(d, 0)
		if r.End.After(prevEnd) {
			prevEnd = r.End
		}
		if r.Verdict == oracle.Error || seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		share := 0.0
		if s.Total > 0 {
			share = float64(len(seen)) / float64(s.Total)
		}
		pts = append(pts, point{active.Seconds(), share})
		if took != nil {
			tpts = append(tpts, point{active.Seconds(), took(r.ID)})
		}
		if r.Verdict == oracle.Fail && !failed[r.ID] {
			failed[r.ID] = true
			fails = append(fails, point{active.Seconds(), share})
			failIDs = append(failIDs, r.ID)
		}
	}
	if len(pts) == 1 {
		c.Empty = "no schedule has a verdict yet"
		return c
	}
	// The axis ends where the curve does: a campaign's time is not rounded up.
	top := pts[len(pts)-1].t
	all, rounded := timeTicks(top, 8, c.PlotW)
	for _, tk := range all {
		if pos := tk.Pos * rounded / top; pos <= c.PlotW+0.5 {
			c.XTicks = append(c.XTicks, tick{Pos: pos, Label: tk.Label})
		}
	}
	for v := 0; v <= 100; v += 25 {
		c.YTicks = append(c.YTicks, tick{Pos: float64(v) / 100 * c.PlotH, Label: fmt.Sprintf("%d%%", v)})
	}
	x := func(t float64) float64 { return c.Left + t/top*c.PlotW }
	y := func(share float64) float64 { return c.Bottom() - share*c.PlotH }
	line := make([]byte, 0, len(pts)*16)
	for _, pt := range pts {
		line = fmt.Appendf(line, "%.1f,%.1f ", x(pt.t), y(pt.share))
	}
	c.Line = string(line)
	if took != nil {
		line = line[:0]
		for _, pt := range tpts {
			line = fmt.Appendf(line, "%.1f,%.1f ", x(pt.t), y(pt.share))
		}
		c.Line2, c.Legend = string(line), [2]string{"schedules with a verdict", "transitions taken (a state and a step out of it)"}
	}
	for i, f := range fails {
		c.Marks = append(c.Marks, mark{X: x(f.t), Y: y(f.share), Title: fmt.Sprintf("%s failed at %s", failIDs[i], seconds(f.t))})
	}
	return c
}

// transitionsTaken returns a function that, called with the IDs of the schedules with a
// verdict in the order they got it, returns the share of the model's transitions that they
// have taken so far; nil when the campaign's schedules cannot be found (a campaign whose DRM
// changed since) or are too many to look up here.
func transitionsTaken(s *results.Summary) func(id string) float64 {
	const maxLookup = 1_000_000 // finding schedules by ID enumerates the model
	if s.Total == 0 || s.Total > maxLookup {
		return nil
	}
	h, err := s.Campaign.Header()
	if err != nil {
		return nil
	}
	ids := map[string]bool{}
	for _, r := range s.All {
		ids[r.ID] = true
	}
	found, err := results.FindSchedules(s.Campaign, ids)
	if err != nil {
		return nil
	}
	g, err := aem.NewGraph(h.DRM.Model, h.Params)
	if err != nil {
		return nil
	}
	total, err := g.Transitions()
	if err != nil || total == 0 {
		return nil
	}
	covered := map[int]bool{}
	return func(id string) float64 {
		if sc, ok := found[id]; ok {
			if edges, err := g.FollowEdges(sc.Steps); err == nil {
				for _, e := range edges {
					covered[e.ID] = true
				}
			}
		}
		return float64(len(covered)) / float64(total)
	}
}

// Step kinds, in the order their histograms are drawn.
const (
	kindStart         = "start"
	kindDivergence    = "divergence"
	kindConvergence   = "convergence"
	kindOfflineResync = "offline resync"
	kindRead          = "read"
)

// kinds draws a histogram of the time of each step kind: starting the cluster, divergences,
// convergences (offline resyncs apart), reading the data. The records hold each step's time;
// the schedules' transitions, which say each step's kind, are enumerated again from the model.
func (p *page) kinds(s *results.Summary) error {
	ids := map[string]bool{}
	for _, r := range s.Latest {
		ids[r.ID] = true
	}
	found, err := results.FindSchedules(s.Campaign, ids)
	if err != nil {
		return err
	}
	if missing := len(ids) - len(found); missing > 0 {
		p.Problems = append(p.Problems, fmt.Sprintf("%d recorded schedules are not schedules of %s ops=%d replicas=%d: their steps are not in the histograms by kind",
			missing, s.Campaign.DRM, s.Campaign.Ops, s.Campaign.Replicas))
	}
	times := map[string][]float64{}
	for _, r := range s.Latest {
		times[kindStart] = append(times[kindStart], r.StartMS/1000)
		if r.ReadMS > 0 {
			times[kindRead] = append(times[kindRead], r.ReadMS/1000)
		}
		sched, ok := found[r.ID]
		if !ok {
			continue
		}
		for i, ms := range r.StepsMS {
			if i < len(sched.Steps) {
				k := stepKind(&sched.Steps[i])
				times[k] = append(times[k], ms/1000)
			}
		}
	}
	for _, k := range []string{kindStart, kindDivergence, kindConvergence, kindOfflineResync, kindRead} {
		if k == kindOfflineResync && len(times[k]) == 0 {
			continue // only S/CL/R has them
		}
		c := newChart("time-"+k, k, 370, 200)
		c.Kind = k
		c.XLabel = fmt.Sprintf("%d %s", len(times[k]), words.Plural(len(times[k]), "step", "steps"))
		if k == kindStart || k == kindRead {
			c.XLabel = fmt.Sprintf("%d %s", len(times[k]), words.Plural(len(times[k]), "run", "runs"))
		}
		histogram(c, times[k], 20)
		p.Kinds = append(p.Kinds, c)
	}
	return nil
}

func stepKind(t *aem.Transition) string {
	switch {
	case t.Kind == aem.Divergence:
		return kindDivergence
	case t.Resync != aem.Online:
		return kindOfflineResync
	}
	return kindConvergence
}

// failures gathers every schedule that did not pass: fails first, then incompletes, then
// errors, then the nonconformant and the unrealisable, each in the order recorded; the first MaxDrawn are drawn.
func (p *page) failures(s *results.Summary) {
	p.Groups = s.Groups()
	groupOf := results.GroupNumbers(p.Groups)
	np := s.NotPassed()
	order := map[oracle.Verdict]int{oracle.Fail: 0, oracle.Incomplete: 1, oracle.Error: 2, oracle.Nonconformant: 3, oracle.Unrealisable: 4}
	slices.SortStableFunc(np, func(a, b results.Record) int { return order[a.Verdict] - order[b.Verdict] })
	for i, r := range np {
		f := &failure{Record: r, Label: s.Label(r), Group: groupOf[r.ID], Detail: oracle.Abbreviate(r.Detail)}
		if r.Restored != nil {
			f.Restored = results.RestoredNote(r)
		}
		if rep, ok := s.Reproductions[r.ID]; ok {
			f.Replayed = &rep
		}
		if sh, ok := s.Shrunk[r.ID]; ok && sh.Smallest.ID != r.ID { // a shrink that found nothing smaller shrank nothing
			f.Shrunk = &sh
		}
		if i >= MaxDrawn {
			p.Listed = append(p.Listed, f)
			continue
		}
		f.draw(s.Dir, s.Header)
		p.Failures = append(p.Failures, f)
	}
}

// draw reads the failure folder and draws what it holds; what cannot be read is said.
func (f *failure) draw(dir string, h schedules.Header) {
	folder, err := results.ReadFailure(dir, f.Record.ID)
	if err != nil {
		f.Problem = err.Error()
		return
	}
	f.Body, f.Steps, f.Detail = folder.Body, len(folder.Schedule.Steps), oracle.Abbreviate(folder.Detail)
	if f.Timeline, err = newTimeline(h, folder.Schedule, folder.Actions, f.Record); err != nil {
		f.Problem = err.Error()
	}
	if folder.Snapshot != nil {
		f.Data = newDataTable(folder.Snapshot)
	}
	for _, st := range folder.Actions {
		a := actionStep{Title: fmt.Sprintf("step %d %s", st.Step+1, st.Transition)}
		for _, act := range st.Actions {
			a.Lines = append(a.Lines, results.FormatAction(act, "15:04:05.000000"))
		}
		f.Actions = append(f.Actions, a)
	}
}
