// Package mariadbdir makes the data directory that MariaDB's plugins (binlog replication and
// Galera) copy into every replica: mariadb-install-db's, with the table every write goes to
// and a root account that any address may use without a password.
package mariadbdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modulo-testing/modulo/cem/kit"
)

// initSQL creates the table every write goes to, and lets root connect from anywhere with
// every privilege and no password: a plugin reaches each server at its own address in the
// cluster's network, where only the cluster is (or at 127.0.0.1 on loopback). The bootstrap
// runs without grant tables, so the account is a row of mysql.global_priv, as
// mariadb-install-db writes its own.
const initSQL = "CREATE DATABASE modulo;\nCREATE TABLE modulo.kv (k VARCHAR(64) PRIMARY KEY, v TEXT NOT NULL) ENGINE=InnoDB;\n" +
	"INSERT INTO mysql.global_priv (Host, User, Priv) VALUES ('%', 'root', " +
	"json_object('access', CAST(-1 AS UNSIGNED), 'plugin', 'mysql_native_password', 'authentication_string', ''));\n"

// Install runs installDB (mariadb-install-db) to make the data directory datadir, with its
// init file and temporary directory in work (which it makes), and args after its own (a
// --user, InnoDB's sizes). own, when not nil, is given the temporary directory first: a server
// run as another user must write there.
func Install(ctx context.Context, installDB, work, datadir string, own func(dir string) error, args ...string) error {
	init := filepath.Join(work, "init.sql")
	if err := os.WriteFile(init, []byte(initSQL), 0o644); err != nil {
		return fmt.Errorf("mariadb-install-db's init file: %w", err)
	}
	tmp := filepath.Join(work, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	if own != nil {
		if err := own(tmp); err != nil {
			return err
		}
	}
	all := append([]string{"--no-defaults", "--datadir=" + datadir, "--tmpdir=" + tmp, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--extra-file=" + init}, args...)
	_, err := kit.Output(ctx, installDB, all...)
	return err
}
