package main

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, toml string
		check      func(t *testing.T, c Config)
		wantErr    string
	}{
		{name: "empty gives the defaults", toml: "", check: func(t *testing.T, c Config) {
			d := DefaultConfig()
			if c.TickTimeMS != d.TickTimeMS || c.InitLimit != d.InitLimit || c.SyncLimit != d.SyncLimit ||
				c.Java != "java" || c.JarDir != "/usr/share/java" || !*c.ClassDataSharing || !*c.LocalSessions || !*c.ForceSync {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "every key", toml: `
java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
jar_dir = "/opt/zk"
jvm_flags = ["-Xmx64m"]
class_data_sharing = false
cache_dir = "/tmp/cds"
tick_time_ms = 200
init_limit = 7
sync_limit = 3
min_notification_interval_ms = 100
max_notification_interval_ms = 400
election_connect_timeout_ms = 250
leader_connect_retry_ms = 20
local_sessions = false
force_sync = false
break_realisation = "standalone-replica"
`, check: func(t *testing.T, c Config) {
			if c.Java != "/usr/lib/jvm/java-17-openjdk-amd64/bin/java" || c.JarDir != "/opt/zk" ||
				len(c.JVMFlags) != 1 || c.JVMFlags[0] != "-Xmx64m" || *c.ClassDataSharing || c.CacheDir != "/tmp/cds" ||
				c.TickTimeMS != 200 || c.InitLimit != 7 || c.SyncLimit != 3 || c.MinNotificationIntervalMS != 100 ||
				c.MaxNotificationIntervalMS != 400 || c.ElectionConnectTimeoutMS != 250 || c.LeaderConnectRetryMS != 20 || *c.LocalSessions ||
				*c.ForceSync || c.BreakRealisation != breakStandalone {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "one flag off leaves the others", toml: "local_sessions = false", check: func(t *testing.T, c Config) {
			if *c.LocalSessions || !*c.ClassDataSharing || !*c.ForceSync {
				t.Errorf("local_sessions %v, class_data_sharing %v, force_sync %v", *c.LocalSessions, *c.ClassDataSharing, *c.ForceSync)
			}
		}},
		{name: "unknown key", toml: "tick_time = 100\nsnap_count = 5", wantErr: `zookeeper config: unknown key "snap_count", "tick_time"`},
		{name: "bad type", toml: `tick_time_ms = "fast"`, wantErr: "zookeeper config: toml: line 1"},
		{name: "zero tick", toml: "tick_time_ms = 0", wantErr: "zookeeper config: tick_time_ms must be at least 1, got 0"},
		{name: "several problems", toml: "init_limit = -1\nsync_limit = 0", wantErr: "zookeeper config: init_limit must be at least 1, got -1 (and 1 more problems)"},
		{name: "intervals crossed", toml: "min_notification_interval_ms = 500\nmax_notification_interval_ms = 100",
			wantErr: "zookeeper config: max_notification_interval_ms (100) is below min_notification_interval_ms (500)"},
		{name: "unknown break", toml: `break_realisation = "skip-relink"`,
			wantErr: `zookeeper config: break_realisation must be "standalone-replica" or unset, got "skip-relink"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tt.toml))
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
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
