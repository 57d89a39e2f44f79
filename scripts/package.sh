#!/usr/bin/env bash
# Builds the Debian packages of snowflake into dist/: one
# postgresql-NN-snowflake_<version>_<arch>.deb for each PostgreSQL version
# installed here (server and headers) that debian/pgversions allows (pg_buildext, as Debian and
# PostgreSQL's own apt repository package extensions).  The build runs the
# regress suite against the built files (debian/rules).  As root it first
# installs what it needs (install-deps.sh).
#
#   bash scripts/package.sh                             # this machine's PostgreSQL
#   bash scripts/chroot.sh 17 bash scripts/package.sh   # 17, in its chroot; .deb to dist/
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] && bash "$REPO/scripts/install-deps.sh"

version=$(dpkg-parsechangelog -l "$REPO/debian/changelog" -S Version)
build=$(mktemp -d /tmp/snowflake-package.XXXXXX)
trap 'rm -rf "$build"' EXIT
chmod 755 "$build"       # the test cluster's server reads test/regress.conf in it
src=$build/snowflake-$version
mkdir "$src"
tar -C "$REPO" --exclude=.git --exclude=dist --exclude='tmp_check*' --exclude=results \
    --exclude=demo --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude=.built-for-pg \
    --exclude=test/unit/core_test --exclude='build-[0-9]*' --exclude=debian/control \
    -cf - . | tar -C "$src" -xf -

# pg_buildext builds for the versions postgresql-common calls supported,
# which by default is only the release's default one: 18 on sid, even with 19
# installed from experimental (where postgresql-server-dev-all also brings
# 18's headers, without its server).  Build for each version whose server and
# headers are both installed instead (PG_SUPPORTED_VERSIONS overrides).
if [ -z "${PG_SUPPORTED_VERSIONS:-}" ]; then
  PG_SUPPORTED_VERSIONS=$(for d in /usr/lib/postgresql/*/; do
      v=$(basename "$d")
      if [ -x "$d/bin/postgres" ] && [ -d "/usr/include/postgresql/$v/server" ]; then echo "$v"; fi
    done | sort -n | paste -sd ' ')
  export PG_SUPPORTED_VERSIONS
fi

cd "$src"
pg_buildext updatecontrol
echo "== building postgresql-{$(pg_buildext supported-versions | paste -sd,)}-snowflake $version"
dpkg-buildpackage -us -uc -b >"$build/build.log" 2>&1 || { tail -n 80 "$build/build.log"; exit 1; }
grep -E '^(ok|not ok) |tests (passed|failed)|### ' "$build/build.log" || true

mkdir -p "$REPO/dist"
for deb in "$build"/*.deb; do
  case $deb in *-dbgsym_*) continue ;; esac
  cp "$deb" "$REPO/dist/"
  echo "dist/$(basename "$deb")"
done
