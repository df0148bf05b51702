package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
	"github.com/modulo-testing/modulo/oracle"
)

// TestEmptyLogAfterDiskError replays the schedule of testdata/empty-log-after-disk-error.txt:
// on Debian's 3.8.0 replica 1, whose disk failed the header of its new transaction log, exits
// at its restart in step 3 with an EOFException (ZOOKEEPER-2332); on 3.9.5, which deletes an
// empty last log at start, it rejoins and the replicas agree.
func TestEmptyLogAfterDiskError(t *testing.T) {
	plugintest.Servers(t)
	const drm = "qcz+disk-error"
	params := plugintest.Params{Ops: 1, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "empty-log-after-disk-error.txt"), drm, params)
	for _, v := range []string{"debian", "3.9.5"} {
		t.Run(v, func(t *testing.T) {
			var config []byte
			if v != "debian" {
				config = jarDirConfig(builtJarDir(t, v))
			}
			p := kit.New(about, &system{})
			_, reports := plugintest.ReplayKept(t, p, config, drm, params, id, steps)
			var refused string
			for _, a := range reports[2].Alarms {
				if a.Replica == 1 && a.Unrecoverable && strings.Contains(a.What, "EOFException") {
					refused = a.What
				}
			}
			var acts []string
			for _, r := range reports {
				for _, a := range r.Actions {
					if strings.Contains(a.What, "disk") {
						acts = append(acts, a.What)
					}
				}
			}
			switch {
			case v == "debian" && refused == "":
				t.Fatalf("after step 3 %s, alarms %+v; want replica 1 unrecoverable with an EOFException (disk actions: %q)", steps[2], reports[2].Alarms, acts)
			case v != "debian" && len(reports[2].Alarms) > 0:
				t.Fatalf("ZooKeeper %s: after step 3, alarms %+v; want none: it deletes an empty last log (disk actions: %q)", v, reports[2].Alarms, acts)
			case v != "debian":
				snap, err := p.Read(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if d := oracle.Compare(snap); !d.Converged() {
					t.Fatalf("ZooKeeper %s: after the schedule: %s", v, d.Line())
				}
			}
			t.Logf("ZooKeeper %s: %q; %s", v, acts, refused)
		})
	}
}

// TestAckedInDeletedLog replays the schedule of testdata/acked-in-deleted-log.txt on 3.9.5:
// replica 1's disk fails as it begins its first transaction log, its SyncThread dies ("Severe
// unrecoverable error"), and the server, still running, goes LOOKING and deletes the empty log
// ("Delete empty tail log file", ZOOKEEPER-2332's fix) while its log stream still writes to
// it. Once the disk is healed and it goes on (drawn), the write k3.1 of step 3 is acknowledged
// by a quorum that counts it, and it never reaches a log file that ZooKeeper can read again:
// the step waits in vain for k3.1 in its txn log, while the server holds the deleted file open.
func TestAckedInDeletedLog(t *testing.T) {
	plugintest.Servers(t)
	const drm = "qcz+disk-error"
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "acked-in-deleted-log.txt"), drm, params)
	p := kit.New(about, &system{})
	spec, _ := plugintest.ReplayKept(t, p, jarDirConfig(builtJarDir(t, "3.9.5")), drm, params, id, steps[:2])
	rep, err := p.Apply(context.Background(), cem.Step{Index: 2, Transition: steps[2].String()})
	if err == nil || !strings.Contains(err.Error(), "to hold write k3.1") || !strings.Contains(err.Error(), "in its txn log") {
		t.Fatalf("step 3 %s: %v; want it not reached: a replica never logs k3.1", steps[2], err)
	}
	m := regexp.MustCompile(`(zookeeper-\d) to hold write k3\.1`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("step 3: %v: which replica?", err)
	}
	name := m[1]
	acked := slices.ContainsFunc(rep.Writes, func(w cem.Write) bool { return w.Key == "k3.1" && w.Acked })
	log, rerr := os.ReadFile(filepath.Join(spec.Dir, name, name+".log"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, want := range []string{"Severe unrecoverable error, from thread : SyncThread", "Delete empty tail log file to recover from corruption file: log."} {
		if !strings.Contains(string(log), want) {
			t.Errorf("%s's log lacks %q", name, want)
		}
	}
	deleted := deletedLogs(t, spec.Dir, name)
	if !acked || len(deleted) == 0 {
		t.Fatalf("k3.1 acknowledged: %v; %s holds open deleted logs %q; want both", acked, name, deleted)
	}
	t.Logf("%s: k3.1 acknowledged, not in its txn log; it writes to %q", name, deleted)
}

// deletedLogs lists the deleted transaction logs that the server of replica name holds open.
func deletedLogs(t *testing.T, dir, name string) []string {
	t.Helper()
	files, err := proc.PidFiles(filepath.Join(dir, name))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pid file of %s: %v", name, err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", files[0].Pid))
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", files[0].Pid, fd.Name()))
		if err == nil && strings.Contains(target, "version-2/log.") && strings.HasSuffix(target, "(deleted)") {
			deleted = append(deleted, target)
		}
	}
	return deleted
}
