package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/executor"
	"github.com/modulo-testing/modulo/internal/cmdutil"
)

// probeTimeout bounds starting a plugin and asking it to describe itself: a plugin answers in
// milliseconds, a server binary's --version in well under a second.
const probeTimeout = 30 * time.Second

// findPlugin returns the path of plugin binary modulo-plugin-<name>, looked up in dir (when
// set), then in the directory of the modulo executable, then on $PATH.
func findPlugin(name, dir string) (string, error) {
	bin := cem.PluginPrefix + name
	var where []string
	var dirs []string
	if dir != "" {
		dirs = append(dirs, dir)
		where = append(where, "plugin_dir "+dir)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
		where = append(where, filepath.Dir(exe)+" (next to modulo)")
	}
	for _, d := range dirs {
		path := filepath.Join(d, bin)
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return path, nil
		}
	}
	if path, err := exec.LookPath(bin); err == nil {
		return path, nil
	}
	return "", cmdutil.Usagef("plugin %s not found in %s or on $PATH; build it with 'go build -o bin/%s ./plugins/%s' in modulo's source tree and pass --plugin-dir bin",
		bin, strings.Join(where, ", "), bin, name)
}

// launcher starts the plugin binary at path, its warnings going to stderr.
func launcher(path string, stderr io.Writer) executor.Launcher {
	return func(ctx context.Context) (executor.Plugin, error) {
		c, err := cem.Launch(ctx, path, stderr)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// probe starts a plugin once to ask what it is, and checks that it realises d and that its
// server binary is there, before any schedule runs. Every problem is a usage error: the
// plugin or its configuration has to be fixed.
func probe(ctx context.Context, launch executor.Launcher, d drms.DRM, pluginConfig []byte) (cem.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	p, err := launch(ctx)
	if err != nil {
		return cem.Info{}, cmdutil.Usage(err)
	}
	info, err := p.Info(ctx, pluginConfig)
	closeErr := p.Close()
	if err != nil {
		return cem.Info{}, cmdutil.Usage(err) // names the plugin, and the server binary
	}
	if closeErr != nil {
		return cem.Info{}, closeErr
	}
	if !slices.Contains(info.Capabilities.DRMs, d.Name) {
		return cem.Info{}, cmdutil.Usagef("plugin %s %s does not realise %s (it realises: %s)",
			info.Name, info.Version, d.Name, strings.Join(info.Capabilities.DRMs, ", "))
	}
	if info.Capabilities.PortsPerReplica < 1 {
		return cem.Info{}, fmt.Errorf("plugin %s %s: says it needs %d ports per replica", info.Name, info.Version, info.Capabilities.PortsPerReplica)
	}
	return info, nil
}
