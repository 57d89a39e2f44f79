#!/usr/bin/env bash
# Per-call cost of snowflake_nextval() under the default 63-bit, 1 ms layout,
# a 53-bit layout and a 10 ms time unit, side by side, and the backfill rate
# of snowflake_nextval_at() (issue 21).  Three scratch servers run at once;
# every round times each of them in turn (the first one rotating), so the
# noise of a shared machine hits them alike, and the ratio to the default is
# taken within each round.  Uses the installed extension.
#
#   bash bench/layouts.sh          # 31 rounds of 2,000,000 calls; 5 imports of 1,000,000 rows each way
#   ROUNDS=5 CALLS=500000 BACKFILL_ROUNDS=2 ROWS=200000 bash bench/layouts.sh
#
# Run as root (servers run as the postgres user) or as a user that may run
# initdb.  Writes bench/results/layouts.md.  Everything it starts is stopped
# and removed on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
source "$BENCH/../scripts/lib.sh"     # PG_BIN, PATH, as_pg

ROUNDS=${ROUNDS:-31}
BACKFILL_ROUNDS=${BACKFILL_ROUNDS:-5}
CALLS=${CALLS:-2000000}
ROWS=${ROWS:-1000000}

[ -f "$(pg_config --pkglibdir)/snowflake.so" ] || { echo "install the extension first" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-layoutbench.XXXXXX")
[ "$(id -u)" -eq 0 ] && chown postgres: "$WORK"
BASEPORT=${PORT:-5510}
cleanup() {
  for d in "$WORK"/*/; do
    [ -f "$d/postmaster.pid" ] && as_pg pg_ctl -D "$d" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# The widths leave each layout a sequence field so wide that the per-unit
# ceiling never binds in a round: the figure is the cost of the code (the
# arithmetic in units and widths), not of waiting for the clock.  The
# JavaScript preset's own widths (6 shard bits, 8 sequence bits) cap it at
# 25,600 IDs/s per shard; that is the sequence space, shown in the README.
NAMES=(default bits53 unit10)
declare -A CONF=(
  [default]="snowflake.shard_bits = 8
snowflake.sequence_bits = 17
snowflake.shard_id = 1
snowflake.import_shards = '100-199'"
  [bits53]="snowflake.id_bits = 53
snowflake.time_unit = '10ms'
snowflake.shard_bits = 0
snowflake.sequence_bits = 18
snowflake.shard_id = 0"
  [unit10]="snowflake.time_unit = '10ms'
snowflake.shard_bits = 3
snowflake.sequence_bits = 22
snowflake.shard_id = 1"
)
declare -A LABEL=(
  [default]="63 bits, 1 ms (8 shard + 17 sequence bits)"
  [bits53]="53 bits, 10 ms (0 shard + 18 sequence bits)"
  [unit10]="63 bits, 10 ms (3 shard + 22 sequence bits)"
)
declare -A PORTOF
i=0
for n in "${NAMES[@]}"; do
  PORTOF[$n]=$((BASEPORT + i)); i=$((i + 1))
  as_pg initdb -D "$WORK/$n" >/dev/null
  cat >>"$WORK/$n/postgresql.conf" <<EOF
port = ${PORTOF[$n]}
listen_addresses = ''
unix_socket_directories = '$WORK'
shared_preload_libraries = 'snowflake'
jit = off
autovacuum = off
${CONF[$n]}
EOF
  as_pg pg_ctl -D "$WORK/$n" -l "$WORK/$n.log" -w start >/dev/null
done
sql() { as_pg psql -X -q -A -t -h "$WORK" -p "${PORTOF[$1]}" -d postgres -c "$2"; }
for n in "${NAMES[@]}"; do sql "$n" "CREATE EXTENSION snowflake" ; done

# ms of CPU time the backend spends on CALLS calls of $2 in one query on
# server $1, from /proc/self/schedstat (ns on the CPU), so that other load on
# a shared machine does not count
time_once() {
  sql "$1" "DO \$\$ DECLARE c0 bigint; c1 bigint; n bigint; BEGIN
    c0 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
    SELECT count(f) INTO n FROM (SELECT $2 AS f FROM generate_series(1, $CALLS)) s;
    c1 := split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint;
    RAISE NOTICE '%', (c1 - c0) / 1e6; END \$\$" 2>&1 |
    grep -oE '[0-9.]+$'
}
# ns per call on server $1, net of the same query without a generator
net_ns() {
  local e g
  e=$(time_once "$1" "1::bigint"); g=$(time_once "$1" "snowflake_nextval()")
  awk -v g="$g" -v e="$e" -v n="$CALLS" 'BEGIN {printf "%.1f", (g - e) * 1e6 / n}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# "median (first quartile - third quartile)" of the numbers on stdin
spread() { sort -n | awk '{a[NR]=$1} END {printf "%s (%s - %s)", a[int((NR+1)/2)], a[int(NR/4)+1], a[int(3*NR/4)+1]}'; }

echo "warm-up ..."
for n in "${NAMES[@]}"; do net_ns "$n" >/dev/null; done

declare -A NS RATIO
for r in $(seq "$ROUNDS"); do
  declare -A this=()
  for k in 0 1 2; do               # the first server rotates from round to round
    n=${NAMES[$(((r + k) % 3))]}
    this[$n]=$(net_ns "$n")
  done
  for n in "${NAMES[@]}"; do
    NS[$n]+="${this[$n]} "
    RATIO[$n]+="$(awk -v a="${this[$n]}" -v b="${this[default]}" 'BEGIN {printf "%.3f", a / b}') "
  done
  echo "round $r: default ${this[default]} ns, 53-bit ${this[bits53]} ns, 10 ms ${this[unit10]} ns"
done

# Backfill: ROWS historical times over two years, 16 rows sharing each
# millisecond, imported in order on one import shard per round; wall time of
# the statement (it includes the fsynced reservation of each imported day).
sql default "CREATE TABLE hist AS
  SELECT timestamptz '2024-03-01 00:00:00+00'
         + (g / 16) * (interval '2 years' / ($ROWS / 16 + 1)) AS t
  FROM generate_series(0, $ROWS - 1) g"
sql default "VACUUM ANALYZE hist"
rate() {    # IDs/s of one import of every row of hist on shard $2, form $1
  local q
  if [ "$1" = row ]; then
    q="SELECT count(snowflake_nextval_at(t, $2)) FROM (SELECT t FROM hist ORDER BY t) s"
  else
    q="SELECT count(*) FROM snowflake_nextval_at_batch((SELECT array_agg(t ORDER BY t) FROM hist), $2)"
  fi
  sql default "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON, FORMAT JSON) $q" |
    grep -oE '"Execution Time": [0-9.]+' | grep -oE '[0-9.]+$' |
    awk -v n="$ROWS" '{printf "%.0f", n / ($1 / 1000)}'
}
echo "backfill ..."
ROWRATES=() ARRRATES=()
shard=100
for r in $(seq "$BACKFILL_ROUNDS"); do
  ROWRATES+=("$(rate row $shard)"); shard=$((shard + 1))
  ARRRATES+=("$(rate array $shard)"); shard=$((shard + 1))
  echo "round $r: row form ${ROWRATES[-1]} IDs/s, array form ${ARRRATES[-1]} IDs/s"
done
# the imported IDs of a round decode to their times (a check on the figures'
# meaning, not a test): the last shard's IDs against hist
ok=$(sql default "SELECT count(*) = $ROWS FROM (SELECT t, row_number() OVER (ORDER BY t) rn FROM hist) h
  JOIN (SELECT id, row_number() OVER (ORDER BY id) rn FROM snowflake_nextval_at_batch(
        (SELECT array_agg(t ORDER BY t) FROM hist), $shard) id) i USING (rn)
  WHERE snowflake_timestamp(i.id) = date_trunc('milliseconds', h.t)")

mkdir -p "$BENCH/results"
{
  echo "# snowflake_nextval() under other widths and time units; backfill rate"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg) at the end, PostgreSQL $(pg_config --version | awk '{print $2}'), $(nproc) cores" \
       "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))."
  echo "Three servers at once; each round times them in turn (the first rotating). Per call: CPU"
  echo "time of the backend (/proc/self/schedstat) for $CALLS calls in one query, net of the same"
  echo "query without a generator; ratio to the default within each round; medians of $ROUNDS rounds."
  echo
  echo "| layout | per call, median (quartiles) | ratio to the default, median (quartiles) |"
  echo "|---|---|---|"
  for n in "${NAMES[@]}"; do
    echo "| ${LABEL[$n]} | $(echo ${NS[$n]} | tr ' ' '\n' | spread) ns | $(echo ${RATIO[$n]} | tr ' ' '\n' | spread) |"
  done
  echo
  echo "Backfill on the default layout: $ROWS rows over two years, 16 per millisecond, in order,"
  echo "one import shard per round; wall time of the statement (EXPLAIN ANALYZE execution time,"
  echo "one fsynced reservation per imported day included); median of $BACKFILL_ROUNDS rounds."
  echo
  echo "| form | IDs/s, median |"
  echo "|---|---|"
  echo "| \`snowflake_nextval_at(t, shard)\` per row, \`ORDER BY t\` | $(printf '%s\n' "${ROWRATES[@]}" | median) (rounds: ${ROWRATES[*]}) |"
  echo "| \`snowflake_nextval_at_batch(array, shard)\` | $(printf '%s\n' "${ARRRATES[@]}" | median) (rounds: ${ARRRATES[*]}) |"
  echo
  echo "Every ID of one more import decodes to its row's time (to the ms): $ok."
} >"$BENCH/results/layouts.md"
cat "$BENCH/results/layouts.md"
