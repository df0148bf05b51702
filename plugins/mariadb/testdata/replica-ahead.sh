#!/usr/bin/env bash
# MariaDB serves a replica from a GTID its binlog never held: the failure of schedule
# 6a08e30b46ce8cdd (replica-ahead.txt) by hand, with MariaDB's own programs and the mariadb
# client alone. Two servers a (server_id 1) and b (2), GTID strict mode on, as modulo's
# plugin starts them, on BASE_PORT and BASE_PORT+1 (default 33301). Prints DIVERGED and exits 1
# when a keeps a row that b, its primary, never had; exits 0 when they converge, 2 when the
# reproduction itself failed. Every server is killed and every file removed on exit.
set -Eeuo pipefail
base=${BASE_PORT:-33301}
dir=$(mktemp -d "${TMPDIR:-/tmp}/replica-ahead.XXXXXX")
declare -A pid
cleanup() {
  for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "reproduction failed: line $LINENO: $BASH_COMMAND" >&2; exit 2' ERR
user=(); [ "$(id -u)" = 0 ] && user=(--user=root)
printf 'CREATE DATABASE modulo;\nCREATE TABLE modulo.kv (k VARCHAR(64) PRIMARY KEY, v TEXT NOT NULL);\n' > "$dir/init.sql"
mkdir "$dir/tmp"
mariadb-install-db --no-defaults --datadir="$dir/template" --tmpdir="$dir/tmp" "${user[@]}" \
  --auth-root-authentication-method=normal --skip-test-db --extra-file="$dir/init.sql" >/dev/null
cp -a "$dir/template" "$dir/a"; cp -a "$dir/template" "$dir/b"
port() { [ "$1" = a ] && echo "$base" || echo $((base + 1)); }
start() { # name server_id
  mariadbd --no-defaults --datadir="$dir/$1" --tmpdir="$dir/tmp" --port="$(port "$1")" --bind-address=127.0.0.1 \
    --socket=mysqld.sock --server-id="$2" --log-bin=mariadb-bin --log-slave-updates --gtid-strict-mode=ON \
    --skip-slave-start "${user[@]}" >>"$dir/$1.log" 2>&1 &
  pid[$1]=$!
  local tries=0
  until mariadb -h127.0.0.1 -P"$(port "$1")" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
    ((tries++ < 600)) || { echo "reproduction failed: server $1 did not answer within a minute" >&2; exit 2; }
    sleep 0.1
  done
}
crash() { kill -9 "${pid[$1]}"; wait "${pid[$1]}" 2>/dev/null || true; unset "pid[$1]"; }
q() { mariadb -h127.0.0.1 -P"$(port "$1")" -uroot -NB -e "$2"; }
follow() { # replica primary
  q "$1" "STOP SLAVE; SET GLOBAL read_only = 1; CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = $(port "$2"),
    MASTER_USER = 'root', MASTER_CONNECT_RETRY = 1, MASTER_USE_GTID = slave_pos, MASTER_DEMOTE_TO_SLAVE = 1; START SLAVE"
}
start a 1; start b 2
follow b a                                   # the models' start: b replicates from a
crash b                                      # step 1: b crashes ...
q a "REPLACE INTO modulo.kv VALUES ('k1.1', 'w1')"   # ... and a takes write 1
echo "a's binlog: $(q a 'SELECT @@gtid_binlog_pos')"
start b 2                                    # step 2: b comes back, a primary
follow a b                                   # and a replicates from b
sleep 2
echo "a: $(mariadb -h127.0.0.1 -P"$(port a)" -uroot -E -e 'SHOW SLAVE STATUS' | grep -E 'Slave_(IO|SQL)_Running:|Last_IO_Errno' | tr -s ' ' | tr '\n' ' ')"
echo "b's log: $(grep -o "Start binlog_dump.*" "$dir/b.log" | tail -1)"
echo "a holds: $(q a 'SELECT k FROM modulo.kv' | tr '\n' ' ')gtid_slave_pos $(q a 'SELECT @@gtid_slave_pos')"
echo "b holds: $(q b 'SELECT k FROM modulo.kv' | tr '\n' ' ')gtid_binlog_pos $(q b 'SELECT @@gtid_binlog_pos')"
if [ "$(q a 'SELECT COUNT(*) FROM modulo.kv')" != "$(q b 'SELECT COUNT(*) FROM modulo.kv')" ]; then
  echo "DIVERGED: a keeps k1.1, which b, its primary, never had"
  exit 1
fi
echo "CONVERGED: a and b hold the same rows"
