package doccheck

import (
	"os"
	"path/filepath"
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
