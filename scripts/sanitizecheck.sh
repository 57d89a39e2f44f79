#!/bin/bash
# make sanitizecheck: the unit tests and the pg_regress suite under
# AddressSanitizer and UndefinedBehaviorSanitizer (CONTRIBUTING.md).
#
#   1. the core's GoogleTest binary built with -fsanitize=address,undefined
#      and run;
#   2. snowflake.so built the same way in a copy of the tree, installed into a
#      relocated copy of the PostgreSQL install PG_CONFIG names (the install
#      itself is never written), and pg_regress run on a temporary instance of
#      that copy, with libasan preloaded into every process it starts.
#
# Why the preload: Debian's postgres is not instrumented, and ASan's runtime
# must be the first library of a process (it replaces malloc and friends
# before anything else runs); LD_PRELOAD puts it there in the postmaster, and
# every backend inherits it through fork.  With it, a small object linked
# with -z initfirst (test/sanitize/asan_initfirst.c) starts ASan before the
# constructors of the other libraries: without it, postgres hangs at start
# (p11-kit's constructor, loaded through libldap and GnuTLS, would start ASan
# while holding glibc's locale lock).  Every report is written to a file
# (log_path) and any file fails the run, so a report in a process whose crash
# no test noticed still counts.  Leak detection is off in the server
# (PostgreSQL frees by memory context and at exit, which LeakSanitizer takes
# for leaks) and on in the unit tests.
#
# Usage: make sanitizecheck [PG_CONFIG=...]; SANITIZE_DIR (default
# ./tmp_sanitize) holds the copies, kept between runs.
set -euo pipefail
# the PostgreSQL to copy: PG_CONFIG as given (lib.sh would set its own), and
# no variable of an outer make (make sanitizecheck PG_CONFIG=...) passed down
# to the makes below, each of which names its own
given_config=${PG_CONFIG:-pg_config}
unset MAKEFLAGS MFLAGS MAKELEVEL
. "$(dirname "$0")/lib.sh"
PG_CONFIG=$given_config
SAN_DIR=${SANITIZE_DIR:-$REPO/tmp_sanitize}
SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
CXX=${CXX:-g++}
LIBASAN=$($CXX -print-file-name=libasan.so)
start=$(date +%s)

mkdir -p "$SAN_DIR"
rm -rf "$SAN_DIR/reports"
mkdir -p "$SAN_DIR/reports"

# the unit tests: one binary, every core file instrumented
echo "== sanitizecheck: unit tests under ASan+UBSan"
make -C "$REPO" -s test/unit/core_test_san PG_CONFIG="$PG_CONFIG" SANITIZE_FLAGS="$SAN_FLAGS"
LSAN_OPTIONS="suppressions=$REPO/test/unit/lsan.supp:print_suppressions=0" \
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$SAN_DIR/reports/unit" \
UBSAN_OPTIONS="print_stacktrace=1:log_path=$SAN_DIR/reports/unit" \
  "$REPO/test/unit/core_test_san" --gtest_brief=1

# a relocated copy of the PostgreSQL install: PostgreSQL finds its share/
# and lib/ relative to its bin/ (the same depth as in the original)
bindir=$($PG_CONFIG --bindir)
sharedir=$($PG_CONFIG --sharedir)
version=$($PG_CONFIG --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
pg=$SAN_DIR/pg
if [ ! -x "$pg/lib/postgresql/$version/bin/postgres" ]; then
  echo "== sanitizecheck: copying $(dirname "$bindir") and $sharedir into $pg"
  rm -rf "$pg"
  mkdir -p "$pg/lib/postgresql" "$pg/share/postgresql"
  cp -a "$(dirname "$bindir")" "$pg/lib/postgresql/$version"
  cp -a "$sharedir" "$pg/share/postgresql/$version"
fi
san_config=$pg/lib/postgresql/$version/bin/pg_config
case $($san_config --pkglibdir) in
  "$pg"/*) ;;
  *) echo "the copy's pg_config does not point into $pg: not relocatable" >&2; exit 1 ;;
esac

# the object that starts ASan first in the servers (see above)
initfirst=$SAN_DIR/asan_initfirst.so
$CXX -x c -shared -fPIC -o "$initfirst" "$REPO/test/sanitize/asan_initfirst.c" \
  -Wl,-z,initfirst -L"$(dirname "$LIBASAN")" -lasan

# the library, instrumented, built in a copy of the tree (the tree's own
# objects stay as they are) and installed into the copy only
echo "== sanitizecheck: snowflake.so under ASan+UBSan"
build=$SAN_DIR/build
rm -rf "$build"
mkdir -p "$build"
tar -C "$REPO" --exclude=.git --exclude='tmp_*' --exclude=results --exclude=dist \
    --exclude='*.o' --exclude='*.bc' --exclude='*.so' --exclude=test/unit/core_test \
    --exclude=test/unit/core_test_san --exclude=test/unit/atomicgen_test -cf - . |
  tar -C "$build" -xf -
make -C "$build" -s -j2 with_llvm=no PG_CONFIG="$PG_CONFIG" SANITIZE="$SAN_FLAGS"
make -C "$build" -s install with_llvm=no PG_CONFIG="$san_config" SANITIZE="$SAN_FLAGS" >/dev/null
ldd "$pg/lib/postgresql/$version/lib/snowflake.so" | grep -q libasan ||
  { echo "snowflake.so in $pg is not instrumented" >&2; exit 1; }

echo "== sanitizecheck: pg_regress under ASan+UBSan"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$SAN_DIR"
rm -rf "$build/tmp_check_regress" "$build/results" "$build/regression.diffs"
status=0
PATH="$pg/lib/postgresql/$version/bin:$PATH" PG_CONFIG="$san_config" \
  as_pg env LD_PRELOAD="$LIBASAN $initfirst" \
    ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$SAN_DIR/reports/server" \
    UBSAN_OPTIONS="print_stacktrace=1:log_path=$SAN_DIR/reports/server" \
    make -C "$build" -s installcheck TAP_TESTS= with_llvm=no PG_CONFIG="$san_config" || status=1
[ $status -ne 0 ] && cat "$build/regression.diffs" 2>/dev/null | head -100

if compgen -G "$SAN_DIR/reports/*" >/dev/null; then
  echo "== sanitizecheck: reports" >&2
  head -60 "$SAN_DIR"/reports/* >&2
  status=1
fi
elapsed=$(( $(date +%s) - start ))
if [ $status -eq 0 ]; then
  echo "sanitizecheck: clean (no report, every test passed) in $((elapsed / 60)) min $((elapsed % 60)) s"
else
  echo "sanitizecheck: FAILED in $((elapsed / 60)) min $((elapsed % 60)) s" >&2
fi
exit $status
