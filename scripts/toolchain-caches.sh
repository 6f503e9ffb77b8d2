#!/usr/bin/env bash
# Builds, once per toolchain version, what the language declarations'
# Extras point at (language/table.go), under /usr/local/lib/coderun so that
# sandboxes see it read-only:
#   rust/      rlibs of the crates HumanEval-X's Rust programs use (rand 0.8,
#              regex, md5), built offline by Debian's cargo from Debian's
#              crate sources (/usr/share/cargo/registry).
#   node/      node modules for eval's JavaScript items (js-md5), see below.
#   go-cache/  a Go build cache of the packages Go programs commonly import
#              and of testify, built with the sandbox's Go settings, so a
#              compile step does not build the standard library again.
# A toolchain that is not installed is skipped. Safe to run again: a stamp
# holds the toolchain version each was built with. Run as root.
set -euo pipefail
dest=/usr/local/lib/coderun
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] && ls -d /usr/share/cargo/registry/rand-0.8* >/dev/null 2>&1; then
  stamp="$(/usr/bin/rustc --version)"
  if [ "$(cat "$dest/rust/.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "toolchain-caches: building Rust crates rand, regex, md5 with $stamp" >&2
    mkdir -p "$tmp/rust/src" "$tmp/rust/.cargo"
    cat >"$tmp/rust/Cargo.toml" <<'TOML'
[package]
name = "coderun-crates"
version = "0.0.0"
edition = "2021"

[dependencies]
rand = "0.8"
regex = { version = "1", default-features = false, features = ["std", "unicode"] }
md5 = "0.7"
TOML
    echo 'fn main() {}' >"$tmp/rust/src/main.rs"
    cat >"$tmp/rust/.cargo/config.toml" <<'TOML'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
TOML
    (cd "$tmp/rust" && CARGO_HOME="$tmp/cargo-home" RUSTC=/usr/bin/rustc /usr/bin/cargo build --release --offline --quiet)
    rm -rf "$dest/rust.new"
    mkdir -p "$dest/rust.new"
    cp "$tmp"/rust/target/release/deps/*.rlib "$dest/rust.new/"
    echo "$stamp" >"$dest/rust.new/.stamp"
    chmod -R a+rX "$dest/rust.new"
    rm -rf "$dest/rust"
    mv "$dest/rust.new" "$dest/rust"
  fi
fi

gobin=""
for g in /usr/local/go/bin/go /usr/lib/go/bin/go; do
  [ -x "$g" ] && { gobin=$g; break; }
done
if [ -n "$gobin" ] && [ -d /usr/share/gocode/src/github.com/stretchr/testify ]; then
  stamp="$("$gobin" version)"
  if [ "$(cat "$dest/go-cache/.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "toolchain-caches: building a Go build cache with $stamp" >&2
    rm -rf "$dest/go-cache.new"
    mkdir -p "$tmp/go"
    # The settings language/table.go gives Go programs: the cache's keys
    # depend on them.
    export GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$dest/go-cache.new" GOTOOLCHAIN=local GOPROXY=off GOFLAGS= CGO_ENABLED=0 HOME="$tmp/go"
    cat >"$tmp/go/main_test.go" <<'GO'
package main

import (
	"bufio"
	"bytes"
	"container/heap"
	"container/list"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
)

var _ = []any{bufio.NewReader, bytes.Compare, heap.Init, list.New, md5.Sum, hex.EncodeToString, json.Marshal,
	errors.New, fmt.Sprint, math.Abs, big.NewInt, rand.Intn, os.Exit, regexp.MustCompile, slices.Sort[[]int],
	sort.Ints, strconv.Itoa, strings.ToUpper, time.Now, unicode.IsUpper}

func TestCache(t *testing.T) { assert.Equal(t, 1, 1) }
GO
    sed -e 's/^func TestCache.*$/func main() {}/' -e '/"testing"/d' -e '/testify/d' "$tmp/go/main_test.go" >"$tmp/go/main.go"
    (cd "$tmp/go" && "$gobin" test -c -o "$tmp/go/t" main_test.go && "$gobin" build -o "$tmp/go/m" main.go)
    echo "$stamp" >"$dest/go-cache.new/.stamp"
    chmod -R a+rX "$dest/go-cache.new"
    rm -rf "$dest/go-cache"
    mv "$dest/go-cache.new" "$dest/go-cache"
  fi
fi

# node/  the node modules eval's node harness resolves for JavaScript items
#        (language.NodeModules): js-md5, which HumanEval-X's JavaScript/162
#        requires and its reference environment (CodeGeeX's) installs;
#        pinned by scripts/node-libs/package-lock.json, installed with npm ci.
libs="$(cd "$(dirname "$0")" && pwd)/node-libs"
if [ -x /usr/bin/node ] && command -v npm >/dev/null 2>&1; then
  stamp="$(sha256sum "$libs/package-lock.json" | cut -d' ' -f1)"
  if [ "$(cat "$dest/node/.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "toolchain-caches: installing the node modules of scripts/node-libs (js-md5)" >&2
    rm -rf "$dest/node.new"
    mkdir -p "$dest/node.new"
    cp "$libs/package.json" "$libs/package-lock.json" "$dest/node.new/"
    (cd "$dest/node.new" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$stamp" >"$dest/node.new/.stamp"
    chmod -R a+rX "$dest/node.new"
    rm -rf "$dest/node"
    mv "$dest/node.new" "$dest/node"
  fi
fi
