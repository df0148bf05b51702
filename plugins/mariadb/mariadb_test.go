package main

import (
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
