package config

import (
	"bytes"
	"fmt"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/modulo-testing/modulo/oracle"
)

// Overrides are settings given on the command line, over the file's: a nil field keeps the
// file's value. run, replay and shrink take them alike.
type Overrides struct {
	ResultsDir  *string
	PluginDir   *string
	Workers     *int
	BasePort    *int
	StepTimeout *time.Duration
	Check       *oracle.Check
	// AllowEphemeralPorts, when set, overrides allow_ephemeral_ports.
	AllowEphemeralPorts *bool
	SharePrefixes       *bool
}

// LoadWith reads the file at path (the defaults when empty), sets what o overrides and
// validates the result.
func LoadWith(path string, o Overrides) (Config, error) {
	c, err := Load(path)
	if err != nil {
		return c, err
	}
	set(&c.ResultsDir, o.ResultsDir)
	set(&c.PluginDir, o.PluginDir)
	set(&c.Workers, o.Workers)
	set(&c.BasePort, o.BasePort)
	set(&c.StepTimeout, o.StepTimeout)
	set(&c.Check, o.Check)
	set(&c.AllowEphemeralPorts, o.AllowEphemeralPorts)
	set(&c.SharePrefixes, o.SharePrefixes)
	return c, c.Validate()
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// SetPreset sets the preset key of plugin's table to name, which the plugin resolves (and
// rejects when it knows no such preset).
func (c *Config) SetPreset(plugin, name string) error {
	table := map[string]any{}
	if _, err := toml.Decode(string(c.Plugins[plugin]), &table); err != nil {
		return fmt.Errorf("[%s]: %w", plugin, err)
	}
	table["preset"] = name
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(table); err != nil {
		return fmt.Errorf("[%s]: set preset: %w", plugin, err)
	}
	if c.Plugins == nil {
		c.Plugins = map[string][]byte{}
	}
	c.Plugins[plugin] = b.Bytes()
	return nil
}
