#!/usr/bin/env bash
# Tries the README's two quick-start commands as a newcomer would, on a fresh
# Debian 12: a minimal root made by debootstrap in a directory of its own,
# this repository cloned into it (committed work only), then scripts/run.sh
# and scripts/test.sh run inside it as root (in a mount namespace pivoted
# into it, with /proc, /sys, /dev bound in: the sandbox needs the host's
# kernel and cgroups). Nothing of the
# machine's own Go, packages or module cache is used: the two commands must
# install what they need.
#
# Slow (a debootstrap, then every package, the Go toolchain and every module
# downloaded): it is not part of scripts/test.sh. Run it as root:
#
#   scripts/fresh-machine-test.sh            # keeps the root for inspection
#   FRESH_ROOT=/var/tmp/x scripts/fresh-machine-test.sh
#   scripts/fresh-machine-test.sh --remove   # removes it afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=${FRESH_ROOT:-/var/tmp/coderun-fresh}
remove=
[ "${1:-}" = --remove ] && remove=1

step() { printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

if ! command -v debootstrap >/dev/null; then
  step "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true
  done
  if [ -n "$remove" ]; then rm -rf "$root"; fi
}
trap cleanup EXIT

if [ ! -x "$root/bin/bash" ]; then
  step "debootstrap bookworm (minbase) into $root"
  rm -rf "$root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
fi
# The network's own certificate authorities (an egress proxy's), if any.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

for m in proc sys dev; do
  mkdir -p "$root/$m"
  mount --rbind "/$m" "$root/$m"
  mount --make-rslave "$root/$m"
  mounts+=("$root/$m")
done
mount -t tmpfs tmpfs "$root/run"
mounts+=("$root/run")

step "cloning the repository (HEAD) into $root/src/coderun"
rm -rf "$root/src/coderun"
mkdir -p "$root/src"
git clone -q "$repo" "$root/src/coderun"

# inside runs a command as root of the fresh system. Not chroot(2): the
# kernel refuses a new user namespace to a process whose root is not its
# mount namespace's, and every sandbox starts one. So: a mount namespace of
# its own, pivoted into the fresh root.
inside() {
  unshare --mount --propagation private /bin/bash -c '
    set -e
    mount --rbind "$0" "$0"
    cd "$0"
    mkdir -p .old-root
    pivot_root . .old-root
    cd /
    umount -l /.old-root
    rmdir /.old-root
    exec /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      TERM=dumb LANG=C.UTF-8 CI=true /bin/bash -c "$1"' "$root" "$1"
}
step "what a fresh Debian has"
inside 'command -v go python3 node gcc git || true; ls /usr/local/go 2>/dev/null || echo "no /usr/local/go"'
# The certificates go into the system store first (a fresh machine of this
# kind has them there).
if ls "$root/usr/local/share/ca-certificates/"*.crt >/dev/null 2>&1; then
  inside 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ca-certificates >/dev/null && update-ca-certificates >/dev/null'
fi
step "scripts/run.sh"
start=$SECONDS
inside 'cd /src/coderun && scripts/run.sh </dev/null'
echo "scripts/run.sh: $((SECONDS - start)) s"
step "scripts/run.sh again (idempotent, quick)"
start=$SECONDS
inside 'cd /src/coderun && scripts/run.sh exec -c "print(6 * 7)" </dev/null'
echo "scripts/run.sh again: $((SECONDS - start)) s"
step "scripts/test.sh"
start=$SECONDS
inside 'cd /src/coderun && scripts/test.sh </dev/null'
echo "scripts/test.sh: $((SECONDS - start)) s"
step "both quick-start commands passed on a fresh Debian 12"
