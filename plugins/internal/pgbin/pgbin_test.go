package pgbin

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

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
	err = Reachable(filepath.Join(closed, "cluster"), nobody, "postgres")
	if err == nil || !strings.Contains(err.Error(), "who cannot enter "+closed+" (drwx------)") {
		t.Errorf("reachable below a 0700 directory: %v", err)
	}
	if fi, _ := os.Stat(closed); fi.Mode().Perm() != 0o700 {
		t.Errorf("%s is %v now: a directory above the cluster's was changed", closed, fi.Mode())
	}
	if err := Reachable(filepath.Join(open, "cluster"), nobody, "postgres"); err != nil {
		t.Errorf("reachable below 0711 directories: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(open, "cluster")); fi.Mode().Perm() != 0o711 {
		t.Errorf("the cluster's directory is %v, want it opened to the servers' user", fi.Mode())
	}
}
