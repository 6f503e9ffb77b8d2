#!/usr/bin/env bash
# Quick start: install what is missing, build bin/coderun, and run it.
# With no arguments it checks the host (coderun doctor) and runs a first
# program in the sandbox; with arguments it runs `coderun ARGS...`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="/usr/local/go/bin:$PATH"
go build -o bin/coderun ./cmd/coderun
if (($#)); then
  exec bin/coderun "$@"
fi
bin/coderun doctor
echo
echo '$ bin/coderun exec -c "print(sum([120, 80, 200, 150]) / 4)"'
bin/coderun exec -c 'print(sum([120, 80, 200, 150]) / 4)'
