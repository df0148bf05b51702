package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on real etcd clusters: in process, and
// through the plugin binary as modulo runs it. It fails until main.go is filled in.
func TestConformance(t *testing.T) {
	plugintest.Run(t, plugintest.Config{
		DRM:    "qce",
		New:    func() cem.CEM { return kit.New(about, &system{}) },
		Binary: plugintest.Build(t, "."),
	})
}

// TestConformancePartition runs the suite on Q/N/E, every crash a partition, and on Q/CN/E,
// each failing member crashed or cut off: every member in a network namespace of its own, on
// etcd's own ports.
func TestConformancePartition(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, ".")
	for _, drm := range []string{"qne", "qcne"} {
		t.Run(drm, func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{
				DRM:    drm,
				New:    func() cem.CEM { return kit.New(about, &system{}) },
				Binary: bin,
			})
		})
	}
}

// TestConformancePowerLoss runs the suite on Q/P/E, every crash a power loss: the kit's file
// systems under every member's data directory, restored clusters and the plugin's death with
// them mounted.
func TestConformancePowerLoss(t *testing.T) {
	plugintest.Servers(t)
	plugintest.Run(t, plugintest.Config{
		DRM:    "qpe",
		New:    func() cem.CEM { return kit.New(about, &system{}) },
		Binary: plugintest.Build(t, "."),
	})
}

// TestConformanceDiskFaults runs the suite on Q/C/E with disk errors and corruption, each failing
// member crashed, its disk failing under it (EIO) or one file of its state corrupted, a
// minority's disks at most broken at once.
func TestConformanceDiskFaults(t *testing.T) {
	plugintest.Servers(t)
	plugintest.Run(t, plugintest.Config{
		DRM:    "qce+disk-error+corruption",
		New:    func() cem.CEM { return kit.New(about, &system{}) },
		Binary: plugintest.Build(t, "."),
	})
}

// TestConformancePause runs the suite on Q/C/E+pause, each failing member crashed or paused
// (SIGSTOP until the convergence that brings it back): a paused leader goes on in its old term
// after the others elected another.
func TestConformancePause(t *testing.T) {
	plugintest.Servers(t)
	plugintest.Run(t, plugintest.Config{
		DRM:    "qce+pause",
		New:    func() cem.CEM { return kit.New(about, &system{}) },
		Binary: plugintest.Build(t, "."),
	})
}
