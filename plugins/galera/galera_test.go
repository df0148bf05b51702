package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on real Galera clusters: Q/C/G on three and
// on five nodes, and Q/C/G+partition (each failing node crashed or cut off, which takes every
// kind of transition that Q/N/G takes) on three, every node in a network namespace of its own
// on Galera's ports; in process, and through the plugin binary as modulo runs it.
//
// The clusters mostly wait (Galera drops a failed node after 5 s; a state transfer takes
// seconds): two run at once, the longest suite (five nodes, about 8 minutes) beside the other
// two in turn (about 5 and 7), so that the package takes about 12 minutes.
func TestConformance(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, ".")
	suite := func(name, drm string, replicas int) func() {
		return func() {
			t.Run(name, func(t *testing.T) {
				plugintest.Run(t, plugintest.Config{
					DRM:    drm,
					Params: plugintest.Params{Replicas: replicas},
					New:    func() cem.CEM { return kit.New(about, &system{}) },
					Binary: bin,
					// A node that a crash or a partition takes away holds up every commit until
					// the others drop it (evs.suspect_timeout, 5 s); a state transfer takes
					// seconds more.
					StepTimeout: time.Minute,
				})
			})
		}
	}
	lanes := [][]func(){
		{suite("five", "qcg", 5)},
		{suite("three", "qcg", 3), suite("partition", "qcg+partition", 3)},
	}
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, run := range lane {
				run()
			}
		}()
	}
	wg.Wait()
}

// TestForgottenPeer replays the schedule of testdata/forgotten-peer.txt: after step 4's
// pc.bootstrap of one node and the heal of another, the two never form one component (each
// had forgotten the other's address), so the step is not reached with the bootstrapped node
// a primary component of one; every node's log says what it forgot.
func TestForgottenPeer(t *testing.T) {
	plugintest.Servers(t)
	const drm = "qng"
	params := plugintest.Params{Ops: 2, Replicas: 3}
	id, steps := plugintest.KeptSchedule(t, filepath.Join("testdata", "forgotten-peer.txt"), drm, params)
	sys := &clusterOf{system: &system{}}
	p := kit.New(about, sys)
	spec, _ := plugintest.ReplayKept(t, p, nil, drm, params, id, nil)
	ctx := context.Background()
	// As a campaign does, the data is read after every convergence: the seconds a read takes
	// are part of the course (gmcast erases a forgotten address a while after forgetting it).
	for i := range steps[:3] {
		if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: steps[i].String()}); err != nil {
			t.Fatalf("step %d %s: %v", i+1, steps[i], err)
		}
		if steps[i].Kind == aem.Convergence {
			if _, err := p.Read(ctx); err != nil {
				t.Fatalf("read after step %d: %v", i+1, err)
			}
		}
	}
	_, err := p.Apply(ctx, cem.Step{Index: 3, Transition: steps[3].String()})
	if !cem.IsNotReached(err) {
		t.Fatalf("step 4 %s: %v; want it not reached", steps[3], err)
	}
	// The bootstrapped node is a primary component of one, asked itself: the wait's message
	// names whichever node its last poll found wanting (in one CI run, the bootstrapped node
	// not answering within 5 s).
	if alone := aloneInPrimary(ctx, t, sys.c.Replicas); alone == "" {
		t.Fatalf("step 4 %s: %v; no node is a synced primary component of one", steps[3], err)
	} else {
		t.Logf("after step 4, %s is a synced primary component of one", alone)
	}
	forgot := 0
	for i := range params.Replicas {
		name := fmt.Sprintf("galera-%d", i)
		log, rerr := os.ReadFile(filepath.Join(spec.Dir, name, name+".log"))
		if rerr != nil {
			t.Fatal(rerr)
		}
		if strings.Contains(string(log), "WSREP: deleting entry tcp://") {
			forgot++
		}
	}
	if forgot < 2 {
		t.Errorf("%d nodes' logs say they deleted a peer's address, want 2 at least", forgot)
	}
	t.Logf("step 4: %v", err)
}

// clusterOf is the Galera system, keeping the cluster Prepare was given, so that a test can ask
// a node itself.
type clusterOf struct {
	*system
	c *kit.Cluster
}

func (s *clusterOf) Prepare(ctx context.Context, c *kit.Cluster) error {
	s.c = c
	return s.system.Prepare(ctx, c)
}

// aloneInPrimary names the node that says it is a synced primary component of one, asking every
// node for up to 30 s (a node busy with its peers may not answer at once), or "" for none.
func aloneInPrimary(ctx context.Context, t *testing.T, nodes []*kit.Replica) string {
	t.Helper()
	var seen []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		seen = seen[:0]
		for _, r := range nodes {
			st, err := readStatus(ctx, r)
			if err == nil && st.synced() && st["cluster_size"] == "1" {
				return r.Name
			}
			seen = append(seen, fmt.Sprintf("%s: %v %v", r.Name, st, err))
		}
	}
	t.Logf("the nodes said: %s", strings.Join(seen, "; "))
	return ""
}
