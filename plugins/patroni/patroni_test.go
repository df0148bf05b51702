package main

import (
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on Q/C/P: real Patroni clusters, each node
// a Patroni with its PostgreSQL, and one etcd per cluster; in process, and through the plugin
// binary as modulo runs it. A failover waits for the leader's key to expire (ttl, 8 s).
func TestConformance(t *testing.T) {
	plugintest.Run(t, plugintest.Config{
		DRM:         "qcp",
		New:         func() cem.CEM { return kit.New(about, &system{}) },
		Binary:      plugintest.Build(t, "."),
		Params:      plugintest.Params{Ops: 1, Replicas: 3},
		StepTimeout: 30 * time.Second,
	})
}

// TestConformancePartition runs the suite on Q/N/P, every crash a partition: each node in a
// network namespace of its own, cut off from its peers and from etcd.
func TestConformancePartition(t *testing.T) {
	plugintest.Run(t, plugintest.Config{
		DRM:         "qnp",
		New:         func() cem.CEM { return kit.New(about, &system{}) },
		Binary:      plugintest.Build(t, "."),
		Params:      plugintest.Params{Ops: 1, Replicas: 3},
		StepTimeout: 30 * time.Second,
	})
}
