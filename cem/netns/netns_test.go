package netns

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// needNamespaces skips a test under -short, which makes no network namespace, and where
// namespaces cannot be made, saying why, but for root (CI), who can make them: there it is a
// failure.
func needNamespaces(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("makes network namespaces; run without -short")
	}
	err := Available()
	switch {
	case err != nil && os.Geteuid() == 0:
		t.Fatalf("root cannot make network namespaces: %v", err)
	case err != nil:
		t.Skipf("no network namespaces here: %v", err)
	}
}

// listen starts an echo-once listener on host i's port, in its namespace.
func listen(t *testing.T, nw *Network, i, port int) {
	t.Helper()
	var ln net.Listener
	if err := nw.Do(i, func() (err error) {
		ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "host %d\n", i)
			c.Close()
		}
	}()
}

// dial connects to host i's port, from host from (-1: the plugin's namespace), and reads its
// greeting.
func dial(nw *Network, from, i, port int) (string, error) {
	var c net.Conn
	addr := net.JoinHostPort(nw.IP(i).String(), fmt.Sprint(port))
	d := func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 500*time.Millisecond)
		return err
	}
	var err error
	if from < 0 {
		err = d()
	} else {
		err = nw.Do(from, d)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}

// TestNetwork: every host listens on the same port at its own address; the plugin and every
// other host reach it; a cut host is up and reachable by the plugin but not by its peers, both
// ways, and mended it is reachable again; closed, nothing of the network is left.
func TestNetwork(t *testing.T) {
	needNamespaces(t)
	nw, err := New(t.Context(), 3, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	for i := range 3 {
		listen(t, nw, i, 2181)
	}
	reach := func(from, to int, want bool) {
		t.Helper()
		got, err := dial(nw, from, to, 2181)
		if want && (err != nil || got != fmt.Sprintf("host %d", to)) {
			t.Errorf("from %d to host %d: %q, %v; want its greeting", from, to, got, err)
		}
		if !want && err == nil {
			t.Errorf("from %d to host %d: %q; want no connection", from, to, got)
		}
	}
	for from := -1; from < 3; from++ {
		for to := range 3 {
			reach(from, to, true)
		}
	}
	if err := nw.Cut(0, 2); err != nil {
		t.Fatal(err)
	}
	reach(0, 2, false)
	reach(2, 0, false)
	reach(-1, 0, true)
	reach(-1, 2, true)
	reach(0, 1, true)
	reach(1, 2, true)
	if err := nw.Mend(0, 2); err != nil {
		t.Fatal(err)
	}
	reach(0, 2, true)
	reach(2, 0, true)

	uplink, subnet := nw.uplink, nw.Subnet
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := netlink.LinkByName(uplink); err == nil {
		t.Errorf("uplink %s left after Close", uplink)
	}
	routes, _ := netlink.RouteList(nil, netlink.FAMILY_V4)
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == subnet.String() {
			t.Errorf("a route to %s left after Close", subnet)
		}
	}
}

// TestSubnets: networks made at once have subnets of their own.
func TestSubnets(t *testing.T) {
	needNamespaces(t)
	seen := map[string]bool{}
	for i := range 5 {
		nw, err := New(t.Context(), 1, fmt.Sprint(t.Name(), i), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer nw.Close()
		if seen[nw.Subnet.String()] {
			t.Errorf("subnet %s given twice", nw.Subnet)
		}
		seen[nw.Subnet.String()] = true
	}
}

// TestSubnetAsked: a network made again for the same id gets the same subnet, as a restored
// cluster's servers need (they may have stored their peers' addresses); a subnet asked for is
// taken when free, and refused, naming it, while another network has it.
func TestSubnetAsked(t *testing.T) {
	needNamespaces(t)
	first, err := New(t.Context(), 1, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	subnet := first.Subnet
	if _, err := New(t.Context(), 1, t.Name()+" other", subnet); err == nil || !strings.Contains(err.Error(), subnet.String()+" is in use") {
		t.Errorf("New asking for %s while another network has it: %v, want an error naming it", subnet, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(t.Context(), 1, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Subnet.String() != subnet.String() {
		t.Errorf("the same id got subnet %s, then %s", subnet, again.Subnet)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	asked, err := New(t.Context(), 1, t.Name()+" other", subnet)
	if err != nil {
		t.Fatal(err)
	}
	defer asked.Close()
	if asked.Subnet.String() != subnet.String() || !asked.IP(0).Equal(hostIP(subnet, 2)) {
		t.Errorf("asked for %s, got %s with host 0 at %s", subnet, asked.Subnet, asked.IP(0))
	}
}

// TestKilledOwnerLeavesNothing: a process that made a network and was SIGKILLed leaves no
// link behind (the kernel removes its namespaces): a plugin killed in the middle of a cluster.
// The network of the next plugin on the same cluster, made at once, does not wait for that.
func TestKilledOwnerLeavesNothing(t *testing.T) {
	needNamespaces(t)
	if os.Getenv("NETNS_CHILD") != "" {
		nw, err := New(t.Context(), 2, t.Name(), nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(nw.uplink)
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledOwnerLeavesNothing$")
	cmd.Env = append(os.Environ(), "NETNS_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var uplink string
	if _, err := fmt.Fscanln(out, &uplink); err != nil || !strings.HasPrefix(uplink, "modulo") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child made no network: %q, %v", uplink, err)
	}
	if _, err := netlink.LinkByName(uplink); err != nil {
		t.Fatalf("the child's uplink %s is not there while it runs: %v", uplink, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The next plugin on the same cluster's directory, at once, as the executor starts one.
	next, err := New(t.Context(), 2, t.Name(), nil)
	if err != nil {
		t.Fatalf("New for the killed owner's id: %v", err)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := netlink.LinkByName(uplink)
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("uplink %s still there 5 s after its owner was killed (%v)", uplink, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLeftover: the uplink of a network whose plugin died, still there because the kernel has
// not yet removed its namespaces, is removed by the next New for the same id, which gets the
// same subnet; the old network closing later leaves the new one's uplink alone. A link of the
// same name that is not that id's is left alone and named.
func TestLeftover(t *testing.T) {
	needNamespaces(t)
	old, err := New(t.Context(), 2, t.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	nw, err := New(t.Context(), 2, t.Name(), nil)
	if err != nil {
		t.Fatalf("New beside a leftover of the same id: %v", err)
	}
	defer nw.Close()
	if nw.Subnet.String() != old.Subnet.String() {
		t.Errorf("the leftover's subnet %s, the new network's %s: want the same", old.Subnet, nw.Subnet)
	}
	if err := old.Close(); err != nil {
		t.Errorf("closing the leftover: %v", err)
	}
	listen(t, nw, 1, 2181)
	if got, err := dial(nw, -1, 1, 2181); err != nil || got != "host 1" {
		t.Errorf("the new network after the leftover closed: %q, %v; want host 1's greeting", got, err)
	}

	id := t.Name() + " foreign"
	foreign := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: UplinkName(id), Alias: "someone else's"}, PeerName: fmt.Sprintf("mtest%d", os.Getpid()%100000)}
	if err := netlink.LinkAdd(foreign); err != nil {
		t.Fatal(err)
	}
	defer netlink.LinkDel(foreign)
	if nw, err := New(t.Context(), 1, id, nil); err == nil {
		nw.Close()
		t.Errorf("New beside a link of its uplink's name and another alias: no error")
	} else if !strings.Contains(err.Error(), "not this cluster's") {
		t.Errorf("New beside a foreign link: %v, want an error saying it is not this cluster's", err)
	}
	if _, err := netlink.LinkByName(UplinkName(id)); err != nil {
		t.Errorf("the foreign link is gone after New: %v", err)
	}
}
