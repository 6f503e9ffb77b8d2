#!/usr/bin/env bash
# Installs what coderun and its tests need on a fresh Debian 12 machine, and
# nothing that is already there. Safe to run again and again; each step says
# what it does and how long it took.
#
#   1. Debian packages: the sandbox's interpreters and Python stack, which
#      come from Debian at /usr/bin/python3 whatever python3 is first on PATH.
#   2. Go: the version go.mod names. A Go of 1.21 or later fetches it by
#      itself (GOTOOLCHAIN); with no Go at all, Debian's golang-go is
#      installed first and the pinned toolchain is fetched through the Go
#      module proxy as a module (golang.org/toolchain), then placed in
#      /usr/local/go.
#
# Callers put /usr/local/go/bin on PATH themselves.
set -euo pipefail
cd "$(dirname "$0")/.."

step_start=0
step() { step_start=$SECONDS; printf 'setup: %s ...\n' "$*" >&2; }
done_() { printf 'setup:   done in %ds\n' $((SECONDS - step_start)) >&2; }

packages=(
  python3 python3-numpy python3-pandas python3-matplotlib
  python3-ipython python3-ipykernel python3-nbformat
  fonts-dejavu-core
  bash nodejs          # the sandbox's other interpreters
  gcc libc6-dev        # go test -race needs cgo
  git ca-certificates  # the test script lists files with git; modules come over HTTPS
)

apt_updated=
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "$apt_updated" ]; then
    apt-get update -qq
    apt_updated=1
  fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]} (a few minutes on a fresh machine)"
  apt_install "${missing[@]}"
  done_
fi

# --- Languages (issue 17) ---------------------------------------------------
# The toolchains of the languages coderun runs besides Python, Bash and Node,
# as language/table.go declares them (README, "Languages"): C and C++ (with
# OpenSSL's headers, which some HumanEval-X C++ tests include), Java, Rust,
# TypeScript (esbuild strips the types; Node runs it), Ruby, PHP, Perl, Lua,
# R; Go is the /usr/local/go below, and Go tests import Debian's testify.
lang_packages=(
  g++ libssl-dev openjdk-17-jdk-headless esbuild
  rustc cargo librust-rand-dev librust-regex-dev librust-md5-dev
  golang-github-stretchr-testify-dev
  ruby php-cli perl lua5.4 r-base-core
)
lang_missing=()
for p in "${lang_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || lang_missing+=("$p")
done
if ((${#lang_missing[@]})); then
  step "installing the languages' toolchains: ${lang_missing[*]}"
  apt_install "${lang_missing[@]}"
  done_
fi
# --- end of languages (their caches are built once Go is in place, below) --- ----------------------------------------------------------

# The Go version go.mod asks for, e.g. 1.26.8.
want=$(awk '/^go [0-9]/ {print $2; exit}' go.mod)

# go_minor prints the minor version of a Go binary (21 for go1.21.3), or 0.
go_minor() {
  "$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p' | grep . || echo 0
}

export PATH="/usr/local/go/bin:$PATH"
if command -v go >/dev/null 2>&1 && [ "$(go_minor "$(command -v go)")" -ge 21 ]; then
  : # a Go that can switch to go.mod's toolchain by itself (GOTOOLCHAIN=auto)
else
  step "installing Go $want (Debian's golang-go, then go$want through the Go module proxy)"
  command -v go >/dev/null 2>&1 || apt_install golang-go ca-certificates
  boot=$(command -v go)
  arch=$(dpkg --print-architecture)
  tmp=$(mktemp -d)
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  # The toolchain is published as the module golang.org/toolchain, one
  # version per release and platform; an old Go can download it like any
  # module.
  dir=$(cd "$tmp" && GOPATH="$tmp/gopath" GOFLAGS=-modcacherw GO111MODULE=on \
    "$boot" mod download -json "golang.org/toolchain@v0.0.1-go$want.linux-$arch" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [ -f "$dir/bin/go" ] || { echo "setup: could not fetch Go $want" >&2; exit 1; }
  rm -rf /usr/local/go.new
  cp -a "$dir" /usr/local/go.new
  # Module zips do not keep file modes: the tools must be made executable.
  chmod -R u+w /usr/local/go.new
  chmod +x /usr/local/go.new/bin/* /usr/local/go.new/pkg/tool/*/*
  rm -rf /usr/local/go
  mv /usr/local/go.new /usr/local/go
  hash -r
  done_
fi
command -v go >/dev/null || { echo "setup: Go is not installed" >&2; exit 1; }

# --- MCP tests (mcp/testdata/tsclient): the official MCP TypeScript SDK ---
# The MCP tests drive coderun's MCP server with @modelcontextprotocol/sdk's
# client under node; the version is pinned in package.json and the lock
# file, installed with npm ci into that directory's node_modules (ignored
# by git). It is installed again only when the lock file changed.
tsclient=mcp/testdata/tsclient
if ! cmp -s "$tsclient/package-lock.json" "$tsclient/node_modules/.coderun-lock" 2>/dev/null; then
  if ! command -v npm >/dev/null 2>&1; then
    step "installing Debian's npm (for the MCP tests' client)"
    apt_install npm
    done_
  fi
  step "installing the MCP TypeScript SDK for the MCP tests (npm ci in $tsclient)"
  (cd "$tsclient" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$tsclient/package-lock.json" "$tsclient/node_modules/.coderun-lock"
  done_
fi
# --- end of the MCP tests' step ---

# --- step: the E2B SDK that server/e2b's tests drive (owner: server/e2b) ---
# The unmodified @e2b/code-interpreter, at the version pinned in
# server/e2b/testdata/sdk/package.json (and its lockfile), installed into
# that directory with npm ci. Skipped when that version is already there;
# a failed install (no registry) fails setup only in CI, where the tests
# must run: elsewhere they skip and say why.
setup_e2b_sdk() {
  local dir=server/e2b/testdata/sdk
  local want have
  want=$(sed -n 's/.*"@e2b\/code-interpreter": "\([^"]*\)".*/\1/p' "$dir/package.json")
  have=$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$dir/node_modules/@e2b/code-interpreter/package.json" 2>/dev/null || true)
  [ -n "$want" ] && [ "$have" = "$want" ] && return 0
  command -v npm >/dev/null 2>&1 || apt_install npm
  step "installing @e2b/code-interpreter $want for the E2B tests (npm ci in $dir)"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
    if [ "${CI:-}" = true ]; then
      echo "setup: could not install the E2B SDK, which CI's tests need" >&2
      exit 1
    fi
    echo "setup: could not install the E2B SDK: server/e2b's SDK tests will skip" >&2
  fi
  done_
}
setup_e2b_sdk
# --- end of the E2B tests' step ---

# --- web view tests (web/testdata/browser): Debian's chromium + playwright-core ---
# The web view's browser test drives Debian's chromium headless through
# playwright-core (pinned in package.json and the lock file; it downloads
# no browser of its own), installed with npm ci into that directory's
# node_modules (ignored by git), again only when the lock file changed.
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  step "installing Debian's chromium (for the web view's browser test)"
  apt_install chromium
  done_
fi
browser=web/testdata/browser
if ! cmp -s "$browser/package-lock.json" "$browser/node_modules/.coderun-lock" 2>/dev/null; then
  if ! command -v npm >/dev/null 2>&1; then
    step "installing Debian's npm (for the web view's browser test)"
    apt_install npm
    done_
  fi
  step "installing playwright-core for the web view's browser test (npm ci in $browser)"
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$browser/package-lock.json" "$browser/node_modules/.coderun-lock"
  done_
fi
# --- end of the web view tests' step ---

# --- step: the languages' shared caches (owner: language, sandbox/toolchain) ---
# Rust's crates and Go's build cache for the standard library, built once per
# toolchain version under /usr/local/lib/coderun (scripts/toolchain-caches.sh
# says what and why); a few minutes on a fresh machine, nothing afterwards.
step "building the languages' shared caches (scripts/toolchain-caches.sh)"
bash scripts/toolchain-caches.sh
done_
# --- end of the languages' caches ---

# --- step: runsc, the gvisor runtime's (owner: sandbox/gvisor) ---
# scripts/runsc.sh builds runsc at the version sandbox/gvisor pins, with the
# go tool from the Go module proxy (about 5 minutes on a fresh machine, said
# as it happens), and does nothing when that build is there. A failed build
# fails setup only in CI, where the gvisor tests must run: elsewhere they
# skip and say why.
if ! bash scripts/runsc.sh >/dev/null; then
  if [ "${CI:-}" = true ]; then
    echo "setup: could not build runsc, which CI's gvisor tests need" >&2
    exit 1
  fi
  echo "setup: could not build runsc: sandbox/gvisor's tests will skip" >&2
fi
# --- end of runsc's step ---
