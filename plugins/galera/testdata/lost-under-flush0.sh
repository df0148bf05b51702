#!/usr/bin/env bash
# A commit that a Galera cluster acknowledged is lost when every node crashes within a second
# of it under innodb_flush_log_at_trx_commit = 0 (MDEV-38974): the failure of schedule
# 345a89c90e1e93f7 of a qcg campaign by hand, with mariadbd and the mariadb client alone.
#
#	bash plugins/galera/testdata/lost-under-flush0.sh
#
# The three nodes of cluster.sh, with innodb_flush_log_at_trx_commit = 0, as Galera's
# documentation allows. Then, in up to three rounds:
#
#  1. Commit k<round> through n0 (every node of the primary component certified it) and
#     SIGKILL the three servers at once as soon as the commit returns.
#  2. Recover as Galera's documentation prescribes after every node went down: mariadbd
#     --wsrep-recover on each node, safe_to_bootstrap: 1 on the most advanced, bootstrap it
#     (--wsrep-new-cluster), start the others with their recovered positions.
#  3. Read k<round> from each node alone (wsrep_sync_wait = 0).
#
# A round in which a node's once-a-second redo log flush fell between the commit and the kill
# keeps the row; the next round tries again. Prints LOST and exits 1 when no node holds the
# acknowledged row; CONVERGED (exit 0) when every round kept it on every node; exits 2 when
# the reproduction itself failed.
name=lost-under-flush0 FLUSH=0
source "$(dirname "$0")/cluster.sh"
new_cluster

for round in 1 2 3; do
  key=k$round
  q 0 "INSERT INTO modulo.kv VALUES ('$key', 'acknowledged')"
  kill9 0 1 2                                  # every node at once, the commit just returned
  echo "round $round: $key committed through n0 (acknowledged); n0, n1, n2 killed"
  positions 0 1 2
  bootstrap
  for i in 0 1 2; do [ "$i" = "$best" ] || rejoin "$i"; done
  echo "  cluster of $(status "$best" cluster_size) nodes, $(status "$best" cluster_status)"
  holders=()
  for i in 0 1 2; do
    n=$(holds "$i" "$key")
    echo "  n$i holds $key: $([ "$n" = 1 ] && echo yes || echo no)"
    [ "$n" = 1 ] && holders+=("n$i")
  done
  if [ ${#holders[@]} = 0 ]; then
    echo "LOST: no node holds the acknowledged $key"
    exit 1
  fi
  if [ ${#holders[@]} != 3 ]; then
    echo "DIVERGED: ${holders[*]} hold the acknowledged $key, the others do not"
    exit 1
  fi
done
echo "CONVERGED: every node holds every acknowledged row"
