package main

import (
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on real redis-server clusters for each of
// the plugin's DRMs: in process, and through the plugin binary as modulo runs it.
func TestConformance(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, ".")
	for _, drm := range about.DRMs {
		t.Run(drm, func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{
				DRM:    drm,
				New:    func() cem.CEM { return newPlugin() },
				Binary: bin,
			})
		})
	}
}
