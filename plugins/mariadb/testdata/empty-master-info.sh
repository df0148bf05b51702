#!/usr/bin/env bash
# MariaDB refuses CHANGE MASTER TO for good once a power loss has left its master.info empty:
# the failure of schedule bc7e5372ff94546b (empty-master-info.txt) by hand, with MariaDB's own
# programs and the mariadb client alone. Two servers a (server_id 1) and b (2), GTID strict mode
# on and MariaDB's crash-safe replica settings (sync_binlog = 1, relay_log_recovery = 1), as
# modulo's plugin starts them, on BASE_PORT and BASE_PORT+1 (default 33311). b replicates from
# a, so CHANGE MASTER TO creates b's master.info and relay-log.info, which MariaDB syncs only
# every sync_master_info (10,000) events. b then loses power: SIGKILL, and each file it never
# synced is cut to 0 bytes, what ext4 (data=ordered, delayed allocation) keeps of a file whose
# name its journal committed and whose data was never written back. Prints REFUSED and exits 1
# when b, restarted, refuses to replicate; exits 0 when it replicates, 2 when the reproduction
# itself failed. SYNC_MASTER_INFO=1 runs both servers with sync_master_info = 1 and
# sync_relay_log_info = 1 (the files are synced, and no power loss empties them). Every server
# is killed and every file removed on exit.
set -Eeuo pipefail
base=${BASE_PORT:-33311}
sync_info=${SYNC_MASTER_INFO:-10000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/empty-master-info.XXXXXX")
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
cp -a "$dir/template" "$dir/a"; cp -a "$dir/template" "$dir/b"; sync
port() { [ "$1" = a ] && echo "$base" || echo $((base + 1)); }
start() { # name server_id
  mariadbd --no-defaults --datadir="$dir/$1" --tmpdir="$dir/tmp" --port="$(port "$1")" --bind-address=127.0.0.1 \
    --socket=mysqld.sock --server-id="$2" --log-bin=mariadb-bin --log-slave-updates --gtid-strict-mode=ON \
    --skip-slave-start --sync-binlog=1 --relay-log-recovery=1 --sync-master-info="$sync_info" \
    --sync-relay-log-info="$sync_info" "${user[@]}" >>"$dir/$1.log" 2>&1 &
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
follow b a                                            # b replicates from a: master.info is written
q a "REPLACE INTO modulo.kv VALUES ('k1.1', 'w1')"
q b "SELECT MASTER_GTID_WAIT('$(q a 'SELECT @@gtid_binlog_pos')', 30)" >/dev/null
echo "b holds: $(q b 'SELECT k FROM modulo.kv' | tr '\n' ' ')master.info $(stat -c %s "$dir/b/master.info") bytes"
crash b                                               # b loses power ...
if [ "$sync_info" = 1 ]; then
  echo "b's master.info and relay-log.info were synced at every event: the power loss keeps them"
else
  : >"$dir/b/master.info"; : >"$dir/b/relay-log.info" # ... and keeps none of the files it never synced
  echo "b lost power: master.info and relay-log.info, never synced, are empty"
fi
start b 2
if ! out=$(follow b a 2>&1); then
  echo "b: $(grep -E 'master configuration|master info structure' "$dir/b.log" | tail -2 | cut -d' ' -f4- | tr '\n' ' ')"
  echo "CHANGE MASTER TO: $(grep -o 'ERROR 1201.*' <<<"$out")"
  echo "REFUSED: b cannot replicate again without an operator (RESET SLAVE ALL, which removes the files)"
  exit 1
fi
q b "SELECT MASTER_GTID_WAIT('$(q a 'SELECT @@gtid_binlog_pos')', 30)" >/dev/null
echo "REPLICATES: b follows a again and holds $(q b 'SELECT k FROM modulo.kv' | tr '\n' ' ')"
