#!/usr/bin/env bash
# A ZooKeeper convergence failure reproduced by hand, with ZooKeeper's own server and CLI
# (org.apache.zookeeper.ZooKeeperMain), network namespaces made with ip(8), and no modulo: the
# Q/N/Z schedule 86c2add925a3467e (every failure a partition; no server ever restarts)
#   D[0,0,1] C[0,2] D[0,0,1] C[0,1] C[2] D[0,1,1] C[1,2] C[0]
# The epoch-2 leader logs k3.1 alone (never committed); the next leader syncs it by SNAP, which
# replaces its tree but leaves k3.1 in its log file; leading later, it syncs a lagging follower
# by a DIFF read from that file, and the follower alone keeps k3.1 and counts a digest mismatch
# (ZOOKEEPER-3946's uncommitted tail).
#
#   plugins/zookeeper/testdata/snap-keeps-tail.sh [JAR_DIR]
#
# JAR_DIR holds zookeeper.jar (its manifest names the other jars), slf4j-log4j12.jar and
# log4j-1.2.jar: Debian's /usr/share/java (the default) or a build of scripts/build-zookeeper,
# ~/.cache/modulo/zookeeper/<version>. Run as root. Servers zookeeper-0..2 (myid 1..3), each in
# a network namespace $NS-zkN (NS, default snapkeepstail-<pid>) with eth0 = $NET.(N+2)/24 (NET,
# default 10.250.77, which no route may reach), bridged in namespace $NS-br. A partition
# between two servers: in each of the two namespaces, a permanent neighbour entry for the
# peer's address with a hardware address no link has; healing deletes it.
# Exits 1 when the follower keeps the uncommitted write as described, 0 when the servers
# converge, 2 when the reproduction itself failed. Every server is killed and every namespace
# and file removed on exit.
set -euo pipefail

JARS=${1:-/usr/share/java}
NS=${NS:-snapkeepstail-$$}
NET=${NET:-10.250.77}
RUN=$(mktemp -d "${TMPDIR:-/tmp}/snap-keeps-tail.XXXXXX")  # configs, data, logs
BLACKHOLE=02:6d:6f:64:00:00
CP="$JARS/zookeeper.jar:$JARS/slf4j-log4j12.jar:$JARS/log4j-1.2.jar"  # the manifest adds jute, slf4j-api, netty...
JVM=(-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData)
IP=("$NET.2" "$NET.3" "$NET.4")
NAME=(zookeeper-0 zookeeper-1 zookeeper-2)

NETNS_MADE=()   # namespaces this script added
PIDS=()         # processes this script started (JVMs, zkCli)

log() { printf '%s  %s\n' "$(date -u +%H:%M:%S.%3N)" "$*"; }
die() { log "ERROR: $*"; exit 2; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  exec 7>&- || true
  local ns
  for ns in "${NETNS_MADE[@]}"; do
    # anything still inside one of our namespaces is ours
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$RUN"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ $EUID -eq 0 ]] || die "must run as root"
[[ -f $JARS/zookeeper.jar ]] || die "no $JARS/zookeeper.jar"
for ns in "$NS-br" "$NS-zk0" "$NS-zk1" "$NS-zk2"; do
  ip netns list | awk '{print $1}' | grep -qx "$ns" && die "namespace $ns exists already; not touching it"
done
ip route | grep -q "^$NET\." && die "$NET.0/24 is routed on this host already"

# ---------------------------------------------------------------- network
ip netns add "$NS-br"; NETNS_MADE+=("$NS-br")
ip -n "$NS-br" link add br0 type bridge
ip -n "$NS-br" link set br0 up
for i in 0 1 2; do
  ip netns add "$NS-zk$i"; NETNS_MADE+=("$NS-zk$i")
  # both ends are created inside namespaces: nothing is added to the root namespace
  ip -n "$NS-br" link add "v$i" type veth peer name eth0 netns "$NS-zk$i"
  ip -n "$NS-br" link set "v$i" master br0 up
  ip -n "$NS-zk$i" link set lo up
  ip -n "$NS-zk$i" addr add "${IP[$i]}/24" dev eth0
  ip -n "$NS-zk$i" link set eth0 up
done

cut()  { # cut A B: no packet between servers A and B, either way
  ip -n "$NS-zk$1" neigh replace "${IP[$2]}" lladdr $BLACKHOLE dev eth0 nud permanent
  ip -n "$NS-zk$2" neigh replace "${IP[$1]}" lladdr $BLACKHOLE dev eth0 nud permanent
  log "  cut   ${NAME[$1]} <-/-> ${NAME[$2]}"
}
heal() {
  ip -n "$NS-zk$1" neigh del "${IP[$2]}" dev eth0 2>/dev/null || true
  ip -n "$NS-zk$2" neigh del "${IP[$1]}" dev eth0 2>/dev/null || true
  log "  heal  ${NAME[$1]} <---> ${NAME[$2]}"
}

# ---------------------------------------------------------------- servers
cat >"$RUN/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, CONSOLE
log4j.logger.org.apache.zookeeper.server.NIOServerCnxn=WARN
log4j.logger.org.apache.zookeeper.server.command=WARN
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
EOF
cat >"$RUN/log4j-cli.properties" <<'EOF'
log4j.rootLogger=ERROR, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.err
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
EOF
SRV=()
start_servers() { # fresh data directories, then the three JVMs
  local i d
  for i in 0 1 2; do
    d=$RUN/${NAME[$i]}; rm -rf "$d"; mkdir -p "$d/data"
    echo $((i + 1)) >"$d/data/myid"
    # the zoo.cfg modulo's plugin wrote, with this script's addresses and a longer syncLimit (below)
    cat >"$d/zoo.cfg" <<EOF
tickTime=100
initLimit=10
syncLimit=20
dataDir=data
clientPort=2181
clientPortAddress=${IP[$i]}
admin.enableServer=false
4lw.commands.whitelist=*
localSessionsEnabled=true
server.1=${IP[0]}:2888:3888
server.2=${IP[1]}:2888:3888
server.3=${IP[2]}:2888:3888
EOF
  done
  for i in 0 1 2; do
    d=$RUN/${NAME[$i]}
    (cd "$d" && exec ip netns exec "$NS-zk$i" java "${JVM[@]}" \
       -Dlog4j.configuration="file:$RUN/log4j.properties" \
       -Dzookeeper.fastleader.minNotificationInterval=50 \
       -Dzookeeper.fastleader.maxNotificationInterval=1000 \
       -Dzookeeper.cnxTimeout=1000 \
       -Dzookeeper.leaderConnectDelayDuringRetryMs=10 \
       -Dzookeeper.jmx.log4j.disable=true \
       -Dzookeeper.preAllocSize=65536 \
       -Dzookeeper.snapCount=100000 \
       -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg \
       >"$d/${NAME[$i]}.log" 2>&1) &
    SRV[$i]=$!; PIDS+=($!)
  done
}
stop_servers() {
  local p
  for p in "${SRV[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${SRV[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}

# ---------------------------------------------------------------- observation
flw() { # flw N WORD: a four-letter word to server N, from inside its namespace
  ip netns exec "$NS-zk$1" timeout 2 bash -c \
    'exec 3<>/dev/tcp/$0/2181 && printf %s "$1" >&3 && cat <&3' "${IP[$1]}" "$2" 2>/dev/null || true
}
mode()  { flw "$1" srvr | awk '/^Mode:/{print $2; f=1} END{if(!f) print "not-serving"}'; }
zxid()  { flw "$1" srvr | awk '/^Zxid:/{print $2}'; }
mntr1() { flw "$1" mntr | awk -v k="$2" '$1==k{print $2}'; }
zkcli() { # zkcli N CMD...: one ZooKeeperMain command against server N
  local n=$1; shift
  ip netns exec "$NS-zk$n" timeout 20 java "${JVM[@]}" -Dlog4j.configuration="file:$RUN/log4j-cli.properties" \
    -cp "$CP" org.apache.zookeeper.ZooKeeperMain -server "${IP[$n]}:2181" "$@" 2>/dev/null
}
logged() { # logged N PATH: server N's txn log files on disk hold a create of PATH
  local f  # (a log file is preallocated to 64 MiB of zeros; its few txns are at its start)
  for f in "$RUN/${NAME[$1]}"/data/version-2/log.*; do
    [[ -e $f ]] && head -c 1048576 "$f" | grep -aqF "$2" && return 0
  done
  return 1
}
txnlog() { # dump server N's txn logs
  local f
  for f in "$RUN/${NAME[$1]}"/data/version-2/log.*; do
    [[ -e $f ]] || continue
    java -cp "$CP" -Dlog4j.configuration="file:$RUN/log4j-cli.properties" \
      org.apache.zookeeper.server.persistence.TxnLogToolkit "$f" 2>/dev/null |
      awk -v f="${f#$RUN/}" '/zxid/{printf "      %s: %s\n", f, $0}'
  done
}

wait_isolated() { # every given server has left its quorum (not serving)
  local i end=$((SECONDS + 120))
  for i in "$@"; do
    until [[ $(mode "$i") == not-serving ]]; do
      ((SECONDS < end)) || die "${NAME[$i]} still serves"; sleep 0.05
    done
    log "  ${NAME[$i]} sees that it is cut off"
  done
}
LEADER=-1
wait_caught_up() { # the given servers serve under one leader, all synced (modulo's CaughtUp)
  local i leaders nf ok seen end=$((SECONDS + 300))
  while ((SECONDS < end)); do
    ok=1; leaders=(); seen=""
    for i in "$@"; do
      m=$(mode "$i"); seen+="${NAME[$i]}=$m "
      case $m in leader) leaders+=("$i");; follower) ;; *) ok=0;; esac
    done
    if [[ $ok == 1 && ${#leaders[@]} == 1 ]]; then
      LEADER=${leaders[0]}
      nf=$(( $# - 1 ))
      if [[ $(flw "$LEADER" mntr | awk -F'\t' '$1=="zk_peer_state"{print $2}') == "leading - broadcast" &&
            $(mntr1 "$LEADER" zk_synced_followers) == "$nf" ]]; then
        seen=""
        for i in "$@"; do seen+="${NAME[$i]} $(mode "$i") zxid $(zxid "$i"); "; done
        log "  caught up: $seen"
        return 0
      fi
    fi
    sleep 0.05
  done
  die "not caught up after 300s: $seen"
}
expect_leader() {
  [[ $LEADER == "$1" ]] || log "  NOTE: leader is ${NAME[$LEADER]}, the recorded run had ${NAME[$1]}"
}

# write L KEY "CUTS" WHAT: a zkCli session with leader L is opened first; then the cuts are
# made and at once the create of /KEY is sent to L; wait until L's txn log holds it.
write() {
  local l=$1 key=$2 cuts=$3 what=$4 fifo=$RUN/cli-$2.fifo out=$RUN/cli-$2.out t c
  rm -f "$fifo"; mkfifo "$fifo"; exec 7<>"$fifo"
  ip netns exec "$NS-zk$l" java "${JVM[@]}" -Dlog4j.configuration="file:$RUN/log4j-cli.properties" \
    -cp "$CP" org.apache.zookeeper.ZooKeeperMain -server "${IP[$l]}:2181" <&7 >"$out" 2>&1 &
  CLI=$!; PIDS+=("$CLI")
  for t in $(seq 1200); do grep -q SyncConnected "$out" && break; sleep 0.05; done
  grep -q SyncConnected "$out" || die "zkCli could not connect to ${NAME[$l]}"
  # A first command, answered, before the cut: the create must reach the leader within
  # syncLimit*tickTime of the cut, and a cold CLI on a busy machine can take long. (The
  # plugin's syncLimit is 5, 500 ms, which its Go client meets; this script's, 20, gives the
  # CLI 2 s, and changes nothing else of the schedule.)
  echo "ls /" >&7
  for t in $(seq 1200); do grep -q '^\[' "$out" && break; sleep 0.05; done
  grep -q '^\[' "$out" || die "zkCli got no answer from ${NAME[$l]}"
  for c in $cuts; do cut "${c%-*}" "${c#*-}"; done
  echo "create /$key $SID:$key" >&7
  log "  ${NAME[$l]}: create /$key sent ($what)"
  # Up to about 30 s: on a loaded machine a create through a cold CLI took over 10 s to reach
  # the log (a minority's create that misses syncLimit never does, and fails here as before).
  for t in $(seq 3000); do logged "$l" "/$key" && break; sleep 0.01; done
  logged "$l" "/$key" || die "/$key is not in ${NAME[$l]}'s log (it left its quorum before the create reached it)"
  log "  ${NAME[$l]}: create /$key is in its log"
}
end_cli() { echo quit >&7 || true; exec 7>&-; sleep 0.2; kill "$CLI" 2>/dev/null || true; wait "$CLI" 2>/dev/null || true; }

SID=86c2add925a3467e
log "ZooKeeper at $JARS; servers ${NAME[*]} at ${IP[*]}"

# start: fresh servers, zookeeper-2 (myid 3) leading epoch 1, as an election among empty
# servers normally ends; a loaded machine can end it otherwise, and the servers start afresh.
start() {
  local attempt
  for attempt in 1 2 3 4 5; do
    log "start: 3 servers (attempt $attempt)"
    start_servers
    wait_caught_up 0 1 2
    [[ $LEADER == 2 ]] && return 0
    log "  leader is ${NAME[$LEADER]}, not zookeeper-2: stopping, wiping, starting again"
    stop_servers
  done
  die "zookeeper-2 never led the first epoch"
}

# prefix: steps 1 to 5. After them zookeeper-0 leads in the recorded run; on a loaded machine
# zookeeper-2 has been seen to win instead, which leaves the schedule: the run starts again.
prefix() {
  STEP1=$(date '+%F %T') # the servers log local time
  log "step 1 D[0,0,1]: cut every server off; k1.1 to leader zookeeper-2 alone"
  write 2 k1.1 "0-1 0-2 1-2" "only zookeeper-2 receives it: it cannot commit"; end_cli
  wait_isolated 0 1 2

  log "step 2 C[0,2]: heal zookeeper-0 -- zookeeper-2"
  heal 0 2
  wait_caught_up 0 2; expect_leader 2

  log "step 3 D[0,0,1]: cut zookeeper-0 from zookeeper-2; k3.1 to leader zookeeper-2 alone"
  write 2 k3.1 "0-2" "only zookeeper-2 receives it: it cannot commit"; end_cli
  wait_isolated 0 1 2

  log "step 4 C[0,1]: heal zookeeper-0 -- zookeeper-1"
  heal 0 1
  wait_caught_up 0 1; expect_leader 0

  log "step 5 C[2]: heal zookeeper-2 (it rejoins by SNAP, keeps k3.1 in its log file)"
  heal 0 2; heal 1 2
  wait_caught_up 0 1 2; expect_leader 0
}

for run in 1 2 3; do
  start
  prefix
  [[ $LEADER == 0 ]] && break
  log "the run left the schedule: ${NAME[$LEADER]} leads after step 5, the recorded run had zookeeper-0; again"
  stop_servers
  [[ $run == 3 ]] && die "the ensemble left the schedule in 3 runs"
done

log "step 6 D[0,1,1]: cut zookeeper-1 off; k6.1 commits on zookeeper-0, zookeeper-2; cut them apart"
write 0 k6.1 "0-1 1-2" "zookeeper-0 and zookeeper-2 receive it"
for t in $(seq 1000); do logged 2 /k6.1 && grep -q 'Created /k6.1' "$RUN/cli-k6.1.out" && break; sleep 0.01; done
{ logged 2 /k6.1 && grep -q 'Created /k6.1' "$RUN/cli-k6.1.out"; } || die "k6.1 did not commit"
log "  zookeeper-0: create /k6.1 committed (zkCli: $(grep -o 'Created /k6.1' "$RUN/cli-k6.1.out")); zookeeper-2 holds it too"
end_cli
cut 0 2
wait_isolated 0 1 2

log "step 7 C[1,2]: heal zookeeper-0 -- zookeeper-2"
heal 0 2
wait_caught_up 0 2; expect_leader 2

log "step 8 C[0]: heal zookeeper-1"
heal 0 1; heal 1 2
wait_caught_up 0 1 2; expect_leader 2

# ---------------------------------------------------------------- verdict
log "result:"
declare -A KIDS DM
for i in 0 1 2; do
  KIDS[$i]=$(zkcli "$i" ls / | grep '^\[' | tail -1)
  DM[$i]=$(mntr1 "$i" zk_digest_mismatches_count)
  printf '  %-12s %-9s ls / = %-28s zk_znode_count=%s zk_digest_mismatches_count=%s\n' \
    "${NAME[$i]}" "$(mode "$i")" "${KIDS[$i]}" "$(mntr1 "$i" zk_znode_count)" "${DM[$i]}"
done
log "txn logs on disk:"
for i in 0 1 2; do txnlog "$i"; done
log "key server log lines since step 1:"
for i in 0 1 2; do
  grep -h 'Getting a snapshot from leader\|Getting a diff from the leader\|Got zxid\|Sending DIFF\|Sending snapshot\|digest mismatch' \
    "$RUN/${NAME[$i]}/${NAME[$i]}.log" | sed "s/^/${NAME[$i]}: /" || true
done | awk -v t="$STEP1" '($2" "$3) >= t' | sort -k2,3 | sed -E 's/ \[QuorumPeer\[myid=[0-9]+\]\([^)]*\)\([^)]*\)\]//; s/ \[LearnerHandler-[^]]*\]//; s/^/    /'

has_k31() { [[ ${KIDS[$1]} == *k3.1* ]]; }
if has_k31 1 && ! has_k31 0 && ! has_k31 2 && [[ ${DM[1]:-0} -ge 1 ]]; then
  log "DIVERGED: zookeeper-1 alone holds /k3.1 (never committed), zk_digest_mismatches_count=${DM[1]}"
  exit 1
fi
log "converged: no server holds /k3.1 alone"
exit 0
