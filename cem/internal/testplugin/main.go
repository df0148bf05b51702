// Command testplugin is the plugin the tests of package cem launch: a real plugin process
// serving a cluster whose replicas are maps in its memory, because what those tests exercise
// is the plugin protocol, not a storage system.
//
// With $TESTPLUGIN_HOST set to a plugin binary it is not a plugin but a host: see host.
// $TESTPLUGIN_PROTOCOL_VERSION makes it claim another protocol version.
//
// What the plugin does, so that tests can tell what crossed the protocol:
//   - Info fails with the text of $TESTPLUGIN_INFO_ERROR when it is set, and when its config is
//     not empty.
//   - Start writes the spec it got into every replica, under "spec.*" keys; Config must be
//     empty, "child = true", which also starts a child process in the plugin's process group
//     and writes its pid to Dir/child.pid, "unready = WHAT", which makes Start return a
//     *cem.NotReachedError awaiting WHAT, or "cannot = WHY", a *cem.UnrealisableError.
//   - Read puts replica i in group i%2.
//   - Apply writes "step N" = transition into every replica and reports one action; besides,
//     "break I" makes replica I unreadable. Six transitions write nothing: "block PATH"
//     creates PATH and waits, holding the lock that Teardown takes, until the call's context
//     ends, "unreached WHAT" reports an
//     action without a time and returns a *cem.NotReachedError awaiting WHAT, "unrealisable WHY"
//     does the same with a *cem.UnrealisableError, "nonconform CHECK DETAIL" returns a
//     *cem.NonconformantError, "fail TEXT" returns an error, and
//     "log TEXT" logs TEXT at Info, then at Warn.
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/modulo-testing/modulo/cem"
)

func main() {
	if bin := os.Getenv("TESTPLUGIN_HOST"); bin != "" {
		host(bin)
		return
	}
	if v := os.Getenv("TESTPLUGIN_PROTOCOL_VERSION"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			fmt.Fprintln(os.Stderr, "TESTPLUGIN_PROTOCOL_VERSION:", err)
			os.Exit(1)
		}
		cem.Handshake.ProtocolVersion = uint(n)
	}
	cem.Serve(&memory{})
}

// host stands in for modulo: it launches the plugin at bin, prints the plugin's pid and waits
// to be killed, so that a test can check that the plugin dies with its host.
func host(bin string) {
	os.Unsetenv("TESTPLUGIN_HOST") // so that the plugin serves
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cem.Launch(ctx, bin, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(c.Pid())
	time.Sleep(time.Minute) // the test kills this process long before
	os.Exit(1)
}

type memory struct {
	mu       sync.Mutex
	replicas []map[string]string
	broken   map[int]bool
	child    *exec.Cmd
}

func (m *memory) Info(_ context.Context, config []byte) (cem.Info, error) {
	if cfg := strings.TrimSpace(string(config)); cfg != "" {
		return cem.Info{}, fmt.Errorf("info: unknown config %q", cfg)
	}
	if msg := os.Getenv("TESTPLUGIN_INFO_ERROR"); msg != "" {
		return cem.Info{}, errors.New(msg)
	}
	return cem.Info{
		Name:           "testplugin",
		Version:        "1.2.3",
		ServerVersion:  "memory 0",
		Releases:       []string{"0.9", "1.0"},
		ReleaseSetting: `server = "~/.cache/modulo/memory/<version>/memory"`,
		Capabilities:   cem.Capabilities{DRMs: []string{"ssr", "slr"}, PortsPerReplica: 2},
	}, nil
}

func (m *memory) Start(_ context.Context, spec cem.ClusterSpec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if spec.Replicas < 1 {
		return fmt.Errorf("start: %d replicas", spec.Replicas)
	}
	switch cfg := strings.TrimSpace(string(spec.Config)); cfg {
	case "":
	case "child = true":
		if err := m.startChild(spec.Dir); err != nil {
			return fmt.Errorf("start: %w", err)
		}
	default:
		if what, ok := strings.CutPrefix(cfg, "unready = "); ok {
			return &cem.NotReachedError{Step: -1, Awaited: what}
		}
		if why, ok := strings.CutPrefix(cfg, "cannot = "); ok {
			return &cem.UnrealisableError{Step: -1, Reason: why}
		}
		return fmt.Errorf("start: unknown config %q", cfg)
	}
	m.replicas = make([]map[string]string, spec.Replicas)
	m.broken = map[int]bool{}
	for i := range m.replicas {
		m.replicas[i] = map[string]string{
			"spec.drm":          spec.DRM,
			"spec.ops":          strconv.Itoa(spec.Ops),
			"spec.dir":          spec.Dir,
			"spec.port":         strconv.Itoa(spec.BasePort + 2*i),
			"spec.schedule":     spec.ScheduleID,
			"spec.config":       string(spec.Config),
			"spec.step_timeout": spec.StepTimeout.String(),
		}
	}
	return nil
}

// startChild starts a long sleep in the plugin's own process group, as a plugin's helper
// process would be, for the tests to check that Close kills it.
func (m *memory) startChild(dir string) error {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return err
	}
	m.child = cmd
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(filepath.Join(dir, "child.pid"), fmt.Appendf(nil, "%d\n", cmd.Process.Pid), 0o644)
}

func (m *memory) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	verb, arg, _ := strings.Cut(step.Transition, " ")
	switch verb {
	case "block":
		// Holding the lock, as the kit's Apply does: a Teardown waits until the call ends.
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := os.WriteFile(arg, nil, 0o644); err != nil {
			return cem.StepReport{}, err
		}
		<-ctx.Done()
		return cem.StepReport{}, ctx.Err()
	case "unreached":
		// The action's zero time checks that it stays zero across the protocol.
		return cem.StepReport{Actions: []cem.Action{{Replica: 0, What: "waited"}}},
			&cem.NotReachedError{Step: step.Index, Awaited: arg}
	case "unrealisable":
		return cem.StepReport{Actions: []cem.Action{{Replica: 1, What: "tried"}}},
			&cem.UnrealisableError{Step: step.Index, Reason: arg}
	case "nonconform":
		check, detail, _ := strings.Cut(arg, " ")
		return cem.StepReport{}, &cem.NonconformantError{Step: step.Index, Check: check, Detail: detail}
	case "fail":
		return cem.StepReport{}, errors.New(arg)
	case "log":
		hclog.L().Info(arg)
		hclog.L().Warn(arg)
		return cem.StepReport{}, nil
	case "report": // every field of a step report, for the protocol's round trip
		return cem.StepReport{
			Writes: []cem.Write{{Key: fmt.Sprintf("step %d", step.Index), Value: step.Transition, Acked: true},
				{Key: "minority", Value: "v", Acked: true, Minority: true, Answer: cem.Acknowledged, AnsweredAfter: 34 * time.Millisecond, Async: true}},
			Observations: []cem.Observation{{Replica: 1, Fields: map[string]string{"role": "leader", "term": "2"}}},
			Alarms:       []cem.Alarm{{Replica: 2, What: "digest mismatches: 1"}, {Replica: 1, What: "prev-link", Broken: true}, {Replica: 0, What: "exited", Unrecoverable: true}, {Replica: 2, What: "restart required", Stuck: true}},
		}, nil
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.replicas == nil {
		return cem.StepReport{}, errors.New("apply: no cluster")
	}
	if verb == "break" {
		i, err := strconv.Atoi(arg)
		if err != nil || i < 0 || i >= len(m.replicas) {
			return cem.StepReport{}, fmt.Errorf("apply: no replica %q", arg)
		}
		m.broken[i] = true
	}
	for _, r := range m.replicas {
		r[fmt.Sprintf("step %d", step.Index)] = step.Transition
	}
	return cem.StepReport{Actions: []cem.Action{
		{Time: time.Now(), Replica: -1, What: fmt.Sprintf("wrote step %d", step.Index)},
	}}, nil
}

func (m *memory) Read(context.Context) (cem.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.replicas == nil {
		return cem.Snapshot{}, errors.New("read: no cluster")
	}
	var snap cem.Snapshot
	for i, r := range m.replicas {
		if m.broken[i] {
			snap.Replicas = append(snap.Replicas, cem.ReplicaData{Err: fmt.Sprintf("replica %d is broken", i), Group: i % 2})
			continue
		}
		snap.Replicas = append(snap.Replicas, cem.ReplicaData{Data: maps.Clone(r), Group: i % 2})
	}
	return snap, nil
}

func (m *memory) Teardown(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replicas = nil
	if m.child != nil {
		_ = m.child.Process.Kill()
		m.child = nil
	}
	return nil
}
