package proc

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CheckPortFree tells whether port on 127.0.0.1 can be listened on, with a one-line error
// such as "port 127.0.0.1:7001 is already in use (by pid 812, redis-server)" when it cannot.
func CheckPortFree(port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %s is out of range", addr)
	}
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if who := PortHolders(port); who != "" {
			return fmt.Errorf("port %s is already in use (by %s)", addr, who)
		}
		return fmt.Errorf("port %s is already in use", addr)
	}
	if err != nil {
		return fmt.Errorf("port %s: %w", addr, err)
	}
	return l.Close()
}

// CheckPortsFree checks count consecutive ports from base, naming the first busy one.
func CheckPortsFree(base, count int) error {
	for p := base; p < base+count; p++ {
		if err := CheckPortFree(p); err != nil {
			return err
		}
	}
	return nil
}

// PortHolders names the processes that listen on TCP port (any address, IPv4 or IPv6), as
// "pid 812, redis-server": what a busy port's error says, so that whoever reads it knows
// which process to end. It is empty when none is found (another user's process, whose open
// files cannot be read, or one that closed the port meanwhile).
func PortHolders(port int) string {
	inodes := listeningInodes(port)
	if len(inodes) == 0 {
		return ""
	}
	var who []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err == nil && inodes[link] {
				comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
				who = append(who, fmt.Sprintf("pid %d, %s", pid, strings.TrimSpace(string(comm))))
				break
			}
		}
	}
	return strings.Join(who, "; ")
}

// listeningInodes returns the socket inodes, as /proc/PID/fd links name them
// ("socket:[1234]"), of the TCP sockets listening on port.
func listeningInodes(port int) map[string]bool {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st ... inode: the local address is ADDR:PORT in hex,
			// and st 0A is LISTEN.
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
		f.Close()
	}
	return inodes
}
