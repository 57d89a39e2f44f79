#!/usr/bin/env bash
# The snowflake benchmark: per-call cost (CPU time in the backend, against a
# clock-only C function, clock_timestamp(), nextval(), gen_random_uuid() and on
# PostgreSQL 18 uuidv7()), contention (1 against 2 backends on one shard, both
# generators) and inserts (paired rounds of each key type against ours), on
# scratch servers of the installed extension.  Method: bench/README.md.
#
#   bash bench/run.sh            # all three parts (4 to 20 minutes on 2 cores)
#   bash bench/run.sh --quick    # fewer calls and rows, the minimum rounds (1 to 3 minutes)
#   bash bench/run.sh --percall | --contention | --inserts   # some parts only (combinable)
#   bash bench/run.sh --chroot 18 [--quick] [--inserts ...]  # the same in the PostgreSQL 18
#                                # chroot of scripts/chroot.sh (root; builds and installs there)
#   bash bench/run.sh --uuidv7 [--quick]   # PostgreSQL 18: keys and a time-range query
#                                          # (uuidv7.py; not in the README's figures)
#
# Writes bench/results/pg<major>[-quick][-<parts>].{md,csv}: the provenance
# (commit, dirty tree, PostgreSQL, CPU, load before and after, date, this
# command), a summary block whose keys match the README's <!-- bench: key -->
# markers, and a section per part; prints the same.  Builds and installs the
# bench-only module bench/clockonly (snowbench_clock(), snowbench_cpu_ns())
# with the PG_CONFIG of scripts/lib.sh (PG_VERSION or PG_BIN); the extension
# itself must already be installed there (make && make install).
#
# Run as root (servers run as the postgres user) or as a user that may run
# initdb and install into PostgreSQL's folders (else sudo is used).  The
# scratch servers live in a temporary folder (under $TMPDIR or /tmp) and are
# stopped and removed on exit, also after a failure or Ctrl-C.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
source "$BENCH/../scripts/lib.sh"     # PG_BIN, PG_CONFIG, PATH, as_pg
source "$BENCH/lib.sh"                # install_clockonly

command_line="bash bench/run.sh${*:+ $*}"
module=snowbench.standard
chroot_version=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --uuidv7) module=snowbench.uuidv7 ;;
    --chroot) chroot_version=${2:?--chroot needs a PostgreSQL major version}; shift ;;
    --quick|--percall|--contention|--inserts) args+=("$1") ;;
    *) echo "unknown argument: $1 (see the head of bench/run.sh)" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$chroot_version" ]; then
  # Same command inside the chroot, on scripts/chroot.sh's copy of this tree
  # (which has no git data: the commit goes along in bench/.source-commit),
  # then the results copied back here.
  [ "$(id -u)" -eq 0 ] || { echo "--chroot must run as root (scripts/chroot.sh)" >&2; exit 1; }
  suite=$(pg_suite "$chroot_version") || { echo "no chroot for PostgreSQL $chroot_version" >&2; exit 1; }
  commit=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo "not-a-git-checkout")
  dirty=clean
  [ -n "$(git -C "$REPO" status --porcelain --untracked-files=no -- . ':(exclude)bench/results' 2>/dev/null)" ] &&
    dirty="dirty: uncommitted changes outside bench/results/"
  printf '%s %s\n%s\n' "$commit" "$dirty" "$command_line" >"$BENCH/.source-commit"
  trap 'rm -f "$BENCH/.source-commit"' EXIT
  inner=(bash bench/run.sh)
  [ "$module" = snowbench.uuidv7 ] && inner+=(--uuidv7)
  inner+=(${args[@]+"${args[@]}"})
  status=0
  bash "$REPO/scripts/chroot.sh" "$chroot_version" bash -c 'make -s && make -s install && exec "$@"' \
    chroot "${inner[@]}" || status=$?
  copy=${SNOWFLAKE_CHROOTS:-/var/cache/snowflake/chroots}/$suite/build/snowflake/bench/results
  for f in "$copy"/pg"$chroot_version"*.md "$copy"/pg"$chroot_version"*.csv "$copy"/uuidv7.*; do
    [ -f "$f" ] && cp "$f" "$BENCH/results/" && echo "copied $(basename "$f") to bench/results/"
  done
  exit "$status"
fi

for tool in initdb pg_ctl postgres psql pgbench pg_config; do
  command -v "$tool" >/dev/null || { echo "missing $tool (PostgreSQL $PG_VERSION in $PG_BIN)" >&2; exit 1; }
done
if [ ! -f "$("$PG_CONFIG" --pkglibdir)/snowflake.so" ]; then
  echo "the snowflake extension is not installed in $("$PG_CONFIG" --pkglibdir); run 'make && make install' first" >&2
  exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/snowflake-bench.XXXXXX")

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

install_clockonly "$WORK"       # snowbench_clock(), snowbench_cpu_ns() (bench/lib.sh)
[ "$(id -u)" -eq 0 ] && chown postgres: "$WORK"

# Python runs in the background so that a signal to this script is acted on at
# once: it is passed on, Python stops its servers, then cleanup runs.
# (-B: no bytecode files written into the tree)
args+=(--command "$command_line")
PYTHONPATH="$BENCH" python3 -B -m "$module" --work "$WORK" --results "$BENCH/results" ${args[@]+"${args[@]}"} &
PY=$!
trap 'kill -TERM $PY 2>/dev/null; wait $PY; exit 130' INT
trap 'kill -TERM $PY 2>/dev/null; wait $PY; exit 143' TERM
wait $PY
