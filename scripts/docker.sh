#!/usr/bin/env bash
# A private Docker Engine for coderun's docker runtime and its tests: its own
# data root, exec root and socket, no iptables and no bridge (the runtime's
# containers have no network), started and stopped by this script and by
# no service manager. Debian's docker.io is installed when dockerd is
# missing.
#
#   scripts/docker.sh start    start the engine unless it answers already; print its address
#   scripts/docker.sh stop     stop the engine this script started (its pid file)
#   scripts/docker.sh status   print its address and version, or why it does not answer
#   scripts/docker.sh image    build the runtime's image unless the engine has it
#                              (coderun image build: from the host's packages)
#   scripts/docker.sh run CMD...
#                              start the engine and build the image, run CMD with
#                              CODERUN_TEST_DOCKER_HOST set, then stop the engine
#                              (also when CMD fails or is interrupted). A machine
#                              that cannot run dockerd gets a loud notice and CMD
#                              runs with CODERUN_TEST_DOCKER_SKIP set to the reason
#                              (the docker runtime's tests skip, saying it); with
#                              CI=true an engine that runs but whose image cannot
#                              be built fails instead.
#
# The engine's default OCI runtime is scripts/docker-runc.sh (runc with
# clocks of each container's own); where gVisor's runsc is built
# (scripts/runsc.sh) or on PATH ($CODERUN_RUNSC first), it is registered
# too as "runsc", for the docker runtime's oci_runtime: runsc.
#
# Settings (environment): CODERUN_DOCKER_DATA (data root, default
# /var/lib/coderun-rt/docker: the image stays there between runs),
# CODERUN_DOCKER_RUN (socket, pid file, exec root and log, default
# /run/coderun-rt), CODERUN_DOCKER_IMAGE (default coderun-python:latest).
#
# Several users of one engine (two test runs at once) share it: `start`
# reuses an engine that answers, and `run` holds a shared lock on
# $CODERUN_DOCKER_RUN/docker.users while CMD runs and stops the engine
# only when no one else holds that lock.
set -euo pipefail
cd "$(dirname "$0")/.."

data=${CODERUN_DOCKER_DATA:-/var/lib/coderun-rt/docker}
run=${CODERUN_DOCKER_RUN:-/run/coderun-rt}
sock=$run/docker.sock
pidfile=$run/docker.pid
log=$run/dockerd.log
host=unix://$sock

say() { printf 'docker.sh: %s\n' "$*" >&2; }

# answers reports whether an engine answers on the socket (the API's /_ping,
# without the CLI).
answers() {
  [ -S "$sock" ] || return 1
  local out
  out=$(curl -sS --max-time 3 --unix-socket "$sock" http://localhost/_ping 2>/dev/null) || return 1
  [ "$out" = OK ]
}

install_engine() {
  command -v dockerd >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 && return 0
  say "installing Debian's docker.io (dockerd, containerd, runc) and curl"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # --no-install-recommends: no service is enabled or started by the package
  # beyond what its maintainer scripts do; this script starts its own engine.
  apt-get install -y -qq --no-install-recommends docker.io curl >/dev/null
}

start() {
  install_engine
  mkdir -p "$run" "$data"
  exec 8>"$run/docker.start.lock"
  flock 8
  if answers; then
    exec 8>&-
    echo "$host"
    return 0
  fi
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    say "dockerd $(cat "$pidfile") runs but does not answer on $sock; stopping it"
    stop_engine
  fi
  rm -f "$sock" "$pidfile"
  # The OCI runtime the engine runs: runc in a time namespace of each
  # container's own (scripts/docker-runc.sh), copied beside the socket so
  # that the engine does not depend on this checkout staying where it is.
  install -m 0755 scripts/docker-runc.sh "$run/docker-runc.sh"
  # gVisor's runsc as a second OCI runtime, "runsc", where it is built
  # (scripts/runsc.sh) or on PATH: the docker runtime's oci_runtime: runsc
  # runs each container in gVisor's Sentry. Not the default.
  local runsc_args=() runsc
  if runsc=$(find_runsc); then
    write_runsc_wrapper "$runsc" "$run/docker-runsc.sh"
    runsc_args=(--add-runtime "runsc=$run/docker-runsc.sh")
    say "registering gVisor's runsc ($runsc) as the OCI runtime runsc"
  fi
  say "starting dockerd (data root $data, socket $sock, log $log)"
  # setsid: the engine outlives this script and is not in its process
  # group (a Ctrl-C of the caller does not reach it); stop ends it.
  setsid dockerd --data-root "$data" --exec-root "$run/exec" --pidfile "$pidfile" \
    --host "$host" --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --bridge=none --userland-proxy=false --log-level=warn \
    --add-runtime "coderun-runc=$run/docker-runc.sh" --default-runtime coderun-runc "${runsc_args[@]}" \
    </dev/null >"$log" 2>&1 7>&- 8>&- &
  local i
  for ((i = 0; i < 600; i++)); do
    if answers; then
      exec 8>&-
      echo "$host"
      return 0
    fi
    if ! kill -0 $! 2>/dev/null; then
      say "dockerd exited at its start; the end of $log:"
      tail -n 15 "$log" >&2
      return 1
    fi
    sleep 0.1
  done
  say "dockerd did not answer on $sock within 60s; the end of $log:"
  tail -n 15 "$log" >&2
  return 1
}

# find_runsc prints the runsc to register: $CODERUN_RUNSC, else the one
# scripts/runsc.sh builds at sandbox/gvisor's pinned version, else one on
# PATH; it fails when there is none.
find_runsc() {
  local version
  if [ -n "${CODERUN_RUNSC:-}" ]; then
    [ -x "$CODERUN_RUNSC" ] && echo "$CODERUN_RUNSC"
    return
  fi
  version=$(sed -n 's/^const RunscVersion = "\(.*\)"$/\1/p' sandbox/gvisor/runsc.go 2>/dev/null)
  if [ -n "$version" ] && [ -x "/usr/local/lib/coderun/gvisor/$version/runsc" ]; then
    echo "/usr/local/lib/coderun/gvisor/$version/runsc"
    return
  fi
  command -v runsc
}

# write_runsc_wrapper writes the OCI runtime the engine runs as "runsc":
# runsc with the flags the docker runtime needs before the engine's own
# (--root, --log, create...): no network stack at all (the containers have
# none), host FIFOs opened through the gofer (the host talks to a
# container's init through named pipes: sandbox/docker's pipes.go), and
# the container's seccomp profile applied by the Sentry to the program
# (--oci-seccomp; the docker runtime gives runsc containers a profile
# written for the Sentry, the gvisor runtime's, not Docker's: see
# sandbox/docker's seccomp.go).
write_runsc_wrapper() {
  printf '#!/bin/sh\n# Written by scripts/docker.sh: gVisor'"'"'s runsc for the Docker Engine.\nexec %q --network=none --host-fifo=open --oci-seccomp "$@"\n' "$1" >"$2.new"
  chmod 0755 "$2.new"
  mv "$2.new" "$2"
}

# stop_engine ends the dockerd of the pid file (TERM, then KILL after 30 s;
# the containerd it started ends with it).
stop_engine() {
  [ -f "$pidfile" ] || return 0
  local pid i
  pid=$(cat "$pidfile")
  if ! kill -0 "$pid" 2>/dev/null || ! grep -q dockerd "/proc/$pid/comm" 2>/dev/null; then
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid"
  for ((i = 0; i < 300; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "dockerd $pid did not stop in 30s; killing it"
    kill -KILL "$pid"
  fi
  rm -f "$pidfile"
}

stop() {
  mkdir -p "$run"
  exec 8>"$run/docker.start.lock"
  flock 8
  stop_engine
  exec 8>&-
}

status() {
  if answers; then
    printf '%s %s\n' "$host" "$(curl -sS --max-time 3 --unix-socket "$sock" http://localhost/version |
      sed -n 's/.*"Version":"\([^"]*\)".*"ApiVersion":"\([^"]*\)".*/Docker Engine \1 (API \2)/p')"
  else
    echo "no engine answers on $sock"
    return 1
  fi
}

image() {
  local tag=${CODERUN_DOCKER_IMAGE:-coderun-python:latest}
  if curl -sSf --max-time 5 --unix-socket "$sock" "http://localhost/images/$tag/json" >/dev/null 2>&1; then
    return 0
  fi
  export PATH="/usr/local/go/bin:$PATH"
  local t0=$SECONDS
  say "building image $tag from this host's packages (coderun image build)"
  go run ./cmd/coderun image build --docker-host "$host" --tag "$tag" >&2
  say "image $tag built in $((SECONDS - t0))s"
}

# loud prints a notice that stands out in a long CI log.
loud() {
  printf '\n%s\n' "########################################################################" >&2
  printf '### %s\n' "$@" >&2
  printf '%s\n\n' "########################################################################" >&2
}

run_with_engine() {
  local reason="" status=0
  mkdir -p "$run"
  exec 7>"$run/docker.users"
  flock -s 7
  local t0=$SECONDS
  if ! host_=$(start 2>"$run/start.err.$$"); then
    reason="dockerd cannot run on this machine: $(tail -n 3 "$run/start.err.$$" | tr '\n' ' ')"
  fi
  cat "$run/start.err.$$" >&2
  rm -f "$run/start.err.$$"
  if [ -z "$reason" ] && ! image; then
    if [ "${CI:-}" = true ]; then
      loud "the Docker Engine runs but the docker runtime's image could not be built"
      stop_if_unused
      return 1
    fi
    reason="the docker runtime's image could not be built (scripts/docker.sh image)"
  fi
  if [ -n "$reason" ]; then
    loud "THE DOCKER RUNTIME IS NOT TESTED: $reason" "its tests skip with this reason"
    export CODERUN_TEST_DOCKER_SKIP="$reason"
    unset CODERUN_TEST_DOCKER_HOST
  else
    say "engine and image ready in $((SECONDS - t0))s: $host"
    export CODERUN_TEST_DOCKER_HOST="$host"
  fi
  trap stop_if_unused EXIT
  # This shell holds the users' lock while the command runs; the command
  # does not get it, so that a process it leaves behind (a test's sentinel
  # outliving its killed test binary) does not hold it for ever.
  "$@" 7>&- || status=$?
  return $status
}

# stop_if_unused stops the engine unless another `run` still uses it.
stop_if_unused() {
  trap - EXIT
  if flock -x -n 7; then
    stop
  fi
}

case "${1:-}" in
start) start ;;
run)
  shift
  [ $# -gt 0 ] || { echo "usage: scripts/docker.sh run CMD..." >&2; exit 2; }
  run_with_engine "$@"
  ;;
stop) stop ;;
status) status ;;
image) image ;;
*)
  echo "usage: scripts/docker.sh start|stop|status|image|run CMD..." >&2
  exit 2
  ;;
esac
