// Package cmdutil holds what every modulo command shares: exit statuses and the errors that
// carry them.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses, the same for every command. 1 says that a convergence failure was found and
// nothing else; 2 is bad input or an environment the command cannot work in (as Go's flag
// package uses 2 for usage errors): a malformed file, a missing binary, an unwritable or
// locked results directory, a full disk; 3 says that nothing failed but something was
// incomplete, an error of the harness, or not run.
const (
	ExitOK         = 0
	ExitFailed     = 1
	ExitUsage      = 2
	ExitIncomplete = 3
)

// ExitError ends the program with Code after printing Err (when not nil).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// RanError marks an error that a command returned once it ran, as opposed to an error of
// cobra's own about the command line, which is a usage error.
type RanError struct{ Err error }

func (e *RanError) Error() string { return e.Err.Error() }
func (e *RanError) Unwrap() error { return e.Err }

// MainCode is Code for the error of a whole command line: an error that no command returned
// (see RanError) is a usage error.
func MainCode(err error) int {
	var ran *RanError
	if err != nil && !errors.As(err, &ran) {
		return ExitUsage
	}
	return Code(err)
}

// Usagef reports bad input on the command line: exit status 2.
func Usagef(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Usage wraps err as a usage error: exit status 2.
func Usage(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Code returns the exit status for err: an *ExitError's code (a verdict's, or a usage error's);
// any other error is a problem of the input or the environment, which is the user's to fix:
// exit status 1 is kept for the failures a campaign finds.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitUsage
}

// Interruptible returns ctx (Background when nil) ended by Ctrl-C or SIGTERM, so that a command
// that runs clusters tears them down on either; call stop when done.
func Interruptible(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// Stderr returns w, or os.Stderr when w is nil.
func Stderr(w io.Writer) io.Writer {
	if w == nil {
		return os.Stderr
	}
	return w
}
