//go:build linux

package kit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/modulo-testing/modulo/cem/proc"
)

// ServiceSpec names one of a plugin's services (About.Services): a process of the cluster's
// own that the kit runs beside the replicas and never fails, such as the coordinator or
// configuration store that the replicas' servers need (Patroni's etcd).
type ServiceSpec struct {
	// Name names the service (Cluster.Service) and, after the plugin's name, its directory,
	// log and pid file: "etcd" is "patroni-etcd".
	Name string
	// Ports are the ports it listens on, one at least: its ordinary ones, at an address of its
	// own where the cluster runs in network namespaces; on loopback, one each from the ports
	// after every replica's.
	Ports []int
}

// Service is one of the cluster's services. The kit starts it before any replica's server,
// in a directory of its own under the cluster's and, in network namespaces, on a host of its
// own that every replica reaches; it never fails it, and ends it with the cluster, on every
// path, as it ends the replicas' servers. A replica that a partition cuts off from its peers
// is cut off from the services too: its machine has lost the network.
type Service struct {
	Name  string // "<plugin>-<ServiceSpec.Name>"
	Dir   string // its directory, under the cluster's
	Host  string // its address: 127.0.0.1, or its own in its network namespace
	Ports []int  // its ports at Host
	// NetNS is the file descriptor of its network namespace, 0 on loopback: a process of the
	// system's own that must reach it from another host starts there (proc.ProcessSpec.NetNS).
	NetNS int

	spec string        // ServiceSpec.Name
	host int           // its host in the cluster's network, after the replicas'
	proc *proc.Process // nil before it starts
}

// Addr is "host:port" for the service's k-th port.
func (s *Service) Addr(k int) string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Ports[k])) }

// LogPath is the file that holds the service's stdout and stderr.
func (s *Service) LogPath() string { return filepath.Join(s.Dir, s.Name+".log") }

func (s *Service) String() string { return s.Name }

// Servicer is implemented by a system whose About names Services: how to start each, and
// when it serves. The kit starts every service, in About's order, and waits until it serves,
// after Preparer and before any replica's server starts.
type Servicer interface {
	// ServiceCommand says how to start service s, in s.Dir (it may write the files s needs).
	ServiceCommand(c *Cluster, s *Service) (Command, error)
	// ServiceReady tells whether s serves; the kit polls it after the start.
	ServiceReady(ctx context.Context, c *Cluster, s *Service) (ok bool, seen string, err error)
}

// Service returns the cluster's service that About.Services names name, or nil.
func (c *Cluster) Service(name string) *Service {
	i := slices.IndexFunc(c.Services, func(s *Service) bool { return s.spec == name })
	if i < 0 {
		return nil
	}
	return c.Services[i]
}

// servicesError says what is wrong with about's services for sys, or nil.
func servicesError(about About, sys System) error {
	if len(about.Services) == 0 {
		return nil
	}
	if _, ok := sys.(Servicer); !ok {
		return fmt.Errorf("plugin %q: About names services, and the system does not say how to start them (kit.Servicer)", about.Name)
	}
	seen := map[string]bool{}
	for _, s := range about.Services {
		switch {
		case s.Name == "" || seen[s.Name]:
			return fmt.Errorf("plugin %q: every service needs a name of its own, got %q", about.Name, s.Name)
		case len(s.Ports) == 0:
			return fmt.Errorf("plugin %q: service %s names no ports", about.Name, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// servicePorts is how many ports the services take on loopback.
func (a About) servicePorts() int {
	n := 0
	for _, s := range a.Services {
		n += len(s.Ports)
	}
	return n
}

// makeServices adds About's services to c, with no process started: each on the host of the
// network after the replicas', or on loopback at the ports after the replicas'.
func (p *Plugin) makeServices(c *Cluster) {
	next := c.Spec.BasePort + c.Spec.Replicas*p.about.PortsPerReplica
	for k, sp := range p.about.Services {
		name := p.about.Name + "-" + sp.Name
		s := &Service{Name: name, Dir: filepath.Join(c.Spec.Dir, name), Host: "127.0.0.1", spec: sp.Name, host: c.Spec.Replicas + k}
		if c.net != nil {
			s.Host, s.Ports, s.NetNS = c.net.IP(s.host).String(), slices.Clone(sp.Ports), c.net.NS(s.host)
		} else {
			for range sp.Ports {
				s.Ports = append(s.Ports, next)
				next++
			}
		}
		c.Services = append(c.Services, s)
	}
}

// startServices starts every service and waits until each serves; a service that exits ends
// the start with its name and log.
func (p *Plugin) startServices(ctx context.Context) error {
	if len(p.c.Services) == 0 {
		return nil
	}
	sv := p.sys.(Servicer) // New checked it
	for _, s := range p.c.Services {
		cmd, err := sv.ServiceCommand(p.c, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		path, err := ExpandHome(cmd.Path)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if s.proc, err = proc.StartProcess(proc.ProcessSpec{Name: s.Name, Dir: s.Dir, Path: path, Args: cmd.Args, Env: cmd.Env, NetNS: s.NetNS}); err != nil {
			return fmt.Errorf("service %w", err)
		}
		p.act(nil, "service %s: start %s (pid %d) at %s", s.Name, filepath.Base(cmd.Path), s.proc.Pid, s.Host)
		err = p.await(ctx, "service "+s.Name+" to serve", nil, func(ctx context.Context) (bool, string, error) {
			if !s.proc.Running() {
				return false, "", fmt.Errorf("service %s exited (%v); its log is %s", s.Name, s.proc.Wait(ctx), s.LogPath())
			}
			return sv.ServiceReady(ctx, p.c, s)
		})
		if err != nil {
			return err
		}
		p.act(nil, "service %s serves", s.Name)
	}
	return nil
}

// stopServices SIGKILLs every service's process group and waits until it is gone.
func (p *Plugin) stopServices(ctx context.Context) error {
	var errs []error
	for _, s := range p.c.Services {
		if s.proc == nil {
			continue
		}
		if err := s.proc.Kill(ctx); err != nil {
			errs = append(errs, fmt.Errorf("service %s: %w", s.Name, err))
			continue
		}
		s.proc = nil
	}
	return errors.Join(errs...)
}
