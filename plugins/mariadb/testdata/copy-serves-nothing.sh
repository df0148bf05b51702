#!/usr/bin/env bash
# A restored copy serves a follower that lacks its rows from an empty binlog, and MariaDB says
# the follower is in sync: the second form of replica-ahead.sh's unchecked domain, found in the
# mdl ops=1 campaign on three replicas (e.g. 4da337df5f74bfcd). By hand, with MariaDB's own
# programs and the mariadb client alone: a takes a row; b is made a replica of a as MariaDB
# documents it for a dump (mariadb-dump --gtid --master-data of a, loaded with binary logging
# off, which sets b's gtid_slave_pos); c, which never had the row, then replicates from b.
# Servers a, b and c listen on BASE_PORT to BASE_PORT+2 (default 33311). Prints DIVERGED and
# exits 1 when c stays without the row while both its replication threads run; exits 0 when it
# gets the row, 2 when the reproduction itself failed. Every server is killed and every file
# removed on exit.
base=33311 name=copy-serves-nothing
source "$(dirname "$0")/servers.sh"
start a 1; start b 2; start c 3
q a "REPLACE INTO modulo.kv VALUES ('k1.1', 'w1')"
mariadb-dump -h127.0.0.1 -P"$(port a)" -uroot --single-transaction --gtid --master-data=1 --databases modulo >"$dir/dump.sql"
mariadb -h127.0.0.1 -P"$(port b)" -uroot --init-command='SET sql_log_bin = 0' -e "source $dir/dump.sql"
echo "b holds: $(q b 'SELECT k FROM modulo.kv' | tr '\n' ' ')gtid_binlog_pos [$(q b 'SELECT @@gtid_binlog_pos')] gtid_slave_pos [$(q b 'SELECT @@gtid_slave_pos')]"
q c "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = $(port b), MASTER_USER = 'root', MASTER_CONNECT_RETRY = 1,
  MASTER_USE_GTID = slave_pos, MASTER_DEMOTE_TO_SLAVE = 1; START SLAVE"
sleep 2
echo "c: $(mariadb -h127.0.0.1 -P"$(port c)" -uroot -E -e 'SHOW SLAVE STATUS' | grep -E 'Slave_(IO|SQL)_Running:|Last_IO_Errno' | tr -s ' ' | tr '\n' ' ')"
echo "c holds: [$(q c 'SELECT k FROM modulo.kv' | tr '\n' ' ')] MASTER_GTID_WAIT(b's binlog position) = $(q c "SELECT MASTER_GTID_WAIT('$(q b 'SELECT @@gtid_binlog_pos')', 0)")"
if [ "$(q c 'SELECT COUNT(*) FROM modulo.kv')" != "$(q b 'SELECT COUNT(*) FROM modulo.kv')" ]; then
  echo "DIVERGED: c, in sync with b by MariaDB's word, lacks k1.1, which b holds"
  exit 1
fi
echo "CONVERGED: c holds k1.1 as b does"
