#!/usr/bin/env bash
# tests/valgrind.sh - run the unit tests and the replayer on every recorded
# trace under valgrind memcheck; fail on any memory error or definite leak.
#
# usage: tests/valgrind.sh [UNIT_TEST_BINARY...]
#
# Each BINARY (normally build/tests/test_*) runs under
#   valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
# Then `greenreplay check` (text, and -q --html), `dump`, `script`, `diff`
# (of the trace with itself) and `export` (both formats) run, under the same valgrind, on every *.grt below BUILD/traces/
# (BUILD: the directory above the binaries' tests/ directory, else $BUILD,
# else build).  Their own exit statuses are fine as long as they are
# documented ones (check 0/1/2, dump 0/2, script 0/2, diff 0/1/2, export
# 0/2); valgrind
# errors (status 99), crashes and other statuses fail.
# Then `check` runs in a directory whose pyproject.toml has a
# [tool.greenreplay] table, in each report form, on the largest of those
# traces, on its first half and on a copy with one byte flipped; and with a
# rule name that does not exist, and beside a pyproject.toml that does not
# parse (exit 2).
# Exit status: 0 all clean, 1 something failed, 2 valgrind or the CLI missing.
set -u

VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi

build=${BUILD:-build}
if [ $# -gt 0 ]; then
    d=$(dirname "$(dirname "$1")")
    [ -d "$d" ] && build=$d
fi
cli=$build/greenreplay

logdir=$(mktemp -d "${TMPDIR:-/tmp}/gr-valgrind.XXXXXX")
trap 'rm -rf "$logdir"' EXIT

runs=0
failures=()

# run NAME ALLOWED_STATUSES CMD...: run CMD under valgrind, quietly; on a
# bad status show valgrind's log and remember the failure.
run() {
    local name=$1 allowed=$2
    shift 2
    local log=$logdir/run.$runs.log st
    runs=$((runs + 1))
    "${VG[@]}" --log-file="$log" "$@" >/dev/null 2>"$log.err"
    st=$?
    case " $allowed " in
    *" $st "*)
        if [ -s "$log" ]; then # errors below the error-exitcode radar
            echo "FAIL $name: valgrind reported problems"
            sed 's/^/    /' "$log"
            failures+=("$name")
        else
            echo "ok   $name (exit $st)"
        fi
        ;;
    *)
        if [ "$st" -eq 99 ]; then
            echo "FAIL $name: memory errors or definite leaks"
        else
            echo "FAIL $name: exit status $st"
        fi
        sed 's/^/    /' "$log" "$log.err" | tail -n 60
        failures+=("$name")
        ;;
    esac
}

nunit=$#
for bin in "$@"; do
    if [ ! -x "$bin" ]; then
        echo "FAIL $bin: not an executable"
        failures+=("$bin")
        continue
    fi
    run "$bin" "0" "$bin"
done

ntraces=0
if [ -d "$build/traces" ]; then
    mapfile -t traces < <(find "$build/traces" -name '*.grt' -type f | sort)
    ntraces=${#traces[@]}
fi
echo "valgrind.sh: $nunit unit test binaries, $ntraces traces under $build/traces/"
if [ "$ntraces" -gt 0 ]; then
    if [ ! -x "$cli" ]; then
        echo "valgrind.sh: $cli is missing (make cli)" >&2
        exit 2
    fi
    for t in "${traces[@]}"; do
        run "check $t" "0 1 2" "$cli" check "$t"
        run "dump $t" "0 2" "$cli" dump "$t"
        run "script $t" "0 2" "$cli" script -q -o /dev/null "$t"
        run "diff $t" "0 1 2" "$cli" diff --c-names script --max 0 "$t" "$t"
        run "check --html $t" "0 1 2" "$cli" check -q --html /dev/null "$t"
        run "export chrome $t" "0 2" "$cli" export --format chrome -o /dev/null "$t"
        run "export speedscope $t" "0 2" "$cli" export --format speedscope -o /dev/null "$t"
    done
fi

# check's own memory around the trace: [tool.greenreplay] read from a
# pyproject.toml (allow, fail_on), one that does not parse, a rule name that
# does not exist, and traces that cannot be checked whole (the largest trace
# cut in half, and with a byte of its second half flipped), each report form.
if [ "$ntraces" -gt 0 ]; then
    cfg=$logdir/cfg
    mkdir -p "$cfg/bad"
    big=${traces[0]} size=0
    for t in "${traces[@]}"; do
        n=$(stat -c %s "$t")
        [ "$n" -gt "$size" ] && big=$t size=$n
    done
    head -c $((size / 2)) "$big" >"$cfg/cut.grt"
    cp "$big" "$cfg/flip.grt"
    printf '\377' | dd of="$cfg/flip.grt" bs=1 seek=$((size * 3 / 4)) conv=notrunc status=none
    cp "$big" "$cfg/whole.grt"
    printf '[tool.greenreplay]\nallow = ["displaced"]\nfail_on = ["attribution"]\nstrict_known = false\n' \
        >"$cfg/pyproject.toml"
    printf '[tool.greenreplay]\nallow = ["displaced", 3]\n' >"$cfg/bad/pyproject.toml"
    abs_cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
    echo "valgrind.sh: check beside a pyproject.toml, on $big whole, cut and flipped"
    here=$PWD
    cd "$cfg" || exit 2 # not a subshell: run counts the failures
    for t in whole cut flip; do
        for form in "" "-q" "--format json" "--in-memory" "--from 0 --to 1" "--html /dev/null" "--junit /dev/null"; do
            # shellcheck disable=SC2086 # form is several words
            run "check $form $t.grt (pyproject.toml)" "0 1 2" "$abs_cli" check $form "$t.grt"
        done
    done
    run "check --allow nosuch (pyproject.toml)" "2" "$abs_cli" check --allow nosuch whole.grt
    cd bad || exit 2
    run "check (pyproject.toml that does not parse)" "2" "$abs_cli" check ../whole.grt
    cd "$here" || exit 2
fi

echo "valgrind.sh: $runs runs, ${#failures[@]} failed"
if [ ${#failures[@]} -gt 0 ]; then
    printf '  failed: %s\n' "${failures[@]}"
    exit 1
fi
exit 0
