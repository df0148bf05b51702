#!/usr/bin/env bash
# MariaDB serves a replica from a GTID its binlog never held: the failure of schedule
# 6a08e30b46ce8cdd (replica-ahead.txt) by hand, with MariaDB's own programs and the mariadb
# client alone. Two servers a (server_id 1) and b (2), GTID strict mode on, as modulo's
# plugin starts them, on BASE_PORT and BASE_PORT+1 (default 33301). Prints DIVERGED and exits 1
# when a keeps a row that b, its primary, never had; exits 0 when they converge, 2 when the
# reproduction itself failed. Every server is killed and every file removed on exit.
base=33301 name=replica-ahead
source "$(dirname "$0")/servers.sh"
start a 1; start b 2
follow b a                                   # the models' start: b replicates from a
crash b                                      # step 1: b crashes ...
q a "REPLACE INTO modulo.kv VALUES ('k1.1', 'w1')"   # ... and a takes write 1
echo "a's binlog: $(q a 'SELECT @@gtid_binlog_pos')"
start b 2                                    # step 2: b comes back, a primary
follow a b                                   # and a replicates from b
sleep 2
echo "a: $(mariadb -h127.0.0.1 -P"$(port a)" -uroot -E -e 'SHOW SLAVE STATUS' | grep -E 'Slave_(IO|SQL)_Running:|Last_IO_Errno' | tr -s ' ' | tr '\n' ' ')"
echo "b's log: $(grep -o "Start binlog_dump.*" "$dir/b.log" | tail -1)"
echo "a holds: $(q a 'SELECT k FROM modulo.kv' | tr '\n' ' ')gtid_slave_pos $(q a 'SELECT @@gtid_slave_pos')"
echo "b holds: $(q b 'SELECT k FROM modulo.kv' | tr '\n' ' ')gtid_binlog_pos $(q b 'SELECT @@gtid_binlog_pos')"
if [ "$(q a 'SELECT COUNT(*) FROM modulo.kv')" != "$(q b 'SELECT COUNT(*) FROM modulo.kv')" ]; then
  echo "DIVERGED: a keeps k1.1, which b, its primary, never had"
  exit 1
fi
echo "CONVERGED: a and b hold the same rows"
