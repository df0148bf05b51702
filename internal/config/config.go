// Package config reads modulo's TOML configuration: the settings of `modulo run` and one table
// per plugin, which modulo passes to the plugin unread.
//
//	results_dir = "modulo-results"  # one directory per campaign is made under it
//	base_port = 20000               # first port of worker 0's range
//	workers = 2                     # schedules run at once, each on a cluster of its own
//	step_timeout = "30s"            # how long a step may take to reach its state
//	plugin_dir = "bin"              # where modulo-plugin-<name> binaries are looked for first
//	check = "every-convergence"     # judge after every convergence and at the end; "end": at the end only
//	share_prefixes = true           # restore saved clusters instead of replaying shared prefixes
//	share_budget_mb = 1024          # disk a worker's saved clusters may take
//	failure_budget_mb = 256         # disk a failure folder's copy of its cluster may take
//	min_free_mb = 1024              # free disk below which a campaign stops, its results intact
//
//	[redis]                         # handed to the redis plugin, which checks its own keys
//	server = "/usr/bin/redis-server"
//
// Every setting has a default, so no file is needed; a key or table the file should not hold
// is an error that names it.
package config

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/oracle"
)

// Config is modulo run's configuration.
type Config struct {
	// ResultsDir holds one results directory per campaign, named after its schedule file.
	ResultsDir string
	// BasePort is the first port of worker 0; worker k's range follows worker k-1's.
	BasePort int
	// Workers is how many schedules run at once, each on a cluster of its own.
	Workers int
	// StepTimeout bounds each wait for a cluster to reach the state a step needs.
	StepTimeout time.Duration
	// PluginDir, when set, is searched first for plugin binaries.
	PluginDir string
	// Check says when schedules are judged.
	Check oracle.Check
	// SharePrefixes lets a campaign restore a cluster saved after a prefix that its schedules
	// share instead of replaying the prefix, where the plugin can; ShareBudgetMB bounds the
	// disk (MiB) that each worker's saved clusters take.
	SharePrefixes bool
	ShareBudgetMB int
	// FailureBudgetMB bounds the disk (MiB) that a failure folder's copy of its cluster takes;
	// MinFreeMB is the free disk (MiB) of the results directory below which a campaign stops
	// before its next schedule, its results intact.
	FailureBudgetMB int
	MinFreeMB       int
	// AllowEphemeralPorts lets clusters use ports in the kernel's ephemeral range, with a
	// warning, on a host whose range leaves no room outside it.
	AllowEphemeralPorts bool
	// Plugins holds each plugin's table, by plugin name, re-encoded as TOML; a plugin without a
	// table has none here and uses its own defaults.
	Plugins map[string][]byte
}

// Keys of the top level.
const (
	keyResultsDir  = "results_dir"
	keyBasePort    = "base_port"
	keyWorkers     = "workers"
	keyStepTimeout = "step_timeout"
	keyPluginDir   = "plugin_dir"
	keyCheck       = "check"
	keyEphemeral   = "allow_ephemeral_ports"
	keyShare       = "share_prefixes"
	keyShareBudget = "share_budget_mb"
	keyFailBudget  = "failure_budget_mb"
	keyMinFree     = "min_free_mb"
)

// MaxWorkers bounds workers: every worker runs a whole cluster.
const MaxWorkers = 256

// Default returns the configuration used when there is no file: results under
// ./modulo-results, ports from 20000 (clear of the usual defaults of Redis, ZooKeeper and
// MongoDB, and below Linux's ephemeral range from 32768), one worker per CPU.
func Default() Config {
	return Config{
		ResultsDir:      "modulo-results",
		BasePort:        20000,
		Workers:         runtime.NumCPU(),
		StepTimeout:     cem.DefaultStepTimeout,
		Check:           oracle.EveryConvergence,
		SharePrefixes:   true,
		ShareBudgetMB:   1024,
		FailureBudgetMB: 256,
		MinFreeMB:       1024,
	}
}

// Load reads the file at path over the defaults; an empty path gives the defaults.
func Load(path string) (Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a configuration from data over the defaults; name is used in messages.
func Parse(data []byte, name string) (Config, error) {
	c := Default()
	settings := settingsDoc{
		ResultsDir:  &c.ResultsDir,
		BasePort:    &c.BasePort,
		Workers:     &c.Workers,
		StepTimeout: &c.StepTimeout,
		PluginDir:   &c.PluginDir,
		Check:       (*string)(&c.Check),
		Ephemeral:   &c.AllowEphemeralPorts,
		Share:       &c.SharePrefixes,
		ShareBudget: &c.ShareBudgetMB,
		FailBudget:  &c.FailureBudgetMB,
		MinFree:     &c.MinFreeMB,
	}
	md, err := toml.Decode(string(data), &settings)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	drms.AddPluginDir(c.PluginDir) // its plugins' DRMs and tables are known
	// The built-in plugins' tables need no plugin started; another table may be the table of a
	// plugin that declares its DRM, which only asking the plugins found tells.
	plugins := pluginNames(drms.Builtin())
	if slices.ContainsFunc(md.Undecoded(), func(k toml.Key) bool { return !slices.Contains(plugins, k[0]) }) {
		all, _ := drms.All() // a plugin that cannot say what it declares has no table; its DRM's lookup says why
		plugins = pluginNames(all)
	}
	// The plugin tables are the plugins' to check: only keys outside them are unknown here.
	for _, k := range md.Undecoded() {
		if !slices.Contains(plugins, k[0]) {
			return Config{}, fmt.Errorf("%s: unknown key %q (settings: %s; plugin tables: %s)",
				name, k.String(), strings.Join(settingKeys(), ", "), strings.Join(plugins, ", "))
		}
	}
	var tables map[string]any
	if _, err := toml.Decode(string(data), &tables); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	// TOML reads an integer into a duration as nanoseconds: "step_timeout = 30" would give
	// every step 30 ns.
	if v, ok := tables[keyStepTimeout].(int64); ok {
		return Config{}, fmt.Errorf("%s: %s must be a duration with its unit, such as \"30s\" or \"2m\", got the integer %d", name, keyStepTimeout, v)
	}
	for _, p := range plugins {
		v, ok := tables[p]
		if !ok {
			continue
		}
		table, ok := v.(map[string]any)
		if !ok {
			return Config{}, fmt.Errorf("%s: %s must be a table: a line [%s] followed by its keys", name, p, p)
		}
		var b bytes.Buffer
		if err := toml.NewEncoder(&b).Encode(table); err != nil {
			return Config{}, fmt.Errorf("%s: [%s]: re-encode: %w", name, p, err)
		}
		if c.Plugins == nil {
			c.Plugins = map[string][]byte{}
		}
		c.Plugins[p] = b.Bytes()
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// settingsDoc is the top level of a file; its pointers aim at the defaults, which a key present
// in the file overwrites.
type settingsDoc struct {
	ResultsDir  *string        `toml:"results_dir"`
	BasePort    *int           `toml:"base_port"`
	Workers     *int           `toml:"workers"`
	StepTimeout *time.Duration `toml:"step_timeout"`
	PluginDir   *string        `toml:"plugin_dir"`
	Check       *string        `toml:"check"`
	Ephemeral   *bool          `toml:"allow_ephemeral_ports"`
	Share       *bool          `toml:"share_prefixes"`
	ShareBudget *int           `toml:"share_budget_mb"`
	FailBudget  *int           `toml:"failure_budget_mb"`
	MinFree     *int           `toml:"min_free_mb"`
}

func settingKeys() []string {
	return []string{keyResultsDir, keyBasePort, keyWorkers, keyStepTimeout, keyPluginDir, keyCheck, keyEphemeral, keyShare, keyShareBudget, keyFailBudget, keyMinFree}
}

// pluginNames lists, sorted, the plugins that realise ds: the tables a file may hold.
func pluginNames(ds []drms.DRM) []string {
	var ns []string
	for _, d := range ds {
		if !slices.Contains(ns, d.Plugin) {
			ns = append(ns, d.Plugin)
		}
	}
	slices.Sort(ns)
	return ns
}

// Validate reports settings no run can use; flags are checked with it after they override
// the file.
func (c Config) Validate() error {
	switch {
	case c.ResultsDir == "":
		return fmt.Errorf("%s must not be empty", keyResultsDir)
	case c.BasePort < 1024 || c.BasePort > 65535:
		return fmt.Errorf("%s must be between 1024 and 65535, got %d", keyBasePort, c.BasePort)
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return fmt.Errorf("%s must be between 1 and %d, got %d", keyWorkers, MaxWorkers, c.Workers)
	case c.StepTimeout <= 0:
		return fmt.Errorf("%s must be positive, got %v", keyStepTimeout, c.StepTimeout)
	case c.ShareBudgetMB < 1:
		return fmt.Errorf("%s must be at least 1, got %d", keyShareBudget, c.ShareBudgetMB)
	case c.FailureBudgetMB < 1:
		return fmt.Errorf("%s must be at least 1, got %d", keyFailBudget, c.FailureBudgetMB)
	case c.MinFreeMB < 0:
		return fmt.Errorf("%s must not be negative, got %d", keyMinFree, c.MinFreeMB)
	}
	if _, err := oracle.ParseCheck(string(c.Check)); err != nil || c.Check == "" {
		return fmt.Errorf("%s must be %q or %q, got %q", keyCheck, oracle.EveryConvergence, oracle.End, c.Check)
	}
	return nil
}
