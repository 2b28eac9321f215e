#!/usr/bin/env bash
# Makes `bwrap` (bubblewrap) available for LocalSandbox's `confine` and its tests: installs Debian's
# bubblewrap package when it is missing. Needs root (apt-get) when it installs; prints the version
# it ends up with. Idempotent: a machine that has bwrap is left as it is.
set -euo pipefail

if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" != "0" ]; then
    echo "setup-bubblewrap: bwrap is missing and installing it needs root: sudo apt-get install bubblewrap" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq bubblewrap >/dev/null
fi
bwrap --version
