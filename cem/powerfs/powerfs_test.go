package powerfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/modulo-testing/modulo/internal/fsutil"
)

// mountT mounts a file system over a store of the test's own and unmounts it at the end;
// under -short, which mounts nothing, it skips t.
// dropAll is the disk that keeps nothing unsynced, and commits names as a journal does: what
// most tests check against.
var dropAll = Disk{Unit: Byte, Keeps: KeepNone, Names: NamesJournal}

// byteTear is the disk that tears each file's last unsynced write at a byte, the default until
// 2026-11-29.
var byteTear = Disk{Unit: Byte, Keeps: KeepPrefix, Names: NamesJournal}

// mountT mounts a file system on disk d in a directory of t's, unmounted when t ends.
func mountT(t testing.TB, d Disk) *FS {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts a FUSE file system; run without -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("powerfs mounts with mount(2), which needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	base := t.TempDir()
	dir := filepath.Join(base, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Mount(dir, filepath.Join(base, "store"), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return f
}

// write writes data to path (made or truncated), fsyncing it when sync.
func write(t *testing.T, path, data string, sync bool) {
	t.Helper()
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := file.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// syncDir fsyncs the directory dir.
func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// absent is what contents says of a path that does not exist.
const absent = "(absent)"

// contents reads every regular file and directory under dir: path -> contents ("/" for a
// directory).
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			got[rel] = "/"
			return nil
		}
		data, err := os.ReadFile(path)
		got[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDropTakesBackWhatIsNotDurable(t *testing.T) {
	tests := []struct {
		name   string
		before func(t *testing.T, dir string) // durable when it returns
		do     func(t *testing.T, dir string)
		want   map[string]string
	}{
		{
			name: "write, fsync, write: the first write only",
			do: func(t *testing.T, dir string) {
				f, err := os.Create(filepath.Join(dir, "a"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				f.WriteString("durable")
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				f.WriteAt([]byte("X"), 0)
				f.WriteString(" and lost")
			},
			want: map[string]string{"a": "durable"},
		},
		{
			name: "a create that nothing synced is gone",
			do:   func(t *testing.T, dir string) { write(t, filepath.Join(dir, "b"), "data", false) },
			want: map[string]string{"b": absent},
		},
		{
			name: "a create that a directory fsync made durable stays, without its unsynced data",
			do: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "c"), "data", false)
				syncDir(t, dir)
			},
			want: map[string]string{"c": ""},
		},
		{
			name: "a create whose file was fsynced stays, with its data",
			do:   func(t *testing.T, dir string) { write(t, filepath.Join(dir, "d"), "data", true) },
			want: map[string]string{"d": "data"},
		},
		{
			name:   "an unlink that nothing synced is undone",
			before: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "e"), "kept", true) },
			do: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "e")); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]string{"e": "kept"},
		},
		{
			name: "a rename over a file is undone, and the file it replaced is back",
			before: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "old"), "old", true)
				write(t, filepath.Join(dir, "new"), "new", true)
			},
			do: func(t *testing.T, dir string) {
				if err := os.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "old")); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]string{"old": "old", "new": "new"},
		},
		{
			name:   "a rename that a directory fsync made durable stays",
			before: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "tmp"), "state", true) },
			do: func(t *testing.T, dir string) {
				if err := os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "final")); err != nil {
					t.Fatal(err)
				}
				syncDir(t, dir)
			},
			want: map[string]string{"tmp": absent, "final": "state"},
		},
		{
			name:   "a truncation's cut bytes come back",
			before: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "g"), "0123456789", true) },
			do: func(t *testing.T, dir string) {
				if err := os.Truncate(filepath.Join(dir, "g"), 3); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]string{"g": "0123456789"},
		},
		{
			name:   "an O_TRUNC rewrite is undone",
			before: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "h"), "durable", true) },
			do:     func(t *testing.T, dir string) { write(t, filepath.Join(dir, "h"), "new", false) },
			want:   map[string]string{"h": "durable"},
		},
		{
			name: "a directory made and filled without a sync is gone",
			do: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, "sub", "deeper", "i"), "data", false)
			},
			want: map[string]string{"sub": absent},
		},
		{
			name: "a removed directory comes back with what it held",
			before: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "d2"), 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, "d2", "j"), "j", true)
			},
			do: func(t *testing.T, dir string) {
				if err := os.RemoveAll(filepath.Join(dir, "d2")); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]string{"d2": "/", filepath.Join("d2", "j"): "j"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mountT(t, dropAll)
			if tt.before != nil {
				tt.before(t, f.Dir())
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			tt.do(t, f.Dir())
			if _, err := f.Drop(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			got := contents(t, f.Dir())
			for path, want := range tt.want {
				g, ok := got[path]
				if !ok {
					g = absent
				}
				if g != want {
					t.Errorf("after the drop, %s holds %q, want %q (the mount holds %v)", path, g, want, got)
				}
			}
		})
	}
}

// TestTearIsSeeded: a tear keeps a prefix of the last unsynced write, shorter than the write,
// chosen by the seed alone: two file systems that saw the same operations keep the same bytes.
func TestTearIsSeeded(t *testing.T) {
	data := strings.Repeat("0123456789", 100)
	run := func(seed uint64) (string, Loss) {
		f := mountT(t, byteTear)
		write(t, filepath.Join(f.Dir(), "log"), "head:", true)
		file, err := os.OpenFile(filepath.Join(f.Dir(), "log"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		file.WriteString("first unsynced write;")
		file.WriteString(data)
		file.Close()
		loss, err := f.Drop(context.Background(), seed)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(f.Dir(), "log"))
		if err != nil {
			t.Fatal(err)
		}
		return string(got), loss
	}
	first, loss := run(7)
	again, _ := run(7)
	if first != again {
		t.Errorf("one seed tore two ways:\n%q\n%q", first, again)
	}
	head, rest := "head:", strings.Repeat("\x00", len("first unsynced write;"))
	if !strings.HasPrefix(first, head+rest) {
		t.Fatalf("after the tear the file starts %.40q, want its durable %q and zeros where the earlier unsynced write was", first, head)
	}
	kept := first[len(head)+len(rest):]
	if len(kept) >= len(data) || !strings.HasPrefix(data, kept) {
		t.Errorf("the torn write kept %d bytes %.20q..., want a proper prefix of the %d-byte write", len(kept), kept, len(data))
	}
	if len(loss.Kept) != 1 || loss.Files != 1 || loss.Bytes != int64(len("first unsynced write;")+len(data)-len(kept)) {
		t.Errorf("loss %+v, want 1 file, 1 tear and %d bytes dropped", loss, len("first unsynced write;")+len(data)-len(kept))
	}
	seen := map[string]bool{}
	for seed := range uint64(8) {
		got, _ := run(seed)
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Errorf("eight seeds tore the write one way")
	}
}

// TestLossCounts: the record of a drop counts the files, bytes and name operations it took
// back, and the file system counts what it served.
func TestLossCounts(t *testing.T) {
	f := mountT(t, dropAll)
	write(t, filepath.Join(f.Dir(), "synced"), "0123456789", true)
	write(t, filepath.Join(f.Dir(), "new"), "abc", false)
	file, err := os.OpenFile(filepath.Join(f.Dir(), "synced"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteAt([]byte("xy"), 8)
	file.WriteAt([]byte("zzzz"), 10)
	file.Close()
	if f.Stats().Ops == 0 {
		t.Error("the file system counted no operation")
	}
	loss, err := f.Drop(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// "new": 3 bytes and its create; "synced": 2 bytes overwritten and 4 appended.
	want := Loss{Files: 2, Bytes: 3 + 2 + 4, Undone: []string{"create new"}, Kept: []string{"new: lost every one of its 3 unsynced bytes", "synced: lost every one of its 6 unsynced bytes"}}
	if loss.Files != want.Files || loss.Bytes != want.Bytes || !slices.Equal(loss.Undone, want.Undone) || !slices.Equal(loss.Kept, want.Kept) {
		t.Errorf("loss %+v, want %+v", loss, want)
	}
	if s := loss.String(); !strings.Contains(s, "dropped 9 unsynced bytes of 2 files and undid 1 name operations (create new)") {
		t.Errorf("loss reads %q", s)
	}
	// Nothing is left to take back: a second drop loses nothing.
	loss, err = f.Drop(context.Background(), 1)
	if err != nil || loss.Files+len(loss.Undone) != 0 || loss.Bytes != 0 {
		t.Errorf("a second drop: %+v, %v; want nothing lost", loss, err)
	}
}

// TestDropWaitsForOpenFiles: a drop while a file is still open waits within its context and
// then fails, naming the mount; the file system stays mounted and usable.
func TestDropWaitsForOpenFiles(t *testing.T) {
	f := mountT(t, dropAll)
	file, err := os.Create(filepath.Join(f.Dir(), "open"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = f.Drop(ctx, 1)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), f.Dir()) {
		t.Errorf("a drop with a file open returned %v, want the mount named and the deadline", err)
	}
	if _, err := file.WriteString("still served"); err != nil {
		t.Errorf("after the refused drop the open file is not served: %v", err)
	}
	file.Close()
	if _, err := f.Drop(context.Background(), 1); err != nil {
		t.Error(err)
	}
	if got, _ := os.ReadDir(f.Dir()); len(got) != 0 {
		t.Errorf("after the drop the mount holds %d entries, want none", len(got))
	}
}

// TestConnectionNotInherited: no /dev/fuse descriptor of the mounting process passes to a
// program it starts, which would keep a dead mount's connection open and its own requests
// blocked forever.
func TestConnectionNotInherited(t *testing.T) {
	f := mountT(t, dropAll)
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range entries {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target != "/dev/fuse" {
			continue
		}
		found++
		fd, _ := strconv.Atoi(e.Name())
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("/dev/fuse (fd %d) is not close-on-exec: flags %#x, %v", fd, flags, err)
		}
	}
	if found == 0 {
		t.Errorf("mounted at %s, the process holds no /dev/fuse", f.Dir())
	}
}

// TestSyncTreeMakesACopyDurable: a tree copied onto the file system and synced with
// fsutil.SyncTree (files, then their directories) survives a power loss whole, even where a
// name is durable only once its directory is synced and nothing unsynced survives.
func TestSyncTreeMakesACopyDurable(t *testing.T) {
	f := mountT(t, Disk{Unit: Page, Keeps: KeepNone, Names: NamesStrict})
	files := map[string]string{"a": "first", "sub/b": "second", "sub/deeper/c": strings.Repeat("third", 2000)}
	for name, text := range files {
		path := filepath.Join(f.Dir(), name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsutil.SyncTree(f.Dir()); err != nil {
		t.Fatal(err)
	}
	loss, err := f.Drop(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if loss.Bytes != 0 || len(loss.Undone) != 0 {
		t.Errorf("after SyncTree a power loss %s", loss)
	}
	for name, text := range files {
		got, err := os.ReadFile(filepath.Join(f.Dir(), name))
		if err != nil || string(got) != text {
			t.Errorf("%s after the power loss: %d bytes (%v), want %d", name, len(got), err, len(text))
		}
	}
}
