#!/usr/bin/env bash
# tests/integration/pip_install.sh - installing greenreplay as users do.
#
# usage: tests/integration/pip_install.sh [--only host|pyenv|root|make]...
#
#   make   `make install DESTDIR=... PREFIX=/usr`: the CLI, the recorder and
#          the man page land in the staged tree; the staged CLI records a
#          program and checks it; `make uninstall` removes them
#   host   Debian's /usr/bin/python3: a venv with --system-site-packages
#          (greenlet, pytest and pytest-xdist from Debian) and a plain venv,
#          each `pip install .`, then tests/integration/pip_checks.sh: the
#          installed command, the Python API, the pytest plugin (plain venv:
#          no greenlet, so no pytest checks)
#   pyenv  a pyenv interpreter ($GR_PIP_PYENV, default 3.12.1: one without
#          setuptools), plain venv, pip_checks.sh without greenlet
#   root   inside a Debian root of ~/.cache/greenreplay ($GR_PIP_SUITE,
#          default trixie, else bullseye; made by ci/envs.sh provision, never
#          by this test), as a user of that Debian release: apt-get install
#          python3-pip python3-venv libjansson-dev python3-pytest, then a
#          --system-site-packages venv and pip_checks.sh with the pytest
#          checks.  The root itself is not changed: the test runs in an
#          overlay of it whose upper layer is cached in
#          ~/.cache/greenreplay/pip-test (keyed by the root's stamp).
#
# A part whose interpreter or root is missing is skipped with the reason.
# Output: PASS / FAIL / SKIP lines, then "N passed, N failed[, N skipped]".
# Exit status: 0 all passed, 1 a test failed, 2 bad usage.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${GREENREPLAY_CACHE:-$HOME/.cache/greenreplay}
CHECKS=$ROOT/tests/integration/pip_checks.sh
PARTS=()
while [ $# -gt 0 ]; do
    case $1 in
        --only) PARTS+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "pip_install.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#PARTS[@]} -gt 0 ] || PARTS=(make host pyenv root)

WORK=$ROOT/build/pip-test
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
OUT=$WORK/results
: > "$OUT"
pass() { printf 'PASS  %s\n' "$*" | tee -a "$OUT"; }
fail() { printf 'FAIL  %s\n' "$*" | tee -a "$OUT"; }
skip() { printf 'SKIP  %s\n' "$*" | tee -a "$OUT"; }
detail() { awk 'NR <= 30 { print "      | " $0 } NR == 31 { print "      | ..." }'; }
# checks ARGS...: run pip_checks.sh, its result lines counted in $OUT.
checks() { bash "$CHECKS" "$@" | tee -a "$OUT"; }

part_make() {
    local stage=$WORK/stage log=$WORK/make-install.log
    rm -rf "$stage"
    if ! make -C "$ROOT" -s install DESTDIR="$stage" PREFIX=/usr > "$log" 2>&1; then
        fail "make: make install DESTDIR PREFIX=/usr"
        detail < "$log"
        return
    fi
    local f missing=""
    for f in usr/bin/greenreplay usr/share/man/man1/greenreplay.1 \
             usr/lib/greenreplay/python/greenreplay/__init__.py usr/lib/greenreplay/python/greenreplay/api.py; do
        [ -f "$stage/$f" ] || missing+=" $f"
    done
    ls "$stage"/usr/lib/greenreplay/python/greenreplay/_greenreplay*.so >/dev/null 2>&1 || missing+=" _greenreplay*.so"
    if [ -z "$missing" ]; then
        pass "make: make install DESTDIR=... PREFIX=/usr stages bin/greenreplay, lib/greenreplay/python, the man page"
    else
        fail "make: make install left out:$missing"
    fi
    man -l "$stage/usr/share/man/man1/greenreplay.1" > "$WORK/man.txt" 2>/dev/null
    if grep -q "EXIT STATUS" "$WORK/man.txt" || ! command -v man >/dev/null; then
        pass "make: the man page renders"
    else
        fail "make: man -l greenreplay.1 does not render"
    fi
    printf 'import greenreplay\ngreenreplay.mark("m")\nprint("ok")\n' > "$WORK/m.py"
    if (cd "$WORK" && env -i PATH=/usr/bin:/bin "$stage/usr/bin/greenreplay" record -o m.grt -- /usr/bin/python3 m.py &&
        env -i PATH=/usr/bin:/bin "$stage/usr/bin/greenreplay" check m.grt) > "$WORK/make-record.log" 2>&1 &&
       grep -q "^result: clean" "$WORK/make-record.log"; then
        pass "make: the installed CLI finds its recorder in PREFIX/lib/greenreplay/python (record, check)"
    else
        fail "make: record with the installed CLI"
        detail < "$WORK/make-record.log"
    fi
    if make -C "$ROOT" -s uninstall DESTDIR="$stage" PREFIX=/usr > "$log" 2>&1 &&
       [ -z "$(find "$stage" -type f)" ]; then
        pass "make: make uninstall removes every installed file"
    else
        fail "make: make uninstall left: $(find "$stage" -type f | head -5 | tr '\n' ' ')"
    fi
}

part_host() {
    local py=/usr/bin/python3
    [ -x $py ] || { skip "host: no $py"; return; }
    checks --python $py --work "$WORK/host-sys" --repo "$ROOT" --name "host venv --system-site-packages" \
        --system-site-packages --pytest
    checks --python $py --work "$WORK/host-plain" --repo "$ROOT" --name "host plain venv"
}

part_pyenv() {
    local root v py
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for v in ${GR_PIP_PYENV:-3.12.1}; do
        py=$root/versions/$v/bin/python3
        if [ ! -x "$py" ]; then
            skip "pyenv $v: no interpreter at $py"
            continue
        fi
        checks --python "$py" --work "$WORK/pyenv-$v" --repo "$ROOT" --name "pyenv $v plain venv"
    done
}

# part_root: see the header.  The overlay, /proc, /dev and the binds live in
# a private mount namespace that ends with the command.
part_root() {
    local suite="" s r
    for s in ${GR_PIP_SUITE:-trixie bullseye}; do
        r=$CACHE/roots/$s
        if [ -f "$r.stamp" ] && [ -d "$r/usr" ]; then suite=$s; break; fi
    done
    if [ -z "$suite" ]; then
        skip "root: no ready Debian root (${GR_PIP_SUITE:-trixie bullseye}) in $CACHE/roots; ci/envs.sh provision makes them"
        return
    fi
    command -v unshare >/dev/null && command -v chroot >/dev/null ||
        { skip "root: unshare or chroot is missing"; return; }
    [ "$(id -u)" = 0 ] || { skip "root: needs root (mount, chroot)"; return; }
    local key ov scratch lk rc
    key=$(md5sum < "$r.stamp" | cut -c1-12)
    ov=$CACHE/pip-test/$suite-$key
    # Layers made for an earlier build of the root are stale.
    find "$CACHE/pip-test" -mindepth 1 -maxdepth 1 -name "$suite-*" ! -name "$suite-$key*" \
        -exec rm -rf {} + 2>/dev/null
    mkdir -p "$ov/upper" "$ov/work" "$ov/merged"
    scratch=$WORK/root-$suite
    rm -rf "$scratch"
    mkdir -p "$scratch"
    cat > "$scratch/inside.sh" <<EOF
#!/bin/bash
# Inside the root: what a user of Debian $suite installs first.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive
need=""
for p in python3-pip python3-venv libjansson-dev python3-pytest python3-pytest-xdist; do
    dpkg-query -W -f='\${Status}' "\$p" 2>/dev/null | grep -q "install ok installed" || need="\$need \$p"
done
if [ -n "\$need" ]; then
    { apt-get update -q && apt-get install -y -q --no-install-recommends \$need; } > $(printf %q "$scratch/apt.log") 2>&1 ||
        { echo "FAIL  root $suite: apt-get install\$need (log: $scratch/apt.log)"; tail -n 5 $(printf %q "$scratch/apt.log") | sed 's/^/      | /'; exit 1; }
fi
exec bash $(printf %q "$CHECKS") --python /usr/bin/python3 --work $(printf %q "$scratch/w") --repo $(printf %q "$ROOT") \
    --name "root $suite venv --system-site-packages" --system-site-packages --pytest
EOF
    exec {lk}> "$ov.lock"
    flock "$lk"
    unshare --mount --propagation private -- bash -c '
        set -e
        r=$1 ov=$2 repo=$3 scratch=$4
        m=$ov/merged
        mount -t overlay overlay -o "lowerdir=$r,upperdir=$ov/upper,workdir=$ov/work" "$m"
        mount -t proc proc "$m/proc"
        mount --rbind /dev "$m/dev"
        for d in "$repo" "$scratch"; do mkdir -p "$m$d"; mount --bind "$d" "$m$d"; done
        cp /etc/resolv.conf "$m/etc/resolv.conf" 2>/dev/null || true
        exec env -i "$5" "$m" /bin/bash "$scratch/inside.sh"
    ' pip-root "$r" "$ov" "$ROOT" "$scratch" "$(command -v chroot)" 2>&1 | tee -a "$OUT"
    rc=${PIPESTATUS[0]}
    exec {lk}>&-
    if [ "$rc" != 0 ] && ! grep -q "^FAIL  root $suite" "$OUT"; then
        fail "root $suite: could not run inside the root (exit $rc)"
    fi
}

for p in "${PARTS[@]}"; do
    case $p in
        make|host|pyenv|root) "part_$p" ;;
        *) echo "pip_install.sh: unknown part $p (make, host, pyenv, root)" >&2; exit 2 ;;
    esac
done

np=$(grep -c '^PASS' "$OUT") nf=$(grep -c '^FAIL' "$OUT") ns=$(grep -c '^SKIP' "$OUT")
printf '%d passed, %d failed' "$np" "$nf"
[ "$ns" -gt 0 ] && printf ', %d skipped' "$ns"
printf '\n'
[ "$nf" = 0 ]
