package proc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/netns"
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

// listenerEnv makes the test binary a server that listens on two ports the kernel picks,
// writes them to ports in its directory and waits to be killed.
const listenerEnv = "PROC_TEST_LISTENER"

func listener() {
	var ports []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	if err := os.WriteFile("ports", []byte(strings.Join(ports, " ")), 0o644); err != nil {
		os.Exit(1)
	}
	select {}
}

// TestGroupListens finds the ports a process group listens on: a server's, and none of the
// test's own.
func TestGroupListens(t *testing.T) {
	mine, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	dir := t.TempDir()
	p, err := StartProcess(ProcessSpec{Name: "listener", Dir: dir, Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: append(os.Environ(), listenerEnv+"=1")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(context.Background()) })
	var want string
	err = WaitFor(context.Background(), 10*time.Second, "the listener's ports", func(context.Context) (bool, error) {
		b, err := os.ReadFile(filepath.Join(dir, "ports"))
		want = string(b)
		return err == nil && strings.Count(want, " ") == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listens, err := GroupListens(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	got := listens[p.Pid]
	var gotS []string
	for _, port := range got {
		gotS = append(gotS, strconv.Itoa(port))
	}
	wantS := strings.Fields(want)
	slices.SortFunc(wantS, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	if strings.Join(gotS, " ") != strings.Join(wantS, " ") {
		t.Errorf("GroupListens = %v, want %v (and not the test's own %v)", got, wantS, mine.Addr())
	}
}

// TestCheckPortFreeWhileForking: a check leaves the port free when the process forks meanwhile.
// A child forked while the check listened would hold the listener until it execs, and the
// next check would find the port busy, held by no process it could name. The checks run in a
// network namespace of their own, where no other program's socket can take the port.
func TestCheckPortFreeWhileForking(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a network namespace; run without -short")
	}
	if err := netns.Available(); err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("root cannot make network namespaces: %v", err)
		}
		t.Skipf("no network namespaces here: %v", err)
	}
	nw, err := netns.New(t.Context(), 1, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command(os.Args[0], "-test.run=^$").Run()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	if err := nw.Do(0, func() error {
		for end := time.Now().Add(time.Second); time.Now().Before(end); {
			if err := CheckPortFree(20000); err != nil {
				return fmt.Errorf("a port checked free again and again: %w", err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
