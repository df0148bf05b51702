package proc

import (
	"context"
	"fmt"
	"time"
)

// Backoff bounds of WaitFor: the first poll repeats after waitFirstDelay, each delay doubles up
// to waitMaxDelay. Small because the states plugins wait for (a PING answer, a replica in sync)
// are usually reached within milliseconds.
const (
	waitFirstDelay = 2 * time.Millisecond
	waitMaxDelay   = 50 * time.Millisecond
)

// WaitTimeoutError says that a condition did not hold before the timeout.
type WaitTimeoutError struct {
	What    string        // what was awaited
	Timeout time.Duration // how long WaitFor waited
}

func (e *WaitTimeoutError) Error() string {
	return fmt.Sprintf("timed out after %v waiting for %s", e.Timeout, e.What)
}

// WaitFor polls cond, with a short backoff, until it reports true. It returns a
// *WaitTimeoutError naming what when timeout passes first (callers turn it into a
// *NotReachedError), ctx's error when ctx ends first, and cond's error at once when cond fails:
// a condition that may fail for a while (a server still starting) must report false, not an
// error. cond gets a context that ends with the wait, so that it can bound its own calls.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := wctx.Deadline()
	// A context's Err turns non-nil only when its timer fires, a little after the deadline; a
	// cond cut short by the deadline may return before that.
	expired := func() bool { return wctx.Err() != nil || !time.Now().Before(deadline) }
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ctxDeadlinePassed(ctx) {
			return fmt.Errorf("waiting for %s: %w", what, context.DeadlineExceeded)
		}
		return &WaitTimeoutError{What: what, Timeout: timeout}
	}
	for delay := waitFirstDelay; ; delay = min(2*delay, waitMaxDelay) {
		ok, err := cond(wctx)
		switch {
		case err == nil && ok:
			return nil
		case expired():
			return stopped() // an error now is most likely the deadline cutting cond short
		case err != nil:
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-time.After(delay):
		case <-wctx.Done():
			return stopped()
		}
	}
}

// ctxDeadlinePassed tells whether ctx has a deadline that has passed, even if its timer has not
// fired yet.
func ctxDeadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
