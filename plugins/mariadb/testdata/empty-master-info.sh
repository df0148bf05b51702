#!/usr/bin/env bash
# MariaDB refuses CHANGE MASTER TO for good once a power loss has left its master.info empty:
# the failure of schedule bc7e5372ff94546b (empty-master-info.txt) by hand, with MariaDB's own
# programs and the mariadb client alone. Two servers a (server_id 1) and b (2), GTID strict mode
# on and MariaDB's crash-safe replica settings (sync_binlog = 1, relay_log_recovery = 1), as
# modulo's plugin starts them (servers.sh), on BASE_PORT and BASE_PORT+1 (default 33321). b
# replicates from a, so CHANGE MASTER TO creates b's master.info and relay-log.info, which
# MariaDB syncs only every sync_master_info (10,000) events. b then loses power: SIGKILL, and
# each file it never synced is cut to 0 bytes, what ext4 (data=ordered, delayed allocation)
# keeps of a file whose name its journal committed and whose data was never written back. Prints
# REFUSED and exits 1 when b, restarted, refuses to replicate; exits 0 when it replicates, 2
# when the reproduction itself failed. SYNC_MASTER_INFO=1 runs both servers with
# sync_master_info = 1 and sync_relay_log_info = 1 (the files are synced, and no power loss
# empties them). Every server is killed and every file removed on exit.
sync_info=${SYNC_MASTER_INFO:-10000}
base=33321 name=empty-master-info
extra=(--sync-binlog=1 --relay-log-recovery=1 --sync-master-info="$sync_info" --sync-relay-log-info="$sync_info")
source "$(dirname "$0")/servers.sh"
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
