#!/bin/bash
# bench/managed.sh: what the SQL edition's generation costs against nextval()
# and bigserial, and against the extension (issue 34: per call within 3x of
# nextval(), INSERT rows/s with 2 clients at least 0.9 of bigserial's),
# measured side by side in one run on one server: the extension is preloaded
# there and lives in schema ext, the SQL edition in public (the SQL edition
# uses nothing of the library).  Writes bench/results/managed[-quick].md
# with a summary block whose keys match the README's <!-- bench: key -->
# markers (bench/fill_readme.py).
#
#   bash bench/managed.sh [--quick] [--rounds N]
#
# PostgreSQL from PG_BIN (its bin folder), else pg_config on PATH.  Starts a
# scratch server (no shared_preload_libraries: the SQL edition needs no C
# library) in a temporary folder on a free port, installs managed/install.sql
# (or the concatenated managed/src/*.sql) as a non-superuser database owner,
# and removes the server at the end.  Run as root (servers run as postgres)
# or as a user that may run initdb.
#
# Per call: the streaming query of bench/README.md,
#   SELECT count(f) FROM (SELECT <expr> AS f FROM (SELECT generate_series(1, N) g) x) s
# timed by the server (EXPLAIN ANALYZE's execution time is not used: psql's
# \timing of the query, in one session), minus the same query with g in
# place of the call, per round; expressions in rotating order; ratios within
# each round; medians [min-max].  Elapsed time, not CPU time (bench/run.sh's
# snowbench_cpu_ns() needs a C module): run it on a quiet machine.
# Inserts: pgbench, 2 clients, single-row INSERTs into a table keyed by
# bigserial and one keyed by DEFAULT snowflake_nextval(), T seconds each, in
# alternating order per round; rows/s and the ratio per round.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=9; N=1000000; T=10; QUICK=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) ROUNDS=5; N=300000; T=4; QUICK=1 ;;
    --rounds) ROUNDS=$2; shift ;;
    *) echo "usage: $0 [--quick] [--rounds N]" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "${PG_BIN:-}" ]; then PG_BIN=$(pg_config --bindir); fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/managed-bench.XXXXXX")
AS=()
if [ "$(id -u)" = 0 ]; then chown postgres "$WORK"; AS=(runuser -u postgres --); fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() { "${AS[@]}" "$PG_BIN/pg_ctl" -D "$WORK/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT

"${AS[@]}" "$PG_BIN/initdb" -D "$WORK/data" -A trust -U postgres >/dev/null
cat >>"$WORK/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$WORK'
shared_buffers = 16MB
shared_preload_libraries = 'snowflake'
snowflake.shard_id = 2
jit = off
autovacuum = off
max_parallel_workers_per_gather = 0
max_wal_size = 4GB
checkpoint_timeout = 30min
EOF
"${AS[@]}" "$PG_BIN/pg_ctl" -D "$WORK/data" -l "$WORK/log" -w start >/dev/null
psql_as() { local u=$1; shift; "${AS[@]}" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -U "$u" "$@"; }

psql_as postgres postgres -c "CREATE ROLE app LOGIN" -c "CREATE DATABASE appdb OWNER app"
if [ -f "$ROOT/managed/install.sql" ]; then cat "$ROOT/managed/install.sql"
else cat "$ROOT"/managed/src/*.sql | awk '/^-- @tle-only-begin/{skip=1; next} /^-- @tle-only-end/{skip=0; next} !skip'; fi |
  psql_as app appdb >/dev/null
psql_as app appdb >/dev/null <<'EOF'
SELECT snowflake_configure(shard_id => 1);
CREATE SEQUENCE s;
CREATE SCHEMA ext;
CREATE EXTENSION snowflake SCHEMA ext;
CREATE TABLE t_serial (id bigserial PRIMARY KEY, v int);
CREATE TABLE t_sf (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v int);
CREATE TABLE t_ext (id bigint PRIMARY KEY DEFAULT ext.snowflake_nextval(), v int);
EOF

# ms of one streaming query over N rows of <expr>, in session $1's psql
EXPRS=("g" "nextval('s')" "snowflake_nextval()" "ext.snowflake_nextval()")
median_range() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f [%.2f-%.2f]", m, a[1], a[NR]}'; }

declare -A PERCALL
: >"$WORK/ratio_call"; : >"$WORK/ratio_ext"
echo "per call: $ROUNDS rounds of $N calls (ns per call, baseline subtracted)"
for r in $(seq 1 "$ROUNDS"); do
  sql="\\timing on"$'\n'
  # warm-up, then the expressions in rotating order
  for e in "${EXPRS[@]}"; do sql+="SELECT count(f) FROM (SELECT $e AS f FROM (SELECT generate_series(1, $((N / 20))) g) x) s;"$'\n'; done
  order=()
  for i in 0 1 2 3; do order+=($(( (i + r) % 4 ))); done
  for i in "${order[@]}"; do sql+="SELECT count(f) FROM (SELECT ${EXPRS[$i]} AS f FROM (SELECT generate_series(1, $N) g) x) s;"$'\n'; done
  times=($(echo "$sql" | psql_as app appdb -At | awk '/^Time:/ {print $2}' | tail -4))
  declare -A ms=()
  for k in 0 1 2 3; do ms[${order[$k]}]=${times[$k]}; done
  base=${ms[0]}
  nv=$(awk -v a="${ms[1]}" -v b="$base" -v n="$N" 'BEGIN {printf "%.1f", (a-b)*1e6/n}')
  sf=$(awk -v a="${ms[2]}" -v b="$base" -v n="$N" 'BEGIN {printf "%.1f", (a-b)*1e6/n}')
  ex=$(awk -v a="${ms[3]}" -v b="$base" -v n="$N" 'BEGIN {printf "%.1f", (a-b)*1e6/n}')
  ratio=$(awk -v a="$sf" -v b="$nv" 'BEGIN {printf "%.3f", a/b}')
  rext=$(awk -v a="$sf" -v b="$ex" 'BEGIN {printf "%.3f", a/b}')
  PERCALL[nv]+="$nv "; PERCALL[sf]+="$sf "; PERCALL[ex]+="$ex "
  echo "$ratio" >>"$WORK/ratio_call"; echo "$rext" >>"$WORK/ratio_ext"
  echo "  round $r: nextval $nv ns, SQL edition $sf ns, extension $ex ns; SQL edition / nextval $ratio, / extension $rext"
done

: >"$WORK/ratio_ins"; : >"$WORK/ratio_ins_ext"
echo "inserts: $ROUNDS rounds, pgbench 2 clients, $T s per table (rows/s)"
for t in t_serial t_sf t_ext; do echo "INSERT INTO $t (v) VALUES (1);" >"$WORK/$t.sql"; done
chmod a+r "$WORK"/*.sql
run_pgbench() {
  "${AS[@]}" "$PG_BIN/pgbench" -n -c 2 -j 2 -T "$T" -f "$WORK/$1.sql" -h "$WORK" -p "$PORT" -U app appdb 2>/dev/null |
    awk '/^tps/ {print $3; exit}'
}
for r in $(seq 1 "$ROUNDS"); do
  # the three tables in rotating order
  declare -A tps=()
  tabs=(t_serial t_sf t_ext)
  for i in 0 1 2; do t=${tabs[$(( (i + r) % 3 ))]}; tps[$t]=$(run_pgbench "$t"); done
  a=${tps[t_serial]}; b=${tps[t_sf]}; c=${tps[t_ext]}
  ratio=$(awk -v a="$b" -v b="$a" 'BEGIN {printf "%.3f", a/b}')
  rext=$(awk -v a="$b" -v b="$c" 'BEGIN {printf "%.3f", a/b}')
  echo "$ratio" >>"$WORK/ratio_ins"; echo "$rext" >>"$WORK/ratio_ins_ext"
  echo "  round $r: bigserial $a rows/s, SQL edition $b rows/s, extension $c rows/s; SQL edition / bigserial $ratio, / extension $rext"
done

commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo "not a git checkout")
dirty=$( [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no -- . ':(exclude)bench/results' 2>/dev/null)" ] && echo dirty || echo clean)
version=$(psql_as app appdb -At -c 'SHOW server_version')
summary="managed.run = commit $commit ($dirty), PostgreSQL $version, $(date -u +%F), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds
managed.percall.nextval_ns = $(echo ${PERCALL[nv]} | tr ' ' '\n' | median_range)
managed.percall.ours_ns = $(echo ${PERCALL[sf]} | tr ' ' '\n' | median_range)
managed.percall.extension_ns = $(echo ${PERCALL[ex]} | tr ' ' '\n' | median_range)
managed.percall.ours_over_nextval = $(median_range <"$WORK/ratio_call")
managed.percall.ours_over_extension = $(median_range <"$WORK/ratio_ext")
managed.inserts.ours_over_bigserial = $(median_range <"$WORK/ratio_ins")
managed.inserts.ours_over_extension = $(median_range <"$WORK/ratio_ins_ext")"
echo
echo "summary (median [min-max] over $ROUNDS rounds; goals: per call <= 3x nextval, inserts >= 0.9 of bigserial)"
echo "$summary"
out="$ROOT/bench/results/managed${QUICK:+-quick}.md"
{ echo "# The SQL edition against nextval(), bigserial and the extension"
  echo
  echo "\`bash bench/managed.sh${QUICK:+ --quick}\` (bench/README.md, \"The SQL edition\")."
  echo
  echo "## Summary"
  echo
  echo '```text'
  echo "$summary"
  echo '```'
} >"$out"
echo "written: $out"
psql_as app appdb -c "SELECT shard_id, ids_issued, jumps, waits FROM snowflake_stats"
