#!/usr/bin/env bash
# Makes a headless Chromium available for the browser tests (packages/server/test/Browser.test.ts):
# installs Debian's `chromium` package when no Chromium is on the PATH. Installing needs root
# (apt-get); without it, a missing browser is an error naming the package. Idempotent and quiet
# when Chromium is there; prints the executable's path on stdout, and nothing else.
set -euo pipefail

find_chromium() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

path="$(find_chromium)"
if [ -z "$path" ]; then
  if [ "$(id -u)" != "0" ]; then
    echo "chromium.sh: Chromium is missing and installing it needs root: sudo apt-get install chromium (Debian) or put a chromium on the PATH" >&2
    exit 1
  fi
  # Test files run in parallel workers, each asking: one installs, the others wait for it and look again.
  exec 9>"${TMPDIR:-/tmp}/condukt-chromium.lock"
  flock 9
  path="$(find_chromium)"
fi
if [ -z "$path" ]; then
  export DEBIAN_FRONTEND=noninteractive
  # apt's own progress goes to stderr only when it fails, so a test's output stays clean.
  log="$(mktemp)"
  if ! { apt-get update -qq && apt-get install -y -qq chromium; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "chromium.sh: apt-get could not install chromium (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  path="$(find_chromium)"
  if [ -z "$path" ]; then
    echo "chromium.sh: apt-get installed chromium but no chromium is on the PATH" >&2
    exit 1
  fi
fi
echo "$path"
