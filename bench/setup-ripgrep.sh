#!/usr/bin/env bash
# Makes `rg` available for bench/grep.ts: installs Debian's ripgrep package when it is missing.
# Needs root (apt-get); prints the version it ends up with.
set -euo pipefail

if ! command -v rg >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq ripgrep >/dev/null
fi
rg --version | sed -n 1p
