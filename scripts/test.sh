#!/usr/bin/env bash
# The whole test suite: formatting, vet, and every package's tests (the
# sandbox tests run real code in real sandboxes and need root), with the
# race detector on the packages that are concurrent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="/usr/local/go/bin:$PATH"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test (race detector on)"
# scripts/docker.sh run: a private Docker Engine (and the docker runtime's
# image) for sandbox/docker's tests while they run, stopped after; a machine
# that cannot run one says so loudly and those tests skip.
scripts/docker.sh run go test -race -count=1 -timeout 25m ./...

# The agent loop's logic tests need neither root nor sandboxes (a scripted
# executor, agent/agenttest, stands in for them): run them once more as an
# unprivileged user (nobody), where only the real-sandbox tests of
# agent/sandbox_test.go may skip.
echo "== agent tests as an unprivileged user (uid 65534)"
nobody=$(mktemp -d)
trap 'rm -rf "$nobody"' EXIT
chmod 755 "$nobody"
go test -c -o "$nobody/agent.test" ./agent
# The tests read their golden files relative to their package directory.
cp -r agent/testdata "$nobody/testdata"
chmod -R a+rX "$nobody/testdata"
mkdir "$nobody/home" && chown 65534:65534 "$nobody/home"
status=0
(cd "$nobody" && setpriv --reuid=65534 --regid=65534 --clear-groups \
  env -i PATH=/usr/bin:/bin HOME="$nobody/home" TMPDIR="$nobody/home" \
  ./agent.test -test.v -test.count=1 -test.timeout=5m) >"$nobody/out" 2>&1 || status=$?
ran=$(grep -cE -- '^ *--- (PASS|FAIL)' "$nobody/out" || true)
skipped=$(grep -cE -- '^ *--- SKIP' "$nobody/out" || true)
echo "agent as uid 65534: $ran tests and subtests ran, $skipped skipped"
real=$(sed -nE 's/^func (Test[A-Za-z0-9_]+)\(.*/\1/p' agent/sandbox_test.go)
bad=$(sed -nE 's/^ *--- SKIP: ([A-Za-z0-9_]+).*/\1/p' "$nobody/out" | sort -u | grep -vxF "$real" || true)
if [ "$status" -ne 0 ] || [ -n "$bad" ]; then
  grep -E -- '--- FAIL|panic|^FAIL' "$nobody/out" || tail -40 "$nobody/out"
  [ -z "$bad" ] || echo "logic tests skipped without root (only agent/sandbox_test.go may skip): $bad"
  exit 1
fi
