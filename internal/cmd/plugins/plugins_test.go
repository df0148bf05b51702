package plugins_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
	"github.com/modulo-testing/modulo/internal/cmd/root"
	"github.com/modulo-testing/modulo/oracle"
	"github.com/modulo-testing/modulo/results"
)

// TestPluginOutsideTheRepository: a plugin built in a module of its own, which imports only
// the kit, declares a DRM (here etcd's plugin, renamed, with a DRM Q/C/X); dropped into a
// directory, modulo lists it with the releases of its server in modulo's cache, generates its
// DRM's schedules and runs a campaign on it, with no file of modulo changed.
func TestPluginOutsideTheRepository(t *testing.T) {
	plugintest.Servers(t) // builds a plugin module and runs etcd clusters
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatalf("etcd is not installed (scripts/setup installs it): %v", err)
	}
	_, here, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(here), "..", "..", "..")
	src, err := os.ReadFile(filepath.Join(repo, "plugins", "etcd", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	const about = `var about = kit.About{Name: "etcd", DRMs: []string{"qce", "qpe", "qne", "qcne"}, PortsPerReplica: 2, Ports: []int{2379, 2380}, Releases: kit.Releases{Path: "etcd/<version>/etcd", Key: "server"}}`
	if !bytes.Contains(src, []byte(about)) {
		t.Fatalf("plugins/etcd/main.go no longer has %s", about)
	}
	src = bytes.Replace(src, []byte(about), []byte(`var about = kit.About{
	Name:            "etcdx",
	Declare:         []kit.DRM{{Name: "qcx", Title: "Q/C/X", Rules: "quorum", System: "etcd", Summary: "etcd, from outside", Ops: 1, Replicas: 3}},
	PortsPerReplica: 2,
	Releases:        kit.Releases{Path: "etcd/<version>/etcd", Key: "server"},
}`), 1)
	mod := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"main.go": src,
		"go.sum":  sum,
		"go.mod":  []byte("module example.com/etcdx\n\ngo 1.26\n\nrequire github.com/modulo-testing/modulo v0.0.0\n\nreplace github.com/modulo-testing/modulo => " + abs + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "modulo-plugin-etcdx"), ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off") // the module cache has what modulo needs; the proxy the rest
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in the plugin's own module: %v\n%s", err, out)
	}
	imports, err := exec.Command("go", "list", "-C", mod, "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(imports)) {
		if strings.Contains(imp, "modulo-testing") && imp != "github.com/modulo-testing/modulo/cem/kit" {
			t.Errorf("the plugin imports %s; it should need only the kit", imp)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")) // gen finds it on PATH

	modulo := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := root.NewCmd(&out, &errOut)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String() + errOut.String(), err
	}
	cache := t.TempDir()
	t.Setenv("MODULO_CACHE", cache)
	if err := os.MkdirAll(filepath.Join(cache, "etcd", "9.9.9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "etcd", "9.9.9", "etcd"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := modulo("plugins")
	if err != nil || !strings.Contains(out, "etcdx") || !strings.Contains(out, "qcx (Q/C/X on etcd, quorum rules; defaults ops 1, replicas 3): etcd, from outside") {
		t.Fatalf("modulo plugins: %v\n%s", err, out)
	}
	if want := regexp.MustCompile(`(?m)^  etcdx: 9\.9\.9 +server = "` + regexp.QuoteMeta(cache) + `/etcd/<version>/etcd"$`); !want.MatchString(out) {
		t.Errorf("modulo plugins lists no release 9.9.9 of etcdx's server in the cache, as %s:\n%s", want, out)
	}
	work := t.TempDir()
	file := filepath.Join(work, "qcx.sched")
	if out, err := modulo("gen", "--drm", "qcx", "-o", file); err != nil {
		t.Fatalf("modulo gen --drm qcx: %v\n%s", err, out)
	}
	resultsDir := filepath.Join(work, "results")
	out, err = modulo("run", file, "--plugin-dir", bin, "--results-dir", resultsDir, "--workers", "1")
	if err != nil || !strings.Contains(out, "schedules: 6, pass: 6") {
		t.Fatalf("modulo run: %v\n%s", err, out)
	}
	recs, err := results.ReadRecords(filepath.Join(resultsDir, "qcx", results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.DRM != "qcx" || r.Plugin != "etcdx" || r.Verdict != oracle.Pass {
			t.Errorf("record %+v", r)
		}
	}
	if out, err := modulo("results", filepath.Join(resultsDir, "qcx")); err != nil || !strings.Contains(out, "Q/C/X") {
		t.Errorf("modulo results: %v\n%s", err, out)
	}
}
