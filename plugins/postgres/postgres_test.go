package main

import (
	"maps"
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
	plugintest.Servers(t)
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

func TestParseObservation(t *testing.T) {
	tests := []struct {
		row  string
		want map[string]string
	}{
		{"t\t0/4008A98\t2\n", map[string]string{"role": "standby", "epoch": "timeline 2", "position": "0/4008A98"}},
		{"f\t0/40066A0\t1", map[string]string{"role": "primary", "epoch": "timeline 1", "position": "0/40066A0"}},
		{"f\t0/1", map[string]string{"psql": `unexpected row "f\t0/1"`}},
	}
	for _, tt := range tests {
		if got := parseObservation(tt.row); !maps.Equal(got, tt.want) {
			t.Errorf("parseObservation(%q) = %v, want %v", tt.row, got, tt.want)
		}
	}
}
