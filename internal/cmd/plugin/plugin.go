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
	"github.com/modulo-testing/modulo/internal/fsutil"
)

//go:embed templates/*.tmpl
var templates embed.FS

// NewOptions are `plugin new`'s inputs, apart from flag parsing.
type NewOptions struct {
	Out  io.Writer
	Name string // the plugin's name: the binary is modulo-plugin-<Name>
	DRM  string // the short name of the DRM it realises; for a DRM of its own, empty means Name
	// Model is the paper's model (qcz, ssr, slr, sclr) or rule set (quorum, suspend, link,
	// crash-link) whose rules the plugin's own DRM follows; empty for a built-in DRM.
	Model string
	Title string // the own DRM's title; empty derives one from the model and Name
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
		Use:   "new NAME --model qcz|ssr|slr|sclr [--drm SHORT] [--title T] [--ports N] [--dir DIR]",
		Short: "Write the skeleton of a new plugin, with a test that runs the conformance suite",
		Long: `Write the skeleton of a DRM plugin built on modulo's plugin kit (package cem/kit):
main.go, with a comment at each place to fill in, and a test that runs the conformance suite
(package cem/plugintest) on real clusters. Both compile as written; the test passes once
every place is filled in. docs/writing-a-plugin.md builds a plugin this way, step by step.

NAME names the plugin and its binary, modulo-plugin-NAME. A plugin for a new system declares a
DRM of its own, which follows the rules of one of the paper's models (--model):

  qcz   quorum      crash failures (SIGKILL), writes through a leader, automatic resync
  ssr   suspend     suspend failures (SIGSTOP), resync over links the plugin sets
  slr   link        link failures on a replication chain
  sclr  crash-link  crash and link failures, online and offline (snapshot) resync

The skeleton has every interface that model needs. The DRM's short name is --drm (default
NAME) and its title --title (default the model's with the system's initial: S/CL/P). No file
of modulo changes: drop the built binary next to modulo, or in --plugin-dir, and 'modulo
plugins' lists it. --drm alone names a built-in DRM that the plugin of that name realises.

A file that exists is left alone unless --force; with it, the file is replaced whole (through a
temporary file renamed over it; a link is kept and the file it names replaced).`,
		Example: `  modulo plugin new postgres --model sclr --drm pgl --title S/CL/P
  modulo plugin new tikv --model qcz --ports 2 --dir ~/src/modulo-tikv
  modulo plugin new etcd --drm qce --ports 2`,
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
	f.StringVar(&opts.Model, "model", "", "the `MODEL` whose rules the plugin's own DRM follows: qcz, ssr, slr or sclr")
	f.StringVar(&opts.DRM, "drm", "", "the short `NAME` of the DRM (default: the plugin's name), or of a built-in one without --model")
	f.StringVar(&opts.Title, "title", "", "the `TITLE` of the plugin's own DRM (default: the model's, ending in the system's initial)")
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
	// Declared: the plugin declares its DRM, with these.
	Declared                   bool
	Title, Rules, System, Like string
	Ops, Replicas              int
}

// RunNew writes the skeleton opts describe.
func RunNew(opts *NewOptions) error {
	if !pluginName.MatchString(opts.Name) {
		return cmdutil.Usagef("plugin name %q: use lower-case letters and digits, starting with a letter", opts.Name)
	}
	if opts.DRM == "" && opts.Model == "" {
		return cmdutil.Usagef("--model is required: the model whose rules the plugin's DRM follows (qcz, ssr, slr or sclr); or --drm for a built-in DRM")
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
	var rules aem.Rules
	if opts.Model == "" {
		d, err := drms.Lookup(opts.DRM)
		if err != nil || d.Declared {
			return cmdutil.Usagef("DRM %q is not built in (%s): give the model its rules follow with --model qcz, ssr, slr or sclr", opts.DRM, strings.Join(drms.Names(), ", "))
		}
		if d.Plugin != opts.Name {
			return cmdutil.Usagef("DRM %s is realised by the %s plugin; a new plugin declares a DRM of its own: give its model with --model", d.Name, d.Plugin)
		}
		sk.DRM, rules = d.Name, d.Model.Rules()
	} else {
		var err error
		if rules, err = aem.ParseRules(opts.Model); err != nil {
			return cmdutil.Usage(err)
		}
		like := paperModel(rules)
		sk.Declared, sk.Rules, sk.Like, sk.System = true, string(rules), like.Title, opts.Name
		sk.Ops, sk.Replicas = like.Defaults.Ops, like.Defaults.Replicas
		if sk.DRM == "" {
			sk.DRM = opts.Name
		}
		sk.Title = opts.Title
		if sk.Title == "" {
			sk.Title = like.Title[:strings.LastIndex(like.Title, "/")+1] + strings.ToUpper(opts.Name[:1])
			if _, err := drms.Lookup(sk.Title); err == nil {
				sk.Title = like.Title[:strings.LastIndex(like.Title, "/")+1] + opts.Name
			}
		}
		if _, err := drms.Declare(opts.Name, sk.DRM, sk.Title, sk.Rules, sk.System, "", like.Defaults, nil, nil); err != nil {
			return cmdutil.Usage(err)
		}
	}
	sk.Quorum = rules.Quorum()
	sk.Links, sk.Snapshots = !sk.Quorum, rules == aem.CrashLinkRules
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
		if err := fsutil.WriteFile(f.path, 0o644, func(w io.Writer) error { _, err := w.Write(rendered[i]); return err }); err != nil {
			return err
		}
		fmt.Fprintf(opts.Out, "wrote %s\n", f.path)
	}
	if sk.Declared {
		fmt.Fprintf(opts.Out, "the plugin declares DRM %s (%s, %s rules): no file of modulo changes\n", sk.DRM, sk.Title, sk.Rules)
	}
	fmt.Fprintf(opts.Out, "next: fill in each TODO of %s (docs/writing-a-plugin.md), then run go test %s\n",
		filepath.Join(sk.Dir, "main.go"), sk.Pkg)
	return nil
}

// paperModel is the built-in DRM of the paper whose model has rules r.
func paperModel(r aem.Rules) drms.DRM {
	for _, d := range drms.Builtin() {
		if d.Model.Rules() == r {
			return d
		}
	}
	panic("no built-in DRM has rule set " + string(r))
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
