//go:build linux

package plugintest

import "testing"

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
