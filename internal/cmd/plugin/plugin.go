// Package plugin is `modulo plugin`: help for writing DRM plugins. `modulo plugin new` writes
// the skeleton of a plugin built on package cem/kit, with a test that runs the conformance
// suite (cem/plugintest) on it.
package plugin

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/drms"
	"github.com/modulo-testing/modulo/internal/cmdutil"
)

//go:embed templates/*.tmpl
var templates embed.FS

// NewOptions are `plugin new`'s inputs, apart from flag parsing.
type NewOptions struct {
	Out   io.Writer
	Name  string // the plugin's name: the binary is modulo-plugin-<Name>
	DRM   string // the short name of the DRM it realises
	Model string // "quorum" or "links", for a DRM the catalogue does not have yet
	Ports int    // ports per replica
	Dir   string // where to write; empty means plugins/<Name>
	Force bool   // overwrite existing files
}

// NewCmd returns the plugin command with its subcommands; runF replaces RunNew in tests.
func NewCmd(out io.Writer, runF func(*NewOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Help for writing DRM plugins",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newNewCmd(out, runF))
	return cmd
}

func newNewCmd(out io.Writer, runF func(*NewOptions) error) *cobra.Command {
	opts := &NewOptions{Out: out}
	cmd := &cobra.Command{
		Use:   "new NAME --drm DRM [--ports N] [--dir DIR]",
		Short: "Write the skeleton of a new plugin, with a test that runs the conformance suite",
		Long: `Write the skeleton of a DRM plugin built on modulo's plugin kit (package cem/kit):
main.go, with a comment at each place to fill in, and a test that runs the conformance suite
(package cem/plugintest) on real clusters. Both compile as written; the test passes once
every place is filled in. docs/writing-a-plugin.md builds a plugin this way, step by step.

NAME names the plugin and its binary, modulo-plugin-NAME. --drm is the DRM it realises: one of
the catalogue's, whose model then says which capabilities the skeleton has, or a new one, whose
model --model gives (quorum: crash failures and a leader, as Q/C/Z; links: replication links
that the plugin sets, as S/L/R) and which must then be added to drms/drms.go.`,
		Example: `  modulo plugin new etcd --drm qce --ports 2
  modulo plugin new tikv --drm qct --model quorum --ports 2 --dir plugins/tikv`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return RunNew(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DRM, "drm", "", "the short `NAME` of the DRM the plugin realises (required)")
	f.StringVar(&opts.Model, "model", "", "quorum or links: the model of a DRM the catalogue does not have yet")
	f.IntVar(&opts.Ports, "ports", 1, "ports each replica listens on")
	f.StringVar(&opts.Dir, "dir", "", "write into `DIR` (default plugins/NAME)")
	f.BoolVar(&opts.Force, "force", false, "overwrite files that exist")
	return cmd
}

var pluginName = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// skeleton is what the templates are given.
type skeleton struct {
	Name, DRM, Dir, Pkg      string
	Ports                    int
	Quorum, Links, Snapshots bool
}

// RunNew writes the skeleton opts describe.
func RunNew(opts *NewOptions) error {
	if !pluginName.MatchString(opts.Name) {
		return cmdutil.Usagef("plugin name %q: use lower-case letters and digits, starting with a letter", opts.Name)
	}
	if opts.DRM == "" {
		return cmdutil.Usagef("--drm is required: the DRM the plugin realises")
	}
	if opts.Ports < 1 || opts.Ports > 16 {
		return cmdutil.Usagef("--ports must be between 1 and 16, got %d", opts.Ports)
	}
	sk := skeleton{Name: opts.Name, DRM: strings.ToLower(opts.DRM), Ports: opts.Ports, Dir: opts.Dir}
	if sk.Dir == "" {
		sk.Dir = filepath.Join("plugins", opts.Name)
	}
	sk.Pkg = filepath.ToSlash(sk.Dir) // the package as go test takes it
	if !filepath.IsAbs(sk.Dir) {
		sk.Pkg = "./" + filepath.ToSlash(filepath.Clean(sk.Dir))
	}
	newDRM := false
	if d, err := drms.Lookup(opts.DRM); err == nil {
		if d.Plugin != opts.Name {
			return cmdutil.Usagef("DRM %s is realised by the %s plugin; a new plugin needs a DRM of its own (with --model)", d.Name, d.Plugin)
		}
		if opts.Model != "" {
			return cmdutil.Usagef("--model is for a DRM the catalogue does not have; %s's model is %s", d.Name, d.Model.Name())
		}
		_, sk.Quorum = d.Model.(aem.Quorum)
		sk.DRM, sk.Links, sk.Snapshots = d.Name, !sk.Quorum, d.Model == aem.SCLR
	} else {
		switch opts.Model {
		case "quorum":
			sk.Quorum = true
		case "links":
			sk.Links = true
		default:
			return cmdutil.Usagef("DRM %q is not in the catalogue (%s): give its model with --model quorum or --model links", opts.DRM, strings.Join(drms.Names(), ", "))
		}
		newDRM = true
	}
	files := []struct{ tmpl, path string }{
		{"main.go.tmpl", filepath.Join(sk.Dir, "main.go")},
		{"plugin_test.go.tmpl", filepath.Join(sk.Dir, opts.Name+"_test.go")},
	}
	rendered := make([][]byte, len(files))
	for i, f := range files {
		b, err := render(f.tmpl, sk)
		if err != nil {
			return err
		}
		if _, err := os.Stat(f.path); err == nil && !opts.Force {
			return cmdutil.Usagef("%s exists; pass --force to overwrite it", f.path)
		}
		rendered[i] = b
	}
	if err := os.MkdirAll(sk.Dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", sk.Dir, err)
	}
	for i, f := range files {
		if err := os.WriteFile(f.path, rendered[i], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.path, err)
		}
		fmt.Fprintf(opts.Out, "wrote %s\n", f.path)
	}
	if newDRM {
		fmt.Fprintf(opts.Out, "add DRM %s to the catalogue in drms/drms.go, with Plugin: %q\n", sk.DRM, opts.Name)
	}
	fmt.Fprintf(opts.Out, "next: fill in each TODO of %s (docs/writing-a-plugin.md), then run go test %s\n",
		filepath.Join(sk.Dir, "main.go"), sk.Pkg)
	return nil
}

// render executes template name with sk and formats the result as gofmt does.
func render(name string, sk skeleton) ([]byte, error) {
	t, err := template.ParseFS(templates, "templates/"+name)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, sk); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return src, nil
}
