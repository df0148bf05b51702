package proc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	errBroken := errors.New("broken")
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		cond    func(calls int) (bool, error)
		wantErr func(error) bool
		minCall int
	}{
		{
			name:    "true at once",
			cond:    func(int) (bool, error) { return true, nil },
			wantErr: func(err error) bool { return err == nil },
			minCall: 1,
		},
		{
			name:    "true after polls",
			cond:    func(calls int) (bool, error) { return calls >= 5, nil },
			wantErr: func(err error) bool { return err == nil },
			minCall: 5,
		},
		{
			name: "timeout",
			cond: func(int) (bool, error) { return false, nil },
			wantErr: func(err error) bool {
				var te *WaitTimeoutError
				return errors.As(err, &te) && te.What == "replica 1 in sync" &&
					err.Error() == "timed out after 50ms waiting for replica 1 in sync"
			},
			minCall: 2,
		},
		{
			name: "condition fails",
			cond: func(int) (bool, error) { return false, errBroken },
			wantErr: func(err error) bool {
				return errors.Is(err, errBroken) && strings.Contains(err.Error(), "replica 1 in sync")
			},
			minCall: 1,
		},
		{
			name: "context ends first",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 10*time.Millisecond)
			},
			cond: func(int) (bool, error) { return false, nil },
			wantErr: func(err error) bool {
				var te *WaitTimeoutError
				return errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &te)
			},
			minCall: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			timeout := 50 * time.Millisecond
			if tt.ctx != nil {
				timeout = time.Minute
			}
			calls := 0
			err := WaitFor(ctx, timeout, "replica 1 in sync", func(ctx context.Context) (bool, error) {
				calls++
				if _, ok := ctx.Deadline(); !ok {
					t.Error("cond got a context without deadline")
				}
				return tt.cond(calls)
			})
			if !tt.wantErr(err) {
				t.Errorf("WaitFor = %v", err)
			}
			if calls < tt.minCall {
				t.Errorf("cond called %d times, want at least %d", calls, tt.minCall)
			}
		})
	}
}

// TestWaitForBackoff checks that polls start fast and slow down to the cap: a condition that
// never holds for 300 ms is polled more often than at the cap alone, and far less than a busy
// loop would.
func TestWaitForBackoff(t *testing.T) {
	calls := 0
	_ = WaitFor(context.Background(), 300*time.Millisecond, "nothing", func(context.Context) (bool, error) {
		calls++
		return false, nil
	})
	// 2+4+8+16+32 ms = 62 ms for the first 6 polls, then one per 50 ms: about 11 in all.
	if calls < 7 || calls > 20 {
		t.Errorf("cond called %d times in 300 ms, want about 11", calls)
	}
}
