package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
)

// These tests need no mongod: they drive the plugin up to the point where it would need one,
// or give it the wrong binary, and check what it says.

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// withoutMongod makes sure that no mongod can be found, whatever the machine has.
func withoutMongod(t *testing.T) {
	t.Helper()
	t.Setenv(envMongod, "")
	t.Setenv("PATH", t.TempDir())
}

func TestInfoWithoutMongod(t *testing.T) {
	withoutMongod(t)
	_, err := New().Info(context.Background(), nil)
	if err == nil {
		t.Fatal("Info found a mongod in an empty PATH")
	}
	t.Logf("Info says: %v", err)
	for _, want := range []string{"no mongod", "$MODULO_MONGOD is not set", "no mongod in PATH", "set MODULO_MONGOD=/path/to/mongod"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Info error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("Info error spans lines: %q", err)
	}
}

// TestInfoWrongBinary gives the plugin a binary that is not mongod (GNU true answers --version
// with its own version) and checks that Info runs it, reads its output and refuses it.
func TestInfoWrongBinary(t *testing.T) {
	const notMongod = "/bin/true"
	if _, err := os.Stat(notMongod); err != nil {
		t.Skipf("no %s to stand for a wrong binary: %v", notMongod, err)
	}
	t.Setenv(envMongod, notMongod)
	_, err := New().Info(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), `no "db version" line`) {
		t.Fatalf("Info error = %v, want one saying the output has no \"db version\" line", err)
	}
	t.Logf("Info says: %v", err)
}

func TestStartRefuses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name   string
		spec   func(s *cem.ClusterSpec)
		noPath bool
		want   string
	}{
		{"a DRM of another plugin", func(s *cem.ClusterSpec) { s.DRM = "qcz" }, false,
			"start: DRM qcz is realised by the zookeeper plugin, not by mongodb"},
		{"an unknown DRM", func(s *cem.ClusterSpec) { s.DRM = "xyz" }, false, `start: unknown DRM "xyz"`},
		{"more replicas than voters", func(s *cem.ClusterSpec) { s.Replicas = 8 }, false,
			"start: a replica set has at most 7 voting members"},
		{"no writes", func(s *cem.ClusterSpec) { s.Ops = 0 }, false, "start: ops must be at least 1"},
		{"an unknown config key", func(s *cem.ClusterSpec) { s.Config = []byte("mongo = \"x\"") }, false,
			`start: mongodb config: unknown key "mongo"`},
		{"a busy port", func(s *cem.ClusterSpec) { s.BasePort = busyPort }, false,
			"is already in use"},
		{"no mongod", func(*cem.ClusterSpec) {}, true, "start: no mongod: $MODULO_MONGOD is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noPath {
				withoutMongod(t)
			}
			spec := cem.ClusterSpec{
				DRM: "qcm", Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: freePort(t),
				ScheduleID: "test", StepTimeout: time.Second,
			}
			tt.spec(&spec)
			p := New()
			err := p.Start(context.Background(), spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start error = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Start error spans lines: %q", err)
			}
			if err := p.Teardown(context.Background()); err != nil {
				t.Errorf("Teardown after a refused Start: %v", err)
			}
		})
	}
}

func TestNoCluster(t *testing.T) {
	ctx := context.Background()
	p := New()
	if _, err := p.Apply(ctx, cem.Step{Transition: "D[0,0,1]"}); err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Errorf("Apply without a cluster: %v, want an error saying there is no cluster", err)
	}
	if _, err := p.Read(ctx); err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Errorf("Read without a cluster: %v, want an error saying there is no cluster", err)
	}
	for i := range 2 {
		if err := p.Teardown(ctx); err != nil {
			t.Errorf("Teardown %d without a cluster: %v", i+1, err)
		}
	}
}

// TestThroughPluginWithoutMongod builds the plugin binary and asks it, over the plugin
// protocol, to describe itself on a machine without mongod: modulo run turns this error into
// its one-line message and exit status 2.
func TestThroughPluginWithoutMongod(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := filepath.Join(t.TempDir(), "modulo-plugin-mongodb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	withoutMongod(t) // the plugin inherits modulo's environment
	ctx := context.Background()
	c, err := cem.Launch(ctx, bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	_, err = c.Info(ctx, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "plugin Info: no mongod: $MODULO_MONGOD is not set") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Info through the plugin = %v, want one line saying there is no mongod", err)
	}
	t.Logf("modulo sees: %v", err)
}
