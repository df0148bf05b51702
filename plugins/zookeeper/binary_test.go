package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
)

// buildPlugin builds the plugin binary into the test's directory.
func buildPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "modulo-plugin-zookeeper")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// jvmsIn lists the pids of the JVMs whose command line names a file under dir.
func jvmsIn(t *testing.T, dir string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "QuorumPeerMain "+dir).Output() // exit 1: none
	return strings.Fields(string(out))
}

// TestThroughPlugin runs a schedule through the built plugin binary over the plugin protocol.
func TestThroughPlugin(t *testing.T) {
	ctx := context.Background()
	c, err := cem.Launch(ctx, buildPlugin(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.Info(ctx, nil)
	if err != nil || info.Name != "zookeeper" || info.Capabilities.PortsPerReplica != 3 {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	spec := testSpec(t, 1, 3, "plugin", "")
	if err := c.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Teardown(ctx); err != nil {
			t.Error(err)
		}
		if left := jvmsIn(t, spec.Dir); len(left) > 0 {
			t.Errorf("JVMs left after teardown: %v", left)
		}
	}()
	for i, step := range []string{"D[0,1,1]", "C[0,1]", "C[2]"} {
		rep, err := c.Apply(ctx, cem.Step{Index: i, Transition: step})
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, step, err)
		}
		if len(rep.Actions) == 0 || rep.Actions[0].Time.IsZero() {
			t.Errorf("step %d: actions %+v", i+1, rep.Actions)
		}
	}
	snap, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range snap.Replicas {
		if r.Err != "" || len(r.Data) != 1 || r.Data["k1.1"] != "plugin:1.1" {
			t.Errorf("replica %d holds %+v, want the committed k1.1", i, r)
		}
	}
}

// TestPluginDeathEndsServers: when the plugin process dies with a cluster running, its JVMs
// die with it.
func TestPluginDeathEndsServers(t *testing.T) {
	ctx := context.Background()
	c, err := cem.Launch(ctx, buildPlugin(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := testSpec(t, 1, 3, "death", "")
	if err := c.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cem.KillLeftovers(spec.Dir); err != nil {
			t.Error(err)
		}
	}()
	if n := len(jvmsIn(t, spec.Dir)); n != 3 {
		t.Fatalf("%d JVMs running, want 3", n)
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cem.WaitFor(ctx, 5*time.Second, "JVMs to die with the plugin", func(context.Context) (bool, error) {
		return len(jvmsIn(t, spec.Dir)) == 0, nil
	})
	if err != nil {
		t.Error(err, jvmsIn(t, spec.Dir))
	}
}
