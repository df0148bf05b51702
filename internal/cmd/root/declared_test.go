package root

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// declaredCampaign is a real campaign of the DRM mdl, which the MariaDB plugin declares.
const declaredCampaign = "../../../results/testdata/campaigns/mdl-1x2"

// builtModulo builds modulo, with no plugin beside it, and returns a function that runs it
// with args in a directory of t's, with no plugin on $PATH either, and returns its output.
func builtModulo(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	modulo := filepath.Join(plugintest.BuildModulo(t), "modulo")
	return func(args ...string) (string, error) {
		cmd := exec.Command(modulo, args...)
		cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// TestDeclaredDRMWithoutPlugin runs the built modulo, with no plugin beside it or on $PATH, on a
// copy of a campaign of a DRM that its plugin declares: results, report and show read it from
// the declaration its campaign.json holds (they once failed with `unknown DRM "mdl"`); gen,
// which knows the DRM only from its plugin, does not know it.
func TestDeclaredDRMWithoutPlugin(t *testing.T) {
	run := builtModulo(t)
	dir := filepath.Join(t.TempDir(), "copied")
	if err := os.CopyFS(dir, os.DirFS(declaredCampaign)); err != nil {
		t.Fatalf("copying %s: %v", declaredCampaign, err)
	}
	report := filepath.Join(t.TempDir(), "report.html")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"results", dir}, "mdl (S/CL/MD on MariaDB), ops=1, replicas=2"},
		{[]string{"results", dir}, "6a08e30b46ce8cdd  fail (divergence)"},
		{[]string{"report", dir, "-o", report}, ""},
		{[]string{"show", dir, "6a08e30b46ce8cdd"}, "1   D-> [1, 0]  failures 0:none 1:crash"},
	}
	for _, tt := range tests {
		out, err := run(tt.args...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("modulo %s: %v; want output with %q, got:\n%s", strings.Join(tt.args, " "), err, tt.want, out)
		}
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "S/CL/MD") {
		t.Errorf("the report names no S/CL/MD (%v)", err)
	}
	if out, err := run("gen", "--drm", "mdl", "--count"); err == nil || !strings.Contains(out, `unknown DRM "mdl"`) {
		t.Errorf("gen --drm mdl with no plugin: %v, %s; want unknown DRM", err, out)
	}
}

// TestDeclaredDRMFromPluginDir: gen knows a declared DRM from its plugin, which --plugin-dir
// names.
func TestDeclaredDRMFromPluginDir(t *testing.T) {
	plugintest.Servers(t) // the plugin asks mariadbd its version
	run := builtModulo(t)
	plugins := plugintest.BuildPlugin(t, "mariadb", "github.com/modulo-testing/modulo/plugins/mariadb")
	if out, err := run("gen", "--drm", "mdl", "--count", "--plugin-dir", plugins); err != nil || strings.TrimSpace(out) != "8" {
		t.Errorf("gen --drm mdl --count --plugin-dir %s: %v, %q; want 8", plugins, err, out)
	}
}
