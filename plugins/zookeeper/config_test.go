package main

import (
	"context"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/modulo-testing/modulo/cem/kit"
)

// TestConfigure: keys decode over the defaults, each flag on its own.
func TestConfigure(t *testing.T) {
	tests := []struct {
		name, toml string
		check      func(t *testing.T, c Config)
	}{
		{name: "empty gives the defaults", toml: "", check: func(t *testing.T, c Config) {
			d := DefaultConfig()
			if c.TickTimeMS != d.TickTimeMS || c.InitLimit != nil || c.SyncLimit != d.SyncLimit ||
				c.Java != "java" || c.JarDir != "/usr/share/java" || !*c.ClassDataSharing || c.LocalSessions != nil || !*c.ForceSync ||
				c.PreAllocSizeKB != 65536 || c.SnapCount != 100000 || c.SnapshotSizeFactor != nil {
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
pre_alloc_size_kb = 4
snap_count = 2
snapshot_size_factor = -1.0
initial_znodes = 50
initial_value_bytes = 1000
`, check: func(t *testing.T, c Config) {
			if c.Java != "/usr/lib/jvm/java-17-openjdk-amd64/bin/java" || c.JarDir != "/opt/zk" ||
				len(c.JVMFlags) != 1 || c.JVMFlags[0] != "-Xmx64m" || *c.ClassDataSharing || c.CacheDir != "/tmp/cds" ||
				c.TickTimeMS != 200 || *c.InitLimit != 7 || c.SyncLimit != 3 || c.MinNotificationIntervalMS != 100 ||
				c.MaxNotificationIntervalMS != 400 || c.ElectionConnectTimeoutMS != 250 || c.LeaderConnectRetryMS != 20 || *c.LocalSessions ||
				*c.ForceSync || c.PreAllocSizeKB != 4 || c.SnapCount != 2 || *c.SnapshotSizeFactor != -1 ||
				c.InitialZnodes != 50 || c.InitialValueBytes != 1000 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "one flag off leaves the others", toml: "local_sessions = false", check: func(t *testing.T, c Config) {
			if *c.LocalSessions || !*c.ClassDataSharing || !*c.ForceSync {
				t.Errorf("local_sessions %v, class_data_sharing %v, force_sync %v", *c.LocalSessions, *c.ClassDataSharing, *c.ForceSync)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s system
			err := s.Configure(func(v any) error {
				_, err := toml.Decode(tt.toml, v)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s.cfg)
		})
	}
}

// TestConfigErrors: a bad section or a missing install is one line naming the problem, as
// Info (which modulo calls before a campaign) reports it.
func TestConfigErrors(t *testing.T) {
	tests := []struct{ name, toml, want string }{
		{"unknown key", "tick_time = 100\nsnapcount = 5", `zookeeper config: unknown key "snapcount", "tick_time"`},
		{"snap count", "snap_count = 1", "zookeeper config: snap_count must be at least 2, got 1"},
		{"no preallocation", "pre_alloc_size_kb = 0", "zookeeper config: pre_alloc_size_kb must be at least 1, got 0"},
		{"negative initial znodes", "initial_znodes = -1", "zookeeper config: initial_znodes must be at least 0, got -1"},
		{"factor above one", "snapshot_size_factor = 1.5", "zookeeper config: snapshot_size_factor must be at most 1, got 1.5"},
		{"bad type", `tick_time_ms = "fast"`, "zookeeper config: toml: line 1"},
		{"zero tick", "tick_time_ms = 0", "zookeeper config: tick_time_ms must be at least 1, got 0"},
		{"several problems", "init_limit = -1\nsync_limit = 0", "zookeeper config: init_limit must be at least 1, got -1 (and 1 more problems)"},
		{"intervals crossed", "min_notification_interval_ms = 500\nmax_notification_interval_ms = 100",
			"zookeeper config: max_notification_interval_ms (100) is below min_notification_interval_ms (500)"},
		// The plugin's own breakage is gone; the kit's leave-behind replaces it. (The kit's
		// message lists its values, which may grow.)
		{"standalone replica", `break_realisation = "standalone-replica"`, `zookeeper config: break_realisation must be "leave-behind"`},
		{"no java", `java = "/nonexistent/java"`, `zookeeper: java binary "/nonexistent/java" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kit.New(about, &system{}).Info(context.Background(), []byte(tt.toml))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %v, want prefix %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// TestResolve: unset local sessions follow the release, and a key the release cannot honour is
// an error naming it and the release.
func TestResolve(t *testing.T) {
	on, off, factor, five := true, false, 0.5, 5
	tests := []struct {
		name, version string
		local         *bool
		factor        *float64
		initLimit     *int
		wantLocal     bool
		wantInit      int
		wantErr       string
	}{
		{name: "3.9 unset", version: "3.9.5", wantLocal: true, wantInit: 10},
		{name: "3.8 off", version: "3.8.0-1", local: &off, wantLocal: false, wantInit: 10},
		{name: "3.7 factor", version: "3.7.0", factor: &factor, wantLocal: true, wantInit: 10},
		{name: "3.4 unset", version: "3.4.11", wantLocal: false, wantInit: 30},
		{name: "3.4 init_limit set", version: "3.4.11", initLimit: &five, wantLocal: false, wantInit: 5},
		{name: "3.4 asked for local sessions", version: "3.4.11", local: &on, wantErr: "local_sessions: ZooKeeper 3.4.11 has none"},
		{name: "3.4 factor", version: "3.4.11", factor: &factor, wantErr: "snapshot_size_factor: ZooKeeper 3.4.11 has none"},
		{name: "no version", version: "trunk", wantErr: `ZooKeeper version "trunk" is not of the form`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.LocalSessions, c.SnapshotSizeFactor, c.InitLimit = tt.local, tt.factor, tt.initLimit
			err := c.resolve(tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *c.LocalSessions != tt.wantLocal || *c.InitLimit != tt.wantInit {
				t.Errorf("local sessions = %v, init_limit = %d; want %v, %d", *c.LocalSessions, *c.InitLimit, tt.wantLocal, tt.wantInit)
			}
		})
	}
}

// TestJarDir: a leading ~ is the home directory, as in ~/.cache/modulo/zookeeper/3.9.5.
func TestJarDir(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for in, want := range map[string]string{
		"~/.cache/modulo/zookeeper/3.9.5": "/home/u/.cache/modulo/zookeeper/3.9.5",
		"~":                               "/home/u",
		"/usr/share/java":                 "/usr/share/java",
		"~other/jars":                     "~other/jars",
	} {
		c := Config{JarDir: in}
		if got, err := c.jarDir(); err != nil || got != want {
			t.Errorf("jarDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestPresets: a preset's settings for the cluster's DRM lie under the section's own keys; an
// unknown preset, or one without settings for the DRM, is an error naming it.
func TestPresets(t *testing.T) {
	tests := []struct {
		name, toml, drm string
		wantZnodes      int
		wantErr         string
	}{
		{name: "paper", toml: `preset = "paper"`, drm: "qcz", wantZnodes: 5},
		{name: "the section wins", toml: "preset = \"paper\"\ninitial_znodes = 7", drm: "qcz", wantZnodes: 7},
		{name: "checked without a DRM", toml: `preset = "paper"`, drm: "", wantZnodes: 0},
		{name: "unknown", toml: `preset = "thesis"`, drm: "qcz", wantErr: `unknown preset "thesis" (presets: paper)`},
		{name: "no power losses in the paper", toml: `preset = "paper"`, drm: "qpz", wantErr: `preset "paper" has no settings for DRM qpz`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(func(v any) error { _, err := toml.Decode(tt.toml, v); return err }, tt.drm)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.InitialZnodes != tt.wantZnodes || c.TickTimeMS != DefaultConfig().TickTimeMS {
				t.Errorf("initial_znodes = %d, tick_time_ms = %d; want %d and the default", c.InitialZnodes, c.TickTimeMS, tt.wantZnodes)
			}
		})
	}
}
