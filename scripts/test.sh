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
go test -race -count=1 -timeout 25m ./...
