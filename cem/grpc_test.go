//go:build linux

package cem

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/proc"
)

// TestProtocol sends every method of CEM through a real plugin process and checks that what
// each side gets is what the other sent.
func TestProtocol(t *testing.T) {
	bin := buildTestPlugin(t)

	t.Run("round trip", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()

		info, err := c.Info(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantInfo := Info{
			Name:           "testplugin",
			Version:        "1.2.3",
			ServerVersion:  "memory 0",
			Releases:       []string{"0.9", "1.0"},
			ReleaseSetting: `server = "~/.cache/modulo/memory/<version>/memory"`,
			Capabilities:   Capabilities{DRMs: []string{"ssr", "slr"}, PortsPerReplica: 2},
		}
		if !reflect.DeepEqual(info, wantInfo) {
			t.Errorf("Info = %+v, want %+v", info, wantInfo)
		}

		spec := ClusterSpec{
			DRM:         "ssr",
			Ops:         2,
			Replicas:    3,
			Dir:         t.TempDir(),
			BasePort:    7100,
			ScheduleID:  "98c37077b767ad32",
			StepTimeout: 1500 * time.Millisecond,
		}
		if err := c.Start(ctx, spec); err != nil {
			t.Fatal(err)
		}

		before := time.Now()
		report, err := c.Apply(ctx, Step{Index: 4, Transition: "D[1,0,0]"})
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Actions) != 1 {
			t.Fatalf("Apply reported %+v, want one action", report.Actions)
		}
		a := report.Actions[0]
		if a.Replica != -1 || a.What != "wrote step 4" || a.Time.Before(before) || a.Time.After(after) {
			t.Errorf("action = %+v, want replica -1, \"wrote step 4\", a time between %v and %v",
				a, before, after)
		}
		report, err = c.Apply(ctx, Step{Index: 4, Transition: "report all"})
		if err != nil {
			t.Fatal(err)
		}
		wantRest := StepReport{
			Writes: []Write{{Key: "step 4", Value: "report all", Acked: true},
				{Key: "minority", Value: "v", Acked: true, Minority: true, Answer: Acknowledged, AnsweredAfter: 34 * time.Millisecond, Async: true}},
			Observations: []Observation{{Replica: 1, Fields: map[string]string{"role": "leader", "term": "2"}}},
			Alarms:       []Alarm{{Replica: 2, What: "digest mismatches: 1"}, {Replica: 1, What: "prev-link", Broken: true}, {Replica: 0, What: "exited", Unrecoverable: true}, {Replica: 2, What: "restart required", Stuck: true}},
		}
		if rest := (StepReport{Writes: report.Writes, Observations: report.Observations, Alarms: report.Alarms}); !reflect.DeepEqual(rest, wantRest) {
			t.Errorf("Apply reported %+v, want %+v", rest, wantRest)
		}
		if _, err := c.Apply(ctx, Step{Index: 5, Transition: "break 1"}); err != nil {
			t.Fatal(err)
		}

		snap, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		replica := func(i int) map[string]string {
			return map[string]string{
				"spec.drm":          "ssr",
				"spec.ops":          "2",
				"spec.dir":          spec.Dir,
				"spec.port":         strconv.Itoa(7100 + 2*i),
				"spec.schedule":     "98c37077b767ad32",
				"spec.config":       "",
				"spec.step_timeout": "1.5s",
				"step 4":            "D[1,0,0]",
				"step 5":            "break 1",
			}
		}
		wantSnap := Snapshot{Replicas: []ReplicaData{
			{Data: replica(0)},
			{Data: map[string]string{}, Err: "replica 1 is broken", Group: 1},
			{Data: replica(2)},
		}}
		if !reflect.DeepEqual(snap, wantSnap) {
			t.Errorf("Read = %+v\nwant %+v", snap, wantSnap)
		}

		for i := range 2 { // Teardown is safe to call twice
			if err := c.Teardown(ctx); err != nil {
				t.Fatalf("Teardown %d: %v", i+1, err)
			}
		}
		if _, err := c.Read(ctx); err == nil {
			t.Error("Read after Teardown succeeded")
		}
	})

	t.Run("config", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := "child = true\n"
		if err := c.Start(ctx, ClusterSpec{Replicas: 1, Dir: t.TempDir(), Config: []byte(cfg)}); err != nil {
			t.Fatal(err)
		}
		snap, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Replicas[0].Data["spec.config"]; got != cfg {
			t.Errorf("the plugin got Config %q, want %q", got, cfg)
		}
		if err := c.Teardown(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("not reached", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		report, err := c.Apply(ctx, Step{Index: 7, Transition: "unreached replica 2 in sync with replica 0"})
		nr, ok := err.(*NotReachedError)
		if !ok {
			t.Fatalf("Apply error %v (%T), want a *NotReachedError", err, err)
		}
		want := NotReachedError{Step: 7, Awaited: "replica 2 in sync with replica 0"}
		if *nr != want {
			t.Errorf("error = %+v, want %+v", *nr, want)
		}
		if !IsNotReached(err) {
			t.Error("IsNotReached is false")
		}
		wantReport := StepReport{Actions: []Action{{Replica: 0, What: "waited"}}}
		if !reflect.DeepEqual(report, wantReport) {
			t.Errorf("report = %+v, want %+v (with the zero time)", report, wantReport)
		}
	})

	t.Run("start not reached", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := c.Start(ctx, ClusterSpec{Replicas: 1, Dir: t.TempDir(), Config: []byte("unready = a leader")})
		nr, ok := err.(*NotReachedError)
		if !ok {
			t.Fatalf("Start error %v (%T), want a *NotReachedError", err, err)
		}
		if want := (NotReachedError{Step: -1, Awaited: "a leader"}); *nr != want {
			t.Errorf("error = %+v, want %+v", *nr, want)
		}
		if got, want := err.Error(), "start: not reached before the deadline: a leader"; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	})

	t.Run("unrealisable", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		report, err := c.Apply(ctx, Step{Index: 3, Transition: "unrealisable write k4.1 reaches two nodes"})
		ue, ok := err.(*UnrealisableError)
		if !ok {
			t.Fatalf("Apply error %v (%T), want an *UnrealisableError", err, err)
		}
		if want := (UnrealisableError{Step: 3, Reason: "write k4.1 reaches two nodes"}); *ue != want {
			t.Errorf("error = %+v, want %+v", *ue, want)
		}
		if !IsUnrealisable(err) || IsNotReached(err) {
			t.Errorf("IsUnrealisable %v, IsNotReached %v: want true, false", IsUnrealisable(err), IsNotReached(err))
		}
		if got, want := err.Error(), "step 4: cannot be realised: write k4.1 reaches two nodes"; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
		if wantReport := (StepReport{Actions: []Action{{Replica: 1, What: "tried"}}}); !reflect.DeepEqual(report, wantReport) {
			t.Errorf("report = %+v, want %+v", report, wantReport)
		}
	})

	t.Run("nonconformant", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := c.Apply(ctx, Step{Index: 2, Transition: "nonconform write-leaked write k3.1 is in the log of etcd-0"})
		ne, ok := err.(*NonconformantError)
		if !ok {
			t.Fatalf("Apply error %v (%T), want a *NonconformantError", err, err)
		}
		if want := (NonconformantError{Step: 2, Check: "write-leaked", Detail: "write k3.1 is in the log of etcd-0"}); *ne != want || !IsNonconformant(err) {
			t.Errorf("error = %+v, want %+v", *ne, want)
		}
		if got, want := err.Error(), "step 3: the cluster does not conform to the model (write-leaked): write k3.1 is in the log of etcd-0"; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	})

	t.Run("start unrealisable", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := c.Start(ctx, ClusterSpec{Replicas: 1, Dir: t.TempDir(), Config: []byte("cannot = seven replicas")})
		ue, ok := err.(*UnrealisableError)
		if !ok {
			t.Fatalf("Start error %v (%T), want an *UnrealisableError", err, err)
		}
		if want := (UnrealisableError{Step: -1, Reason: "seven replicas"}); *ue != want {
			t.Errorf("error = %+v, want %+v", *ue, want)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Setenv("TESTPLUGIN_INFO_ERROR", "server binary /nope/redis-server: no such file")
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tests := []struct {
			name string
			call func() error
			want string
		}{
			{
				name: "Info",
				call: func() error { _, err := c.Info(ctx, nil); return err },
				want: "plugin Info: server binary /nope/redis-server: no such file",
			},
			{
				name: "Info with a configuration",
				call: func() error { _, err := c.Info(ctx, []byte("port = 1")); return err },
				want: `plugin Info: info: unknown config "port = 1"`,
			},
			{
				name: "Start",
				call: func() error {
					return c.Start(ctx, ClusterSpec{Replicas: 1, Config: []byte("port = 1")})
				},
				want: `plugin Start: start: unknown config "port = 1"`,
			},
			{
				name: "Apply",
				call: func() error { _, err := c.Apply(ctx, Step{Transition: "fail disk full"}); return err },
				want: "plugin Apply: disk full",
			},
			{
				name: "Read",
				call: func() error { _, err := c.Read(ctx); return err },
				want: "plugin Read: read: no cluster",
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.call()
				if err == nil || err.Error() != tt.want {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				if IsNotReached(err) {
					t.Errorf("error %v is a *NotReachedError", err)
				}
			})
		}
	})

	t.Run("context cancelled mid-call", func(t *testing.T) {
		c, _ := launchTest(t, bin)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		callCtx, cancelCall := context.WithCancel(ctx)
		marker := filepath.Join(t.TempDir(), "blocking")
		errc := make(chan error, 1)
		go func() {
			_, err := c.Apply(callCtx, Step{Transition: "block " + marker})
			errc <- err
		}()
		if err := proc.WaitFor(ctx, 10*time.Second, "the plugin to enter Apply", func(context.Context) (bool, error) {
			return fileExists(marker), nil
		}); err != nil {
			t.Fatal(err)
		}
		cancelCall()
		err := <-errc
		if !errors.Is(err, context.Canceled) || err.Error() != "plugin Apply: context canceled" {
			t.Errorf("error %v, want \"plugin Apply: context canceled\" wrapping context.Canceled", err)
		}
		if _, err := c.Info(ctx, nil); err != nil {
			t.Errorf("Info after a cancelled call: %v", err)
		}
	})
}
