#!/usr/bin/env bash
# Quick start: install what is missing, build bin/coderun, and run it.
# With no arguments it checks the host (coderun doctor) and runs a first
# program in the sandbox; with arguments it runs `coderun ARGS...`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="/usr/local/go/bin:$PATH"
# go build only recompiles what changed; the first build on a fresh machine
# also downloads the modules and compiles them, which takes minutes.
start=$SECONDS
if [ ! -x bin/coderun ]; then
  echo "setup: building bin/coderun (the first build takes a few minutes) ..." >&2
fi
# Static (CGO_ENABLED=0: net, os/user and SQLite, which is modernc's, need
# no cgo), so that every run of the CLI, the one-shot `coderun exec` most,
# skips the dynamic loader; -trimpath keeps build paths out of the binary.
CGO_ENABLED=0 go build -trimpath -o bin/coderun ./cmd/coderun
if ((SECONDS - start > 2)); then
  echo "setup:   built bin/coderun in $((SECONDS - start))s" >&2
fi
if (($#)); then
  exec bin/coderun "$@"
fi
bin/coderun doctor
echo
echo '$ bin/coderun exec -c "print(sum([120, 80, 200, 150]) / 4)"'
bin/coderun exec -c 'print(sum([120, 80, 200, 150]) / 4)'
