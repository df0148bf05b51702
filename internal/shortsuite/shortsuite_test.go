package shortsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/cem/proc"
)

// TestShortSuiteStartsNothing runs `go test -short -count=1 ./...` of the module under strace
// and fails naming every program it ran that Rules do not allow (a server, a JVM, a browser,
// any tool outside the toolchain and the base system's stand-ins), every mount and every
// network namespace it made; it fails too when the short suite fails or when some package's
// test binary did not run under the trace.
//
// It runs only without -short, in the full suite. Under -short it would be part of what it
// runs: the copy inside would skip itself, and the short suite would take twice its time to
// prove what the full suite proves once.
func TestShortSuiteStartsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole short suite under strace, which takes minutes; run without -short")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("strace is not installed (scripts/setup installs it): %v", err)
	}
	env := goEnv(t, "GOROOT", "GOMOD", "CC")
	root := filepath.Dir(env["GOMOD"])
	rules := Rules{GOROOT: env["GOROOT"], TempDir: os.TempDir()}
	if cc, err := exec.LookPath(env["CC"]); err == nil {
		rules.CC = cc
	}

	budget := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		// Ended by its own context before the test binary's deadline, so that the run is
		// killed here rather than left behind by a timed-out test binary.
		budget = time.Until(d) - time.Minute
	}
	if budget <= time.Minute {
		t.Fatalf("%v left before the test's deadline: too little to run the short suite", budget)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	file := filepath.Join(t.TempDir(), "trace")
	args := append(StraceArgs(file), "go", "test", "-short", "-count=1", "-timeout="+budget.Round(time.Second).String(), "./...")
	cmd := exec.CommandContext(ctx, strace, args...)
	cmd.Dir = root
	// strace, go and the test binaries in a process group of their own, killed whole when the
	// context ends and once more after the run for whatever outlived strace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return proc.KillGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the short suite under strace: %v", err)
	}
	runErr := cmd.Wait()
	if err := proc.KillGroup(cmd.Process.Pid); err != nil {
		t.Error(err)
	}
	if runErr != nil {
		t.Errorf("the short suite under strace: %v (%v)\n%s", runErr, ctx.Err(), failures(out.String()))
	}
	t.Logf("the short suite ran in %v under strace", time.Since(start).Round(time.Second))

	trace := readTrace(t, file)
	var binaries []string
	for _, p := range trace.Programs() {
		if strings.HasPrefix(p, filepath.Join(rules.TempDir, "go-build")) && strings.HasSuffix(p, ".test") {
			binaries = append(binaries, p)
		}
	}
	if want := testedPackages(t, root); len(binaries) != want {
		t.Errorf("the trace shows %d test binaries started, want one for each of the %d packages with tests: %v", len(binaries), want, binaries)
	}
	for _, o := range trace.Offences(rules) {
		t.Errorf("go test -short %s", o)
	}
}

// goEnv returns the go command's values of the variables names.
func goEnv(t *testing.T, names ...string) map[string]string {
	t.Helper()
	b, err := exec.Command("go", append([]string{"env", "-json"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	env := map[string]string{}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("go env -json: %v", err)
	}
	return env
}

// testedPackages counts the module's packages that have tests: each has a test binary.
func testedPackages(t *testing.T, root string) int {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}", "./...")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return len(strings.Fields(string(b)))
}

// failures keeps the lines of go test's output that are not a package's "ok".
func failures(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "ok ") && !strings.HasPrefix(l, "?") && l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestOffences reads a trace of every kind of call the reader meets (a child's exec before the
// clone that made it, a call in two halves, one after a call strace could not name, a
// re-exec through /proc/self/exe) and finds exactly what the short suite must not do.
func TestOffences(t *testing.T) {
	trace := readTrace(t, filepath.Join("testdata", "trace.txt"))
	offences := trace.Offences(Rules{GOROOT: "/usr/local/go", TempDir: "/tmp", CC: "/usr/bin/gcc"})
	var got []string
	for _, o := range offences {
		got = append(got, o.What+" x"+strconv.Itoa(o.Count))
	}
	want := []string{
		"runs /usr/bin/java (started by zookeeper.test) x2",
		"runs /tmp/redis/redis-server (started by kit.test) x1",
		"runs /usr/bin/redis-server (started by modulo-plugin < kit.test) x1",
		"runs /usr/lib/chromium/chromium (started by report.test) x1",
		"runs /usr/lib/chromium/chromium (started by chromium < report.test) x1",
		"runs /usr/bin/grep (started by a process the trace does not name) x1",
		"makes a network namespace (unshare, by modulo-plugin < kit.test) x1",
		"mounts fuse.modulo-powerfs (by powerfs.test) x1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("offences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if want := "/usr/bin/java -Xmx128m org.apache.zookeeper.server.quorum.QuorumPeerMain"; len(offences) == 0 || offences[0].Example != want {
		t.Errorf("the first offence's example: %+v, want %q", offences, want)
	}
	if p := trace.Programs(); len(p) != 15 || p[0] != "/usr/local/go/bin/go" {
		t.Errorf("programs: %v, want the 15 the trace starts, the go command first", p)
	}
}

// TestRulesAllow: the toolchain, test binaries, what tests put in their own directories, the C
// compiler and the base system's stand-ins are allowed, and nothing else.
func TestRulesAllow(t *testing.T) {
	r := Rules{GOROOT: "/usr/local/go", TempDir: "/tmp", CC: "/usr/bin/gcc"}
	for _, tt := range []struct {
		path  string
		chain []string
		want  bool
	}{
		{"/usr/local/go/bin/go", nil, true},
		{"/usr/local/go/pkg/tool/linux_amd64/vet", []string{"go"}, true},
		{"/usr/local/gopher", []string{"go"}, false}, // beside GOROOT, not under it
		{"/tmp/go-build123/b001/kit.test", []string{"go"}, true},
		{"/tmp/TestA/001/modulo-plugin", []string{"kit.test"}, true},
		{"/tmp/TestB1234/001/exits", []string{"cem.test"}, true},
		{"/tmp/redis/redis-server", []string{"kit.test"}, false},
		{"/usr/bin/gcc", []string{"go"}, true},
		{"/usr/bin/x86_64-linux-gnu-as", []string{"gcc", "go"}, true},
		{"/bin/sh", []string{"proc.test"}, true},
		{"/usr/bin/sleep", []string{"sh", "proc.test"}, true},
		{"/usr/local/bin/sleep", []string{"proc.test"}, false},
		{"/usr/bin/cp", []string{"root.test"}, false},
		{"/usr/bin/redis-server", []string{"modulo-plugin", "kit.test"}, false},
		{"/usr/bin/java", []string{"zookeeper.test"}, false},
	} {
		if got := r.allows(start{path: tt.path, chain: tt.chain}); got != tt.want {
			t.Errorf("allows(%s started by %v) = %v, want %v", tt.path, tt.chain, got, tt.want)
		}
	}
}

// readTrace reads the strace output in the file at path.
func readTrace(t *testing.T, path string) *Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	trace, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return trace
}
