package report_test

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
)

// chromiumTimeout bounds one headless Chromium run: it renders the page and exits in about
// 3 s here; the bound only catches a browser that hangs.
const chromiumTimeout = 2 * time.Minute

// chromium runs Debian's chromium headless on page with extra arguments, in a process group
// of its own that is killed however the test ends, and returns what it printed (its log on
// stderr, and the DOM on stdout when asked). Under -short it skips t: the short suite starts
// no browser.
func chromium(t *testing.T, page string, args ...string) string {
	t.Helper()
	plugintest.Servers(t)
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
	s, page := render(t, "slr-2x3-broken")
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
