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

// lossyDisk is the fault no real machine's power loss gives: a page whose fault model names it
// is listed in the README apart from the findings, under a line that begins with apartTitle.
const (
	lossyDisk  = "a disk that loses fsynced bytes"
	apartTitle = "Under a disk that loses fsynced bytes"
)

var readmeBugLink = regexp.MustCompile(`\]\(docs/bugs/([a-z0-9-]+\.md)\)`)

// faultModelOf is the first paragraph of p's "Schedule" section, on one line: the one that must
// begin with faultModel.
func faultModelOf(p page) string {
	para, _, _ := strings.Cut(strings.TrimSpace(p.sections["Schedule"]), "\n\n")
	return strings.Join(strings.Fields(para), " ")
}

// findingsProblems says how the README's findings depart from the pages: every page linked once,
// in the table unless its fault model needs a disk that loses fsynced bytes, and then only in
// the list after apartTitle.
func findingsProblems(readme string, pages []page) []string {
	apart := strings.Index(readme, apartTitle)
	if apart < 0 {
		apart = len(readme)
	}
	where := map[string][]bool{} // page: for each link, whether it is in the list apart
	for _, m := range readmeBugLink.FindAllStringSubmatchIndex(readme, -1) {
		name := readme[m[2]:m[3]]
		where[name] = append(where[name], m[0] > apart)
	}
	var problems []string
	known := map[string]bool{}
	for _, p := range pages {
		known[p.name] = true
		links := where[p.name]
		needsApart := strings.Contains(faultModelOf(p), lossyDisk)
		switch {
		case len(links) == 0:
			problems = append(problems, fmt.Sprintf("README.md does not link docs/bugs/%s", p.name))
		case len(links) > 1:
			problems = append(problems, fmt.Sprintf("README.md links docs/bugs/%s %d times, want once", p.name, len(links)))
		case needsApart && !links[0]:
			problems = append(problems, fmt.Sprintf("README.md lists docs/bugs/%s among the findings, and its fault model needs %s: list it after %q", p.name, lossyDisk, apartTitle))
		case !needsApart && links[0]:
			problems = append(problems, fmt.Sprintf("README.md lists docs/bugs/%s after %q, and its fault model does not need %s", p.name, apartTitle, lossyDisk))
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
	crash := parsePage("a.md", "# A\n\nS.\n\n## Schedule\n\n"+faultModel+"crashes alone.\n")
	lossy := parsePage("b.md", "# B\n\nS.\n\n## Schedule\n\n"+faultModel+lossyDisk+": a cut\nWAL.\n")
	table := "| [a](docs/bugs/a.md) |\n"
	list := apartTitle + ": [b](docs/bugs/b.md).\n"
	tests := []struct {
		name   string
		readme string
		want   int
	}{
		{"each where it belongs", table + list, 0},
		{"the lossy one in the table", table + "| [b](docs/bugs/b.md) |\n", 1},
		{"the crash one apart", list + "[a](docs/bugs/a.md)", 1},
		{"one missing", table, 1},
		{"one twice", table + table + list, 1},
		{"a link to no page", table + list + "[c](docs/bugs/c.md)", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := findingsProblems(tt.readme, []page{crash, lossy}); len(got) != tt.want {
				t.Errorf("%d problems %q, want %d", len(got), got, tt.want)
			}
		})
	}
}
