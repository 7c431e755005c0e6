#!/usr/bin/env bash
# ci/scale.sh - scale tests (`make scale`, not part of `make test`): 1 M
# greenlets and 10,000 threads over a recorded run, and a 100 M-event
# recording checked and dumped; time and peak memory of each, with the goals
# beside them.  Big traces go to ~/.cache/greenreplay/scale.
# Takes 10 minutes or more on a 2-CPU machine.
#
# usage: ci/scale.sh [--python PY] [options of ci/scale.py: --greenlets N
#                    --threads N --events N --mem-cap-mb MB --only LIST --keep]
# Exit status: 0 every step ran (missed goals are printed, not failed),
# 1 a step crashed, 2 bad usage or the tool missing.
set -u
PY=/usr/bin/python3
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
[ -x "$BUILD/greenreplay" ] || { echo "ci/scale.sh: $BUILD/greenreplay missing (run make)" >&2; exit 2; }
exec "$PY" "$here/ci/scale.py" --python "$PY" --cli "$BUILD/greenreplay" "${args[@]}"
