package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
)

func TestInfo(t *testing.T) {
	p := NewPlugin()
	info, err := p.Info(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "zookeeper" || info.Version == "" || len(info.Capabilities.DRMs) != 1 ||
		info.Capabilities.DRMs[0] != "qcz" || info.Capabilities.PortsPerReplica != 3 {
		t.Errorf("info = %+v", info)
	}
	// The version read from the jar is the one the running server reports.
	spec := testSpec(t, 1, 3, "info", "")
	startCluster(t, spec)
	reply, err := fourLetter(context.Background(), "127.0.0.1:"+strconv.Itoa(spec.BasePort), "srvr")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply, "Zookeeper version: "+info.ServerVersion+"-") {
		t.Errorf("ServerVersion %q, but the server says %q", info.ServerVersion, firstLineOf(reply))
	}
}

// TestStartErrors: bad input gets a one-line error naming the problem, starts nothing, and
// Teardown after it is fine, twice.
func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		spec func(s *cem.ClusterSpec)
		want string
	}{
		{"busy port", func(s *cem.ClusterSpec) {
			// zk1's quorum port: the check must look past the first replica.
			busy, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(s.BasePort+4))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { busy.Close() })
		}, "zookeeper: port 127.0.0.1:%s is already in use"},
		{"no java", func(s *cem.ClusterSpec) { s.Config = []byte(`java = "/nonexistent/java"`) },
			`zookeeper: java binary "/nonexistent/java" not found`},
		{"unknown key", func(s *cem.ClusterSpec) { s.Config = []byte("tick = 1") }, `zookeeper config: unknown key "tick"`},
		{"other DRM", func(s *cem.ClusterSpec) { s.DRM = "ssr" }, "zookeeper: the plugin realises qcz, not ssr"},
		{"one replica", func(s *cem.ClusterSpec) { s.Replicas = 1 }, "zookeeper: replicas must be between 2 and 16, got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec(t, 1, 3, "errors", "")
			tt.spec(&spec)
			want := strings.Replace(tt.want, "%s", strconv.Itoa(spec.BasePort+4), 1)
			p := NewPlugin()
			err := p.Start(context.Background(), spec)
			if err == nil || err.Error() != want {
				t.Errorf("start error = %v, want %q", err, want)
			}
			for range 2 {
				if err := p.Teardown(context.Background()); err != nil {
					t.Errorf("teardown: %v", err)
				}
			}
			assertNoJVMs(t)
		})
	}
	// Info checks the configuration it is given, missing java included.
	if _, err := NewPlugin().Info(context.Background(), []byte(`java = "/nonexistent/java"`)); err == nil || err.Error() != `zookeeper: java binary "/nonexistent/java" not found` {
		t.Errorf("info error = %v", err)
	}
}

// TestStepNotReached: a convergence that cannot finish in time returns a *cem.NotReachedError
// naming what was awaited, with the actions taken before it; later steps are refused, and
// Teardown still ends everything.
func TestStepNotReached(t *testing.T) {
	spec := testSpec(t, 1, 3, "unreached", "")
	p := startCluster(t, spec)
	ctx := context.Background()
	if _, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,0,1]"}); err != nil {
		t.Fatal(err)
	}
	p.c.timeout = 50 * time.Millisecond // no JVM starts that fast
	rep, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1]"})
	var nr *cem.NotReachedError
	if !errors.As(err, &nr) {
		t.Fatalf("error = %v, want a *cem.NotReachedError", err)
	}
	if nr.Step != 1 || !strings.Contains(nr.Awaited, "zk0, zk1 serving under one leader") {
		t.Errorf("not reached: step %d, awaited %q", nr.Step, nr.Awaited)
	}
	if len(rep.Actions) != 2 || !strings.HasPrefix(rep.Actions[0].What, "start zk") {
		t.Errorf("actions before the timeout:%s", actionsText(rep))
	}
	if _, err := p.Apply(ctx, cem.Step{Index: 2, Transition: "C[2]"}); err == nil || !strings.Contains(err.Error(), "an earlier step failed") {
		t.Errorf("step after a failed one: %v", err)
	}
	if err := p.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoJVMs(t)
}

// TestStepErrors: steps that are not Q/C/Z steps of the current state are refused up front.
func TestStepErrors(t *testing.T) {
	spec := testSpec(t, 1, 3, "steps", "")
	p := startCluster(t, spec)
	for _, tt := range []struct{ step, want string }{
		{"C[0]", "zookeeper: step 1: C[0] is not enabled in state"},
		{"D[1,1,1]", "zookeeper: step 1: D[1,1,1] is not enabled in state"},
		{"X[1]", `zookeeper: step 1: transition "X[1]": must start with D or C`},
	} {
		_, err := p.Apply(context.Background(), cem.Step{Index: 0, Transition: tt.step})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want prefix %q", tt.step, err, tt.want)
		}
	}
}

// TestClassDataSharing: the first start with an empty cache makes the archive, every replica
// maps it, and a later start reuses it as it is.
func TestClassDataSharing(t *testing.T) {
	cache := t.TempDir()
	config := `cache_dir = "` + cache + `"`
	archives := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(cache, "zookeeper-*.jsa"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mapped := func(p *Plugin, archive string) {
		t.Helper()
		for _, r := range p.c.replicas {
			maps, err := os.ReadFile("/proc/" + strconv.Itoa(r.proc.Pid) + "/maps")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(maps), archive) {
				t.Errorf("%s does not map %s", r.name, archive)
			}
		}
	}
	p := startCluster(t, testSpec(t, 1, 3, "cds", config))
	a := archives()
	if len(a) != 1 {
		t.Fatalf("archives after the first start: %v", a)
	}
	first, err := os.Stat(a[0])
	if err != nil {
		t.Fatal(err)
	}
	mapped(p, a[0])
	if err := p.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}

	p = startCluster(t, testSpec(t, 1, 3, "cds", config))
	again, err := os.Stat(a[0])
	if err != nil || !again.ModTime().Equal(first.ModTime()) || len(archives()) != 1 {
		t.Errorf("archive remade or gone: %v, %v", err, archives())
	}
	mapped(p, a[0])
}

// TestArchiveKey: the archive's name changes with the jars and the JVM flags, and only then.
func TestArchiveKey(t *testing.T) {
	jars := t.TempDir()
	for _, name := range append([]string{"zookeeper.jar"}, loggingJars...) {
		copyFile(t, filepath.Join("/usr/share/java", name), filepath.Join(jars, name))
	}
	c := DefaultConfig()
	c.JarDir = jars
	key := func(flags []string) string {
		t.Helper()
		in, err := findInstall(&c)
		if err != nil {
			t.Fatal(err)
		}
		k, err := archiveKey(in, flags)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(c.JVMFlags)
	if again := key(c.JVMFlags); again != base {
		t.Errorf("same install, keys %s and %s", base, again)
	}
	if other := key(append(c.JVMFlags, "-Xmx256m")); other == base {
		t.Error("other JVM flags, same key")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(jars, "zookeeper.jar"), later, later); err != nil {
		t.Fatal(err)
	}
	if changed := key(c.JVMFlags); changed == base {
		t.Error("zookeeper.jar changed, same key")
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}
