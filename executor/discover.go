package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/drms"
)

// Found is a plugin binary found by Catalogue, and what it said of itself with its default
// configuration.
type Found struct {
	Path string
	Info cem.Info
	Err  error // it did not start or describe itself
}

// Catalogue finds the plugin binaries (modulo-plugin-*) in the plugin directories, next to the
// modulo executable and on $PATH, the first of each name as Prepare would run it, and asks each
// what it is: the DRMs that plugins declare come from here (it is the drms.Resolver that
// modulo's commands install). It looks once, when first asked.
type Catalogue struct {
	stderr io.Writer
	mu     sync.Mutex
	dirs   []string
	found  []Found
	looked bool
}

// NewCatalogue returns a catalogue whose plugins' messages go to stderr.
func NewCatalogue(stderr io.Writer) *Catalogue { return &Catalogue{stderr: stderr} }

var _ drms.Resolver = (*Catalogue)(nil)

// AddDir adds dir to the directories searched first; plugins are looked for again.
func (c *Catalogue) AddDir(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if slices.Contains(c.dirs, dir) {
		return
	}
	c.dirs = append(c.dirs, dir)
	c.looked = false
}

// discoverTimeout bounds starting one plugin and hearing what it is.
const discoverTimeout = 15 * time.Second

// Plugins returns the plugins found, in the order of their directories, then by name.
func (c *Catalogue) Plugins() []Found {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.looked {
		return c.found
	}
	paths := pluginPaths(c.dirs)
	found := make([]Found, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			found[i] = Found{Path: path}
			ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
			defer cancel()
			p, err := cem.Launch(ctx, path, c.stderr)
			if err != nil {
				found[i].Err = err
				return
			}
			found[i].Info, found[i].Err = p.Info(ctx, nil)
			found[i].Err = errors.Join(found[i].Err, p.Close())
		})
	}
	wg.Wait()
	c.found, c.looked = found, true
	return found
}

// pluginDirs returns where plugins are looked for before $PATH: dirs, then the directory of
// modulo's executable.
func pluginDirs(dirs []string) []string {
	search := slices.Clone(dirs)
	if exe, err := os.Executable(); err == nil {
		search = append(search, filepath.Dir(exe))
	}
	return search
}

// pluginPaths lists the executable modulo-plugin-* files in dirs, next to the executable and
// on $PATH: the first of each name.
func pluginPaths(dirs []string) []string {
	search := append(pluginDirs(dirs), filepath.SplitList(os.Getenv("PATH"))...)
	var paths, names []string
	for _, dir := range search {
		matches, _ := filepath.Glob(filepath.Join(dir, cem.PluginPrefix+"*")) // the pattern is valid
		slices.Sort(matches)
		for _, m := range matches {
			fi, err := os.Stat(m)
			name := filepath.Base(m)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || slices.Contains(names, name) {
				continue
			}
			names = append(names, name)
			paths = append(paths, m)
		}
	}
	return paths
}

// Declared returns the DRMs that the plugins found declare. A name that two plugins declare
// is an error naming both; so is a declaration that drms.Declare refuses. A plugin that could
// not describe itself is named in the error too, since a DRM looked up may be its.
func (c *Catalogue) Declared() ([]drms.DRM, error) {
	var out []drms.DRM
	var errs []error
	by := map[string]Found{}
	for _, f := range c.Plugins() {
		if f.Err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", f.Path, f.Err))
			continue
		}
		for _, spec := range f.Info.Capabilities.Declared {
			d, err := spec.DRM(f.Info.Name)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.Path, err))
				continue
			}
			if other, ok := by[d.Name]; ok {
				errs = append(errs, fmt.Errorf("DRM %s is declared by two plugins: %s (%s) and %s (%s); remove one", d.Name, other.Path, other.Info.Name, f.Path, f.Info.Name))
				continue
			}
			by[d.Name] = f
			d.PluginPath = f.Path
			out = append(out, d)
		}
	}
	return out, errors.Join(errs...)
}
