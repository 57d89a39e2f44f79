#!/usr/bin/env bash
# Benchmarks the installed snowflake extension against native sequences,
# gen_random_uuid() and an Instagram-style PL/pgSQL next_id(), side by side on
# scratch PostgreSQL servers.  Builds nothing: uses the installed extension.
# The Python package bench/snowbench/ holds one module per measurement.
#
#   bash bench/run.sh            # full run (about 10 minutes), results in bench/results/
#   bash bench/run.sh --quick    # smaller sizes, fewer rounds (under 2 minutes)
#   bash bench/run.sh --contention [--quick]   # atomic vs lwlock generator, 1-8 backends
#                                              # (about 6 minutes; quick about 2)
#   bash bench/run.sh --uuidv7 [--quick]       # keys on PostgreSQL 18: snowflake, uuidv7(),
#                                              # gen_random_uuid(), bigserial, identity
#                                              # (about 20 minutes; quick about 2)
#
# Run as root (like scripts/demo.sh: servers run as the postgres user) or as
# a non-root user that may run initdb.  Writes bench/results/latest.{md,csv,png}
# (--contention: bench/results/contention.{md,csv,png}; --uuidv7:
# bench/results/uuidv7.{md,csv}).
# The scratch servers live in a temporary folder (under $TMPDIR or /tmp) and
# are stopped and removed on exit, also after a failure or Ctrl-C.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
source "$BENCH/../scripts/lib.sh"     # PG_BIN, PATH, as_pg

for tool in initdb pg_ctl postgres psql pgbench; do
  command -v "$tool" >/dev/null || { echo "missing $tool (PostgreSQL $PG_VERSION in $PG_BIN)" >&2; exit 1; }
done
if [ ! -f "$(pg_config --pkglibdir)/snowflake.so" ]; then
  echo "the snowflake extension is not installed; run 'make && make install' (or scripts/demo.sh) first" >&2
  exit 1
fi

module=snowbench.standard
args=()
for a in "$@"; do
  case $a in
    --contention) module=snowbench.contention ;;
    --uuidv7) module=snowbench.uuidv7 ;;
    *) args+=("$a") ;;
  esac
done

# gnuplot draws the plot; install it if missing (root only), go on without it otherwise
if [ "$module" != snowbench.uuidv7 ] && ! command -v gnuplot >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "installing gnuplot-nox for the plot"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox </dev/null >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox </dev/null >/dev/null 2>&1; }; } ||
      echo "could not install gnuplot-nox: no plot this time" >&2
  else
    echo "gnuplot is missing (apt-get install gnuplot-nox as root): no plot this time" >&2
  fi
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-bench.XXXXXX")
[ "$(id -u)" -eq 0 ] && chown postgres: "$WORK"

# Stops the servers this run started (each by its own data directory) and
# removes the temporary folder, whatever happened.
cleanup() {
  local pid
  for data in "$WORK"/*/data; do
    [ -f "$data/postmaster.pid" ] || continue
    as_pg pg_ctl -D "$data" -m immediate stop >/dev/null 2>&1 || {
      pid=$(head -1 "$data/postmaster.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    }
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Python runs in the background so that a signal to this script is acted on at
# once: it is passed on, Python stops its servers, then cleanup runs.
# (-B: no bytecode files written into the tree)
PYTHONPATH="$BENCH" python3 -B -m "$module" --work "$WORK" --results "$BENCH/results" ${args[@]+"${args[@]}"} &
PY=$!
trap 'kill -TERM $PY 2>/dev/null; wait $PY; exit 130' INT
trap 'kill -TERM $PY 2>/dev/null; wait $PY; exit 143' TERM
wait $PY
