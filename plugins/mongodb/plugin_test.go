package main

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
)

// newPlugin is the plugin as main serves it.
func newPlugin() cem.CEM { return kit.New(about, &system{}) }

// withoutMongod makes sure that no mongod can be found, whatever the machine has.
func withoutMongod(t *testing.T) {
	t.Helper()
	t.Setenv(envMongod, "")
	t.Setenv("PATH", t.TempDir())
}

// unusedPorts returns the first of n consecutive ports that are free now, between the ports
// the tests that start servers reserve (10000 to 30000) and the ephemeral range: no server is
// started on them, the kit only checks them.
func unusedPorts(t *testing.T, n int) int {
	t.Helper()
	for base := 30000; base+n < 32768; base += n {
		if proc.CheckPortsFree(base, n) == nil {
			return base
		}
	}
	t.Fatalf("no %d free consecutive ports between 30000 and 32768", n)
	return 0
}

// The tests up to TestConformance need no mongod: they drive the plugin up to the point where
// it would need one, or give it the wrong binary, and check what it says.

func TestInfoWithoutMongod(t *testing.T) {
	withoutMongod(t)
	_, err := newPlugin().Info(context.Background(), nil)
	if err == nil {
		t.Fatal("Info found a mongod in an empty PATH")
	}
	t.Logf("Info says: %v", err)
	for _, want := range []string{"mongodb: no mongod", "$MODULO_MONGOD is not set", "no mongod in PATH", "set MODULO_MONGOD=/path/to/mongod"} {
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
	_, err := newPlugin().Info(context.Background(), nil)
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
			"mongodb: start: DRM qcz is realised by the zookeeper plugin, not by mongodb"},
		{"more replicas than voters", func(s *cem.ClusterSpec) { s.Replicas = 8 }, false,
			"a replica set has at most 7 voting members"},
		{"an unknown config key", func(s *cem.ClusterSpec) { s.Config = []byte("mongo = \"x\"") }, false,
			`mongodb config: unknown key "mongo"`},
		{"a bad config value", func(s *cem.ClusterSpec) { s.Config = []byte("oplog_size_mb = 0\noplog_size_mb = -1") }, false,
			"mongodb config:"},
		{"a busy port", func(s *cem.ClusterSpec) { s.BasePort = busyPort }, false, "is already in use"},
		{"no mongod", func(*cem.ClusterSpec) {}, true, "no mongod: $MODULO_MONGOD is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noPath {
				withoutMongod(t)
			} else {
				t.Setenv(envMongod, "/bin/true") // never started: every case fails before
			}
			// On loopback: a refusal needs no network of namespaces, which the short suite
			// does not make.
			spec := cem.ClusterSpec{
				DRM: "qcm", Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: unusedPorts(t, 8),
				ScheduleID: "test", StepTimeout: time.Second, Config: []byte(`network = "loopback"`),
			}
			tt.spec(&spec)
			p := newPlugin()
			err = p.Start(context.Background(), spec)
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

// TestThroughPluginWithoutMongod builds the plugin binary and asks it, over the plugin
// protocol, to describe itself on a machine without mongod: modulo run turns this error into
// its one-line message and exit status 2.
func TestThroughPluginWithoutMongod(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := plugintest.Build(t, ".")
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
	if err == nil || !strings.HasPrefix(err.Error(), "plugin Info: mongodb: no mongod: $MODULO_MONGOD is not set") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Info through the plugin = %v, want one line saying there is no mongod", err)
	}
	t.Logf("modulo sees: %v", err)
}

// TestConformance runs the conformance suite on a real replica set whenever a mongod is
// configured ($MODULO_MONGOD or PATH), and is skipped, saying so, when none is: MongoDB is not
// in Debian and cannot be downloaded on the machines this repository is developed on, so it
// has never run there.
func TestConformance(t *testing.T) {
	s := &system{}
	if err := s.cfg.check(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cfg.mongodPath(); err != nil {
		t.Skipf("no mongod (%v): set MODULO_MONGOD to run the suite", err)
	}
	plugintest.Run(t, plugintest.Config{
		DRM:         "qcm",
		New:         newPlugin,
		Binary:      plugintest.Build(t, "."),
		StepTimeout: 30 * time.Second, // a mongod SIGKILLed replays its journal when it starts
	})
}
