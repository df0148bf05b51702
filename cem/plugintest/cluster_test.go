//go:build linux

package plugintest

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/proc"
)

// TestPortRange: $MODULO_TEST_PORTS moves the range the suite takes ports from.
func TestPortRange(t *testing.T) {
	tests := []struct {
		env       string
		low, high int
		ok        bool
	}{
		{"", portLow, portHigh, true},
		{"40000-45000", 40000, 45000, true},
		{"45000-40000", 0, 0, false},
		{"40000", 0, 0, false},
		{"80-1000", 0, 0, false},
		{"40000-40050", 0, 0, false}, // less than a block
	}
	for _, tt := range tests {
		t.Setenv(PortsEnv, tt.env)
		low, high, err := portRange()
		if (err == nil) != tt.ok || low != tt.low || high != tt.high {
			t.Errorf("%s=%q: %d..%d, %v; want %d..%d, ok %v", PortsEnv, tt.env, low, high, err, tt.low, tt.high, tt.ok)
		}
	}
	t.Setenv(PortsEnv, "28000-29000")
	if base := ReservePorts(t, 150); base < 28000 || base+150 > 29000 || base%portBlock != 0 {
		t.Errorf("150 ports in 28000..29000: base %d", base)
	}
}

// TestStrays: a port that a cluster's process group listens on outside the cluster's ports is
// named, once; its own ports are not. The group is the test's own, with a listener of the test.
func TestStrays(t *testing.T) {
	inside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	in, out := inside.Addr().(*net.TCPAddr).Port, outside.Addr().(*net.TCPAddr).Port
	// The group's leader may have exited (go test's parent shell, say): a group outlives its
	// leader while members are left, and strays checks it all the same.
	pgid := syscall.Getpgrp()
	start, _ := proc.StartTime(pgid)
	files := []proc.PidFile{{Path: "server.cem.pid", Pid: pgid, Start: start}}
	c := &cluster{s: &suite{info: cem.Info{Capabilities: cem.Capabilities{PortsPerReplica: 1}}}, strayPorts: map[int]bool{},
		spec: cem.ClusterSpec{BasePort: in, Replicas: 1}}
	strays, err := c.strays(files)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("server.cem.pid (process group %d) listens on port %d, outside the cluster's ports %d-%d", pgid, out, in, in)
	if !slices.ContainsFunc(strays, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("strays %q, want one starting %q", strays, want)
	}
	for _, s := range strays {
		if strings.Contains(s, fmt.Sprintf("port %d,", in)) {
			t.Errorf("the cluster's own port is named: %s", s)
		}
	}
	if again, _ := c.strays(files); slices.ContainsFunc(again, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("port %d named twice", out)
	}
}
