#!/usr/bin/env bash
# A joiner whose IST carries a writeset that fails its checksum says "node restart required",
# then neither exits nor joins: it hangs outside the primary component for good. The failure
# of Q/P/G's schedule 7c6b49445c83c7c5 by hand, with mariadbd and the mariadb client alone, the
# donor's Galera cache torn as a power loss tore it there.
#
#	bash plugins/galera/testdata/ist-checksum-hang.sh
#
# The three nodes of cluster.sh, at Galera's defaults (gcache.recover = yes) and
# innodb_flush_log_at_trx_commit = 1:
#
#  1. SIGKILL n2; commit k1 (a value of 4 KiB) through n0, on n0 and n1.
#  2. SIGKILL n0 and n1. Tear n0's galera.cache (mmapped, never fsynced) as a power loss that
#     kept the first sectors of k1's writeset and not the rest leaves it: zero one 512-byte
#     sector in the middle of k1's value, its buffer header intact.
#  3. Recover n0 and n2 as the documentation prescribes (mariadbd --wsrep-recover), bootstrap
#     n0, the most advanced, and start n2, which asks n0 for IST.
#  4. Watch n2 for 60 s.
#
# Prints HUNG and exits 1 when n2 logged "Receiving IST failed, node restart required" and is
# still running, not Synced, 60 s later; EXITED (exit 0) when n2's server ended, as "restart
# required" asks; CONVERGED (0) when n2 synced; exits 2 when the reproduction itself failed.
name=ist-checksum-hang
source "$(dirname "$0")/cluster.sh"
new_cluster

kill9 2
value=$(head -c 4096 /dev/zero | tr '\0' v)
q 0 "INSERT INTO modulo.kv VALUES ('k1', '$value')"
echo "n2 killed; k1 committed through n0, on n0 and n1"
kill9 0 1
echo "n0 and n1 killed"
# k1's value is in the cache as the writeset's row image, once or (some runs) twice: zero the
# sector 2 KiB into each copy.
cache=$dir/n0/data/galera.cache
copies=$(grep -obUa "$value" "$cache" | cut -d: -f1)
[ -n "$copies" ] || { echo "reproduction failed: k1's value is not in $cache" >&2; exit 2; }
for at in $copies; do
  sector=$(((at + 2048) / 512))
  dd if=/dev/zero of="$cache" bs=512 seek="$sector" count=1 conv=notrunc status=none
  echo "n0's galera.cache: k1's value at byte $at; sector $sector (bytes $((sector * 512))-$((sector * 512 + 511))) zeroed"
done
positions 0 2
[ "$best" = 0 ] || { echo "reproduction failed: n$best is the most advanced, not n0" >&2; exit 2; }
bootstrap
echo "  n0: $(grep -o 'Recovering GCache ring buffer: found gapless sequence.*' "$dir/n0/server.log" | tail -n 1)"
launch 2 --wsrep-start-position="$(cat "$dir/n2/position")"
echo "  n2 started at its recovered position; it asks for IST"
sleep 60
grep -E 'checksum does not match|checksum failed$|Receiving IST:|node restart required|Draining apply monitors' "$dir/n2/server.log" |
  sed 's/^/  n2: /' | cut -c1-160
if ! kill -0 "${pid[2]}" 2>/dev/null; then
  unset "pid[2]"
  echo "EXITED: n2's server ended after the failed IST"
  exit 0
fi
state=$(status 2 local_state_comment 2>/dev/null || echo "no answer")
if [ "$state" = Synced ]; then
  echo "CONVERGED: n2 synced"
  exit 0
fi
if grep -q 'Receiving IST failed, node restart required' "$dir/n2/server.log"; then
  echo "HUNG: n2 is still running 60 s after its IST failed, $state, cluster size $(status 0 cluster_size) on n0"
  exit 1
fi
echo "reproduction failed: n2 neither synced nor logged a failed IST; see $dir/n2/server.log" >&2
exit 2
