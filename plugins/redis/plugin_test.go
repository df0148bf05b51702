package main

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// The conformance suite (TestConformance) checks what every plugin must do: busy ports,
// teardown, crashed and hung servers, the plugin binary and its death. These tests check what
// is Redis's.

func TestInfo(t *testing.T) {
	plugintest.Servers(t)
	info, err := newPlugin().Info(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "redis" || info.Version == "" || info.Capabilities.PortsPerReplica != 1 ||
		strings.Join(info.Capabilities.DRMs, ",") != "ssr,slr,snr,sclr,splr" ||
		len(info.Capabilities.Declared) != 1 || info.Capabilities.Declared[0].Name != "splr" || !info.Capabilities.Declared[0].PowerLoss {
		t.Errorf("Info = %+v", info)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(info.ServerVersion) {
		t.Errorf("ServerVersion = %q, want the server's x.y.z", info.ServerVersion)
	}
}

// oneLine fails the test unless err is a single line containing every part.
func oneLine(t *testing.T, err error, parts ...string) {
	t.Helper()
	headLine(t, err, "", parts...)
}

// headLine checks that err's first line names every part, and that what follows it, if
// anything, is the indented quote that holds quoted: a server's log, a command's output.
func headLine(t *testing.T, err error, quoted string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one naming %q", parts)
	}
	head, rest, _ := strings.Cut(err.Error(), "\n")
	if quoted == "" && rest != "" || quoted != "" && (!strings.HasPrefix(rest, "  ") || !strings.Contains(rest, quoted)) {
		t.Errorf("error %q: want one line, then a quote holding %q", err, quoted)
	}
	for _, p := range parts {
		if !strings.Contains(head, p) {
			t.Errorf("error %q does not name %q in its first line", err, p)
		}
	}
}

func TestMissingBinary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "redis-server")
	spec := testSpec(t, "slr", 1, 3, "server = "+strconv.Quote(missing))
	p := newPlugin()
	err := p.Start(context.Background(), spec)
	oneLine(t, err, missing, "not found")
	if left := serversOn(t, spec.BasePort, 3); len(left) > 0 {
		t.Errorf("servers left: %v", left)
	}
	if err := p.Teardown(context.Background()); err != nil {
		t.Errorf("Teardown after a failed Start: %v", err)
	}
	_, err = p.Info(context.Background(), []byte("server = "+strconv.Quote(missing)))
	oneLine(t, err, missing)
}

// fakeServer writes an executable script standing in for redis-server: it prints version
// to --version and runs body otherwise.
func fakeServer(t *testing.T, version, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redis-server")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Redis server v=" + version + " sha=00000000:0 malloc=libc bits=64'; exit 0; fi\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServerExitsAtStart: a binary that exits at once makes Start fail with the reason, and
// leaves nothing behind.
func TestServerExitsAtStart(t *testing.T) {
	server := fakeServer(t, "7.0.15", "echo 'FATAL CONFIG FILE ERROR' >&2; exit 1")
	spec := testSpec(t, "sclr", 1, 2, "server = "+strconv.Quote(server))
	p := newPlugin()
	err := p.Start(context.Background(), spec)
	headLine(t, err, "FATAL CONFIG FILE ERROR", "redis-0", "exited unexpectedly", "the last lines of its log")
	if err := p.Teardown(context.Background()); err != nil {
		t.Errorf("Teardown after a failed Start: %v", err)
	}
}

// TestWaitLongerThanStepTimeout: a failure wait that no step could outlast is refused at Start,
// in one line, before any server starts.
func TestWaitLongerThanStepTimeout(t *testing.T) {
	for _, key := range []string{"wait_before_writes", "wait_after_writes"} {
		t.Run(key, func(t *testing.T) {
			spec := testSpec(t, "slr", 1, 3, key+` = "25s"`)
			p := newPlugin()
			err := p.Start(context.Background(), spec)
			oneLine(t, err, "failure wait", "(25s) must be at least 0 and shorter than the step timeout (20s)")
			if err := p.Teardown(context.Background()); err != nil {
				t.Errorf("Teardown after a failed Start: %v", err)
			}
		})
	}
}

// TestServerVersion: Start refuses a binary whose version it cannot tell or cannot drive, and
// a setting the version cannot honour, in one line naming the problem.
func TestServerVersion(t *testing.T) {
	tests := []struct {
		name   string
		server string
		config string
		want   []string
	}{
		{"no version", "/bin/false", "", []string{"/bin/false --version: exit status 1; its output:"}},
		{"not redis", "/bin/echo", "", []string{"/bin/echo --version printed", "which names no version"}},
		{"too old", fakeServer(t, "2.6.17", "exit 1"), "", []string{"redis-server 2.6.17 is too old: the plugin needs 2.8.0 or later"}},
		{"diskless on 2.8.0", fakeServer(t, "2.8.0", "exit 1"), "repl_diskless_sync = true",
			[]string{"repl_diskless_sync and repl_diskless_sync_delay need redis-server 2.8.18 or later, the server is 2.8.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec(t, "slr", 1, 3, "server = "+strconv.Quote(tt.server)+"\n"+tt.config)
			p := newPlugin()
			quote := ""
			if tt.server == "/bin/false" {
				quote = "false (GNU coreutils)"
			}
			headLine(t, p.Start(context.Background(), spec), quote, tt.want...)
			if err := p.Teardown(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestStartNotReached: servers that do not serve in time make Start return a
// *cem.NotReachedError for step -1, and leave no server behind.
func TestStartNotReached(t *testing.T) {
	spec := testSpec(t, "slr", 1, 3, "")
	spec.StepTimeout = time.Microsecond
	p := newPlugin()
	err := p.Start(context.Background(), spec)
	var nr *cem.NotReachedError
	if !errors.As(err, &nr) || nr.Step != -1 || !strings.HasPrefix(nr.Awaited, "redis-0 to serve") {
		t.Fatalf("Start = %v, want a *cem.NotReachedError for step -1", err)
	}
	if left := serversOn(t, spec.BasePort, 3); len(left) > 0 {
		t.Errorf("servers left: %v", left)
	}
	if err := p.Teardown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestApplyActions checks that each step reports its concrete actions, with times, and that a
// transition the model does not enable is refused.
func TestApplyActions(t *testing.T) {
	ctx := context.Background()
	p := startCluster(t, testSpec(t, "ssr", 1, 3, ""))
	if _, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "C[0]<-,-,->"}); err == nil ||
		!strings.Contains(err.Error(), "is not enabled") {
		t.Errorf("a convergence with everybody online: %v, want a refusal", err)
	}
	before := time.Now()
	rep, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,1,1]"})
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	for _, a := range rep.Actions {
		if a.Time.Before(before) || a.Time.After(time.Now()) {
			t.Errorf("action %q at %v, outside the step", a.What, a.Time)
		}
		whats = append(whats, strconv.Itoa(a.Replica)+" "+a.What)
	}
	// Replica 0 is suspended before the write, 1 and 2 (no links yet) each take it, then both
	// are suspended too.
	got := strings.Join(whats, "; ")
	for _, want := range []string{"0 redis-0: SIGSTOP", `1 redis-1: write k1.1 = "test:k1.1"`, `2 redis-2: write k1.1 = "test:k1.1"`, "1 redis-1: SIGSTOP", "2 redis-2: SIGSTOP"} {
		if !strings.Contains(got, want) {
			t.Errorf("actions %q lack %q", got, want)
		}
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range snap.Replicas {
		if !strings.Contains(r.Err, "suspended") {
			t.Errorf("replica %d read while suspended: %+v", i, r)
		}
	}
}

// TestCrashKillsGroup: an S/CL/R crash leaves no process of the replica's group, and the
// restart serves the replica's own data.
func TestCrashKillsGroup(t *testing.T) {
	ctx := context.Background()
	spec := testSpec(t, "sclr", 1, 2, "")
	p := startCluster(t, spec)
	pids := []int{serverPid(t, spec, 0), serverPid(t, spec, 1)}
	// Replica 1 crashes before the write, replica 0 after it.
	if _, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[1,0](c,c)"}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("crashed replica's process %d is alive: %s", pid, b)
		}
	}
	if _, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1]<-,0>"}); err != nil {
		t.Fatal(err)
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 0 restarts from its AOF with the write, 1 follows it; the probe wrote the key once more.
	want := map[string]string{"k1.1": "test:k1.1:final"}
	for i, r := range snap.Replicas {
		if r.Err != "" || !maps.Equal(r.Data, want) || r.Group != 0 {
			t.Errorf("replica %d holds %+v, want %v in group 0", i, r, want)
		}
	}
}
