#!/usr/bin/env bash
# A second anomaly the pgl ops=1 campaign on three replicas met (schedules 877525dd76009c8b and
# 8d383065cd66ed8c, verdict error), by hand with PostgreSQL's own programs and no modulo. Run
# it as the postgres user in an empty directory: bash inverted-history.sh [BASE_PORT]. It starts
# three servers on BASE_PORT..BASE_PORT+2 (default 31110) and stops them at the end; PGBIN names
# PostgreSQL's bin directory (default: the newest /usr/lib/postgresql/*/bin).
#
# A standby (c) that sits before the switch point of its primary's newer timeline (b, a base
# backup of a, promoted: timeline 2 begins where b's copy began) reads b's history file and
# targets timeline 2, though it cannot stream the WAL between (b never had it: "requested WAL
# segment has already been removed"). Promoted there, c writes a history for timeline 3 whose
# switch points go backwards: timeline 1 until 0/5000000, then timeline 2 until 0/3000000.
# In the campaign, pg_rewind onto such a server then failed ("could not find previous WAL
# record"), and a server rewound onto a copy of it would not start ("requested timeline 3 is
# not a child of this server's history"). Not reported upstream as far as we found.
# Exits 1 when c's timeline 3 history goes backwards (INVERTED), 0 when its switch points
# increase, 2 when the reproduction itself failed.
set -Eeuo pipefail
BIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
P=${1:-31110}
A=$P B=$((P + 1)) C=$((P + 2))
stop() { for d in a b c; do [ -f $d/postmaster.pid ] && "$BIN/pg_ctl" -D $d stop -m immediate >/dev/null 2>&1; done; return 0; }
trap stop EXIT
trap 'exit 130' INT TERM
trap 'echo "reproduction failed: line $LINENO: $BASH_COMMAND" >&2; exit 2' ERR
sql() { "$BIN/psql" -X -At -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"; }
start() { "$BIN/pg_ctl" -D "$1" -o "-p $2" -l "$1.log" -w start >/dev/null; }
standby_of() { touch "$1/standby.signal"; echo "primary_conninfo = 'host=127.0.0.1 port=$2 user=postgres application_name=$1'" >>"$1/postgresql.auto.conf"; }
"$BIN/initdb" -D a -U postgres --auth=trust --no-sync >/dev/null
printf "listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\nwal_level = replica\nwal_log_hints = on\nhot_standby = on\nwal_keep_size = '256MB'\n" >>a/postgresql.conf
start a $A
sql $A "CREATE TABLE kv (k text PRIMARY KEY, v text)" >/dev/null
echo "1. c: a standby of a, stopped cleanly: its WAL ends in an early segment"
"$BIN/pg_basebackup" -D c -d "host=127.0.0.1 port=$A user=postgres" -X stream --no-sync
standby_of c $A; start c $C
sleep 1; "$BIN/pg_ctl" -D c stop -m fast >/dev/null
echo "   c's position: $("$BIN/pg_controldata" c | grep 'Minimum recovery ending location' | awk '{print $NF}')"
sql $A "INSERT INTO kv VALUES ('w1', 'a')" >/dev/null
echo "2. b: a base backup of a (its WAL begins in a later segment), promoted: timeline 2"
"$BIN/pg_basebackup" -D b -d "host=127.0.0.1 port=$A user=postgres" -X stream --no-sync
standby_of b $A; start b $B; "$BIN/pg_ctl" -D b promote -w >/dev/null; sql $B CHECKPOINT >/dev/null
echo "   b's timeline history: $(cat b/pg_wal/00000002.history | tr '\t\n' ' /')"
echo "3. c starts as a standby of b, which lacks c's WAL segment, and is promoted"
sed -i "s/port=$A/port=$B/" c/postgresql.auto.conf
start c $C; sleep 3
"$BIN/pg_ctl" -D c promote -w >/dev/null || true
sleep 1
echo "   c's timeline 3 history:"; cat c/pg_wal/00000003.history | sed 's/^/     /'
grep -h "FATAL\|promot\|selected new timeline\|history" c.log | sed 's/^/   c.log: /' | cut -c1-200 | tail -8
# lsn prints a WAL location X/Y as one number.
lsn() { echo $((16#${1%/*} * 4294967296 + 16#${1#*/})); }
prev=0 prev_tli="" prev_at=""
while IFS=$'\t' read -r tli at _; do
  [[ -z $at || $tli == \#* ]] && continue
  if (($(lsn "$at") < prev)); then
    echo "INVERTED: c's history leaves timeline $tli at $at, before the point where it left timeline $prev_tli ($prev_at)"
    exit 1
  fi
  prev=$(lsn "$at") prev_tli=$tli prev_at=$at
done <c/pg_wal/00000003.history
echo "ORDERED: c's timeline 3 history has increasing switch points"
