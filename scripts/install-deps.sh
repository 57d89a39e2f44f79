#!/usr/bin/env bash
# Installs the Debian 12 packages needed to build, run and test snowflake.
# Must run as root; does nothing when everything is already installed.
set -euo pipefail

packages=(
  make g++ postgresql-15 postgresql-server-dev-15 postgresql-contrib
  libgtest-dev libipc-run-perl faketime libfaketime
  libcurl4-openssl-dev etcd-server etcd-client
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# the Debian package would start a cluster of its own; we never use it
apt-get install -y -qq -o Dpkg::Options::=--force-confdef "${missing[@]}" </dev/null
