# Shared helpers for the scripts in this folder (sourced, not run).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The PostgreSQL versions we test, and the Debian suite that packages each.
# 16 has no Debian package; it builds by the same version guards as 17.
# 19 is a release candidate in Debian's experimental, which sits on top of
# sid: its chroot ("sid-experimental", see chroot.sh) is sid with experimental
# enabled, kept apart from any plain sid or forky one.
PG_TESTED_VERSIONS="15 17 18 19"
# The integration suites (test/integration/: client libraries and ORMs, the
# metrics exporter, pg_partman, active-active replication) run once, on the
# newest stable version, where Debian packages the newest libraries; the core
# suites run on every version.
PG_INTEGRATION_VERSION=18
# The client guide's test (test/integration/050_clients.pl, docs/clients.md)
# runs on these versions: the oldest and the newest stable one, each with its
# Debian release's client libraries (bookworm's and forky's) and the same
# pinned npm packages.
PG_CLIENT_VERSIONS="15 18"
# Whether $1 is one of those versions.
pg_tests_clients() { [[ " $PG_CLIENT_VERSIONS " == *" $1 "* ]]; }
pg_suite() {
  case $1 in
    15) echo bookworm ;;
    17) echo trixie ;;
    18) echo forky ;;
    19) echo sid-experimental ;;
    *) return 1 ;;
  esac
}

# The codename of the Debian release we run on (inside a chroot: the chroot's).
host_codename() { (. /etc/os-release && echo "${VERSION_CODENAME:-unknown}"); }

# The Debian mirror this machine's apt uses (the chroots are made from it).
debian_mirror() {
  apt-cache policy 2>/dev/null |
    awk -v s="$(host_codename)/main" '$3 == s && $2 ~ /^https?:/ { print $2; exit }'
}

# Whether PostgreSQL $1 is tested right here: it is installed, or it is the
# version this Debian release packages (install-deps.sh installs it).
pg_runs_here() {
  [ -x "/usr/lib/postgresql/$1/bin/pg_config" ] || [ "$(pg_suite "$1" || true)" = "$(host_codename)" ]
}

# The version the scripts build and test against: PG_VERSION if set, else a
# single PG_VERSIONS, else the newest installed server, else this release's own.
pg_default_version() {
  local v
  for v in $PG_TESTED_VERSIONS; do
    [ "$(pg_suite "$v")" = "$(host_codename)" ] && echo "$v" && return
  done
  echo 15
}
if [ -z "${PG_VERSION:-}" ]; then
  case ${PG_VERSIONS:-} in
    [0-9]*[0-9]) [[ $PG_VERSIONS != *" "* ]] && PG_VERSION=$PG_VERSIONS ;;
  esac
fi
if [ -z "${PG_VERSION:-}" ]; then
  PG_VERSION=$(ls -d /usr/lib/postgresql/*/bin/pg_config 2>/dev/null | sed 's|^/usr/lib/postgresql/||; s|/.*||' |
               sort -n | tail -n 1)
  PG_VERSION=${PG_VERSION:-$(pg_default_version)}
fi
PG_BIN=${PG_BIN:-/usr/lib/postgresql/$PG_VERSION/bin}
PG_CONFIG=$PG_BIN/pg_config
export PG_VERSION PG_BIN PG_CONFIG
export PATH="$PG_BIN:$PATH"

# Runs a command as the postgres user when we are root (initdb refuses root).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- env PATH="$PATH" PG_CONFIG="$PG_CONFIG" "$@"
  else
    "$@"
  fi
}

# Builds and installs the extension system-wide (install needs root).
# Objects built for another PostgreSQL version are cleaned first.
# The folder that holds third-party sources for the tests (pg_tle): beside
# the clone (../shared/vendor, as in CI), or the copy scripts/chroot.sh puts
# into a chroot's tree (build-vendor/); empty when neither is there.
vendor_dir() {
  local d
  for d in "${SNOWFLAKE_VENDOR:-}" "$REPO/../shared/vendor" "$REPO/build-vendor"; do
    if [ -n "$d" ] && compgen -G "$d/pg_tle-*.tar.gz" >/dev/null; then
      (cd "$d" && pwd)
      return
    fi
  done
}

# Builds and installs pg_tle for the PostgreSQL under test (PG_CONFIG) from
# its source in vendor_dir(), unless it is installed already; without the
# source, says so (the pg_tle tests then skip themselves, saying why).
build_pg_tle() {
  local vendor tarball tmp dir
  if [ -e "$("$PG_CONFIG" --pkglibdir)/pg_tle.so" ] &&
     [ -e "$("$PG_CONFIG" --sharedir)/extension/pg_tle.control" ]; then
    return 0
  fi
  vendor=$(vendor_dir)
  if [ -z "$vendor" ]; then
    echo "pg_tle: no source (../shared/vendor/pg_tle-*.tar.gz): the pg_tle tests are skipped"
    return 0
  fi
  tarball=$(ls "$vendor"/pg_tle-*.tar.gz | head -n 1)
  tmp=$(mktemp -d /tmp/snowflake-pg_tle.XXXXXX)
  tar -xzf "$tarball" -C "$tmp"
  dir=$(ls -d "$tmp"/pg_tle-*/ | head -n 1)
  echo "pg_tle: building $(basename "$tarball") for PostgreSQL $PG_VERSION"
  # a failed build does not stop the run: the pg_tle tests then skip, saying so
  if ! make -C "$dir" -s PG_CONFIG="$PG_CONFIG" >"$tmp/build.log" 2>&1 ||
     ! if [ "$(id -u)" -eq 0 ]; then
         make -C "$dir" -s PG_CONFIG="$PG_CONFIG" install >>"$tmp/build.log" 2>&1
       else
         sudo make -C "$dir" -s PG_CONFIG="$PG_CONFIG" install >>"$tmp/build.log" 2>&1
       fi; then
    echo "pg_tle: the build FAILED for PostgreSQL $PG_VERSION (its tests are skipped); the end of its log:"
    tail -n 20 "$tmp/build.log"
  fi
  rm -rf "$tmp"
}

build_and_install() {
  local stamp=$REPO/.built-for-pg
  if [ "$(cat "$stamp" 2>/dev/null)" != "$PG_VERSION" ]; then
    make -C "$REPO" -s clean
    echo "$PG_VERSION" >"$stamp"
  fi
  make -C "$REPO" -s
  if [ "$(id -u)" -eq 0 ]; then
    make -C "$REPO" -s install
  else
    sudo make -C "$REPO" -s install
  fi
}
