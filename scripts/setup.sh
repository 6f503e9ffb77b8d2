#!/usr/bin/env bash
# Installs what coderun and its tests need on a fresh Debian 12 machine, and
# nothing that is already there. Safe to run again and again.
set -euo pipefail

# The sandbox's interpreters and Python stack come from Debian, at
# /usr/bin/python3, whatever python3 is first on PATH.
packages=(
  python3 python3-numpy python3-pandas python3-matplotlib
  python3-ipython python3-ipykernel python3-nbformat
  fonts-dejavu-core
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "setup: Go is not installed (expected at /usr/local/go)" >&2; exit 1; }
