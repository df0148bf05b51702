package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// standIn writes a script that says it is redis-server version v and runs Debian's 7.0 in its
// place: only 7.0 is installed here. 7.0 still accepts SLAVEOF, one INFO section a call, and
// every directive the plugin writes for older versions, so the stand-in runs the exact
// configuration and commands the plugin produces for v against a real server. It checks the
// plugin's side of each version, not that version's behaviour. Before 2.8.18 a server has no
// diskless sync, which 7.0 does by default: the stand-in turns it off, as such a server is.
func standIn(t *testing.T, v dialect.Version) string {
	t.Helper()
	if _, err := os.Stat(debianServer); err != nil {
		t.Fatalf("Debian's redis-server is not installed (apt-get install redis-server): %v", err)
	}
	extra := ""
	if !v.AtLeast(dialect.Version{Major: 2, Minor: 8, Patch: 18}) {
		extra = " --repl-diskless-sync no"
	}
	path := filepath.Join(t.TempDir(), "redis-server")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Redis server v=%s sha=00000000:0 malloc=libc bits=64 build=0'; exit 0; fi\nexec %s \"$@\"%s\n",
		v, debianServer, extra)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	pids  = regexp.MustCompile(`(pid|process group) \d+`)
	ports = regexp.MustCompile(`127\.0\.0\.1 (\d+)`)
)

// TestCommandsGolden runs one small S/CL/R schedule, which writes, crashes, takes a snapshot
// and starts a replica from it, suspends, resumes and links, for each version the plugin has
// golden files for, and compares every step's actions (with pids and ports made symbolic) with testdata/commands-<version>.txt. 7.0.15 runs on
// Debian's server itself, the others on stand-ins.
func TestCommandsGolden(t *testing.T) {
	plugintest.Servers(t) // Debian's server and stand-ins
	const text = "D[1,0](n,c) C[1]<-,->off2 C[0]<1,->"
	for _, v := range []dialect.Version{{Major: 2, Minor: 8, Patch: 0}, {Major: 4, Minor: 0, Patch: 0}, {Major: 5, Minor: 0, Patch: 14}, {Major: 7, Minor: 0, Patch: 15}} {
		t.Run(v.String(), func(t *testing.T) {
			server := debianServer
			if v != (dialect.Version{Major: 7, Minor: 0, Patch: 15}) {
				server = standIn(t, v)
			}
			spec := testSpec(t, "sclr", 1, 2, "server = "+strconv.Quote(server))
			r, err := runSchedule(t, newPlugin(), spec, parseSchedule(t, text), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := groupDifferences(r.snap); d != "" {
				t.Errorf("replicas differ: %s", d)
			}
			var b strings.Builder
			d, err := dialect.For(v)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "# %s on redis-server %s; replica i listens on port <i>\n", text, v)
			fmt.Fprintf(&b, "# links: %s; INFO sections in one call: %v; REPLCONF GETACK (acknowledgements on request): %v\n", d.ReplicaOf, d.MultiSectionInfo, d.GetAck)
			step := func(name string) { fmt.Fprintf(&b, "%s\n", name) }
			write := func(replica int, what string) {
				what = pids.ReplaceAllString(what, "$1 PID")
				what = ports.ReplaceAllStringFunc(what, func(m string) string {
					port, _ := strconv.Atoi(ports.FindStringSubmatch(m)[1])
					return fmt.Sprintf("127.0.0.1 <%d>", port-spec.BasePort)
				})
				fmt.Fprintf(&b, "  replica %d: %s\n", replica, what)
			}
			for i, rep := range r.reports {
				step(fmt.Sprintf("step %d %s", i+1, parseSchedule(t, text).steps[i]))
				for _, a := range rep.Actions {
					write(a.Replica, a.What)
				}
			}
			goldenFile(t, filepath.Join("testdata", "commands-"+v.String()+".txt"), b.String())
		})
	}
}

// goldenFile compares got with the file at path, or rewrites the file with -update.
func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCommandsGolden -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
