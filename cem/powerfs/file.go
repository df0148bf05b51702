package powerfs

import (
	"fmt"
	"os"
	"slices"
)

// changed is what the file system keeps of one regular file changed since its last sync: its
// durable size, and the durable bytes that changes since have overwritten or cut.
type changed struct {
	f       *os.File // the file opened anew for reading and writing: it holds the inode wherever its names go
	name    string   // its path, relative to the root, when it was first changed
	seq     int      // the order of first changes, for a stable order among files of one name
	durable int64    // its size at its last sync
	saved   []segment
	last    segment // its last write since its last sync, which a tear cuts
	// units are the disk's units (Disk.Unit) that writes touched since its last sync, in the
	// order first written; dirty holds the same, for the lookup.
	units []int64
	dirty map[int64]bool
}

// segment is data at an offset of a file.
type segment struct {
	off  int64
	data []byte
}

func (s segment) end() int64 { return s.off + int64(len(s.data)) }

// save keeps the durable bytes in [lo, hi) that are not kept yet, read from the file as it
// stands, before a change overwrites or cuts them. Bytes at or past the durable size need
// nothing: Drop cuts the file back to it.
func (c *changed) save(lo, hi int64) error {
	hi = min(hi, c.durable)
	var gaps []segment
	at := lo
	for _, s := range c.saved {
		if at >= hi {
			break
		}
		if s.end() <= at {
			continue
		}
		if s.off > at {
			gaps = append(gaps, segment{off: at, data: make([]byte, min(s.off, hi)-at)})
		}
		at = max(at, s.end())
	}
	if at < hi {
		gaps = append(gaps, segment{off: at, data: make([]byte, hi-at)})
	}
	for _, g := range gaps {
		// The file holds every durable byte that is not saved yet: a truncation saves what
		// it cuts before it cuts it.
		n, err := c.f.ReadAt(g.data, g.off)
		if err != nil && n < len(g.data) {
			return fmt.Errorf("powerfs: keep the durable bytes %d-%d of %s: %w", g.off, g.end(), c.name, err)
		}
		c.saved = append(c.saved, g)
	}
	if len(gaps) > 0 {
		slices.SortFunc(c.saved, func(a, b segment) int { return int(a.off - b.off) })
	}
	return nil
}

// restore gives the file its durable contents back and returns how many bytes it took back.
func (c *changed) restore() (int64, error) {
	st, err := c.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("powerfs: %s: %w", c.name, err)
	}
	dropped := max(0, st.Size()-c.durable)
	if err := c.f.Truncate(c.durable); err != nil {
		return 0, fmt.Errorf("powerfs: cut %s back to its durable %d bytes: %w", c.name, c.durable, err)
	}
	for _, s := range c.saved {
		if _, err := c.f.WriteAt(s.data, s.off); err != nil {
			return 0, fmt.Errorf("powerfs: write back the durable bytes %d-%d of %s: %w", s.off, s.end(), c.name, err)
		}
		dropped += int64(len(s.data))
	}
	return dropped, nil
}
