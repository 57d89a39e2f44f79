#!/usr/bin/env bash
# Runs a command in a Debian chroot that has PostgreSQL NN, for the versions
# the host's Debian release does not package (17: trixie, 18: forky, 19: sid
# with experimental; see pg_suite in lib.sh).  Run as root.
#
#   bash scripts/chroot.sh 17                          # the whole test suite on 17
#   bash scripts/chroot.sh 18 bash scripts/package.sh  # any command, in the tree's copy
#   bash scripts/chroot.sh 17 --shell                  # an interactive shell
#
# The chroot is made once with debootstrap and cached outside the clone, in
# $SNOWFLAKE_CHROOTS (default /var/cache/snowflake/chroots/<name>: the suite,
# or sid-experimental for 19), so later runs on the machine reuse it.  Each
# run adds the packages install-deps.sh lists that the chroot lacks (apt-get
# inside it), copies the source tree to /build/snowflake inside (objects of
# other versions stay outside), mounts /proc, /dev and /dev/shm, runs the
# command there as root with a clean environment (SUITES, PROVE_TESTS,
# INTEGRATION_TESTS, SKIP_BUILD and PG_* are passed on), copies dist/*.deb
# back to the tree's dist/, and unmounts.
#
# A "<suite>-experimental" chroot is that suite with Debian's experimental
# added to apt's sources, on the same mirror; install-deps.sh takes from
# experimental only the packages the suite lacks (postgresql-19 and
# postgresql-server-dev-19) and what they need from there.
#
# A chroot is complete once it holds .snowflake-complete, written after
# debootstrap and install-deps.sh (inside it) both finished; anything else
# under the cache (a run killed while building) is unmounted and removed, then
# built again.  One run at a time uses a chroot (flock on <name>.lock).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

version=${1:?usage: chroot.sh PG_MAJOR [command ...]}
shift
name=$(pg_suite "$version") || { echo "no Debian suite packages PostgreSQL $version" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "chroot.sh must run as root" >&2; exit 1; }
# the Debian suite debootstrap makes, and whether experimental is added to it
suite=${name%-experimental}
experimental=
[ "$suite" != "$name" ] && experimental=1

cache=${SNOWFLAKE_CHROOTS:-/var/cache/snowflake/chroots}
root=$cache/$name
mkdir -p "$cache"

exec 9>"$cache/$name.lock"
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

# Mounts /proc, /dev and /dev/shm into a chroot directory (postgresql-common's
# postinst and the servers under test need /proc; the servers need /dev/shm).
mount_into() {
  unmount_under "$1"           # left over by a run that was killed
  mount -t proc proc "$1/proc"
  mount --bind /dev "$1/dev"
  mount --make-rslave "$1/dev"
  mkdir -p "$1/dev/shm"
  mount --bind /dev/shm "$1/dev/shm"
  mount --make-rslave "$1/dev/shm"
  cp /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
  # a testing suite's Release file (and sid's and experimental's) can be past
  # its Valid-Until on a mirror that is a snapshot; apt-get update would then
  # refuse the whole suite
  echo 'Acquire::Check-Valid-Until "false";' >"$1/etc/apt/apt.conf.d/99snowflake"
}

cleanup() {
  set +e
  unmount_under "$root.partial"
  unmount_under "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs a command in chroot directory $1 with a clean environment.  The
# command does not inherit the lock's descriptor: a server it leaves running
# would otherwise hold the lock and block every later run.
in_dir() {
  local dir=$1; shift
  chroot "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/lib/postgresql/$version/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PG_VERSIONS="$version" PG_VERSION="$version" \
    ${SUITES:+SUITES="$SUITES"} ${PROVE_TESTS:+PROVE_TESTS="$PROVE_TESTS"} \
    ${INTEGRATION_TESTS:+INTEGRATION_TESTS="$INTEGRATION_TESTS"} \
    ${SKIP_BUILD:+SKIP_BUILD="$SKIP_BUILD"} ${npm_cafile:+SNOWFLAKE_NPM_CAFILE="$npm_cafile"} \
    ${SNOWFLAKE_PORT_LANE:+SNOWFLAKE_PORT_LANE="$SNOWFLAKE_PORT_LANE"} "$@" 9>&-
}

if [ ! -f "$root/.snowflake-complete" ]; then
  echo "== making the $name chroot for PostgreSQL $version in $root"
  remove_tree "$root"
  remove_tree "$root.partial"
  ensure_debootstrap
  mirror=${DEBIAN_MIRROR:-$(debian_mirror)}     # DEBIAN_MIRROR overrides lib.sh's
  [ -n "$mirror" ] || { apt-get update -qq; mirror=$(debian_mirror); }
  [ -n "$mirror" ] || { echo "no Debian mirror in apt's sources: set DEBIAN_MIRROR" >&2; exit 1; }
  include=$(PG_VERSION=$version bash "$REPO/scripts/install-deps.sh" --list)
  if [ -n "$experimental" ]; then
    # experimental's packages cannot come from debootstrap: install-deps.sh
    # gets them below, once the suite's own packages are in
    include=$(tr ' ' '\n' <<<"$include" | grep -vxE "postgresql(-server-dev)?-$version" | paste -sd ' ')
  fi
  include=$(tr ' ' , <<<"$include")
  # packages a suite lacks make debootstrap fail: leave them to apt-get below
  if ! debootstrap --variant=minbase --include="$include" "$suite" "$root.partial" "$mirror" \
       >"$cache/$name.debootstrap.log" 2>&1; then
    echo "debootstrap with all packages failed (tail of $cache/$name.debootstrap.log below); retrying with the build tools only"
    tail -n 5 "$cache/$name.debootstrap.log"
    remove_tree "$root.partial"
    debootstrap --variant=minbase --include=make,g++ \
      "$suite" "$root.partial" "$mirror" >"$cache/$name.debootstrap.log" 2>&1 ||
      { tail -n 20 "$cache/$name.debootstrap.log"; exit 1; }
  fi
  if [ -n "$experimental" ]; then
    echo "deb $mirror experimental main" >"$root.partial/etc/apt/sources.list.d/experimental.list"
  fi
  # the rest of the list (for an experimental chroot: PostgreSQL itself,
  # about 10 minutes), by the script every run uses
  mkdir -p "$root.partial/build"
  cp "$REPO/scripts/install-deps.sh" "$REPO/scripts/lib.sh" "$root.partial/build/"
  mount_into "$root.partial"
  in_dir "$root.partial" bash /build/install-deps.sh
  unmount_under "$root.partial"
  rm -f "$root.partial/build/install-deps.sh" "$root.partial/build/lib.sh"
  date -u +%FT%TZ >"$root.partial/.snowflake-complete"
  mv "$root.partial" "$root"
fi

mount_into "$root"

in_chroot() { in_dir "$root" "$@"; }

# the source tree, without git data, build products or test leftovers
build=$root/build/snowflake
remove_tree "$build"
mkdir -p "$build"
# what a build here made is left out (.gitignore's list): the run on the
# host may be building in the tree at this moment (scripts/test.sh's lanes).
# Its files then come and go while tar reads the folders that hold them,
# which tar reports ("file changed as we read it") with exit status 1; what
# changed is left out anyway, so 1 passes and only a fatal error (2) stops.
extversion=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$REPO/snowflake.control")
{ tar -C "$REPO" --exclude=.git --exclude=dist --exclude='tmp_check*' --exclude=./results \
    --exclude=demo --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude=.built-for-pg \
    --exclude=./test/unit/core_test --exclude=./test/unit/atomicgen_test \
    --exclude=./debian/control --exclude="./extension/snowflake--$extversion.sql" \
    --exclude=__pycache__ --exclude='build-[0-9]*' --warning=no-file-changed -cf - . ||
    [ $? -eq 1 ]; } | tar -C "$build" -xf -

# the third-party sources the tests build (pg_tle), into a build-only folder
# of the tree's copy (scripts/lib.sh, vendor_dir)
vendor=$(vendor_dir)
if [ -n "$vendor" ]; then
  mkdir -p "$build/build-vendor"
  cp "$vendor"/pg_tle-*.tar.gz "$build/build-vendor/"
fi

# the certificate authorities the host trusts, for npm inside (install-deps.sh
# installs the ORMs of the client tests from the npm registry): behind a proxy
# that inspects TLS, the proxy's authority is in the host's bundle only
npm_cafile=
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/build/host-ca-certificates.crt"
  npm_cafile=/build/host-ca-certificates.crt
fi
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
