package plugin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/internal/cmdutil"
)

// TestNewSkeletonBuilds writes skeletons into directories inside this module (named with a
// leading "_", which ./... patterns skip, so that nobody else's build sees them) and checks that
// go build and go vet pass on them, test file included: one go build (which links every
// skeleton, and discards them) and one go vet for all of them, not two go commands each.
func TestNewSkeletonBuilds(t *testing.T) {
	tests := []struct {
		name      string
		opts      NewOptions
		want      []string // in main.go
		wantNot   []string
		wantNotes string // in the output
	}{
		{name: "catalogue quorum DRM", opts: NewOptions{Name: "etcd", DRM: "qce", Ports: 2},
			want: []string{"func (s *system) Leader(", "func (s *system) Logged(", `DRMs: []string{"qce"}, PortsPerReplica: 2`}, wantNot: []string{"Follow("}},
		{name: "catalogue S/CL/R DRM", opts: NewOptions{Name: "redis", DRM: "sclr", Ports: 1},
			want: []string{"func (s *system) Follow(", "func (s *system) InSync(", "func (s *system) CopySnapshot("}, wantNot: []string{"Leader("}},
		{name: "own quorum DRM", opts: NewOptions{Name: "tikv", DRM: "qct", Model: "qcz", Ports: 3},
			want: []string{"func (s *system) Leader(", `Name: "qct", Title: "Q/C/T", Rules: "quorum"`}, wantNot: []string{"DRMs:"},
			wantNotes: "the plugin declares DRM qct (Q/C/T, quorum rules): no file of modulo changes"},
		{name: "own link DRM", opts: NewOptions{Name: "valkey", Model: "slr", Ports: 1},
			want: []string{"func (s *system) Unfollow(", `Name: "valkey", Title: "S/L/V", Rules: "link"`}, wantNot: []string{"CopySnapshot(", "Leader("}},
		{name: "own suspend DRM", opts: NewOptions{Name: "keydb", Model: "suspend", Title: "S/S/KDB", Ports: 1},
			want: []string{"func (s *system) Follow(", `Title: "S/S/KDB", Rules: "suspend"`}, wantNot: []string{"CopySnapshot("}},
		{name: "own crash-link DRM", opts: NewOptions{Name: "postgres", DRM: "pgl", Model: "sclr", Ports: 1},
			want: []string{"func (s *system) CopySnapshot(", `Name: "pgl", Title: "S/CL/P", Rules: "crash-link", System: "postgres"`, "Ops:     2, Replicas: 2"}},
		{name: "a title that would clash", opts: NewOptions{Name: "zk", Model: "qcz", Ports: 3},
			want: []string{`Title: "Q/C/zk"`}},
	}
	var dirs []string
	for _, tt := range tests {
		dir, err := os.MkdirTemp(".", "_skeleton-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out, tt.opts.Dir = &out, dir
			if err := RunNew(&tt.opts); err != nil {
				t.Fatal(err)
			}
			main, err := os.ReadFile(filepath.Join(dir, "main.go"))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !bytes.Contains(main, []byte(w)) {
					t.Errorf("main.go lacks %q", w)
				}
			}
			for _, w := range tt.wantNot {
				if bytes.Contains(main, []byte(w)) {
					t.Errorf("main.go has %q", w)
				}
			}
			if !strings.Contains(out.String(), "wrote "+filepath.Join(dir, tt.opts.Name+"_test.go")) || !strings.Contains(out.String(), tt.wantNotes) {
				t.Errorf("output:\n%s", out.String())
			}
			if n := bytes.Count(main, []byte("TODO")); n < 8 {
				t.Errorf("main.go has %d TODO comments, want one at each place to fill in", n)
			}
			dirs = append(dirs, "./"+filepath.ToSlash(dir))
		})
	}
	if len(dirs) != len(tests) {
		t.Fatalf("%d of %d skeletons written", len(dirs), len(tests))
	}
	for _, verb := range []string{"build", "vet"} {
		if b, err := exec.Command("go", append([]string{verb}, dirs...)...).CombinedOutput(); err != nil {
			t.Errorf("go %s %s: %v\n%s", verb, strings.Join(dirs, " "), err, b)
		}
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    NewOptions
		wantErr string
	}{
		{"bad name", NewOptions{Name: "My-Plugin", DRM: "qce", Ports: 1}, `plugin name "My-Plugin": use lower-case letters and digits, starting with a letter`},
		{"no model", NewOptions{Name: "etcd", Ports: 1}, "--model is required: the model whose rules the plugin's DRM follows (qcz, ssr, slr or sclr); or --drm for a built-in DRM"},
		{"no ports", NewOptions{Name: "etcd", DRM: "qce", Ports: 0}, "--ports must be between 1 and 16, got 0"},
		{"DRM of another plugin", NewOptions{Name: "etcd", DRM: "qcz", Ports: 1}, "DRM qcz is realised by the zookeeper plugin; a new plugin declares a DRM of its own: give its model with --model"},
		{"own DRM with a built-in name", NewOptions{Name: "etcd", DRM: "qce", Model: "qcz", Ports: 1}, `plugin etcd declares DRM "qce": the built-in DRM qce (Q/C/E, realised by the etcd plugin) has that name`},
		{"new DRM without model", NewOptions{Name: "tikv", DRM: "qct", Ports: 1}, `DRM "qct" is not built in (qce, qcm, qcne, qcnz, qcz, qne, qnz, qpe, qpz, sclr, slr, snr, ssr): give the model its rules follow with --model qcz, ssr, slr or sclr`},
		{"unknown model", NewOptions{Name: "tikv", Model: "raft", Ports: 1}, `unknown rule set "raft" (quorum or qcz, suspend or ssr, link or slr, crash-link or sclr, crash-partition)`},
		{"existing file", NewOptions{Name: "etcd", DRM: "qce", Ports: 1, Dir: dir}, filepath.Join(dir, "main.go") + " exists; pass --force to overwrite it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out = &out
			err := RunNew(&tt.opts)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if code := cmdutil.Code(err); code != cmdutil.ExitUsage {
				t.Errorf("exit status %d, want %d", code, cmdutil.ExitUsage)
			}
			if out.Len() != 0 {
				t.Errorf("wrote output: %s", out.String())
			}
		})
	}
	b, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	if string(b) != "package main\n" {
		t.Error("an existing main.go was overwritten without --force")
	}
}

func TestNewFlags(t *testing.T) {
	tests := []struct {
		args []string
		want NewOptions
	}{
		{[]string{"new", "etcd", "--drm", "qce"}, NewOptions{Name: "etcd", DRM: "qce", Ports: 1}},
		{[]string{"new", "tikv", "--drm", "qct", "--model", "qcz", "--title", "Q/C/TiKV", "--ports", "3", "--dir", "x", "--force"},
			NewOptions{Name: "tikv", DRM: "qct", Model: "qcz", Title: "Q/C/TiKV", Ports: 3, Dir: "x", Force: true}},
	}
	for _, tt := range tests {
		var got *NewOptions
		cmd := NewCmd(&bytes.Buffer{}, func(o *NewOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		got.Out = nil
		if *got != tt.want {
			t.Errorf("%v: options = %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}
