package powerfs

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Disk models the disk under a file system: what a power loss keeps of the data that servers
// wrote and never synced, and when a name is durable. Real disks write a sector (512 bytes or
// 4 KiB) whole, and the page cache writes back whole 4 KiB pages, in any order; CrashMonkey
// keeps or loses whole sectors, LazyFS loses unsynced data by page.
type Disk struct {
	// Unit is what survives or is lost whole: Page or Sector bytes of a file, aligned; or
	// Byte, a tear no disk makes (a file's last unsynced write keeps its first k bytes, k drawn
	// below its length), kept as the harsher choice it was before units.
	Unit int64
	// Keeps says which of a file's unsynced units survive (with Byte, whether the last write
	// tears: KeepPrefix, or is lost: KeepNone).
	Keeps Keeps
	// Names says when a create, remove or rename is durable.
	Names Names
}

// The units.
const (
	Page   int64 = 4096
	Sector int64 = 512
	Byte   int64 = 1
)

// Keeps says which unsynced units of a file a power loss keeps, each holding exactly what was
// last written to it, as drawn from the power loss's seed.
type Keeps string

const (
	// KeepNone: every unsynced unit is lost.
	KeepNone Keeps = "none"
	// KeepPrefix: the first k units in the order they were first written since the last
	// sync, k drawn from 0 to all: a disk that writes in order, cut by the power loss.
	KeepPrefix Keeps = "prefix"
	// KeepSubset: each unit, alone, survives or not: write-back writes pages in any order.
	KeepSubset Keeps = "subset"
)

// Names says when a name operation (create, mkdir, link, symlink, unlink, rmdir, rename) is
// durable.
type Names string

const (
	// NamesJournal: at the next fsync of any file or directory of the mount, as ext4 and XFS
	// commit their one journal, which holds every name operation so far, before an fsync
	// returns.
	NamesJournal Names = "journal"
	// NamesStrict: only once every directory it changed has been fsynced since, as POSIX
	// promises and nothing more: a new file's fsync does not make its name durable.
	NamesStrict Names = "strict"
)

// DefaultDisk is the model of the kit's power losses unless a campaign sets another: 4 KiB
// pages, kept as a prefix of those written, as the page cache writes back whole pages, and the
// journal's names (ext4, XFS). Until 2026-11-29 it tore each file's last write at a byte
// (Unit Byte), which no disk does.
var DefaultDisk = Disk{Unit: Page, Keeps: KeepPrefix, Names: NamesJournal}

// ParseDisk reads a disk model from its settings' words: unit "page", "sector" or "byte";
// keeps "none", "prefix" or "subset"; names "journal" or "strict". An empty word takes
// DefaultDisk's.
func ParseDisk(unit, keeps, names string) (Disk, error) {
	d := DefaultDisk
	switch unit {
	case "":
	case "page":
		d.Unit = Page
	case "sector":
		d.Unit = Sector
	case "byte":
		d.Unit = Byte
	default:
		return Disk{}, fmt.Errorf("disk unit must be %q, %q or %q, got %q", "page", "sector", "byte", unit)
	}
	switch k := Keeps(keeps); k {
	case "":
	case KeepNone, KeepPrefix, KeepSubset:
		d.Keeps = k
	default:
		return Disk{}, fmt.Errorf("disk keeps must be %q, %q or %q, got %q", KeepNone, KeepPrefix, KeepSubset, keeps)
	}
	switch n := Names(names); n {
	case "":
	case NamesJournal, NamesStrict:
		d.Names = n
	default:
		return Disk{}, fmt.Errorf("disk names must be %q or %q, got %q", NamesJournal, NamesStrict, names)
	}
	if d.Unit == Byte && d.Keeps == KeepSubset {
		return Disk{}, fmt.Errorf("disk unit %q tears a file's last write, and keeps %q has no subset of bytes to keep: use %q or %q", "byte", KeepSubset, KeepPrefix, KeepNone)
	}
	return d, nil
}

// String says what the model keeps, for the record of a power loss.
func (d Disk) String() string {
	var data string
	switch {
	case d.Unit == Byte && d.Keeps == KeepPrefix:
		data = "unsynced data lost, each file's last write torn at a byte (no disk tears there)"
	case d.Keeps == KeepNone:
		data = "unsynced data lost"
	default:
		data = fmt.Sprintf("unsynced %s kept as a %s", d.unitName(), d.Keeps)
	}
	return fmt.Sprintf("%s; %s names", data, d.Names)
}

func (d Disk) unitName() string {
	switch d.Unit {
	case Page:
		return "4 KiB pages"
	case Sector:
		return "512-byte sectors"
	}
	return fmt.Sprintf("%d-byte units", d.Unit)
}

// keep draws which of n unsynced units survive, as indices in the order they were first
// written.
func (d Disk) keep(rng *rand.Rand, n int) []int {
	var kept []int
	switch d.Keeps {
	case KeepPrefix:
		for i := range rng.IntN(n + 1) {
			kept = append(kept, i)
		}
	case KeepSubset:
		for i := range n {
			if rng.IntN(2) == 1 {
				kept = append(kept, i)
			}
		}
	}
	return kept
}

// dirtied records that the bytes [off, off+n) of c were written: the units they touch, in the
// order first written since the last sync.
func (c *changed) dirtied(unit, off, n int64) {
	if unit <= Byte || n <= 0 {
		return
	}
	if c.dirty == nil {
		c.dirty = map[int64]bool{}
	}
	for u := off / unit; u <= (off+n-1)/unit; u++ {
		if !c.dirty[u] {
			c.dirty[u] = true
			c.units = append(c.units, u)
		}
	}
}

// survivors reads, before the file is given its durable contents back, what the units that
// survive hold now (up to the file's size now), so that they can be written back over it.
func (c *changed) survivors(d Disk, rng *rand.Rand) ([]segment, error) {
	kept := d.keep(rng, len(c.units))
	if len(kept) == 0 {
		return nil, nil
	}
	st, err := c.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("powerfs: %s: %w", c.name, err)
	}
	var segs []segment
	for _, i := range kept {
		off := c.units[i] * d.Unit
		if off >= st.Size() {
			continue // cut by a truncation since
		}
		s := segment{off: off, data: make([]byte, min(d.Unit, st.Size()-off))}
		if n, err := c.f.ReadAt(s.data, off); err != nil && n < len(s.data) {
			return nil, fmt.Errorf("powerfs: read the unit at %d of %s: %w", off, c.name, err)
		}
		segs = append(segs, s)
	}
	slices.SortFunc(segs, func(a, b segment) int { return int(a.off - b.off) })
	return segs, nil
}
