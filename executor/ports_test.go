package executor

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
)

// TestPortAdvice: every suggested range lies between 1024 and 65535, outside the ephemeral
// range, and holds the ports; where none does, it says how to go on.
func TestPortAdvice(t *testing.T) {
	tests := []struct {
		lo, hi, n int
		want      string
	}{
		{32768, 60999, 20, "choose a base_port between 1024 and 32748"},
		{1024, 60999, 20, "choose a base_port between 61000 and 65516"},
		{1024, 65535, 20, "no range of that many ports lies outside it on this host: set allow_ephemeral_ports = true (or --allow-ephemeral-ports) to run there anyway, or narrow the range"},
	}
	for _, tt := range tests {
		if got := portAdvice(tt.lo, tt.hi, tt.n); got != tt.want {
			t.Errorf("portAdvice(%d, %d, %d) = %q, want %q", tt.lo, tt.hi, tt.n, got, tt.want)
		}
	}
}

func TestCheckPorts(t *testing.T) {
	lo, hi, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	base := plugintest.FreePorts(t, 20)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+13))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		name     string
		base, n  int
		allow    bool
		wantErr  string
		wantWarn string
	}{
		{"free", base, 10, false, "", ""},
		{"busy", base, 20, false, fmt.Sprintf("port 127.0.0.1:%d is already in use (by %s): choose another base_port", base+13, proc.PortHolders(base+13)), ""},
		{"beyond 65535", 65530, 10, false, "the workers need ports 65530-65539, beyond 65535: lower base_port or workers", ""},
		{"ephemeral", lo - 5, 10, false, fmt.Sprintf("the workers' ports %d-%d overlap the ephemeral port range %d-%d (%s), where outgoing connections take theirs: %s",
			lo-5, lo+4, lo, hi, ephemeralRangeFile, portAdvice(lo, hi, 10)), ""},
		{"ephemeral allowed", hi - 9, 10, true, "", fmt.Sprintf("modulo: warning: the workers' ports %d-%d overlap", hi-9, hi)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warn strings.Builder
			err := checkPorts(tt.base, tt.n, tt.allow, &warn)
			if !strings.HasPrefix(warn.String(), tt.wantWarn) || (tt.wantWarn == "") != (warn.Len() == 0) {
				t.Errorf("warning %q, want %q...", warn.String(), tt.wantWarn)
			}
			if tt.wantErr == "" {
				if err != nil && !strings.Contains(err.Error(), "already in use") {
					t.Fatal(err)
				}
				return
			}
			var setup *SetupError
			if err == nil || err.Error() != tt.wantErr || !errors.As(err, &setup) {
				t.Fatalf("error = %v (%T)\nwant the *SetupError %s", err, err, tt.wantErr)
			}
		})
	}
}
