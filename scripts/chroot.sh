#!/usr/bin/env bash
# Runs a command in a Debian chroot that has PostgreSQL NN, for the versions
# the host's Debian release does not package (17: trixie, 18: forky; see
# pg_suite in lib.sh).  Run as root.
#
#   bash scripts/chroot.sh 17                          # the whole test suite on 17
#   bash scripts/chroot.sh 18 bash scripts/package.sh  # any command, in the tree's copy
#   bash scripts/chroot.sh 17 --shell                  # an interactive shell
#
# The chroot is made once with debootstrap and cached outside the clone, in
# $SNOWFLAKE_CHROOTS (default /var/cache/snowflake/chroots/<suite>), so later
# runs on the machine reuse it.  Each run adds the packages install-deps.sh
# lists that the chroot lacks (apt-get inside it), copies the source tree to
# /build/snowflake inside (objects of other versions stay outside), mounts
# /proc, /dev and /dev/shm, runs the command there as root with a clean
# environment (SUITES, PROVE_TESTS, INTEGRATION_TESTS, SKIP_BUILD and PG_* are passed on), copies
# dist/*.deb back to the tree's dist/, and unmounts.
#
# A chroot is complete once it holds .snowflake-complete, written after
# debootstrap finished; anything else under the cache (a run killed while
# building) is unmounted and removed, then built again.  One run at a time
# uses a chroot (flock on <suite>.lock).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

version=${1:?usage: chroot.sh PG_MAJOR [command ...]}
shift
suite=$(pg_suite "$version") || { echo "no Debian suite packages PostgreSQL $version" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "chroot.sh must run as root" >&2; exit 1; }

cache=${SNOWFLAKE_CHROOTS:-/var/cache/snowflake/chroots}
root=$cache/$suite
# the Debian mirror this machine's apt uses (DEBIAN_MIRROR overrides it)
debian_mirror() {
  apt-cache policy 2>/dev/null |
    awk -v s="$(host_codename)/main" '$3 == s && $2 ~ /^https?:/ { print $2; exit }'
}
mkdir -p "$cache"

exec 9>"$cache/$suite.lock"
if ! flock -n 9; then
  echo "waiting for another run using $root"
  flock 9
fi

# Unmounts everything mounted under a directory, deepest first.
unmount_under() {
  local m
  for m in $(findmnt -rn -o TARGET | grep -E "^$1/" | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
}

# Removes a directory tree without ever crossing into a mount.
remove_tree() {
  [ -e "$1" ] || return 0
  unmount_under "$1"
  rm -rf --one-file-system "$1"
}

ensure_debootstrap() {
  command -v debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap </dev/null; }
  # bookworm's debootstrap has no script for forky: it is made like sid
  local scripts=/usr/share/debootstrap/scripts
  [ -e "$scripts/$suite" ] || ln -s sid "$scripts/$suite"
}

if [ ! -f "$root/.snowflake-complete" ]; then
  echo "== making the $suite chroot for PostgreSQL $version in $root"
  remove_tree "$root"
  remove_tree "$root.partial"
  ensure_debootstrap
  mirror=${DEBIAN_MIRROR:-$(debian_mirror)}
  [ -n "$mirror" ] || { apt-get update -qq; mirror=$(debian_mirror); }
  [ -n "$mirror" ] || { echo "no Debian mirror in apt's sources: set DEBIAN_MIRROR" >&2; exit 1; }
  include=$(PG_VERSION=$version bash "$REPO/scripts/install-deps.sh" --list | tr ' ' ,)
  # packages a suite lacks make debootstrap fail: leave them to apt-get below
  if ! debootstrap --variant=minbase --include="$include" "$suite" "$root.partial" "$mirror" \
       >"$cache/$suite.debootstrap.log" 2>&1; then
    echo "debootstrap with all packages failed (tail of $cache/$suite.debootstrap.log below); retrying with PostgreSQL only"
    tail -n 5 "$cache/$suite.debootstrap.log"
    remove_tree "$root.partial"
    debootstrap --variant=minbase \
      --include="postgresql-$version,postgresql-server-dev-$version,make,g++" \
      "$suite" "$root.partial" "$mirror" >"$cache/$suite.debootstrap.log" 2>&1 ||
      { tail -n 20 "$cache/$suite.debootstrap.log"; exit 1; }
  fi
  date -u +%FT%TZ >"$root.partial/.snowflake-complete"
  mv "$root.partial" "$root"
fi

cleanup() {
  set +e
  unmount_under "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

unmount_under "$root"          # left over by a run that was killed
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --make-rslave "$root/dev"
mkdir -p "$root/dev/shm"
mount --bind /dev/shm "$root/dev/shm"
mount --make-rslave "$root/dev/shm"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# a testing suite's Release file can be past its Valid-Until on a mirror that
# is a snapshot; apt-get update would then refuse the whole suite
echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99snowflake"

# the command does not inherit the lock's descriptor: a server it leaves
# running would otherwise hold the lock and block every later run
in_chroot() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/lib/postgresql/$version/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PG_VERSIONS="$version" PG_VERSION="$version" \
    ${SUITES:+SUITES="$SUITES"} ${PROVE_TESTS:+PROVE_TESTS="$PROVE_TESTS"} \
    ${INTEGRATION_TESTS:+INTEGRATION_TESTS="$INTEGRATION_TESTS"} \
    ${SKIP_BUILD:+SKIP_BUILD="$SKIP_BUILD"} "$@" 9>&-
}

# the source tree, without git data, build products or test leftovers
build=$root/build/snowflake
remove_tree "$build"
mkdir -p "$build"
tar -C "$REPO" --exclude=.git --exclude=dist --exclude='tmp_check*' --exclude=results \
    --exclude=demo --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude=.built-for-pg \
    --exclude=test/unit/core_test --exclude='build-[0-9]*' -cf - . | tar -C "$build" -xf -

in_chroot bash /build/snowflake/scripts/install-deps.sh

status=0
if [ "${1:-}" = --shell ]; then
  in_chroot bash -c 'cd /build/snowflake && exec bash -i' || status=$?
elif [ $# -eq 0 ]; then
  in_chroot bash -c 'cd /build/snowflake && exec bash scripts/test.sh' || status=$?
else
  in_chroot bash -c 'cd /build/snowflake && exec "$@"' chroot "$@" || status=$?
fi

if compgen -G "$build/dist/*.deb" >/dev/null; then
  mkdir -p "$REPO/dist"
  cp "$build"/dist/*.deb "$REPO/dist/"
fi
exit "$status"
