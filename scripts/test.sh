#!/usr/bin/env bash
# Runs every test on every PostgreSQL version we support: GoogleTest unit
# tests of the core, pg_regress on a temporary preloaded instance, the TAP
# tests (real servers, crashes, clock jumps, pgbench), and the Debian package
# (built, installed with apt-get, its regress run against the installed
# files).  Installs what it needs first (as root).  Versions this Debian
# release does not package run in a cached Debian chroot (scripts/chroot.sh).
#
#   bash scripts/test.sh                                      # 15, 17, 18 and 19
#   PG_VERSIONS=15 bash scripts/test.sh                       # one version
#   PROVE_TESTS=test/t/001_restart.pl bash scripts/test.sh    # one TAP file
#   SUITES="unit tap" bash scripts/test.sh                    # some suites
#   SKIP_BUILD=1 bash scripts/test.sh                         # test what is installed
#
# Suites: unit, layers (make layercheck), release (version and META.json checks),
# regress, tap, package,
# and integration (test/integration/*.pl: client libraries, the trusted
# extension, the metrics exporter; on PG_INTEGRATION_VERSION, and the client
# libraries alone on the other PG_CLIENT_VERSIONS; pg_partman
# and active-active are TAP tests, 045 and 046, on every version).
# Each version prints its counts; the last line sums the runners' own counts
# over all versions and suites: "N passed, N failed".
set -euo pipefail
source "$(dirname "$0")/lib.sh"

read -r -a versions <<<"${PG_VERSIONS:-$PG_TESTED_VERSIONS}"
if [ ${#versions[@]} -gt 1 ] || ! pg_runs_here "${versions[0]}"; then
  # several versions: one run each, here or in its chroot, then the sums
  passed=0; failed=0; status=0; summary=()

  # The chroots are made ahead, in the background, one after the other in
  # the order of the versions, while the versions before them run: making one
  # is mostly downloading and unpacking (debootstrap, apt-get), the runs are
  # mostly CPU.  Each version's own chroot.sh waits for its chroot (chroot.sh
  # locks it; one left unmade there is made again in the foreground).  The
  # host's own packages, debootstrap and the mirror are settled first, so that
  # the background never uses the host's apt while a run here installs
  # something.  SNOWFLAKE_CHROOTS_AHEAD=0 makes each chroot in its turn.
  ahead=()
  for v in "${versions[@]}"; do
    pg_runs_here "$v" || ahead+=("$v")
  done
  prep_pid=
  if [ ${#ahead[@]} -gt 0 ] && [ ${#versions[@]} -gt 1 ] && [ "$(id -u)" -eq 0 ] &&
     [ "${SNOWFLAKE_CHROOTS_AHEAD:-1}" != 0 ]; then
    if [ -z "${SKIP_BUILD:-}" ]; then
      for v in "${versions[@]}"; do
        if pg_runs_here "$v"; then PG_VERSION=$v bash "$REPO/scripts/install-deps.sh"; fi
      done
    fi
    command -v debootstrap >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap </dev/null; }
    DEBIAN_MIRROR=${DEBIAN_MIRROR:-$(debian_mirror)}
    if [ -n "$DEBIAN_MIRROR" ]; then export DEBIAN_MIRROR; fi
    prep_log=$(mktemp /tmp/snowflake-chroots.XXXXXX)
    echo "== making the chroots of PostgreSQL ${ahead[*]} in the background (log: $prep_log)"
    # its own process group, so that an interrupted run stops all of it
    setsid bash -c '
      for v in "$@"; do
        start=$SECONDS
        echo "== PostgreSQL $v"
        if bash "$0" "$v" true; then r=ready; else r="not made (its run tries again)"; fi
        echo "chroot of PostgreSQL $v: $r after $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
      done' "$REPO/scripts/chroot.sh" "${ahead[@]}" >"$prep_log" 2>&1 </dev/null &
    prep_pid=$!
    trap 'kill -TERM -- -"$prep_pid" 2>/dev/null || true; rm -f "$prep_log"' EXIT
  fi

  # The versions run in SNOWFLAKE_LANES lanes at once (default 2): a run is
  # mostly waiting (servers starting, leases expiring, clocks stepping), so
  # two at a time on two cores take about as long as one, and the whole run
  # fits CI's hour.  Each version writes its own log, printed whole when it
  # ends; the chroots and the host share no ports: the PostgreSQL nodes use
  # Unix sockets in each run's own directory, and each lane draws etcd's
  # TCP ports from its own range (SNOWFLAKE_PORT_LANE, test/perl/EtcdCluster.pm).
  lanes=${SNOWFLAKE_LANES:-2}
  declare -A lane_of=() log_of=() start_of=() line_of=() failures_of=()
  free_lanes=()
  for ((i = 0; i < lanes; i++)); do free_lanes+=("$i"); done
  pending=("${versions[@]}")
  running=0
  start_version() {
    local v=$1 lane=$2 vlog
    vlog=$(mktemp /tmp/snowflake-test-$v.XXXXXX)
    log_of[$v]=$vlog; start_of[$v]=$SECONDS
    echo "==== PostgreSQL $v: started (lane $lane, log $vlog)"
    if pg_runs_here "$v"; then
      SNOWFLAKE_PORT_LANE=$lane PG_VERSIONS=$v PG_VERSION=$v PG_BIN=/usr/lib/postgresql/$v/bin \
        bash "$REPO/scripts/test.sh" >"$vlog" 2>&1 &
    else
      SNOWFLAKE_PORT_LANE=$lane bash "$REPO/scripts/chroot.sh" "$v" >"$vlog" 2>&1 &
    fi
    lane_of[$!]=$lane:$v
  }
  finish_version() {
    local pid=$1 rc=$2 lane v line p f
    lane=${lane_of[$pid]%%:*}; v=${lane_of[$pid]#*:}
    unset "lane_of[$pid]"
    free_lanes+=("$lane")
    echo "==== PostgreSQL $v (exit $rc)"
    cat "${log_of[$v]}"
    [ "$rc" -eq 0 ] || status=1
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "${log_of[$v]}" | tail -n 1 || true)
    # what failed, for the digest at the end (CI may show only the tail)
    failures_of[$v]=$(awk '
      /^(not ok|#   Failed test|\[  FAILED  \])/ || /^test\/.*\(Wstat: / || /^  Failed tests?: / { print; more = 3; next }
      more > 0 && /^#  / { print; more--; next }
      { more = 0 }' "${log_of[$v]}" | head -n 40)
    rm -f "${log_of[$v]}"
    if [ -z "$line" ]; then
      line="0 passed, 1 failed"          # the run died before counting
      status=1
    fi
    p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
    passed=$((passed + p)); failed=$((failed + f))
    line_of[$v]="PostgreSQL $v: $line ($(( (SECONDS - start_of[$v]) / 60 )) min $(( (SECONDS - start_of[$v]) % 60 )) s)"
  }
  while [ ${#pending[@]} -gt 0 ] || [ "$running" -gt 0 ]; do
    while [ ${#pending[@]} -gt 0 ] && [ ${#free_lanes[@]} -gt 0 ]; do
      start_version "${pending[0]}" "${free_lanes[0]}"
      pending=("${pending[@]:1}"); free_lanes=("${free_lanes[@]:1}")
      running=$((running + 1))
    done
    done_pid=
    rc=0
    wait -n -p done_pid "${!lane_of[@]}" || rc=$?
    [ -n "$done_pid" ] || continue
    finish_version "$done_pid" "$rc"
    running=$((running - 1))
  done
  for v in "${versions[@]}"; do summary+=("${line_of[$v]}"); done
  if [ -n "$prep_pid" ]; then
    wait "$prep_pid" || true
  fi
  echo "===="
  if [ -n "$prep_pid" ]; then
    # how long each chroot took in the background (a cached one: seconds)
    grep '^chroot of PostgreSQL' "$prep_log" || true
    rm -f "$prep_log"
  fi
  for v in "${versions[@]}"; do
    if [ -n "${failures_of[$v]:-}" ]; then
      echo "---- what failed on PostgreSQL $v (the first 40 lines; its log is above)"
      printf '%s\n' "${failures_of[$v]}"
    fi
  done
  printf '%s\n' "${summary[@]}"
  [ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
  echo "$passed passed, $failed failed"
  exit "$status"
fi

echo "== PostgreSQL $PG_VERSION ($PG_BIN)"
if [ -z "${SKIP_BUILD:-}" ]; then
  bash "$REPO/scripts/install-deps.sh"
  build_and_install
  build_pg_tle
fi

default_suites="unit layers release regress tap package"
# integration: every suite on PG_INTEGRATION_VERSION; on the other versions
# of PG_CLIENT_VERSIONS, the client guide's test alone
if [ "$PG_VERSION" = "$PG_INTEGRATION_VERSION" ] || pg_tests_clients "$PG_VERSION"; then
  default_suites+=" integration"
fi
suites=" ${SUITES:-$default_suites} "
status=0
passed=0
failed=0

# pg_regress and the TAP tests write into the tree and run servers, which
# must not run as root: run them in a copy owned by the postgres user.
work=$(mktemp -d /tmp/snowflake-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$REPO" --exclude=.git --exclude=tmp_check --exclude=tmp_check_regress \
    --exclude=demo --exclude=results --exclude=dist --exclude='build-[0-9]*' \
    -cf - . | tar -C "$work" -xf -
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$work"
log=$work/suite.log

# first number matched by an extended regex in the suite log, or 0
count() { grep -oE "$1" "$log" | grep -oE '[0-9]+' | head -n "${2:-1}" | tail -n 1 || true; }
# sum of the first numbers of every match
sum() { { grep -oE "$1" "$log" || true; } | { grep -oE '^[^0-9]*[0-9]+' || true; } |
        { grep -oE '[0-9]+' || true; } | awk '{s+=$1} END {print s+0}'; }

if [[ $suites == *" unit "* ]]; then
  echo "== unit tests (GoogleTest)"
  # two GoogleTest binaries (the core; the lock-free generator under
  # ThreadSanitizer): sum their counts
  make -C "$REPO" -s unitcheck 2>&1 | tee "$log" || status=1
  p=$(sum '\[  PASSED  \] [0-9]+ test'); f=$(sum '[0-9]+ FAILED TEST')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
fi

if [[ $suites == *" layers "* ]]; then
  echo "== layers: make layercheck (src/README.md)"
  make -C "$REPO" -s layercheck 2>&1 | tee "$log" || status=1
  p=$(grep -c '^ok ' "$log" || true); f=$(grep -c '^not ok ' "$log" || true)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
fi

if [[ $suites == *" release "* ]]; then
  echo "== release: one version, META.json, upgrade scripts"
  python3 "$REPO/scripts/check-release.py" 2>&1 | tee "$log" || status=1
  p=$(grep -c '^ok ' "$log" || true); f=$(grep -c '^not ok ' "$log" || true)
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

# The tests whose outcome depends on how a shard's generator advances run
# twice: once with each snowflake.generator (the others with the default).
GENERATOR_TESTS="test/t/002_concurrency.pl test/t/004_clock_steps.pl test/t/005_restart_clock.pl test/t/006_logical_shards.pl test/t/027_import_history.pl test/t/033_watermark_restart.pl test/t/049_commit_watermark.pl"

# Runs one prove pass: prove_pass GENERATOR TESTS...; adds to the counts.
prove_pass() {
  local generator=$1; shift
  echo "-- snowflake.generator = $generator: $*"
  if ! as_pg env SNOWFLAKE_GENERATOR="$generator" \
      make -C "$work" -s prove_installcheck_snowflake PROVE_TESTS="$*" 2>&1 | tee "$log"; then
    status=1
    for f in "$work"/tmp_check/log/*; do
      echo "---- $f"; tail -n 60 "$f"
    done
  fi
  grep -qE "^Result: (PASS|NOTESTS)" "$log" || status=1   # NOTESTS: every file skipped
  t=$(count 'Tests=[0-9]+')
  f=$( (grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$log" || true) | awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
  passed=$((passed + ${t:-0} - ${f:-0})); failed=$((failed + ${f:-0}))
}

# The partition tests put servers into network namespaces, which needs root,
# while the TAP tests run as postgres: a small helper, installed root-owned,
# that the postgres user may run through sudo and that checks every argument
# (scripts/netns-helper.sh says what it allows).
install_netns_helper() {
  [ "$(id -u)" -eq 0 ] && command -v sudo >/dev/null && command -v visudo >/dev/null || return 0
  install -o root -g root -m 0755 "$REPO/scripts/netns-helper.sh" /usr/local/sbin/snowflake-netns
  local rule=/etc/sudoers.d/snowflake-netns
  printf '%s\n' '# scripts/test.sh: the partition tests of snowflake (scripts/netns-helper.sh)' \
    'Defaults!/usr/local/sbin/snowflake-netns !use_pty' \
    'postgres ALL=(root) NOPASSWD: /usr/local/sbin/snowflake-netns' >"$rule.tmp"
  chmod 0440 "$rule.tmp"
  if visudo -cqf "$rule.tmp"; then mv "$rule.tmp" "$rule"; else rm -f "$rule.tmp"; fi
}

if [[ $suites == *" tap "* || $suites == *" integration "* ]]; then
  install_netns_helper
fi

if [[ $suites == *" tap "* ]]; then
  echo "== TAP tests"
  selected=$(cd "$work" && echo ${PROVE_TESTS:-test/t/*.pl})
  # the network partitions (017) test the registry's traffic, which no
  # PostgreSQL version changes: once, on PG_INTEGRATION_VERSION, for time
  if [ -z "${PROVE_TESTS:-}" ] && [ "$PG_VERSION" != "$PG_INTEGRATION_VERSION" ]; then
    selected=$(for t in $selected; do [[ $t == */017_registry_partitions.pl ]] || echo "$t"; done)
    echo "(test/t/017_registry_partitions.pl runs on $PG_INTEGRATION_VERSION only)"
  fi
  prove_pass atomic $selected
  again=()
  for test in $selected; do
    [[ " $GENERATOR_TESTS " == *" $test "* ]] && again+=("$test")
  done
  [ ${#again[@]} -gt 0 ] && prove_pass lwlock "${again[@]}"
fi

if [[ $suites == *" integration "* ]]; then
  echo "== integration tests (PostgreSQL $PG_VERSION)"
  all_integration=test/integration/*.pl
  [ "$PG_VERSION" = "$PG_INTEGRATION_VERSION" ] || all_integration=test/integration/050_clients.pl
  selected=$(cd "$work" && echo ${INTEGRATION_TESTS:-$all_integration})
  if [ "$selected" != "test/integration/*.pl" ]; then
    prove_pass atomic $selected
  fi
fi

if [[ $suites == *" package "* ]]; then
  # the .deb is built, installed with apt-get over whatever make install put
  # there, checked to be what is on disk, and its regress suite run against
  # the installed files (debian/tests/installcheck, as autopkgtest does)
  echo "== Debian package for PostgreSQL $PG_VERSION"
  pkg=postgresql-$PG_VERSION-snowflake
  if [ "$(id -u)" -ne 0 ]; then
    echo "the package suite installs a package: run as root"
    status=1
  else
    rm -f "$REPO"/dist/"$pkg"_*.deb
    # without the files make install put there, only the package's can pass
    make -C "$REPO" -s uninstall >/dev/null 2>&1 || true
    if bash "$REPO/scripts/package.sh" 2>&1 | tee "$log" &&
       deb=$(ls "$REPO"/dist/"$pkg"_*.deb) &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --allow-downgrades \
         "$deb" </dev/null >"$work/apt.log" 2>&1 &&
       echo "installed $(dpkg-query -W -f='${Package} ${Version}' "$pkg")" &&
       dpkg --verify "$pkg" &&
       (cd "$work" && debian/tests/installcheck) 2>&1 | tee "$log"; then
      p=$(count 'All [0-9]+ tests passed')
      passed=$((passed + ${p:-0}))
      [ -n "$p" ] || status=1
    else
      status=1
      cat "$work/apt.log" 2>/dev/null || true
      f=$(count '[0-9]+ of [0-9]+ tests failed'); t=$(count '[0-9]+ of [0-9]+ tests failed' 2)
      [ -n "$f" ] && passed=$((passed + t - f)) && failed=$((failed + f))
    fi
  fi
fi

[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1   # a runner failed without counting it
echo "$passed passed, $failed failed"
exit "$status"
