#!/usr/bin/env bash
# Runs every test: GoogleTest unit tests of the core, pg_regress on a
# temporary preloaded instance, and the TAP tests (real servers, crashes,
# clock jumps, pgbench).  Installs what it needs first (as root).
#
#   bash scripts/test.sh            # everything
#   PROVE_TESTS=test/t/001_restart.pl bash scripts/test.sh   # one TAP file
#   SUITES="unit tap" bash scripts/test.sh                    # some suites
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ -z "${SKIP_BUILD:-}" ]; then   # SKIP_BUILD=1: test what is installed
  bash "$REPO/scripts/install-deps.sh"
  build_and_install
fi

suites=" ${SUITES:-unit regress tap} "
status=0

if [[ $suites == *" unit "* ]]; then
  echo "== unit tests (GoogleTest)"
  make -C "$REPO" -s unitcheck || status=1
fi

# pg_regress and the TAP tests write into the tree and run servers, which
# must not run as root: run them in a copy owned by the postgres user.
work=$(mktemp -d /tmp/snowflake-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$REPO" --exclude=.git --exclude=tmp_check --exclude=tmp_check_regress \
    --exclude=demo --exclude=results -cf - . | tar -C "$work" -xf -
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$work"

if [[ $suites == *" regress "* ]]; then
echo "== pg_regress"
if ! as_pg make -C "$work" -s installcheck TAP_TESTS=; then
  status=1
  cat "$work/regression.diffs" 2>/dev/null || true
fi
fi

if [[ $suites == *" tap "* ]]; then
echo "== TAP tests"
prove_args=()
[ -n "${PROVE_TESTS:-}" ] && prove_args=(PROVE_TESTS="$PROVE_TESTS")
if ! as_pg make -C "$work" -s prove_installcheck_snowflake "${prove_args[@]}"; then
  status=1
  for f in "$work"/tmp_check/log/*; do
    echo "---- $f"; tail -n 60 "$f"
  done
fi
fi

if [ "$status" -eq 0 ]; then echo "all tests passed"; else echo "SOME TESTS FAILED"; fi
exit "$status"
