package powerfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// A disk that fails: while Errors holds, the file system answers the operations it names
// with EIO, as a disk that has started to fail does through ext4 or XFS, and does nothing of
// them (a failed write writes nothing, a failed fsync makes nothing durable). What succeeds
// is passed through and recorded as ever, so that a later power loss still drops it.

// Errors is which operations of a failing disk answer EIO, and from when.
type Errors struct {
	// Writes fails writes, truncations and allocations; Fsyncs fails fsyncs of files and
	// directories; Reads fails reads.
	Writes, Fsyncs, Reads bool
	// From is how many bytes the disk still writes after it starts failing: the operations
	// fail once a write would take the bytes written since past From, or once Spend says so,
	// and from then on.
	From int64
}

// String says which operations fail, for the record.
func (e Errors) String() string {
	var ops []string
	for _, o := range []struct {
		on   bool
		name string
	}{{e.Writes, "writes"}, {e.Fsyncs, "fsyncs"}, {e.Reads, "reads"}} {
		if o.on {
			ops = append(ops, o.name)
		}
	}
	return fmt.Sprintf("%s fail with EIO after %d more bytes written", strings.Join(ops, ", "), e.From)
}

// DrawErrors draws a failing disk from seed: writes and fsyncs fail, or fsyncs alone (the
// page cache takes writes that the disk never gets); from the first byte, or after up to
// 2 KiB more, which places the first failure among a few small records (a log's header, the
// record after it), as a failure while a server writes; reads too when reads.
func DrawErrors(seed uint64, reads bool) Errors {
	rng := rand.New(rand.NewPCG(seed, 0x64697363)) // "disc"
	e := Errors{Writes: rng.IntN(2) == 0, Fsyncs: true, Reads: reads}
	if rng.IntN(2) == 0 {
		e.From = rng.Int64N(2 << 10)
	}
	return e
}

// Failed is what a failing disk refused, for the record.
type Failed struct {
	Writes, Fsyncs, Reads int
	First                 string // the first refused operation: "write of n bytes at off of name"
}

func (f Failed) String() string {
	s := fmt.Sprintf("%d writes, %d fsyncs and %d reads failed", f.Writes, f.Fsyncs, f.Reads)
	if f.First != "" {
		s += "; the first: " + f.First
	}
	return s
}

// errState is a failing disk's state: its Errors, how many bytes it wrote since, whether it
// fails yet, and what it refused. It has a lock of its own: reads, which go through go-fuse's
// loopback unlocked, consult it without the file system's lock, which an unmount holds while
// it waits for the kernel to let go of the mount.
type errState struct {
	mu sync.Mutex
	Errors
	written int64
	failing bool
	failed  Failed
}

// Fail makes the file system a failing disk, until Heal.
func (f *FS) Fail(e Errors) { f.errs.Store(&errState{Errors: e, failing: e.From == 0}) }

// Heal ends the failure and says what it refused.
func (f *FS) Heal() Failed {
	e := f.errs.Swap(nil)
	if e == nil {
		return Failed{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failed
}

// Spend ends the bytes a failing disk still writes: from now on it fails every operation its
// Errors name. It returns how many of From's bytes were left unwritten: 0 when it was failing
// already, or is not a failing disk.
func (f *FS) Spend() int64 {
	e := f.errs.Load()
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failing {
		return 0
	}
	e.failing = true
	return e.From - e.written
}

// refuse tells whether the failing disk refuses an operation (op: "write", "fsync", "read"),
// which would write n bytes, and records it.
func (e *errState) refuse(op string, n int64, what func() string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.failing && e.written+n > e.From {
		e.failing = true
	}
	var on bool
	var count *int
	switch op {
	case "write":
		on, count = e.Writes, &e.failed.Writes
	case "fsync":
		on, count = e.Fsyncs, &e.failed.Fsyncs
	default:
		on, count = e.Reads, &e.failed.Reads
	}
	if !on || !e.failing {
		e.written += n
		return false
	}
	*count++
	if e.failed.First == "" {
		e.failed.First = what()
	}
	return true
}

// refused checks op with the failing disk, if any.
func (f *FS) refused(op string, n int64, what func() string) syscall.Errno {
	if f.errs.Load().refuse(op, n, what) {
		return syscall.EIO
	}
	return 0
}

// lastWrite is where the file system's last write went: a file's path when the write was made,
// and its bytes.
type lastWrite struct {
	name   string
	off, n int64
}

// Corruption is what Corrupt did to a file, for the record.
type Corruption struct {
	File string // relative to the mount
	Size int64  // its size before
	What string // "flipped bit b of byte k", "truncated to k bytes"
	Last bool   // the damage is in the last write's bytes, else anywhere in a file drawn among all
}

func (c Corruption) String() string {
	which := "drawn among the state's files"
	if c.Last {
		which = "in the bytes of the last write"
	}
	return fmt.Sprintf("%s of %s (%d bytes, %s)", c.What, c.File, c.Size, which)
}

// ErrNothingToCorrupt says that the file system holds no file with a byte in it.
var ErrNothingToCorrupt = errors.New("no file with data to corrupt")

// Corrupt corrupts one file, as a disk's bit rot or a lost tail does, with every process that
// used the file system gone: it makes everything durable (a killed server's writes are all
// in the kernel's cache), unmounts, and draws from seed where (in the bytes of the last write
// the file system took, where they are still there, or anywhere in one of its files) and the
// damage (a flipped bit, or a truncation at that byte); then it mounts again.
func (f *FS) Corrupt(ctx context.Context, seed uint64) (Corruption, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.unmount(ctx); err != nil {
		return Corruption{}, err
	}
	c, err := f.corrupt(seed)
	err = errors.Join(err, f.forget())
	if merr := f.mount(); merr != nil {
		return c, errors.Join(err, merr)
	}
	return c, err
}

func (f *FS) corrupt(seed uint64) (Corruption, error) {
	type file struct {
		rel  string
		size int64
	}
	var files []file
	err := filepath.WalkDir(f.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > 0 {
			rel, _ := filepath.Rel(f.root, path)
			files = append(files, file{rel: rel, size: info.Size()})
		}
		return nil
	})
	if err != nil {
		return Corruption{}, fmt.Errorf("powerfs: list the files to corrupt: %w", err)
	}
	if len(files) == 0 {
		return Corruption{}, ErrNothingToCorrupt
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.rel, b.rel) })
	rng := rand.New(rand.NewPCG(seed, 0x726f74)) // "rot"
	// Every draw is made whichever way it goes: one seed, one damage.
	last, target, flip, at, bit := rng.IntN(2) == 0, files[rng.IntN(len(files))], rng.IntN(2) == 0, rng.Uint64(), rng.IntN(8)
	lo, n := int64(0), target.size
	i := slices.IndexFunc(files, func(fl file) bool { return fl.rel == f.last.name })
	last = last && i >= 0 && files[i].size > f.last.off
	if last {
		target, lo, n = files[i], f.last.off, min(f.last.n, files[i].size-f.last.off)
	}
	c := Corruption{File: target.rel, Size: target.size, Last: last}
	path := filepath.Join(f.root, target.rel)
	at = uint64(lo) + at%uint64(n)
	if flip {
		b := make([]byte, 1)
		file, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return c, fmt.Errorf("powerfs: corrupt %s: %w", target.rel, err)
		}
		defer file.Close()
		if _, err := file.ReadAt(b, int64(at)); err != nil {
			return c, fmt.Errorf("powerfs: corrupt %s: %w", target.rel, err)
		}
		b[0] ^= 1 << bit
		if _, err := file.WriteAt(b, int64(at)); err != nil {
			return c, fmt.Errorf("powerfs: corrupt %s: %w", target.rel, err)
		}
		c.What = fmt.Sprintf("flipped bit %d of byte %d", bit, at)
		return c, nil
	}
	if err := os.Truncate(path, int64(at)); err != nil {
		return c, fmt.Errorf("powerfs: corrupt %s: %w", target.rel, err)
	}
	c.What = fmt.Sprintf("truncated to %d bytes", at)
	return c, nil
}
