package kit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/netns"
	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/cem/proc"
)

// servedSystem is the in-memory system with one service, "coord": a stand-in server, as the
// replicas' are, which must serve before any replica's server starts.
type servedSystem struct {
	*memSystem
	coordServed bool // ServiceReady saw it serve
}

func (s *servedSystem) ServiceCommand(_ *kit.Cluster, svc *kit.Service) (kit.Command, error) {
	self, err := os.Executable()
	if err != nil {
		return kit.Command{}, err
	}
	return kit.Command{Path: self, Args: []string{"-test.run=^$"}, Env: append(os.Environ(), placeholderEnv+"="+svc.Addr(0))}, nil
}

func (s *servedSystem) ServiceReady(_ context.Context, _ *kit.Cluster, svc *kit.Service) (bool, string, error) {
	s.coordServed = answers(svc.Addr(0), 200*time.Millisecond)
	return s.coordServed, "", nil
}

// Command refuses to start a replica before its service serves.
func (s *servedSystem) Command(c *kit.Cluster, r *kit.Replica) (kit.Command, error) {
	if !s.coordServed {
		return kit.Command{}, errors.New("started before the service coord served")
	}
	return s.memSystem.Command(c, r)
}

// servedAbout is memAbout(drm) with the service, and with ports of its own when inNS.
func servedAbout(drm string, inNS bool) kit.About {
	a := memAbout(drm)
	a.Services = []kit.ServiceSpec{{Name: "coord", Ports: []int{7100}}}
	if inNS {
		a.Ports = []int{7000}
	}
	return a
}

// TestServices: a plugin's service starts, and serves, before any replica's server; on
// loopback it listens on the port after the replicas'; the cluster runs a schedule beside it;
// and teardown ends it. A plugin whose service the system cannot start, or that names one
// badly, is refused.
func TestServices(t *testing.T) {
	sys := &servedSystem{memSystem: &memSystem{}}
	p := kit.New(servedAbout("qce", false), sys)
	ctx := context.Background()
	info, err := p.Info(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.Capabilities.ServicePorts != 1 || info.Capabilities.Ports(3) != 4 || info.Capabilities.Restore {
		t.Errorf("capabilities %+v: want 1 service port, 4 ports for 3 replicas, no restore", info.Capabilities)
	}
	spec := cem.ClusterSpec{DRM: "qce", Ops: 1, Replicas: 3, Dir: t.TempDir(), BasePort: plugintest.ReservePorts(t, 4),
		ScheduleID: "0123456789abcdef", StepTimeout: 5 * time.Second}
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(ctx) })
	svc := sys.c.Service("coord")
	if svc == nil || !strings.HasSuffix(svc.Name, "-coord") || svc.Ports[0] != spec.BasePort+3 || !answers(svc.Addr(0), 200*time.Millisecond) {
		t.Fatalf("service %+v: want <plugin>-coord serving at port %d", svc, spec.BasePort+3)
	}
	files, err := proc.PidFiles(spec.Dir)
	if err != nil || len(files) != 4 {
		t.Fatalf("pid files %v (%v): want the 3 replicas' and the service's", files, err)
	}
	for i, step := range []string{"D[0,1,1]", "C[0,1]", "C[2]"} {
		if _, err := p.Apply(ctx, cem.Step{Index: i, Transition: step}); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	if !answers(svc.Addr(0), 200*time.Millisecond) {
		t.Error("the service no longer serves after a schedule that failed every replica")
	}
	if err := p.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := syscall.Kill(f.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("after teardown, %s (pid %d) still runs (%v)", f.Path, f.Pid, err)
		}
	}

	for _, tt := range []struct {
		name string
		sys  kit.System
		svcs []kit.ServiceSpec
		want string
	}{
		{"no Servicer", &memSystem{}, []kit.ServiceSpec{{Name: "coord", Ports: []int{1}}}, "kit.Servicer"},
		{"no name", sys, []kit.ServiceSpec{{Ports: []int{1}}}, "a name of its own"},
		{"a name twice", sys, []kit.ServiceSpec{{Name: "a", Ports: []int{1}}, {Name: "a", Ports: []int{2}}}, "a name of its own"},
		{"no ports", sys, []kit.ServiceSpec{{Name: "coord"}}, "names no ports"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := memAbout("qce")
			a.Services = tt.svcs
			if _, err := kit.New(a, tt.sys).Info(ctx, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Info: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestServiceInNamespaces: in network namespaces the service has a host of its own, on its
// ordinary port, that every replica's host reaches; a replica that a partition cuts off does
// not reach it until the partition heals.
func TestServiceInNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces; run without -short")
	}
	if err := netns.Available(); err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("root cannot make network namespaces: %v", err)
		}
		t.Skipf("no network namespaces here: %v", err)
	}
	sys := &servedSystem{memSystem: &memSystem{}}
	p := kit.New(servedAbout("qne", true), partitionBlind{sys})
	ctx := context.Background()
	spec := cem.ClusterSpec{DRM: "qne", Ops: 1, Replicas: 3, Dir: t.TempDir(), ScheduleID: "0123456789abcdef",
		Config: []byte(`network = "namespaces"`), StepTimeout: 5 * time.Second}
	if err := p.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(ctx) })
	svc := sys.c.Service("coord")
	if svc.Ports[0] != 7100 || svc.Host == "127.0.0.1" || svc.NetNS == 0 {
		t.Fatalf("service %+v: want port 7100 at an address and namespace of its own", svc)
	}
	reaches := func(r *kit.Replica) bool {
		t.Helper()
		return dialFrom(t, r, svc.Addr(0))
	}
	r0 := sys.c.Replicas[0]
	if !reaches(r0) {
		t.Fatalf("%s does not reach the service at %s", r0.Name, svc.Addr(0))
	}
	if _, err := p.Apply(ctx, cem.Step{Index: 0, Transition: "D[0,1,1]"}); err != nil {
		t.Fatal(err)
	}
	if reaches(r0) {
		t.Errorf("%s, cut off by a partition, reaches the service", r0.Name)
	}
	if _, err := p.Apply(ctx, cem.Step{Index: 1, Transition: "C[0,1,2]"}); err != nil {
		t.Fatal(err)
	}
	if !reaches(r0) {
		t.Errorf("%s does not reach the service once the partition healed", r0.Name)
	}
}

// partitionBlind is a served system that says it cannot tell what a replica logged: the
// in-memory system replicates in the plugin's process, past any partition of its stand-ins'
// namespaces, so a write the model keeps from a cut-off replica reaches it there, and the kit's
// conformance check would rightly end the divergence (TestNonconformant). Its D[0,1,1] needs no
// Logged for its write, which two of three receive.
type partitionBlind struct{ *servedSystem }

func (partitionBlind) Logged(context.Context, *kit.Replica, string, string) (bool, error) {
	return false, errors.New("the in-memory system replicates past partitions: it cannot tell")
}

// dialFrom tells whether a process in r's network namespace gets an answer from addr: this
// test binary, run again there (TestMain's dialEnv).
func dialFrom(t *testing.T, r *kit.Replica, addr string) bool {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pr, err := proc.StartProcess(proc.ProcessSpec{Name: "dial", Dir: dir, Path: self, Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), dialEnv+"="+addr), NetNS: r.NetNS})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = pr.Wait(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the dial from %s did not end: %v", r.Name, err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "dial.log"))
	t.Logf("dial %s from %s: %v %s", addr, r.Name, err, strings.TrimSpace(string(log)))
	return err == nil
}

// dialEnv makes this test binary dial the address it names and exit 0 when it answers.
const dialEnv = "MODULO_KIT_TEST_DIAL"
