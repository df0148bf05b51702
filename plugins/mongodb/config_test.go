package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// parseConfig configures a system from a TOML section as the kit's decode does, minus the
// refusal of unknown keys, which is the kit's and tested there.
func parseConfig(data []byte) (Config, error) {
	s := &system{}
	err := s.Configure(func(v any) error {
		_, err := toml.Decode(string(data), v)
		return err
	})
	return s.cfg, err
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		WiredTigerCacheGB: 0.25, OplogSizeMB: 64,
		ElectionTimeout: 10 * time.Second, HeartbeatInterval: 500 * time.Millisecond, CatchUpTimeout: 2 * time.Second,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults = %+v, want %+v", c, want)
	}
}

func TestParseConfigEveryKey(t *testing.T) {
	c, err := parseConfig([]byte(`
mongod = "/opt/mongodb/bin/mongod"
wiredtiger_cache_gb = 0.5
oplog_size_mb = 128
election_timeout = "20s"
heartbeat_interval = "250ms"
catch_up_timeout = "1s"
extra_args = ["--setParameter", "rollbackTimeLimitSecs=60"]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Mongod: "/opt/mongodb/bin/mongod", WiredTigerCacheGB: 0.5, OplogSizeMB: 128,
		ElectionTimeout: 20 * time.Second, HeartbeatInterval: 250 * time.Millisecond, CatchUpTimeout: time.Second,
		ExtraArgs: []string{"--setParameter", "rollbackTimeLimitSecs=60"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config = %+v, want %+v", c, want)
	}
}

func TestParseConfigRefuses(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"not TOML", `mongod = `, "toml:"},
		{"wrong type", `oplog_size_mb = "big"`, "toml:"},
		{"bad duration", `catch_up_timeout = "soon"`, "soon"},
		{"cache below mongod's minimum", `wiredtiger_cache_gb = 0.1`, "wiredtiger_cache_gb must be at least 0.25, got 0.1"},
		{"negative oplog", `oplog_size_mb = -1`, "oplog_size_mb must be at least 1, got -1"},
		{"election timeout under a millisecond", `election_timeout = "10us"`, "election_timeout must be at least 1ms, got 10µs"},
		{"heartbeat beyond 32-bit milliseconds", `heartbeat_interval = "1000h"`, "heartbeat_interval must be at most"},
		{"negative catch-up timeout", `catch_up_timeout = "-1s"`, "catch_up_timeout must be at least 1ms, got -1s"},
		{"several problems in one line", "oplog_size_mb = -1\nwiredtiger_cache_gb = 0.1", "(and 1 more problems)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig([]byte(tt.toml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// executable creates an (empty) executable file named name in a new directory and returns its
// path. The lookup tests only ask whether it is there; nothing runs it.
func executable(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMongodPath(t *testing.T) {
	inPath := executable(t, "mongod")
	inEnv := executable(t, "mongod-from-env")
	configured := executable(t, "mongod-configured")
	empty := t.TempDir()
	tests := []struct {
		name    string
		config  string
		env     string
		path    string
		want    string // the path found, or
		wantErr string // the error
	}{
		{"configured wins", configured, inEnv, filepath.Dir(inPath), configured, ""},
		{"then the environment", "", inEnv, filepath.Dir(inPath), inEnv, ""},
		{"then PATH", "", "", filepath.Dir(inPath), inPath, ""},
		{"configured but missing", filepath.Join(empty, "mongod"), "", "", "",
			"no mongod: " + filepath.Join(empty, "mongod") + " (from [mongodb] mongod) is not an executable file"},
		{"environment but missing", "", "/nonexistent/mongod", "", "", "no mongod: /nonexistent/mongod (from $MODULO_MONGOD) is not an executable file"},
		{"a name not in PATH", "mongod7", "", empty, "", "no mongod: mongod7 (from [mongodb] mongod) is not in PATH (" + empty + ")"},
		{"none anywhere", "", "", empty, "", "no mongod: $MODULO_MONGOD is not set and there is no mongod in PATH (" + empty +
			"); install MongoDB 4.4.2 or later and set MODULO_MONGOD=/path/to/mongod or put mongod on PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envMongod, tt.env)
			t.Setenv("PATH", tt.path)
			c := Config{Mongod: tt.config}
			got, err := c.mongodPath()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		out, want, wantErr string
	}{
		{"db version v7.0.14\nBuild Info: {\n    \"version\": \"7.0.14\"\n}\n", "7.0.14", ""},
		{"db version v8.0.4-rc0\n", "8.0.4-rc0", ""},
		{"db version v4.4.2\n", "4.4.2", ""},
		{"db version v5.0.0\n", "5.0.0", ""},
		{"db version v4.4.1\n", "4.4.1", "mongod 4.4.1 is too old: the plugin needs 4.4.2 or later"},
		{"db version v4.2.24\n", "4.2.24", "mongod 4.2.24 is too old"},
		{"db version v3.0.0\n", "3.0.0", "mongod 3.0.0 is too old"},
		{"true (GNU coreutils) 9.1\nCopyright...", "", `no "db version" line in "true (GNU coreutils) 9.1"`},
	}
	for _, tt := range tests {
		got, err := parseVersion(tt.out)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseVersion(%q) = %q, %v; want %q, error %q", tt.out, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestMongodArgs(t *testing.T) {
	c, err := parseConfig([]byte(`extra_args = ["--setParameter", "rollbackTimeLimitSecs=60"]`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.mongodArgs("127.0.0.1", 20001, "/data/member-1/db")
	want := []string{
		"--replSet", "modulo", "--bind_ip", "127.0.0.1", "--port", "20001",
		"--dbpath", "/data/member-1/db", "--nounixsocket",
		"--wiredTigerCacheSizeGB", "0.25", "--oplogSize", "64",
		"--setParameter", "diagnosticDataCollectionEnabled=false",
		"--setParameter", "rollbackTimeLimitSecs=60",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mongodArgs =\n%q\nwant\n%q", got, want)
	}
}

// TestInitiateConfigGolden pins the replSetInitiate document, with the BSON type of every
// value (canonical Extended JSON), for the defaults and for a configuration that sets them.
func TestInitiateConfigGolden(t *testing.T) {
	custom, err := parseConfig([]byte("election_timeout = \"30s\"\nheartbeat_interval = \"1s\"\ncatch_up_timeout = \"5s\""))
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		base int
		n    int
		cfg  Config
	}{
		{"initiate-3.golden.json", 20000, 3, defaults},
		{"initiate-5-custom.golden.json", 21000, 5, custom},
	} {
		doc := initiateConfig(hostsOn(tc.base, tc.n), &tc.cfg)
		b, err := bson.MarshalExtJSONIndent(doc, true, false, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, append(b, '\n'))
	}
}

// TestInitiateConfigElectable checks the properties the plugin relies on, whatever the golden
// files say: every member votes with the same priority, and catch-up takeovers are off.
func TestInitiateConfigElectable(t *testing.T) {
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bson.Marshal(initiateConfig(hostsOn(20000, 5), &c))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ID      string `bson:"_id"`
		Members []struct {
			ID       int     `bson:"_id"`
			Host     string  `bson:"host"`
			Priority float64 `bson:"priority"`
			Votes    int     `bson:"votes"`
		} `bson:"members"`
		Settings struct {
			ElectionTimeoutMillis      int `bson:"electionTimeoutMillis"`
			CatchUpTakeoverDelayMillis int `bson:"catchUpTakeoverDelayMillis"`
		} `bson:"settings"`
	}
	if err := bson.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != replSetName || len(doc.Members) != 5 {
		t.Fatalf("set %q with %d members, want %q with 5", doc.ID, len(doc.Members), replSetName)
	}
	for i, m := range doc.Members {
		if m.ID != i || m.Host != hostOf(20000+i) || m.Priority != 1 || m.Votes != 1 {
			t.Errorf("member %d = %+v, want _id %d on %s with priority 1 and 1 vote", i, m, i, hostOf(20000+i))
		}
	}
	if doc.Settings.ElectionTimeoutMillis != 10000 || doc.Settings.CatchUpTakeoverDelayMillis != -1 {
		t.Errorf("settings = %+v, want electionTimeoutMillis 10000 and catchUpTakeoverDelayMillis -1", doc.Settings)
	}
}
