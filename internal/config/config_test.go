package config

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/oracle"
)

func TestLoadExample(t *testing.T) {
	c, err := Load("testdata/modulo.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.ResultsDir != "/var/tmp/modulo-results" || c.BasePort != 25000 || c.Workers != 3 || c.StepTimeout != 45*time.Second || c.PluginDir != "bin" {
		t.Errorf("settings = %+v", c)
	}
	wantRedis := "extra_args = [\"--save\", \"\"]\nserver = \"/usr/bin/redis-server\"\n"
	if got := string(c.Plugins["redis"]); got != wantRedis {
		t.Errorf("[redis] = %q, want %q", got, wantRedis)
	}
	if got := string(c.Plugins["zookeeper"]); got != "java = \"/usr/bin/java\"\n" {
		t.Errorf("[zookeeper] = %q", got)
	}
	if c.Plugins["mongodb"] != nil {
		t.Errorf("[mongodb] = %q, want none", c.Plugins["mongodb"])
	}
}

func TestLoadNoFile(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{ResultsDir: "modulo-results", BasePort: 20000, Workers: runtime.NumCPU(), StepTimeout: 30 * time.Second}
	if c.ResultsDir != want.ResultsDir || c.BasePort != want.BasePort || c.Workers != want.Workers || c.StepTimeout != want.StepTimeout || c.PluginDir != "" || c.Plugins != nil {
		t.Errorf("defaults = %+v, want %+v", c, want)
	}
	if _, err := Load("testdata/missing.toml"); err == nil || !strings.HasPrefix(err.Error(), "read config: open testdata/missing.toml: ") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParse(t *testing.T) {
	const known = " (settings: results_dir, base_port, workers, step_timeout, plugin_dir, check, allow_ephemeral_ports, share_prefixes, share_budget_mb, failure_budget_mb, min_free_mb; plugin tables: etcd, mongodb, redis, zookeeper)"
	tests := []struct {
		name    string
		file    string
		check   func(Config) bool
		wantErr string
	}{
		{name: "empty", file: "", check: func(c Config) bool { return c.BasePort == 20000 && c.Workers == runtime.NumCPU() }},
		{name: "one key over the defaults", file: "workers = 1", check: func(c Config) bool { return c.Workers == 1 && c.StepTimeout == 30*time.Second }},
		{name: "duration without a unit", file: "step_timeout = 30", wantErr: `c.toml: step_timeout must be a duration with its unit, such as "30s" or "2m", got the integer 30`},
		{name: "empty plugin table", file: "[redis]", check: func(c Config) bool { b, ok := c.Plugins["redis"]; return ok && len(b) == 0 }},
		{name: "plugin keys are the plugin's", file: "[redis]\nanything = 1\n[redis.sub]\nx = true", check: func(c Config) bool {
			return string(c.Plugins["redis"]) == "anything = 1\n\n[sub]\n  x = true\n"
		}},
		{name: "unknown key", file: "worker = 2", wantErr: `c.toml: unknown key "worker"` + known},
		{name: "unknown table", file: "[cassandra]\nserver = 'x'", wantErr: `c.toml: unknown key "cassandra"` + known},
		{name: "key of a setting's table", file: "[workers]\nn = 1", wantErr: `c.toml: toml: line 1 (last key "workers"): incompatible types: TOML value has type map[string]any; destination has type integer`},
		{name: "plugin not a table", file: "redis = 'x'", wantErr: "c.toml: redis must be a table: a line [redis] followed by its keys"},
		{name: "wrong type", file: "base_port = '7000'", wantErr: `c.toml: toml: line 1 (last key "base_port"): incompatible types: TOML value has type string; destination has type integer`},
		{name: "bad duration", file: "step_timeout = '5 s'", wantErr: `c.toml: toml: line 1 (last key "step_timeout"): invalid duration: "5 s"`},
		{name: "syntax", file: "workers = ", wantErr: `c.toml: toml: line 1 (last key "workers"): unexpected EOF; expected value`},
		{name: "port too low", file: "base_port = 80", wantErr: "c.toml: base_port must be between 1024 and 65535, got 80"},
		{name: "no workers", file: "workers = 0", wantErr: "c.toml: workers must be between 1 and 256, got 0"},
		{name: "negative timeout", file: "step_timeout = '-1s'", wantErr: "c.toml: step_timeout must be positive, got -1s"},
		{name: "budgets", file: "failure_budget_mb = 64\nmin_free_mb = 0", check: func(c Config) bool { return c.FailureBudgetMB == 64 && c.MinFreeMB == 0 }},
		{name: "no failure budget", file: "failure_budget_mb = 0", wantErr: "c.toml: failure_budget_mb must be at least 1, got 0"},
		{name: "negative free", file: "min_free_mb = -1", wantErr: "c.toml: min_free_mb must not be negative, got -1"},
		{name: "empty results dir", file: "results_dir = ''", wantErr: "c.toml: results_dir must not be empty"},
		{name: "check by default", file: "", check: func(c Config) bool { return c.Check == oracle.EveryConvergence }},
		{name: "check at the end", file: "check = 'end'", check: func(c Config) bool { return c.Check == oracle.End }},
		{name: "unknown check", file: "check = 'sometimes'", wantErr: `c.toml: check must be "every-convergence" or "end", got "sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.file), "c.toml")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("config = %+v, plugins %q", c, c.Plugins)
			}
		})
	}
}
