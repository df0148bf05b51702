package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modulo-testing/modulo/aem"
	"github.com/modulo-testing/modulo/cem/kit"
	"github.com/modulo-testing/modulo/cem/proc"
)

// TestClassDataSharing: the first start with an empty cache makes the archive, every server
// maps it, and a later start reuses it as it is.
func TestClassDataSharing(t *testing.T) {
	cache := t.TempDir()
	config := []byte(`cache_dir = "` + cache + `"`)
	archives := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(cache, "zookeeper-*.jsa"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// startMapped starts a cluster and checks that every server maps the one archive.
	startMapped := func() {
		t.Helper()
		spec := testSpec(t, aem.Params{Ops: 1, Replicas: 3}, "cds", config)
		start(t, kit.New(about, &system{}), spec)
		a := archives()
		if len(a) != 1 {
			t.Fatalf("archives after a start: %v", a)
		}
		files, err := proc.PidFiles(spec.Dir)
		if err != nil || len(files) != 3 {
			t.Fatalf("pid files %v, %v; want 3", files, err)
		}
		for _, f := range files {
			maps, err := os.ReadFile("/proc/" + strconv.Itoa(f.Pid) + "/maps")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(maps), a[0]) {
				t.Errorf("%s does not map %s", f.Path, a[0])
			}
		}
	}
	startMapped()
	first, err := os.Stat(archives()[0])
	if err != nil {
		t.Fatal(err)
	}
	startMapped()
	again, err := os.Stat(archives()[0])
	if err != nil || !again.ModTime().Equal(first.ModTime()) {
		t.Errorf("archive remade: %v, modified %v then %v", err, first.ModTime(), again.ModTime())
	}
}

// TestArchiveKey: the archive's name changes with the jars and the JVM flags, and only then.
func TestArchiveKey(t *testing.T) {
	jars := t.TempDir()
	for _, name := range append([]string{"zookeeper.jar"}, loggingJars...) {
		copyFile(t, filepath.Join("/usr/share/java", name), filepath.Join(jars, name))
	}
	c := DefaultConfig()
	c.JarDir = jars
	key := func(flags []string) string {
		t.Helper()
		in, err := findInstall(&c)
		if err != nil {
			t.Fatal(err)
		}
		k, err := archiveKey(in, flags)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(c.JVMFlags)
	if again := key(c.JVMFlags); again != base {
		t.Errorf("same install, keys %s and %s", base, again)
	}
	if other := key(append(c.JVMFlags, "-Xmx256m")); other == base {
		t.Error("other JVM flags, same key")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(jars, "zookeeper.jar"), later, later); err != nil {
		t.Fatal(err)
	}
	if changed := key(c.JVMFlags); changed == base {
		t.Error("zookeeper.jar changed, same key")
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}
