#!/usr/bin/env bash
# ci/envs.sh - greenreplay's test environments: list, provision, build, run.
#
# The interface is documented in docs/ENVIRONMENTS.md; `ci/envs.sh help`
# prints a summary.  Built-in environments are defined in ci/envs.conf,
# users' own in ci/matrix.conf (or --envs-file FILE, --env NAME=COMMAND).
# Everything built goes into ${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay},
# outside the clone.
set -uo pipefail
shopt -s nullglob

SELF=$(realpath "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SELF")/.." && pwd -P)
CACHE=$(realpath -m "${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}")
# Builds depend on the source tree, so each clone gets its own work area.
REPOKEY="$(basename "$REPO")-$(printf '%s' "$REPO" | md5sum | cut -c1-8)"
WORK=$CACHE/work/$REPOKEY
ROOTS=$CACHE/roots
SMOKE=$REPO/ci/envs-smoke.py
CLI=${GREENREPLAY_CLI:-$REPO/build/greenreplay}   # the C CLI, run on the host only
HOST_PY=/usr/bin/python3            # runs envs-smoke.py check on the host
INNER_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Packages every Debian root gets, besides python3.X and python3.X-dev.
ROOT_PACKAGES=(python3-greenlet python3-gevent gcc make libc6-dev zlib1g-dev libzstd-dev)
# Packages a root gets where its suite has them: the profilers of the
# profiler axis (ci/profilers.sh) and greenlet's own test
# dependencies (`make peer` in a root), and eventlet (tests/realworld).
# A suite without one is
# recorded in the root's stamp (lacks=) and the root is still ready; whether
# a package's extension is built for each of the root's interpreters is
# what the probe reports (the env's info file: yappi=, coverage=, ...).
ROOT_OPTIONAL=(python3-yappi python3-coverage python3-line-profiler python3-objgraph python3-psutil
               python3-pyinstrument python3-memray austin python3-scalene
               python3-eventlet)   # eventlet: make realworld
# The host environments' profilers (host_packages_for); pyenv interpreters
# get none (cProfile and profile only: docs/ENVIRONMENTS.md).
HOST_PROFILERS=(python3-yappi python3-coverage python3-line-profiler austin python3-scalene)

# Exit codes (docs/ENVIRONMENTS.md).
EX_OK=0 EX_FAIL=1 EX_USAGE=2 EX_UNAVAILABLE=3 EX_RUN_ENV=125

say() { printf '%s\n' "$*"; }
err() { printf 'envs: %s\n' "$*" >&2; }
die() { err "$2"; exit "$1"; }

usage() {
    cat <<'EOF'
usage: ci/envs.sh [GLOBAL OPTIONS] COMMAND [ARGS]

Commands:
  list [--json] [ID...]          environments: id, kind, interpreter, greenlet,
                                 gevent, status (ready / not provisioned /
                                 unavailable, with the reason)
  provision [ID...]              make environments ready (default: all): Debian
                                 roots, greenlet, recorder build, smoke test
  build ID...                    build the recorder extension for ID
  smoke ID...                    record a tiny greenlet program in ID and check it
  run ID [--] CMD [ARGS...]      run CMD in ID with the recorder importable; a
                                 leading `python`/`python3`/`pythonX.Y` is ID's
                                 interpreter
  record ID [RECORD OPTIONS] -- SCRIPT [ARGS...]
                                 `build/greenreplay record` with ID's interpreter
  python [--inner] ID            print ID's interpreter command (a wrapper on the
                                 host; --inner: as seen inside the environment);
                                 exit 3 if ID is not provisioned (nothing printed)
  clean [--roots] ID...          forget builds of ID (--roots: its root too)
  help                           this text

Global options (before or after COMMAND):
  --env NAME=COMMAND             add a user environment (an interpreter path or
                                 command prefix); may repeat
  --envs-file FILE               user environments, one `NAME COMMAND...` a line
                                 (default: ci/matrix.conf, $GREENREPLAY_ENVS_FILE)

Cache: ${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}
Exit codes: 0 ok; 1 a step or check failed; 2 bad usage or unknown env;
3 environment unavailable or not provisioned; `run` returns the command's
own status, or 125 when the environment cannot run it.
EOF
}

# --------------------------------------------------------------------------
# Environment registry
# --------------------------------------------------------------------------
declare -a IDS=()
declare -A KIND=() PYV=() WHERE=() GLFROM=() GLEXP=() GVEXP=() UCMD=() BADDEF=()

load_builtin() {
    local id kind py where gl glx gvx rest
    while read -r id kind py where gl glx gvx rest; do
        case "$id" in ''|'#'*) continue ;; esac
        IDS+=("$id")
        KIND[$id]=$kind PYV[$id]=$py WHERE[$id]=$where GLFROM[$id]=$gl
        GLEXP[$id]=${glx:-none} GVEXP[$id]=${gvx:-none}
    done < "$REPO/ci/envs.conf"
}

add_user_env() {    # NAME COMMAND...
    local id=$1; shift
    if [ -n "${KIND[$id]:-}" ]; then
        if [ "${KIND[$id]}" = user ]; then
            UCMD[$id]="$*" WHERE[$id]="$*"   # a later definition wins (--env over the file)
            return
        fi
        BADDEF[$id]="user environment $id clashes with a built-in environment; rename it"
        return
    fi
    IDS+=("$id")
    KIND[$id]=user PYV[$id]='?' WHERE[$id]="$*" GLFROM[$id]=own GLEXP[$id]='?' GVEXP[$id]='?'
    UCMD[$id]="$*"
    if ! [[ $id =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
        BADDEF[$id]="bad environment name '$id' (letters, digits, . _ -)"
    elif [ -z "$*" ]; then
        BADDEF[$id]="no interpreter command given for $id"
    fi
}

load_user_file() {
    local f=$1 name cmd
    [ -f "$f" ] || { err "environments file not found: $f"; exit $EX_USAGE; }
    while read -r name cmd; do
        case "$name" in ''|'#'*) continue ;; esac
        add_user_env "$name" $cmd
    done < "$f"
}

ENV_OPTS=() ENVS_FILE=""
ARGS=()
parse_global() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --env) [ $# -ge 2 ] || die $EX_USAGE "--env needs NAME=COMMAND"; ENV_OPTS+=("$2"); shift 2 ;;
            --env=*) ENV_OPTS+=("${1#--env=}"); shift ;;
            --envs-file) [ $# -ge 2 ] || die $EX_USAGE "--envs-file needs FILE"; ENVS_FILE=$2; shift 2 ;;
            --envs-file=*) ENVS_FILE=${1#--envs-file=}; shift ;;
            --) ARGS+=("$@"); return ;;
            *) ARGS+=("$1"); shift ;;
        esac
    done
}

load_envs() {
    load_builtin
    local f=${ENVS_FILE:-${GREENREPLAY_ENVS_FILE:-}}
    if [ -n "$f" ]; then
        load_user_file "$f"
    elif [ -f "$REPO/ci/matrix.conf" ]; then
        load_user_file "$REPO/ci/matrix.conf"
    fi
    pyenv_root > /dev/null    # once here: later calls run in subshells
    local e
    for e in "${ENV_OPTS[@]}"; do
        case "$e" in
            *=*) add_user_env "${e%%=*}" ${e#*=} ;;
            *) die $EX_USAGE "--env needs NAME=COMMAND, got '$e'" ;;
        esac
    done
}

known() { [ -n "${KIND[$1]:-}" ]; }
need_known() { known "$1" || die $EX_USAGE "unknown environment '$1' (ci/envs.sh list shows them)"; }

PYENV_ROOT_DIR=""
pyenv_root() {
    if [ -z "$PYENV_ROOT_DIR" ]; then
        if [ -n "${PYENV_ROOT:-}" ]; then PYENV_ROOT_DIR=$PYENV_ROOT
        elif command -v pyenv >/dev/null 2>&1; then PYENV_ROOT_DIR=$(pyenv root)
        else PYENV_ROOT_DIR=$HOME/.pyenv; fi
    fi
    printf '%s\n' "$PYENV_ROOT_DIR"
}

envdir() { printf '%s/%s\n' "$WORK" "$1"; }
# A python column ending in "d" (3.13d) is the interpreter's debug build:
# python3.13d from Debian's python3.13-dbg (Py_DEBUG: assertions, reference
# count and GIL checks).  pyv_base ID prints the minor version without it.
is_debug() { case "${PYV[$1]}" in *d) return 0 ;; esac; return 1; }
pyv_base() { printf '%s\n' "${PYV[$1]%d}"; }
suite_of() { [ "${KIND[$1]}" = root ] && printf '%s\n' "${WHERE[$1]}"; }
deb_suite() { case "${GLFROM[$1]}" in deb:*) printf '%s\n' "${GLFROM[$1]#deb:}" ;; esac; }
rootdir() { printf '%s/%s\n' "$ROOTS" "$1"; }

# The interpreter command, as words, where it runs (inside the root for roots).
interp_words() {
    local id=$1
    case "${KIND[$id]}" in
        host) printf '%s\n' "${WHERE[$id]}" ;;
        pyenv) printf '%s\n' "$(pyenv_root)/versions/${WHERE[$id]}/bin/python${PYV[$id]}" ;;
        root) printf '%s\n' "/usr/bin/python${PYV[$id]}" ;;
        user) printf '%s\n' ${UCMD[$id]}; return ;;
    esac
    interp_flags "$id"
}
# Options every run of ID's interpreter gets.  Debug builds of 3.11+ load
# the standard library from .py files where release builds use the frozen
# copies (-X frozen_modules defaults to off when Py_DEBUG, bpo-45020), so
# code file names would read <stdlib>/os.py instead of <frozen os>; with
# frozen_modules=on a debug build's trace is comparable with the release
# build's, and both share one golden dump.
interp_flags() {
    local b
    is_debug "$1" || return 0
    b=$(pyv_base "$1")
    [ "${b#3.}" -ge 11 ] && printf '%s\n' -X frozen_modules=on
    return 0
}

# What defines an environment's build: a change makes it "not provisioned".
# A rebuilt root (new headers) also counts as a change.
definition() {
    case "${KIND[$1]}" in
        user) printf 'user|%s\n' "${UCMD[$1]}" ;;
        root) printf '%s|%s|%s|%s|%s\n' "${KIND[$1]}" "${PYV[$1]}" "${WHERE[$1]}" "${GLFROM[$1]}" \
                  "$(grep '^built=' "$(rootdir "${WHERE[$1]}").stamp" 2>/dev/null)" ;;
        *) printf '%s|%s|%s|%s\n' "${KIND[$1]}" "${PYV[$1]}" "${WHERE[$1]}" "${GLFROM[$1]}" ;;
    esac
}

# PYTHONPATH entries the environment needs (absolute, same inside roots).
env_pythonpath() {
    local id=$1 s
    printf '%s\n' "$(envdir "$id")/build/python"
    s=$(deb_suite "$id")
    [ -n "$s" ] && printf '%s\n' "$CACHE/greenlet/$s/usr/lib/python3/dist-packages"
}
env_pp() {   # the same, as one PYTHONPATH string
    local pp
    mapfile -t pp < <(env_pythonpath "$1")
    local IFS=:
    printf '%s\n' "${pp[*]}"
}

# --------------------------------------------------------------------------
# Host mirror and per-suite apt configuration
# --------------------------------------------------------------------------
# The Debian mirror URI, from the host's own apt sources (never written into
# the repository).  GREENREPLAY_MIRROR overrides it.
host_mirror() {
    if [ -n "${GREENREPLAY_MIRROR:-}" ]; then printf '%s\n' "$GREENREPLAY_MIRROR"; return; fi
    local code uri
    code=$(. /etc/os-release 2>/dev/null; printf '%s' "${VERSION_CODENAME:-}")
    # deb822 paragraphs whose Suites hold the host's own codename.
    uri=$(awk -v code="$code" '
        function flush() { if (!found && types ~ /(^| )deb( |$)/ && enabled != "no" && uris != "" &&
                              (code == "" || (" " suites " ") ~ (" " code " "))) { split(uris, u, " "); print u[1]; found = 1; exit }
                           types = uris = suites = ""; enabled = "" }
        /^[ \t]*$/ { flush(); next }
        /^[ \t]*#/ { next }
        tolower($1) == "types:" { $1 = ""; types = $0; sub(/^ +/, "", types) }
        tolower($1) == "uris:" { $1 = ""; uris = $0; sub(/^ +/, "", uris) }
        tolower($1) == "suites:" { $1 = ""; suites = $0; sub(/^ +/, "", suites) }
        tolower($1) == "enabled:" { enabled = tolower($2) }
        END { flush() }' /etc/apt/sources.list.d/*.sources 2>/dev/null </dev/null)
    if [ -z "$uri" ]; then
        # One-line format: deb [options] URI SUITE COMPONENTS...
        uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null </dev/null |
              sed -e 's/#.*//' -e 's/\[[^]]*\]//' |
              awk -v code="$code" '$1 == "deb" && (code == "" || $3 == code) { print $2; exit }')
    fi
    [ -n "$uri" ] || return 1
    printf '%s\n' "${uri%/}"
}

aptdir() { printf '%s/apt/%s\n' "$CACHE" "$1"; }

# Write SUITE's private apt configuration (its own lists and caches; the
# host's trusted keys).  Prints nothing; fails when no mirror is known.
suite_apt_config() {
    local s=$1 d mirror
    d=$(aptdir "$s")
    mirror=$(host_mirror) || { err "cannot find the Debian mirror in the host's apt sources (set GREENREPLAY_MIRROR)"; return 1; }
    mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial" "$d/parts" "$d/sources.d" "$d/prefs.d"
    [ -f "$d/state/status" ] || : > "$d/state/status"
    local src="deb $mirror $s main"
    if [ "$(cat "$d/sources.list" 2>/dev/null)" != "$src" ]; then
        printf '%s\n' "$src" > "$d/sources.list"
        rm -f "$d/updated"
    fi
    cat > "$d/apt.conf" <<EOF
Dir::State "$d/state";
Dir::State::status "$d/state/status";
Dir::Cache "$d/cache";
Dir::Etc::SourceList "$d/sources.list";
Dir::Etc::SourceParts "$d/sources.d";
Dir::Etc::Parts "$d/parts";
Dir::Etc::Preferences "$d/preferences";
Dir::Etc::PreferencesParts "$d/prefs.d";
APT::Architecture "$(dpkg --print-architecture)";
APT::Sandbox::User "root";
Acquire::Check-Valid-Until "false";
Acquire::Check-Date "false";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
Acquire::CompressionTypes::Order:: "gz";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
}

suite_apt() { local s=$1; shift; APT_CONFIG="$(aptdir "$s")/apt.conf" "$@"; }


# Check that SUITE has every package (apt-cache against the suite's lists).
suite_check_packages() {
    local s=$1; shift
    local p v missing=() pol
    pol=$(suite_apt "$s" apt-cache policy "$@" 2>/dev/null |
          awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) } /^  Candidate:/ { print p, $2 }')
    for p in "$@"; do
        v=$(printf '%s\n' "$pol" | awk -v p="$p" '$1 == p { print $2; exit }')
        if [ -z "$v" ] || [ "$v" = "(none)" ]; then missing+=("$p"); v=MISSING; fi
        printf '  %-24s %s\n' "$p" "$v"
    done
    if [ ${#missing[@]} -gt 0 ]; then
        err "$s has no package named: ${missing[*]}"
        return 1
    fi
}

# Packages of SUITE's root: every root env of that suite adds its python.
root_packages() {
    local s=$1 id pk=()
    for id in "${IDS[@]}"; do
        [ "${KIND[$id]}" = root ] && [ "${WHERE[$id]}" = "$s" ] || continue
        # A debug build's headers are links into python3.X-dev's.
        if is_debug "$id"; then pk+=("python$(pyv_base "$id")-dbg" "python$(pyv_base "$id")-dev")
        else pk+=("python${PYV[$id]}" "python${PYV[$id]}-dev"); fi
    done
    printf '%s\n' "${pk[@]}" "${ROOT_PACKAGES[@]}" "${ROOT_OPTIONAL[@]}" | sort -u
}
# The same, less the optional packages SUITE does not have (known once
# root_ensure has looked them up: ROOT_LACKS[SUITE]).
declare -A ROOT_LACKS=()
root_install_list() {
    local s=$1 p
    for p in $(root_packages "$s"); do
        case " ${ROOT_LACKS[$s]:-} " in *" $p "*) continue ;; esac
        printf '%s\n' "$p"
    done
}
# optional_lookup SUITE: fill ROOT_LACKS[SUITE] from the suite's apt lists
# (apt-cache policy: no candidate = the suite does not package it).
optional_lookup() {
    local s=$1 p v pol lacks=()
    pol=$(suite_apt "$s" apt-cache policy "${ROOT_OPTIONAL[@]}" 2>/dev/null |
          awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) } /^  Candidate:/ { print p, $2 }')
    # The packages every root of SUITE gets: an optional package must
    # install beside them (sid's austin 3.7 depends on python3 < 3.14, so
    # the root would not build with it): apt-get's simulation against the
    # suite's lists and the private, empty dpkg status.
    local base=() q
    for q in $(root_packages "$s"); do
        case " ${ROOT_OPTIONAL[*]} " in *" $q "*) ;; *) base+=("$q") ;; esac
    done
    for p in "${ROOT_OPTIONAL[@]}"; do
        v=$(printf '%s\n' "$pol" | awk -v p="$p" '$1 == p { print $2; exit }')
        if [ -z "$v" ] || [ "$v" = "(none)" ]; then lacks+=("$p"); v="not in $s (skipped)"
        elif ! suite_apt "$s" apt-get -s -qq -o APT::Install-Recommends=false install "${base[@]}" "$p" \
                >/dev/null 2>&1; then
            lacks+=("$p"); v="$v not installable in $s beside the root's packages (skipped)"
        fi
        printf '  %-24s %s\n' "$p" "$v"
    done
    ROOT_LACKS[$s]="${lacks[*]}"
}
root_pythons() {
    local s=$1 id
    for id in "${IDS[@]}"; do
        [ "${KIND[$id]}" = root ] && [ "${WHERE[$id]}" = "$s" ] && printf '%s\n' "${PYV[$id]}"
    done
}
# The stamp's package lines: what the root holds, and the optional packages
# its suite lacks (so that a root without them is still "ready").
root_stamp_want() {
    printf 'packages=%s\n' "$(root_install_list "$1" | tr '\n' ' ')"
    printf 'lacks=%s\n' "${ROOT_LACKS[$1]:-}"
}

# root_state SUITE: prints ready | missing | half-built | changed.  A root
# holding every package wanted (and more: another clone's list may add
# some), or lacking only optional packages its suite does not have
# (the stamp's lacks= line), is ready.  A changed root is extended with the
# packages it misses (root_extend), not rebuilt.
root_state() {
    local s=$1 r have p
    r=$(rootdir "$s")
    if [ -f "$r.stamp" ] && [ -d "$r" ]; then
        have=" $(sed -n 's/^\(packages\|lacks\)=//p' "$r.stamp" | tr '\n' ' ') "
        for p in $(root_packages "$s"); do
            case "$have" in *" $p "*) ;; *) echo changed; return ;; esac
        done
        echo ready
    elif [ -d "$r" ] || [ -d "$r.building" ]; then echo half-built
    else echo missing; fi
}

# --------------------------------------------------------------------------
# Entering a root: a private mount namespace, bind mounts at identical
# paths, /proc and /dev, then chroot.  Nothing leaks to the host's mounts;
# the namespace ends with the command.
# --------------------------------------------------------------------------
# Directories never bound from the host: the root has its own system trees
# (a clone or cache under, say, /var/lib/ci or /opt is bound as usual).
system_dir() {
    case "$1" in
        /|/usr|/usr/*|/etc|/etc/*|/bin|/bin/*|/sbin|/sbin/*|/lib|/lib/*|/lib32|/lib32/*) return 0 ;;
        /lib64|/lib64/*|/libx32|/libx32/*|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*) return 0 ;;
        /run|/run/*|/boot|/boot/*|/var|/var/lib|/var/lib/dpkg|/var/lib/dpkg/*) return 0 ;;
        /var/lib/apt|/var/lib/apt/*|/var/cache|/var/cache/apt|/var/cache/apt/*|/var/log) return 0 ;;
    esac
    return 1
}

# Directories to bind into ROOT for a command: the clone, the cache's work
# area, /tmp, $TMPDIR, the current directory, the trace's directory, the
# recording root, $GREENREPLAY_BINDS (colon-separated), and the directory of
# every absolute-path argument that exists on the host.
bind_list() {
    local root=$1; shift
    local c=("$REPO" "$WORK" "$CACHE/greenlet" /tmp "${TMPDIR:-}" "$PWD")
    [ -n "${GREENREPLAY_OUTPUT:-}" ] && c+=("$(dirname "$GREENREPLAY_OUTPUT")")
    [ -n "${GREENREPLAY_ROOT:-}" ] && c+=("$GREENREPLAY_ROOT")
    local b IFS=:
    for b in ${GREENREPLAY_BINDS:-}; do c+=("$b"); done
    unset IFS
    local a
    for a in "$@"; do
        case "$a" in
            /*) if [ -d "$a" ]; then c+=("$a"); elif [ -e "$a" ]; then c+=("$(dirname "$a")"); fi ;;
        esac
    done
    local p out=()
    for p in "${c[@]}"; do
        [ -n "$p" ] && [ -d "$p" ] || continue
        p=$(realpath "$p")
        system_dir "$p" && continue
        case "$p/" in "$root"/*) continue ;; esac
        out+=("$p")
    done
    # Parents first; drop directories already under a chosen one.
    printf '%s\n' "${out[@]}" | LC_ALL=C sort -u | awk '
        { for (i = 1; i <= n; i++) if (index($0 "/", kept[i] "/") == 1) next; kept[++n] = $0; print }'
}

# __enter ROOT [--] CMD...: from the host, into ROOT (re-executes this script
# in a new mount namespace).
cmd_enter() {
    local root=$1; shift
    [ "${1:-}" = -- ] && shift
    [ -d "$root/usr" ] || { err "no root at $root"; exit $EX_RUN_ENV; }
    command -v unshare >/dev/null || { err "unshare (util-linux) is missing"; exit $EX_RUN_ENV; }
    exec unshare --mount --propagation private -- "$SELF" __chroot "$root" "$PWD" -- "$@"
}

# __chroot ROOT CWD -- CMD...: inside the new namespace.
cmd_chroot() {
    local root=$1 cwd=$2; shift 2
    [ "${1:-}" = -- ] && shift
    local b
    while IFS= read -r b; do
        [ -n "$b" ] || continue
        mkdir -p "$root$b" && mount --rbind "$b" "$root$b" ||
            { err "cannot bind $b into $root"; exit $EX_RUN_ENV; }
    done < <(bind_list "$root" "$@")
    mount -t proc proc "$root/proc" || { err "cannot mount /proc in $root"; exit $EX_RUN_ENV; }
    mount --rbind /dev "$root/dev" || { err "cannot bind /dev into $root"; exit $EX_RUN_ENV; }
    local chroot_bin
    chroot_bin=$(command -v chroot) || { err "chroot is missing"; exit $EX_RUN_ENV; }
    unset LD_LIBRARY_PATH LD_PRELOAD PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE VIRTUAL_ENV PYENV_VERSION
    export PATH=$INNER_PATH
    exec "$chroot_bin" "$root" /bin/sh -c '
        cd "$1" 2>/dev/null || { echo "envs: $1 is not in the root; running in /" >&2; cd /; }
        shift; exec "$@"' envs-chroot "$cwd" "$@"
}

# --------------------------------------------------------------------------
# Wrappers: $WORK/ID/bin/python{,3,X.Y}: one executable that runs ID's
# interpreter with the recorder (and greenlet) importable.  It is what
# `ci/envs.sh python ID` prints and what `greenreplay record -- PYTHON`
# takes.
# --------------------------------------------------------------------------
q() { printf '%q' "$1"; }

write_wrapper() {
    local id=$1 d pp inner w f
    d=$(envdir "$id")
    mkdir -p "$d/bin"
    pp=$(env_pp "$id")
    inner=""
    for w in $(interp_words "$id"); do inner+=" $(q "$w")"; done
    {
        echo '#!/bin/sh'
        echo "# Generated by ci/envs.sh for environment $id; regenerated by \`ci/envs.sh build $id\`."
        echo "PYTHONPATH=$(q "$pp")\${PYTHONPATH:+:\$PYTHONPATH}"
        echo "GREENREPLAY_ENV=$(q "$id")"
        echo "GREENREPLAY_PYTHON=$(q "${inner# }")"
        echo 'export PYTHONPATH GREENREPLAY_ENV GREENREPLAY_PYTHON'
        if [ "${KIND[$id]}" = root ]; then
            # The cache path travels with the wrapper: the root binds it.
            echo "GREENREPLAY_CACHE=$(q "$CACHE") exec $(q "$SELF") __enter $(q "$(rootdir "${WHERE[$id]}")") --$inner \"\$@\""
        else
            echo "exec$inner \"\$@\""
        fi
    } > "$d/bin/.python.tmp"
    chmod +x "$d/bin/.python.tmp"
    mv -f "$d/bin/.python.tmp" "$d/bin/python"
    for f in python3 "python${PYV[$id]}"; do
        case "$f" in python\?) continue ;; esac
        ln -sfn python "$d/bin/$f"
    done
}

# --------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------
# env_status ID: sets ST (ready | not provisioned | unavailable) and WHY.
ST="" WHY=""
declare -A PROBED=()
env_status() {
    local id=$1 d s w
    d=$(envdir "$id")
    ST="not provisioned" WHY=""
    if [ -n "${BADDEF[$id]:-}" ]; then ST=unavailable WHY=${BADDEF[$id]}; return; fi
    case "${KIND[$id]}" in
        host|pyenv)
            w=$(interp_words "$id" | head -n 1)
            if [ ! -x "$w" ]; then
                ST=unavailable
                if [ "${KIND[$id]}" = pyenv ]; then WHY="pyenv ${WHERE[$id]} is not installed ($w missing)"
                elif is_debug "$id"; then WHY="$w is missing (apt-get install python$(pyv_base "$id")-dbg)"
                else WHY="$w is missing (apt-get install python3)"; fi
                return
            fi ;;
        root)
            if [ "$(id -u)" != 0 ]; then ST=unavailable WHY="Debian roots need root (mount namespaces, chroot)"; return; fi
            if ! command -v unshare >/dev/null; then ST=unavailable WHY="unshare (util-linux) is missing"; return; fi
            s=${WHERE[$id]}
            case "$(root_state "$s")" in
                missing) WHY="root $s not built"; return ;;
                half-built) WHY="root $s half-built (provision rebuilds it)"; return ;;
                changed) WHY="root $s package list changed (provision installs the missing packages)"; return ;;
            esac ;;
        user)
            user_probe "$id" || { ST=unavailable; return; } ;;
    esac
    s=$(deb_suite "$id")
    if [ -n "$s" ] && [ ! -f "$CACHE/greenlet/$s.stamp" ]; then WHY="greenlet from $s not extracted"; return; fi
    if [ ! -f "$d/ready" ]; then WHY="recorder not built and smoke-tested for this clone"; return; fi
    if [ "$(cat "$d/definition" 2>/dev/null)" != "$(definition "$id")" ]; then WHY="definition changed since provisioning"; return; fi
    if [ -z "$(recorder_so "$id")" ]; then WHY="recorder build missing"; return; fi
    ST=ready
}

# Path of the built extension, or nothing.
recorder_so() {
    local f
    for f in "$(envdir "$1")"/build/python/greenreplay/_greenreplay*.so; do printf '%s\n' "$f"; return; done
}
recorder_state() {
    local so
    so=$(recorder_so "$1")
    [ -n "$so" ] || { echo missing; return; }
    if [ -n "$(find "$REPO/tracer" -type f -newer "$so" -print -quit 2>/dev/null)" ]; then echo stale; else echo built; fi
}

# Run a user environment's interpreter once (cached per run): fills PROBED
# and WHY.  A missing or broken interpreter is reported for that env only.
user_probe() {
    local id=$1 first out rc
    if [ -n "${PROBED[$id]:-}" ]; then
        [ "${PROBED[$id]}" = ok ] && return 0
        WHY=${PROBED[$id.why]}; return 1
    fi
    read -r first _ <<< "${UCMD[$id]}"
    if ! command -v "$first" >/dev/null 2>&1; then
        PROBED[$id]=bad WHY="interpreter not found: $first"; PROBED[$id.why]=$WHY; return 1
    fi
    out=$(cd / && PYTHONPATH=$(env_pp "$id") timeout 60 ${UCMD[$id]} "$SMOKE" probe 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        [ -n "$out" ] || out="no output"
        WHY="interpreter failed (\`${UCMD[$id]}\` exit $rc): $(printf '%s' "$out" | tail -n 1)"
        PROBED[$id]=bad; PROBED[$id.why]=$WHY; return 1
    fi
    PROBED[$id.info]=$out
    PYV[$id]=$(printf '%s\n' "$out" | sed -n 's/^python=\([0-9]*\.[0-9]*\).*/\1/p')
    local minor=${PYV[$id]#3.}
    if [ "${PYV[$id]%%.*}" != 3 ] || ! [ "$minor" -ge 9 ] 2>/dev/null; then
        WHY="Python ${PYV[$id]:-?} is not supported (the recorder needs CPython 3.9 or later)"
        PROBED[$id]=bad; PROBED[$id.why]=$WHY; return 1
    fi
    PROBED[$id]=ok
    return 0
}

# Versions as last probed (info file), else the expectation marked with '*'.
info_get() {   # ID KEY
    local id=$1 k=$2 f v=""
    f="$(envdir "$id")/info"
    if [ "${KIND[$id]}" = user ] && [ -n "${PROBED[$id.info]:-}" ]; then
        v=$(printf '%s\n' "${PROBED[$id.info]}" | sed -n "s/^$k=//p" | head -n 1)
    elif [ -f "$f" ]; then
        v=$(sed -n "s/^$k=//p" "$f" | head -n 1)
    fi
    printf '%s\n' "$v"
}

json_str() {
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}; s=${s//$'\t'/\\t}; s=${s//$'\r'/\\r}
    s=${s//[$'\001'-$'\037']/}
    printf '"%s"' "$s"
}
# "true" when ID runs a debug build (python column "3.Xd", or a user
# environment whose probe saw sys.gettotalrefcount), else "false".
env_debug() {
    if is_debug "$1" || [ "$(info_get "$1" debug)" = 1 ]; then echo true; else echo false; fi
}
json_null_or() { if [ -n "$1" ]; then json_str "$1"; else printf 'null'; fi; }

cmd_list() {
    local json=0 sel=() id
    while [ $# -gt 0 ]; do
        case "$1" in
            --json) json=1 ;;
            -*) die $EX_USAGE "list: unknown option $1" ;;
            *) need_known "$1"; sel+=("$1") ;;
        esac
        shift
    done
    [ ${#sel[@]} -gt 0 ] || sel=("${IDS[@]}")
    local first=1 gl gv pyver src interp w
    [ $json = 1 ] && printf '[' || printf '%-14s %-6s %-8s %-44s %-9s %-9s %s\n' ID KIND PYTHON INTERPRETER GREENLET GEVENT STATUS
    for id in "${sel[@]}"; do
        env_status "$id"
        gl=$(info_get "$id" greenlet); gv=$(info_get "$id" gevent); pyver=$(info_get "$id" python)
        src=probed
        if [ -z "$gl" ]; then src=expected; gl=${GLEXP[$id]}; gv=${GVEXP[$id]}; fi
        interp=""
        for w in $(interp_words "$id"); do interp+="$w "; done
        interp=${interp% }
        if [ $json = 1 ]; then
            [ $first = 1 ] || printf ','
            first=0
            printf '\n  {"id": %s, "kind": %s, "python": %s, "python_version": %s, ' \
                "$(json_str "$id")" "$(json_str "${KIND[$id]}")" "$(json_str "${PYV[$id]}")" "$(json_null_or "$pyver")"
            printf '"interpreter": %s, "command": %s, ' "$(json_str "$interp")" "$(json_str "$(envdir "$id")/bin/python")"
            printf '"suite": %s, "root": %s, ' "$(json_null_or "$(suite_of "$id")")" \
                "$(json_null_or "$([ "${KIND[$id]}" = root ] && rootdir "${WHERE[$id]}")")"
            printf '"greenlet": %s, "greenlet_from": %s, "gevent": %s, "versions": %s, ' \
                "$(json_str "$gl")" "$(json_str "${GLFROM[$id]}")" "$(json_str "$gv")" "$(json_str "$src")"
            printf '"status": %s, "reason": %s, "recorder": %s, "pythonpath": %s, "debug": %s, ' \
                "$(json_str "$ST")" "$(json_null_or "$WHY")" "$(json_str "$(recorder_state "$id")")" \
                "$(json_str "$(env_pp "$id")")" "$(env_debug "$id")"
            # The profilers the probe found (version, "none", "broken (...)"; null: not probed).
            printf '"profilers": {"yappi": %s, "coverage": %s, "line_profiler": %s, "coverage_ctracer": %s}}' \
                "$(json_null_or "$(info_get "$id" yappi)")" "$(json_null_or "$(info_get "$id" coverage)")" \
                "$(json_null_or "$(info_get "$id" line_profiler)")" "$(json_null_or "$(info_get "$id" coverage_ctracer)")"
        else
            local mark=""
            [ $src = expected ] && mark='*'
            local stat=$ST
            [ -n "$WHY" ] && stat+=": $WHY"
            [ "$ST" = ready ] && [ "$(recorder_state "$id")" = stale ] && stat+=" (recorder sources changed: ci/envs.sh build $id)"
            [ -n "$pyver" ] && is_debug "$id" && pyver+=d
            printf '%-14s %-6s %-8s %-44s %-9s %-9s %s\n' "$id" "${KIND[$id]}" "${pyver:-${PYV[$id]}}" \
                "$interp" "${gl%% *}$mark" "${gv%% *}$mark" "$stat"
        fi
    done
    if [ $json = 1 ]; then printf '\n]\n'; else say "(* expected version, not yet seen in the environment)"; fi
}

# --------------------------------------------------------------------------
# Steps with progress
# --------------------------------------------------------------------------
LOGS=$CACHE/logs
FAILED_STEP="" FAILED_CMD="" FAILED_LOG=""

# step ENV NAME LOG [--show TEXT] -- CMD...: run CMD with its output in
# LOG, showing the elapsed time; on failure print the log's tail, the step
# and the command (TEXT: the shell command equivalent to an internal step).
step() {
    local env=$1 name=$2 log=$3 shown=""; shift 3
    if [ "${1:-}" = --show ]; then shown=$2; shift 2; fi
    [ "${1:-}" = -- ] && shift
    mkdir -p "$(dirname "$log")"
    if [ -z "$shown" ]; then
        if declare -F "$1" >/dev/null; then shown="ci/envs.sh provision $env"
        else shown=$(printf '%q ' "$@"); shown=${shown% }; fi
    fi
    { printf '# %s  %s: %s\n' "$(date -u +%FT%TZ)" "$env" "$name"; printf '$ %s\n' "$shown"; } >> "$log"
    local t0=$SECONDS tty=0 next=30 el rc
    [ -t 1 ] && tty=1
    printf '[%s] %s ...' "$env" "$name"
    "$@" >> "$log" 2>&1 < /dev/null &
    local pid=$! tick=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ $tick -lt 20 ]; then sleep 0.1; else sleep 1; fi
        tick=$((tick + 1))
        el=$((SECONDS - t0))
        if [ $tty = 1 ] && [ $tick -ge 20 ]; then printf '\r[%s] %s ... %ds' "$env" "$name" "$el"
        elif [ $tty = 0 ] && [ "$el" -ge $next ]; then printf ' %ds' "$el"; next=$((next + 30)); fi
    done
    wait "$pid"; rc=$?
    el=$((SECONDS - t0))
    [ $tty = 1 ] && printf '\r[%s] %s ...' "$env" "$name"
    if [ $rc -eq 0 ]; then
        printf ' ok (%ds)\n' "$el"
        return 0
    fi
    printf ' FAILED (exit %d after %ds)\n' "$rc" "$el"
    tail -n 15 "$log" | sed 's/^/    | /'
    printf '    step:    %s\n    command: %s\n    log:     %s\n' "$name" "$shown" "$log"
    FAILED_STEP=$name FAILED_CMD=$shown FAILED_LOG=$log
    return 1
}

# Shared steps run once per invocation; their result is remembered.
declare -A ONCE=()
once() {   # KEY ENV NAME LOG -- CMD...
    local key=$1 env=$2 name=$3; shift 3
    if [ -n "${ONCE[$key]:-}" ]; then
        if [ "${ONCE[$key]}" = 0 ]; then return 0; fi
        printf '[%s] %s ... FAILED earlier in this run (%s)\n' "$env" "$name" "${ONCE[$key.log]}"
        FAILED_STEP=$name FAILED_CMD=${ONCE[$key.cmd]} FAILED_LOG=${ONCE[$key.log]}
        return 1
    fi
    step "$env" "$name" "$@"; local rc=$?
    ONCE[$key]=$rc ONCE[$key.cmd]=$FAILED_CMD ONCE[$key.log]=$FAILED_LOG
    return $rc
}

# Host packages the selected environments need (installed only if missing).
host_packages_for() {
    local id
    printf '%s\n' make gcc libc6-dev zlib1g-dev libzstd-dev python3
    for id in "$@"; do
        case "${KIND[$id]}" in
            host) printf '%s\n' python3-dev python3-greenlet python3-gevent "${HOST_PROFILERS[@]}"
                  is_debug "$id" && printf '%s\n' "python$(pyv_base "$id")-dbg" ;;
            root) printf '%s\n' mmdebstrap ;;
        esac
    done
}
missing_packages() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
    done
}
host_install() {
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends "$@"
}

# Fetch SUITE's python3-greenlet .deb and extract it into the cache.
greenlet_extract_show() {
    printf 'cd %q && APT_CONFIG=%q apt-get download python3-greenlet && dpkg -x python3-greenlet_*.deb %q' \
        "$CACHE/debs/$1" "$(aptdir "$1")/apt.conf" "$CACHE/greenlet/$1"
}
greenlet_extract() {
    local s=$1 deb dir
    dir=$CACHE/greenlet/$s
    mkdir -p "$CACHE/debs/$s"
    rm -f "$CACHE/greenlet/$s.stamp"
    (cd "$CACHE/debs/$s" && rm -f python3-greenlet_*.deb && suite_apt "$s" apt-get download -q python3-greenlet) || return 1
    deb=$(ls "$CACHE/debs/$s"/python3-greenlet_*.deb | head -n 1)
    [ -n "$deb" ] || { err "apt-get download left no .deb"; return 1; }
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$CACHE/greenlet"
    dpkg -x "$deb" "$dir.tmp" || return 1
    mv "$dir.tmp" "$dir"
    basename "$deb" > "$CACHE/greenlet/$s.stamp"
    say "extracted $(basename "$deb") into $dir"
}

# Check that the extracted greenlet imports into ID's interpreter.
greenlet_verify() {
    local id=$1 s v
    s=$(deb_suite "$id")
    v=$(cd / && PYTHONPATH="$CACHE/greenlet/$s/usr/lib/python3/dist-packages" \
        "$(interp_words "$id")" -c 'import greenlet; print(greenlet.__version__)') || return 1
    say "greenlet $v imports into $(interp_words "$id")"
}

# Remove a half-built or outdated root of SUITE (never one with mounts).
root_remove() {
    local s=$1 r d
    r=$(rootdir "$s")
    rm -f "$r.stamp"
    for d in "$r" "$r.building"; do
        [ -e "$d" ] || continue
        if findmnt -rn -o TARGET | grep -q "^$d\(/\|$\)"; then
            err "$d has mounts on it; unmount them before rebuilding"; return 1
        fi
        say "removing the half-built or outdated root $d"
        rm -rf --one-file-system "$d" || return 1
    done
}

# The mmdebstrap command that builds SUITE's root into ROOT.building.
mmdebstrap_cmd() {
    local s=$1 mirror
    mirror=$(host_mirror) || { err "cannot find the Debian mirror in the host's apt sources (set GREENREPLAY_MIRROR)"; return 1; }
    printf '%s\n' mmdebstrap --mode=root --variant=apt \
        "--include=$(root_install_list "$s" | paste -sd, -)" \
        '--aptopt=Acquire::Check-Valid-Until "false"' \
        '--aptopt=Acquire::Check-Date "false"' \
        '--aptopt=APT::Install-Recommends "false"' \
        '--dpkgopt=path-exclude=/usr/share/man/*' \
        '--dpkgopt=path-exclude=/usr/share/locale/*' \
        '--dpkgopt=path-exclude=/usr/share/doc/*' \
        '--dpkgopt=path-include=/usr/share/doc/*/copyright' \
        "$s" "$(rootdir "$s").building" "deb $mirror $s main"
}

# Check the root: each python imports greenlet, gcc runs; then stamp it
# (the stamp is what makes a root "ready").  gevent is only reported: a
# suite's gevent may lack the C modules for one of its pythons.
root_verify() {
    local s=$1 r v out
    r=$(rootdir "$s")
    for v in $(root_pythons "$s"); do
        "$SELF" __enter "$r" -- "/usr/bin/python$v" "$SMOKE" probe || return 1
        "$SELF" __enter "$r" -- "/usr/bin/python$v" -c 'import greenlet' || return 1
    done
    out=$("$SELF" __enter "$r" -- gcc --version) || return 1
    # shellcheck disable=SC2295
    printf '%s\n' "${out%%$'\n'*}"
    # An extended root keeps its built= line: the packages it had (headers,
    # interpreters) did not change, so neither do the environments'
    # definitions and recorder builds (definition()).
    local built="" ext=""
    if [ "${ROOT_EXTENDED[$s]:-}" = 1 ]; then
        built=$(sed -n 's/^built=//p' "$r.stamp" 2>/dev/null)
        ext=$(date -u +%FT%TZ)
    fi
    { root_stamp_want "$s"; printf 'built=%s\n' "${built:-$(date -u +%FT%TZ)}"
      [ -n "$ext" ] && printf 'extended=%s\n' "$ext"
      printf 'size=%s\n' "$(du -sh --one-file-system "$r" | cut -f1)"; } > "$r.stamp.tmp" &&
        mv -f "$r.stamp.tmp" "$r.stamp"
}

# Packages of root_install_list SUITE that the root's stamp does not list.
root_missing() {
    local s=$1 have p
    have=" $(sed -n 's/^packages=//p' "$(rootdir "$s").stamp" 2>/dev/null) "
    for p in $(root_install_list "$s"); do
        case "$have" in *" $p "*) ;; *) printf '%s\n' "$p" ;; esac
    done
}
# root_extend SUITE: install the packages a built root misses (its package
# list grew, e.g. ROOT_OPTIONAL) with the root's own apt, from the same
# mirror mmdebstrap used; its lists and downloaded .debs are removed again.
# Much faster than a rebuild, and the result holds the same packages as a
# root built from scratch with the longer list.
declare -A ROOT_EXTENDED=()
root_extend_show() {
    printf 'ci/envs.sh __enter %s -- sh -c "apt-get update && apt-get install --no-install-recommends %s"' \
        "$(rootdir "$1")" "$(root_missing "$1" | paste -sd' ' -)"
}
root_extend() {
    local s=$1 miss
    mapfile -t miss < <(root_missing "$s")
    [ ${#miss[@]} -gt 0 ] || { say "root $s already holds every package"; return 0; }
    say "installing into the root of $s: ${miss[*]}"
    # shellcheck disable=SC2016
    "$SELF" __enter "$(rootdir "$s")" -- /bin/sh -c '
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q && apt-get install -y -q --no-install-recommends "$@"
        rc=$?
        apt-get clean; rm -rf /var/lib/apt/lists/*
        exit $rc' root-extend "${miss[@]}"
}
root_verify_show() {
    local v
    printf 'ci/envs.sh run %s -- python -c "import greenlet"' "$(for v in "${IDS[@]}"; do
        [ "${KIND[$v]}" = root ] && [ "${WHERE[$v]}" = "$1" ] && { echo "$v"; break; }; done)"
}

# Make SUITE's root ready (under a lock: another provision may be at it).
root_ensure() {
    local id=$1 s=$2 r lk log state
    r=$(rootdir "$s")
    log=$LOGS/root-$s.log
    mkdir -p "$ROOTS"
    exec {lk}> "$ROOTS/$s.lock"
    if ! flock -n "$lk"; then
        printf '[%s] waiting for another ci/envs.sh to finish root %s ...\n' "$id" "$s"
        flock "$lk"
    fi
    state=$(root_state "$s")
    if [ "$state" = ready ]; then
        printf '[%s] root %s: ready (%s)\n' "$id" "$s" "$(sed -n 's/^size=//p' "$r.stamp")"
        exec {lk}>&-
        return 0
    fi
    local pk cmd rc=1
    if once "apt:$s" "$id" "apt lists of $s" "$log" --show "APT_CONFIG=$(aptdir "$s")/apt.conf apt-get update --error-on=any" -- suite_update "$s"; then
        # In this shell, not a step: ROOT_LACKS must outlive it.
        [ -n "${ROOT_LACKS[$s]+x}" ] || optional_lookup "$s" >> "$log" 2>&1
        [ -z "${ROOT_LACKS[$s]}" ] || printf '[%s] root %s: the suite has no %s (skipped)\n' "$id" "$s" "${ROOT_LACKS[$s]}"
    else
        exec {lk}>&-
        return 1
    fi
    mapfile -t pk < <(root_install_list "$s")
    # A built root whose package list grew: install what it misses.
    if [ "$state" = changed ] && [ -z "${ONCE[root:$s]:-}" ]; then
        printf '[%s] root %s: package list changed, extending it\n' "$id" "$s"
        ROOT_EXTENDED[$s]=1
        if once "names:$s" "$id" "package names in $s" "$log" \
                --show "APT_CONFIG=$(aptdir "$s")/apt.conf apt-cache policy ${pk[*]}" -- suite_check_packages "$s" "${pk[@]}" &&
           once "rootx:$s" "$id" "root $s (install missing packages)" "$log" --show "$(root_extend_show "$s")" -- root_extend "$s" &&
           once "rootv:$s" "$id" "root $s check" "$log" --show "$(root_verify_show "$s")" -- root_verify "$s"; then
            exec {lk}>&-
            return 0
        fi
        printf '[%s] root %s: extending failed; `ci/envs.sh clean --roots %s` and provision again rebuild it\n' "$id" "$s" "$id"
        exec {lk}>&-
        return 1
    fi
    if once "names:$s" "$id" "package names in $s" "$log" \
            --show "APT_CONFIG=$(aptdir "$s")/apt.conf apt-cache policy ${pk[*]}" -- suite_check_packages "$s" "${pk[@]}"; then
        cmd=(true)
        if [ -z "${ONCE[root:$s]:-}" ]; then
            printf '[%s] root %s: %s, building it\n' "$id" "$s" "$state"
            if ! root_remove "$s" >> "$log" 2>&1 || ! mapfile -t cmd < <(mmdebstrap_cmd "$s") || [ ${#cmd[@]} -eq 0 ]; then
                printf '[%s] root %s: cannot start (see %s)\n' "$id" "$s" "$log"
                ONCE[root:$s]=1 ONCE[root:$s.log]=$log ONCE[root:$s.cmd]="ci/envs.sh provision $id"
            fi
        fi
        # Steps already run in this invocation return their remembered result.
        once "root:$s" "$id" "root $s (mmdebstrap)" "$log" -- "${cmd[@]}" &&
            { [ ! -d "$r.building" ] || mv "$r.building" "$r"; } &&
            once "rootv:$s" "$id" "root $s check" "$log" --show "$(root_verify_show "$s")" -- root_verify "$s"
        rc=$?
    fi
    exec {lk}>&-
    return $rc
}

# apt-get update for SUITE's private configuration, once (the mirror is a
# dated snapshot: its lists do not change).
suite_update() {
    local s=$1 d
    d=$(aptdir "$s")
    suite_apt_config "$s" || return 1
    [ -f "$d/updated" ] && { say "lists of $s already fetched"; return 0; }
    suite_apt "$s" apt-get update -q --error-on=any || return 1
    date -u +%FT%TZ > "$d/updated"
}

# --------------------------------------------------------------------------
# Build, probe, smoke
# --------------------------------------------------------------------------
# The make command that builds ID's recorder (run on the host, or in the root).
build_cmd() {
    local id=$1 d
    d=$(envdir "$id")
    case "${KIND[$id]}" in
        root) printf '%s\n' "$SELF" __enter "$(rootdir "${WHERE[$id]}")" -- \
                make -C "$REPO" ext "PYTHON=/usr/bin/python${PYV[$id]}" "BUILD=$d/build" CC=gcc ;;
        *) printf '%s\n' make -C "$REPO" ext "PYTHON=$(interp_words "$id" | paste -sd' ' -)" "BUILD=$d/build" ;;
    esac
}

probe_env() {   # ID: write $WORK/ID/info
    local id=$1 d out
    d=$(envdir "$id")
    out=$(cd / && "$d/bin/python" "$SMOKE" probe) || return 1
    printf '%s\n' "$out" > "$d/info"
    printf '%s\n' "$out"
    case "$(sed -n 's/^recorder=//p' "$d/info")" in
        none*) err "the recorder does not import"; return 1 ;;
    esac
    local gl
    gl=$(sed -n 's/^greenlet=//p' "$d/info")
    case "$gl" in broken*) err "greenlet is broken: $gl"; return 1 ;; esac
    if [ "${GLEXP[$id]}" != none ] && [ "${GLEXP[$id]}" != '?' ] && [ "$gl" = none ]; then
        err "greenlet ${GLEXP[$id]} was expected but does not import"; return 1
    fi
    if [ "${GLEXP[$id]}" != '?' ] && [ "$gl" != "${GLEXP[$id]}" ]; then
        say "note: greenlet $gl, ${GLEXP[$id]} expected (ci/envs.conf)"
    fi
}

smoke_env() {   # ID: record the smoke program and check the trace on the host
    local id=$1 d out gl rc
    d=$(envdir "$id")
    out=$d/smoke.grt
    rm -f "$out" "$out.times"
    # The trace is checked by the C reader (envs-smoke.py check runs dump).
    [ -x "$CLI" ] || make -s -C "$REPO" cli >/dev/null || say "warning: make cli failed"
    if [ -x "$CLI" ]; then
        say "\$ build/greenreplay record --manual -o $out -- $d/bin/python $SMOKE record"
        GREENREPLAY_PYTHONPATH="$d/build/python" "$CLI" record --manual -o "$out" -- "$d/bin/python" "$SMOKE" record || return 1
    else
        say "(build/greenreplay not built: running the interpreter with GREENREPLAY_OUTPUT)"
        GREENREPLAY_OUTPUT=$out PYTHONHASHSEED=0 "$d/bin/python" "$SMOKE" record || return 1
    fi
    gl=$(sed -n 's/^greenlet=//p' "$d/info" 2>/dev/null)
    local flag=()
    [ -n "$gl" ] && [ "$gl" != none ] && flag=(--greenlet)
    "$HOST_PY" "$SMOKE" check "$out" "${flag[@]}" --cli "$CLI" > "$d/smoke.txt"; rc=$?
    cat "$d/smoke.txt"
    [ $rc -eq 0 ] || return 1
    if [ -x "$CLI" ]; then
        "$CLI" dump "$out"; rc=$?
        [ $rc -eq 0 ] || say "warning: build/greenreplay dump exited $rc (the trace passed envs-smoke.py check)"
    fi
    return 0
}

# Prerequisites of one environment (root, greenlet .deb).
prepare_env() {
    local id=$1 s
    [ "${KIND[$id]}" = root ] && { root_ensure "$id" "${WHERE[$id]}" || return 1; }
    s=$(deb_suite "$id")
    if [ -n "$s" ]; then
        if [ ! -f "$CACHE/greenlet/$s.stamp" ]; then
            once "apt:$s" "$id" "apt lists of $s" "$LOGS/greenlet-$s.log" \
                --show "APT_CONFIG=$(aptdir "$s")/apt.conf apt-get update --error-on=any" -- suite_update "$s" || return 1
            once "deb:$s" "$id" "greenlet from $s (apt-get download, dpkg -x)" "$LOGS/greenlet-$s.log" \
                --show "$(greenlet_extract_show "$s")" -- greenlet_extract "$s" || return 1
        else
            printf '[%s] greenlet from %s: %s\n' "$id" "$s" "$(cat "$CACHE/greenlet/$s.stamp")"
        fi
        step "$id" "greenlet imports" "$LOGS/$id.log" \
            --show "PYTHONPATH=$CACHE/greenlet/$s/usr/lib/python3/dist-packages $(interp_words "$id") -c 'import greenlet'" \
            -- greenlet_verify "$id" || return 1
    fi
    return 0
}

build_env() {   # ID: build, wrapper, probe
    local id=$1 d c
    d=$(envdir "$id")
    mkdir -p "$d"
    if [ "$(cat "$d/definition" 2>/dev/null)" != "$(definition "$id")" ]; then
        rm -rf "$d/build" "$d/ready"
        definition "$id" > "$d/definition"
    fi
    mapfile -t c < <(build_cmd "$id")
    # A failed build or probe takes the environment out of "ready".
    step "$id" "build recorder" "$LOGS/$id.log" -- "${c[@]}" || { rm -f "$d/ready"; return 1; }
    write_wrapper "$id"
    step "$id" "probe" "$LOGS/$id.log" --show "$d/bin/python $SMOKE probe" -- probe_env "$id" ||
        { rm -f "$d/ready"; return 1; }
}

# The environment passed its smoke test with the current build.
mark_ready() {
    local d
    d=$(envdir "$1")
    { cat "$d/info"; printf 'provisioned=%s\n' "$(date -u +%FT%TZ)"; } > "$d/ready"
}

# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------
RESULT_OK=() RESULT_FAIL=() RESULT_UNAV=()

check_available() {   # ID: 0 usable, 1 unavailable (prints why)
    env_status "$1"
    if [ "$ST" = unavailable ]; then
        printf '[%s] unavailable: %s\n' "$1" "$WHY"
        return 1
    fi
}

provision_one() {
    local id=$1 t0=$SECONDS d
    d=$(envdir "$id")
    FAILED_STEP="" FAILED_CMD="" FAILED_LOG=""
    if ! check_available "$id"; then RESULT_UNAV+=("$id: $WHY"); return; fi
    if prepare_env "$id" && build_env "$id" &&
       step "$id" "smoke test" "$LOGS/$id.log" --show "ci/envs.sh smoke $id" -- smoke_env "$id"; then
        mark_ready "$id"
        printf '[%s] ready (%ds): %s\n' "$id" $((SECONDS - t0)) "$(cat "$d/smoke.txt" 2>/dev/null)"
        RESULT_OK+=("$id")
    else
        printf '    retry:   ci/envs.sh provision %s\n' "$id"
        RESULT_FAIL+=("$id: step '$FAILED_STEP' failed; command: $FAILED_CMD; log: $FAILED_LOG; retry: ci/envs.sh provision $id")
    fi
}

cmd_provision() {
    local sel=() id t0=$SECONDS
    for id in "$@"; do need_known "$id"; sel+=("$id"); done
    [ ${#sel[@]} -gt 0 ] || sel=("${IDS[@]}")
    mkdir -p "$CACHE" "$LOGS" "$WORK" || die $EX_FAIL "cannot create the cache $CACHE"
    say "provision: ${#sel[@]} environment(s); cache $CACHE; logs in $LOGS"
    # Host packages, once, before anything else.
    local need=() avail=()
    for id in "${sel[@]}"; do env_status "$id"; [ "$ST" = unavailable ] || avail+=("$id"); done
    local want
    mapfile -t want < <(host_packages_for "${avail[@]}" | sort -u)
    mapfile -t need < <(missing_packages "${want[@]}")
    if [ ${#need[@]} -gt 0 ]; then
        step host "host packages (${need[*]})" "$LOGS/host-packages.log" -- host_install "${need[@]}" || {
            printf '    retry:   apt-get update && apt-get install %s\n' "${need[*]}"
            for id in "${sel[@]}"; do RESULT_FAIL+=("$id: step 'host packages' failed; retry: apt-get install ${need[*]}"); done
            provision_summary "$t0"; return
        }
    fi
    for id in "${sel[@]}"; do provision_one "$id"; done
    provision_summary "$t0"
}

provision_summary() {
    local t0=$1 x
    say "summary (${SECONDS}s total, $((SECONDS - t0))s provisioning):"
    for x in "${RESULT_OK[@]}"; do say "  ready        $x"; done
    for x in "${RESULT_UNAV[@]}"; do say "  unavailable  $x"; done
    for x in "${RESULT_FAIL[@]}"; do say "  FAILED       $x"; done
    [ ${#RESULT_FAIL[@]} -eq 0 ] || exit $EX_FAIL
    [ ${#RESULT_UNAV[@]} -eq 0 ] || exit $EX_UNAVAILABLE
    exit $EX_OK
}

# For build/smoke/run: the env must be usable and its prerequisites present.
need_prepared() {
    local id=$1
    env_status "$id"
    case "$ST" in
        unavailable) die $EX_UNAVAILABLE "$id is unavailable: $WHY" ;;
        ready) return 0 ;;
    esac
    case "$WHY" in
        root*) die $EX_UNAVAILABLE "$id is not provisioned: $WHY (ci/envs.sh provision $id)" ;;
    esac
    return 0
}

cmd_build() {
    [ $# -gt 0 ] || die $EX_USAGE "build: which environment? (ci/envs.sh list)"
    local id rc=0
    for id in "$@"; do need_known "$id"; done
    mkdir -p "$LOGS"
    for id in "$@"; do
        need_prepared "$id"
        build_env "$id" || rc=$EX_FAIL
    done
    exit $rc
}

cmd_smoke() {
    [ $# -gt 0 ] || die $EX_USAGE "smoke: which environment?"
    local id rc=0
    for id in "$@"; do need_known "$id"; done
    mkdir -p "$LOGS"
    for id in "$@"; do
        need_prepared "$id"
        [ -x "$(envdir "$id")/bin/python" ] && [ -f "$(envdir "$id")/info" ] || build_env "$id" || { rc=$EX_FAIL; continue; }
        step "$id" "smoke test" "$LOGS/$id.log" --show "ci/envs.sh smoke $id" -- smoke_env "$id" ||
            { rm -f "$(envdir "$id")/ready"; rc=$EX_FAIL; continue; }
        env_status "$id"
        [ "$WHY" = "recorder not built and smoke-tested for this clone" ] && mark_ready "$id"
        printf '[%s] %s\n' "$id" "$(cat "$(envdir "$id")/smoke.txt")"
    done
    exit $rc
}

cmd_python() {
    local inner=0
    [ "${1:-}" = --inner ] && { inner=1; shift; }
    [ $# -eq 1 ] || die $EX_USAGE "usage: ci/envs.sh python [--inner] ID"
    need_known "$1"
    env_status "$1"
    [ "$ST" != unavailable ] || die $EX_UNAVAILABLE "$1 is unavailable: $WHY"
    if [ $inner = 1 ]; then interp_words "$1" | paste -sd' ' -; return; fi
    # A wrapper is printed only when it runs ID's interpreter with ID's own
    # recorder: ready, or built (`build ID`) for the current definition but
    # not smoke-tested yet (a note says so).  Otherwise nothing on stdout, so
    # "$(ci/envs.sh python ID)" is empty, and one line on how to provision.
    local d
    d=$(envdir "$1")
    if [ "$ST" != ready ]; then
        if [ "$WHY" = "recorder not built and smoke-tested for this clone" ] && [ -n "$(recorder_so "$1")" ]; then
            [ "$(cat "$d/definition" 2>/dev/null)" = "$(definition "$1")" ] ||
                die $EX_UNAVAILABLE "$1 is not provisioned yet (definition changed since its build): run ci/envs.sh provision $1"
            err "note: $1 is built but not smoke-tested yet (ci/envs.sh provision $1 makes it ready)"
        else
            die $EX_UNAVAILABLE "$1 is not provisioned yet ($WHY): run ci/envs.sh provision $1"
        fi
    fi
    write_wrapper "$1"
    printf '%s\n' "$d/bin/python"
}

# Rewrite a leading python/python3/pythonX.Y into the environment's interpreter.
RUN_CMD=()
resolve_cmd() {
    local id=$1; shift
    RUN_CMD=("$@")
    case "$1" in
        python|python3|"python${PYV[$id]}")
            mapfile -t RUN_CMD < <(interp_words "$id")
            RUN_CMD+=("${@:2}") ;;
    esac
}

cmd_run() {
    [ $# -ge 1 ] || { err "usage: ci/envs.sh run ID [--] CMD [ARGS...]"; exit $EX_RUN_ENV; }
    local id=$1; shift
    [ "${1:-}" = -- ] && shift
    known "$id" || { err "unknown environment '$id'"; exit $EX_RUN_ENV; }
    [ $# -ge 1 ] || { err "run: no command given"; exit $EX_RUN_ENV; }
    env_status "$id"
    case "$ST" in
        unavailable) err "$id is unavailable: $WHY"; exit $EX_RUN_ENV ;;
        "not provisioned")
            case "$WHY" in
                root*) err "$id is not provisioned: $WHY (ci/envs.sh provision $id)"; exit $EX_RUN_ENV ;;
                *) err "note: $id: $WHY (ci/envs.sh build $id)" ;;
            esac ;;
    esac
    local d pp inner
    d=$(envdir "$id")
    [ -x "$d/bin/python" ] || write_wrapper "$id"
    pp=$(env_pp "$id")
    inner=$(interp_words "$id" | paste -sd' ' -)
    export PYTHONPATH="$pp${PYTHONPATH:+:$PYTHONPATH}" GREENREPLAY_ENV=$id GREENREPLAY_PYTHON=$inner
    resolve_cmd "$id" "$@"
    if [ "${KIND[$id]}" = root ]; then
        exec "$SELF" __enter "$(rootdir "${WHERE[$id]}")" -- "${RUN_CMD[@]}"
    fi
    export PATH="$d/bin:$PATH"
    exec "${RUN_CMD[@]}"
}

# record ID [greenreplay record options] -- SCRIPT [ARGS...]
cmd_record() {
    [ $# -ge 1 ] || { err "usage: ci/envs.sh record ID [-o FILE] [--times] [--root DIR] [--manual] -- SCRIPT [ARGS...]"; exit $EX_RUN_ENV; }
    local id=$1; shift
    known "$id" || { err "unknown environment '$id'"; exit $EX_RUN_ENV; }
    local opts=() out="" times=0 root="" manual=0
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case "$1" in
            -o|--output) out=${2:-}; opts+=("$1" "${2:-}"); shift 2 ;;
            --times) times=1; opts+=("$1"); shift ;;
            --root) root=${2:-}; opts+=("$1" "${2:-}"); shift 2 ;;
            --manual) manual=1; opts+=("$1"); shift ;;
            *) err "record: unknown option $1"; exit $EX_RUN_ENV ;;
        esac
    done
    [ "${1:-}" = -- ] && shift
    [ -n "$out" ] && [ $# -ge 1 ] || { err "record: need -o FILE and, after --, SCRIPT"; exit $EX_RUN_ENV; }
    env_status "$id"
    [ "$ST" != unavailable ] || { err "$id is unavailable: $WHY"; exit $EX_RUN_ENV; }
    local d
    d=$(envdir "$id")
    [ -n "$(recorder_so "$id")" ] || { err "the recorder is not built for $id (ci/envs.sh build $id)"; exit $EX_RUN_ENV; }
    [ -x "$d/bin/python" ] || write_wrapper "$id"
    if [ -x "$CLI" ]; then
        GREENREPLAY_PYTHONPATH="$d/build/python" exec "$CLI" record "${opts[@]}" -- "$d/bin/python" "$@"
    fi
    # No C CLI yet: what `greenreplay record` does, done here.
    case "$out" in /*) ;; *) out=$PWD/$out ;; esac
    export GREENREPLAY_OUTPUT=$out GREENREPLAY_TIMES=$times PYTHONHASHSEED=${PYTHONHASHSEED:-0}
    [ -n "$root" ] && export GREENREPLAY_ROOT=$root
    if [ $manual = 1 ]; then exec "$d/bin/python" "$@"; fi
    exec "$d/bin/python" -m greenreplay "$@"
}

cmd_clean() {
    local roots=0 id s
    [ "${1:-}" = --roots ] && { roots=1; shift; }
    [ $# -gt 0 ] || die $EX_USAGE "clean: which environment? (clean --roots ID also removes its root)"
    for id in "$@"; do need_known "$id"; done
    for id in "$@"; do
        rm -rf "$(envdir "$id")" && say "removed $(envdir "$id")"
        if [ $roots = 1 ]; then
            s=$(suite_of "$id")
            [ -n "$s" ] || s=$(deb_suite "$id")
            [ -n "$s" ] || continue
            if findmnt -rn -o TARGET | grep -q "^$(rootdir "$s")\(/\|$\)"; then
                err "$(rootdir "$s") has mounts on it; not removed"; continue
            fi
            rm -rf --one-file-system "$(rootdir "$s")" "$(rootdir "$s").building" "$(rootdir "$s").stamp" \
                "$CACHE/greenlet/$s" "$CACHE/greenlet/$s.stamp" && say "removed the root and greenlet of $s"
        fi
    done
}

main() {
    # Internal entry points (used by wrappers and steps): no registry needed.
    case "${1:-}" in
        __enter) shift; cmd_enter "$@"; exit $EX_RUN_ENV ;;
        __chroot) shift; cmd_chroot "$@"; exit $EX_RUN_ENV ;;
    esac
    local cmd
    # Everything after the first `--` belongs to the command run.
    local pre=() post=() seen=0 a
    for a in "$@"; do
        if [ $seen = 1 ]; then post+=("$a"); elif [ "$a" = -- ]; then seen=1; else pre+=("$a"); fi
    done
    parse_global "${pre[@]}"
    set -- "${ARGS[@]}"
    [ $seen = 1 ] && set -- "$@" -- "${post[@]}"
    cmd=${1:-help}
    [ $# -gt 0 ] && shift
    case "$cmd" in
        help|-h|--help) usage; exit 0 ;;
    esac
    load_envs
    case "$cmd" in
        # Internal (tests): the packages SUITE's root wants, one a line.
        __root_packages) [ $# -eq 1 ] || die $EX_USAGE "usage: ci/envs.sh __root_packages SUITE"
                         root_packages "$1"; exit 0 ;;
        list) cmd_list "$@" ;;
        provision) cmd_provision "$@" ;;
        build) cmd_build "$@" ;;
        smoke) cmd_smoke "$@" ;;
        run) cmd_run "$@" ;;
        record) cmd_record "$@" ;;
        python) cmd_python "$@" ;;
        clean) cmd_clean "$@" ;;
        *) err "unknown command '$cmd'"; usage >&2; exit $EX_USAGE ;;
    esac
}

main "$@"
