// Package scripts holds the tests of the shell scripts beside them that need no server.
package scripts

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// archive stands for a release archive: fetch-sources checks bytes, not what they hold.
var archive = []byte("\x1f\x8b not really a tarball, but the bytes a digest is taken of\n")

func hexOf(sum []byte) string { return hex.EncodeToString(sum) }

// fetch runs fetch-sources with manifest lines into a new directory and returns that
// directory, its exit status, stdout and stderr.
func fetch(t *testing.T, manifest string, system string) (dir string, code int, stdout, stderr string) {
	t.Helper()
	tmp := t.TempDir()
	m := filepath.Join(tmp, "sources.txt")
	if err := os.WriteFile(m, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(tmp, "sources")
	return dir, run(t, m, system, dir, &stdout, &stderr), stdout, stderr
}

func run(t *testing.T, manifest, system, dir string, stdout, stderr *string) int {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command("bash", "fetch-sources", "--manifest", manifest, system, dir)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	*stdout, *stderr = out.String(), errb.String()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("fetch-sources did not run: %v", err)
	return -1
}

// files lists what dir holds, hidden temporaries included.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestFetchSources serves archives from a local HTTP server and checks that fetch-sources keeps
// exactly the archives whose digest matches, and fails in one line naming the archive otherwise.
func TestFetchSources(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/fetch-sources with bash, curl and the digest tools, which the short suite does not start; run without -short")
	}
	var requests atomic.Int64
	sha512hex := hexOf(func() []byte { s := sha512.Sum512(archive); return s[:] }())
	// gpg --print-md's form: upper case, in groups of four, over lines.
	var gpg strings.Builder
	gpg.WriteString("app-1.0.tar.gz: ")
	for i := 0; i < len(sha512hex); i += 4 {
		if i > 0 && i%64 == 0 {
			gpg.WriteString("\n                ")
		} else if i > 0 {
			gpg.WriteString(" ")
		}
		gpg.WriteString(strings.ToUpper(sha512hex[i : i+4]))
	}
	gpg.WriteString("\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/app-1.0.tar.gz", "/app-2.0.tar.gz":
			w.Write(archive)
		case "/app-1.0.tar.gz.sha512":
			w.Write([]byte(gpg.String()))
		case "/app-2.0.tar.gz.sha512":
			fmt.Fprintf(w, "%s  app-2.0.tar.gz\n", sha512hex)
		case "/bad.tar.gz.sha512":
			w.Write([]byte("<html>not a digest</html>\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	sha256hex := hexOf(func() []byte { s := sha256.Sum256(archive); return s[:] }())
	sha1hex := hexOf(func() []byte { s := sha1.Sum(archive); return s[:] }())
	wrong := strings.Repeat("0", 64)
	u := srv.URL

	cases := []struct {
		name     string
		manifest string
		code     int
		kept     []string
		stderr   []string // each must appear in the one line of stderr
	}{
		{"sha256 pinned", fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz sha256:%s\n", u, sha256hex), 0, []string{"app-1.0.tar.gz"}, nil},
		{"sha1 pinned, comments and other systems skipped", fmt.Sprintf("# a comment\nother 1 %s/none.tar.gz sha256:%s\n\napp 1.0 %s/app-1.0.tar.gz sha1:%s\n", u, wrong, u, sha1hex), 0, []string{"app-1.0.tar.gz"}, nil},
		{"published digest, gpg's form", fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz published:%s/app-1.0.tar.gz.sha512\n", u, u), 0, []string{"app-1.0.tar.gz"}, nil},
		{"published digest, sha512sum's form", fmt.Sprintf("app 2.0 %s/app-2.0.tar.gz published:%s/app-2.0.tar.gz.sha512\n", u, u), 0, []string{"app-2.0.tar.gz"}, nil},
		{"digest mismatch", fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz sha256:%s\n", u, wrong), 1, nil, []string{"app-1.0.tar.gz", "sha256 mismatch", "MODULO_APP_SOURCES"}},
		{"download fails", fmt.Sprintf("app 3.0 %s/app-3.0.tar.gz sha256:%s\n", u, sha256hex), 1, nil, []string{"app-3.0.tar.gz", "download from " + u + "/app-3.0.tar.gz failed", "MODULO_APP_SOURCES"}},
		{"published digest unreadable", fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz published:%s/bad.tar.gz.sha512\n", u, u), 1, nil, []string{"app-1.0.tar.gz", "cannot read its published digest"}},
		{"unknown algorithm", fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz md5:%s\n", u, wrong[:32]), 1, nil, []string{"unknown digest algorithm 'md5'"}},
		{"no such system", fmt.Sprintf("other 1.0 %s/app-1.0.tar.gz sha256:%s\n", u, sha256hex), 1, nil, []string{"no release of 'app'"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, code, stdout, stderr := fetch(t, tc.manifest, "app")
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			got := files(t, dir)
			if strings.Join(got, " ") != strings.Join(tc.kept, " ") {
				t.Errorf("the directory holds %q, want %q (nothing unverified, no temporary)", got, tc.kept)
			}
			for _, name := range tc.kept {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !bytes.Equal(b, archive) {
					t.Errorf("%s holds %q (%v), want the served bytes", name, b, err)
				}
				if !strings.Contains(stdout, filepath.Join(dir, name)) {
					t.Errorf("stdout %q does not name %s", stdout, name)
				}
			}
			if tc.code != 0 {
				if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 {
					t.Errorf("stderr has %d lines, want one: %q", lines, stderr)
				}
				for _, want := range tc.stderr {
					if !strings.Contains(stderr, want) {
						t.Errorf("stderr %q does not say %q", stderr, want)
					}
				}
			}
		})
	}

	t.Run("an archive already there is kept without a download", func(t *testing.T) {
		manifest := fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz sha256:%s\n", u, sha256hex)
		dir, code, _, stderr := fetch(t, manifest, "app")
		if code != 0 {
			t.Fatalf("first run: exit %d: %s", code, stderr)
		}
		before := requests.Load()
		var stdout string
		if code := run(t, filepath.Join(filepath.Dir(dir), "sources.txt"), "app", dir, &stdout, &stderr); code != 0 {
			t.Fatalf("second run: exit %d: %s", code, stderr)
		}
		if n := requests.Load() - before; n != 0 {
			t.Errorf("the second run made %d requests, want 0", n)
		}
	})

	t.Run("a corrupted archive there is replaced", func(t *testing.T) {
		manifest := fmt.Sprintf("app 1.0 %s/app-1.0.tar.gz sha256:%s\n", u, sha256hex)
		dir, code, _, stderr := fetch(t, manifest, "app")
		if code != 0 {
			t.Fatalf("first run: exit %d: %s", code, stderr)
		}
		path := filepath.Join(dir, "app-1.0.tar.gz")
		if err := os.WriteFile(path, []byte("torn"), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout string
		if code := run(t, filepath.Join(filepath.Dir(dir), "sources.txt"), "app", dir, &stdout, &stderr); code != 0 {
			t.Fatalf("second run: exit %d: %s", code, stderr)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, archive) {
			t.Errorf("the corrupted archive was kept: %q", b)
		}
	})
}

// TestSourcesManifest checks the pinned manifest's lines: every system setup builds, each line a
// URL upstream serves releases from and a digest of a known algorithm and length.
func TestSourcesManifest(t *testing.T) {
	b, err := os.ReadFile("sources.txt")
	if err != nil {
		t.Fatal(err)
	}
	lengths := map[string]int{"sha1": 40, "sha256": 64, "sha512": 128}
	seen := map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 4 {
			t.Errorf("line %d: %d fields, want system, version, URL, digest: %q", i+1, len(f), line)
			continue
		}
		seen[f[0]]++
		if !strings.HasPrefix(f[2], "http://download.redis.io/") && !strings.HasPrefix(f[2], "https://archive.apache.org/") {
			t.Errorf("line %d: %s is not an upstream release URL", i+1, f[2])
		}
		if !strings.Contains(f[2], f[1]) {
			t.Errorf("line %d: URL %s does not name version %s", i+1, f[2], f[1])
		}
		algo, digest, _ := strings.Cut(f[3], ":")
		switch {
		case algo == "published":
			if digest != f[2]+".sha512" {
				t.Errorf("line %d: published digest %s is not the archive's .sha512", i+1, digest)
			}
		case lengths[algo] == 0:
			t.Errorf("line %d: unknown algorithm %q", i+1, algo)
		case len(digest) != lengths[algo] || strings.Trim(digest, "0123456789abcdef") != "":
			t.Errorf("line %d: %s digest %q is not %d hex digits", i+1, algo, digest, lengths[algo])
		}
	}
	if seen["redis"] != 3 || seen["zookeeper"] != 5 {
		t.Errorf("the manifest pins %d Redis and %d ZooKeeper releases, want the 3 and 5 setup builds", seen["redis"], seen["zookeeper"])
	}
}
