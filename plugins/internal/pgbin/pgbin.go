// Package pgbin is what PostgreSQL's plugins (streaming replication, and Patroni's failover over
// it) share of running PostgreSQL here: its programs, as Debian installs them, their version,
// and a cluster directory that the servers' user (PostgreSQL refuses root) can enter.
package pgbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/modulo-testing/modulo/cem/kit"
)

// Dir is the directory of PostgreSQL's programs: bin when set, else the newest under
// /usr/lib/postgresql.
func Dir(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin") // the pattern is valid
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL under /usr/lib/postgresql: apt-get install postgresql, or set bin")
	}
	return dirs[0], nil
}

// major is the major version that a directory /usr/lib/postgresql/<major>/bin names.
func major(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Version is the version of the postgres server in bin: "15.18".
func Version(ctx context.Context, bin string) (string, error) {
	out, err := kit.Output(ctx, filepath.Join(bin, "postgres"), "--version") // "postgres (PostgreSQL) 15.18 (Debian ...)"
	f := strings.Fields(out)
	if err != nil || len(f) < 3 {
		return "", fmt.Errorf("postgres --version: %q %v", out, err)
	}
	return f[2], nil
}

// Reachable opens the cluster's directory dir to u, who runs the servers, and checks that u
// can enter every directory above it. Those are not the plugin's: it never changes them, and
// one that u cannot enter is an error naming it and the plugin's table (whose user key
// chooses u).
func Reachable(dir string, u *user.User, table string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, fi.Mode().Perm()|0o011); err != nil {
		return err
	}
	d, mode, err := kit.Unreachable(filepath.Dir(dir), u)
	if err != nil || d == "" {
		return err
	}
	return fmt.Errorf("the servers run as %s (PostgreSQL refuses root), who cannot enter %s (%v): modulo runs clusters in $TMPDIR when others cannot enter the results_dir: give it a TMPDIR or a results_dir that %s can reach, such as /var/tmp, or set [%s] user", u.Username, d, mode, u.Username, table)
}
