#!/usr/bin/env bash
# tests/bench/run.sh --python PY: build the empty-profile baseline for PY,
# run the profile-event cost benchmark (with the trace size of its
# call-heavy workload), the trace size of a switch-heavy gevent program,
# the bytes per event of four workloads compressed and not
# (tests/bench/trace_size.py), the writer's cost per event on both traces,
# compression's included (tests/bench/encode_cost.c),
# then the switch-path and sampler benchmark.  Prints figures; asserts nothing.
set -euo pipefail
# Other arguments (--repeat N, --scale N) go to profile_cost.py; --clock
# cpu|wall (default cpu: the thread's CPU time) to both.
PY=/usr/bin/python3
args=() clock=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY=$2; shift 2 ;;
        --clock) clock=(--clock "$2"); args+=(--clock "$2"); shift 2 ;;
        -h|--help) echo "usage: $0 [--python PY] [--repeat N] [--scale N] [--clock cpu|wall]"; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}
out=$build/bench
mkdir -p "$out"
inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
${CC:-cc} -O2 -fPIC -shared -I"$inc" -o "$out/emptyprof$suffix" "$here/emptyprof.c"
PYTHONPATH="$out:$build/python" "$PY" "$here/profile_cost.py" --out "$out" --keep-trace "${args[@]}"
echo
if "$PY" -c 'import gevent' 2>/dev/null; then
    PYTHONPATH="$build/python" "$PY" "$here/switch_heavy.py" --output "$out/bench-switch-heavy.grt"
else
    echo "trace size, switch-heavy gevent workload: skipped, gevent is not importable by $PY"
fi
echo
# Bytes per event of every workload, compressed and not, with the goals.
PYTHONPATH="$out:$build/python" "$PY" "$here/trace_size.py" --out "$out"
echo
# The writer's own cost per event, format 1.1 against 1.2 and 1.3
# (compressed chunks), on both traces.
${CC:-cc} -O2 -I"$top/tracer" -I"$top/replay/read" -I"$top/replay/util" -o "$out/encode_cost" "$here/encode_cost.c" \
    "$top/replay/read/reader.c" "$top/replay/util/text.c" "$top/tracer/format.c" "$top/tracer/writer.c" \
    -lz -lzstd
# NAME: the GOAL line's (tests/bench/goal.py).
for t in "call-heavy:$out/bench-profile-cost.grt" "switch-heavy:$out/bench-switch-heavy.grt"; do
    [ -f "${t#*:}" ] && "$out/encode_cost" "${t#*:}" 20 "${t%%:*}" && echo
done
rm -f "$out/bench-profile-cost.grt" "$out/bench-switch-heavy.grt"
if "$PY" -c 'import greenlet' 2>/dev/null; then
    PYTHONPATH="$out:$build/python" "$PY" "$here/switch_cost.py" --cli "$build/greenreplay" --out "$out" "${clock[@]}"
else
    echo "switch cost: skipped, greenlet is not importable by $PY"
fi
echo
# What greenreplay conform's comparison adds to a fixture's recorded run.
"$PY" "$here/conform_cost.py" --cli "$build/greenreplay" --python "$PY" --repeat 1
