package main

import (
	"sync"
	"testing"
	"time"

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
