# cluster.sh holds what the hand reproductions of this directory share, sourced by each: three
# MariaDB Galera nodes n0, n1, n2 on 127.0.0.1, run with mariadbd and read with the mariadb
# client alone. Node i listens on BASE_PORT+4i (clients), +1 (group communication), +2 (IST)
# and +3 (SST). Each has Galera's required settings, rsync state transfers and
# innodb_flush_log_at_trx_commit = $FLUSH (1 unless the reproduction sets it); everything
# else is at its defaults. Every server is killed on exit; the files stay in $dir, a directory
# of $TMPDIR that the reproduction prints.
set -Eeuo pipefail
base=${BASE_PORT:-33401}
dir=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
echo "files in $dir"
declare -A pid
cleanup() {
  for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # A server started under another program (strace) is that program's child: its pid file
  # names it, if that process still runs in the node's data directory (a killed server's
  # file may name a pid since reused).
  local f p
  for f in "$dir"/n*/mysqld.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    [[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" == "$(dirname "$f")/data"* ]] && kill -9 "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "reproduction failed: line $LINENO: $BASH_COMMAND" >&2; exit 2' ERR
# As root, the servers run as mysql, as Debian's mariadb.service runs them: rsync's state
# transfer cannot write a root server's data directory (MDEV-40688).
user=(); [ "$(id -u)" = 0 ] && user=(--user=mysql)
port() { echo $((base + 4 * $1 + $2)); } # node, 0 clients / 1 group / 2 IST / 3 SST
peers=gcomm://127.0.0.1:$(port 0 1),127.0.0.1:$(port 1 1),127.0.0.1:$(port 2 1)
for i in 0 1 2; do
  mkdir -p "$dir/n$i/tmp" "$dir/n$i/data"
  cat >"$dir/n$i/my.cnf" <<EOF
[mysqld]
datadir = $dir/n$i/data
tmpdir = $dir/n$i/tmp
socket = $dir/n$i/mysqld.sock
pid-file = $dir/n$i/mysqld.pid
bind-address = 127.0.0.1
port = $(port "$i" 0)
innodb_flush_log_at_trx_commit = ${FLUSH:-1}
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
wsrep_on = ON
wsrep_provider = /usr/lib/galera/libgalera_smm.so
wsrep_cluster_name = bug
wsrep_cluster_address = $peers
wsrep_node_name = n$i
wsrep_node_address = 127.0.0.1:$(port "$i" 1)
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$(port "$i" 3)
wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:$(port "$i" 1);ist.recv_addr=127.0.0.1:$(port "$i" 2)"
EOF
done
chmod 755 "$dir"
[ ${#user[@]} = 0 ] || chown -R mysql: "$dir"/n*
mariadb-install-db --no-defaults --datadir="$dir/n0/data" --tmpdir="$dir/n0/tmp" "${user[@]}" \
  --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1

q() { mariadb -h127.0.0.1 -P"$(port "$1" 0)" -uroot -NB -e "$2"; }
status() { q "$1" "SHOW STATUS LIKE 'wsrep_$2'" | cut -f2; }
# launch starts node $1's server with options $2..., under the command in wrap if a
# reproduction sets it (strace); start waits until it is Synced.
wrap=()
launch() {
  local i=$1; shift
  (cd "$dir/n$i/data" && exec "${wrap[@]}" mariadbd --defaults-file=../my.cnf "${user[@]}" "$@" >>"$dir/n$i/server.log" 2>&1) &
  pid[$i]=$!
}
start() {
  launch "$@"
  local i=$1 tries=0
  until [ "$(status "$i" local_state_comment 2>/dev/null)" = Synced ]; do
    ((tries++ < 1200)) || { echo "reproduction failed: n$i not synced within two minutes" >&2; exit 2; }
    kill -0 "${pid[$i]}" 2>/dev/null || { echo "reproduction failed: n$i exited; see $dir/n$i/server.log" >&2; exit 2; }
    sleep 0.1
  done
}
kill9() { # nodes: SIGKILL their servers at once
  local ps=()
  for i in "$@"; do ps+=("${pid[$i]}"); done
  kill -9 "${ps[@]}"
  for i in "$@"; do wait "${pid[$i]}" 2>/dev/null || true; unset "pid[$i]"; done
}
recovered() { # node: the position mariadbd --wsrep-recover recovers, as Debian's galera_recovery runs it
  (cd "$dir/n$1/data" && mariadbd --defaults-file=../my.cnf "${user[@]}" --wsrep-recover \
    --log-error="$dir/n$1/recover.log" 2>>"$dir/n$1/recover.err")
  sed -n 's/.*WSREP: Recovered position: *//p' "$dir/n$1/recover.log" | tail -n 1
}
# After every node went down, Galera's documented recovery: positions sets best to the most
# advanced of the nodes $@ by mariadbd --wsrep-recover (the lowest among equals), and
# bootstrap marks it safe_to_bootstrap and starts it with --wsrep-new-cluster; rejoin starts
# a node at its recovered position.
positions() {
  best=-1
  local seq bestseq=-1
  for i in "$@"; do
    recovered "$i" >"$dir/n$i/position"
    seq=$(sed 's/.*://' "$dir/n$i/position")
    echo "  n$i: mariadbd --wsrep-recover: position $(cat "$dir/n$i/position")"
    if [ "$seq" -gt "$bestseq" ]; then best=$i bestseq=$seq; fi
  done
}
bootstrap() {
  sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$dir/n$best/data/grastate.dat"
  echo "  bootstrap n$best (safe_to_bootstrap: 1, --wsrep-new-cluster)"
  start "$best" --wsrep-new-cluster --wsrep-start-position="$(cat "$dir/n$best/position")"
}
rejoin() { start "$1" --wsrep-start-position="$(cat "$dir/n$1/position")"; }
holds() { # node key: 1 when the node alone holds the key
  q "$1" "SET SESSION wsrep_sync_wait = 0; SELECT COUNT(*) FROM modulo.kv WHERE k = '$2'"
}
# A new cluster: n0 bootstraps it, n1 and n2 join by SST; the table every write goes to.
new_cluster() {
  start 0 --wsrep-new-cluster
  start 1
  start 2
  q 0 "CREATE DATABASE modulo; CREATE TABLE modulo.kv (k VARCHAR(64) PRIMARY KEY, v TEXT NOT NULL)"
  echo "cluster of $(status 0 cluster_size) nodes, $(status 0 cluster_status)"
}
