package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modulo-testing/modulo/cem/plugintest"
)

// TestOutsideTreeCommands runs, as they stand, the shell commands that docs/writing-a-plugin.md
// gives a plugin's author outside modulo's tree (a module of their own, a skeleton from the
// built modulo, the kit from a checkout), with ~/src/modulo a link to this checkout, and checks
// that the skeleton they leave builds. The docs once said only "go get ... or a replace
// directive", and go get cannot fetch modulo (it is not on the module proxy).
func TestOutsideTreeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modulo and a plugin module of its own")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "writing-a-plugin.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```sh\nmkdir ~/src/modulo-pg")
	if !ok {
		t.Fatal("docs/writing-a-plugin.md has no sh block that starts with mkdir ~/src/modulo-pg")
	}
	block, _, _ := strings.Cut(rest, "```")
	block = "mkdir ~/src/modulo-pg" + block
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(home, "src", "modulo")); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + plugintest.BuildModulo(t) + string(os.PathListSeparator) + os.Getenv("PATH")}
	// Go's caches and settings default to places under HOME: they stay where they are.
	vars := []string{"GOMODCACHE", "GOCACHE", "GOPATH", "GOPROXY", "GOFLAGS"}
	out, err := exec.Command("go", append([]string{"env"}, vars...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	for i, value := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		env = append(env, vars[i]+"="+value)
	}
	cmd := exec.Command("sh", "-e", "-c", block)
	cmd.Env, cmd.Dir = append(os.Environ(), env...), home
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the docs' commands:\n%s\nfailed: %v\n%s", block, err, out)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(home, "modulo-plugin-postgres"), ".")
	build.Env, build.Dir = cmd.Env, filepath.Join(home, "src", "modulo-pg")
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("go build of the skeleton: %v\n%s", err, out)
	}
}
