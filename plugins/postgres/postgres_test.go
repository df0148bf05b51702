package main

import (
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestConformance runs modulo's conformance suite on real PostgreSQL clusters of two and three
// servers: in process, and through the plugin binary as modulo runs it. The step timeout is the
// executor's default: a server rewound onto an idle primary reaches a consistent state only
// when the primary next flushes its WAL, about 10 s later, over the suite's default.
func TestConformance(t *testing.T) {
	plugintest.Servers(t)
	bin := plugintest.Build(t, ".")
	for _, n := range []int{2, 3} {
		t.Run(map[int]string{2: "two", 3: "three"}[n], func(t *testing.T) {
			plugintest.Run(t, plugintest.Config{
				DRM:         "pgl",
				Params:      aem.Params{Ops: 1, Replicas: n},
				New:         func() cem.CEM { return kit.New(about, &system{}) },
				Binary:      bin,
				StepTimeout: cem.DefaultStepTimeout,
			})
		})
	}
}

// TestReachable: the cluster's directory is opened to the servers' user, and a directory above
// it that the user cannot enter is an error naming it, left as it was (the plugin once added
// o+x to every directory above the cluster's, /root included).
func TestReachable(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	closed, open := filepath.Join(root, "closed"), filepath.Join(root, "open")
	for _, d := range []string{closed, open} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(d, "cluster"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(root), root, open} { // the first two are t's own, 0700
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	err = reachable(filepath.Join(closed, "cluster"), nobody)
	if err == nil || !strings.Contains(err.Error(), "who cannot enter "+closed+" (drwx------)") {
		t.Errorf("reachable below a 0700 directory: %v", err)
	}
	if fi, _ := os.Stat(closed); fi.Mode().Perm() != 0o700 {
		t.Errorf("%s is %v now: a directory above the cluster's was changed", closed, fi.Mode())
	}
	if err := reachable(filepath.Join(open, "cluster"), nobody); err != nil {
		t.Errorf("reachable below 0711 directories: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(open, "cluster")); fi.Mode().Perm() != 0o711 {
		t.Errorf("the cluster's directory is %v, want it opened to the servers' user", fi.Mode())
	}
}

func TestParseObservation(t *testing.T) {
	tests := []struct {
		row  string
		want map[string]string
	}{
		{"t\t0/4008A98\t2\n", map[string]string{"role": "standby", "epoch": "timeline 2", "position": "0/4008A98"}},
		{"f\t0/40066A0\t1", map[string]string{"role": "primary", "epoch": "timeline 1", "position": "0/40066A0"}},
		{"f\t0/1", map[string]string{"psql": `unexpected row "f\t0/1"`}},
	}
	for _, tt := range tests {
		if got := parseObservation(tt.row); !maps.Equal(got, tt.want) {
			t.Errorf("parseObservation(%q) = %v, want %v", tt.row, got, tt.want)
		}
	}
}
