package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/schedules"
)

// knownBug is a regression case of the known-bug benchmark (bench/knownbugs): a schedule
// that a campaign with the paper preset found failing on an old Redis build. Each is kept in
// testdata/known-bugs.txt as the benchmark printed it, never written by hand.
type knownBug struct {
	bug, version, drm string
	ops, n            int
	s                 schedule
}

func readKnownBugs(t *testing.T) []knownBug {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "known-bugs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bugs []knownBug
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// bug version drm ops replicas id transitions...
		fs := strings.Fields(text)
		if len(fs) < 7 {
			t.Fatalf("known-bugs.txt:%d: want bug, version, drm, ops, replicas, ID and transitions", line)
		}
		ops, err1 := strconv.Atoi(fs[3])
		n, err2 := strconv.Atoi(fs[4])
		if err1 != nil || err2 != nil {
			t.Fatalf("known-bugs.txt:%d: ops and replicas must be numbers", line)
		}
		s := parseSchedule(t, strings.Join(fs[6:], " "))
		p := aem.Params{Ops: ops, Replicas: n}
		if id := schedules.ID(fs[2], p, schedules.Body(s.steps)); id != fs[5] {
			t.Fatalf("known-bugs.txt:%d: ID %s does not match the schedule (its ID is %s)", line, fs[5], id)
		}
		s.id = fs[5]
		bugs = append(bugs, knownBug{bug: fs[0], version: fs[1], drm: fs[2], ops: ops, n: n, s: s})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return bugs
}

// oldServer is where scripts/build-redis puts redis-server of version v.
func oldServer(t *testing.T, v string) string {
	t.Helper()
	return plugintest.CachedServer(t, filepath.Join("redis", v, "redis-server"))
}

// TestKnownBugs replays every known-bug case with the paper preset: it must diverge on the
// old build it was found on and converge on Debian's 7.0, where the bug is fixed.
func TestKnownBugs(t *testing.T) {
	plugintest.Servers(t) // real servers, old builds among them
	for _, kb := range readKnownBugs(t) {
		t.Run(kb.bug+"/"+kb.version+"/"+kb.s.id, func(t *testing.T) {
			for _, tt := range []struct {
				server  string
				diverge bool
			}{{oldServer(t, kb.version), true}, {debianServer, false}} {
				config := "preset = \"paper\"\nserver = " + strconv.Quote(tt.server)
				r, err := runSchedule(t, newPlugin(), testSpec(t, kb.drm, kb.ops, kb.n, config), kb.s, nil)
				if err != nil {
					t.Fatalf("%s on %s: %v", kb.s, tt.server, err)
				}
				d := groupDifferences(r.snap)
				switch {
				case tt.diverge && d == "":
					t.Errorf("%s converged on %s, where redis issue %s should make it diverge", kb.s, tt.server, kb.bug)
				case !tt.diverge && d != "":
					t.Errorf("%s diverged on %s: %s", kb.s, tt.server, d)
				}
			}
		})
	}
}
