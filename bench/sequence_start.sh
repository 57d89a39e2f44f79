#!/usr/bin/env bash
# Benchmarks snowflake.sequence_start = 'zero' against 'random' on scratch
# servers of the installed extension: per-call cost, and the distribution of
# id % 4096 at low traffic.  Writes bench/results/sequence_start.{md,csv}.
#
#   bash bench/sequence_start.sh            # about 1 minute on 2 cores
#   bash bench/sequence_start.sh --quick    # about 20 seconds
#
# Run as root (servers run as the postgres user) or as a user that may run initdb.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
source "$BENCH/../scripts/lib.sh"     # PG_BIN, PG_CONFIG, PATH
source "$BENCH/lib.sh"                # install_clockonly

if [ ! -f "$(pg_config --pkglibdir)/snowflake.so" ]; then
  echo "the snowflake extension is not installed; run 'make && make install' first" >&2
  exit 1
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-seqstart.XXXXXX")
install_clockonly "$WORK"            # snowbench_cpu_ns() for the per-call part
[ "$(id -u)" -eq 0 ] && chown postgres: "$WORK"

# Stops the servers this run started (by their data directories), removes the folder.
cleanup() {
  for data in "$WORK"/*/data; do
    [ -f "$data/postmaster.pid" ] || continue
    as_pg pg_ctl -D "$data" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
PYTHONPATH="$BENCH" python3 -B -m snowbench.sequence_start --work "$WORK" --results "$BENCH/results" \
  --command "bash bench/sequence_start.sh${*:+ $*}" "$@"
