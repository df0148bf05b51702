package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem"
)

// configGet reads one setting of replica i's running server.
func configGet(t *testing.T, spec cem.ClusterSpec, i int, name string) string {
	t.Helper()
	m, err := connect(t, spec, i).ConfigGet(context.Background(), name).Result()
	if err != nil {
		t.Fatalf("replica %d: CONFIG GET %s: %v", i, name, err)
	}
	return m[name]
}

// dataOf reads every key of database 0 of replica i's server.
func dataOf(t *testing.T, spec cem.ClusterSpec, i int) map[string]string {
	t.Helper()
	ctx := context.Background()
	c := connect(t, spec, i)
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("replica %d: KEYS: %v", i, err)
	}
	data := map[string]string{}
	for _, k := range keys {
		if data[k], err = c.Get(ctx, k).Result(); err != nil {
			t.Fatalf("replica %d: GET %s: %v", i, k, err)
		}
	}
	return data
}

// TestOutsideTreeLeftAlone: in S/CL/R a divergence writes into one tree; an online replica
// outside it (failure kind "-") is neither written to, nor failed, nor relinked.
func TestOutsideTreeLeftAlone(t *testing.T) {
	ctx := context.Background()
	// After step 4, replica 2 (restored by OFFLINE_2) is a primary of its own, and replica 1
	// follows 0 again; step 5 writes into 0's tree.
	s := parseSchedule(t, "D[1,0,0](c,c,c) C[0,1]<-,0,-> C[2]<-,0,->off2 C[0]<-,0,-> D[1,0,0](n,c,-) C[1]<-,0,->")
	spec := testSpec(t, "sclr", 2, 3, "")
	p := startCluster(t, spec)
	for i, st := range s.steps[:4] {
		if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: st.String()}); err != nil {
			t.Fatal(err)
		}
	}
	pid, before := serverPid(t, spec, 2), dataOf(t, spec, 2)
	rep, err := p.Apply(ctx, cem.Step{Index: 4, Transition: s.steps[4].String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Actions {
		if a.Replica == 2 {
			t.Errorf("the divergence acted on replica 2, outside its tree: %s", a.What)
		}
	}
	// It answers (so it runs and is not suspended), with the same process, data and role.
	if after, role := dataOf(t, spec, 2), infoField(t, spec, 2, "replication", "role"); serverPid(t, spec, 2) != pid || !maps.Equal(before, after) || role != "master" {
		t.Errorf("replica 2 changed: pid %d (was %d), data %v (was %v), role %s", serverPid(t, spec, 2), pid, after, before, role)
	}
}

// TestSSRPromotion: an S/S/R replica that takes a write while its source is suspended is
// promoted first (its servers stay read-only replicas otherwise), stays a master while its
// source is suspended, and is linked back, and resynced, once both are online: its own write
// is gone and every replica holds its source's data.
func TestSSRPromotion(t *testing.T) {
	// Replica 1 follows 0; step 3 writes into 1 alone, 0 suspended; step 4 brings 1 and 2
	// back with 0 still suspended; step 5 brings 0 back.
	s := parseSchedule(t, "D[0,0,1] C[0,1]<-,0,-> D[0,1,0] C[1,2]<-,0,1> C[0]<-,0,1>")
	spec := testSpec(t, "ssr", 2, 3, `probe = false`)
	var readOnly string
	r, err := runSchedule(t, newPlugin(), spec, s, func(*runResult) {
		readOnly = configGet(t, spec, 2, "replica-read-only")
	})
	if err != nil {
		t.Fatal(err)
	}
	// Step 3: promote, then write.
	var step3 []string
	for _, a := range r.reports[2].Actions {
		step3 = append(step3, strconv.Itoa(a.Replica)+" "+a.What)
	}
	got := strings.Join(step3, "; ")
	for _, want := range []string{"0 redis-0: SIGSTOP", "1 redis-1: promoted: it receives write 1 while its source, redis-0, is suspended",
		"1 redis-1: REPLICAOF NO ONE", `1 redis-1: write k3.1 = "test:k3.1"`} {
		if !strings.Contains(got, want) {
			t.Errorf("step 3 actions %q lack %q", got, want)
		}
	}
	// Step 4 links 2 to 1 but not 1 to its suspended source; step 5 does.
	relinked := func(step int, who int) bool {
		return slices.ContainsFunc(r.reports[step].Actions, func(a cem.Action) bool {
			return a.Replica == who && strings.Contains(a.What, "REPLICAOF 127.0.0.1")
		})
	}
	if relinked(3, 1) || !relinked(3, 2) || !relinked(4, 1) {
		t.Errorf("relinks: step 4 %+v, step 5 %+v", r.reports[3].Actions, r.reports[4].Actions)
	}
	if readOnly != "yes" {
		t.Errorf("replica-read-only = %q, want the server's default yes", readOnly)
	}
	if d := groupDifferences(r.snap); d != "" || groupCount(r.snap) != 1 {
		t.Errorf("replicas differ: %s", d)
	}
	for i, rd := range r.snap.Replicas {
		if _, ok := rd.Data["k3.1"]; ok {
			t.Errorf("replica %d kept the promoted replica's write, which its resync from replica 0 must drop: %v", i, rd.Data)
		}
	}
}

// TestKnobs runs a schedule with each setting and checks that it took effect on the real
// servers: in their configuration, in what they hold, in what they did.
func TestKnobs(t *testing.T) {
	const slr = "D[1,0,0] C[0,1]<-,0,1>"
	tests := []struct {
		name     string
		drm      string
		schedule string
		config   string
		check    func(t *testing.T, spec cem.ClusterSpec, r *runResult)
	}{
		{"appendonly off", "slr", slr, "appendonly = false", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			if got := configGet(t, spec, 0, "appendonly"); got != "no" {
				t.Errorf("appendonly = %q", got)
			}
			if _, err := os.Stat(filepath.Join(spec.Dir, "redis-0", "data", "appendonlydir")); err == nil {
				t.Error("an AOF was written")
			}
		}},
		{"appendfsync and save", "slr", slr, "appendfsync = \"always\"\nsave = \"3600 1 300 100\"", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			if got := configGet(t, spec, 1, "appendfsync"); got != "always" {
				t.Errorf("appendfsync = %q", got)
			}
			if got := configGet(t, spec, 1, "save"); got != "3600 1 300 100" {
				t.Errorf("save = %q", got)
			}
		}},
		{"backlog, timeout, hz", "slr", slr, "repl_backlog_size = \"2mb\"\nrepl_timeout = 7\nhz = 10", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			for name, want := range map[string]string{"repl-backlog-size": "2097152", "repl-timeout": "7", "hz": "10"} {
				if got := configGet(t, spec, 2, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		}},
		{"diskless sync", "slr", slr, "repl_diskless_sync = true\nrepl_diskless_sync_delay = 1", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			if got := configGet(t, spec, 0, "repl-diskless-sync"); got != "yes" {
				t.Errorf("repl-diskless-sync = %q", got)
			}
			if got := configGet(t, spec, 0, "repl-diskless-sync-delay"); got != "1" {
				t.Errorf("repl-diskless-sync-delay = %q", got)
			}
			log, err := os.ReadFile(filepath.Join(spec.Dir, "redis-0", "redis-0.log"))
			if err != nil || !strings.Contains(string(log), "replicas sockets") {
				t.Errorf("replica 0 did not sync its replica over the socket (%v):\n%s", err, log)
			}
		}},
		{"backlog ttl and the wait before the writes", "slr", "D[1,0,0]", "repl_backlog_ttl = 1\nwait_before_writes = \"3s\"", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			acts := r.actions()
			wait := slices.Index(acts, "-1 wait 3s before write 1: a link broke (failure wait)")
			write := slices.IndexFunc(acts, func(a string) bool { return strings.HasPrefix(a, "0 redis-0: write k1.1") })
			if wait < 0 || write < wait {
				t.Errorf("no wait before the write among %q", acts)
			}
			// Replica 0 lost its only replica: after the wait its backlog is gone.
			if c, b := infoField(t, spec, 0, "replication", "connected_slaves"), infoField(t, spec, 0, "replication", "repl_backlog_active"); c != "0" || b != "0" {
				t.Errorf("replica 0: connected_slaves %q, repl_backlog_active %q", c, b)
			}
		}},
		{"the wait after the writes", "slr", "D[1,0,0]", "wait_after_writes = \"1s\"", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			acts := r.actions()
			wait := slices.Index(acts, "-1 wait 1s after the writes: a link broke (failure wait)")
			write := slices.IndexFunc(acts, func(a string) bool { return strings.HasPrefix(a, "0 redis-0: write k1.1") })
			if write < 0 || wait < write {
				t.Errorf("no wait after the write among %q", acts)
			}
		}},
		{"no wait without broken links", "ssr", "D[0,1,1] C[0,1]<-,0,-> C[2]<-,0,1>", "wait_before_writes = \"3s\"\nwait_after_writes = \"3s\"\nprobe = false", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			// S/S/R starts with no links and suspends without breaking any.
			if slices.ContainsFunc(r.actions(), func(a string) bool { return strings.Contains(a, "failure wait") }) {
				t.Errorf("waited: %q", r.actions())
			}
		}},
		{"workload", "slr", slr, "value_size = 1000\nsets_per_write = 4\ndatabases = 3\nkey_prefix = \"x:\"", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			// 4 SETs a write, all in the database of the first divergence (1 mod 3); the
			// probe writes the same keys once more, with final values.
			want := []string{"db1/x:k1.1.1", "db1/x:k1.1.2", "db1/x:k1.1.3", "db1/x:k1.1.4"}
			for i, rd := range r.snap.Replicas {
				if got := slices.Sorted(maps.Keys(rd.Data)); !slices.Equal(got, want) {
					t.Errorf("replica %d holds %v, want the keys %v", i, got, want)
				}
				for k, v := range rd.Data {
					if len(v) != 1000 || !strings.HasPrefix(v, "test:k1.1:final.") {
						t.Errorf("replica %d: %s = %.40q (%d bytes)", i, k, v, len(v))
					}
				}
			}
		}},
		{"more databases than the default", "slr", slr, "databases = 20\nsets_per_write = 20", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			if got := configGet(t, spec, 0, "databases"); got != "20" {
				t.Errorf("databases = %q", got)
			}
			if _, ok := r.snap.Replicas[2].Data["db1/k1.1.20"]; !ok {
				t.Errorf("replica 2 lacks db1/k1.1.20: %v", slices.Sorted(maps.Keys(r.snap.Replicas[2].Data)))
			}
		}},
		{"probe on", "slr", slr, "", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			for i, rd := range r.snap.Replicas {
				if !maps.Equal(rd.Data, map[string]string{"k1.1": "test:k1.1:final"}) {
					t.Errorf("replica %d holds %v, want k1.1 rewritten by the probe", i, rd.Data)
				}
			}
		}},
		{"probe off", "slr", slr, "probe = false", func(t *testing.T, spec cem.ClusterSpec, r *runResult) {
			for i, rd := range r.snap.Replicas {
				if !maps.Equal(rd.Data, map[string]string{"k1.1": "test:k1.1"}) {
					t.Errorf("replica %d holds %v, want k1.1 as the divergence wrote it", i, rd.Data)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := testSpec(t, tt.drm, 1, 3, tt.config)
			r, err := runSchedule(t, newPlugin(), spec, parseSchedule(t, tt.schedule), func(r *runResult) { tt.check(t, spec, r) })
			if err != nil {
				t.Fatal(err)
			}
			if d := groupDifferences(r.snap); d != "" {
				t.Errorf("replicas differ: %s", d)
			}
		})
	}
}
