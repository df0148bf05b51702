package run

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/executor"
)

// How often progress is shown: a terminal's bar is redrawn at most every barEvery, and at
// least every tickEvery so that the rate and ETA move; elsewhere a plain line is printed every
// lineEvery, and at the end.
const (
	barEvery  = 100 * time.Millisecond
	tickEvery = time.Second
	lineEvery = 10 * time.Second
	barWidth  = 30
)

// progress shows a run's progress on stderr: a bar with rate and ETA redrawn in place on a
// terminal, plain lines elsewhere. It is also the writer for the plugins' messages, so that
// they do not tear the bar.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	// expectSkips is how many schedules earlier runs recorded: they will be skipped, and do
	// not count in the ETA.
	expectSkips int
	started     time.Time
	summary     executor.Summary
	shown       time.Time // when the bar or line was last shown
	drawn       bool      // the bar is on the terminal's last line

	stop chan struct{}
	done chan struct{}
}

// newProgress returns a progress display for total schedules; it shows nothing before start.
func newProgress(w io.Writer, terminal bool, total uint64) *progress {
	p := &progress{w: w, terminal: terminal, stop: make(chan struct{}), done: make(chan struct{})}
	p.summary.Total = total
	return p
}

// start starts the clock and the periodic display; expectSkips is how many schedules earlier
// runs recorded.
func (p *progress) start(expectSkips int) {
	p.mu.Lock()
	p.started, p.expectSkips = time.Now(), expectSkips
	p.mu.Unlock()
	go p.tick()
}

func (p *progress) tick() {
	defer close(p.done)
	every := lineEvery
	if p.terminal {
		every = tickEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.mu.Lock()
			p.show()
			p.mu.Unlock()
		case <-p.stop:
			return
		}
	}
}

// update takes the counts after a verdict.
func (p *progress) update(s executor.Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.summary = s
	if p.terminal && time.Now().Sub(p.shown) >= barEvery {
		p.show()
	}
}

// Write writes a plugin's message above the bar.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	n, err := p.w.Write(b)
	if p.terminal && p.drawn {
		p.show()
	}
	return n, err
}

// finish stops the ticker and shows the final counts on a line of their own.
func (p *progress) finish() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	p.show()
	if p.terminal {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// clear erases the bar, if it is drawn, leaving the cursor at the start of its line.
func (p *progress) clear() {
	if p.terminal && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func (p *progress) show() {
	now := time.Now()
	p.shown = now
	text := progressText(p.summary, p.expectSkips, now.Sub(p.started))
	if !p.terminal {
		fmt.Fprintf(p.w, "progress: %s\n", text)
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s %s", bar(p.summary), text)
	p.drawn = true
}

// bar draws how much of the campaign has a verdict: "[######........]".
func bar(s executor.Summary) string {
	filled := barWidth
	if s.Total > 0 {
		filled = int(uint64(s.Schedules()) * barWidth / s.Total)
	}
	filled = min(filled, barWidth)
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled) + "]"
}

// progressText says how far a run is: schedules with a verdict out of all, the rate of this
// run, the time left at that rate, and the counts by verdict. expectSkips is how many
// schedules are recorded from earlier runs: those not reached yet are skipped without time.
func progressText(s executor.Summary, expectSkips int, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", s.Schedules(), s.Total)
	if s.Total > 0 {
		fmt.Fprintf(&b, " (%.1f%%)", 100*float64(s.Schedules())/float64(s.Total))
	}
	ran := s.Ran()
	if ran > 0 && elapsed > 0 {
		rate := float64(ran) / elapsed.Seconds()
		left := int64(s.Total) - int64(s.Schedules()) - int64(max(expectSkips-s.Skipped, 0))
		eta := time.Duration(float64(max(left, 0)) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", %s, ETA %s", formatRate(rate), eta.Round(time.Second))
	}
	fmt.Fprintf(&b, ", pass %d, fail %d, incomplete %d, error %d%s", s.Pass, s.Fail, s.Incomplete, s.Error, s.Apart(" "))
	if s.Skipped > 0 {
		fmt.Fprintf(&b, " (%d recorded before)", s.Skipped)
	}
	return b.String()
}

// formatRate shows a rate in schedules per second, or per minute when slower than one a
// second.
func formatRate(perSecond float64) string {
	if perSecond < 1 {
		return fmt.Sprintf("%.1f/min", perSecond*60)
	}
	return fmt.Sprintf("%.1f/s", perSecond)
}
