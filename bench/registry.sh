#!/usr/bin/env bash
# Per-call cost of snowflake_nextval() with the etcd registry off and on, and
# the registry's etcd traffic (keep-alives and freshness marks), on one
# scratch PostgreSQL 15 server and a one-member etcd on loopback.  Uses the
# installed extension; needs etcd-server (Debian).
#
#   bash bench/registry.sh              # 9 rounds of 2,000,000 calls each way, 30 s traffic windows
#   ROUNDS=3 CALLS=1000000 WINDOW=10 bash bench/registry.sh
#
# Run as root (servers run as the postgres user) or as a user that may run
# initdb.  Writes bench/results/registry.md.  Everything it starts is stopped
# and removed on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
source "$BENCH/../scripts/lib.sh"     # PG_BIN, PATH, as_pg

ROUNDS=${ROUNDS:-9}
CALLS=${CALLS:-2000000}
WINDOW=${WINDOW:-30}
LEASE=${LEASE:-30}

command -v etcd >/dev/null || { echo "etcd is missing (apt-get install etcd-server)" >&2; exit 1; }
[ -f "$(pg_config --pkglibdir)/snowflake.so" ] || { echo "install the extension first" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-regbench.XXXXXX")
[ "$(id -u)" -eq 0 ] && chown postgres: "$WORK"
PORT=${PORT:-5499}
EPORT=$((62000 + RANDOM % 2000))
ETCD_PID=
cleanup() {
  [ -f "$WORK/data/postmaster.pid" ] && as_pg pg_ctl -D "$WORK/data" -m immediate stop >/dev/null 2>&1 || true
  [ -n "$ETCD_PID" ] && kill -9 "$ETCD_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

etcd --name b1 --data-dir "$WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$EPORT" --advertise-client-urls "http://127.0.0.1:$EPORT" \
  --listen-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
  --initial-cluster "b1=http://127.0.0.1:$((EPORT + 1))" >"$WORK/etcd.log" 2>&1 &
ETCD_PID=$!

as_pg initdb -D "$WORK/data" >/dev/null
cat >>"$WORK/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
shared_preload_libraries = 'snowflake'
snowflake.shard_bits = 3        # wide sequence field: the per-ms ceiling never binds
snowflake.sequence_bits = 22
include_if_exists = 'registry.conf'
EOF
sql() { as_pg psql -X -q -A -t -h "$WORK" -p "$PORT" -d postgres -c "$1"; }

# ms of CPU time the backend spends on CALLS calls of $1 in one query: read
# from /proc/self/schedstat (ns on the CPU), so that other load on a shared
# machine does not count
time_once() {
  sql "DO \$\$ DECLARE c0 bigint; c1 bigint; n bigint; BEGIN
    c0 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
    SELECT count(f) INTO n FROM (SELECT $1 AS f FROM generate_series(1, $CALLS)) s;
    c1 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
    RAISE NOTICE '%', (c1 - c0) / 1e6; END \$\$" 2>&1 |
    grep -oE '[0-9.]+$'
}

# ns per call of snowflake_nextval(), net of the same query without it: each
# round times both back to back (the machine may be shared), median of the
# differences, after a warm-up
per_call() {
  local diffs=() e g
  time_once "snowflake_nextval()" >/dev/null; time_once "1::bigint" >/dev/null
  for _ in $(seq "$ROUNDS"); do
    e=$(time_once "1::bigint"); g=$(time_once "snowflake_nextval()")
    diffs+=("$(awk -v g="$g" -v e="$e" -v n="$CALLS" 'BEGIN {printf "%.1f", (g - e) * 1e6 / n}')")
  done
  printf '%s\n' "${diffs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

start() { as_pg pg_ctl -D "$WORK/data" -l "$WORK/pg.log" -w start >/dev/null; }
stop() { as_pg pg_ctl -D "$WORK/data" -w stop >/dev/null; }

echo "registry off ..."
echo "snowflake.shard_id = 1" >"$WORK/data/registry.conf"
start
sql "CREATE EXTENSION snowflake"
off=$(per_call)
stop

echo "registry on ..."
cat >"$WORK/data/registry.conf" <<EOF
snowflake.registry = 'http://127.0.0.1:$EPORT'
snowflake.registry_lease = '${LEASE}s'
EOF
start
for _ in $(seq 100); do
  [ "$(sql 'SELECT generating FROM snowflake_registry')" = t ] && break
  sleep 0.2
done
[ "$(sql 'SELECT generating FROM snowflake_registry')" = t ] || { echo "no shard claimed" >&2; exit 1; }
counters() { sql "SELECT requests || ' ' || bytes_sent || ' ' || bytes_received FROM snowflake_registry"; }
traffic() {    # requests/s, bytes/s sent, bytes/s received over WINDOW seconds
  local a b
  a=$(counters); sleep "$WINDOW"; b=$(counters)
  echo "$a $b" | awk -v w="$WINDOW" '{printf "%.2f req/s, %.0f B/s sent, %.0f B/s received", ($4-$1)/w, ($5-$2)/w, ($6-$3)/w}'
}
echo "traffic, idle ($WINDOW s) ..."
idle=$(traffic)
on=$(per_call)
echo "traffic, generating ($WINDOW s) ..."
as_pg pgbench -n -h "$WORK" -p "$PORT" -c 1 -T "$WINDOW" -R 1000 \
  -f <(echo 'SELECT snowflake_nextval();') postgres >/dev/null 2>&1 &
PGB=$!
busy=$(traffic)
wait "$PGB" || true
stop

mkdir -p "$BENCH/results"
cat >"$BENCH/results/registry.md" <<EOF
# snowflake_nextval() with and without the etcd registry

$(date -u +%Y-%m-%d), PostgreSQL $(pg_config --version | awk '{print $2}'), etcd $(etcd --version | awk 'NR==1 {print $3}'), $(nproc) cores.
Median of $ROUNDS rounds of $CALLS calls in one query, each net of the same query without a
generator run just before it; CPU time of the backend (/proc/self/schedstat), not wall time.

| registry | per call |
|---|---|
| off (snowflake.shard_id = 1) | $off ns |
| on (lease ${LEASE} s) | $on ns |

etcd traffic of one server with a ${LEASE} s lease (HTTP/1.1 keep-alive connection, headers included):

| | |
|---|---|
| idle | $idle |
| generating (1,000 calls/s) | $busy |
EOF
cat "$BENCH/results/registry.md"
