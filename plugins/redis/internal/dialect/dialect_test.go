package dialect

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestParse(t *testing.T) {
	tests := []struct {
		out     string
		want    Version
		wantErr string
	}{
		{out: "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n", want: Version{7, 0, 15}},
		{out: "Redis server v=2.8.0 sha=00000000:0 malloc=jemalloc-3.2.0 bits=64 build=8a6bb4c2c6d1f47c", want: Version{2, 8, 0}},
		{out: "Redis server v=4.0.14 sha=00000000:0 malloc=libc bits=64 build=1ba5d6c4c4b1d5f9", want: Version{4, 0, 14}},
		{out: "Redis server version 2.4.17 (00000000:0)\n", wantErr: `--version printed "Redis server version 2.4.17 (00000000:0)", which names no version`},
		{out: "", wantErr: `--version printed "", which names no version`},
	}
	for _, tt := range tests {
		t.Run(tt.out, func(t *testing.T) {
			got, err := Parse(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestFor(t *testing.T) {
	tests := []struct {
		v                      Version
		replicaOf, aof         string
		multiSectionInfo, wait bool
	}{
		{Version{2, 8, 0}, "SLAVEOF", "appendonly.aof", false, false},
		{Version{2, 8, 24}, "SLAVEOF", "appendonly.aof", false, false},
		{Version{3, 0, 0}, "SLAVEOF", "appendonly.aof", false, true},
		{Version{4, 0, 0}, "SLAVEOF", "appendonly.aof", false, true},
		{Version{4, 0, 14}, "SLAVEOF", "appendonly.aof", false, true},
		{Version{5, 0, 0}, "REPLICAOF", "appendonly.aof", false, true},
		{Version{6, 2, 14}, "REPLICAOF", "appendonly.aof", false, true},
		{Version{7, 0, 0}, "REPLICAOF", "appendonlydir", true, true},
		{Version{7, 2, 4}, "REPLICAOF", "appendonlydir", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.v.String(), func(t *testing.T) {
			d, err := For(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if d.ReplicaOf != tt.replicaOf || d.AOF != tt.aof || d.MultiSectionInfo != tt.multiSectionInfo || d.GetAck != tt.wait {
				t.Errorf("For(%v) = %+v", tt.v, d)
			}
		})
	}
	if _, err := For(Version{2, 6, 17}); err == nil || !strings.Contains(err.Error(), "redis-server 2.6.17 is too old: the plugin needs 2.8.0 or later") {
		t.Errorf("For(2.6.17): %v", err)
	}
}

// goldenSettings are the settings of the golden configurations: the plugin's defaults, with
// every optional setting given so that each version shows what it does with it.
func goldenSettings() Settings {
	ttl, timeout := 1, 5
	return Settings{
		Host: "127.0.0.1", Port: 7000, Dir: "/data/replica-0", Hz: 100,
		AppendOnly: true, AppendFsync: "everysec", Save: "",
		ReplBacklogSize: "1mb", ReplBacklogTTL: &ttl, ReplTimeout: &timeout,
	}
}

// TestConfigGolden compares the redis.conf of each version with testdata/redis-<version>.conf:
// 2.8.0 and 4.0.0 are the versions of the Modulo paper's Redis bugs, 5.0.14 the last 5.0 and
// 7.0.15 Debian's, the only one installed here.
func TestConfigGolden(t *testing.T) {
	for _, v := range []Version{{2, 8, 0}, {4, 0, 0}, {5, 0, 14}, {7, 0, 15}} {
		t.Run(v.String(), func(t *testing.T) {
			d, err := For(v)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := d.Config(goldenSettings())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "redis-"+v.String()+".conf"), Render(ds))
		})
	}
}

// golden compares got with the file at path, or rewrites the file with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestConfigSettings(t *testing.T) {
	v28, _ := For(Version{2, 8, 0})
	v2824, _ := For(Version{2, 8, 24})
	v7, _ := For(Version{7, 0, 15})
	tests := []struct {
		name    string
		d       Dialect
		change  func(*Settings)
		want    []string // lines that must be there
		absent  []string // directive names that must not
		wantErr string
	}{
		{name: "save pairs, one a line", d: v7, change: func(s *Settings) { s.Save = "3600 1 300 100" },
			want: []string{`save "3600" "1"`, `save "300" "100"`}, absent: []string{`save ""`}},
		{name: "bad save", d: v7, change: func(s *Settings) { s.Save = "3600" }, wantErr: `save must be empty or pairs of seconds and changes, got "3600"`},
		{name: "zero seconds", d: v7, change: func(s *Settings) { s.Save = "0 1" }, wantErr: `seconds (at least 1)`},
		{name: "more databases", d: v7, change: func(s *Settings) { s.Databases = 20 }, want: []string{`databases "20"`}},
		{name: "the default databases", d: v7, change: func(s *Settings) { s.Databases = 3 }, absent: []string{"databases"}},
		{name: "unset optional", d: v7, change: func(s *Settings) { s.ReplBacklogSize, s.ReplBacklogTTL, s.ReplTimeout = "", nil, nil },
			absent: []string{"repl-backlog-size", "repl-backlog-ttl", "repl-timeout"}},
		{name: "diskless on 2.8.24", d: v2824, change: func(s *Settings) { s.ReplDisklessSync, s.ReplDisklessSyncDelay = true, 2 },
			want: []string{`repl-diskless-sync "yes"`, `repl-diskless-sync-delay "2"`}},
		{name: "no diskless before 2.8.18", d: v28, change: func(s *Settings) { s.ReplDisklessSync = true },
			wantErr: "repl_diskless_sync and repl_diskless_sync_delay need redis-server 2.8.18 or later, the server is 2.8.0"},
		{name: "no diskless delay before 2.8.18", d: v28, change: func(s *Settings) { s.ReplDisklessSyncDelay = 5 }, wantErr: "need redis-server 2.8.18"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := goldenSettings()
			tt.change(&s)
			ds, err := tt.d.Config(s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text := Render(ds)
			for _, w := range tt.want {
				if !strings.Contains(text, w+"\n") {
					t.Errorf("no line %s in\n%s", w, text)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(text, "\n"+a+" ") {
					t.Errorf("%s is there:\n%s", a, text)
				}
			}
		})
	}
}
