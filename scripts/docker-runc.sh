#!/bin/sh
# An OCI runtime for the Docker Engine: runc, with each container's processes
# (and those `docker exec` starts in it) in a time namespace whose
# CLOCK_BOOTTIME and CLOCK_MONOTONIC began at zero when the container was
# created. Docker 20.10 makes no time namespace, so a program would read
# the host's uptime and boot time (/proc/uptime, btime in /proc/stat, every
# process's start time): the same for every container until the host
# reboots, they name the host and tell a tenant whether two runs shared one
# (the suite's HostUptime).
#
# The engine runs it in runc's place when it is registered and chosen:
#
#   dockerd --add-runtime coderun-runc=/path/to/docker-runc.sh --default-runtime coderun-runc
#
# (scripts/docker.sh starts the private engine so, with a copy of this file
# beside its socket), or per container with the docker runtime's
# oci_runtime setting.
#
# `create` picks the offsets (minus the host's clocks now, in whole
# seconds) and keeps them in a file named after the container; every runc
# command on that container then runs in a time namespace with the same
# offsets (unshare(1) makes it and executes runc, which the kernel moves
# into it). Every command must: runc recognises a container's process by its
# start time, which the kernel shows relative to the reader's clocks. Other
# commands, and a kernel without time namespaces, run runc as it is.
set -e
runc=${CODERUN_RUNC:-}
if [ -z "$runc" ]; then
  for c in /usr/sbin/runc /usr/bin/runc /usr/local/sbin/runc /usr/local/bin/runc; do
    [ -x "$c" ] && runc=$c && break
  done
fi
[ -n "$runc" ] || { echo "docker-runc.sh: runc not found" >&2; exit 1; }
[ -e /proc/self/ns/time ] || exec "$runc" "$@"
offsets=${CODERUN_RUNC_TIMENS:-$(dirname "$0")/timens}

root=/run/runc cmd= id= prev= last=
for arg in "$@"; do
  case $prev in --root) root=$arg ;; esac
  case $arg in
  --root=*) root=${arg#--root=} ;;
  create | run | exec | start | state | kill | delete | pause | resume | ps | update | events)
    [ -n "$cmd" ] || cmd=$arg ;;
  esac
  [ -z "$id" ] && [ -n "$cmd" ] && [ -f "$root/$arg/state.json" ] && id=$arg
  prev=$arg last=$arg
done

case $cmd in
create | run)
  id=$last
  read -r boot _ </proc/uptime
  # CLOCK_MONOTONIC (which stops while the host is suspended, unlike
  # CLOCK_BOOTTIME) is the "now at" of /proc/timer_list, in nanoseconds.
  mono=$(head -n 3 /proc/timer_list 2>/dev/null | sed -n 's/^now at \([0-9]*\)[0-9]\{9\} nsecs$/\1/p')
  mkdir -p "$offsets"
  echo "${boot%.*} ${mono:-0}" >"$offsets/$id"
  ;;
esac
if [ -n "$id" ] && [ -f "$offsets/$id" ]; then
  read -r boot mono <"$offsets/$id"
  if [ "$cmd" = delete ]; then
    status=0
    unshare --time --boottime "-$boot" --monotonic "-$mono" "$runc" "$@" || status=$?
    [ $status -ne 0 ] || rm -f "$offsets/$id"
    exit $status
  fi
  exec unshare --time --boottime "-$boot" --monotonic "-$mono" "$runc" "$@"
fi
exec "$runc" "$@"
