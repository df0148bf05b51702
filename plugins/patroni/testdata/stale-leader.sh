#!/usr/bin/env bash
# Patroni 3.0.2 + PostgreSQL 15 at Patroni's defaults (asynchronous, use_pg_rewind, check_timeline off):
# a stale crashed timeline-1 leader is promoted onto a reused timeline ID 2 whose history differs
# from the real timeline 2; the real timeline 2's surviving standby is then refused forever
# ("requested WAL segment ... has already been removed") and the write acknowledged on timeline 2 is lost.
# By hand, without modulo: etcd, patroni, curl, psql, kill -9.
#
# Usage, as root:  BASE_PORT=27000 bash stale-leader.sh   (BASE_PORT's default 27000)
#   CHECK_TIMELINE=1 bash stale-leader.sh   the control: check_timeline: true in the DCS config
#   STEP4_TOGETHER=1 bash stale-leader.sh   step 4 without steering: A and B started at the same moment
# It works in a directory of its own under $TMPDIR (default /tmp), which it prints and keeps.
# Ports: etcd BASE (client), BASE+1 (peer); PostgreSQL BASE+10+i; Patroni REST BASE+20+i (i = 0,1,2 for A,B,C).
# Exit 1: the failure shows; 0: it did not; 2: the reproduction itself went wrong (a wait timed out...).
#
# Steering (what an operator could do): in step 2 only C is started until it holds the leader key
# (so C, not B, is promoted); in step 4 A is started first and B only once A's REST API reports A
# running with its WAL position (so B compares itself with A, and not A's absence, in the leader race).
set -Euo pipefail
P=${BASE_PORT:-27000}
CHECK_TIMELINE=${CHECK_TIMELINE:-0}
BIN=/usr/lib/postgresql/15/bin
SCOPE="byhand$P"
NODES=(A B C)
declare -A PGPORT=([A]=$((P + 10)) [B]=$((P + 11)) [C]=$((P + 12)))
declare -A APIPORT=([A]=$((P + 20)) [B]=$((P + 21)) [C]=$((P + 22)))
declare -A PPID_=()      # Patroni pid (= its process group, started with setsid)
ETCD_PID=
DIR=$(mktemp -d "${TMPDIR:-/tmp}/stale-leader.XXXXXX")
chmod 755 "$DIR" # Patroni and PostgreSQL run as postgres, in directories under it
cd "$DIR"
echo "working in $DIR"
T0=$(date +%s)

ts() { printf '[%4ss]' $(( $(date +%s) - T0 )); }
say() { echo "$(ts) $*"; }
die() { say "REPRODUCTION FAILED: $*"; exit 2; }

# ---------- processes ----------
node_pids() {  # every live process of node $1: its Patroni's process group + anything whose cwd is its data dir
  local n=$1 p cwd
  if [ -n "${PPID_[$n]:-}" ]; then ps -o pid= -g "${PPID_[$n]}" 2>/dev/null | tr -d ' ' || true; fi
  for p in /proc/[0-9]*; do
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    [ "$cwd" = "$DIR/$n/data" ] && echo "${p#/proc/}"
  done
  return 0
}
alive() {  # the pids given that are alive and not zombies
  local p st
  for p in "$@"; do
    st=$(awk '/^State:/{print $2}' /proc/$p/status 2>/dev/null) || continue
    [ -n "$st" ] && [ "$st" != Z ] && echo "$p"
  done
  return 0
}
kill_node() {  # SIGKILL Patroni, the postmaster and its children at once; check none is left
  local n=$1 pids left i
  pids=$(node_pids "$n" | sort -u | tr '\n' ' ')
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  for i in $(seq 50); do
    left=$(alive $(node_pids "$n" | sort -u))
    [ -z "$left" ] && break
    kill -9 $left 2>/dev/null; sleep 0.1
  done
  [ -n "${PPID_[$n]:-}" ] && { wait "${PPID_[$n]}" 2>/dev/null || true; }
  PPID_[$n]=
  left=$(alive $(node_pids "$n" | sort -u))
  [ -z "$left" ] || { say "   $n: processes still alive after SIGKILL: $left"; return 1; }
  say "   $n: SIGKILL of pids $pids: no process of $n left"
}
cleanup() {
  local rc=$? n
  trap - EXIT INT TERM ERR
  for n in "${NODES[@]}"; do kill_node "$n" >/dev/null 2>&1 || true; done
  if [ -n "$ETCD_PID" ]; then kill -9 "$ETCD_PID" 2>/dev/null; wait "$ETCD_PID" 2>/dev/null; fi
  left=$(for n in "${NODES[@]}"; do alive $(node_pids "$n"); done; [ -n "$ETCD_PID" ] && alive "$ETCD_PID")
  [ -n "$left" ] && echo "cleanup: still alive: $left" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_node() {
  local n=$1
  setsid setpriv --reuid postgres --regid postgres --init-groups /usr/bin/patroni "$DIR/$n/patroni.yml" >>"$DIR/$n/patroni.log" 2>&1 &
  PPID_[$n]=$!
  disown "${PPID_[$n]}"   # no "Killed" job notices; its process group is still ours to kill
  say "   $n: patroni started (pid ${PPID_[$n]})"
}

# ---------- probes ----------
api() { curl -s -m 2 "http://127.0.0.1:${APIPORT[$1]}/$2" 2>/dev/null; }
api_code() { curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:${APIPORT[$1]}/$2" 2>/dev/null; }
is_primary() { [ "$(api_code "$1" primary)" = 200 ]; }
sql() { "$BIN/psql" -X -At -h 127.0.0.1 -p "${PGPORT[$1]}" -U postgres -d postgres -c "$2" 2>/dev/null; }
status() {  # one line: state role timeline wal positions
  api "$1" patroni | jq -rc '[.state, .role, "tl=\(.timeline)", (.xlog|tostring)] | join(" ")' 2>/dev/null || echo "no answer"
}
etcd_get() {  # value of key $1 or empty
  curl -s -m 2 "http://127.0.0.1:$P/v3/kv/range" -d "{\"key\":\"$(printf '%s' "$1" | base64 -w0)\"}" |
    jq -r '.kvs[0].value // empty' 2>/dev/null | base64 -d 2>/dev/null || true
}
wait_for() {  # wait_for SECONDS "what" command...   (a wall-clock deadline)
  local secs=$1 what=$2 start end; shift 2
  start=$(date +%s); end=$((start + secs))
  while [ "$(date +%s)" -lt "$end" ]; do
    "$@" && { say "   waited $(( $(date +%s) - start ))s for: $what"; return 0; }
    sleep 0.25
  done
  [ "${SOFT:-0}" = 1 ] && { say "   timed out after ${secs}s waiting for: $what"; return 1; }
  die "timed out after ${secs}s waiting for: $what"
}
streaming_from() {  # $1 primary has $2 standby streaming
  [ "$(sql "$1" "SELECT count(*) FROM pg_stat_replication WHERE application_name = '$2' AND state = 'streaming'")" = 1 ]
}
running_with_wal() { api "$1" patroni | jq -e '.state == "running" and (.xlog != null)' >/dev/null 2>&1; }
leader_is() { [ "$(etcd_get "/service/$SCOPE/leader")" = "$1" ]; }
history_tl_ge() { [ "$(etcd_get "/service/$SCOPE/history" | jq 'length' 2>/dev/null || echo 0)" -ge "$1" ]; }
any_primary() { for n in A B; do is_primary $n && return 0; done; return 1; }

# ---------- setup ----------
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
[ -z "$(ls -A .)" ] || { echo "run in an empty directory" >&2; exit 2; }
mkdir -p etcd A B C
chown postgres:postgres A B C
cat >post-bootstrap.sh <<'EOF'
#!/bin/sh
exec /usr/lib/postgresql/15/bin/psql -X -q -v ON_ERROR_STOP=1 -d "$1" -c 'CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL)'
EOF
chmod 755 post-bootstrap.sh
for n in "${NODES[@]}"; do
  ctl=""; [ "$CHECK_TIMELINE" = 1 ] && ctl="        check_timeline: true"
  cat >"$n/patroni.yml" <<EOF
scope: $SCOPE
namespace: /service/
name: $n
log:
    level: INFO
etcd3:
    hosts:
        - 127.0.0.1:$P
restapi:
    listen: 127.0.0.1:${APIPORT[$n]}
    connect_address: 127.0.0.1:${APIPORT[$n]}
watchdog:
    mode: "off"
bootstrap:
    dcs:
        ttl: 8
        loop_wait: 1
        retry_timeout: 3
        maximum_lag_on_failover: 1048576
        synchronous_mode: false
        synchronous_mode_strict: false
$ctl
        postgresql:
            use_pg_rewind: true
            use_slots: true
            parameters:
                dynamic_shared_memory_type: mmap
                hot_standby: "on"
                logging_collector: "off"
                max_replication_slots: 10
                max_wal_senders: 10
                unix_socket_directories: ""
                wal_keep_size: 256MB
                wal_level: replica
                wal_log_hints: "on"
                wal_receiver_status_interval: 1s
    initdb:
        - encoding: UTF8
        - no-sync
    post_bootstrap: $DIR/post-bootstrap.sh
postgresql:
    listen: 127.0.0.1:${PGPORT[$n]}
    connect_address: 127.0.0.1:${PGPORT[$n]}
    data_dir: $DIR/$n/data
    bin_dir: $BIN
    pgpass: $DIR/$n/pgpass
    authentication:
        superuser:
            username: postgres
        replication:
            username: replicator
    basebackup:
        - checkpoint: fast
    parameters:
        unix_socket_directories: ""
    pg_hba:
        - local all all trust
        - host all all 127.0.0.1/32 trust
        - host replication all 127.0.0.1/32 trust
EOF
  chown postgres:postgres "$n/patroni.yml"
done

say "0. etcd on 127.0.0.1:$P; A bootstraps the cluster (scope $SCOPE), then B and C join as its standbys$([ "$CHECK_TIMELINE" = 1 ] && echo '; CONTROL: check_timeline: true')"
setsid /usr/bin/etcd --name e --data-dir "$DIR/etcd/data" --listen-client-urls "http://127.0.0.1:$P" \
  --advertise-client-urls "http://127.0.0.1:$P" --listen-peer-urls "http://127.0.0.1:$((P + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((P + 1))" --initial-cluster "e=http://127.0.0.1:$((P + 1))" \
  --initial-cluster-state new >etcd/etcd.log 2>&1 &
ETCD_PID=$!
wait_for 20 "etcd healthy" sh -c "curl -s -m 2 http://127.0.0.1:$P/health | grep -q true"
start_node A
wait_for 90 "A to be primary (bootstrap)" is_primary A
start_node B; start_node C
wait_for 120 "B streaming from A" streaming_from A B
wait_for 120 "C streaming from A" streaming_from A C
say "   A: $(status A)"

say "1. A leads timeline 1 and takes a write; every node is killed (SIGKILL of Patroni, postmaster, children)"
sql A "INSERT INTO kv VALUES ('k1', 'written on A, timeline 1') RETURNING k" >/dev/null || die "write k1 on A failed"
ACKED="k1"
say "   k1 acknowledged by A (timeline $(sql A "SELECT timeline_id FROM pg_control_checkpoint()"), lsn $(sql A "SELECT pg_current_wal_lsn()"))"
kill_node B || die "kill B"; kill_node C || die "kill C"; kill_node A || die "kill A"

say "2. B and C restart without A; C is started first and promoted, then B follows it"
start_node C
wait_for 60 "C to be primary (A's leader key expires, C wins the race alone)" is_primary C
start_node B
wait_for 90 "B streaming from C" streaming_from C B
say "   C: $(status C)"
say "   B: $(status B)"
wait_for 20 "the DCS /history key to record timeline 1's end (cluster timeline 2)" history_tl_ge 1
say "   DCS /history: $(etcd_get "/service/$SCOPE/history")"

say "3. C takes a write; B and C are killed"
sql C "INSERT INTO kv VALUES ('k3', 'written on C, timeline 2') RETURNING k" >/dev/null || die "write k3 on C failed"
ACKED="$ACKED k3"
say "   k3 acknowledged by C (lsn $(sql C "SELECT pg_current_wal_lsn()")); B replayed $(sql B "SELECT pg_last_wal_replay_lsn()")"
# Patroni bounds what an asynchronous failover may lose by maximum_lag_on_failover plus what the
# primary wrote in its last ttl seconds; k3 is held by B and older than ttl when B and C die.
sleep 10
say "   10 s later (ttl is 8 s), B still holds k3: '$(sql B "SELECT k FROM kv WHERE k = 'k3'")'"
kill_node B || die "kill B"; kill_node C || die "kill C"
say "   C's leader key still in the DCS: '$(etcd_get "/service/$SCOPE/leader")'"

if [ "${STEP4_TOGETHER:-0}" = 1 ]; then
  say "4. A (stale: never saw timeline 2) and B restart together (no steering: a race with C's leader-key expiry)"
  start_node A; start_node B
else
  say "4. A (stale: never saw timeline 2) restarts; B restarts once A's REST API reports A running"
  start_node A
  wait_for 60 "A's Patroni to report PostgreSQL running with a WAL position" running_with_wal A
  say "   A: $(status A); leader key: '$(etcd_get "/service/$SCOPE/leader")'"
  start_node B
fi
SOFT=1 wait_for 90 "a leader among A and B" any_primary || say "   no leader among A and B (carrying on to collect the evidence)"
sleep 3
say "   A: $(status A)"
say "   B: $(status B)"
LEADER=; is_primary A && LEADER=A; is_primary B && LEADER=B
say "   leader: $LEADER"
if [ "$LEADER" = A ]; then
  wait_for 20 "A's log to say which timeline it selected" grep -q 'selected new timeline ID' A/patroni.log
fi

say "5. evidence"
for n in A B C; do
  say "   $n/patroni.log:"
  grep -E 'Local timeline|selected new timeline ID|My timeline|ahead of my wal position|promoted self|doing crash recovery|running pg_rewind|pg_rewind: |primary_timeline=|no rewind required' "$n/patroni.log" |
    awk '{m = substr($0, 25)} !seen[m]++ {print; next} {rep[m]++} END {for (m in rep) printf "   (and %d more lines: %s)\n", rep[m], m}' |
    sed 's/^/      /' | cut -c1-200
done
for n in A B C; do
  h=$n/data/pg_wal/00000002.history
  say "   $h: $( [ -f "$h" ] && tr '\t\n' ' |' <"$h" || echo '<none>')"
done
H_A=$(cat A/data/pg_wal/00000002.history 2>/dev/null || true)
H_B=$(cat B/data/pg_wal/00000002.history 2>/dev/null || true)
ROWS=$( [ -n "$LEADER" ] && sql "$LEADER" "SELECT string_agg(k, ' ' ORDER BY k) FROM kv" || true)
LEADER_TL=$( [ -n "$LEADER" ] && sql "$LEADER" "SELECT timeline_id FROM pg_control_checkpoint()" || true)
say "   leader $LEADER (timeline $LEADER_TL) holds: '$ROWS'; acknowledged: '$ACKED'"
LOST=""; for k in $ACKED; do [[ " $ROWS " == *" $k "* ]] || LOST="$LOST $k"; done
say "   acknowledged writes missing on the leader:${LOST:- none}"
OTHER=B; [ "$LEADER" = B ] && OTHER=A
c0=$(grep -c 'has already been removed' "$OTHER/patroni.log" || true)
say "   watching $OTHER for 60 s ..."
STREAMED=0
W_END=$(( $(date +%s) + 60 ))
while [ "$(date +%s)" -lt "$W_END" ]; do
  sleep 5
  [ -n "$LEADER" ] && streaming_from "$LEADER" "$OTHER" && STREAMED=1
done
c1=$(grep -c 'has already been removed' "$OTHER/patroni.log" || true)
say "   $OTHER's log: $((c1 - c0)) 'has already been removed' lines in 60 s ($c1 in all); streaming from $LEADER seen: $STREAMED"
grep -m1 'has already been removed' "$OTHER/patroni.log" | sed 's/^/      /' | cut -c1-200
say "   $OTHER's Patroni: $(status $OTHER)"
say "   leader's pg_stat_replication: '$( [ -n "$LEADER" ] && sql "$LEADER" "SELECT application_name, state, replay_lsn FROM pg_stat_replication" | tr '\n' ';' )'"

if [ -z "$LEADER" ]; then
  say "   no leader: A logged 'My timeline ... is behind last known cluster timeline' $(grep -c 'is behind last known cluster timeline' A/patroni.log || true) times, B logged 'Wal position of A is ahead of my wal position' $(grep -c 'Wal position of A is ahead' B/patroni.log || true) times"
  say "6. an operator's way out: POST /failover {\"candidate\": \"B\"} to B's REST API"
  say "   answer: $(curl -s -m 30 -XPOST "http://127.0.0.1:${APIPORT[B]}/failover" -d '{"candidate": "B"}' 2>&1 | head -c 200)"
  if SOFT=1 wait_for 60 "B to be primary" is_primary B; then
    SOFT=1 wait_for 90 "A streaming from B" streaming_from B A || true
    say "   B: $(status B)"
    say "   A: $(status A)"
    for n in A B; do grep -E 'selected new timeline ID|running pg_rewind|pg_rewind: |primary_timeline=|manual failover' "$n/patroni.log" | sed "s/^/      $n: /" | cut -c1-200; done
    say "   B/data/pg_wal/00000003.history: $(tr '\t\n' ' |' <B/data/pg_wal/00000003.history 2>/dev/null || echo '<none>')"
    say "   B holds: '$(sql B "SELECT string_agg(k, ' ' ORDER BY k) FROM kv")'; A holds: '$(sql A "SELECT string_agg(k, ' ' ORDER BY k) FROM kv")'; acknowledged: '$ACKED'"
  fi
fi
if [ "$LEADER" = A ] && grep -q 'selected new timeline ID: 2' A/patroni.log && [ -n "$H_A" ] && [ -n "$H_B" ] &&
   [ "$H_A" != "$H_B" ] && { [ "$STREAMED" = 0 ] || [ -n "$LOST" ]; }; then
  say "FAILURE: stale A promoted onto timeline ID 2 again with a different history; B streaming: $STREAMED; lost acknowledged:${LOST:- none}"
  exit 1
fi
[ -z "$LEADER" ] && { say "NO FAILURE: no leader at all for 150 s (A refuses: timeline behind; B defers: A's LSN ahead); nothing promoted onto a reused timeline ID"; exit 0; }
say "NO FAILURE: leader $LEADER on timeline $LEADER_TL; lost acknowledged:${LOST:- none}; $OTHER streaming: $STREAMED"
exit 0
