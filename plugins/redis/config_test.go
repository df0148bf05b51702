package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/plugins/redis/internal/dialect"
)

// configure hands the plugin's section to the plugin as the kit does when modulo asks it for
// its Info (kit.Plugin.Configure: without the server's version, which would run redis-server),
// and returns the configuration it took.
func configure(text string) (Config, error) {
	s := &system{}
	err := kit.New(about, s).Configure([]byte(text))
	return s.cfg, err
}

// configureFor is configure with the settings of the preset for drm applied, as Prepare does.
func configureFor(text, drm string) (Config, error) {
	s := &system{}
	if err := kit.New(about, s).Configure([]byte(text)); err != nil {
		return Config{}, err
	}
	return parseConfig(s.decode, drm)
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "empty", toml: "", check: func(t *testing.T, c Config) {
			if !*c.AppendOnly || c.AppendFsync != "everysec" || c.ReplDisklessSync || c.ReplDisklessSyncDelay != 0 || c.Save != "" || c.Hz != 100 ||
				c.WaitBeforeWrites != 0 || c.WaitAfterWrites != 0 || c.AutoAOFRewriteMinSize != "" || c.ValueSize != 0 || c.SetsPerWrite != 1 || c.Databases != 1 || c.KeyPrefix != "" || !*c.Probe || c.Preset != "" {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{name: "all keys", toml: `
server = "/usr/bin/redis-server"
appendonly = false
appendfsync = "always"
repl_backlog_size = "16mb"
repl_backlog_ttl = 0
repl_timeout = 5
repl_diskless_sync = true
repl_diskless_sync_delay = 1
hz = 10
save = "3600 1"
wait_before_writes = "1.5s"
wait_after_writes = "2s"
auto_aof_rewrite_min_size = "200kb"
value_size = 100
sets_per_write = 3
databases = 2
key_prefix = "x:"
probe = false
break_realisation = "skip-relink"`, check: func(t *testing.T, c Config) {
			if *c.AppendOnly || c.AppendFsync != "always" || c.ReplBacklogSize != "16mb" || *c.ReplBacklogTTL != 0 ||
				*c.ReplTimeout != 5 || !c.ReplDisklessSync || c.ReplDisklessSyncDelay != 1 || c.Save != "3600 1" || c.Hz != 10 ||
				c.WaitBeforeWrites != 1500*time.Millisecond || c.WaitAfterWrites != 2*time.Second || c.AutoAOFRewriteMinSize != "200kb" || c.ValueSize != 100 || c.SetsPerWrite != 3 || c.Databases != 2 ||
				c.KeyPrefix != "x:" || *c.Probe {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "unknown key", toml: "appendonly = true\nrepl_timeuot = 3", wantErr: `redis config: unknown key "repl_timeuot"`},
		{name: "bad fsync", toml: `appendfsync = "sometimes"`, wantErr: `appendfsync must be always, everysec or no, got "sometimes"`},
		{name: "bad size", toml: `repl_backlog_size = "lots"`, wantErr: `repl_backlog_size must be a size`},
		{name: "bad timeout", toml: `repl_timeout = 0`, wantErr: `repl_timeout must be at least 1 second`},
		{name: "two problems", toml: "repl_timeout = 0\nrepl_diskless_sync_delay = -1", wantErr: `(and 1 more problems)`},
		{name: "bad hz", toml: `hz = 1000`, wantErr: `hz must be between 1 and 500, got 1000`},
		{name: "bad break", toml: `break_realisation = "everything"`, wantErr: `redis config: break_realisation must be "leave-behind", "skip-relink", "lose-write", "skip-wait", "fail-nothing" or unset, got "everything"`},
		{name: "bad save", toml: `save = "3600"`, wantErr: `save must be empty or pairs of seconds and changes, got "3600"`},
		{name: "negative wait", toml: `wait_before_writes = "-1s"`, wantErr: `wait_before_writes must be between 0s and 10m0s, got -1s`},
		{name: "long wait", toml: `wait_after_writes = "11m"`, wantErr: `wait_after_writes must be between 0s and 10m0s, got 11m0s`},
		{name: "bad rewrite size", toml: `auto_aof_rewrite_min_size = "big"`, wantErr: `auto_aof_rewrite_min_size must be a size`},
		{name: "huge value", toml: `value_size = 100000000`, wantErr: `value_size must be between 0 and 16777216 bytes`},
		{name: "no sets", toml: `sets_per_write = -1`, wantErr: `sets_per_write must be between 1 and 1000, got -1`},
		{name: "too many databases", toml: `databases = 5000`, wantErr: `databases must be between 1 and 1000, got 5000`},
		{name: "prefix with a space", toml: `key_prefix = "a b"`, wantErr: `key_prefix must be printable, without spaces or '/', got "a b"`},
		{name: "wrong type", toml: `appendonly = "yes"`, wantErr: `redis config:`},
		{name: "not toml", toml: `appendonly = `, wantErr: `redis config:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := configure(tt.toml)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestPresets: "paper" is, per DRM, the original tool's settings
// (shared/notes/paper-redis-settings.md).
func TestPresets(t *testing.T) {
	saveDefaults := "900 1 300 10 60 10000"
	tests := []struct {
		name, drm, toml string
		wantErr         string
		check           func(t *testing.T, c Config)
	}{
		{name: "paper S/S/R", drm: "ssr", toml: `preset = "paper"`, check: func(t *testing.T, c Config) {
			if !*c.AppendOnly || c.AppendFsync != "always" || c.AutoAOFRewriteMinSize != "200kb" || c.ReplBacklogTTL != nil || c.Save != saveDefaults ||
				c.ValueSize != 10240 || c.SetsPerWrite != 10 || c.Databases != 1 || c.WaitBeforeWrites != 0 || c.WaitAfterWrites != 0 || *c.Probe {
				t.Errorf("paper preset for ssr = %+v", c)
			}
		}},
		{name: "paper S/L/R", drm: "slr", toml: `preset = "paper"`, check: func(t *testing.T, c Config) {
			if *c.AppendOnly || *c.ReplBacklogTTL != 5 || c.ReplDisklessSync || c.Save != saveDefaults ||
				c.ValueSize != 10240 || c.SetsPerWrite != 10 || c.WaitBeforeWrites != 8*time.Second || c.WaitAfterWrites != 0 || *c.Probe {
				t.Errorf("paper preset for slr = %+v", c)
			}
		}},
		{name: "paper S/CL/R", drm: "sclr", toml: `preset = "paper"`, check: func(t *testing.T, c Config) {
			if *c.AppendOnly || *c.ReplBacklogTTL != 5 || c.ReplDisklessSync || c.Save != saveDefaults ||
				c.ValueSize != 0 || c.SetsPerWrite != 1 || c.Databases != 2 || c.WaitBeforeWrites != 0 || c.WaitAfterWrites != 0 || !*c.Probe {
				t.Errorf("paper preset for sclr = %+v", c)
			}
		}},
		{name: "the section's keys win", drm: "slr", toml: "preset = \"paper\"\nprobe = true\nrepl_backlog_ttl = 2", check: func(t *testing.T, c Config) {
			if *c.ReplBacklogTTL != 2 || !*c.Probe || c.WaitBeforeWrites != 8*time.Second || c.Preset != "paper" {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "checked without a DRM", toml: `preset = "paper"`, check: func(t *testing.T, c Config) {
			if c.Preset != "paper" || !*c.AppendOnly {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "unknown preset", toml: `preset = "thesis"`, wantErr: `redis config: unknown preset "thesis" (presets: paper)`},
		{name: "no settings for the DRM", drm: "qcz", toml: `preset = "paper"`, wantErr: `preset "paper" has no settings for DRM qcz`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := configureFor(tt.toml, tt.drm)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
	// Every preset is valid for every DRM it has settings for.
	for name, byDRM := range presets {
		for drm := range byDRM {
			if _, err := configureFor("preset = "+strconv.Quote(name), drm); err != nil {
				t.Errorf("preset %s for %s: %v", name, drm, err)
			}
		}
	}
}

// TestSettings: the configuration's server settings reach the redis.conf of Debian's 7.0.
func TestSettings(t *testing.T) {
	c, err := configure("repl_backlog_size = \"2mb\"\ndatabases = 20\nsave = \"3600 1\"")
	if err != nil {
		t.Fatal(err)
	}
	d, err := dialect.For(dialect.Version{Major: 7, Minor: 0, Patch: 15})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := d.Config(c.settings("127.0.0.1", 7001, "/tmp/x y"))
	if err != nil {
		t.Fatal(err)
	}
	got := dialect.Render(ds)
	for _, want := range []string{
		`port "7001"`, `bind "127.0.0.1"`, `protected-mode "no"`, `dir "/tmp/x y"`, `appendonly "yes"`,
		`appendfsync "everysec"`, `save "3600" "1"`, `databases "20"`, `repl-diskless-sync "no"`, `hz "100"`,
		`repl-diskless-sync-delay "0"`, `repl-backlog-size "2mb"`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("config lacks %s:\n%s", want, got)
		}
	}
	for _, absent := range []string{"repl-timeout", "read-only"} {
		if strings.Contains(got, absent) {
			t.Errorf("config sets %s although nothing asked for it:\n%s", absent, got)
		}
	}
}
