package results_test

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
	"github.com/modulo-testing/modulo/schedules"
)

var update = flag.Bool("update", false, "rewrite golden files")

// checkGolden checks got against the golden file, which go test -update rewrites first.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("got:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

func TestWriteFailure(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	s := all[1]
	dir := t.TempDir()
	st := openStore(t, dir, campaign)

	cluster := filepath.Join(dir, results.WorkDir, "w0")
	for name, text := range map[string]string{
		"r0/server.log": "ready\n", "r1/server.log": "sync\n", "r0/appendonly.aof": "*1\r\n", "notes.txt": "x",
	} {
		path := filepath.Join(cluster, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A log written ahead as zeros, as etcd's WAL is, is kept as holes.
	wal := append([]byte("entry"), make([]byte, 4<<20)...)
	if err := os.WriteFile(filepath.Join(cluster, "r0", "0.wal"), wal, 0o600); err != nil {
		t.Fatal(err)
	}
	// A folder left by a run killed before it recorded is replaced.
	if err := os.MkdirAll(filepath.Join(st.FailureDir(s.ID), "stale"), 0o755); err != nil {
		t.Fatal(err)
	}

	at := time.Date(2024, 1, 2, 3, 4, 5, 600, time.UTC)
	f := results.Failure{
		Header: h, Schedule: s, Record: record(s.ID, oracle.Fail),
		Detail: "1 key differs:\n  key:1\n    replica 0: \"v\"\n    replica 1: <missing>\n    replica 2: \"v\"\n",
		Actions: []results.StepActions{
			{Step: 0, Transition: s.Steps[0].String(), Actions: []cem.Action{
				{Time: at, Replica: 2, What: "SET key:1 v"}, {Replica: -1, What: "wait for replication"}}},
			{Step: 1, Transition: s.Steps[1].String()},
		},
		Snapshot: &cem.Snapshot{Replicas: []cem.ReplicaData{
			{Data: map[string]string{"key:1": "v", "a": "b"}}, {Data: map[string]string{}}, {Err: "connection refused"}}},
		Cluster: cluster,
	}
	if err := st.WriteFailure(f); err != nil {
		t.Fatal(err)
	}
	fd := st.FailureDir(s.ID)
	for _, name := range []string{results.ScheduleText, results.VerdictText, results.ActionsText, results.ReplicasJSON} {
		got, err := os.ReadFile(filepath.Join(fd, name))
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", "failure-"+name), got)
	}
	for _, name := range []string{"logs/r0/server.log", "logs/r1/server.log", "cluster/r0/appendonly.aof", "cluster/notes.txt"} {
		if _, err := os.Stat(filepath.Join(fd, name)); err != nil {
			t.Error(err)
		}
	}
	var wst syscall.Stat_t
	if err := syscall.Stat(filepath.Join(fd, "cluster", "r0", "0.wal"), &wst); err != nil {
		t.Fatal(err)
	}
	if wst.Size != int64(len(wal)) || wst.Blocks*512 > 64<<10 {
		t.Errorf("the kept 0.wal is %d bytes with %d allocated, want %d with its zeros as holes", wst.Size, wst.Blocks*512, len(wal))
	}
	for _, gone := range []string{filepath.Join(fd, "logs/r0/appendonly.aof"), filepath.Join(fd, "stale"), cluster} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", gone, err)
		}
	}
}

// TestWriteFailureBudget: a cluster directory beyond the folder's budget loses its largest
// files, one by one, until within it, and LEFT-OUT.txt names them; the logs stay whole in
// logs/; within the budget nothing is left out.
func TestWriteFailureBudget(t *testing.T) {
	h, all, err := schedules.ReadAll("../schedules/testdata/ssr-1x3.sched")
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	sizes := map[string]int{"r0/server.log": 3 * mib, "r0/big.db": 2 * mib, "r1/mid.db": mib, "r1/small.db": 4096}
	tests := []struct {
		name    string
		budget  int64
		leftOut []string
	}{
		{"within", 8 * mib, nil},
		{"the largest", 5 * mib, []string{"r0/server.log"}},
		{"two", 2 * mib, []string{"r0/server.log", "r0/big.db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := all[1]
			dir := t.TempDir()
			st := openStore(t, dir, campaign)
			cluster := filepath.Join(dir, results.WorkDir, "w0")
			for name, n := range sizes {
				path := filepath.Join(cluster, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, bytes.Repeat([]byte("x"), n), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := results.Failure{Header: h, Schedule: s, Record: record(s.ID, oracle.Fail), Detail: "1 key differs", Cluster: cluster, ClusterBudget: tt.budget}
			if err := st.WriteFailure(f); err != nil {
				t.Fatal(err)
			}
			kept := filepath.Join(st.FailureDir(s.ID), results.ClusterDir)
			for name := range sizes {
				_, err := os.Stat(filepath.Join(kept, name))
				if left := slices.Contains(tt.leftOut, name); left != errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: stat %v, want left out %v", name, err, left)
				}
			}
			note, err := os.ReadFile(filepath.Join(kept, results.LeftOutText))
			switch {
			case tt.leftOut == nil && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("%s within the budget: %v %q, want none", results.LeftOutText, err, note)
			case tt.leftOut != nil:
				for _, name := range tt.leftOut {
					if !strings.Contains(string(note), name+"\t") {
						t.Errorf("%s does not name %s:\n%s", results.LeftOutText, name, note)
					}
				}
			}
			if fi, err := os.Stat(filepath.Join(st.FailureDir(s.ID), results.LogsDir, "r0", "server.log")); err != nil || fi.Size() != 3*mib {
				t.Errorf("logs/r0/server.log: %v, want it whole", err)
			}
		})
	}
}
