package main

import (
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on real PostgreSQL clusters of two and three
// servers: in process, and through the plugin binary as modulo runs it. The step timeout is the
// executor's default: a server rewound onto an idle primary reaches a consistent state only
// when the primary next flushes its WAL, about 10 s later, over the suite's default.
func TestConformance(t *testing.T) {
	bin := plugintest.Build(t, ".")
	for _, n := range []int{2, 3} {
		t.Run(map[int]string{2: "two", 3: "three"}[n], func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{
				DRM:         "pgl",
				Params:      aem.Params{Ops: 1, Replicas: n},
				New:         func() cem.CEM { return kit.New(about, &system{}) },
				Binary:      bin,
				StepTimeout: cem.DefaultStepTimeout,
			})
		})
	}
}
