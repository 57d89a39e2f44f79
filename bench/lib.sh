# Shared by bench/run.sh and bench/sequence_start.sh (sourced, after scripts/lib.sh).

# Builds the bench-only module bench/clockonly in folder $1 (outside the tree)
# and installs it with the extension's PG_CONFIG; no JIT bitcode (the scratch
# servers run with jit = off).  Uses sudo where PostgreSQL's folders are not
# writable.
install_clockonly() {
  local dir=$1/clockonly sudo=
  cp -r "$BENCH/clockonly" "$dir"
  make -s -C "$dir" PG_CONFIG="$PG_CONFIG" with_llvm=no >/dev/null
  [ -w "$("$PG_CONFIG" --pkglibdir)" ] && [ -w "$("$PG_CONFIG" --sharedir)/extension" ] || sudo=sudo
  $sudo make -s -C "$dir" PG_CONFIG="$PG_CONFIG" with_llvm=no install >/dev/null
  rm -rf "$dir"
}
