#!/usr/bin/env bash
# A ZooKeeper convergence failure reproduced by hand, with ZooKeeper's own server and CLI
# (org.apache.zookeeper.ZooKeeperMain) and no modulo: the Q/C/Z schedule
#   D[0,0,1] C[0,1] D[0,1,0] C[0,2] C[1]
# A follower told to truncate its log to zxid 0 keeps the log's first transaction, a write no
# quorum ever accepted, and serves it for good (the symptom of ZOOKEEPER-3947).
#
#   plugins/zookeeper/testdata/trunc-keeps-first.sh [JAR_DIR]
#
# JAR_DIR holds zookeeper.jar (its manifest names the other jars), slf4j-log4j12.jar and
# log4j-1.2.jar: Debian's /usr/share/java (the default) or a build of scripts/build-zookeeper,
# ~/.cache/modulo/zookeeper/<version>. BASE_PORT (default 27100) and the nine ports after it
# must be free. Exits 1 when the servers diverge as described, 0 when they converge, 2 when
# the reproduction itself failed. Every server is killed and every file removed on exit.
set -euo pipefail

jars=${1:-/usr/share/java}
base=${BASE_PORT:-27100}
cp="$jars/zookeeper.jar:$jars/slf4j-log4j12.jar:$jars/log4j-1.2.jar"
[ -f "$jars/zookeeper.jar" ] || { echo "no zookeeper.jar in $jars" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/trunc-keeps-first.XXXXXX")
declare -A pid
cleanup() {
  for p in "${pid[@]}"; do
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "reproduction failed: $*" >&2; exit 2; }

cat >"$dir/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
EOF

port() { echo $((base + 3 * ($1 - 1) + $2)); } # server $1's client (0), quorum (1), election (2) port
for i in 1 2 3; do
  mkdir -p "$dir/zk$i/data"
  echo "$i" >"$dir/zk$i/data/myid"
  {
    echo "tickTime=100"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$dir/zk$i/data"
    echo "clientPort=$(port "$i" 0)"
    echo "clientPortAddress=127.0.0.1"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=*"
    echo "localSessionsEnabled=true" # a write then needs no createSession to commit
    for j in 1 2 3; do echo "server.$j=127.0.0.1:$(port "$j" 1):$(port "$j" 2)"; done
  } >"$dir/zk$i/zoo.cfg"
done

start() {
  java -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk$1/zoo.cfg" >>"$dir/zk$1/log" 2>&1 &
  pid[$1]=$!
}
crash() { kill -9 "${pid[$1]}"; wait "${pid[$1]}" 2>/dev/null || true; unset "pid[$1]"; }

# mode prints what srvr says of server $1's mode, or nothing while it does not serve.
mode() {
  local reply
  reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$(port "$1" 0)" && printf srvr >&3 && cat <&3) 2>/dev/null) || return 0
  sed -n 's/^Mode: //p' <<<"$reply"
}

# leader waits until servers $@ serve with one leader among them and prints it.
leader() {
  local i m l tries=0
  while ((tries++ < 300)); do
    l="" m=ok
    for i in "$@"; do
      case $(mode "$i") in
        leader) l=$i ;;
        follower) ;;
        *) m="" ;;
      esac
    done
    if [ -n "$m" ] && [ -n "$l" ]; then echo "$l"; return; fi
    sleep 0.1
  done
  fail "servers $* elected no leader in 30 s"
}

cli() { # cli SERVER COMMAND...: one command of ZooKeeper's CLI through server SERVER alone
  local s=$1
  shift
  java -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" \
    org.apache.zookeeper.ZooKeeperMain -server "127.0.0.1:$(port "$s" 0)" "$@" 2>/dev/null
}

# minorityWrite creates /$2 through leader $1 while the followers $3... are stopped, so that
# only the leader's log takes it, then crashes every running server. The CLI is started and
# connected first: the leader keeps its quorum for syncLimit (0.5 s) after the followers stop,
# less than a JVM takes to start.
minorityWrite() {
  local l=$1 key=$2 f tries=0
  shift 2
  rm -f "$dir/cli.in" "$dir/cli.out"
  mkfifo "$dir/cli.in"
  cli "$l" <"$dir/cli.in" >"$dir/cli.out" &
  local clipid=$!
  exec 4>"$dir/cli.in"
  echo "ls /" >&4
  until grep -q '^\[' "$dir/cli.out"; do
    ((tries++ < 100)) || fail "ZooKeeper's CLI did not connect to server $l"
    sleep 0.1
  done
  for f in "$@"; do kill -STOP "${pid[$f]}"; done
  echo "create /$key $key" >&4
  tries=0
  until grep -aq "$key" "$dir/zk$l/data/version-2/"log.* 2>/dev/null; do
    ((tries++ < 100)) || fail "/$key never reached the log of server $l"
    sleep 0.1
  done
  echo "  /$key is in the log of server $l (its followers $* are stopped: it cannot commit)"
  for i in "${!pid[@]}"; do crash "$i"; done
  exec 4>&-
  kill "$clipid" 2>/dev/null || true
  wait "$clipid" 2>/dev/null || true
}

for i in 1 2 3; do start "$i"; done
a=$(leader 1 2 3)
echo "$( (exec 3<>"/dev/tcp/127.0.0.1/$(port "$a" 0)" && printf srvr >&3 && cat <&3) | head -n 1), from $jars"
b=$(( a % 3 + 1 )) c=$(( b % 3 + 1 ))
echo "start: server $a leads"

echo "D[0,0,1]: a write reaches leader $a alone"
minorityWrite "$a" k1.1 "$b" "$c"

echo "C[0,1]: servers $b and $c restart"
start "$b"; start "$c"
l=$(leader "$b" "$c")
f=$(( l == b ? c : b ))
echo "  server $l leads, $f follows"

echo "D[0,1,0]: a write reaches leader $l alone"
minorityWrite "$l" k3.1 "$f"

echo "C[0,2]: servers $f and $a restart"
start "$f"; start "$a"
l2=$(leader "$f" "$a")
echo "  server $l2 leads"

echo "C[1]: server $l restarts"
start "$l"
leader 1 2 3 >/dev/null
sleep 1 # let every follower settle after its sync

echo "How each server was brought in sync with its leader:"
for i in 1 2 3; do
  grep -ao "Getting a diff from the leader 0x[0-9a-f]*\|Getting a snapshot from leader 0x[0-9a-f]*\|Truncating log to get in sync with the leader 0x[0-9a-f]*" "$dir/zk$i/log" |
    sed "s/^/  server $i: /" || true
done

echo "What each server serves (ls / through it alone, after sync):"
declare -A seen
for i in 1 2 3; do
  cli "$i" sync / >/dev/null || true
  seen[$i]=$(cli "$i" ls / | grep '^\[' | tail -n 1)
  echo "  server $i: ${seen[$i]}"
done
if [ "${seen[1]}" = "${seen[2]}" ] && [ "${seen[2]}" = "${seen[3]}" ]; then
  echo "CONVERGED: every server serves ${seen[1]}"
  exit 0
fi
echo "DIVERGED: the servers serve different trees; /k1.1 was never acknowledged and no quorum logged it"
exit 1
