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

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
)

// parseSchedule reads a schedule's transitions from their text, as a schedule file has them.
func parseSchedule(t testing.TB, text string) schedule {
	t.Helper()
	s := schedule{id: "test"}
	for _, f := range strings.Fields(text) {
		tr, err := aem.ParseTransition(f)
		if err != nil {
			t.Fatal(err)
		}
		s.steps = append(s.steps, tr)
	}
	return s
}

// runResult is a schedule run on an in-process plugin: what Start and each step did, and the data
// read at the end.
type runResult struct {
	start   []cem.Action
	reports []cem.StepReport
	snap    cem.Snapshot
}

// runAndInspect runs schedule s on a fresh cluster and calls inspect, if any, after Read with
// the cluster still up; the cluster is torn down when the test ends.
func runAndInspect(t *testing.T, spec cem.ClusterSpec, s schedule, inspect func(p *Plugin, r *runResult)) *runResult {
	t.Helper()
	ctx := context.Background()
	p := startCluster(t, spec)
	r := &runResult{start: slices.Clone(p.actions)}
	for i, st := range s.steps {
		rep, err := p.Apply(ctx, cem.Step{Index: i, Transition: st.String()})
		r.reports = append(r.reports, rep)
		if err != nil {
			t.Fatalf("step %d %s: %v", i+1, st, err)
		}
	}
	snap, err := p.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.snap = snap
	if inspect != nil {
		inspect(p, r)
	}
	return r
}

// actions lists what a run did, one "replica what" a line.
func (r *runResult) actions() []string {
	var out []string
	for _, a := range r.start {
		out = append(out, strconv.Itoa(a.Replica)+" "+a.What)
	}
	for _, rep := range r.reports {
		for _, a := range rep.Actions {
			out = append(out, strconv.Itoa(a.Replica)+" "+a.What)
		}
	}
	return out
}

// configGet reads one setting of replica i's running server.
func configGet(t *testing.T, p *Plugin, i int, name string) string {
	t.Helper()
	m, err := p.reps[i].client.ConfigGet(context.Background(), name).Result()
	if err != nil {
		t.Fatalf("replica %d: CONFIG GET %s: %v", i, name, err)
	}
	return m[name]
}

// TestOutsideTreeLeftAlone: in S/CL/R a divergence writes into one tree; an online replica
// outside it (failure kind "-") is neither written to, nor failed, nor relinked.
func TestOutsideTreeLeftAlone(t *testing.T) {
	ctx := context.Background()
	s := parseSchedule(t, "D[1,0,0](n,c,c) C[1]<-,-,-> D[1,0,0](n,-,-) C[2]<-,-,->")
	p := startCluster(t, testSpec(t, "sclr", 2, 3, ""))
	for i, st := range s.steps[:2] {
		if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: st.String()}); err != nil {
			t.Fatal(err)
		}
	}
	// Replica 1 is online, a primary of its own: outside replica 0's tree.
	r1 := p.reps[1]
	pid, before := r1.proc.Pid, map[string]string{}
	if err := r1.readDB(ctx, 0, before); err != nil {
		t.Fatal(err)
	}
	rep, err := p.Apply(ctx, cem.Step{Index: 2, Transition: s.steps[2].String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Actions {
		if a.Replica == 1 {
			t.Errorf("the divergence acted on replica 1, outside its tree: %s", a.What)
		}
	}
	after := map[string]string{}
	if err := r1.readDB(ctx, 0, after); err != nil {
		t.Fatal(err)
	}
	if !r1.running() || r1.stopped || r1.proc.Pid != pid || r1.link != aem.NoSource || !maps.Equal(before, after) {
		t.Errorf("replica 1 changed: running %v, suspended %v, pid %d (was %d), link %d, data %v (was %v)",
			r1.running(), r1.stopped, r1.proc.Pid, pid, r1.link, after, before)
	}
	if info, err := r1.info(ctx, "replication"); err != nil || info["role"] != "master" {
		t.Errorf("replica 1's role: %v, %v", info["role"], err)
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
	var readOnly string
	r := runAndInspect(t, testSpec(t, "ssr", 2, 3, `probe = false`), s, func(p *Plugin, r *runResult) {
		readOnly = configGet(t, p, 2, "replica-read-only")
	})
	// Step 3: promote, then write.
	var step3 []string
	for _, a := range r.reports[2].Actions {
		step3 = append(step3, strconv.Itoa(a.Replica)+" "+a.What)
	}
	got := strings.Join(step3, "; ")
	for _, want := range []string{"0 SIGSTOP", "1 promote: it takes k3.1.1 while its source, replica 0, is suspended", "1 REPLICAOF NO ONE", "1 SET db0/k3.1.1 test:3.1.1"} {
		if !strings.Contains(got, want) {
			t.Errorf("step 3 actions %q lack %q", got, want)
		}
	}
	// Step 4 links 2 to 1 but not 1 to its suspended source; step 5 does.
	relinked := func(step int, who, what string) bool {
		return slices.ContainsFunc(r.reports[step].Actions, func(a cem.Action) bool {
			return strconv.Itoa(a.Replica) == who && strings.HasPrefix(a.What, what)
		})
	}
	if relinked(3, "1", "REPLICAOF 127.0.0.1") || !relinked(3, "2", "REPLICAOF 127.0.0.1") || !relinked(4, "1", "REPLICAOF 127.0.0.1") {
		t.Errorf("relinks: step 4 %+v, step 5 %+v", r.reports[3].Actions, r.reports[4].Actions)
	}
	if readOnly != "yes" {
		t.Errorf("replica-read-only = %q, want the server's default yes", readOnly)
	}
	if d := groupDifferences(r.snap); d != "" || groupCount(r.snap) != 1 {
		t.Errorf("replicas differ: %s", d)
	}
	for i, rd := range r.snap.Replicas {
		if _, ok := rd.Data["db0/k3.1.1"]; ok {
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
		ops      int
		schedule string
		config   string
		check    func(t *testing.T, p *Plugin, r *runResult)
	}{
		{"appendonly off", "slr", 1, slr, "appendonly = false", func(t *testing.T, p *Plugin, r *runResult) {
			if got := configGet(t, p, 0, "appendonly"); got != "no" {
				t.Errorf("appendonly = %q", got)
			}
			if _, err := os.Stat(filepath.Join(p.reps[0].dir, "appendonlydir")); err == nil {
				t.Error("an AOF was written")
			}
		}},
		{"appendfsync and save", "slr", 1, slr, "appendfsync = \"always\"\nsave = \"3600 1 300 100\"", func(t *testing.T, p *Plugin, r *runResult) {
			if got := configGet(t, p, 1, "appendfsync"); got != "always" {
				t.Errorf("appendfsync = %q", got)
			}
			if got := configGet(t, p, 1, "save"); got != "3600 1 300 100" {
				t.Errorf("save = %q", got)
			}
		}},
		{"backlog, timeout, hz", "slr", 1, slr, "repl_backlog_size = \"2mb\"\nrepl_timeout = 7\nhz = 10", func(t *testing.T, p *Plugin, r *runResult) {
			for name, want := range map[string]string{"repl-backlog-size": "2097152", "repl-timeout": "7", "hz": "10"} {
				if got := configGet(t, p, 2, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		}},
		{"diskless sync", "slr", 1, slr, "repl_diskless_sync = true\nrepl_diskless_sync_delay = 1", func(t *testing.T, p *Plugin, r *runResult) {
			if got := configGet(t, p, 0, "repl-diskless-sync"); got != "yes" {
				t.Errorf("repl-diskless-sync = %q", got)
			}
			if got := configGet(t, p, 0, "repl-diskless-sync-delay"); got != "1" {
				t.Errorf("repl-diskless-sync-delay = %q", got)
			}
			log, err := os.ReadFile(p.reps[0].proc.LogPath)
			if err != nil || !strings.Contains(string(log), "replicas sockets") {
				t.Errorf("replica 0 did not sync its replica over the socket (%v):\n%s", err, log)
			}
		}},
		{"backlog ttl and failure wait", "slr", 1, "D[1,0,0]", "repl_backlog_ttl = 1\nfailure_wait = \"3s\"", func(t *testing.T, p *Plugin, r *runResult) {
			if !slices.Contains(r.actions(), "-1 wait 3s after the broken links (failure_wait)") {
				t.Errorf("no wait among %q", r.actions())
			}
			// Replica 0 lost its only replica: after the wait its backlog is gone.
			info, err := p.reps[0].info(context.Background(), "replication")
			if err != nil || info["connected_slaves"] != "0" || info["repl_backlog_active"] != "0" {
				t.Errorf("replica 0: connected_slaves %q, repl_backlog_active %q (%v)", info["connected_slaves"], info["repl_backlog_active"], err)
			}
		}},
		{"no wait without broken links", "ssr", 1, "D[0,1,1] C[0,1]<-,0,-> C[2]<-,0,1>", "failure_wait = \"3s\"\nprobe = false", func(t *testing.T, p *Plugin, r *runResult) {
			// S/S/R starts with no links and suspends without breaking any.
			if slices.ContainsFunc(r.actions(), func(a string) bool { return strings.Contains(a, "failure_wait") }) {
				t.Errorf("waited: %q", r.actions())
			}
		}},
		{"workload", "slr", 1, slr, "value_size = 1000\nsets_per_write = 4\ndatabases = 3\nkey_prefix = \"x:\"", func(t *testing.T, p *Plugin, r *runResult) {
			// 4 SETs spread over databases 0, 1, 2, 0; the probe writes into each database.
			want := map[string]bool{"db0/x:1.1.1": true, "db1/x:1.1.2": true, "db2/x:1.1.3": true, "db0/x:1.1.4": true,
				"db0/x:probe": false, "db1/x:probe": false, "db2/x:probe": false}
			for i, rd := range r.snap.Replicas {
				if len(rd.Data) != len(want) {
					t.Errorf("replica %d holds %v, want the keys %v", i, slices.Sorted(maps.Keys(rd.Data)), want)
				}
				for k, sized := range want {
					v, ok := rd.Data[k]
					if !ok || sized && (len(v) != 1000 || !strings.HasPrefix(v, "test:1.1.")) {
						t.Errorf("replica %d: %s = %.40q (%d bytes)", i, k, v, len(v))
					}
				}
			}
		}},
		{"more databases than the default", "slr", 1, slr, "databases = 20\nsets_per_write = 20", func(t *testing.T, p *Plugin, r *runResult) {
			if got := configGet(t, p, 0, "databases"); got != "20" {
				t.Errorf("databases = %q", got)
			}
			if _, ok := r.snap.Replicas[2].Data["db19/k1.1.20"]; !ok {
				t.Errorf("replica 2 lacks db19/k1.1.20: %v", slices.Sorted(maps.Keys(r.snap.Replicas[2].Data)))
			}
		}},
		{"probe on", "slr", 1, slr, "", func(t *testing.T, p *Plugin, r *runResult) {
			for i, rd := range r.snap.Replicas {
				if rd.Data["db0/kprobe"] != "test:probe.0" {
					t.Errorf("replica %d lacks the probe: %v", i, rd.Data)
				}
			}
		}},
		{"probe off", "slr", 1, slr, "probe = false", func(t *testing.T, p *Plugin, r *runResult) {
			for i, rd := range r.snap.Replicas {
				if _, ok := rd.Data["db0/kprobe"]; ok {
					t.Errorf("replica %d holds a probe: %v", i, rd.Data)
				}
			}
		}},
		{"server by path", "slr", 1, slr, `server = "/usr/bin/redis-server"`, func(t *testing.T, p *Plugin, r *runResult) {
			if p.server != "/usr/bin/redis-server" || p.reps[0].dialect.ReplicaOf != "REPLICAOF" {
				t.Errorf("server %s, dialect %+v", p.server, p.reps[0].dialect)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runAndInspect(t, testSpec(t, tt.drm, tt.ops, 3, tt.config), parseSchedule(t, tt.schedule), func(p *Plugin, r *runResult) {
				tt.check(t, p, r)
			})
			if d := groupDifferences(r.snap); d != "" {
				t.Errorf("replicas differ: %s", d)
			}
		})
	}
}
