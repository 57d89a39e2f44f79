#!/bin/bash
# snowflake-netns: network namespaces for the registry's partition tests.
#
# scripts/test.sh installs this file (as root) to /usr/local/sbin/snowflake-netns,
# owned by root, and lets the postgres user run it through sudo (a rule in
# /etc/sudoers.d/snowflake-netns), because the TAP tests run as postgres
# while namespaces, veth pairs and nft rules need root.  It gives that user
# nothing beyond this: every argument is checked, every name it touches has
# the fixed prefix "sfpt", and "exec" runs the command as the calling user,
# never as root.
#
#   snowflake-netns check            exits 0 if namespaces, veth and nft work here
#   snowflake-netns create           makes namespace sfptN, a veth pair to it
#                                    (198.18.N.1 outside, 198.18.N.2 inside,
#                                    a /30 of the benchmarking range), prints N
#   snowflake-netns delete N         removes namespace sfptN and its veth pair
#   snowflake-netns exec N CMD ...   runs CMD (an absolute path) in sfptN as
#                                    the calling user
#   snowflake-netns cut N            inside sfptN, drops every packet that is
#                                    not on its loopback (both ways; open
#                                    connections stay open and hear nothing)
#   snowflake-netns heal N           removes that rule
#
# Traffic only ever flows between the namespaces, the host's ends of their
# veth pairs and loopback: the host does not forward (nothing here turns
# forwarding on), and no address outside 198.18.0.0/16 is added.
#
# Commands enter a namespace with nsenter --net (util-linux), not "ip netns
# exec", which also remounts / and fails in a chroot, where / is no mount
# point (scripts/chroot.sh runs the tests in one).
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

die() { echo "snowflake-netns: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (through sudo)"

# the calling user: exec and delete act for it, never for root
caller_uid=${SUDO_UID:-}
caller_gid=${SUDO_GID:-}

index() {
  [[ ${1:-} =~ ^[1-9][0-9]{0,2}$ ]] && [ "$1" -le 250 ] || die "bad namespace number: ${1:-}"
  [ -e "/run/netns/sfpt$1" ] || die "no namespace sfpt$1"
  echo "$1"
}

# runs a command in namespace sfptN (network only)
in_ns() {
  local n=$1; shift
  nsenter --net="/run/netns/sfpt$n" -- "$@"
}

cmd=${1:-}
shift || true
case $cmd in
  check)
    [ $# -eq 0 ] || die "check takes no arguments"
    command -v ip >/dev/null && command -v nft >/dev/null || die "ip or nft is missing"
    n=$("$0" create) || exit 1
    ok=0
    in_ns "$n" nft -f - <<'EOF' && ok=1
table inet sfpt_check {
  chain c { type filter hook output priority 0; policy accept; }
}
EOF
    "$0" delete "$n" >/dev/null 2>&1 || true
    [ "$ok" -eq 1 ] || die "nft does not work in a network namespace here"
    echo ok
    ;;

  create)
    [ $# -eq 0 ] || die "create takes no arguments"
    # the veth name in the host's namespace is the lock: it is unique on the
    # machine, even across chroots that share the kernel
    for n in $(shuf -i 1-250); do
      ip link add "sfpt$n" type veth peer name "sfpt${n}p" 2>/dev/null || continue
      if [ -e "/run/netns/sfpt$n" ]; then
        ip netns del "sfpt$n" 2>/dev/null || true      # left by a run that died
      fi
      ip netns add "sfpt$n"
      ip link set "sfpt${n}p" netns "sfpt$n"
      in_ns "$n" ip link set "sfpt${n}p" name eth0
      in_ns "$n" ip link set lo up
      in_ns "$n" ip addr add "198.18.$n.2/30" dev eth0
      in_ns "$n" ip link set eth0 up
      in_ns "$n" ip route add default via "198.18.$n.1"
      ip addr add "198.18.$n.1/30" dev "sfpt$n"
      ip link set "sfpt$n" up
      echo "$n"
      exit 0
    done
    die "no free namespace number"
    ;;

  delete)
    [ $# -eq 1 ] || die "usage: delete N"
    n=$(index "$1")
    # processes still inside keep the namespace alive, cut off from
    # everything but loopback, until they exit; nothing is killed here
    ip link del "sfpt$n" 2>/dev/null || true
    ip netns del "sfpt$n"
    ;;

  exec)
    [ $# -ge 2 ] || die "usage: exec N /absolute/command [args...]"
    n=$(index "$1"); shift
    [[ $1 == /* ]] && [ -x "$1" ] || die "the command must be an absolute path to an executable"
    [[ $caller_uid =~ ^[0-9]+$ ]] && [ "$caller_uid" != 0 ] && [[ $caller_gid =~ ^[0-9]+$ ]] ||
      die "exec runs commands for the user who called sudo, and never for root"
    exec nsenter --net="/run/netns/sfpt$n" -- setpriv --reuid="$caller_uid" --regid="$caller_gid" \
      --init-groups --inh-caps=-all -- "$@"
    ;;

  cut)
    [ $# -eq 1 ] || die "usage: cut N"
    n=$(index "$1")
    in_ns "$n" nft -f - <<'EOF'
table inet sfpt_cut {
  chain in { type filter hook input priority 0; policy accept; iifname != "lo" drop; }
  chain out { type filter hook output priority 0; policy accept; oifname != "lo" drop; }
}
EOF
    ;;

  heal)
    [ $# -eq 1 ] || die "usage: heal N"
    n=$(index "$1")
    in_ns "$n" nft delete table inet sfpt_cut
    ;;

  *)
    die "usage: snowflake-netns check|create|delete N|exec N CMD...|cut N|heal N"
    ;;
esac
