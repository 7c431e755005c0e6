#!/usr/bin/env bash
# ci/matrix-greenlet.sh - virtual environments with greenlet compiled from the
# C++ sources that Debian's python3-greenlet ships, for interpreters no Debian
# suite builds greenlet for (CPython 3.10 and 3.12), and mutant greenlets:
# the same sources with one patch of ci/mutants/ applied, each bringing back
# one historical greenlet bug class (see ci/mutants/*.patch and
# docs/matrix.md, "Mutants").  Defined in ci/matrix-greenlet.conf; used by
# ci/matrix.sh, which adds each ready one as a user environment of
# ci/envs.sh (--env NAME=VENV/bin/python).
#
# usage: ci/matrix-greenlet.sh list
#        ci/matrix-greenlet.sh prepare [NAME...]
#        ci/matrix-greenlet.sh clean [NAME...]
#
#   list      NAME PYENV SOURCE ENV MUTANT, one environment a line (MUTANT:
#             the patch's name, or - for unmodified greenlet)
#   prepare   build what is missing or out of date (default: every NAME), then
#             print one tab-separated line per NAME on stdout:
#               NAME  ready        PYTHON   (the venv's interpreter)
#               NAME  unavailable  REASON   (pyenv version or sources missing)
#               NAME  failed       REASON   (a step failed; its log is named)
#             Progress and failures go to stderr.  Exit 0 when every NAME is
#             ready, 1 when a build failed, 3 when some NAME is unavailable.
#   clean     remove the venvs
#
# Venvs live in ${GREENREPLAY_CACHE:-~/.cache/greenreplay}/matrix/venvs/NAME;
# a stamp there records what they were built from, so a second `prepare`
# costs one interpreter start per NAME.
set -uo pipefail
shopt -s nullglob

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
CONF=${GREENREPLAY_MATRIX_GREENLET_CONF:-$REPO/ci/matrix-greenlet.conf}
CACHE=$(realpath -m "${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}")
VENVS=$CACHE/matrix/venvs
LOGS=$CACHE/logs
CXX=${CXX:-g++}
# As a release build of greenlet (setuptools passes the interpreter's -DNDEBUG):
# greenlet's assertions stay out, as in the wheels and Debian's packages.
CXXFLAGS_GREENLET="-O2 -g0 -fPIC -shared -fno-strict-aliasing -fwrapv -DNDEBUG"

err() { printf '%s\n' "$*" >&2; }

usage() { sed -n '11,13p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; exit 2; }

declare -a NAMES=()
declare -A PYENV_V=() SOURCE=() NEEDS=() MUTANT=()
MUTANTS_DIR=${GREENREPLAY_MUTANTS_DIR:-$REPO/ci/mutants}
load_conf() {
    local name pv src env mut rest
    [ -f "$CONF" ] || { err "matrix-greenlet: $CONF not found"; exit 2; }
    while read -r name pv src env mut rest; do
        case "$name" in ''|'#'*) continue ;; esac
        NAMES+=("$name")
        PYENV_V[$name]=$pv SOURCE[$name]=$src NEEDS[$name]=${env:-} MUTANT[$name]=${mut:--}
        if [ "${MUTANT[$name]}" != - ] && [ ! -f "$MUTANTS_DIR/${MUTANT[$name]}.patch" ]; then
            err "matrix-greenlet: $CONF: $name: no patch $MUTANTS_DIR/${MUTANT[$name]}.patch"; exit 2
        fi
    done <"$CONF"
}

pyenv_root() {
    if [ -n "${PYENV_ROOT:-}" ]; then printf '%s\n' "$PYENV_ROOT"
    elif command -v pyenv >/dev/null 2>&1; then pyenv root
    else printf '%s\n' "$HOME/.pyenv"; fi
}

# Directory of greenlet's package (sources included) for SOURCE, or nothing.
source_dir() {
    local src=$1 d
    case "$src" in
        root:*) d=$CACHE/roots/${src#root:}/usr/lib/python3/dist-packages/greenlet
                [ -f "$CACHE/roots/${src#root:}.stamp" ] || return 1 ;;
        deb:*)  d=$CACHE/greenlet/${src#deb:}/usr/lib/python3/dist-packages/greenlet
                [ -f "$CACHE/greenlet/${src#deb:}.stamp" ] || return 1 ;;
        *) return 1 ;;
    esac
    [ -f "$d/greenlet.cpp" ] && [ -f "$d/__init__.py" ] || return 1
    printf '%s\n' "$d"
}

source_version() {
    sed -n "s/^__version__ *= *['\"]\([^'\"]*\)['\"].*/\1/p" "$1/__init__.py" | head -n 1
}

# What a venv is built from: a change rebuilds it.
definition() {   # NAME PY SRC
    local sum msum=-
    sum=$(cat "$3"/*.cpp "$3"/*.hpp "$3"/*.h "$3"/*.py "$3"/platform/*.h 2>/dev/null | md5sum | cut -c1-16)
    # The patch's hunks only: its header comment (and "# fixtures:" line) may change freely.
    [ "${MUTANT[$1]}" = - ] || msum=$(sed -n '/^--- /,$p' "$MUTANTS_DIR/${MUTANT[$1]}.patch" | md5sum | cut -c1-16)
    printf 'python=%s source=%s version=%s sources=%s cxx=%s flags=%s mutant=%s patch=%s\n' \
        "$2" "$3" "$(source_version "$3")" "$sum" "$("$CXX" -dumpfullversion 2>/dev/null)" "$CXXFLAGS_GREENLET" \
        "${MUTANT[$1]}" "$msum"
}

# mutant_sources SRC PATCH DIR: a copy of greenlet's sources SRC in DIR with
# PATCH applied (patch -p1; it must apply exactly, no fuzz).
mutant_sources() {
    rm -rf "$3" && mkdir -p "$3" || return 1
    cp -R "$1"/. "$3"/ || return 1
    rm -rf "$3/tests" "$3"/*.so
    echo "patch -p1 -F0 -d $3 < $2"
    patch -p1 -F0 --no-backup-if-mismatch -d "$3" <"$2"
}

# run_step NAME TEXT LOG CMD...: CMD with its output in LOG; progress on stderr.
FAILED=""
run_step() {
    local name=$1 text=$2 log=$3; shift 3
    local t0=$SECONDS
    printf '[%s] %s ... ' "$name" "$text" >&2
    printf '== %s\n$ %s\n' "$text" "$*" >>"$log"
    if "$@" >>"$log" 2>&1; then
        printf 'ok (%ds)\n' $((SECONDS - t0)) >&2
        return 0
    fi
    printf 'FAILED (%ds)\n' $((SECONDS - t0)) >&2
    tail -n 8 "$log" | sed 's/^/    | /' >&2
    printf '    step:    %s\n    command: %s\n    log:     %s\n    retry:   ci/matrix-greenlet.sh prepare %s\n' \
        "$text" "$*" "$log" "$name" >&2
    FAILED="step '$text' failed; log: $log; retry: ci/matrix-greenlet.sh prepare $name"
    return 1
}

compile_greenlet() {   # VENV_PY SRC
    local py=$1 src=$2 inc suffix site
    inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || return 1
    suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') || return 1
    site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
    [ -f "$inc/Python.h" ] || { echo "Python.h missing in $inc"; return 1; }
    rm -rf "$site/greenlet"
    mkdir -p "$site/greenlet" || return 1
    cp "$src"/*.py "$src/greenlet.h" "$site/greenlet/" || return 1
    echo "$CXX $CXXFLAGS_GREENLET -I$inc -I$src -o $site/greenlet/_greenlet$suffix $src/greenlet.cpp"
    # shellcheck disable=SC2086
    "$CXX" $CXXFLAGS_GREENLET -I"$inc" -I"$src" -o "$site/greenlet/_greenlet$suffix" "$src/greenlet.cpp"
}

greenlet_check() {   # VENV_PY: import, one switch, and the version
    "$1" -c 'import greenlet
assert greenlet.greenlet(lambda x: x + 1).switch(1) == 2
print("greenlet", greenlet.__version__, "from", greenlet.__file__)'
}

# prepare_one NAME: prints the NAME's result line.
prepare_one() {
    local name=$1 base src dir def venv=$VENVS/$1 log=$LOGS/matrix-$1.log
    base="$(pyenv_root)/versions/${PYENV_V[$name]}/bin/python${PYENV_V[$name]%.*}"
    if [ ! -x "$base" ]; then
        printf '%s\tunavailable\tpyenv %s is not installed (%s missing)\n' "$name" "${PYENV_V[$name]}" "$base"
        return 3
    fi
    if ! dir=$(source_dir "${SOURCE[$name]}"); then
        printf '%s\tunavailable\tgreenlet sources from %s are not there yet (ci/envs.sh provision %s)\n' \
            "$name" "${SOURCE[$name]}" "${NEEDS[$name]:-?}"
        return 3
    fi
    def=$(definition "$name" "$base" "$dir")
    if [ -f "$venv/.matrix-greenlet" ] && [ "$(cat "$venv/.matrix-greenlet")" = "$def" ] &&
       [ -x "$venv/bin/python" ] && greenlet_check "$venv/bin/python" >/dev/null 2>&1; then
        printf '%s\tready\t%s\n' "$name" "$venv/bin/python"
        return 0
    fi
    mkdir -p "$VENVS" "$LOGS"
    : >"$log"
    local lock=$VENVS/.$name.lock
    exec 9>"$lock"
    flock 9
    rm -rf "$venv"
    local srcdir=$dir what="(${SOURCE[$name]})" mutok=0
    if [ "${MUTANT[$name]}" != - ]; then
        srcdir=$CACHE/matrix/mutant-src/$name
        what="(${SOURCE[$name]}, mutant ${MUTANT[$name]})"
        run_step "$name" "apply ci/mutants/${MUTANT[$name]}.patch" "$log" \
            mutant_sources "$dir" "$MUTANTS_DIR/${MUTANT[$name]}.patch" "$srcdir" || mutok=1
    fi
    if [ $mutok = 0 ] &&
       run_step "$name" "venv for Python ${PYENV_V[$name]}" "$log" "$base" -m venv --without-pip "$venv" &&
       run_step "$name" "compile greenlet $(source_version "$dir") $what" "$log" \
           compile_greenlet "$venv/bin/python" "$srcdir" &&
       run_step "$name" "greenlet imports" "$log" greenlet_check "$venv/bin/python"; then
        printf '%s\n' "$def" >"$venv/.matrix-greenlet"
        exec 9>&-
        printf '%s\tready\t%s\n' "$name" "$venv/bin/python"
        return 0
    fi
    exec 9>&-
    printf '%s\tfailed\t%s\n' "$name" "$FAILED"
    return 1
}

main() {
    local cmd=${1:-}
    [ $# -gt 0 ] && shift
    load_conf
    local sel=() n
    for n in "$@"; do
        [ -n "${PYENV_V[$n]:-}" ] || { err "matrix-greenlet: unknown environment '$n' (ci/matrix-greenlet.sh list)"; exit 2; }
        sel+=("$n")
    done
    [ ${#sel[@]} -gt 0 ] || sel=("${NAMES[@]}")
    case "$cmd" in
        list)
            for n in "${sel[@]}"; do printf '%s %s %s %s %s\n' "$n" "${PYENV_V[$n]}" "${SOURCE[$n]}" "${NEEDS[$n]}" "${MUTANT[$n]}"; done ;;
        prepare)
            local rc=0 r
            for n in "${sel[@]}"; do
                prepare_one "$n"; r=$?
                if [ $r -eq 1 ]; then rc=1; elif [ $r -eq 3 ] && [ $rc -eq 0 ]; then rc=3; fi
            done
            exit $rc ;;
        clean)
            for n in "${sel[@]}"; do rm -rf "${VENVS:?}/$n" "$CACHE/matrix/mutant-src/$n"; done ;;
        -h|--help|help) sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
        *) usage ;;
    esac
}

main "$@"
