package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxREADME is how large the front door may grow: what a newcomer reads top to bottom in five
// minutes. Everything else goes to docs/.
const maxREADME = 15_000

// TestREADMEIsShort checks the README's size and that it keeps its table of contents and the
// two commands that .ci/run and a newcomer rely on.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxREADME {
		t.Errorf("README.md has %d bytes, more than %d: move detail to docs/", len(b), maxREADME)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"scripts/setup && bin/modulo gen --drm slr --ops 1 --replicas 3 -o slr.sched && bin/modulo run slr.sched",
		"scripts/setup && go test -count=1 -timeout 60m ./...",
		"- [Reading a failure](#reading-a-failure)",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	if !strings.Contains(string(ci), "go test -count=1 -timeout 60m ./...") {
		t.Errorf(".ci/run does not run the README's test command")
	}
}

// apartFaults are the fault models that no real machine is known to give: a page whose fault
// model names one is listed in the README apart from the findings, after a line that begins
// with its title. A disk that loses fsynced bytes is no power loss; a file system that keeps a
// name only once its directory is fsynced is what POSIX promises, and which real file systems
// behave so is not measured here (ext4 and XFS give more).
var apartFaults = []struct{ fault, title string }{
	{"a disk that loses fsynced bytes", "Under a disk that loses fsynced bytes"},
	{"a file system that keeps a name only once its directory is fsynced", "Under a file system that keeps a name only once its directory is fsynced"},
}

var readmeBugLink = regexp.MustCompile(`\]\(docs/bugs/([a-z0-9-]+\.md)\)`)

// faultModelOf is the first paragraph of p's "Schedule" section, on one line: the one that must
// begin with faultModel.
func faultModelOf(p page) string {
	para, _, _ := strings.Cut(strings.TrimSpace(p.sections["Schedule"]), "\n\n")
	return strings.Join(strings.Fields(para), " ")
}

// findingsProblems says how the README's findings depart from the pages: every page linked once,
// in the table unless its fault model names one of apartFaults, and then only in the list after
// that fault's title.
func findingsProblems(readme string, pages []page) []string {
	titleAt := map[string]int{} // each list apart's title: where the README has it
	for _, a := range apartFaults {
		if j := strings.Index(readme, a.title); j >= 0 {
			titleAt[a.title] = j
		}
	}
	// sectionAt names where offset i of the README lies: "" for the findings, else the title of
	// the last list apart that begins before it.
	sectionAt := func(i int) string {
		section, at := "", -1
		for title, j := range titleAt {
			if j < i && j > at {
				section, at = title, j
			}
		}
		return section
	}
	where := map[string][]string{} // page: for each link, the section it is in
	for _, m := range readmeBugLink.FindAllStringSubmatchIndex(readme, -1) {
		name := readme[m[2]:m[3]]
		where[name] = append(where[name], sectionAt(m[0]))
	}
	var problems []string
	known := map[string]bool{}
	for _, p := range pages {
		known[p.name] = true
		links := where[p.name]
		want := ""
		for _, a := range apartFaults {
			if strings.Contains(faultModelOf(p), a.fault) {
				want = a.title
				break
			}
		}
		switch {
		case len(links) == 0:
			problems = append(problems, fmt.Sprintf("README.md does not link docs/bugs/%s", p.name))
		case len(links) > 1:
			problems = append(problems, fmt.Sprintf("README.md links docs/bugs/%s %d times, want once", p.name, len(links)))
		case links[0] != want && want == "":
			problems = append(problems, fmt.Sprintf("README.md lists docs/bugs/%s after %q, and its fault model names none of the faults listed apart", p.name, links[0]))
		case links[0] != want:
			problems = append(problems, fmt.Sprintf("README.md lists docs/bugs/%s where its fault model does not belong: list it after %q", p.name, want))
		}
	}
	for name := range where {
		if !known[name] {
			problems = append(problems, fmt.Sprintf("README.md links docs/bugs/%s, which is no page", name))
		}
	}
	slices.Sort(problems)
	return problems
}

// TestREADMEFindings: the README lists every finding's page once, and apart those that need a
// fault no real machine's power loss gives.
func TestREADMEFindings(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range findingsProblems(string(b), readPages(t)) {
		t.Error(problem)
	}
}

// TestFindingsChecks holds findingsProblems to what it must find, on pages made up for it.
func TestFindingsChecks(t *testing.T) {
	pageOf := func(name, fault string) page {
		return parsePage(name, "# A\n\nS.\n\n## Schedule\n\n"+faultModel+fault+": one\nthing.\n")
	}
	pages := []page{pageOf("a.md", "crashes alone"), pageOf("b.md", apartFaults[0].fault), pageOf("c.md", "a power loss on "+apartFaults[1].fault)}
	table := "| [a](docs/bugs/a.md) |\n"
	lossy := apartFaults[0].title + ": [b](docs/bugs/b.md).\n"
	names := apartFaults[1].title + ": [c](docs/bugs/c.md).\n"
	tests := []struct {
		name   string
		readme string
		want   int
	}{
		{"each where it belongs", table + lossy + names, 0},
		{"the lists apart the other way round", table + names + lossy, 0},
		{"the lossy one in the table", table + "| [b](docs/bugs/b.md) |\n" + names, 1},
		{"the crash one apart", lossy + "[a](docs/bugs/a.md)" + names, 1},
		{"one apart under the other's title", table + apartFaults[0].title + ": [b](docs/bugs/b.md), [c](docs/bugs/c.md).\n", 1},
		{"one missing", table + lossy, 1},
		{"one twice", table + table + lossy + names, 1},
		{"a link to no page", table + lossy + names + "[d](docs/bugs/d.md)", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := findingsProblems(tt.readme, pages); len(got) != tt.want {
				t.Errorf("%d problems %q, want %d", len(got), got, tt.want)
			}
		})
	}
}
