package doccheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// anchor is the fragment GitHub gives a heading: lower case, every character but letters,
// digits, spaces, hyphens and underscores dropped, spaces made hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	headingLine = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	// localLink is a Markdown link to a file of the repository, or to a heading of one: a path
	// of letters, digits, dots, slashes, hyphens and underscores (a schedule's failure kinds,
	// "D[1,0](n,c)", are not one).
	localLink = regexp.MustCompile(`\]\(([\w./-]*)(?:#([\w-]+))?\)`)
)

// linkProblems says which links of the Markdown file name (its text) point to no file, or to a
// heading that the file they name lacks; anchors gives a Markdown file's headings' anchors, by
// path, and exists whether a path exists.
func linkProblems(name, text string, anchors func(path string) ([]string, bool), exists func(path string) bool) []string {
	var problems []string
	for _, m := range localLink.FindAllStringSubmatch(text, -1) {
		target, frag := m[1], m[2]
		if target == "" && frag == "" {
			continue
		}
		path := name
		if target != "" {
			path = filepath.Join(filepath.Dir(name), target)
		}
		if !exists(path) {
			problems = append(problems, fmt.Sprintf("%s links %s, which does not exist", name, m[0][2:len(m[0])-1]))
			continue
		}
		if frag == "" || !strings.HasSuffix(path, ".md") {
			continue
		}
		if as, ok := anchors(path); ok && !slices.Contains(as, frag) {
			problems = append(problems, fmt.Sprintf("%s links %s, and %s has no heading %q", name, m[0][2:len(m[0])-1], path, frag))
		}
	}
	return problems
}

// TestLinks: every link from one Markdown file of the repository to another, or to a heading
// of one, leads somewhere (a section that moved leaves its pointers dangling otherwise).
func TestLinks(t *testing.T) {
	texts := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			texts[filepath.Clean(path)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := func(path string) ([]string, bool) {
		text, ok := texts[filepath.Clean(path)]
		var as []string
		for _, m := range headingLine.FindAllStringSubmatch(text, -1) {
			as = append(as, anchor(m[1]))
		}
		return as, ok
	}
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }
	for name, text := range texts {
		for _, p := range linkProblems(name, text, anchors, exists) {
			t.Error(p)
		}
	}
}

// TestLinkChecks holds linkProblems and anchor to what they must find.
func TestLinkChecks(t *testing.T) {
	if got, want := anchor("Configuration: the `[nats]` table"), "configuration-the-nats-table"; got != want {
		t.Errorf("anchor = %q, want %q", got, want)
	}
	files := map[string][]string{"a.md": {"intro", "set-up-run-test"}, "d/b.md": {"partitions"}}
	anchors := func(path string) ([]string, bool) { as, ok := files[filepath.Clean(path)]; return as, ok }
	exists := func(path string) bool { _, ok := files[filepath.Clean(path)]; return ok }
	for _, tt := range []struct {
		text string
		want int
	}{
		{"[x](d/b.md#partitions) [y](#intro) [z](d/b.md) [w](https://example.com/x#y)", 0},
		{"[x](d/b.md#beyond-the-paper-partitions)", 1},
		{"[x](#nowhere)", 1},
		{"[x](c.md)", 1},
	} {
		if got := linkProblems("a.md", tt.text, anchors, exists); len(got) != tt.want {
			t.Errorf("%q: %d problems %q, want %d", tt.text, len(got), got, tt.want)
		}
	}
}
