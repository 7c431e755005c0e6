#!/usr/bin/env bash
# ci/asan.sh - `make asan`: build the CLI, the unit tests and the recorder
# with AddressSanitizer and UndefinedBehaviorSanitizer (gcc, BUILD=build/asan)
# and run the unit tests and the integration tests with them.
#
# usage: ci/asan.sh --python PY
#
# The recorder is a C extension loaded by PY, which is not built with ASan:
# PY runs with libasan preloaded, together with libstdc++ (greenlet is C++:
# libasan must come first, and libstdc++ must be loaded for its interceptors
# of C++ exceptions), through the wrapper build/asan/python3-asan (a shell script
# that sets LD_PRELOAD and execs PY).  Leak detection is off inside Python
# (the interpreter keeps memory until exit) and on in the CLI and the unit
# tests.  Every sanitizer report is also written under build/asan/reports/;
# the run fails when any report exists, even if the test that caused it
# passed (a report in a recorded program only shows in its log).
#
# Exit status: 0 the tests passed with no sanitizer report, 1 otherwise,
# 2 bad usage or the build failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=""
while [ $# -gt 0 ]; do
    case $1 in
        --python) PY=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: ci/asan.sh --python PY" >&2; exit 2 ;;
    esac
done
[ -n "$PY" ] || { echo "usage: ci/asan.sh --python PY" >&2; exit 2; }
CC=${CC:-cc}
B=$ROOT/build/asan
REPORTS=$B/reports
FLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
start=$(date +%s)

libasan=$("$CC" -print-file-name=libasan.so)
libstdcxx=$("$CC" -print-file-name=libstdc++.so)
for l in "$libasan" "$libstdcxx"; do
    [ -f "$l" ] || { echo "asan: $l not found (gcc's libasan and libstdc++ are needed)" >&2; exit 2; }
done
libasan=$(readlink -f "$libasan")
libstdcxx=$(readlink -f "$libstdcxx")

echo "asan: building with $FLAGS into build/asan"
if ! make -C "$ROOT" -s BUILD="$B" CC="$CC" CFLAGS="$FLAGS" PYTHON="$PY" all \
    "$B/tests/test_check" >"$B.build.log" 2>&1 ||
    ! make -C "$ROOT" -s BUILD="$B" CC="$CC" CFLAGS="$FLAGS" PYTHON="$PY" \
        $(cd "$ROOT" && for t in tests/unit/test_*.c; do n=${t##*/}; printf '%s ' "$B/tests/${n%.c}"; done) \
        >>"$B.build.log" 2>&1; then
    echo "asan: build failed; log build/asan.build.log" >&2
    tail -n 20 "$B.build.log" >&2
    exit 2
fi

rm -rf "$REPORTS"
mkdir -p "$REPORTS"
WRAP=$B/python3-asan
cat >"$WRAP" <<WRAPPER
#!/bin/sh
# $PY with libasan and libstdc++ preloaded (ci/asan.sh).
LD_PRELOAD="$libasan $libstdcxx\${LD_PRELOAD:+ \$LD_PRELOAD}" \\
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$REPORTS/python-asan" \\
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$REPORTS/python-ubsan" \\
exec "$PY" "\$@"
WRAPPER
chmod +x "$WRAP"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$REPORTS/cli-asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$REPORTS/cli-ubsan"

status=0
step() {
    local name=$1
    shift
    echo "== asan: $name"
    if ! "$@"; then
        echo "asan: $name FAILED"
        status=1
    fi
}
unit() {
    local t rc=0
    for t in "$B"/tests/test_*; do
        "$t" >"$B/$(basename "$t").log" 2>&1 || { echo "  $(basename "$t") failed:"; tail -n 15 "$B/$(basename "$t").log" | sed 's/^/    | /'; rc=1; }
    done
    [ "$rc" -eq 0 ] && echo "  every unit test passed"
    return $rc
}
step "unit tests" unit
export GREENREPLAY_CLI=$B/greenreplay BUILD=$B
step "integration: fixtures (run.sh)" "$ROOT/tests/integration/run.sh" --python "$WRAP"
step "integration: record modes" "$ROOT/tests/integration/record_modes.sh" --python "$WRAP"
step "integration: script round trip" "$ROOT/tests/integration/script_roundtrip.sh" --python "$WRAP"
step "integration: check verdicts" "$ROOT/tests/integration/check_verdicts.sh" --python "$WRAP"
for t in observer faults export; do
    [ -x "$ROOT/tests/integration/$t.sh" ] &&
        step "integration: $t" "$ROOT/tests/integration/$t.sh" --python "$WRAP"
done

nrep=$(find "$REPORTS" -type f | wc -l)
if [ "$nrep" -gt 0 ]; then
    echo "asan: $nrep sanitizer report(s) in build/asan/reports:"
    for f in "$REPORTS"/*; do
        echo "--- $f"
        head -n 40 "$f"
    done
    status=1
fi
echo "asan: $([ "$status" -eq 0 ] && echo OK || echo FAILED) in $(( $(date +%s) - start )) s"
exit $status
