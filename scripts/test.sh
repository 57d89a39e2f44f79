#!/usr/bin/env bash
# Runs every test: GoogleTest unit tests of the core, pg_regress on a
# temporary preloaded instance, and the TAP tests (real servers, crashes,
# clock jumps, pgbench).  Installs what it needs first (as root).
#
#   bash scripts/test.sh                                      # everything
#   PROVE_TESTS=test/t/001_restart.pl bash scripts/test.sh    # one TAP file
#   SUITES="unit tap" bash scripts/test.sh                    # some suites
#   SKIP_BUILD=1 bash scripts/test.sh                         # test what is installed
#
# The last line sums the runners' own counts: "N passed, N failed".
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [ -z "${SKIP_BUILD:-}" ]; then
  bash "$REPO/scripts/install-deps.sh"
  build_and_install
fi

suites=" ${SUITES:-unit regress tap} "
status=0
passed=0
failed=0

# pg_regress and the TAP tests write into the tree and run servers, which
# must not run as root: run them in a copy owned by the postgres user.
work=$(mktemp -d /tmp/snowflake-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$REPO" --exclude=.git --exclude=tmp_check --exclude=tmp_check_regress \
    --exclude=demo --exclude=results -cf - . | tar -C "$work" -xf -
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$work"
log=$work/suite.log

# first number matched by an extended regex in the suite log, or 0
count() { grep -oE "$1" "$log" | grep -oE '[0-9]+' | head -n "${2:-1}" | tail -n 1 || true; }

if [[ $suites == *" unit "* ]]; then
  echo "== unit tests (GoogleTest)"
  make -C "$REPO" -s unitcheck 2>&1 | tee "$log" || status=1
  p=$(count '\[  PASSED  \] [0-9]+ test'); f=$(count '[0-9]+ FAILED TEST')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
fi

if [[ $suites == *" regress "* ]]; then
  echo "== pg_regress"
  # TAP_TESTS= : PGXS's installcheck would run the TAP tests too
  if ! as_pg make -C "$work" -s installcheck TAP_TESTS= 2>&1 | tee "$log"; then
    status=1
    cat "$work/regression.diffs" 2>/dev/null || true
  fi
  grep -q "tests failed" "$log" && status=1
  p=$(count 'All [0-9]+ tests passed')
  f=$(count '[0-9]+ of [0-9]+ tests failed'); t=$(count '[0-9]+ of [0-9]+ tests failed' 2)
  if [ -n "$f" ]; then p=$((t - f)); fi
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
fi

if [[ $suites == *" tap "* ]]; then
  echo "== TAP tests"
  prove_args=()
  [ -n "${PROVE_TESTS:-}" ] && prove_args=(PROVE_TESTS="$PROVE_TESTS")
  if ! as_pg make -C "$work" -s prove_installcheck_snowflake "${prove_args[@]}" 2>&1 | tee "$log"; then
    status=1
    for f in "$work"/tmp_check/log/*; do
      echo "---- $f"; tail -n 60 "$f"
    done
  fi
  grep -q "^Result: PASS" "$log" || status=1
  t=$(count 'Tests=[0-9]+')
  f=$( (grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$log" || true) | awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
  passed=$((passed + ${t:-0} - ${f:-0})); failed=$((failed + ${f:-0}))
fi

[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1   # a runner failed without counting it
echo "$passed passed, $failed failed"
exit "$status"
