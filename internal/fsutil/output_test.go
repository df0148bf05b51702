package fsutil

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadFIFO opens the FIFO at path for reading and returns a channel that gets everything
// written to it until the writer closes it: a FIFO's writer waits for its reader.
func readFIFO(t *testing.T, path string) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			got <- "read: " + err.Error()
			return
		}
		got <- string(b)
	}()
	return got
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// TestWriteFile writes "new" to every kind of path and checks where it went and that the path
// is still what it was.
func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		// setup makes the path to write in dir and returns it, with a check of what is there
		// afterwards.
		setup func(t *testing.T, dir string) (path string, check func(t *testing.T))
	}{
		{"new file", func(t *testing.T, dir string) (string, func(*testing.T)) {
			p := filepath.Join(dir, "out")
			return p, func(t *testing.T) { wantFile(t, p, "new", 0o644) }
		}},
		{"regular file, replaced with its mode", func(t *testing.T, dir string) (string, func(*testing.T)) {
			p := filepath.Join(dir, "out")
			if err := os.WriteFile(p, []byte("old content"), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o640); err != nil {
				t.Fatal(err)
			}
			return p, func(t *testing.T) { wantFile(t, p, "new", 0o640) }
		}},
		{"link to a regular file: the file is replaced, the link stays", func(t *testing.T, dir string) (string, func(*testing.T)) {
			target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
			if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, "target", link)
			return link, func(t *testing.T) { wantLink(t, link, "target"); wantFile(t, target, "new", 0o644) }
		}},
		{"dangling link: the file it names is created", func(t *testing.T, dir string) (string, func(*testing.T)) {
			target, link := filepath.Join(dir, "sub", "target"), filepath.Join(dir, "link")
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, target, link)
			return link, func(t *testing.T) { wantLink(t, link, target); wantFile(t, target, "new", 0o644) }
		}},
		{"FIFO", func(t *testing.T, dir string) (string, func(*testing.T)) {
			p := filepath.Join(dir, "fifo")
			mkfifo(t, p)
			got := readFIFO(t, p)
			return p, func(t *testing.T) { wantRead(t, got, "new"); wantType(t, p, fs.ModeNamedPipe) }
		}},
		{"link to a FIFO", func(t *testing.T, dir string) (string, func(*testing.T)) {
			fifo, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
			mkfifo(t, fifo)
			symlink(t, fifo, link)
			got := readFIFO(t, fifo)
			return link, func(t *testing.T) {
				wantRead(t, got, "new")
				wantLink(t, link, fifo)
				wantType(t, fifo, fs.ModeNamedPipe)
			}
		}},
		{"character device", func(t *testing.T, dir string) (string, func(*testing.T)) {
			// A null device of the test's own (major 1, minor 3, as /dev/null), never /dev/null.
			p := filepath.Join(dir, "null")
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("mknod needs CAP_MKNOD, which this user lacks: %v", err)
			}
			return p, func(t *testing.T) { wantType(t, p, fs.ModeDevice|fs.ModeCharDevice) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, check := tt.setup(t, dir)
			before := names(t, dir)
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				before = strings.TrimSpace(before + " " + filepath.Base(path) + "(----------)")
			}
			if err := WriteFile(path, 0o644, writeString("new")); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			check(t)
			if after := names(t, dir); after != before {
				t.Errorf("directory held %s before, %s after: a temporary file left, or a path removed", before, after)
			}
		})
	}
}

// TestWriteFileRefuses: a directory and a socket are named in the error and left as they were,
// and a write that fails leaves a regular file's old content.
func TestWriteFileRefuses(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	failing := func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("disk on fire") }
	tests := []struct {
		path  string
		write func(io.Writer) error
		want  string
	}{
		{dir, writeString("x"), "write " + dir + ": it is a directory: name a file"},
		{sock, writeString("x"), "write " + sock + ": it is a socket, not a file, device or FIFO"},
		{filepath.Join(dir, "none", "x"), writeString("x"), "write " + filepath.Join(dir, "none", "x") + ": directory " + filepath.Join(dir, "none") + " does not exist"},
		{old, failing, "write " + old + ": disk on fire"},
	}
	before := names(t, dir)
	for _, tt := range tests {
		err := WriteFile(tt.path, 0o644, tt.write)
		if err == nil || err.Error() != tt.want {
			t.Errorf("WriteFile(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
	wantFile(t, old, "old", 0o644)
	wantType(t, sock, fs.ModeSocket)
	if after := names(t, dir); after != before {
		t.Errorf("directory held %s before, %s after", before, after)
	}
}

func wantFile(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != mode {
		t.Errorf("%s is %v, want a regular file of mode %v", path, st.Mode(), mode)
	}
	if b, _ := os.ReadFile(path); string(b) != content {
		t.Errorf("%s holds %q, want %q", path, b, content)
	}
}

func wantLink(t *testing.T, link, target string) {
	t.Helper()
	if got, err := os.Readlink(link); err != nil || got != target {
		t.Errorf("%s: link to %q (%v), want a link to %q", link, got, err, target)
	}
}

func wantType(t *testing.T, path string, typ fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != typ {
		t.Errorf("%s is %v now, want type %v", path, st.Mode(), typ)
	}
}

func wantRead(t *testing.T, got <-chan string, want string) {
	t.Helper()
	if s := <-got; s != want {
		t.Errorf("the reader got %q, want %q", s, want)
	}
}

// names lists dir's entries, with their types.
func names(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, e := range entries {
		s = append(s, e.Name()+"("+e.Type().String()+")")
	}
	return strings.Join(s, " ")
}
