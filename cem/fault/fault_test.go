package fault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
)

// recorder is a Server that records the primitives a kind calls: the kinds are pure logic over
// them, and the kit's tests run them on real processes, file systems and networks.
type recorder struct {
	calls   []string
	stopped bool
	dead    bool   // the server exited on its own
	draw    uint64 // what Draw returns
}

func (r *recorder) call(name string) error      { r.calls = append(r.calls, name); return nil }
func (r *recorder) Kill(context.Context) error  { return r.call("kill") }
func (r *recorder) Start(context.Context) error { return r.call("start") }
func (r *recorder) Stop(context.Context) error  { r.stopped = true; return r.call("stop") }
func (r *recorder) Stopped() bool               { return r.stopped }
func (r *recorder) Continue(context.Context) error {
	r.stopped = false
	return r.call("continue")
}
func (r *recorder) CutOff(context.Context) error         { return r.call("cut off") }
func (r *recorder) Heal(context.Context) error           { return r.call("heal") }
func (r *recorder) AwaitIsolated(context.Context) error  { return r.call("await isolated") }
func (r *recorder) DropUnsynced(context.Context) error   { return r.call("drop unsynced") }
func (r *recorder) AwaitDetection(context.Context) error { return r.call("await detection") }
func (r *recorder) Running() bool                        { return !r.dead }
func (r *recorder) Draw(string) uint64                   { return r.draw }
func (r *recorder) FailDisks(context.Context, uint64) error {
	return r.call("fail disks")
}
func (r *recorder) HealDisks(context.Context) error  { return r.call("heal disks") }
func (r *recorder) SpendDisks(context.Context) error { return r.call("spend disks") }
func (r *recorder) CorruptDisk(context.Context, uint64) error {
	return r.call("corrupt disk")
}

// TestKinds checks what each kind does to a server, in order: its failure, what the divergence
// waits for once it has injected it, and its recovery.
func TestKinds(t *testing.T) {
	for _, tt := range []struct {
		kind                     Kind
		server                   recorder // as each step finds it
		letter                   byte
		inject, noticed, recover []string
		settled                  []string
		silent                   bool
		needs                    Needs
	}{
		{Crash{}, recorder{}, 'c', []string{"kill"}, nil, []string{"start"}, nil, false, Needs{}},
		{PowerLoss{}, recorder{}, 'l', []string{"kill", "drop unsynced"}, nil, []string{"start"}, nil, false, Needs{Disks: true}},
		{Partition{}, recorder{}, 'p', []string{"cut off"}, []string{"await isolated"}, []string{"heal"}, nil, true, Needs{Network: true}},
		{Pause{}, recorder{}, 's', []string{"stop"}, nil, []string{"continue"}, []string{"await detection"}, true, Needs{}},
		// A disk error's recovery starts a server that exited, and restarts one that runs or
		// lets it go on, as the schedule draws; one stopped for a write goes on once failed.
		{DiskError{}, recorder{draw: 1}, 'e', []string{"fail disks"}, []string{"spend disks"}, []string{"heal disks"}, []string{"await detection"}, false, Needs{Disks: true}},
		{DiskError{}, recorder{draw: 2}, 'e', []string{"fail disks"}, []string{"spend disks"}, []string{"heal disks", "kill", "start"}, []string{"await detection"}, false, Needs{Disks: true}},
		{DiskError{}, recorder{dead: true}, 'e', []string{"fail disks"}, []string{"spend disks"}, []string{"heal disks", "kill", "start"}, []string{"await detection", "kill", "start"}, false, Needs{Disks: true}},
		{DiskError{}, recorder{stopped: true}, 'e', []string{"fail disks", "continue"}, []string{"spend disks"}, []string{"heal disks", "kill", "start"}, []string{"await detection"}, false, Needs{Disks: true}},
		{Corruption{}, recorder{}, 'b', []string{"kill", "corrupt disk"}, nil, []string{"start"}, nil, false, Needs{Disks: true}},
	} {
		t.Run(fmt.Sprintf("%s/%+v", tt.kind.Failure(), tt.server), func(t *testing.T) {
			ctx := context.Background()
			if got := tt.kind.Failure().Letter(); got != tt.letter {
				t.Errorf("letter %c, want %c", got, tt.letter)
			}
			if k, err := Of(tt.kind.Failure()); err != nil || k != tt.kind {
				t.Errorf("Of(%s) = %v, %v", tt.kind.Failure(), k, err)
			}
			if tt.kind.Silent() != tt.silent || tt.kind.Needs() != tt.needs {
				t.Errorf("silent %v, needs %+v; want %v, %+v", tt.kind.Silent(), tt.kind.Needs(), tt.silent, tt.needs)
			}
			for _, step := range []struct {
				name string
				do   func(context.Context, Server) error
				want []string
			}{{"inject", tt.kind.Inject, tt.inject}, {"noticed", tt.kind.Noticed, tt.noticed}, {"recover", tt.kind.Recover, tt.recover}, {"settled", tt.kind.Settled, tt.settled}} {
				r := tt.server
				if err := step.do(ctx, &r); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(r.calls, step.want) {
					t.Errorf("%s called %v, want %v", step.name, r.calls, step.want)
				}
			}
		})
	}
	if len(All) != len(aem.Kinds) {
		t.Errorf("%d kinds here, aem has %d", len(All), len(aem.Kinds))
	}
	for i, k := range All {
		if k.Failure() != aem.Kinds[i] {
			t.Errorf("kind %d is %s, aem's is %s", i, k.Failure(), aem.Kinds[i])
		}
	}
}

// TestPauseOfAStoppedServer: a server stopped for a write it must not see is paused already.
func TestPauseOfAStoppedServer(t *testing.T) {
	r := &recorder{stopped: true}
	if err := (Pause{}).Inject(context.Background(), r); err != nil || len(r.calls) != 0 {
		t.Errorf("Inject on a stopped server called %v, %v; want nothing", r.calls, err)
	}
}

// TestAvailable: each kind says what the host lacks for it, in the words Describe gives
// cem.Capabilities.Failures.
func TestAvailable(t *testing.T) {
	noFUSE, noNet := errors.New("no /dev/fuse"), errors.New("not root")
	for _, tt := range []struct {
		host Host
		want []string
	}{
		{Host{}, []string{"crash", "power-loss", "partition", "pause", "disk-error", "corruption"}},
		{Host{Disks: noFUSE, Network: noNet}, []string{"crash", "power-loss: its file systems cannot drop unsynced data: no /dev/fuse",
			"partition: replicas cannot be cut off: not root", "pause", "disk-error: its file systems cannot fail: no /dev/fuse",
			"corruption: its file systems cannot be corrupted: no /dev/fuse"}},
	} {
		if got := Describe(tt.host); !slices.Equal(got, tt.want) {
			t.Errorf("Describe(%+v) = %q, want %q", tt.host, got, tt.want)
		}
	}
	if n := NeedsOf([]Kind{Crash{}, PowerLoss{}, Pause{}}); n != (Needs{Disks: true}) {
		t.Errorf("NeedsOf(crash, power loss, pause) = %+v", n)
	}
	if _, err := Of(aem.FailNone); err == nil || !strings.Contains(err.Error(), "no failure kind none") {
		t.Errorf("Of(none) = %v", err)
	}
}
