package executor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DiskFullError stops a run whose results directory's disk has less free than
// Campaign.MinFree: a disk that fills would fail the servers' writes (a fault the schedule did
// not draw) and leave records and failure folders half-written.
type DiskFullError struct {
	Dir        string
	Free, Want int64 // bytes
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("the disk of %s has %d MiB free, less than min_free_mb = %d: the campaign stopped before its next schedule, "+
		"its results intact; free some space (or lower min_free_mb, failure_budget_mb) and run again to resume", e.Dir, e.Free>>20, e.Want>>20)
}

// checkFree returns a *DiskFullError when the disk of the results directory has less free
// than MinFree.
func (c *Campaign) checkFree() error {
	if c.MinFree <= 0 {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(c.Store.Dir(), &st); err != nil {
		return fmt.Errorf("free disk of %s: %w", c.Store.Dir(), err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < c.MinFree {
		return &DiskFullError{Dir: c.Store.Dir(), Free: free, Want: c.MinFree}
	}
	return nil
}
