package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// headings are the sections of every page of docs/bugs, in this order, after its title and its
// one-paragraph summary: the shape docs/bugs/README.md describes.
var headings = []string{
	"System and releases",
	"Schedule",
	"By hand, without modulo",
	"What the logs show",
	"Where in the code",
	"Upstream",
	"Kept and replayed by",
}

// faultModel begins the first paragraph of every page's "Schedule" section: the faults the
// finding needs, so that a reader knows whether a real machine gives them.
const faultModel = "Fault model: "

// keptSection is the heading of the section that names what keeps a page's finding.
const keptSection = "Kept and replayed by"

// notKept is the line that the "Kept and replayed by" section of a page carries, word for word,
// when no test keeps its finding because a replay of its schedule does not fail every time; the
// section then gives the replay counts measured ("2 of 5").
const notKept = "No test keeps this finding: its schedule does not fail on every replay."

// page is one page of docs/bugs: its title, its summary, and its sections' bodies by heading,
// with the headings in the order written.
type page struct {
	name, title, summary string
	order                []string
	sections             map[string]string
}

// text is all of a page that names things: its summary and its sections.
func (p page) text() string {
	var b strings.Builder
	b.WriteString(p.summary)
	for _, h := range p.order {
		b.WriteString("\n" + p.sections[h])
	}
	return b.String()
}

// parsePage splits a page at its "## " headings; what comes before the first is the title line
// and the summary.
func parsePage(name, text string) page {
	p := page{name: name, sections: map[string]string{}}
	head, current := "", ""
	var body strings.Builder
	flush := func() {
		if current == "" {
			head = body.String()
		} else {
			p.sections[current] += body.String()
		}
		body.Reset()
	}
	for _, line := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			flush()
			current = strings.TrimSpace(h)
			p.order = append(p.order, current)
			continue
		}
		body.WriteString(line + "\n")
	}
	flush()
	head = strings.TrimLeft(head, "\n")
	first, rest, _ := strings.Cut(head, "\n")
	if t, ok := strings.CutPrefix(first, "# "); ok {
		p.title, head = strings.TrimSpace(t), rest
	}
	p.summary = strings.TrimSpace(head)
	return p
}

// kept is a schedule kept in a plugin's testdata: its ID, the file, and the test functions of
// the plugin whose files name that file (the tests that replay it).
type kept struct {
	id, file string
	tests    []string
}

// shapeProblems says how p departs from the shape: a title, a summary of one paragraph, the
// headings, each once, in order and no other, none empty.
func shapeProblems(p page) []string {
	var problems []string
	if p.title == "" {
		problems = append(problems, "the first line is not a title (# ...)")
	}
	if p.summary == "" || strings.Contains(p.summary, "\n\n") {
		problems = append(problems, "want one paragraph between the title and the first heading")
	}
	if !slices.Equal(p.order, headings) {
		problems = append(problems, fmt.Sprintf("headings %q, want %q", p.order, headings))
	}
	for _, h := range p.order {
		if strings.TrimSpace(p.sections[h]) == "" {
			problems = append(problems, fmt.Sprintf("section %q is empty", h))
		}
	}
	if _, ok := p.sections["Schedule"]; ok && !strings.HasPrefix(faultModelOf(p), faultModel) {
		problems = append(problems, fmt.Sprintf("section %q does not begin with %q, the faults the finding needs", "Schedule", faultModel))
	}
	return problems
}

var replayCount = regexp.MustCompile(`\b\d+ of \d+\b`)

// keptProblems says what is wrong with what p's "Kept and replayed by" section names: it must
// name one of keeps (a kept schedule by its ID, a hand reproduction by its path) and a test
// that replays or runs it, or carry the notKept line and the replay counts measured; every
// one of keeps it names must come with such a test.
func keptProblems(p page, keeps []kept) []string {
	section := p.sections[keptSection]
	if strings.Contains(section, notKept) {
		if !replayCount.MatchString(section) {
			return []string{"says no test keeps it, and gives no replay count (\"N of M\")"}
		}
		return nil
	}
	var problems []string
	found := false
	for _, k := range keeps {
		if !strings.Contains(section, k.id) {
			continue
		}
		named := slices.ContainsFunc(k.tests, func(test string) bool { return strings.Contains(section, test) })
		if !named {
			problems = append(problems, fmt.Sprintf("names %s (testdata/%s) and none of the tests that name the file: %q", k.id, k.file, k.tests))
		}
		found = found || named
	}
	if !found && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("%q names no schedule kept in plugins/*/testdata with the test that replays it, nor a hand reproduction there with the test that runs it, nor says %q", keptSection, notKept))
	}
	return problems
}

// unnamedProblems says which kept schedules (by ID) and hand reproductions (by path from the
// repository's top) no page names.
func unnamedProblems(pages []page, schedules []kept, hand []string) []string {
	var all strings.Builder
	for _, p := range pages {
		all.WriteString(p.text())
	}
	text := all.String()
	var problems []string
	for _, k := range schedules {
		if !strings.Contains(text, k.id) {
			problems = append(problems, fmt.Sprintf("schedule %s of testdata/%s is named by no page", k.id, k.file))
		}
	}
	for _, h := range hand {
		if !strings.Contains(text, h) {
			problems = append(problems, fmt.Sprintf("the hand reproduction %s is named by no page", h))
		}
	}
	return problems
}

func readPages(t *testing.T) []page {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "bugs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pages []page
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, parsePage(filepath.Base(f), string(b)))
	}
	if len(pages) == 0 {
		t.Fatal("docs/bugs holds no page")
	}
	return pages
}

var scheduleID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// keptSchedules reads every schedule ID of the plugins' testdata *.txt files: a kept finding
// ("ID schedule", plugintest.KeptSchedule's format) or a row of the Redis known-bug benchmark
// (the ID among the row's fields), comment lines skipped.
func keptSchedules(t *testing.T) []kept {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "plugins", "*", "testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var all []kept
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := sc.Text(); !strings.HasPrefix(line, "#") {
				ids = append(ids, slices.DeleteFunc(strings.Fields(line), func(f string) bool { return !scheduleID.MatchString(f) })...)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tests := replayers(t, filepath.Dir(filepath.Dir(f)), filepath.Base(f))
		for _, id := range ids {
			all = append(all, kept{id: id, file: filepath.Base(f), tests: tests})
		}
	}
	if len(all) == 0 {
		t.Fatal("no schedule is kept in plugins/*/testdata")
	}
	return all
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// replayers are the test functions defined in the test files of the plugin in dir that name
// file: the tests that replay a schedule kept in it, or run a hand reproduction.
func replayers(t *testing.T, dir, file string) []string {
	t.Helper()
	tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), file) {
			for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// handReproductions are the hand reproductions of the plugins' testdata (*.sh, *.go), by path
// from the repository's top.
func handReproductions(t *testing.T) []string {
	t.Helper()
	var hand []string
	for _, ext := range []string{"*.sh", "*.go"} {
		files, err := filepath.Glob(filepath.Join(root, "plugins", "*", "testdata", ext))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			hand = append(hand, filepath.ToSlash(rel))
		}
	}
	return hand
}

// TestBugPagesShape: every page of docs/bugs has the shape's title, summary and headings.
func TestBugPagesShape(t *testing.T) {
	for _, p := range readPages(t) {
		for _, problem := range shapeProblems(p) {
			t.Errorf("docs/bugs/%s: %s", p.name, problem)
		}
	}
}

// TestBugIndex: docs/bugs/README.md links every page, and every page it links exists.
func TestBugIndex(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(root, "docs", "bugs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([a-z0-9-]+\.md)(#[a-z0-9-]*)?\)`).FindAllStringSubmatch(string(index), -1) {
		linked[m[1]] = true
		if _, err := os.Stat(filepath.Join(root, "docs", "bugs", m[1])); err != nil {
			t.Errorf("docs/bugs/README.md links %s: %v", m[1], err)
		}
	}
	for _, p := range readPages(t) {
		if !linked[p.name] {
			t.Errorf("docs/bugs/README.md does not link %s", p.name)
		}
	}
}

// TestEveryFindingHasAPage: every schedule kept in the plugins' testdata and every hand
// reproduction there is named by a page, and a test of its plugin replays or runs it.
func TestEveryFindingHasAPage(t *testing.T) {
	schedules := keptSchedules(t)
	hand := handReproductions(t)
	for _, problem := range unnamedProblems(readPages(t), schedules, hand) {
		t.Error(problem)
	}
	for _, k := range schedules {
		if len(k.tests) == 0 {
			t.Errorf("no test names testdata/%s, which keeps %s", k.file, k.id)
		}
	}
	for _, h := range hand {
		if len(replayers(t, filepath.Join(root, filepath.Dir(filepath.Dir(h))), filepath.Base(h))) == 0 {
			t.Errorf("no test of its plugin runs %s", h)
		}
	}
}

// TestEveryPageIsKept: every page names a kept schedule and the test that replays it, or a
// hand reproduction and the test that runs it, or says in the one declared line why no test
// keeps it, with the replay counts measured.
func TestEveryPageIsKept(t *testing.T) {
	keeps := keptSchedules(t)
	for _, h := range handReproductions(t) {
		keeps = append(keeps, kept{id: h, file: filepath.Base(h), tests: replayers(t, filepath.Join(root, filepath.Dir(filepath.Dir(h))), filepath.Base(h))})
	}
	for _, p := range readPages(t) {
		for _, problem := range keptProblems(p, keeps) {
			t.Errorf("docs/bugs/%s: %s", p.name, problem)
		}
	}
}

// TestChecks holds the checks to what they must find, on pages made up for it.
func TestChecks(t *testing.T) {
	var good strings.Builder
	good.WriteString("# A title\n\nOne paragraph of summary.\n")
	for _, h := range headings {
		if h == "Schedule" {
			fmt.Fprintf(&good, "\n## %s\n\n%scrashes alone.\n\nSomething.\n", h, faultModel)
			continue
		}
		fmt.Fprintf(&good, "\n## %s\n\nSomething.\n", h)
	}
	swapped := strings.Replace(strings.Replace(good.String(), "## Upstream", "## X", 1), "## Where in the code", "## Upstream", 1)
	swapped = strings.Replace(swapped, "## X", "## Where in the code", 1)
	schedules := []kept{{id: "0123456789abcdef", file: "x.txt", tests: []string{"TestX"}}}
	withKept := func(section string) page {
		p := parsePage("p.md", good.String())
		p.sections[keptSection] = section
		return p
	}
	tests := []struct {
		name    string
		problem func() []string
		want    int
	}{
		{"the shape", func() []string { return shapeProblems(parsePage("p.md", good.String())) }, 0},
		{"no title", func() []string {
			return shapeProblems(parsePage("p.md", strings.TrimPrefix(good.String(), "# A title\n")))
		}, 1},
		{"two paragraphs", func() []string {
			return shapeProblems(parsePage("p.md", strings.Replace(good.String(), "summary.", "summary.\n\nAnother.", 1)))
		}, 1},
		{"headings out of order", func() []string { return shapeProblems(parsePage("p.md", swapped)) }, 1},
		{"a heading missing", func() []string {
			return shapeProblems(parsePage("p.md", strings.Replace(good.String(), "## Upstream\n\nSomething.\n", "", 1)))
		}, 1},
		{"no fault model", func() []string {
			return shapeProblems(parsePage("p.md", strings.Replace(good.String(), faultModel, "", 1)))
		}, 1},
		{"an empty section", func() []string {
			return shapeProblems(parsePage("p.md", strings.Replace(good.String(), "## Upstream\n\nSomething.", "## Upstream\n", 1)))
		}, 1},
		{"kept, with its test", func() []string {
			return keptProblems(withKept("`x.txt` (0123456789abcdef): `TestX` replays it."), schedules)
		}, 0},
		{"kept, without its test", func() []string { return keptProblems(withKept("`x.txt` (0123456789abcdef)."), schedules) }, 1},
		{"nothing kept", func() []string { return keptProblems(withKept("Nothing."), schedules) }, 1},
		{"by hand, with its test", func() []string {
			return keptProblems(withKept("`TestY` runs `plugins/x/testdata/y.go`."), append(schedules, kept{id: "plugins/x/testdata/y.go", file: "y.go", tests: []string{"TestY"}}))
		}, 0},
		{"by hand, without its test", func() []string {
			return keptProblems(withKept("`plugins/x/testdata/y.go`."), append(schedules, kept{id: "plugins/x/testdata/y.go", file: "y.go", tests: []string{"TestY"}}))
		}, 1},
		{"declared, with counts", func() []string { return keptProblems(withKept(notKept+" It failed in 0 of 5 replays."), schedules) }, 0},
		{"declared, without counts", func() []string { return keptProblems(withKept(notKept), schedules) }, 1},
		{"named", func() []string {
			return unnamedProblems([]page{withKept("0123456789abcdef, plugins/x/testdata/x.sh")}, schedules, []string{"plugins/x/testdata/x.sh"})
		}, 0},
		{"unnamed", func() []string {
			return unnamedProblems([]page{parsePage("p.md", good.String())}, schedules, []string{"plugins/x/testdata/x.sh"})
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.problem(); len(got) != tt.want {
				t.Errorf("%d problems %q, want %d", len(got), got, tt.want)
			}
		})
	}
}
