#!/usr/bin/env bash
# ci/matrix-screenshot.sh - render the matrix's HTML page in headless
# Chromium and save a screenshot, to check that the page renders.
#
# usage: ci/matrix-screenshot.sh [PAGE] [OUT.png]
#
# PAGE defaults to build/matrix/index.html, OUT.png to PAGE's directory
# /screenshot.png.  Installs Debian's chromium with apt-get when it is
# missing (root, or sudo).  Exit status: 0 a non-empty PNG was written,
# 1 Chromium failed or wrote nothing, 2 bad usage or no page.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAGE=$(realpath -m "${1:-$ROOT/build/matrix/index.html}")
PNG=$(realpath -m "${2:-$(dirname "$PAGE")/screenshot.png}")
SIZE=${MATRIX_SCREENSHOT_SIZE:-1600,1000}

[ -f "$PAGE" ] || { echo "matrix-screenshot: no page at $PAGE (run make matrix first)" >&2; exit 2; }

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [ -z "$browser" ]; then
    SUDO=
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "matrix-screenshot: installing chromium (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null; }; then
        echo "matrix-screenshot: apt-get install chromium failed; retry with: $SUDO apt-get install chromium" >&2
        exit 1
    fi
    browser=$(command -v chromium) || { echo "matrix-screenshot: chromium not found after install" >&2; exit 1; }
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$PNG"
mkdir -p "$(dirname "$PNG")"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --screenshot="$PNG" --window-size="$SIZE" "file://$PAGE" >"$profile/out.log" 2>&1
rc=$?
if [ ! -s "$PNG" ]; then
    echo "matrix-screenshot: chromium exited $rc and wrote no screenshot" >&2
    tail -n 5 "$profile/out.log" >&2
    exit 1
fi
echo "matrix-screenshot: $PNG ($(wc -c <"$PNG") bytes) from $PAGE"
