package config

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestSetPreset(t *testing.T) {
	tests := []struct {
		name  string
		table string // the plugin's table in the configuration file; "-" for none
		want  map[string]any
	}{
		{"no table", "-", map[string]any{"preset": "paper"}},
		{"keys kept", "server = \"/opt/redis-4.0/redis-server\"\nrepl_timeout = 5\n",
			map[string]any{"preset": "paper", "server": "/opt/redis-4.0/redis-server", "repl_timeout": int64(5)}},
		{"the flag wins over the file's preset", "preset = \"other\"\n", map[string]any{"preset": "paper"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			if tt.table != "-" {
				cfg.Plugins = map[string][]byte{"redis": []byte(tt.table)}
			}
			if err := cfg.SetPreset("redis", "paper"); err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			if _, err := toml.Decode(string(cfg.Plugins["redis"]), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("[redis] = %v, want %v", got, tt.want)
			}
		})
	}
}
