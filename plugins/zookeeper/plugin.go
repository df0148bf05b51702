package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/internal/build"
)

// Plugin implements cem.CEM for ZooKeeper: one cluster at a time.
type Plugin struct {
	mu  sync.Mutex
	cfg Config   // the last Start's configuration; Info reads its java and jar directory
	c   *cluster // nil before Start and after Teardown
}

var _ cem.CEM = (*Plugin)(nil)

// NewPlugin returns a plugin with no cluster.
func NewPlugin() *Plugin { return &Plugin{cfg: DefaultConfig()} }

// Info describes the plugin and the ZooKeeper that config names. The version comes from
// zookeeper.jar, without starting a JVM.
func (p *Plugin) Info(ctx context.Context, config []byte) (cem.Info, error) {
	cfg, err := parseConfig(config)
	if err != nil {
		return cem.Info{}, err
	}
	in, err := findInstall(&cfg)
	if err != nil {
		return cem.Info{}, err
	}
	return cem.Info{
		Name:          "zookeeper",
		Version:       build.Version,
		ServerVersion: in.version,
		Capabilities:  cem.Capabilities{DRMs: []string{"qcz"}, PortsPerReplica: portsPerReplica},
	}, nil
}

// Start starts a fresh ensemble as spec says and waits until every replica serves under one
// leader with the same data.
func (p *Plugin) Start(ctx context.Context, spec cem.ClusterSpec) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		return errors.New("zookeeper: a cluster is already running; tear it down first")
	}
	cfg, err := parseConfig(spec.Config)
	if err != nil {
		return err
	}
	p.cfg = cfg
	c, err := newCluster(spec, cfg)
	if err != nil {
		return err
	}
	p.c = c // so that Teardown ends whatever a failed start left running
	return c.start(ctx)
}

// Apply realises one Q/C/Z transition.
func (p *Plugin) Apply(ctx context.Context, step cem.Step) (cem.StepReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return cem.StepReport{}, fmt.Errorf("zookeeper: step %d: no cluster is running", step.Index+1)
	}
	return p.c.apply(ctx, step)
}

// Read returns every replica's data, by abstract replica index.
func (p *Plugin) Read(ctx context.Context) (cem.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return cem.Snapshot{}, errors.New("zookeeper: read: no cluster is running")
	}
	return p.c.read(ctx), nil
}

// Teardown SIGKILLs every replica and sweeps the cluster directory for leftovers. It is safe to
// call twice and after a failed Start.
func (p *Plugin) Teardown(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return nil
	}
	if err := p.c.teardown(ctx); err != nil {
		return err // keep the cluster, so that another Teardown tries again
	}
	p.c = nil
	return nil
}
