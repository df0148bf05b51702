package main

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "empty", toml: "", check: func(t *testing.T, c Config) {
			if !*c.AppendOnly || c.AppendFsync != "everysec" || c.ReplDisklessSync || c.ReplDisklessSyncDelay != 0 || c.Save != "" || c.Hz != 100 {
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
break_realisation = "skip-relink"`, check: func(t *testing.T, c Config) {
			if *c.AppendOnly || c.AppendFsync != "always" || c.ReplBacklogSize != "16mb" || *c.ReplBacklogTTL != 0 ||
				*c.ReplTimeout != 5 || !c.ReplDisklessSync || c.ReplDisklessSyncDelay != 1 || c.Save != "3600 1" || c.Hz != 10 ||
				c.BreakRealisation != breakSkipRelink {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "unknown key", toml: "appendonly = true\nrepl_timeuot = 3", wantErr: `redis config: unknown key "repl_timeuot"`},
		{name: "bad fsync", toml: `appendfsync = "sometimes"`, wantErr: `appendfsync must be always, everysec or no, got "sometimes"`},
		{name: "bad size", toml: `repl_backlog_size = "lots"`, wantErr: `repl_backlog_size must be a size`},
		{name: "bad timeout", toml: `repl_timeout = 0`, wantErr: `repl_timeout must be at least 1 second`},
		{name: "two problems", toml: "repl_timeout = 0\nrepl_diskless_sync_delay = -1", wantErr: `(and 1 more problems)`},
		{name: "bad hz", toml: `hz = 1000`, wantErr: `hz must be between 1 and 500, got 1000`},
		{name: "bad break", toml: `break_realisation = "everything"`, wantErr: `break_realisation must be "skip-relink" or unset`},
		{name: "wrong type", toml: `appendonly = "yes"`, wantErr: `redis config:`},
		{name: "not toml", toml: `appendonly = `, wantErr: `redis config:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tt.toml))
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

func TestServerConfig(t *testing.T) {
	c, err := parseConfig([]byte(`repl_backlog_size = "2mb"`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.serverConfig(7001, "/tmp/x y")
	for _, want := range []string{
		`port "7001"`, `bind "127.0.0.1"`, `protected-mode "no"`, `replica-read-only "no"`,
		`dir "/tmp/x y"`, `appendonly "yes"`, `appendfsync "everysec"`, `save ""`,
		`repl-diskless-sync "no"`, `hz "100"`, `repl-diskless-sync-delay "0"`, `repl-backlog-size "2mb"`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("config lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "repl-timeout") {
		t.Errorf("config sets repl-timeout although it was not configured:\n%s", got)
	}
}
