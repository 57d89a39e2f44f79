#!/usr/bin/env bash
# Installs the Debian packages needed to build, package and test snowflake for
# one PostgreSQL version (PG_VERSION, default: this Debian release's own; see
# lib.sh).  The one list for the host and for the chroots of scripts/chroot.sh:
# add a package here and every version's test run gets it.
#
#   bash scripts/install-deps.sh          # installs what is missing (as root)
#   bash scripts/install-deps.sh --list   # prints the list
set -euo pipefail
source "$(dirname "$0")/lib.sh"
v=$PG_VERSION

packages=(
  # build
  make g++ "postgresql-$v" "postgresql-server-dev-$v"
  # tests: unit (GoogleTest), TAP (IPC::Run, faked clocks, ps/kill), helpers
  libgtest-dev libipc-run-perl faketime libfaketime procps python3
  # node parses IDs from JSON as JavaScript numbers (test/t/025_widths_units.pl)
  nodejs
  # the etcd registry (libcurl) and its tests (a real etcd cluster)
  libcurl4-openssl-dev etcd-server etcd-client
  # public IDs' HMAC-SHA-256 (OpenSSL's libcrypto, which PostgreSQL links too)
  libssl-dev
  # the PostgreSQL registry (libpq); the partition tests (network namespaces,
  # nft rules, made by a root helper the postgres user may run through sudo)
  libpq-dev sudo nftables iproute2
  # partitioning by the key with pg_partman (test/t/045_partman.pl)
  "postgresql-$v-partman"
  # pg_tle, built from ../shared/vendor/ for the SQL edition's tests
  # (test/t/078_managed_pg_tle.pl; scripts/lib.sh, build_pg_tle)
  flex bison libkrb5-dev
  # the Debian package (scripts/package.sh, pg_buildext, pg_virtualenv)
  postgresql-server-dev-all debhelper fakeroot dpkg-dev build-essential
)

# what the client guide's test needs (test/integration/050_clients.pl,
# docs/clients.md), on the versions that run it (PG_CLIENT_VERSIONS in lib.sh)
if pg_tests_clients "$v"; then
  packages+=(
    # Python: psycopg 3, psycopg2, SQLAlchemy, Django
    python3-psycopg python3-psycopg2 python3-sqlalchemy python3-django
    # node-postgres and the JavaScript ORMs come from npm (installed below,
    # pinned), on the Node.js above; npm is Debian's unless that Node.js
    # brought its own (one from elsewhere, beside which Debian's npm and
    # node-pg do not install: see the check of what is missing)
    npm
    # Go with pgx v4, built in GOPATH mode from these (nothing fetched)
    golang-go golang-github-jackc-pgx-v4-dev
    # Ruby: Active Record and Sequel on ruby-pg
    ruby-activerecord ruby-sequel ruby-pg
    # PHP with PDO pgsql
    php-cli php-pgsql
    # Rust with tokio-postgres, built offline from Debian's crates
    cargo librust-tokio-postgres-dev librust-tokio-dev librust-serde-json-dev librust-serde-derive-dev
    # Java: pgjdbc
    libpostgresql-jdbc-java default-jdk-headless
  )
fi
# what only the other integration suites need, on the one version that runs
# them (PG_INTEGRATION_VERSION in lib.sh)
if [ "$v" = "$PG_INTEGRATION_VERSION" ]; then
  packages+=(
    # the metrics exporter and the alert rules (test/integration/060_metrics.pl,
    # docs/monitoring.md): postgres_exporter scraped, promtool test rules
    prometheus-postgres-exporter prometheus
  )
fi

if [ "${1:-}" = --list ]; then
  echo "${packages[*]}"
  exit 0
fi

# The npm packages of the JavaScript ORMs (test/integration/050_clients.pl,
# docs/clients.md), exactly as test/integration/clients-npm/package-lock.json
# pins them, into $SNOWFLAKE_NPM_DIR (default /var/cache/snowflake/npm/clients,
# where the test looks), once per machine: again only when the lock file
# changes.  No install scripts run, so nothing is downloaded from anywhere
# but the npm registry (Prisma's engines are not needed: see the guide).
install_npm_packages() {
  local lock dir
  lock=$(dirname "$0")/../test/integration/clients-npm/package-lock.json
  dir=${SNOWFLAKE_NPM_DIR:-/var/cache/snowflake/npm/clients}
  # the chroot's first install-deps.sh runs without the tree
  [ -f "$lock" ] || return 0
  command -v npm >/dev/null || { echo "install-deps.sh: npm is missing; the ORM tests will skip" >&2; return 0; }
  if cmp -s "$lock" "$dir/package-lock.json" && [ -x "$dir/node_modules/.bin/tsx" ]; then
    return 0
  fi
  echo "installing the npm packages of test/integration/clients-npm into $dir"
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  cp "$(dirname "$lock")/package.json" "$lock" "$dir.partial/"
  # in a chroot, the host's certificate authorities (scripts/chroot.sh)
  (cd "$dir.partial" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error \
    ${SNOWFLAKE_NPM_CAFILE:+--cafile "$SNOWFLAKE_NPM_CAFILE"}) </dev/null
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
}

# Go's build cache and cargo's target folder for the client test, kept
# across runs (the test, run as postgres, falls back to its own tmp when
# they are missing)
make_build_caches() {
  [ "$(id -u)" -eq 0 ] || return 0
  install -d -m 1777 /var/cache/snowflake/go-build /var/cache/snowflake/cargo-target
}

# what the client test needs beyond Debian's packages
client_extras() {
  pg_tests_clients "$v" || return 0
  install_npm_packages
  make_build_caches
}

missing=()
for p in "${packages[@]}"; do
  # any npm will do: a Node.js that is not Debian's (NodeSource's) brings its
  # own, and Debian's npm would need Debian's nodejs
  [ "$p" = npm ] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  client_extras
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# a run killed inside apt-get leaves dpkg half-done, and apt-get refuses to
# start until that is finished
dpkg --configure -a </dev/null
apt-get update -qq
# a package this release does not have is reported, and the tests that need
# it fail or skip on their own; one that only Debian's experimental has (on
# sid with experimental enabled, as the chroot for PostgreSQL 19 is: see
# chroot.sh) is taken from there; the rest is installed from the release
available=()
experimental=()
for p in "${missing[@]}"; do
  origins=$(apt-cache madison "$p" 2>/dev/null | awk -F'|' '{ print $3 }')
  if [ -z "$origins" ]; then
    echo "install-deps.sh: $(host_codename) has no package $p" >&2
  elif grep -qv ' experimental/' <<<"$origins"; then
    available+=("$p")
  else
    experimental+=("$p/experimental")
  fi
done
# the Debian package would start a cluster of its own; we never use it
if [ ${#available[@]} -gt 0 ]; then
  echo "installing: ${available[*]}"
  apt-get install -y -qq -o Dpkg::Options::=--force-confdef "${available[@]}" </dev/null
fi
# after the rest, so that the only versions experimental adds are the ones
# these packages need (pkg/experimental picks experimental's version of pkg
# and of a dependency only experimental satisfies: for PostgreSQL 19, its
# libpq), never experimental's version of anything else (-t experimental
# would take its libc)
if [ ${#experimental[@]} -gt 0 ]; then
  echo "installing from experimental: ${experimental[*]}"
  apt-get install -y -qq -o Dpkg::Options::=--force-confdef "${experimental[@]}" </dev/null
fi
client_extras
exit 0
