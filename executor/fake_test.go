package executor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/executor"
)

// The executor's own logic (verdicts, the worker pool, plugin death, interrupts, resume) is
// tested against fakePlugin, an in-process CEM whose "cluster" is one map per replica plus one
// real process (sleep) started with proc.StartProcess, so that the sweep of a dead plugin's
// servers is checked on a real process group. Real servers are driven by the integration test.

// behaviour says what the fake does with one schedule; steps are 1-based, 0 means never.
type behaviour struct {
	startErr   string // Start fails with this
	unready    bool   // Start does not reach a ready cluster
	diverge    bool   // replica 1 loses a key before Read
	unreadable bool   // replica 2 cannot be read
	notReached int    // this step's state is not reached
	// unrealisableAt: the plugin cannot realise this step
	unrealisableAt int
	// nonconformAt: this step leaves the cluster out of the model's state, the realisation's doing
	nonconformAt int
	crashAt      int // the plugin dies during this step, leaving its server running
	hangAt       int // the plugin never answers this step
	blockAt      int // this step blocks until its call is cancelled, after telling blocked
	// healAt: replica 1 misses key:1 when read before this step has been applied
	healAt int
	// lose: every step reports its write as acknowledged, and every replica holds another
	// value of key:1
	lose bool
	// alarmAt: this step reports an alarm of the system's own check on replica 0
	alarmAt int
	// minorityAckAt: this step's write reached only a minority, and the system acknowledged it
	minorityAckAt int
	// restoreErr: Restore fails with this
	restoreErr string
	// sync, when set, is what every step reports of replica 0's sync, as an observation
	sync string
}

// fakeSystem launches fake plugins and checks what they are asked to do.
type fakeSystem struct {
	t       *testing.T
	stride  int
	behave  map[string]behaviour
	blocked chan string // receives the ID of a schedule blocked by blockAt
	// gate, when set, holds every Start until gateN clusters run at once: only a pool that
	// runs workers side by side gets past it.
	gate  chan struct{}
	gateN int

	mu       sync.Mutex
	launches int
	open     int                  // plugins launched and not closed
	running  map[string]int       // cluster directory -> base port, for clusters not torn down
	servers  []*proc.Process      // every server started
	calls    map[string][]string  // schedule ID -> calls made for it, in order
	closeRun map[*fakePlugin]bool // plugins closed with a cluster running
}

func newFakeSystem(t *testing.T, stride int) *fakeSystem {
	return &fakeSystem{
		t: t, stride: stride, behave: map[string]behaviour{}, blocked: make(chan string, 1),
		running: map[string]int{}, calls: map[string][]string{}, closeRun: map[*fakePlugin]bool{},
	}
}

func (s *fakeSystem) launch(ctx context.Context) (executor.Plugin, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launches++
	s.open++
	return &fakePlugin{sys: s}, nil
}

func (s *fakeSystem) note(id, call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[id] = append(s.calls[id], call)
}

// check reports what a run left behind: a plugin not closed, a cluster not torn down, a
// server process still alive, a plugin closed under a running cluster.
func (s *fakeSystem) check() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != 0 {
		s.t.Errorf("%d plugins left open", s.open)
	}
	if len(s.running) != 0 {
		s.t.Errorf("clusters left running: %v", s.running)
	}
	if len(s.closeRun) != 0 {
		s.t.Errorf("%d plugins closed with their cluster running", len(s.closeRun))
	}
	for _, p := range s.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.Wait(ctx); errors.Is(err, context.DeadlineExceeded) {
			s.t.Errorf("server pid %d left running", p.Pid)
			_ = p.Kill(context.Background())
		}
		cancel()
	}
}

type fakePlugin struct {
	sys     *fakeSystem
	mu      sync.Mutex
	exited  bool
	closed  bool
	spec    cem.ClusterSpec
	b       behaviour
	data    []map[string]string
	server  *proc.Process
	running bool
	applied int // steps applied
}

func (p *fakePlugin) Info(context.Context, []byte) (cem.Info, error) { return fakeInfo, nil }

var fakeInfo = cem.Info{
	Name: "fake", Version: "1.0", ServerVersion: "sleep 1",
	Capabilities: cem.Capabilities{DRMs: []string{"ssr"}, PortsPerReplica: 2},
}

func (p *fakePlugin) Start(ctx context.Context, spec cem.ClusterSpec) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return errors.New("plugin exited")
	}
	p.sys.note(spec.ScheduleID, "start")
	if err := p.open(ctx, spec); err != nil {
		return err
	}
	p.data = make([]map[string]string, spec.Replicas)
	for i := range p.data {
		p.data[i] = map[string]string{}
	}
	return nil
}

// open starts the fake cluster of spec, with no data, as its behaviour says.
func (p *fakePlugin) open(ctx context.Context, spec cem.ClusterSpec) error {
	s := p.sys
	p.spec, p.b = spec, s.behave[spec.ScheduleID]
	if entries, err := os.ReadDir(spec.Dir); err != nil || len(entries) != 0 {
		s.t.Errorf("schedule %s: cluster directory %s not fresh: %v %v", spec.ScheduleID, spec.Dir, entries, err)
	}
	s.mu.Lock()
	for dir, base := range s.running {
		if dir == spec.Dir || (spec.BasePort < base+s.stride && base < spec.BasePort+s.stride) {
			s.t.Errorf("schedule %s: cluster at %s port %d overlaps the running one at %s port %d", spec.ScheduleID, spec.Dir, spec.BasePort, dir, base)
		}
	}
	s.running[spec.Dir] = spec.BasePort
	if s.gate != nil && len(s.running) >= s.gateN {
		select {
		case <-s.gate:
		default:
			close(s.gate)
		}
	}
	gate := s.gate
	s.mu.Unlock()
	p.running = true

	srv, err := proc.StartProcess(proc.ProcessSpec{Name: "server", Dir: spec.Dir, Path: "sleep", Args: []string{"300"}})
	if err != nil {
		return err
	}
	p.server = srv
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	if err := os.WriteFile(filepath.Join(spec.Dir, "replica0.log"), []byte("ready\n"), 0o644); err != nil {
		return err
	}
	if p.b.unready {
		return &cem.NotReachedError{Step: -1, Awaited: "a leader"}
	}
	if p.b.startErr != "" {
		return errors.New(p.b.startErr)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return fmt.Errorf("gate: %w", ctx.Err())
		}
	}
	return nil
}

// fakeSaved is what the fake saves of a cluster.
type fakeSaved struct {
	Data    []map[string]string
	Applied int
}

// Save writes the replicas' data to dir/fake.json.
func (p *fakePlugin) Save(_ context.Context, dir string) (cem.Saved, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sys.note(p.spec.ScheduleID, fmt.Sprintf("save %d", p.applied))
	b, err := json.Marshal(fakeSaved{Data: p.data, Applied: p.applied})
	if err != nil {
		return cem.Saved{}, err
	}
	if err := errors.Join(os.MkdirAll(dir, 0o755), os.WriteFile(filepath.Join(dir, "fake.json"), b, 0o644)); err != nil {
		return cem.Saved{}, err
	}
	return fakeDigest(b), nil
}

func fakeDigest(b []byte) cem.Saved {
	sum := sha256.Sum256(b)
	return cem.Saved{Paths: []string{"fake.json"}, Bytes: int64(len(b)), Digest: hex.EncodeToString(sum[:])}
}

// Restore starts a cluster with the data that Save wrote to dir.
func (p *fakePlugin) Restore(ctx context.Context, spec cem.ClusterSpec, dir string, steps []string) (cem.Restored, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sys.note(spec.ScheduleID, fmt.Sprintf("restore %d", len(steps)))
	if err := p.open(ctx, spec); err != nil {
		return cem.Restored{}, err
	}
	if p.b.restoreErr != "" {
		return cem.Restored{}, errors.New(p.b.restoreErr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fake.json"))
	if err != nil {
		return cem.Restored{}, err
	}
	var sv fakeSaved
	if err := json.Unmarshal(b, &sv); err != nil {
		return cem.Restored{}, err
	}
	if sv.Applied != len(steps) {
		p.sys.t.Errorf("schedule %s: restored a cluster saved after %d steps for the state after %d", spec.ScheduleID, sv.Applied, len(steps))
	}
	p.data, p.applied = sv.Data, sv.Applied
	return cem.Restored{Saved: fakeDigest(b), Actions: []cem.Action{{Replica: -1, What: "restored"}}}, nil
}

func (p *fakePlugin) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, n := p.spec.ScheduleID, step.Index+1
	p.sys.note(id, "apply "+step.Transition)
	if p.exited || !p.running {
		p.sys.t.Errorf("schedule %s: Apply without a running cluster", id)
		return cem.StepReport{}, errors.New("no cluster")
	}
	report := cem.StepReport{Actions: []cem.Action{{Time: time.Now(), Replica: -1, What: "realise " + step.Transition}}}
	if p.b.sync != "" {
		report.Observations = []cem.Observation{{Replica: 0, Fields: map[string]string{cem.ObserveSync: p.b.sync}}}
	}
	switch n {
	case p.b.notReached:
		return report, &cem.NotReachedError{Step: step.Index, Awaited: "replica 2 in sync with replica 0"}
	case p.b.nonconformAt:
		return report, &cem.NonconformantError{Step: step.Index, Check: "write-leaked", Detail: "write key:1 is in the log of replica 2"}
	case p.b.unrealisableAt:
		return report, &cem.UnrealisableError{Step: step.Index, Reason: "write key:1 reaches two nodes without a quorum"}
	case p.b.crashAt:
		p.exited = true // the server stays: the executor must sweep it
		return cem.StepReport{}, errors.New("plugin Apply: lost the connection to the plugin (did it exit?): EOF")
	case p.b.hangAt:
		<-ctx.Done()
		return cem.StepReport{}, fmt.Errorf("plugin Apply: %w", ctx.Err())
	case p.b.blockAt:
		p.sys.blocked <- id
		<-ctx.Done()
		return cem.StepReport{}, fmt.Errorf("plugin Apply: %w", ctx.Err())
	}
	key := fmt.Sprintf("key:%d", n)
	for _, r := range p.data {
		r[key] = id
	}
	report.Writes = []cem.Write{{Key: key, Value: id, Acked: p.b.lose}}
	if n == p.b.minorityAckAt {
		report.Writes[0] = cem.Write{Key: key, Value: id, Acked: true, Minority: true, Answer: cem.Acknowledged, AnsweredAfter: 34 * time.Millisecond}
	}
	if n == p.b.alarmAt {
		report.Alarms = []cem.Alarm{{Replica: 0, What: "digest mismatches: 2"}}
	}
	p.applied = n
	return report, nil
}

func (p *fakePlugin) Read(context.Context) (cem.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sys.note(p.spec.ScheduleID, "read")
	var snap cem.Snapshot
	for i, d := range p.data {
		r := cem.ReplicaData{Data: map[string]string{}}
		for k, v := range d {
			r.Data[k] = v
		}
		if p.b.diverge && i == 1 || p.applied < p.b.healAt && i == 1 {
			delete(r.Data, "key:1")
		}
		if _, ok := r.Data["key:1"]; ok && p.b.lose {
			r.Data["key:1"] = "lost"
		}
		if p.b.unreadable && i == 2 {
			r = cem.ReplicaData{Err: "connection refused"}
		}
		snap.Replicas = append(snap.Replicas, r)
	}
	return snap, nil
}

func (p *fakePlugin) Teardown(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return errors.New("plugin Teardown: lost the connection to the plugin (did it exit?): EOF")
	}
	p.sys.note(p.spec.ScheduleID, "teardown")
	if p.server != nil {
		if err := p.server.Kill(ctx); err != nil {
			return err
		}
		p.server = nil
	}
	if p.running {
		p.running = false
		p.sys.mu.Lock()
		delete(p.sys.running, p.spec.Dir)
		p.sys.mu.Unlock()
	}
	return nil
}

func (p *fakePlugin) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

func (p *fakePlugin) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	s := p.sys
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if p.running && !p.exited {
		s.closeRun[p] = true
	}
	if p.running && p.exited {
		// A dead plugin's cluster is gone once its servers were swept; the test checks the
		// server processes themselves.
		delete(s.running, p.spec.Dir)
	}
	p.exited = true
	return nil
}

// callsOf returns the calls made for schedule id, joined for messages.
func (s *fakeSystem) callsOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.calls[id], ", ")
}
