package run

import (
	"context"
	"io"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/config"
)

// LoadConfig reads the configuration as `modulo run` does: opts.ConfigFile over the defaults,
// then the settings opts sets over the file. Other commands that run schedules (replay,
// shrink) fill in the settings they take.
func LoadConfig(opts *Options) (config.Config, error) { return loadConfig(opts) }

// PreparePlugin finds the plugin of d as `modulo run` does, starts it once to check that it
// realises d and that its configuration and the server binary it names are right, and checks the ports that cfg.Workers
// clusters of replicas need. The launcher it returns starts the plugin with its messages
// going to stderr.
func PreparePlugin(ctx context.Context, cfg config.Config, d drms.DRM, replicas int, stderr io.Writer) (cem.Info, executor.Launcher, error) {
	path, err := findPlugin(d.Plugin, cfg.PluginDir)
	if err != nil {
		return cem.Info{}, nil, err
	}
	launch := launcher(path, stderr)
	info, err := probe(ctx, launch, d, cfg.Plugins[d.Plugin])
	if err != nil {
		return cem.Info{}, nil, err
	}
	stride := executor.Stride(replicas, info.Capabilities.PortsPerReplica)
	if err := checkPorts(cfg.BasePort, cfg.Workers*stride); err != nil {
		return cem.Info{}, nil, err
	}
	return info, launch, nil
}
