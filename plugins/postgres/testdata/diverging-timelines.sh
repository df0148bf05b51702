#!/usr/bin/env bash
# The convergence failure of schedule 610f0d0d3e131a61, by hand: PostgreSQL's own programs
# (initdb, pg_ctl, pg_basebackup, pg_rewind, psql), no modulo. Run it as the postgres user
# (PostgreSQL refuses root) in an empty directory: bash diverging-timelines.sh [BASE_PORT].
# It starts three servers on BASE_PORT..BASE_PORT+2 (default 31100) and stops them at the end;
# PGBIN names PostgreSQL's bin directory (default: the newest /usr/lib/postgresql/*/bin).
# Exits 1 when b keeps a write c never had (DIVERGED), 0 when they converge, 2 when the
# reproduction itself failed.
#
#   a  the primary, on timeline 1
#   b  a standby of a (pg_basebackup), promoted when a is lost:      timeline 2
#   c  a base backup of a started in recovery and promoted:          timeline 2 as well:
#      neither promotion saw the other's history file
#   b takes a write; b then rejoins c as an operator does: pg_ctl stop, pg_rewind onto c.
#   pg_rewind compares timeline IDs only, says "no rewind required", and b, now c's standby,
#   keeps a write that c never had, for good.
set -Eeuo pipefail
BIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
P=${1:-31100}
A=$P B=$((P + 1)) C=$((P + 2))
stop() { for d in a b c; do [ -f $d/postmaster.pid ] && "$BIN/pg_ctl" -D $d stop -m fast >/dev/null; done; return 0; }
trap stop EXIT
trap 'exit 130' INT TERM
trap 'echo "reproduction failed: line $LINENO: $BASH_COMMAND" >&2; exit 2' ERR
sql() { "$BIN/psql" -X -At -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"; }
start() { "$BIN/pg_ctl" -D "$1" -o "-p $2" -l "$1.log" -w start >/dev/null; }
standby_of() { touch "$1/standby.signal"; echo "primary_conninfo = 'host=127.0.0.1 port=$2 user=postgres application_name=$1'" >>"$1/postgresql.auto.conf"; }

echo "1. a: initdb, a primary on timeline 1, with one row"
"$BIN/initdb" -D a -U postgres --auth=trust --no-sync >/dev/null
cat >>a/postgresql.conf <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
wal_level = replica
wal_log_hints = on
hot_standby = on
wal_keep_size = '256MB'
CONF
start a $A
sql $A "CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL); INSERT INTO kv VALUES ('w1', 'written on a')" >/dev/null

echo "2. b and c: base backups of a, started in recovery as a's standbys"
for d in b c; do "$BIN/pg_basebackup" -D $d -d "host=127.0.0.1 port=$A user=postgres" -X stream --no-sync; standby_of $d $A; done
start b $B
start c $C
until [ "$(sql $A "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 2 ]; do sleep 0.2; done

echo "3. c is promoted (a failover to c); a is lost to b's view too, and b is promoted"
"$BIN/pg_ctl" -D c promote -w >/dev/null
"$BIN/pg_ctl" -D b promote -w >/dev/null
sql $B "CHECKPOINT" >/dev/null; sql $C "CHECKPOINT" >/dev/null
echo "   after a checkpoint on each: b on timeline $(sql $B "SELECT timeline_id FROM pg_control_checkpoint()"), c on timeline $(sql $C "SELECT timeline_id FROM pg_control_checkpoint()")"

echo "4. b takes a write of its own"
sql $B "INSERT INTO kv VALUES ('w2', 'written on b')" >/dev/null

echo "5. b rejoins c: pg_ctl stop, pg_rewind onto c, standby.signal, start"
"$BIN/pg_ctl" -D b stop -m fast >/dev/null
"$BIN/pg_rewind" --target-pgdata=b --source-server="host=127.0.0.1 port=$C user=postgres" 2>&1 | sed 's/^/   /'
standby_of b $C
start b $B

echo "6. c takes a write; wait until c's sender says b has replayed all c has"
sql $C "INSERT INTO kv VALUES ('w3', 'written on c')" >/dev/null
for _ in $(seq 50); do
  [ "$(sql $C "SELECT replay_lsn >= pg_current_wal_lsn() FROM pg_stat_replication WHERE application_name = 'b'")" = t ] && break
  sleep 0.2
done
echo "   c's pg_stat_replication for b: $(sql $C "SELECT state, replay_lsn, pg_current_wal_lsn() FROM pg_stat_replication WHERE application_name = 'b'" | tr '|' ' ')"

echo "7. what each holds"
held_c=$(sql $C "SELECT string_agg(k, ',' ORDER BY k) FROM kv")
held_b=$(sql $B "SELECT string_agg(k, ',' ORDER BY k) FROM kv")
echo "   c: $held_c"
echo "   b: $held_b"
echo "   b's log: $(grep -c 'incorrect prev-link' b.log || true) lines 'record with incorrect prev-link'"
if [ "$held_b" != "$held_c" ]; then
  echo "DIVERGED: b keeps w2, which c never had"
  exit 1
fi
echo "CONVERGED: b and c hold the same rows"
