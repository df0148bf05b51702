package proc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestCheckPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busy := l.Addr().(*net.TCPAddr).Port
	defer l.Close()

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()

	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	self := fmt.Sprintf("pid %d, %s", os.Getpid(), strings.TrimSpace(string(comm)))
	tests := []struct {
		name    string
		check   func() error
		wantErr string
	}{
		{"busy", func() error { return CheckPortFree(busy) }, "port 127.0.0.1:" + strconv.Itoa(busy) + " is already in use (by " + self + ")"},
		{"free", func() error { return CheckPortFree(freePort) }, ""},
		{"range with busy", func() error { return CheckPortsFree(busy, 3) }, "port 127.0.0.1:" + strconv.Itoa(busy) + " is already in use (by " + self + ")"},
		{"out of range", func() error { return CheckPortFree(70000) }, "port 127.0.0.1:70000 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("err = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
