package powerfs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FS is one mount of the file system.
type FS struct {
	dir   string // the mount point
	root  string // the store's root: the file system's contents
	trash string // where removed entries wait for the next sync
	disk  Disk   // what a power loss keeps

	mu      sync.Mutex
	server  *fuse.Server // nil while unmounted
	files   map[uint64]*changed
	seq     int
	journal []undo // the name operations since the last sync, oldest first
	trashed int    // entries moved to trash, for their names
	stats   Stats
	errs    atomic.Pointer[errState] // a failing disk's, nil while it does not fail
	last    lastWrite                // the last write to any file, which Corrupt may damage
}

// undo is one name operation, as Drop takes it back.
type undo struct {
	op       string // "create", "remove", "rename" or "exchange"
	path, to string // relative to the root: the entry, and a rename's new name
	trash    string // the entry a remove or a rename over it moved to trash, "" for none
	// dirs are the directories it changed that have not been fsynced since (NamesStrict):
	// it is durable once there are none.
	dirs []string
}

// String names the operation: "create a", "remove a", "rename a to b", "exchange a with b".
func (u undo) String() string {
	switch u.op {
	case "rename":
		return "rename " + u.path + " to " + u.to
	case "exchange":
		return "exchange " + u.path + " with " + u.to
	}
	return u.op + " " + u.path
}

// named records a name operation in the journal, with the directories it changed.
func (f *FS) named(u undo) {
	u.dirs = []string{filepath.Dir(u.path)}
	if u.to != "" && filepath.Dir(u.to) != u.dirs[0] {
		u.dirs = append(u.dirs, filepath.Dir(u.to))
	}
	f.journal = append(f.journal, u)
}

// Stats counts the operations that change or sync the file system (writes, truncations,
// syncs, name operations, opens), which it serves with its own code, and the time they took,
// the store's system calls included; reads, lookups and listings go through go-fuse's loopback
// uncounted.
type Stats struct {
	Ops  int64
	Busy time.Duration
}

// Loss is what one Drop took back.
type Loss struct {
	Files int   // files whose unsynced data was taken back, the torn ones included
	Bytes int64 // bytes of unsynced data taken back, less what the disk kept
	// Undone names the name operations undone, in the order they were made: "create
	// member/snap/0000000000000003-000000000000000b.snap", "rename a to b".
	Undone []string
	// Kept says, per file, what the disk kept of its unsynced data: "name: kept 3 of its 5
	// unsynced units at bytes 0-8191, 16384-20479", or a tear, "name: kept k of the n bytes
	// written at off", or none of it, "name: lost every one of its n unsynced bytes".
	Kept []string
}

// maxUndoneShown bounds how many undone name operations a power loss's record names: a
// server's start can make hundreds.
const maxUndoneShown = 20

// String says what was lost, for the record of a power loss.
func (l Loss) String() string {
	s := fmt.Sprintf("dropped %d unsynced bytes of %d files and undid %d name operations", l.Bytes, l.Files, len(l.Undone))
	if len(l.Undone) > 0 {
		shown := l.Undone[:min(len(l.Undone), maxUndoneShown)]
		s += " (" + strings.Join(shown, ", ")
		if more := len(l.Undone) - len(shown); more > 0 {
			s += fmt.Sprintf(" and %d more", more)
		}
		s += ")"
	}
	if len(l.Kept) > 0 {
		s += "; " + strings.Join(l.Kept, "; ")
	}
	return s
}

// Mount mounts the file system at dir (an empty directory) over store, which it makes when
// missing: store/root holds the contents, store/trash what was removed since the last sync.
// Everything already in the store is durable; disk says what a power loss keeps of the rest.
func Mount(dir, store string, disk Disk) (*FS, error) {
	f := &FS{dir: dir, root: filepath.Join(store, "root"), trash: filepath.Join(store, "trash"), disk: disk, files: map[uint64]*changed{}}
	// The root as servers want their data directories (etcd warns of any other): the owner's.
	for _, d := range []string{f.root, f.trash} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("powerfs: %w", err)
		}
	}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

// Dir is the mount point.
func (f *FS) Dir() string { return f.dir }

func (f *FS) mount() error {
	var st syscall.Stat_t
	if err := syscall.Stat(f.root, &st); err != nil {
		return fmt.Errorf("powerfs: %s: %w", f.root, err)
	}
	lr := &fs.LoopbackRoot{Path: f.root, Dev: uint64(st.Dev)}
	top := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, fs: f}
	lr.RootNode = top
	server, err := fs.Mount(f.dir, top, &fs.Options{MountOptions: fuse.MountOptions{
		// As root, mount(2) itself: a fresh machine need not have fusermount.
		DirectMount: true,
		// Servers that refuse root (PostgreSQL) run as users of their own.
		AllowOther: true,
		FsName:     f.root,
		Name:       "modulo-powerfs",
	}})
	if err != nil {
		return fmt.Errorf("powerfs: mount %s over %s: %w", f.dir, f.root, err)
	}
	f.server = server
	return closeOnExec()
}

// closeOnExec marks every /dev/fuse descriptor of this process close-on-exec. go-fuse opens
// it without: a server started afterwards would inherit the connection, and when this process
// dies it would keep the connection open while it waits, unkillable, for answers that never
// come.
func closeOnExec() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	for _, e := range entries {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || target != "/dev/fuse" {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("powerfs: mark /dev/fuse (fd %d) close-on-exec: %w", fd, err)
		}
	}
	return nil
}

// unmount ends the mount, waiting within ctx while the kernel still holds files of it open
// (a killed server's files are closed after its death).
func (f *FS) unmount(ctx context.Context) error {
	if f.server == nil {
		return nil
	}
	for {
		// unmount(2) itself: go-fuse's Unmount turns to fusermount when the mount is busy.
		err := unix.Unmount(f.dir, 0)
		if err == nil {
			f.server.Wait()
			f.server = nil
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("powerfs: unmount %s: %w", f.dir, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("powerfs: unmount %s: still in use: %w", f.dir, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Unmount ends the mount; what is in the store stays, as it stands.
func (f *FS) Unmount(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.unmount(ctx)
	if err != nil {
		// Force it (which aborts the connection: nothing waits on it) or detach it: a mount
		// that outlives its server answers nothing but errors.
		if unix.Unmount(f.dir, unix.MNT_FORCE) == nil || unix.Unmount(f.dir, unix.MNT_DETACH) == nil {
			f.server.Wait()
			f.server = nil
		}
	}
	return errors.Join(err, f.forget())
}

// Sync makes everything in the file system durable.
func (f *FS) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forget()
}

// Stats returns what the file system has served since it was mounted.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Drop is a power loss: it unmounts the file system, takes back everything that was not
// durable but what its Disk keeps (see the package doc), as drawn from seed, and mounts it
// again. Every process that used it must be gone.
func (f *FS) Drop(ctx context.Context, seed uint64) (Loss, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.unmount(ctx); err != nil {
		return Loss{}, err
	}
	loss, err := f.takeBack(seed)
	err = errors.Join(err, f.forget())
	if merr := f.mount(); merr != nil {
		return loss, errors.Join(err, merr)
	}
	return loss, err
}

// takeBack undoes the name operations that are not durable, newest first, then gives every
// changed file its durable contents back, with what the disk keeps of the rest, in the order
// of their names.
func (f *FS) takeBack(seed uint64) (Loss, error) {
	var loss Loss
	gone := map[*changed]bool{}
	for _, c := range f.files {
		if st, err := c.f.Stat(); err == nil && st.Sys().(*syscall.Stat_t).Nlink == 0 {
			gone[c] = true
		}
	}
	at := func(rel string) string { return filepath.Join(f.root, rel) }
	for i := len(f.journal) - 1; i >= 0; i-- {
		u := f.journal[i]
		var err error
		switch u.op {
		case "create":
			err = os.RemoveAll(at(u.path))
		case "remove":
			err = os.Rename(u.trash, at(u.path))
		case "rename":
			err = os.Rename(at(u.to), at(u.path))
			if err == nil && u.trash != "" {
				err = os.Rename(u.trash, at(u.to))
			}
		case "exchange":
			err = unix.Renameat2(unix.AT_FDCWD, at(u.path), unix.AT_FDCWD, at(u.to), unix.RENAME_EXCHANGE)
		}
		if err != nil {
			return loss, fmt.Errorf("powerfs: undo the %s of %s: %w", u.op, u.path, err)
		}
		loss.Undone = append(loss.Undone, u.String())
	}
	slices.Reverse(loss.Undone) // in the order they were made
	files := make([]*changed, 0, len(f.files))
	for _, c := range f.files {
		files = append(files, c)
	}
	slices.SortFunc(files, func(a, b *changed) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	rng := rand.New(rand.NewPCG(seed, 0x706f776572)) // "power"
	tear := f.disk.Unit == Byte && f.disk.Keeps == KeepPrefix
	for _, c := range files {
		if gone[c] {
			continue // removed, and its removal durable: nothing of it is left to lose
		}
		var kept []segment
		if f.disk.Unit > Byte {
			var err error
			if kept, err = c.survivors(f.disk, rng); err != nil {
				return loss, err
			}
		}
		n, err := c.restore()
		if err != nil {
			return loss, err
		}
		if len(c.units) > 0 && f.disk.Keeps != KeepNone {
			for _, s := range kept {
				if _, err := c.f.WriteAt(s.data, s.off); err != nil {
					return loss, fmt.Errorf("powerfs: keep the unit at %d of %s: %w", s.off, c.name, err)
				}
				n -= int64(len(s.data))
			}
			line := fmt.Sprintf("%s: kept %d of its %d unsynced units", c.name, len(kept), len(c.units))
			if len(kept) > 0 {
				line += " at bytes " + byteRanges(kept)
			}
			loss.Kept = append(loss.Kept, line)
		}
		if f.disk.Keeps == KeepNone && n > 0 {
			loss.Kept = append(loss.Kept, fmt.Sprintf("%s: lost every one of its %d unsynced bytes", c.name, n))
		}
		if tear && len(c.last.data) > 0 {
			k := rng.IntN(len(c.last.data))
			if k > 0 {
				if _, err := c.f.WriteAt(c.last.data[:k], c.last.off); err != nil {
					return loss, fmt.Errorf("powerfs: tear the last write to %s: %w", c.name, err)
				}
				n -= int64(k)
			}
			loss.Kept = append(loss.Kept, fmt.Sprintf("%s: kept %d of the %d bytes written at %d", c.name, k, len(c.last.data), c.last.off))
		}
		if n > 0 || len(c.units) > 0 || tear && len(c.last.data) > 0 {
			loss.Files++
		}
		loss.Bytes += max(0, n)
	}
	return loss, nil
}

// byteRanges names the bytes that segments cover, in their order, as inclusive ranges with
// adjacent segments merged: "0-8191, 16384-16899". A prefix of hundreds of pages is one range.
func byteRanges(segs []segment) string {
	var ranges []string
	for i := 0; i < len(segs); {
		j := i + 1
		for j < len(segs) && segs[j].off == segs[j-1].end() {
			j++
		}
		ranges = append(ranges, fmt.Sprintf("%d-%d", segs[i].off, segs[j-1].end()-1))
		i = j
	}
	return strings.Join(ranges, ", ")
}

// forget makes everything durable: no change is kept to take back, and trash is emptied.
func (f *FS) forget() error {
	var errs []error
	for ino, c := range f.files {
		errs = append(errs, c.f.Close())
		delete(f.files, ino)
	}
	errs = append(errs, f.commitNames())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	return nil
}

// syncFile makes the file open as fd durable and, with NamesJournal, every name operation so
// far.
func (f *FS) syncFile(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if c, ok := f.files[st.Ino]; ok {
		delete(f.files, st.Ino)
		if err := c.f.Close(); err != nil {
			return err
		}
	}
	if f.disk.Names == NamesStrict {
		return nil
	}
	return f.commitNames()
}

// syncDir makes the name operations durable that an fsync of directory dir (relative to the
// root) makes durable: with NamesJournal every one so far, with NamesStrict those that
// changed no other directory not fsynced since.
func (f *FS) syncDir(dir string) error {
	if f.disk.Names != NamesStrict {
		return f.commitNames()
	}
	var errs []error
	kept := f.journal[:0]
	for _, u := range f.journal {
		u.dirs = slices.DeleteFunc(u.dirs, func(d string) bool { return d == dir })
		if len(u.dirs) > 0 {
			kept = append(kept, u)
		} else if u.trash != "" {
			errs = append(errs, os.RemoveAll(u.trash))
		}
	}
	clear(f.journal[len(kept):])
	f.journal = kept
	if len(f.journal) == 0 {
		f.trashed = 0 // every entry in trash was a durable operation's, and is gone
	}
	return errors.Join(errs...)
}

// commitNames makes every name operation so far durable.
func (f *FS) commitNames() error {
	f.journal = f.journal[:0]
	if f.trashed == 0 {
		return nil
	}
	entries, err := os.ReadDir(f.trash)
	for _, e := range entries {
		err = errors.Join(err, os.RemoveAll(filepath.Join(f.trash, e.Name())))
	}
	f.trashed = 0
	return err
}

// changing returns the record of the file open as fd, which is about to change, making it
// when the file has not changed since its last sync: its size now is its durable size.
func (f *FS) changing(fd int, name string) (*changed, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if c, ok := f.files[st.Ino]; ok {
		return c, nil
	}
	// A file description of its own, without the server's O_APPEND or O_WRONLY.
	file, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("powerfs: open %s again: %w", name, err)
	}
	f.seq++
	c := &changed{f: file, name: name, seq: f.seq, durable: st.Size}
	f.files[st.Ino] = c
	return c, nil
}

// toTrash moves the entry at path (absolute, in the store) to trash and returns where.
func (f *FS) toTrash(path string) (string, error) {
	f.trashed++
	to := filepath.Join(f.trash, strconv.Itoa(f.trashed))
	if err := os.Rename(path, to); err != nil {
		f.trashed--
		return "", err
	}
	return to, nil
}

// spent counts one operation that began at start.
func (f *FS) spent(start time.Time) {
	f.stats.Ops++
	f.stats.Busy += time.Since(start)
}
