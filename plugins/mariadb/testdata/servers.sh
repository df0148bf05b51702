# servers.sh is what this directory's hand reproductions share; each sources it after it sets
# base (its default port) and name (its temporary directory's prefix), and, where it wants
# more of mariadbd's options, extra. Servers a, b and c, started as modulo's plugin starts
# them (GTID strict mode, binary logs that log replicated events, --skip-slave-start), listen
# on 127.0.0.1 at BASE_PORT, BASE_PORT+1 and BASE_PORT+2 (default base); each starts from a
# copy of one mariadb-install-db data directory that holds the table modulo.kv. A command
# that fails ends the script with status 2 (the reproduction itself failed); every server is
# killed and every file removed on exit.
set -Eeuo pipefail
base=${BASE_PORT:-$base}
[ -v extra ] || extra=()
dir=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
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
port() { case $1 in a) echo "$base" ;; b) echo $((base + 1)) ;; c) echo $((base + 2)) ;; esac; }
start() { # name server_id: its first start copies the template
  [ -d "$dir/$1" ] || cp -a "$dir/template" "$dir/$1"
  mariadbd --no-defaults --datadir="$dir/$1" --tmpdir="$dir/tmp" --port="$(port "$1")" --bind-address=127.0.0.1 \
    --socket=mysqld.sock --server-id="$2" --log-bin=mariadb-bin --log-slave-updates --gtid-strict-mode=ON \
    --skip-slave-start "${extra[@]}" "${user[@]}" >>"$dir/$1.log" 2>&1 &
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
