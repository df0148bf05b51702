// Package powerfs is modulo's file system for power losses: a FUSE file system (on
// github.com/hanwen/go-fuse/v2) mounted over a replica's state that passes every operation
// through to a store directory, and keeps what is needed to take back every change that was
// not yet made durable. Drop takes them back, as a power failure would: what a server wrote but
// never synced is gone when it starts again. A SIGKILL alone never shows that, for the
// operating system keeps every byte a killed process wrote.
//
// What is durable, and what Drop takes back:
//
//   - Data. A regular file's contents are durable as they stand at its last fsync or fdatasync
//     (through any open handle of it). Drop gives each file changed since its durable contents
//     back: the bytes overwritten since come back, bytes written past its durable size are cut
//     (the size goes back), and the bytes a truncation cut come back. A file created since the
//     last sync has no durable contents: its durable size is 0.
//   - Names. Creating, removing and renaming entries (create, mkdir, mknod, symlink, link,
//     unlink, rmdir, rename) are durable as the mount's Disk.Names says. NamesJournal: at the
//     next fsync or fdatasync of any file or directory of the mount, as a journaling file
//     system (ext4, XFS) commits its one journal, which holds every name operation made so
//     far, before an fsync returns. NamesStrict: only once every directory the operation
//     changed has been fsynced since, as POSIX promises (a new file's fsync commits nothing of
//     its name; a new directory's name needs its parent's fsync). Drop undoes the name
//     operations not durable, newest first: a file created since is gone, a file removed
//     since is back under its name, a rename is undone.
//   - What the disk keeps (Disk.Unit, Disk.Keeps). With a unit of Page or Sector bytes, the
//     aligned units that writes touched since a file's last sync survive or are lost whole,
//     as drawn from Drop's seed: none, the first k in the order first written, or any subset;
//     a unit that survives holds exactly what was last written to it (up to the file's size
//     at the loss), and between the file's durable size and a unit kept past it the file
//     reads zeros. With the unit Byte and KeepPrefix, each file's last write since its last
//     sync leaves its first k bytes, k drawn below the write's length (0 keeps none): a write
//     cut at a byte, which no disk does, kept as the harsher choice.
//   - Attributes (mode, owner, times, extended attributes) are passed through and never taken
//     back; neither is a size that fallocate adds without KEEP_SIZE beyond what Drop cuts.
//     O_TMPFILE is refused (EOPNOTSUPP), and copy_file_range falls back to reads and writes.
//
// Drop takes back what is not durable in the store itself, with the file system unmounted:
// every server that used it must be gone, so that nothing of the kernel's caches outlives the
// power loss. The mount then comes back over the store as it is after the loss. Sync makes
// everything durable at once (what a setup wrote before the first server starts; what a
// restore copied in).
//
// Disk faults. Fail makes the file system a failing disk until Heal: the operations its Errors
// name (writes, truncations and allocations; fsyncs of files and directories; reads) answer
// EIO once a given number of bytes has been written since, and do nothing (a refused fsync
// makes nothing durable). Corrupt flips a bit of one file, or truncates it, as DrawErrors and
// Corrupt draw from a seed, with every process that used the file system gone.
//
// The file system itself never calls fsync on the store: the host's own durability is not
// what a campaign asks about, and Drop alone decides what a power loss keeps.
package powerfs
