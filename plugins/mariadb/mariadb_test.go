package main

import (
	"slices"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on real MariaDB clusters of two and three
// servers: in process, and through the plugin binary as modulo runs it.
func TestConformance(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, ".")
	for _, n := range []int{2, 3} {
		t.Run(map[int]string{2: "two", 3: "three"}[n], func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{
				DRM:    "mdl",
				Params: plugintest.Params{Replicas: n},
				New:    func() cem.CEM { return kit.New(about, &system{}) },
				Binary: bin,
			})
		})
	}
}

func TestParseStatus(t *testing.T) {
	out := "*************************** 1. row ***************************\n" +
		"                Slave_IO_State: \n" +
		"              Slave_IO_Running: No\n" +
		"                 Last_IO_Errno: 1236\n" +
		"                 Last_IO_Error: Got fatal error 1236 from master when reading data from binary log: 'Error: connecting slave requested to start from GTID 0-1-2, which is not in the master's binlog'\n"
	st := parseStatus(out)
	for k, want := range map[string]string{
		"Slave_IO_State":   "",
		"Slave_IO_Running": "No",
		"Last_IO_Errno":    "1236",
		"Last_IO_Error":    "Got fatal error 1236 from master when reading data from binary log: 'Error: connecting slave requested to start from GTID 0-1-2, which is not in the master's binlog'",
	} {
		if got, ok := st[k]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, want)
		}
	}
}

// TestServerArgs: the [mariadb] table's durability settings reach mariadbd's command line, at
// MariaDB's defaults unless set, and a setting out of range is refused.
func TestServerArgs(t *testing.T) {
	r := &kit.Replica{Index: 1, Name: "mariadb-1", Dir: "/c/mariadb-1", Host: "10.1.2.3", Ports: []int{3306}}
	for _, tt := range []struct {
		name string
		set  func(*Config)
		want []string
	}{
		{"defaults", func(*Config) {}, []string{"--sync-binlog=0", "--relay-log-recovery=false", "--innodb-flush-log-at-trx-commit=1",
			"--sync-master-info=10000", "--sync-relay-log-info=10000"}},
		{"crash-safe", func(c *Config) { c.SyncBinlog, c.RelayLogRecovery = 1, true }, []string{"--sync-binlog=1", "--relay-log-recovery=true", "--innodb-flush-log-at-trx-commit=1"}},
		{"info files synced", func(c *Config) { c.SyncMasterInfo, c.SyncRelayLogInfo = 1, 1 }, []string{"--sync-master-info=1", "--sync-relay-log-info=1"}},
		{"flush 2", func(c *Config) { c.FlushLogAtTrxCommit = 2 }, []string{"--innodb-flush-log-at-trx-commit=2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &system{}
			if err := s.Configure(func(v any) error { tt.set(v.(*Config)); return nil }); err != nil {
				t.Fatal(err)
			}
			args := s.serverArgs(r)
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("mariadbd's arguments lack %q: %q", w, args)
				}
			}
		})
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.FlushLogAtTrxCommit = 3 },
		func(c *Config) { c.SyncBinlog = -1 },
		func(c *Config) { c.SyncMasterInfo = -1 },
	} {
		if err := (&system{}).Configure(func(v any) error { bad(v.(*Config)); return nil }); err == nil {
			t.Error("a setting out of range was accepted")
		}
	}
}
