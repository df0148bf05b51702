package cmdutil

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/config"
)

// Settings are the settings that replay and shrink take as `modulo run` does: the
// configuration file, and flags over it (set only for the flags given).
type Settings struct {
	ConfigFile string
	config.Overrides
}

// EphemeralFlag and EphemeralUsage are the flag that lets clusters use the kernel's ephemeral
// port range, which run, replay and shrink share.
const (
	EphemeralFlag  = "allow-ephemeral-ports"
	EphemeralUsage = "let clusters use ports in the kernel's ephemeral range, with a warning (for hosts whose range leaves no room)"
)

// settingFlags holds the values of the flags until the command knows which were given.
type settingFlags struct {
	pluginDir   string
	basePort    int
	stepTimeout time.Duration
	ephemeral   bool
}

// AddSettingFlags adds --config, --plugin-dir, --base-port and --step-timeout to cmd; call
// the function it returns in RunE to set s from the flags given.
func AddSettingFlags(cmd *cobra.Command, s *Settings) func() {
	var v settingFlags
	f := cmd.Flags()
	f.StringVar(&s.ConfigFile, "config", "", "read settings from the TOML `FILE`, its plugin table instead of the campaign's")
	f.StringVar(&v.pluginDir, "plugin-dir", "", "look for the plugin binary in `DIR` first")
	f.IntVar(&v.basePort, "base-port", 0, "first `PORT` of the cluster's range on 127.0.0.1, for a plugin that runs on loopback, not in network namespaces (default: the campaign's, else 20000)")
	f.DurationVar(&v.stepTimeout, "step-timeout", 0, "how long a step may take to reach its state (default: the campaign's, else "+cem.DefaultStepTimeout.String()+")")
	f.BoolVar(&v.ephemeral, EphemeralFlag, false, EphemeralUsage)
	return func() {
		if f.Changed(EphemeralFlag) {
			s.AllowEphemeralPorts = &v.ephemeral
		}
		if f.Changed("plugin-dir") {
			s.PluginDir = &v.pluginDir
		}
		if f.Changed("base-port") {
			s.BasePort = &v.basePort
		}
		if f.Changed("step-timeout") {
			s.StepTimeout = &v.stepTimeout
		}
	}
}

// AddPluginDirFlag adds --plugin-dir to a command that names a DRM but runs no plugin (gen,
// show, results, report): the root command adds the directory to the plugins it asks for the
// DRMs they declare. A campaign directory needs none: it holds its DRM's declaration.
func AddPluginDirFlag(cmd *cobra.Command) {
	cmd.Flags().String("plugin-dir", "", "look for plugins, and the DRMs they declare, in `DIR` first")
}
