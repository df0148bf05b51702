package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/schedules"
)

// builtReleases are the releases scripts/setup builds from ../shared/zookeeper with
// scripts/build-zookeeper, besides Debian's 3.8.0 in /usr/share/java.
var builtReleases = []string{"3.4.11", "3.7.0", "3.8.0", "3.8.6", "3.9.5"}

// builtJarDir is where scripts/build-zookeeper put release v; t fails when it is not built.
func builtJarDir(t *testing.T, v string) string {
	t.Helper()
	return filepath.Dir(plugintest.CachedServer(t, filepath.Join("zookeeper", v, "zookeeper.jar")))
}

// jarDirConfig is the plugin's section that runs the jars of dir.
func jarDirConfig(dir string) []byte { return []byte(fmt.Sprintf("jar_dir = %q\n", dir)) }

// paperReleases are the releases the Modulo paper ran (3.5.8's source is not here).
var paperReleases = []string{"3.4.11", "3.7.0"}

// TestReleases runs the conformance suite on every release built from source: the plugin
// reads each one's version and adapts to what it lacks. The paper's releases run with its
// preset, whose writes set initial znodes (setData, through 3.4's global session too).
func TestReleases(t *testing.T) {
	plugintest.Servers(t)
	for _, v := range builtReleases {
		t.Run(v, func(t *testing.T) {
			dir := builtJarDir(t, v)
			info, err := kit.New(about, &system{}).Info(t.Context(), jarDirConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			if info.ServerVersion != v {
				t.Fatalf("the plugin reads version %q from %s, want %s", info.ServerVersion, dir, v)
			}
			config := jarDirConfig(dir)
			if slices.Contains(paperReleases, v) {
				config = append(config, "preset = \"paper\"\n"...)
			}
			plugintest.Run(t, plugintest.Config{
				DRM:          "qcz",
				New:          func() cem.CEM { return kit.New(about, &system{}) },
				PluginConfig: config,
			})
		})
	}
}

// TestTruncKeepsFirst replays the schedule of testdata/trunc-keeps-first.txt on every release
// built from source since 3.7: at step 4 replica 2, whose log's one transaction is the
// uncommitted k1.1, is told to truncate it (TRUNC), keeps k1.1 and holds it alone at the end.
func TestTruncKeepsFirst(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "trunc-keeps-first.txt"), "qcz", params)
	for _, v := range []string{"3.7.0", "3.8.0", "3.8.6", "3.9.5"} {
		t.Run(v, func(t *testing.T) {
			p := kit.New(about, &system{})
			_, reports := plugintest.ReplayKept(t, p, jarDirConfig(builtJarDir(t, v)), "qcz", params, id, steps)
			sync := ""
			for _, o := range reports[3].Observations {
				if o.Replica == 2 {
					sync = o.Fields[cem.ObserveSync]
				}
			}
			if !strings.Contains(sync, "TRUNC") {
				t.Errorf("at step 4 replica 2 was synced by %q, want a TRUNC", sync)
			}
			snap, err := p.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			d := oracle.Compare(snap)
			rs := snap.Replicas
			if d.Converged() || rs[2].Data["k1.1"] != id+":k1.1" || rs[0].Data["k1.1"] != "" || rs[1].Data["k1.1"] != "" {
				t.Fatalf("at the end: %s; want replica 2 alone to hold the uncommitted k1.1", d.Line())
			}
			t.Logf("ZooKeeper %s, after %s: %s", v, schedules.Body(steps), d.Line())
		})
	}
}

// TestTruncKeepsFirstByHand runs testdata/trunc-keeps-first.sh, the hand reproduction with
// ZooKeeper's own server and CLI and no modulo, on Debian's 3.8.0 and on every release built
// from source since 3.7 (3.4.11's CLI opens a global session, whose createSession becomes the
// log's first, committed, transaction: there the truncation target is in the log):
// the follower told to truncate its log below its first transaction (to zxid 0, or to the
// leader's first epoch's 0x100000000, as the restarts' timing has it) keeps the uncommitted /k1.1
// and serves it.
func TestTruncKeepsFirstByHand(t *testing.T) {
	plugintest.Servers(t)
	for _, v := range []string{"debian", "3.7.0", "3.8.0", "3.8.6", "3.9.5"} {
		t.Run(v, func(t *testing.T) {
			dir := "/usr/share/java"
			if v != "debian" {
				dir = builtJarDir(t, v)
			}
			base := plugintest.FreePorts(t, 9)
			cmd := exec.Command("bash", filepath.Join("testdata", "trunc-keeps-first.sh"), dir)
			cmd.Env = append(os.Environ(), "BASE_PORT="+strconv.Itoa(base), "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("the script ended with %v, want exit status 1 (diverged):\n%s", err, out)
			}
			for _, want := range []string{"Truncating log to get in sync with the leader 0x", "[k1.1, zookeeper]", "DIVERGED"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("no %q in the script's output:\n%s", want, out)
				}
			}
			t.Logf("\n%s", out)
		})
	}
}

// TestSnapKeepsTailByHand runs testdata/snap-keeps-tail.sh, the hand reproduction of the Q/N/Z
// failure 86c2add925a3467e with ZooKeeper's own server and CLI, ip(8)'s network namespaces and
// no modulo, on Debian's 3.8.0 and on 3.9.5, the latest release: an old leader synced by SNAP
// keeps its uncommitted write in its log and later hands it to a follower in a DIFF
// (ZOOKEEPER-3946), which alone holds it and counts a digest mismatch.
func TestSnapKeepsTailByHand(t *testing.T) {
	plugintest.Servers(t)
	if os.Geteuid() != 0 {
		t.Skip("the script makes network namespaces with ip netns: it runs as root")
	}
	for _, v := range []string{"debian", "3.9.5"} {
		t.Run(v, func(t *testing.T) {
			dir := "/usr/share/java"
			if v != "debian" {
				dir = builtJarDir(t, v)
			}
			ns := fmt.Sprintf("snapkeepstail-%d-%s", os.Getpid(), strings.ReplaceAll(v, ".", ""))
			t.Cleanup(func() { removeNamespaces(t, ns+"-") }) // the script's own trap does not outlive a SIGKILL
			cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("testdata", "snap-keeps-tail.sh"), dir)
			cmd.Env = append(os.Environ(), "NS="+ns, "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("the script ended with %v, want exit status 1 (diverged):\n%s", err, out)
			}
			for _, want := range []string{"Getting a snapshot from leader", "Getting a diff from the leader", "First digest mismatch", "DIVERGED"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("no %q in the script's output:\n%s", want, out)
				}
			}
			t.Logf("\n%s", out)
		})
	}
}

// removeNamespaces deletes the named network namespaces whose names start with prefix, and
// kills what runs in them: the ones a test's script made.
func removeNamespaces(t *testing.T, prefix string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Errorf("ip netns list: %v", err)
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		t.Errorf("network namespace %s left by the script: removing it", name)
		pids, _ := exec.Command("ip", "netns", "pids", name).Output()
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	}
}

// TestSnapKeepsTail replays the schedule of testdata/snap-keeps-tail.txt, every failure a
// partition, on Debian's 3.8.0 and on 3.9.5: replica 2, which logged k3.1 alone at step 3, is
// synced by SNAP at step 5 and keeps k3.1 in its log; leading at step 8, it syncs replica 0 by
// a DIFF read from that log, and replica 0 applies k3.1, counts a digest mismatch, and alone
// holds the write that never committed (ZOOKEEPER-3946).
func TestSnapKeepsTail(t *testing.T) {
	plugintest.Servers(t)
	params := plugintest.Params{Ops: 3, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "snap-keeps-tail.txt"), "qnz", params)
	for _, v := range []string{"debian", "3.9.5"} {
		t.Run(v, func(t *testing.T) {
			var config []byte
			if v != "debian" {
				config = jarDirConfig(builtJarDir(t, v))
			}
			p := kit.New(about, &system{})
			_, reports := plugintest.ReplayKept(t, p, config, "qnz", params, id, steps)
			syncOf := func(step, replica int) string {
				for _, o := range reports[step-1].Observations {
					if o.Replica == replica {
						return o.Fields[cem.ObserveSync]
					}
				}
				return ""
			}
			if s := syncOf(5, 2); !strings.Contains(s, "SNAP") {
				t.Errorf("at step 5 replica 2 was synced by %q, want a SNAP", s)
			}
			if s := syncOf(8, 0); !strings.Contains(s, "DIFF") {
				t.Errorf("at step 8 replica 0 was synced by %q, want a DIFF", s)
			}
			digest := false
			for _, a := range reports[7].Alarms {
				digest = digest || a.Replica == 0 && strings.Contains(a.What, "zk_digest_mismatches_count = 1")
			}
			if !digest {
				t.Errorf("after step 8, alarms %v; want replica 0's zk_digest_mismatches_count = 1", reports[7].Alarms)
			}
			snap, err := p.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			d := oracle.Compare(snap)
			rs := snap.Replicas
			if d.Converged() || rs[0].Data["k3.1"] != id+":k3.1" || rs[1].Data["k3.1"] != "" || rs[2].Data["k3.1"] != "" {
				t.Fatalf("at the end: %s; want replica 0 alone to hold the uncommitted k3.1", d.Line())
			}
			t.Logf("ZooKeeper %s, after %s: %s", v, schedules.Body(steps), d.Line())
		})
	}
}
