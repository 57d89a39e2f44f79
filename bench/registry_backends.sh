#!/usr/bin/env bash
# The registry's two backends side by side, on one machine: the per-call cost
# of snowflake_nextval() with no registry, with etcd and with a PostgreSQL
# registry (three servers running at once, their rounds interleaved); the
# heartbeat traffic of one server per backend, idle and issuing IDs; and the
# size of the PostgreSQL registry's tables after 1,024 servers x a year of
# daily restarts (rows made with the same columns a claim writes).  Uses the
# installed extension; needs etcd-server (Debian).
#
#   bash bench/registry_backends.sh                 # 9 rounds of 2,000,000 calls, 30 s traffic windows
#   ROUNDS=3 CALLS=500000 WINDOW=10 bash bench/registry_backends.sh
#
# Run as root (servers run as the postgres user).  Writes
# bench/results/registry_backends.md.  Everything it starts is stopped and
# removed on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
source "$BENCH/../scripts/lib.sh"     # PG_BIN, PATH, as_pg

ROUNDS=${ROUNDS:-9}
CALLS=${CALLS:-2000000}
WINDOW=${WINDOW:-30}
LEASE=${LEASE:-30}
SERVERS=${SERVERS:-1024}
RESTARTS=${RESTARTS:-365}

command -v etcd >/dev/null || { echo "etcd is missing (apt-get install etcd-server)" >&2; exit 1; }
[ -f "$(pg_config --pkglibdir)/snowflake.so" ] || { echo "install the extension first" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-regbackends.XXXXXX")
[ "$(id -u)" -eq 0 ] && chown postgres: "$WORK"
BASE=$((55000 + RANDOM % 2000))
EPORT=$((62000 + RANDOM % 2000))
ETCD_PID=
cleanup() {
  for d in off etcd pg registry; do
    [ -f "$WORK/$d/postmaster.pid" ] && as_pg pg_ctl -D "$WORK/$d" -m immediate stop >/dev/null 2>&1 || true
  done
  [ -n "$ETCD_PID" ] && kill -9 "$ETCD_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

etcd --name b1 --data-dir "$WORK/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$EPORT" --advertise-client-urls "http://127.0.0.1:$EPORT" \
  --listen-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 1))" \
  --initial-cluster "b1=http://127.0.0.1:$((EPORT + 1))" >"$WORK/etcd-member.log" 2>&1 &
ETCD_PID=$!

# name port extra-settings
make_server() {
  as_pg initdb -D "$WORK/$1" >/dev/null
  cat >>"$WORK/$1/postgresql.conf" <<EOF
port = $2
listen_addresses = ''
unix_socket_directories = '$WORK'
$3
EOF
  as_pg pg_ctl -D "$WORK/$1" -l "$WORK/$1.log" -w start >/dev/null
}
port_of() { case $1 in registry) echo "$BASE" ;; off) echo $((BASE + 1)) ;; etcd) echo $((BASE + 2)) ;; pg) echo $((BASE + 3)) ;; esac; }
sql() { as_pg psql -X -q -A -t -h "$WORK" -p "$(port_of "$1")" -d "${3:-postgres}" -c "$2"; }

LAYOUT="shared_preload_libraries = 'snowflake'
snowflake.shard_bits = 3        # wide sequence field: the per-ms ceiling never binds
snowflake.sequence_bits = 22"
# over TCP on loopback, as a registry on another host would be reached
make_server registry "$(port_of registry)" "listen_addresses = '127.0.0.1'"
sql registry "CREATE DATABASE registry"
make_server off "$(port_of off)" "$LAYOUT
snowflake.shard_id = 1"
make_server etcd "$(port_of etcd)" "$LAYOUT
snowflake.registry = 'http://127.0.0.1:$EPORT'
snowflake.registry_lease = '${LEASE}s'"
make_server pg "$(port_of pg)" "$LAYOUT
snowflake.registry = 'host=127.0.0.1 port=$(port_of registry) dbname=registry'
snowflake.registry_lease = '${LEASE}s'"
for s in off etcd pg; do sql "$s" "CREATE EXTENSION snowflake"; done
for s in etcd pg; do
  for _ in $(seq 150); do
    [ "$(sql "$s" 'SELECT generating FROM snowflake_registry')" = t ] && break
    sleep 0.2
  done
  [ "$(sql "$s" 'SELECT generating FROM snowflake_registry')" = t ] || { echo "$s: no shard claimed" >&2; exit 1; }
done

# ns of CPU time per call of snowflake_nextval() on server $1, net of the
# same query without it: 10 chunks of CALLS/10 calls of each, alternating in
# one backend, CPU time from /proc/self/schedstat (time on the CPU, so that
# other load on a shared machine counts as little as it can)
net_ns() {
  local chunk=$((CALLS / 10))
  sql "$1" "DO \$\$ DECLARE c0 bigint; b bigint := 0; g bigint := 0; n bigint; BEGIN
    FOR i IN 1..10 LOOP
      c0 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
      SELECT count(f) INTO n FROM (SELECT 1::bigint AS f FROM generate_series(1, $chunk)) s;
      b := b + split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - c0;
      c0 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
      SELECT count(f) INTO n FROM (SELECT snowflake_nextval() AS f FROM generate_series(1, $chunk)) s;
      g := g + split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - c0;
    END LOOP;
    RAISE NOTICE '%', round((g - b)::numeric / (10 * $chunk), 1); END \$\$" 2>&1 | grep -oE '[-0-9.]+$'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# first quartile - third quartile
quartiles() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+3)/4)] " - " a[int((3*NR+1)/4)]}'; }

counters() { sql "$1" "SELECT requests || ' ' || bytes_sent || ' ' || bytes_received FROM snowflake_registry"; }
rate() {       # requests/s | bytes/s sent | bytes/s received between two counter readings
  echo "$1 $2" | awk -v w="$WINDOW" '{printf "%.2f | %.0f | %.0f", ($4-$1)/w, ($5-$2)/w, ($6-$3)/w}'
}
echo "traffic, idle ($WINDOW s) ..."
a_etcd=$(counters etcd); a_pg=$(counters pg)
sleep "$WINDOW"
b_etcd=$(counters etcd); b_pg=$(counters pg)
idle_etcd=$(rate "$a_etcd" "$b_etcd"); idle_pg=$(rate "$a_pg" "$b_pg")
echo "traffic, issuing 1,000 IDs/s ($WINDOW s) ..."
echo 'SELECT snowflake_nextval();' >"$WORK/nextval.sql"
loads=()
for s in etcd pg; do
  as_pg pgbench -n -h "$WORK" -p "$(port_of "$s")" -c 1 -T "$((WINDOW + 5))" -R 1000 \
    -f "$WORK/nextval.sql" postgres >"$WORK/pgbench-$s.log" 2>&1 &
  loads+=($!)
done
sleep 3
a_etcd=$(counters etcd); a_pg=$(counters pg)
sleep "$WINDOW"
b_etcd=$(counters etcd); b_pg=$(counters pg)
busy_etcd=$(rate "$a_etcd" "$b_etcd"); busy_pg=$(rate "$a_pg" "$b_pg")
wait "${loads[@]}" || true
issued_etcd=$(grep -oE 'number of transactions actually processed: [0-9]+' "$WORK/pgbench-etcd.log" | grep -oE '[0-9]+$' || echo 0)
issued_pg=$(grep -oE 'number of transactions actually processed: [0-9]+' "$WORK/pgbench-pg.log" | grep -oE '[0-9]+$' || echo 0)

echo "per-call cost: $ROUNDS interleaved rounds of $CALLS calls ..."
for s in off etcd pg; do net_ns "$s" >/dev/null; done   # warm-up
: >"$WORK/rounds"
for r in $(seq "$ROUNDS"); do
  o=$(net_ns off); e=$(net_ns etcd); p=$(net_ns pg)
  echo "$o $e $p" >>"$WORK/rounds"
  echo "  round $r: off $o ns, etcd $e ns, postgresql $p ns"
done
load_avg=$(cut -d' ' -f1-3 /proc/loadavg)
off=$(awk '{print $1}' "$WORK/rounds" | median)
on_etcd=$(awk '{print $2}' "$WORK/rounds" | median)
on_pg=$(awk '{print $3}' "$WORK/rounds" | median)
ratio_etcd=$(awk '{print $2 / $1}' "$WORK/rounds" | median)
ratio_pg=$(awk '{print $3 / $1}' "$WORK/rounds" | median)

echo "registry table size: $SERVERS servers x $RESTARTS restarts ..."
rows=$((SERVERS * RESTARTS))
sql registry "
  INSERT INTO snowflake_registry.claims (id_space, datacenter, worker, status, lease, lease_ttl_s,
      allocated_at, last_heartbeat, released_at, holder, host, pid, holder_clock, mark_ms)
  SELECT '/snowflake/default', 0, s % $SERVERS, 'released', (random() * 9e18)::bigint, 30,
         t, t + interval '1 day', t + interval '1 day',
         format('host db-%s.example.com, port 5432, data directory /var/lib/postgresql/18/main, system identifier %s',
                lpad((s % $SERVERS)::text, 4, '0'), 7300000000000000000 + s % $SERVERS),
         format('db-%s.example.com', lpad((s % $SERVERS)::text, 4, '0')), 1000 + s % 30000,
         t + interval '1 day', (extract(epoch FROM t + interval '1 day') * 1000)::bigint
  FROM generate_series(1, $rows) s, LATERAL (SELECT now() - interval '1 year' + s * interval '1 year' / $rows AS t) x;
  INSERT INTO snowflake_registry.claims (id_space, datacenter, worker, status, lease, lease_ttl_s,
      allocated_at, last_heartbeat, holder, host, pid, holder_clock, mark_ms)
  SELECT '/snowflake/default', 0, w + 8, 'active', (random() * 9e18)::bigint, 30, now(), now(),
         format('host db-%s.example.com, port 5432, data directory /var/lib/postgresql/18/main, system identifier %s',
                lpad(w::text, 4, '0'), 7300000000000000000 + w),
         format('db-%s.example.com', lpad(w::text, 4, '0')), 1000 + w, now(), 0
  FROM generate_series(0, $((SERVERS - 1 - 8))) w;
  INSERT INTO snowflake_registry.shards SELECT '/snowflake/default', 0, w, 0 FROM generate_series(8, $((SERVERS - 1))) w
    ON CONFLICT DO NOTHING;" registry >/dev/null
sql registry "VACUUM ANALYZE snowflake_registry.claims" registry >/dev/null
sql registry "VACUUM ANALYZE snowflake_registry.shards" registry >/dev/null
size() { sql registry "SELECT $1" registry; }
total_rows=$(size "count(*) FROM snowflake_registry.claims")
heap=$(size "pg_size_pretty(pg_relation_size('snowflake_registry.claims') + pg_relation_size(reltoastrelid)) FROM pg_class WHERE oid = 'snowflake_registry.claims'::regclass")
per_row=$(size "round(pg_relation_size('snowflake_registry.claims')::numeric / count(*)) FROM snowflake_registry.claims")
pkey=$(size "pg_size_pretty(pg_relation_size('snowflake_registry.claims_pkey'))")
active_idx=$(size "pg_size_pretty(pg_relation_size('snowflake_registry.claims_active') + pg_relation_size('snowflake_registry.claims_active_lease'))")
shards=$(size "pg_size_pretty(pg_total_relation_size('snowflake_registry.shards'))")
total=$(size "pg_size_pretty(pg_total_relation_size('snowflake_registry.claims') + pg_total_relation_size('snowflake_registry.shards'))")
# what a heartbeat costs the registry with this history: its plan stays on the partial index
plan=$(as_pg psql -X -q -A -t -h "$WORK" -p "$(port_of registry)" -d registry -c "
  EXPLAIN (COSTS OFF) UPDATE snowflake_registry.claims SET last_heartbeat = now()
  WHERE lease = 42 AND status = 'active' AND last_heartbeat + lease_ttl_s * interval '1 second' > now()" |
  grep -oE 'Index Scan using [a-z_]+|Seq Scan' | head -n 1)

mkdir -p "$BENCH/results"
cat >"$BENCH/results/registry_backends.md" <<EOF
# The registry's backends: per-call cost, traffic, table size

$(date -u +%Y-%m-%d), PostgreSQL $(pg_config --version | awk '{print $2}'), etcd $(etcd --version | awk 'NR==1 {print $3}'), $(nproc) cores.
Three servers ran at once: no registry (\`snowflake.shard_id = 1\`), etcd (one member), and a
PostgreSQL registry (another server on the same machine, over TCP on loopback), lease ${LEASE} s.

## Per-call cost of snowflake_nextval()

$ROUNDS rounds; in each, on each server in turn, $CALLS calls of snowflake_nextval() and as
many of the same query without it, alternating in 10 chunks in one backend; CPU time of the
backend (/proc/self/schedstat), not wall time. Medians (and quartiles) of the net ns per
call, and the median of each round's ratio to the server without a registry:

| registry | per call | quartiles | ratio to off |
|---|---|---|---|
| off | $off ns | $(awk '{print $1}' "$WORK/rounds" | quartiles) | 1 |
| etcd | $on_etcd ns | $(awk '{print $2}' "$WORK/rounds" | quartiles) | $(printf '%.3f' "$ratio_etcd") |
| PostgreSQL | $on_pg ns | $(awk '{print $3}' "$WORK/rounds" | quartiles) | $(printf '%.3f' "$ratio_pg") |

The load average during the rounds: $load_avg.

Rounds (off, etcd, PostgreSQL, ns):
$(sed 's/^/    /' "$WORK/rounds")

## Traffic of one server

Counted by the registry worker (\`snowflake_registry\`: requests, bytes sent and received;
etcd: HTTP/1.1 on a kept-alive connection, headers included; PostgreSQL: the bytes of the
TCP connection, by TCP_INFO), over $WINDOW s, idle first (no ID issued since the claim),
then with pgbench calling snowflake_nextval() 1,000 times a second on each:

| backend | state | requests/s | bytes/s sent | bytes/s received |
|---|---|---|---|---|
| etcd | idle | $idle_etcd |
| etcd | issuing 1,000 IDs/s | $busy_etcd |
| PostgreSQL | idle | $idle_pg |
| PostgreSQL | issuing 1,000 IDs/s | $busy_pg |

(pgbench issued $issued_etcd IDs on the etcd server and $issued_pg on the PostgreSQL one in
$((WINDOW + 5)) s.)

## The PostgreSQL registry's tables after $SERVERS servers x $RESTARTS restarts

$total_rows claim rows ($SERVERS x $RESTARTS released, plus the active ones), as a claim
writes them (ID space, worker, status, lease, times, the holder's identity of about 110
bytes, host, PID, clock, mark), after VACUUM:

| | size |
|---|---|
| claims, heap | $heap ($per_row bytes a row) |
| claims, primary key | $pkey |
| claims, the two partial indexes on active rows | $active_idx |
| shards | $shards |
| all | $total |

A heartbeat's plan with this history: $plan (the partial index on active rows, whatever
the history's size).
EOF
cat "$BENCH/results/registry_backends.md"
