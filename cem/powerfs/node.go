package powerfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is go-fuse's loopback node with the operations that change names, data or durability
// recorded first. Every such operation holds the file system's lock, so that the journal's
// order is the store's.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeTmpfiler       = (*node)(nil)
)

func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

// rel is the path of the node's entry name (the node itself for ""), relative to the root.
func (n *node) rel(name string) string { return filepath.Join(n.Path(nil), name) }

// abs is where the entry rel is in the store.
func (f *FS) abs(rel string) string { return filepath.Join(f.root, rel) }

// lock takes the file system's lock and returns what ends the operation: it counts it and
// unlocks.
func (f *FS) lock() func() {
	f.mu.Lock()
	start := time.Now()
	return func() {
		f.spent(start)
		f.mu.Unlock()
	}
}

// created records a name that an operation made.
func (f *FS) created(rel string, errno syscall.Errno) syscall.Errno {
	if errno == 0 {
		f.named(undo{op: "create", path: rel})
	}
	return errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	defer n.fs.lock()()
	rel := n.rel(name)
	_, err := os.Lstat(n.fs.abs(rel))
	existed := err == nil
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_TRUNC, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if !existed {
		n.fs.created(rel, 0)
	}
	h, errno := n.fs.wrap(fh, rel, existed && flags&syscall.O_TRUNC != 0)
	return ch, h, fuseFlags, errno
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	defer n.fs.lock()()
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_TRUNC)
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.fs.wrap(fh, n.rel(""), flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY)
	return h, fuseFlags, errno
}

// wrap makes a loopback file handle one of the file system's, truncating the file first when
// trunc (an open with O_TRUNC, recorded as a truncation).
func (f *FS) wrap(fh fs.FileHandle, rel string, trunc bool) (fs.FileHandle, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	h := &handle{inner: lf, fs: f, name: rel}
	if trunc {
		if errno := h.truncate(0); errno != 0 {
			lf.Release(context.Background())
			return nil, errno
		}
	}
	return h, 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	defer n.fs.lock()()
	h, _ := fh.(*handle)
	if size, ok := in.GetSize(); ok {
		if errno := n.fs.refused("write", 0, func() string { return fmt.Sprintf("truncation of %s to %d bytes", n.rel(""), size) }); errno != 0 {
			return errno
		}
		if h == nil {
			file, err := os.OpenFile(n.fs.abs(n.rel("")), os.O_RDWR, 0)
			if err != nil {
				return fs.ToErrno(err)
			}
			defer file.Close()
			h = &handle{inner: fs.NewLoopbackFileFromOS(file), fs: n.fs, name: n.rel("")}
			fh = h
		}
		if errno := h.keep(int64(size), math.MaxInt64); errno != 0 {
			return errno
		}
	}
	if h != nil {
		fh = h.inner
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{inner: fh, fs: n.fs, rel: filepath.Clean(n.rel(""))}, fuseFlags, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	defer n.fs.lock()()
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	return ch, n.fs.created(n.rel(name), errno)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	defer n.fs.lock()()
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	return ch, n.fs.created(n.rel(name), errno)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	defer n.fs.lock()()
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	return ch, n.fs.created(n.rel(name), errno)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	defer n.fs.lock()()
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	return ch, n.fs.created(n.rel(name), errno)
}

// Unlink moves the entry to trash, where Drop finds it again.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	defer n.fs.lock()()
	return n.fs.remove(n.rel(name))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	defer n.fs.lock()()
	rel := n.rel(name)
	d, err := os.Open(n.fs.abs(rel))
	if err != nil {
		return fs.ToErrno(err)
	}
	names, err := d.Readdirnames(1)
	d.Close()
	switch {
	case len(names) > 0:
		return syscall.ENOTEMPTY
	case err != nil && !errors.Is(err, io.EOF):
		return fs.ToErrno(err)
	}
	return n.fs.remove(rel)
}

func (f *FS) remove(rel string) syscall.Errno {
	to, err := f.toTrash(f.abs(rel))
	if err != nil {
		return fs.ToErrno(err)
	}
	f.named(undo{op: "remove", path: rel, trash: to})
	return 0
}

// Rename over an existing entry exchanges the two and moves the old entry to trash, so that
// Drop can put it back; rename(2)'s own checks are made first.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	defer n.fs.lock()()
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, to := n.rel(name), np.rel(newName)
	switch {
	case flags&unix.RENAME_EXCHANGE != 0:
		if errno := n.LoopbackNode.Rename(ctx, name, np.LoopbackNode, newName, flags); errno != 0 {
			return errno
		}
		n.fs.named(undo{op: "exchange", path: from, to: to})
		return 0
	case flags != 0:
		if errno := n.LoopbackNode.Rename(ctx, name, np.LoopbackNode, newName, flags); errno != 0 {
			return errno
		}
		n.fs.named(undo{op: "rename", path: from, to: to})
		return 0
	}
	var src, dst unix.Stat_t
	if err := unix.Lstat(n.fs.abs(from), &src); err != nil {
		return fs.ToErrno(err)
	}
	if err := unix.Lstat(n.fs.abs(to), &dst); err != nil {
		if errno := n.LoopbackNode.Rename(ctx, name, np.LoopbackNode, newName, 0); errno != 0 {
			return errno
		}
		n.fs.named(undo{op: "rename", path: from, to: to})
		return 0
	}
	if src.Ino == dst.Ino {
		return 0 // two names of one file: rename(2) does nothing
	}
	srcDir, dstDir := src.Mode&unix.S_IFMT == unix.S_IFDIR, dst.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case dstDir && !srcDir:
		return syscall.EISDIR
	case !dstDir && srcDir:
		return syscall.ENOTDIR
	case dstDir:
		d, err := os.Open(n.fs.abs(to))
		if err != nil {
			return fs.ToErrno(err)
		}
		names, _ := d.Readdirnames(1)
		d.Close()
		if len(names) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, n.fs.abs(from), unix.AT_FDCWD, n.fs.abs(to), unix.RENAME_EXCHANGE); err != nil {
		return fs.ToErrno(err)
	}
	trash, err := n.fs.toTrash(n.fs.abs(from))
	if err != nil {
		return fs.ToErrno(err)
	}
	n.fs.named(undo{op: "rename", path: from, to: to, trash: trash})
	return 0
}

// Tmpfile is refused: a file without a name would escape the journal.
func (n *node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// handle is an open regular file: go-fuse's loopback file with writes, truncations and syncs
// recorded.
type handle struct {
	inner *fs.LoopbackFile
	fs    *FS
	name  string // its path when opened, for the record
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
	_ fs.FileLseeker   = (*handle)(nil)
	_ fs.FileAllocater = (*handle)(nil)
	_ fs.FileGetlker   = (*handle)(nil)
	_ fs.FileSetlker   = (*handle)(nil)
	_ fs.FileSetlkwer  = (*handle)(nil)
)

func (h *handle) fd() int {
	fd, _ := h.inner.PassthroughFd()
	return fd
}

// keep records the file as changing, keeping its durable bytes in [lo, hi) first; the lock is
// held.
func (h *handle) keep(lo, hi int64) syscall.Errno {
	c, err := h.fs.changing(h.fd(), h.name)
	if err == nil {
		err = c.save(lo, hi)
	}
	return fs.ToErrno(err)
}

// truncate cuts the file to size, keeping what it cuts; the lock is held.
func (h *handle) truncate(size int64) syscall.Errno {
	if errno := h.keep(size, math.MaxInt64); errno != 0 {
		return errno
	}
	return fs.ToErrno(unix.Ftruncate(h.fd(), size))
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	defer h.fs.lock()()
	if errno := h.fs.refused("write", int64(len(data)), func() string { return fmt.Sprintf("write of %d bytes at %d of %s", len(data), off, h.name) }); errno != 0 {
		return 0, errno
	}
	c, err := h.fs.changing(h.fd(), h.name)
	if err == nil {
		err = c.save(off, off+int64(len(data)))
	}
	if err != nil {
		return 0, fs.ToErrno(err)
	}
	c.last = segment{off: off, data: slices.Clone(data)}
	c.dirtied(h.fs.disk.Unit, off, int64(len(data)))
	n, errno := h.inner.Write(ctx, data, off)
	if n > 0 {
		h.fs.last = lastWrite{name: h.name, off: off, n: int64(n)}
	}
	return n, errno
}

// Fsync makes the file durable (fsync and fdatasync alike) and every name operation so far.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	defer h.fs.lock()()
	if errno := h.fs.refused("fsync", 0, func() string { return "fsync of " + h.name }); errno != 0 {
		return errno
	}
	return fs.ToErrno(h.fs.syncFile(h.fd()))
}

func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	defer h.fs.lock()()
	if errno := h.fs.refused("write", 0, func() string { return fmt.Sprintf("allocation of %d bytes at %d of %s", size, off, h.name) }); errno != 0 {
		return errno
	}
	lo := int64(math.MaxInt64) // an allocation that only adds space changes no byte
	if mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0 {
		lo = int64(off)
	}
	if errno := h.keep(lo, math.MaxInt64); errno != 0 {
		return errno
	}
	return h.inner.Allocate(ctx, off, size, mode)
}

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := h.fs.refused("read", 0, func() string { return fmt.Sprintf("read of %d bytes at %d of %s", len(dest), off, h.name) }); errno != 0 {
		return nil, errno
	}
	return h.inner.Read(ctx, dest, off)
}
func (h *handle) Flush(ctx context.Context) syscall.Errno   { return h.inner.Flush(ctx) }
func (h *handle) Release(ctx context.Context) syscall.Errno { return h.inner.Release(ctx) }
func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.inner.Getattr(ctx, out)
}
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.inner.Lseek(ctx, off, whence)
}
func (h *handle) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return h.inner.Getlk(ctx, owner, lk, flags, out)
}
func (h *handle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.inner.Setlk(ctx, owner, lk, flags)
}
func (h *handle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.inner.Setlkw(ctx, owner, lk, flags)
}

// dirHandle is an open directory, whose fsync makes name operations durable: every one so far
// (NamesJournal), or those in it (NamesStrict).
type dirHandle struct {
	inner fs.FileHandle
	fs    *FS
	rel   string // the directory, relative to the root ("." for the root), as filepath.Dir names it
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
)

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.inner.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.inner.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.inner.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	defer d.fs.lock()()
	if errno := d.fs.refused("fsync", 0, func() string { return "fsync of a directory" }); errno != 0 {
		return errno
	}
	return fs.ToErrno(d.fs.syncDir(d.rel))
}
