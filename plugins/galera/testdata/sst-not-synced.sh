#!/usr/bin/env bash
# A joiner's rsync state transfer (SST) writes the whole data directory and fsyncs none of it,
# and the node then serves as Synced: the cause of docs/bugs/galera-sst-not-durable.md, shown by
# hand with mariadbd, the mariadb client and strace alone.
#
#	bash plugins/galera/testdata/sst-not-synced.sh
#
# The nodes of cluster.sh (n0 and n1 only), at Galera's defaults and
# innodb_flush_log_at_trx_commit = 1:
#
#  1. Bootstrap n0 and commit k1 through it.
#  2. Start n1 under strace (-f: its SST script and rsync daemon too), which joins by rsync
#     SST from n0, and wait until it is Synced and holds k1; 5 s more.
#  3. Count, in the trace, the writes to n1's modulo/kv.ibd (the table k1 is in) and the
#     fsyncs, fdatasyncs and syncfs of it or of everything (sync) after the last of them.
#
# Prints NOT-SYNCED and exits 1 when kv.ibd was written by the transfer and nothing made it
# durable before n1 served as Synced, 5 s after; SYNCED (exit 0) when something did; exits 2
# when the reproduction itself failed.
name=sst-not-synced
source "$(dirname "$0")/cluster.sh"
command -v strace >/dev/null || { echo "reproduction failed: strace is not installed" >&2; exit 2; }

start 0 --wsrep-new-cluster
q 0 "CREATE DATABASE modulo; CREATE TABLE modulo.kv (k VARCHAR(64) PRIMARY KEY, v TEXT NOT NULL)"
q 0 "INSERT INTO modulo.kv VALUES ('k1', 'acknowledged')"
echo "n0 bootstrapped; k1 committed through n0"

trace=$dir/n1.strace
wrap=(strace -f -qq -y -o "$trace" -e trace=openat,pwrite64,write,fsync,fdatasync,syncfs,sync,sync_file_range)
start 1
wrap=()
echo "n1: $(grep -o 'rsync SST completed on joiner' "$dir/n1/server.log" | head -n 1), $(status 1 local_state_comment), holds k1: $(holds 1 k1)"
sleep 5

kv=$dir/n1/data/./modulo/kv.ibd
kv=${kv//\/.\//\/}
writes=$(grep -nE "(write|pwrite64)\([0-9]+<$kv>" "$trace" | tail -n 1 | cut -d: -f1)
[ -n "$writes" ] || { echo "reproduction failed: no write to $kv in $trace" >&2; exit 2; }
nwrites=$(grep -cE "(write|pwrite64)\([0-9]+<$kv>" "$trace")
synced=$(tail -n +"$writes" "$trace" | grep -cE "(fsync|fdatasync|sync_file_range)\([0-9]+<$kv>|syncfs\(|[^a-z_]sync\(\)" || true)
echo "n1's $kv: $nwrites writes by the state transfer, then $synced fsyncs, fdatasyncs or syncs of it before n1 served as Synced (5 s after)"
if [ "$synced" = 0 ]; then
  echo "NOT-SYNCED: n1 serves as Synced with k1's table on disk only in its page cache; a power loss takes it back"
  exit 1
fi
echo "SYNCED: the transfer's kv.ibd was made durable"
