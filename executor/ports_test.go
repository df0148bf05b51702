package executor

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

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
		name    string
		base, n int
		wantErr string
	}{
		{"free", base, 10, ""},
		{"busy", base, 20, fmt.Sprintf("port 127.0.0.1:%d is already in use: choose another base_port", base+13)},
		{"beyond 65535", 65530, 10, "the workers need ports 65530-65539, beyond 65535: lower base_port or workers"},
		{"ephemeral", lo - 5, 10, fmt.Sprintf("the workers' ports %d-%d overlap the ephemeral port range %d-%d (%s), where outgoing connections take theirs: choose a base_port of at most %d",
			lo-5, lo+4, lo, hi, ephemeralRangeFile, lo-10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPorts(tt.base, tt.n)
			if tt.wantErr == "" {
				if err != nil {
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
