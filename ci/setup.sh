#!/usr/bin/env bash
# ci/setup.sh - install the Debian packages greenreplay needs, if missing.
# Idempotent; runs apt-get only when a package is absent.  Needs root (or
# sudo) the first time.  Exit status: 0 ready, 1 an install failed.
set -euo pipefail

PACKAGES=(build-essential pkg-config zlib1g-dev libzstd-dev libjansson-dev libcmocka-dev
          python3-dev python3-greenlet python3-gevent valgrind
          python3.11-dbg
          python3-venv python3-pytest python3-pytest-xdist
          python3-objgraph python3-psutil    # pip install ., the pytest plugin, python3.11d (make test); make peer
          python3-yappi python3-coverage python3-line-profiler   # greenreplay conform (profilers under test)
          austin python3-scalene             # greenreplay conform, greenreplay stall (bookworm's)
          python3-eventlet                   # make realworld: eventlet's green threads and tpool
          time                               # make bench: peak memory of the replayer
          zstd                               # script_roundtrip.sh: compressed chunks read by script_names.py
          jq)                                # make test: the merge recipe of check --from/--to

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all packages present"
    exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
    echo "setup: apt-get install failed; retry with: $SUDO apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "setup: done"
