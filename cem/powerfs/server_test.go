package powerfs

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/modulo-testing/modulo/internal/fsutil"
)

// TestServerFilesReadBack: PostgreSQL's initdb writes a whole cluster through the file system
// (its WAL, its catalog, its control file) and syncs it; a power loss then drops nothing, the
// files read back byte for byte, and PostgreSQL's own tools read them.
func TestServerFilesReadBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PostgreSQL's initdb")
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Fatal("no /usr/lib/postgresql/*/bin/initdb: run scripts/setup")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	f := mountT(t, DefaultDisk)
	// The user must reach the mount: t.TempDir's directories and the store's root are root's.
	for _, d := range []string{filepath.Dir(filepath.Dir(f.Dir())), filepath.Dir(f.Dir()), f.Dir()} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(f.Dir(), "pg")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Dir = "/"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	run("initdb", "-D", data, "-U", "postgres", "--auth=trust")
	before, err := fsutil.Digest(f.Dir(), []string{"pg"})
	if err != nil {
		t.Fatal(err)
	}
	loss, err := f.Drop(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if loss.Bytes != 0 || len(loss.Undone) != 0 || len(loss.Kept) != 0 {
		t.Errorf("after initdb synced its cluster, a power loss %s", loss)
	}
	after, err := fsutil.Digest(f.Dir(), []string{"pg"})
	if err != nil {
		t.Fatal(err)
	}
	if after.Digest != before.Digest || len(after.Paths) < 100 {
		t.Errorf("after the power loss %d files and directories read sha256 %s, before %d read %s", len(after.Paths), after.Digest, len(before.Paths), before.Digest)
	}
	if out := run("pg_controldata", "-D", data); !regexp.MustCompile(`Database cluster state:\s+shut down`).MatchString(out) {
		t.Errorf("pg_controldata reads the cluster as:\n%s", out)
	}
}
