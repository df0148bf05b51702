package fsutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// sparseTree writes a tree like a ZooKeeper data directory: a small file, and a log
// preallocated to 64 MiB of which a few bytes are written.
func sparseTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "data", "version-2")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "data", "myid"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "log.100000001"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, at := range []int64{0, 5 << 20} {
		if _, err := f.WriteAt([]byte("transaction"), at); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("version-2", filepath.Join(root, "data", "current")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestCopyTreeKeepsContentModesAndHoles(t *testing.T) {
	src := sparseTree(t)
	dst := filepath.Join(t.TempDir(), "copy")
	if err := CopyTree(filepath.Join(src, "data"), filepath.Join(dst, "data")); err != nil {
		t.Fatal(err)
	}
	want, err := Digest(src, []string{"data"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Digest(dst, []string{"data"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want.Digest || got.Bytes != want.Bytes || len(got.Paths) != 5 || got.Bytes > 1<<20 {
		t.Errorf("copy digests %+v, the original %+v", got, want)
	}
	info, err := os.Stat(filepath.Join(dst, "data", "myid"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("myid copied with mode %v, want -rw-------", info.Mode())
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "data", "version-2", "log.100000001"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 64<<20 || st.Blocks*512 > 1<<20 {
		t.Errorf("the copied log is %d bytes with %d allocated: its holes were filled", st.Size, st.Blocks*512)
	}
}

func TestDigestSeesEveryChange(t *testing.T) {
	src := sparseTree(t)
	base, err := Digest(src, []string{"data"})
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(src, "data", "version-2", "log.100000001")
	for _, tc := range []struct {
		name   string
		change func() error
	}{
		{"a byte in a hole", func() error {
			f, err := os.OpenFile(log, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte{1}, 40<<20)
			return err
		}},
		{"a mode", func() error { return os.Chmod(filepath.Join(src, "data", "myid"), 0o644) }},
		{"a name", func() error {
			return os.Rename(filepath.Join(src, "data", "myid"), filepath.Join(src, "data", "myid2"))
		}},
	} {
		if err := tc.change(); err != nil {
			t.Fatal(err)
		}
		got, err := Digest(src, []string{"data"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest == base.Digest {
			t.Errorf("%s changed, the digest did not", tc.name)
		}
		base = got
	}
}

// TestDigestOfZerosIgnoresHoles: a file of written zeros and a hole of the same length are
// the same content.
func TestDigestOfZerosIgnoresHoles(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(a, "f"), make([]byte, 3*block+5), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(b, "f"), 3*block+5); err != nil {
		t.Fatal(err)
	}
	da, err := Digest(a, []string{"f"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Digest(b, []string{"f"})
	if err != nil {
		t.Fatal(err)
	}
	if da.Digest != db.Digest {
		t.Errorf("written zeros digest as %s, a hole as %s", da.Digest, db.Digest)
	}
}

// TestPunchZeros: a file written as zeros and one allocated ahead by fallocate(2), as etcd
// preallocates its WAL, each with data at its start, in its middle and in its last, partial
// block, read the same after PunchZeros and weigh their data alone.
func TestPunchZeros(t *testing.T) {
	const size = 8<<20 + 100
	for _, tt := range []struct {
		name  string
		write func(t *testing.T, path string, data []byte)
	}{
		{"written", func(t *testing.T, path string, data []byte) {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"allocated", func(t *testing.T, path string, data []byte) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
				t.Skipf("the test's file system cannot allocate ahead: %v", err)
			}
			for at := 0; at < size; at += 1 << 20 {
				if chunk := data[at:min(at+1<<20, size)]; !allZero(chunk) {
					if _, err := f.WriteAt(chunk, int64(at)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "member", "wal", "0.wal")
			if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
				t.Fatal(err)
			}
			data := make([]byte, size)
			for _, at := range []int{0, 3<<20 + 17, size - 10} {
				copy(data[at:], "record")
			}
			tt.write(t, path, data)
			before, err := Digest(root, []string{"member"})
			if err != nil {
				t.Fatal(err)
			}
			freed, err := PunchZeros(root)
			if err != nil {
				t.Fatal(err)
			}
			after, err := Digest(root, []string{"member"})
			if err != nil {
				t.Fatal(err)
			}
			if after.Digest != before.Digest {
				t.Error("the file reads otherwise after PunchZeros")
			}
			var st syscall.Stat_t
			if err := syscall.Stat(path, &st); err != nil {
				t.Fatal(err)
			}
			if st.Size != size || st.Blocks*512 > 64<<10 || freed < 8<<20-64<<10 {
				t.Errorf("after PunchZeros (freed %d bytes) the file is %d bytes with %d allocated, want %d with its blocks of data", freed, st.Size, st.Blocks*512, size)
			}
		})
	}
}

// TestEmpty: Empty removes files and trees under a directory and keeps the directory with its
// mode; a missing directory is an error.
func TestEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "sub/b", "sub/deeper/c"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Empty(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("after Empty, %s holds %v (%v)", dir, entries, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("after Empty, %s: %v, %v; want a directory of mode 0700", dir, fi, err)
	}
	if err := Empty(filepath.Join(dir, "missing")); err == nil {
		t.Error("Empty of a missing directory succeeded")
	}
}

// TestCopyTreeKeepsOwners: run as root, a copy keeps each file's and directory's owner, and a
// copy into an existing empty directory (a mount point) gives it the source's owner.
func TestCopyTreeKeepsOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give a file away")
	}
	src := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(src, "sub", "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{src, filepath.Join(src, "sub"), file} {
		if err := os.Lchown(p, 4321, 4322); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "mount")
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{".", "sub", "sub/f"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dst, rel), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 4321 || st.Gid != 4322 {
			t.Errorf("%s copied with owner %d:%d, want 4321:4322", rel, st.Uid, st.Gid)
		}
	}
}

// TestSyncTree: SyncTree syncs a tree of files and directories, and names what it cannot open.
func TestSyncTree(t *testing.T) {
	dir := sparseTree(t)
	if err := SyncTree(dir); err != nil {
		t.Errorf("SyncTree(%s): %v", dir, err)
	}
	if err := SyncTree(filepath.Join(dir, "missing")); err == nil {
		t.Error("SyncTree of a missing directory succeeded")
	}
}
