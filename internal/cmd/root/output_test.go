package root

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// campaign is a real campaign recorded in results/testdata (see its README).
const campaign = "../../../results/testdata/campaigns/slr-2x3-broken"

// TestOutputNotReplaced runs gen and report on the command line with -o naming a FIFO, a link
// to a FIFO and -: the output reaches the FIFO's reader or standard output, and the FIFO and
// the link are still what they were, with nothing beside them (a rename over the path, as gen
// once did to /dev/null, would leave a regular file).
func TestOutputNotReplaced(t *testing.T) {
	commands := []struct {
		name string
		args []string // -o's value follows
		want string   // what the output starts with
	}{
		{"gen", []string{"gen", "--drm", "slr", "--ops", "1", "--replicas", "3", "-o"}, "# modulo schedules v1\n# drm: slr\n"},
		{"report", []string{"report", campaign, "-o"}, "<!DOCTYPE html>"},
	}
	targets := []struct {
		name string
		// make returns the -o value made in dir, and the FIFO a reader opens ("" for -).
		make func(t *testing.T, dir string) (out, fifo string)
	}{
		{"FIFO", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "fifo")
			mkfifo(t, p)
			return p, p
		}},
		{"link to a FIFO", func(t *testing.T, dir string) (string, string) {
			p, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
			mkfifo(t, p)
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link, p
		}},
		{"standard output", func(*testing.T, string) (string, string) { return "-", "" }},
	}
	for _, c := range commands {
		for _, target := range targets {
			t.Run(c.name+" to "+target.name, func(t *testing.T) {
				dir := t.TempDir()
				out, fifo := target.make(t, dir)
				before := entries(t, dir)
				var got <-chan string
				if fifo != "" {
					got = readAll(fifo)
				}
				var stdout, stderr bytes.Buffer
				cmd := NewCmd(&stdout, &stderr)
				cmd.SetArgs(append(c.args, out))
				if err := cmd.Execute(); err != nil {
					t.Fatalf("modulo %s: %v\n%s", strings.Join(c.args, " "), err, stderr.String())
				}
				text := stdout.String()
				if got != nil {
					text = <-got
				}
				if !strings.HasPrefix(text, c.want) {
					t.Errorf("the output starts %q, want %q", text[:min(len(text), 80)], c.want)
				}
				if after := entries(t, dir); after != before {
					t.Errorf("%s held %s before and %s after: the output was renamed over or removed", dir, before, after)
				}
			})
		}
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}

// readAll reads the FIFO at path until its writer closes it: a FIFO's writer waits for its
// reader, so the reader starts first.
func readAll(path string) <-chan string {
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(b)
	}()
	return got
}

// entries lists dir's names with their types and, for links, their targets.
func entries(t *testing.T, dir string) string {
	t.Helper()
	var s []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		e := path + " " + d.Type().String()
		if d.Type()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(path)
			e += " -> " + to
		}
		s = append(s, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(s, "\n")
}
