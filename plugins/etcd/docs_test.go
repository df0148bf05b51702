package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tutorial is the page that builds this plugin step by step.
const tutorial = "../../docs/writing-a-plugin.md"

// excerpt is a code block of the tutorial marked with the file it comes from.
var excerpt = regexp.MustCompile("(?s)<!-- from ([^ ]+) -->\n```go\n(.*?)\n```")

// TestTutorialShowsTheCode checks that every code block the tutorial marks as a file's is in
// that file as it is, so that the tutorial builds the real plugin.
func TestTutorialShowsTheCode(t *testing.T) {
	doc, err := os.ReadFile(tutorial)
	if err != nil {
		t.Fatal(err)
	}
	blocks := excerpt.FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 10 {
		t.Fatalf("the tutorial has %d marked code blocks, want every step's", len(blocks))
	}
	for _, b := range blocks {
		src, err := os.ReadFile(filepath.Join("../..", b[1]))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), b[2]) {
			first, _, _ := strings.Cut(b[2], "\n")
			t.Errorf("the tutorial's block from %s that starts %q is not in the file", b[1], first)
		}
	}
}

// TestSize checks that the plugin's own code stays under 150 lines (neither blank nor
// comment), the size the kit is for, and that the tutorial says how many there are.
func TestSize(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(src), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	if n >= 150 {
		t.Errorf("main.go has %d lines of code, want under 150", n)
	}
	doc, err := os.ReadFile(tutorial)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d lines of code", n); !strings.Contains(string(doc), want) {
		t.Errorf("the tutorial does not say %q", want)
	}
}
