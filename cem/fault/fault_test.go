package fault

import (
	"context"
	"errors"
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

// TestKinds checks what each kind does to a server, in order: its failure, what the divergence
// waits for once it has injected it, and its recovery.
func TestKinds(t *testing.T) {
	for _, tt := range []struct {
		kind                     Kind
		letter                   byte
		inject, noticed, recover []string
		settled                  []string
		silent                   bool
		needs                    Needs
	}{
		{Crash{}, 'c', []string{"kill"}, nil, []string{"start"}, nil, false, Needs{}},
		{PowerLoss{}, 'l', []string{"kill", "drop unsynced"}, nil, []string{"start"}, nil, false, Needs{Disks: true}},
		{Partition{}, 'p', []string{"cut off"}, []string{"await isolated"}, []string{"heal"}, nil, true, Needs{Network: true}},
		{Pause{}, 's', []string{"stop"}, nil, []string{"continue"}, []string{"await detection"}, true, Needs{}},
	} {
		t.Run(tt.kind.Failure().String(), func(t *testing.T) {
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
				r := &recorder{}
				if err := step.do(ctx, r); err != nil {
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
		{Host{}, []string{"crash", "power-loss", "partition", "pause"}},
		{Host{Disks: noFUSE, Network: noNet}, []string{"crash", "power-loss: its file systems cannot drop unsynced data: no /dev/fuse",
			"partition: replicas cannot be cut off: not root", "pause"}},
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
