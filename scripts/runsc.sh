#!/usr/bin/env bash
# Builds runsc, gVisor's OCI runtime, at the version sandbox/gvisor is
# written against (its RunscVersion constant), with the go tool from the Go
# module proxy (gVisor's "go" branch is published there as a module), into
# /usr/local/lib/coderun/gvisor/<version>/runsc, where the gvisor runtime
# looks first. Does nothing when that binary is already there, so CI pays
# the build (a few minutes) once per cached machine image or cache key.
#
#   scripts/runsc.sh          build if missing; print the binary's path
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

version=$(sed -n 's/^const RunscVersion = "\(.*\)"$/\1/p' sandbox/gvisor/runsc.go)
[ -n "$version" ] || { echo "runsc.sh: no RunscVersion in sandbox/gvisor/runsc.go" >&2; exit 1; }
dir=/usr/local/lib/coderun/gvisor/$version
if [ -x "$dir/runsc" ]; then
  echo "$dir/runsc"
  exit 0
fi
start=$SECONDS
echo "runsc.sh: building runsc $version with go install (a few minutes) ..." >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Outside any module, so the project's go.mod plays no part; static, as
# runsc re-executes itself as the Sentry and the gofer.
(cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 go install -trimpath \
  -ldflags="-X gvisor.dev/gvisor/runsc/version.version=$version" "gvisor.dev/gvisor/runsc@$version")
mkdir -p "$dir"
install -m 0755 "$tmp/bin/runsc" "$dir/runsc.new"
mv "$dir/runsc.new" "$dir/runsc"
echo "runsc.sh: built $dir/runsc in $((SECONDS - start))s" >&2
echo "$dir/runsc"
