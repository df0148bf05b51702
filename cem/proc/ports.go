package proc

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
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
	err := listenOnce(addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if who := PortHolders(port); who != "" {
			return fmt.Errorf("port %s is already in use (by %s)", addr, who)
		}
		return fmt.Errorf("port %s is already in use", addr)
	}
	if err != nil {
		return fmt.Errorf("port %s: %w", addr, err)
	}
	return nil
}

// listenOnce listens on addr and closes the listener at once, holding syscall.ForkLock
// meanwhile: a child that os/exec forks gets a copy of every descriptor, close-on-exec or
// not, and would keep the listener until it execs, which can take milliseconds on a loaded
// machine. The next check of the port, such as the kit's at Start right after the suite's
// reservation checked it, would then find it busy with no process to name.
func listenOnce(addr string) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
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
	var inodes []string
	for inode, p := range listeners() {
		if p == port {
			inodes = append(inodes, inode)
		}
	}
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
		if slices.ContainsFunc(sockets(pid), func(s string) bool { return slices.Contains(inodes, s) }) {
			comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
			who = append(who, fmt.Sprintf("pid %d, %s", pid, strings.TrimSpace(string(comm))))
		}
	}
	return strings.Join(who, "; ")
}

// GroupListens returns, for each of the process groups pgids, the TCP ports its live
// processes listen on, sorted: what a test checks against the ports it gave a cluster. The
// processes and the listening sockets are read once for all the groups.
func GroupListens(pgids ...int) (map[int][]int, error) {
	members, err := groupsPids(pgids...)
	if err != nil {
		return nil, err
	}
	all := listeners()
	listens := map[int][]int{}
	for pgid, pids := range members {
		for _, pid := range pids {
			for _, s := range sockets(pid) {
				if p, ok := all[s]; ok && !slices.Contains(listens[pgid], p) {
					listens[pgid] = append(listens[pgid], p)
				}
			}
		}
		slices.Sort(listens[pgid])
	}
	return listens, nil
}

// sockets lists the sockets pid has open, as its fd links name them ("socket:[1234]"); none
// when its open files cannot be read (it exited, or is another user's).
func sockets(pid int) []string {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, _ := os.ReadDir(dir)
	var out []string
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(link, "socket:[") {
			out = append(out, link)
		}
	}
	return out
}

// listeners maps every listening TCP socket (IPv4 and IPv6), by the name its fd links have
// ("socket:[1234]"), to its port.
func listeners() map[string]int {
	found := map[string]int{}
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
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
				found["socket:["+fields[9]+"]"] = int(p)
			}
		}
		f.Close()
	}
	return found
}
