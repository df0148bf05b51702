//go:build linux

package cem

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// terminateTimeout bounds the teardown a plugin does when it is told to end: long enough for a
// JVM to die and a FUSE mount to go, short of the grace that an engine gives before SIGKILL
// (Kubernetes 30 s, Slurm's KillWait 30 s).
const terminateTimeout = 20 * time.Second

// endOnTerminate makes a SIGTERM end the plugin cleanly: the calls under way are cancelled
// (their contexts end with life), impl's cluster is torn down (its servers killed, paused ones
// too, its mounts and namespaces gone) and the process exits with status 143, as a process
// that SIGTERM killed. Without it Go's default would exit at once and leave the servers to the
// parent-death signal and the mounts to modulo's sweep, which a plugin killed alone (by an
// operator, an engine ending a job, the OOM killer's neighbour) never gets. SIGINT stays
// ignored, as go-plugin has it: Ctrl-C reaches modulo, which tears the cluster down itself.
func endOnTerminate(impl CEM, die context.CancelCauseFunc) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		sig := <-ch
		die(fmt.Errorf("the plugin got %v", sig))
		ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
		defer cancel()
		if err := impl.Teardown(ctx); err != nil {
			hclog.L().Error("tearing the cluster down on "+sig.String(), "error", err)
		}
		os.Exit(128 + int(syscall.SIGTERM))
	}()
}

// within makes every call's context end with life as well as with its caller.
func within(life context.Context) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		stop := context.AfterFunc(life, func() { cancel(context.Cause(life)) })
		defer func() {
			stop()
			cancel(nil)
		}()
		return handler(ctx, req)
	}
}
