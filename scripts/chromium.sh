#!/usr/bin/env bash
# Installs the Debian "chromium" package when /usr/bin/chromium is missing, so that the
# headless-browser test of the dpkit web page (internal/server, TestBrowser) can run.
# The test drives /usr/bin/chromium itself; it never downloads a browser of its own.
# Usage: scripts/chromium.sh        (needs root, or sudo, for apt-get)
# Afterwards set DPKIT_REQUIRE_BROWSER=1 to make a missing browser a test failure.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "scripts/chromium.sh: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "scripts/chromium.sh: /usr/bin/chromium is missing and installing it needs root (apt-get install chromium)" >&2
    exit 1
  fi
  sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null

if [ ! -x /usr/bin/chromium ]; then
  echo "scripts/chromium.sh: apt-get install chromium did not provide /usr/bin/chromium" >&2
  exit 1
fi
echo "scripts/chromium.sh: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
