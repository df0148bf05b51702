package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/config"
)

// SetupError is a problem of the host's set-up that no schedule could run with: a plugin that
// is missing or rejects its configuration, ports that cannot be used. The user must fix it.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

func setupErrorf(format string, args ...any) error {
	return &SetupError{Err: fmt.Errorf(format, args...)}
}

// Prepare finds the plugin of d (in cfg.PluginDir, next to the modulo executable, then on
// $PATH), starts it once to check that it realises d and that its configuration and the server
// binary it names are right, and checks the ports that cfg.Workers clusters of replicas need.
// The launcher it returns starts the plugin with its messages going to stderr. A problem the
// user must fix is a *SetupError.
func Prepare(ctx context.Context, cfg config.Config, d drms.DRM, replicas int, stderr io.Writer) (cem.Info, Launcher, error) {
	path := d.PluginPath // where the plugin that declares it was found
	if path == "" {
		var err error
		if path, err = findPlugin(d.Plugin, cfg.PluginDir); err != nil {
			return cem.Info{}, nil, err
		}
	}
	launch := launcher(path, stderr)
	info, err := probe(ctx, launch, d, cfg.Plugins[d.Plugin])
	if err != nil {
		return cem.Info{}, nil, err
	}
	if info.Capabilities.InNamespaces() { // every replica listens at an address of its own: no port of a block is used
		return info, launch, nil
	}
	if why, ok := strings.CutPrefix(info.Capabilities.Network, cem.NetworkLoopback+": "); ok { // a plugin from before namespaces says nothing
		fmt.Fprintf(stderr, "modulo: plugin %s: servers listen on 127.0.0.1, each worker's at ports from %d, not in network namespaces of their own: %s\n",
			info.Name, cfg.BasePort, why)
	}
	stride := Stride(info.Capabilities.Ports(replicas))
	if err := checkPorts(cfg.BasePort, cfg.Workers*stride, cfg.AllowEphemeralPorts, stderr); err != nil {
		return cem.Info{}, nil, err
	}
	return info, launch, nil
}

// probeTimeout bounds starting a plugin and asking it to describe itself: a plugin answers in
// milliseconds, a server binary's --version in well under a second.
const probeTimeout = 30 * time.Second

// findPlugin returns the path of plugin binary modulo-plugin-<name>, looked up in dir (when
// set), then in the directory of the modulo executable, then on $PATH.
func findPlugin(name, dir string) (string, error) {
	bin := cem.PluginPrefix + name
	var first, where []string
	if dir != "" {
		first = []string{dir}
	}
	for i, d := range pluginDirs(first) {
		if i < len(first) {
			where = append(where, "plugin_dir "+d)
		} else {
			where = append(where, d+" (next to modulo)")
		}
		path := filepath.Join(d, bin)
		fi, err := os.Stat(path)
		switch {
		case err != nil || fi.IsDir():
		case fi.Mode().Perm()&0o111 == 0:
			return "", setupErrorf("plugin %s is not executable (mode %v): chmod +x it, or build it again", path, fi.Mode().Perm())
		default:
			return path, nil
		}
	}
	if path, err := exec.LookPath(bin); err == nil {
		return path, nil
	}
	return "", setupErrorf("plugin %s not found in %s or on $PATH; build it with 'go build -o bin/%s ./plugins/%s' in modulo's source tree and pass --plugin-dir bin",
		bin, strings.Join(where, ", "), bin, name)
}

// launcher starts the plugin binary at path, its warnings going to stderr.
func launcher(path string, stderr io.Writer) Launcher {
	return func(ctx context.Context) (Plugin, error) {
		c, err := cem.Launch(ctx, path, stderr)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// probe starts a plugin once to ask what it is, and checks that it realises d and that its
// server binary is there, before any schedule runs. Every problem is a *SetupError: the
// plugin or its configuration has to be fixed.
func probe(ctx context.Context, launch Launcher, d drms.DRM, pluginConfig []byte) (cem.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	p, err := launch(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return cem.Info{}, setupErrorf("plugin %s: no handshake within %v: is it a modulo plugin built from this source tree?", d.Plugin, probeTimeout)
	}
	if err != nil {
		return cem.Info{}, &SetupError{Err: err}
	}
	info, err := p.Info(ctx, pluginConfig)
	closeErr := p.Close()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return cem.Info{}, setupErrorf("plugin %s: no answer to Info within %v", d.Plugin, probeTimeout)
	}
	if err != nil {
		return cem.Info{}, &SetupError{Err: err} // names the plugin, and the server binary
	}
	if closeErr != nil {
		return cem.Info{}, closeErr
	}
	base, added, err := drms.SplitName(d.Name)
	if err != nil {
		return cem.Info{}, &SetupError{Err: err}
	}
	if !slices.Contains(info.Capabilities.DRMs, base) {
		return cem.Info{}, setupErrorf("plugin %s %s does not realise %s (it realises: %s)",
			info.Name, info.Version, base, strings.Join(info.Capabilities.DRMs, ", "))
	}
	for _, f := range added {
		if err := realises(info, f); err != nil {
			return cem.Info{}, setupErrorf("plugin %s %s cannot run %s: %v", info.Name, info.Version, d.Name, err)
		}
	}
	if info.Capabilities.PortsPerReplica < 1 {
		return cem.Info{}, fmt.Errorf("plugin %s %s: says it needs %d ports per replica", info.Name, info.Version, info.Capabilities.PortsPerReplica)
	}
	return info, nil
}

// realises says why the plugin of info cannot fail replicas by kind f here, or nil: its
// capabilities list every kind it knows, with why not where this host cannot
// (cem.Capabilities.Failures).
func realises(info cem.Info, f aem.Failure) error {
	for _, k := range info.Capabilities.Failures {
		name, why, cannot := strings.Cut(k, ": ")
		switch {
		case name != f.String():
		case cannot:
			return fmt.Errorf("%s: %s", f, why)
		default:
			return nil
		}
	}
	return fmt.Errorf("it realises no %s failures (it realises: %s)", f, strings.Join(info.Capabilities.Failures, "; "))
}
