// Package fsutil copies files and directory trees and digests them, keeping what a server's
// state files need: their modes, and the holes of sparse files (ZooKeeper preallocates its
// transaction logs to 64 MiB, almost all of it a hole), so that a copy costs what the data
// weighs rather than what the files claim.
package fsutil

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Empty removes everything dir holds and keeps dir itself, its mode and its owner: a server's
// state directory on a power-loss file system is a mount point, which cannot be removed, and a
// copy made afresh (a base backup, a restore) goes into it.
func Empty(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// SyncTree fsyncs every file and directory under dir, dir itself last: what an operator's
// copy needs before a power loss may not take it back (sync(1) after cp), file by file, as a
// FUSE file system answers no syncfs.
func SyncTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			dirs = append(dirs, path)
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		return Sync(path)
	})
	if err != nil {
		return err
	}
	slices.Reverse(dirs) // a directory after everything in it
	for _, d := range dirs {
		if err := Sync(d); err != nil {
			return err
		}
	}
	return nil
}

// Sync fsyncs the file or directory at path.
func Sync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// CopyFile copies src to dst, with src's mode and holes, through a temporary file renamed into
// place, so that dst is never half written.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	err = copySparse(out, in, st.Size())
	if err := errors.Join(err, out.Chmod(st.Mode().Perm()), out.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return os.Rename(tmp, dst)
}

// copySparse copies the data segments of in (size bytes) to out at the same offsets and
// leaves the holes as holes, and blocks of zeros too (etcd allocates its logs ahead with
// zeros): the copy reads the same, and weighs only its data. Where the file system cannot tell
// holes (lseek's SEEK_DATA is refused), it reads the whole file.
func copySparse(out, in *os.File, size int64) error {
	segs, err := segments(in, size)
	if err != nil {
		segs = []segment{{0, size}}
	}
	buf := make([]byte, 16*block)
	for _, s := range segs {
		for off := s.off; off < s.off+s.n; {
			n, err := in.ReadAt(buf[:min(int64(len(buf)), s.off+s.n-off)], off)
			if n > 0 && !allZero(buf[:n]) {
				if _, err := out.WriteAt(buf[:n], off); err != nil {
					return err
				}
			}
			off += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return out.Truncate(size)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// segment is a run of a file's bytes that may hold data.
type segment struct{ off, n int64 }

// The whence values of lseek(2) that find data and holes (Linux, and most Unixes).
const (
	seekData = 3
	seekHole = 4
)

// segments returns the data segments of f (size bytes), in order.
func segments(f *os.File, size int64) ([]segment, error) {
	var segs []segment
	for off := int64(0); off < size; {
		start, err := f.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return nil, err
		}
		end, err := f.Seek(start, seekHole)
		if err != nil {
			return nil, err
		}
		segs = append(segs, segment{start, end - start})
		off = end
	}
	return segs, nil
}

// CopyTree copies src, a file or a directory, to dst with everything under it: directories,
// regular files (CopyFile) and symbolic links. dst must not exist, or be an empty directory
// (a mount point). Run as root, it keeps each entry's owner too: a server that runs as a user
// of its own (PostgreSQL) refuses a data directory that is not that user's.
func CopyTree(src, dst string) error {
	root := os.Geteuid() == 0
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.MkdirAll(to, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(path); err == nil {
				err = os.Symlink(target, to)
			}
		case d.Type().IsRegular():
			err = CopyFile(path, to)
		default:
			return fmt.Errorf("copy %s: not a file, directory or link (%v)", path, d.Type())
		}
		if err != nil || !root {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		return os.Lchown(to, int(st.Uid), int(st.Gid))
	})
}

// Tree is what Digest found under a root: the files, directories and links by path relative
// to it, in order, the bytes of data they hold (holes and zero blocks left out: what a copy
// weighs), and one
// SHA-256 over the paths, the modes, the link targets and the contents.
type Tree struct {
	Paths  []string
	Bytes  int64
	Digest string
}

// Digest digests paths (relative to root; each a file, a directory or a link) with everything
// under them. Two trees have the same digest when they hold the same names, modes and
// contents: a hole digests as the zeros it reads as, so how a copy lays out its holes does
// not change the digest.
func Digest(root string, paths []string) (Tree, error) {
	var t Tree
	h := sha256.New()
	for _, p := range slices.Sorted(slices.Values(paths)) {
		err := filepath.WalkDir(filepath.Join(root, p), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			t.Paths = append(t.Paths, rel)
			fmt.Fprintf(h, "%q %v ", rel, info.Mode())
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "-> %q\n", target)
			case d.Type().IsRegular():
				n, err := digestFile(h, path, info.Size())
				if err != nil {
					return fmt.Errorf("digest %s: %w", path, err)
				}
				t.Bytes += n
			default:
				h.Write([]byte("\n"))
			}
			return nil
		})
		if err != nil {
			return Tree{}, err
		}
	}
	t.Digest = hex.EncodeToString(h.Sum(nil))
	return t, nil
}

// block is the unit in which digestFile tells zeros from data.
const block = 4096

// digestFile adds a file's content to h as 4 KiB blocks, a run of zero blocks as its length:
// holes are zeros that need not be read. It returns the bytes of the blocks that are not all
// zeros: what CopyFile writes.
func digestFile(h hash.Hash, path string, size int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	segs, err := segments(f, size)
	if err != nil {
		segs = []segment{{0, size}}
	}
	zeros, at, data := int64(0), int64(0), int64(0) // zero bytes not yet added; where the last segment ended
	flush := func() {
		if zeros > 0 {
			h.Write([]byte("Z" + strconv.FormatInt(zeros, 10) + ";"))
			zeros = 0
		}
	}
	buf := make([]byte, block)
	for _, s := range segs {
		zeros += s.off - at
		r := io.NewSectionReader(f, s.off, s.n)
		for {
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				if allZero(buf[:n]) {
					zeros += int64(n)
				} else {
					flush()
					h.Write(buf[:n])
					data += int64(n)
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return 0, err
			}
		}
		at = s.off + s.n
	}
	zeros += size - at
	flush()
	fmt.Fprintf(h, "\n")
	return data, nil
}

// FileSHA256 returns the SHA-256 of the file at path, in hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Allocated is the disk that the file at path takes: its allocated blocks, which are fewer
// than its size where it has holes.
func Allocated(path string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st.Blocks * 512, nil
}

// PunchZeros makes the blocks of zeros in every regular file under root holes, as CopyFile
// leaves them in a copy: the files read the same and weigh only their data (etcd's 64 MB
// preallocated WAL files, written as zeros, weigh a few kilobytes then). It returns how many
// bytes it freed. A file system that cannot punch holes is left as it is, and so is a file
// that cannot be opened for writing.
func PunchZeros(root string) (freed int64, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n, err := punchFile(path)
		freed += n
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP):
			return filepath.SkipAll
		case errors.Is(err, fs.ErrPermission):
			return nil // a file the server made read-only, to a user who is not root: left whole
		}
		return err
	})
	return freed, err
}

// punchFile punches the holes of PunchZeros into one file and returns what that freed. It
// reads the whole file: a range allocated ahead by fallocate(2) (etcd's WAL) reads as zeros
// and weighs what it claims, yet lseek(2) calls it a hole, so SEEK_DATA cannot find it.
func punchFile(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var before syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &before); err != nil {
		return 0, err
	}
	// Whole blocks only: a partial last block holds data or is the file's end.
	end := before.Size / block * block
	buf := make([]byte, 256*block)
	run := int64(-1) // where the current run of zero blocks starts
	punch := func(to int64) error {
		if run < 0 || to == run {
			return nil
		}
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, run, to-run)
		run = -1
		return err
	}
	for off := int64(0); off < end; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if err != nil {
			return 0, fmt.Errorf("punch %s: %w", path, err)
		}
		for b := 0; b < n; b += block {
			switch zero := allZero(buf[b : b+block]); {
			case zero && run < 0:
				run = off + int64(b)
			case !zero:
				if err := punch(off + int64(b)); err != nil {
					return 0, fmt.Errorf("punch %s: %w", path, err)
				}
			}
		}
		off += int64(n)
	}
	if err := punch(end); err != nil {
		return 0, fmt.Errorf("punch %s: %w", path, err)
	}
	var after syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &after); err != nil {
		return 0, err
	}
	return (before.Blocks - after.Blocks) * 512, nil
}
