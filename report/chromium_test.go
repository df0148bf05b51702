package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/report"
	"github.com/modulo-testing/modulo/results"
)

// chromiumTimeout bounds one headless Chromium run: it renders the page and exits in about
// 3 s here; the bound only catches a browser that hangs.
const chromiumTimeout = 2 * time.Minute

// skipShort skips a test that runs a real browser under -short, as tests that run real
// servers are.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs headless Chromium; run without -short")
	}
}

// chromium runs Debian's chromium headless on page with extra arguments, in a process group
// of its own that is killed however the test ends, and returns what it printed (its log on
// stderr, and the DOM on stdout when asked).
func chromium(t *testing.T, page string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: the report must be checked in a real browser (apt-get install -y chromium; scripts/setup installs it): %v", err)
	}
	dir := t.TempDir()
	p, err := proc.StartProcess(proc.ProcessSpec{
		Name: "chromium", Dir: dir, Path: bin,
		Args: append([]string{
			"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-crash-reporter", "--disable-breakpad",
			"--user-data-dir=" + filepath.Join(dir, "profile"),
			"--enable-logging=stderr", "--v=0",
		}, append(args, "file://"+page)...),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	t.Cleanup(func() {
		if err := p.Kill(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	out, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	// Whatever the page does wrong, a script error or a load the policy blocks, Chromium
	// reports as a console message.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("chromium reports a problem with the page: %s", line)
		}
	}
	return string(out)
}

// TestReportInChromium opens the report of the recorded broken campaign in headless
// Chromium: it must load without a console message, its DOM must hold every section, and
// its screenshot must show a page, not a blank one.
func TestReportInChromium(t *testing.T) {
	skipShort(t)
	s, page := render(t, filepath.Join(campaigns, "slr-2x3-broken"))
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}

	dom := chromium(t, path, "--dump-dom")
	for _, want := range []string{`id="campaign"`, `id="verdicts"`, `id="coverage-curve"`, `id="time-per-schedule"`, `class="timeline"`, `class="data"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("Chromium's DOM lacks %s", want)
		}
	}
	if got, want := strings.Count(dom, `<section class="failure"`), len(s.NotPassed()); got != want {
		t.Errorf("Chromium's DOM has %d failure sections, want %d", got, want)
	}

	shot := filepath.Join(dir, "report.png")
	chromium(t, path, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
	}
	colors, inked := census(img)
	// The page has text, bars of five colours, a curve and histograms: a blank or broken page
	// has a handful of colours and almost no ink.
	if colors < 50 || inked < 0.03 {
		t.Errorf("screenshot looks empty: %d colours, %.1f%% of pixels not white", colors, 100*inked)
	}
	t.Logf("screenshot: %d colours, %.1f%% of pixels not white", colors, 100*inked)
}

// census counts the distinct colours of img and the share of its pixels that are not white.
func census(img image.Image) (int, float64) {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 0xf0 || g>>8 < 0xf0 || bl>>8 < 0xf0 {
				inked++
			}
		}
	}
	return len(seen), float64(inked) / float64(b.Dx()*b.Dy())
}

// measureScript measures, as the browser laid the page out, every cell and column header of
// every timeline: its rectangle, and for each of its lines (its element children) the
// element's box and its text's (a Range over its contents: the ink, wherever the text runs).
// It runs as the page's last element, when the layout it forces is the page's, and leaves
// what it measured as JSON in <pre id="measured">, which --dump-dom prints.
const measureScript = `<script>
(() => {
	const rect = r => [r.left, r.top, r.right, r.bottom];
	const out = {width: innerWidth, boxes: []};
	for (const box of document.querySelectorAll("table.timeline td.cell, table.timeline th.col")) {
		const m = {failure: box.closest("section.failure").id, row: box.parentElement.rowIndex, column: box.cellIndex, rect: rect(box.getBoundingClientRect()), lines: []};
		for (const el of box.children) {
			const text = document.createRange();
			text.selectNodeContents(el);
			m.lines.push({text: el.textContent, box: rect(el.getBoundingClientRect()), ink: rect(text.getBoundingClientRect())});
		}
		out.boxes.push(m);
	}
	for (const wrap of document.querySelectorAll(".timeline-wrap")) {
		if (wrap.scrollWidth > wrap.clientWidth) out.scrolled = (out.scrolled || 0) + 1;
	}
	const pre = document.createElement("pre");
	pre.id = "measured";
	pre.textContent = JSON.stringify(out);
	document.body.append(pre);
})();
</script>`

// measured is what measureScript leaves.
type measured struct {
	Width    float64
	Scrolled int // timelines wider than the room they have, which scroll
	Boxes    []struct {
		Failure     string
		Row, Column int
		Rect        [4]float64 // left, top, right, bottom
		Lines       []struct {
			Text     string
			Box, Ink [4]float64
		}
	}
}

// TestTimelineFitsInChromium opens the report of each recorded campaign with failures in
// headless Chromium, 1,400 px wide, and measures its timelines as the browser lays them
// out: every line of every cell (each event, the observed role and epoch, the position, the
// resyncs, the note) and of every column header lies inside its cell, its text too, and no
// two cells overlap. PostgreSQL's failures have cells of six lines and more.
func TestTimelineFitsInChromium(t *testing.T) {
	skipShort(t)
	const width = 1400
	for _, dir := range recorded {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, page := render(t, dir)
			// The page forbids scripts; its copy lets the one that measures it run, and still
			// loads nothing.
			const csp = `content="default-src 'none'; style-src 'unsafe-inline'"`
			if !bytes.Contains(page, []byte(csp)) {
				t.Fatalf("the page's policy is no longer %s: change the test with it", csp)
			}
			page = bytes.Replace(page, []byte(csp), []byte(`content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"`), 1)
			page = bytes.Replace(page, []byte("</body>"), []byte(measureScript+"</body>"), 1)
			path := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(path, page, 0o644); err != nil {
				t.Fatal(err)
			}
			dom := chromium(t, path, "--dump-dom", "--window-size=1400,1000", "--hide-scrollbars")
			_, after, ok := strings.Cut(dom, `<pre id="measured">`)
			raw, _, ok2 := strings.Cut(after, "</pre>")
			if !ok || !ok2 {
				t.Fatal("Chromium's DOM holds no measurement: the script did not run")
			}
			var m measured
			if err := json.Unmarshal([]byte(html.UnescapeString(raw)), &m); err != nil {
				t.Fatalf("measurement: %v", err)
			}
			if m.Width != width {
				t.Fatalf("measured %v px wide, want %d", m.Width, width)
			}
			if want := timelineBoxes(t, s); len(m.Boxes) != want {
				t.Errorf("measured %d cells and column headers, want %d", len(m.Boxes), want)
			}
			// A pixel's fraction of slack: rectangles are fractional, and a line's box may
			// round past its cell's edge.
			const slack = 0.5
			inside := func(in, out [4]float64) bool {
				return in[0] >= out[0]-slack && in[1] >= out[1]-slack && in[2] <= out[2]+slack && in[3] <= out[3]+slack
			}
			most := 0
			for _, b := range m.Boxes {
				most = max(most, len(b.Lines))
				for _, l := range b.Lines {
					if !inside(l.Box, b.Rect) || strings.TrimSpace(l.Text) != "" && !inside(l.Ink, b.Rect) {
						t.Errorf("%s row %d column %d: %q (box %v, text %v) runs out of its cell %v", b.Failure, b.Row, b.Column, l.Text, l.Box, l.Ink, b.Rect)
					}
					if strings.TrimSpace(l.Text) != "" && (l.Ink[2] <= l.Ink[0] || l.Ink[3] <= l.Ink[1]) {
						t.Errorf("%s row %d column %d: %q is not drawn", b.Failure, b.Row, b.Column, l.Text)
					}
				}
			}
			for i, a := range m.Boxes {
				for _, b := range m.Boxes[i+1:] {
					if a.Failure == b.Failure && min(a.Rect[2], b.Rect[2])-max(a.Rect[0], b.Rect[0]) > slack && min(a.Rect[3], b.Rect[3])-max(a.Rect[1], b.Rect[1]) > slack {
						t.Errorf("%s: the cells of row %d column %d, %v, and row %d column %d, %v, overlap", a.Failure, a.Row, a.Column, a.Rect, b.Row, b.Column, b.Rect)
					}
				}
			}
			t.Logf("%d cells and headers measured at %v px, up to %d lines a cell; %d timelines wider than their room", len(m.Boxes), m.Width, most, m.Scrolled)
		})
	}
}

// timelineBoxes counts the cells and column headers of the timelines the report of s draws:
// for each failure drawn whose folder can be read, a header and a cell per replica for the
// start and each step.
func timelineBoxes(t *testing.T, s *results.Summary) int {
	t.Helper()
	n := 0
	for i, r := range s.NotPassed() {
		if i == report.MaxDrawn {
			break
		}
		f, err := results.ReadFailure(s.Dir, r.ID)
		if err != nil {
			continue
		}
		n += (1 + s.Header.Params.Replicas) * (len(f.Schedule.Steps) + 1)
	}
	return n
}
