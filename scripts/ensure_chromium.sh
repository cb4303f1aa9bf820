#!/usr/bin/env bash
# The console's browser tests drive Debian's chromium through Playwright (Playwright's own
# browser download is not used). Install it when it is missing; do nothing when it is there.
set -euo pipefail
if [ -n "${ORBIT_CHROMIUM:-}" ] && [ -x "$ORBIT_CHROMIUM" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "chromium is missing and we are not root: apt-get install chromium" >&2; exit 1; }
  SUDO="sudo"
fi
echo "installing chromium (apt) for the console's browser tests" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null 2>&1
