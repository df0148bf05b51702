// Package netns gives each replica of a cluster a network of its own, so that a partition
// between replicas can be made, and every server listens on its system's ordinary ports at an
// address of its own.
//
// A Network is n Linux network namespaces, one per host, each with its loopback and one
// Ethernet link (a veth pair) to a bridge in a namespace of the network's own (the hub), and
// a link from the hub to the plugin's namespace, whose end there carries the subnet's first
// address: the plugin reaches every host, and the hosts reach each other, through the bridge.
// Host i has the subnet's address i+2. The namespaces are held by the Network's file
// descriptors (and by the processes started in them), never named or mounted: when the
// plugin ends, killed or not, and its servers with it, the kernel removes them with every
// link and address in them, the plugin's end of the uplink included. The kernel does that
// in its own time, though: the uplink of a plugin killed a moment ago may still be there when
// the next plugin makes the same cluster's network. The uplink's alias names its network's id
// (a digest of it), so that New removes such a leftover of its own cluster, and only that.
//
// A partition is what Jepsen's partition nemeses make of a network: packets between two hosts
// are lost on the wire, both ways, while each stays up and reachable by the plugin. Cut(i, j)
// gives each of the two a permanent neighbour entry for the other's address with a hardware
// address no link has: its frames go out and nobody takes them, so a new connection waits for
// an answer that never comes and an open one retransmits into nothing, until the system's
// own timeouts decide. Mend removes the entries; ARP finds the real addresses again, and an
// open connection whose timeouts have not fired carries on.
//
// Subnets are 10.X.Y.0/24 with X from 200 to 239 that no route of the plugin's namespace
// reaches, chosen under a machine-wide lock (LockName), so that clusters of one campaign, of two
// campaigns and of tests on one machine never share one: the one that the network's id names
// (a digest of it), or where that is in use one at random. A restored cluster, whose servers
// may have stored their peers' addresses (etcd's member list), asks for its saved one.
package netns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// LockName is the abstract Unix socket that serialises the choice of subnets on the machine.
const LockName = "@modulo-netns-subnets"

// nowhere is the hardware address a cut host sends its peer's frames to: locally
// administered, unicast, and on no link that modulo makes.
var nowhere = net.HardwareAddr{0x02, 0x6d, 0x6f, 0x64, 0x00, 0x00}

// Network is a cluster's hosts, each in a network namespace of its own.
type Network struct {
	// Subnet is the network's /24; Gateway its first address, the plugin's end of the uplink.
	Subnet     *net.IPNet
	Gateway    net.IP
	hub        netns.NsHandle
	uplink     string // the uplink's name in the plugin's namespace, once made
	uplinkMAC  string // and its hardware address, so that Close removes its own uplink and no other
	uplinkName string
	alias      string // the uplink's, which says whose it is
	id         string // New's, which names the subnet
	hosts      []host
}

type host struct {
	ip net.IP
	ns netns.NsHandle
	h  *netlink.Handle
}

// Available says why this process cannot make networks of namespaces (not root, no
// CAP_NET_ADMIN, a kernel without veth or bridges), or nil when it can.
func Available() error {
	nw, err := New(context.Background(), 1, fmt.Sprintf("available %d %d", os.Getpid(), rand.Uint64()), nil)
	if err != nil {
		return err
	}
	return nw.Close()
}

// UplinkName is the name of the uplink of the network made for id, in the plugin's namespace:
// a test that knows the cluster's id can tell whether its network is gone.
func UplinkName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "modulo" + hex.EncodeToString(sum[:4])
}

// New makes a network of n hosts for id (a cluster's directory), which names its uplink and its
// subnet. A subnet that is not nil is the one to take: New fails if it is in use.
func New(ctx context.Context, n int, id string, subnet *net.IPNet) (nw *Network, err error) {
	nw = &Network{hub: -1, uplinkName: UplinkName(id), alias: uplinkAlias(id), id: id, Subnet: subnet}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("network namespaces: %w", err), nw.Close())
			nw = nil
		}
	}()
	if nw.hub, err = newNS(); err != nil {
		return nw, err
	}
	hub, err := netlink.NewHandleAt(nw.hub)
	if err != nil {
		return nw, fmt.Errorf("netlink in the hub: %w", err)
	}
	defer hub.Close()
	if err := linkUp(hub, "lo"); err != nil {
		return nw, err
	}
	if err := hub.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}); err != nil {
		return nw, fmt.Errorf("bridge: %w", err)
	}
	if err := linkUp(hub, "br0"); err != nil {
		return nw, err
	}
	br, err := hub.LinkByName("br0")
	if err != nil {
		return nw, fmt.Errorf("bridge: %w", err)
	}
	for i := range n {
		if err := nw.addHost(hub, br, i); err != nil {
			return nw, err
		}
	}
	if err := nw.connect(hub, br); err != nil {
		return nw, err
	}
	return nw, nw.awaitCarrying(ctx)
}

// awaitCarrying returns once every host answers the plugin: a link the kernel has just made
// or removed may leave the bridge not forwarding for up to a second (link events are handled
// in batches), and a network returned is one that carries packets. The answer is a refused
// connection to the discard port, where nothing listens.
func (nw *Network) awaitCarrying(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i, h := range nw.hosts {
		addr := net.JoinHostPort(h.ip.String(), "9")
		for {
			try, stop := context.WithTimeout(ctx, 200*time.Millisecond)
			c, err := (&net.Dialer{}).DialContext(try, "tcp", addr)
			stop()
			if err == nil {
				c.Close()
				break
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("host %d (%s) does not answer the plugin through its new network: %w", i, h.ip, err)
			}
		}
	}
	return nil
}

// addHost makes host i: its namespace, loopback, and link eth0 to the bridge (port hI).
func (nw *Network) addHost(hub *netlink.Handle, br netlink.Link, i int) error {
	ns, err := newNS()
	if err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return fmt.Errorf("netlink in host %d: %w", i, err)
	}
	nw.hosts = append(nw.hosts, host{ns: ns, h: h})
	if err := linkUp(h, "lo"); err != nil {
		return err
	}
	port := fmt.Sprintf("h%d", i)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: "eth0", PeerNamespace: netlink.NsFd(ns)}
	if err := hub.LinkAdd(veth); err != nil {
		return fmt.Errorf("link of host %d: %w", i, err)
	}
	p, err := hub.LinkByName(port)
	if err != nil {
		return fmt.Errorf("link of host %d: %w", i, err)
	}
	if err := hub.LinkSetMaster(p, br); err != nil {
		return fmt.Errorf("link of host %d to the bridge: %w", i, err)
	}
	return errors.Join(linkUp(hub, port), linkUp(h, "eth0"))
}

// connect links the plugin's namespace to the bridge and gives every end its address, the
// subnet chosen under the machine's lock.
func (nw *Network) connect(hub *netlink.Handle, br netlink.Link) error {
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	// Before the subnet is chosen: a leftover's route holds the subnet a restored cluster asks for.
	if err := removeLeftover(nw.uplinkName, nw.alias); err != nil {
		return err
	}
	if nw.Subnet, err = chooseSubnet(nw.id, nw.Subnet); err != nil {
		return err
	}
	nw.Gateway = hostIP(nw.Subnet, 1)
	// Made in the hub and moved out with its alias set: the kernel takes no alias with a new
	// link, and the plugin's namespace never holds the uplink without it.
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: nw.uplinkName}, PeerName: "up"}
	if err := hub.LinkAdd(veth); err != nil {
		return fmt.Errorf("uplink %s: %w", nw.uplinkName, err)
	}
	l, err := hub.LinkByName(nw.uplinkName)
	if err != nil {
		return fmt.Errorf("uplink %s: %w", nw.uplinkName, err)
	}
	if err := hub.LinkSetAlias(l, nw.alias); err != nil {
		return fmt.Errorf("uplink %s's alias: %w", nw.uplinkName, err)
	}
	plugin, err := netns.GetFromPid(os.Getpid())
	if err != nil {
		return fmt.Errorf("the plugin's namespace: %w", err)
	}
	defer plugin.Close()
	if err := hub.LinkSetNsFd(l, int(plugin)); err != nil {
		return fmt.Errorf("uplink %s into the plugin's namespace: %w", nw.uplinkName, err)
	}
	if l, err = netlink.LinkByName(nw.uplinkName); err != nil {
		return fmt.Errorf("uplink %s: %w", nw.uplinkName, err)
	}
	nw.uplink, nw.uplinkMAC = nw.uplinkName, l.Attrs().HardwareAddr.String()
	up, err := hub.LinkByName("up")
	if err != nil {
		return fmt.Errorf("uplink in the hub: %w", err)
	}
	if err := hub.LinkSetMaster(up, br); err != nil {
		return fmt.Errorf("uplink to the bridge: %w", err)
	}
	if err := linkUp(hub, "up"); err != nil {
		return err
	}
	if err := addAddr(nil, nw.uplink, nw.Gateway); err != nil {
		return err
	}
	if err := linkUp(nil, nw.uplink); err != nil {
		return err
	}
	for i := range nw.hosts {
		nw.hosts[i].ip = hostIP(nw.Subnet, i+2)
		if err := addAddr(nw.hosts[i].h, "eth0", nw.hosts[i].ip); err != nil {
			return err
		}
	}
	return nil
}

// IP is host i's address.
func (nw *Network) IP(i int) net.IP { return nw.hosts[i].ip }

// NS is host i's namespace, for proc.ProcessSpec.NetNS; it stays the Network's.
func (nw *Network) NS(i int) int { return int(nw.hosts[i].ns) }

// Do runs f on a thread in host i's namespace: a socket f makes stays there.
func (nw *Network) Do(i int, f func() error) error { return inNS(nw.hosts[i].ns, f) }

// Cut makes the packets between hosts i and j vanish, both ways.
func (nw *Network) Cut(i, j int) error {
	return errors.Join(nw.neigh(i, j, true), nw.neigh(j, i, true))
}

// Mend undoes Cut(i, j).
func (nw *Network) Mend(i, j int) error {
	return errors.Join(nw.neigh(i, j, false), nw.neigh(j, i, false))
}

// neigh sets or removes, in host i, the neighbour entry that sends j's packets nowhere.
func (nw *Network) neigh(i, j int, cut bool) error {
	h := nw.hosts[i].h
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("host %d: %w", i, err)
	}
	n := &netlink.Neigh{LinkIndex: eth.Attrs().Index, Family: netlink.FAMILY_V4, IP: nw.hosts[j].ip}
	if cut {
		n.State, n.HardwareAddr = netlink.NUD_PERMANENT, nowhere
		if err := h.NeighSet(n); err != nil {
			return fmt.Errorf("cut host %d from %d: %w", i, j, err)
		}
		return nil
	}
	if err := h.NeighDel(n); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("mend host %d with %d: %w", i, j, err)
	}
	return nil
}

// Close removes the network: the namespaces go once no process is left in them, and every
// link with them.
func (nw *Network) Close() error {
	var errs []error
	if nw.uplink != "" {
		// It would go with the hub; removing it now frees its subnet at once.
		if l, err := netlink.LinkByName(nw.uplink); err == nil && l.Attrs().HardwareAddr.String() == nw.uplinkMAC {
			errs = append(errs, netlink.LinkDel(l))
		}
		nw.uplink = ""
	}
	for _, h := range nw.hosts {
		h.h.Close()
		errs = append(errs, h.ns.Close())
	}
	nw.hosts = nil
	if nw.hub >= 0 {
		errs = append(errs, nw.hub.Close())
		nw.hub = -1
	}
	return errors.Join(errs...)
}

// uplinkAlias is the alias of the uplink of id's network: its whole digest, where the name has
// room for 4 bytes of it.
func uplinkAlias(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "modulo network " + hex.EncodeToString(sum[:])
}

// removeLeftover removes the uplink named name if its alias is alias: a network of the same id
// made it, and its plugin died before the kernel removed its namespaces. Another link of that
// name, a digest's collision or not modulo's at all, is left alone and named.
func removeLeftover(name, alias string) error {
	l, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		return nil
	case err != nil:
		return fmt.Errorf("uplink %s: %w", name, err)
	case l.Attrs().Alias != alias:
		return fmt.Errorf("uplink %s: a link of that name is there and not this cluster's (its alias is %q, not %q)", name, l.Attrs().Alias, alias)
	}
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, syscall.ENODEV) {
		return fmt.Errorf("uplink %s, left by a plugin that died: %w", name, err)
	}
	return nil
}

// newNS makes a network namespace and returns a handle to it, leaving the caller's as it was.
func newNS() (netns.NsHandle, error) {
	var ns netns.NsHandle
	err := onThread(func() error {
		var err error
		if ns, err = netns.New(); err != nil {
			return fmt.Errorf("new namespace: %w", err)
		}
		return nil
	})
	return ns, err
}

// inNS runs f on a thread in namespace ns.
func inNS(ns netns.NsHandle, f func() error) error {
	return onThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter namespace: %w", err)
		}
		return f()
	})
}

// onThread runs f on an OS thread of its own and puts the thread back in its namespace after;
// a thread that cannot be put back ends with its goroutine, never to run Go code elsewhere.
func onThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("this thread's namespace: %w", err)
			return
		}
		defer orig.Close()
		err = f()
		if back := netns.Set(orig); back != nil {
			done <- errors.Join(err, fmt.Errorf("back to the plugin's namespace: %w", back))
			return // locked: the runtime ends the thread
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

func linkUp(h *netlink.Handle, name string) error {
	if h == nil {
		h = &netlink.Handle{}
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	return nil
}

func addAddr(h *netlink.Handle, link string, ip net.IP) error {
	if h == nil {
		h = &netlink.Handle{}
	}
	l, err := h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}}
	if err := h.AddrAdd(l, a); err != nil {
		return fmt.Errorf("address %s on %s: %w", a, link, err)
	}
	return nil
}

// hostIP is the subnet's k-th address.
func hostIP(subnet *net.IPNet, k int) net.IP {
	ip := make(net.IP, 4)
	copy(ip, subnet.IP.To4())
	ip[3] = byte(k)
	return ip
}

// chooseSubnet returns want if no route of the plugin's namespace reaches it, or, want nil,
// the 10.X.Y.0/24 (X in [200, 240)) that id's digest names, or one at random, that none
// reaches.
func chooseSubnet(id string, want *net.IPNet) (*net.IPNet, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	taken := func(c *net.IPNet) bool {
		for _, r := range routes {
			if ones, _ := maskSize(r.Dst); ones > 0 && (r.Dst.Contains(c.IP) || c.Contains(r.Dst.IP)) { // not the default route
				return true
			}
		}
		return false
	}
	if want != nil {
		if taken(want) {
			return nil, fmt.Errorf("subnet %s is in use on this machine (a route reaches it)", want)
		}
		return want, nil
	}
	at := func(x, y int) *net.IPNet {
		return &net.IPNet{IP: net.IPv4(10, byte(200+x), byte(y), 0).To4(), Mask: net.CIDRMask(24, 32)}
	}
	sum := sha256.Sum256([]byte(id))
	if c := at(int(sum[0])%40, int(sum[1])); !taken(c) {
		return c, nil
	}
	for range 1000 {
		if c := at(rand.IntN(40), rand.IntN(256)); !taken(c) {
			return c, nil
		}
	}
	return nil, errors.New("no free subnet in 10.200.0.0/13")
}

func maskSize(n *net.IPNet) (int, int) {
	if n == nil {
		return 0, 0
	}
	return n.Mask.Size()
}

// lock takes the machine's lock on choosing subnets: an abstract Unix socket bound by one
// process at a time, which leaves no file and is released when its process dies.
func lock() (unlock func(), err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: LockName, Net: "unix"})
		if err == nil {
			return func() { l.Close() }, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("subnet lock %s: %w", LockName, err)
		}
		time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
	}
}
