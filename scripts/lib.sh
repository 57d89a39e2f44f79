# Shared helpers for the scripts in this folder (sourced, not run).

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BIN:$PATH"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Runs a command as the postgres user when we are root (initdb refuses root).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- env PATH="$PATH" "$@"
  else
    "$@"
  fi
}

# Builds and installs the extension system-wide (install needs root).
build_and_install() {
  make -C "$REPO" -s
  if [ "$(id -u)" -eq 0 ]; then
    make -C "$REPO" -s install
  else
    sudo make -C "$REPO" -s install
  fi
}
