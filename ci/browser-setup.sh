#!/usr/bin/env bash
# ci/browser-setup.sh - install what the browser tests need (make browser-test):
# Debian's chromium and npm (apt-get, when missing) and the speedscope
# viewer from the npm registry into a cache folder.
#
# usage: ci/browser-setup.sh [--print-env]
#
# speedscope goes into $GREENREPLAY_CACHE/npm (default
# ~/.cache/greenreplay/npm), pinned to SPEEDSCOPE_VERSION below; npm uses
# the registry of the machine's own npm configuration.  Installs nothing
# that is already there.  With --print-env, prints shell assignments
# CHROMIUM=path and SPEEDSCOPE_DIR=dir (the package's static build: index.html)
# on stdout.
#
# Exit status: 0 ready; 3 chromium cannot be installed here; 4 chromium is
# ready but npm or speedscope cannot be installed (--print-env then prints
# SPEEDSCOPE_DIR=''); the reason is the last line on stderr, callers skip
# their browser tests (or the speedscope part) with it; 2 bad usage.
set -uo pipefail

SPEEDSCOPE_VERSION=1.25.0
CACHE=${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}
NPM_DIR=$CACHE/npm
print_env=0
case "${1:-}" in
    --print-env) print_env=1 ;;
    "") ;;
    *) echo "usage: ci/browser-setup.sh [--print-env]" >&2; exit 2 ;;
esac

log() { echo "browser-setup: $*" >&2; }
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    log "installing $* (apt-get)"
    { $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null; } 2>&1 | tail -n 3 >&2
    return "${PIPESTATUS[0]}"
}

browser=""
for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [ -z "$browser" ]; then
    apt_install chromium || true
    browser=$(command -v chromium 2>/dev/null) || {
        log "chromium cannot be installed (apt-get install chromium failed)"; exit 3; }
fi

# speedscope_missing REASON: chromium is there, speedscope is not.
speedscope_missing() {
    [ $print_env -eq 1 ] && printf 'CHROMIUM=%q\nSPEEDSCOPE_DIR=\n' "$browser"
    log "$1"
    exit 4
}

if ! command -v npm >/dev/null 2>&1; then
    apt_install npm || true
    command -v npm >/dev/null 2>&1 || speedscope_missing "npm cannot be installed (apt-get install npm failed)"
fi

pkg=$NPM_DIR/node_modules/speedscope
have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" 2>/dev/null | head -n 1)
if [ "$have" != "$SPEEDSCOPE_VERSION" ]; then
    mkdir -p "$NPM_DIR"
    log "installing speedscope@$SPEEDSCOPE_VERSION into $NPM_DIR (npm)"
    if ! npm install --prefix "$NPM_DIR" --no-audit --no-fund --ignore-scripts \
            "speedscope@$SPEEDSCOPE_VERSION" >"$NPM_DIR/install.log" 2>&1; then
        tail -n 5 "$NPM_DIR/install.log" >&2
        speedscope_missing "speedscope cannot be installed from the npm registry (npm install failed)"
    fi
fi
dist=$pkg/dist/release
[ -f "$dist/index.html" ] || dist=$(dirname "$(find "$pkg" -name index.html -path '*release*' | head -n 1)")
[ -f "$dist/index.html" ] || speedscope_missing "speedscope's package has no static build (index.html) in $pkg"

if [ $print_env -eq 1 ]; then
    printf 'CHROMIUM=%q\nSPEEDSCOPE_DIR=%q\n' "$browser" "$dist"
fi
exit 0
