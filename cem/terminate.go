//go:build linux

package cem

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// terminateTimeout bounds how long a plugin told to end may take to tear its cluster down
// before it exits anyway: long enough for a JVM to die and a FUSE mount to go, short of the
// grace that an engine gives before SIGKILL (Kubernetes 30 s, Slurm's KillWait 30 s).
const terminateTimeout = 20 * time.Second

// endOnTerminate makes a SIGTERM end the plugin cleanly: the calls under way are cancelled
// (their contexts end with life), impl's cluster is torn down (its servers killed, paused ones
// too, its mounts and namespaces gone) and the process exits with status 143, as a process
// that SIGTERM killed, within terminateTimeout whatever the teardown does; a second SIGTERM
// kills it at once. Without it Go's default would exit at once and leave the servers to their
// parent-death signal and the mounts to modulo's sweep, which a plugin ended alone (by an
// operator's kill, or a job engine that signals every process of a job) never gets. SIGINT
// stays ignored, as go-plugin has it: Ctrl-C reaches modulo, which tears the cluster down
// itself.
func endOnTerminate(impl CEM, die context.CancelFunc) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		sig := <-ch
		signal.Reset(syscall.SIGTERM)
		die()
		ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- impl.Teardown(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				hclog.L().Error("tearing the cluster down on "+sig.String(), "error", err)
			}
		case <-ctx.Done():
			hclog.L().Error("tearing the cluster down on " + sig.String() + ": not done within " + terminateTimeout.String() + "; exiting anyway")
		}
		os.Exit(128 + int(syscall.SIGTERM))
	}()
}

// within makes every call's context end with life as well as with its caller.
func within(life context.Context) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(life, cancel)
		defer func() {
			stop()
			cancel()
		}()
		return handler(ctx, req)
	}
}
