#!/usr/bin/env bash
# tests/integration/root_packages.sh - when ci/envs.sh calls a Debian root
# ready, and when its package list changed (so that `provision` installs
# the missing packages into it), from the root's stamp alone: a fake root
# in a temporary cache, nothing is built, entered or downloaded.
#
# usage: tests/integration/root_packages.sh
#
# Cases (sid-3.14's root, whose wanted packages `ci/envs.sh __root_packages
# sid` prints): the wanted list holds the profilers and greenlet's test
# dependencies; no root; a stamp with every package, or more (ready as far
# as the root goes); one optional package (python3-yappi) missing: changed;
# the same but named in the stamp's lacks= line (the suite has no such
# package): ready; a required package (python3-greenlet) missing while
# another is lacked: changed.  Needs root (roots are unavailable
# otherwise: skipped).
# Output: one PASS/FAIL line per case, then "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
E=$ROOT/ci/envs.sh
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    echo "SKIP  Debian roots need root and unshare"; echo "0 passed, 0 failed"; exit 0
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/gr-rootpk.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GREENREPLAY_CACHE=$W/cache
NPASS=0 NFAIL=0
ok() { echo "PASS  $*"; NPASS=$((NPASS + 1)); }
bad() { echo "FAIL  $*"; NFAIL=$((NFAIL + 1)); }

mapfile -t WANT < <("$E" __root_packages sid)
have() { [[ " ${WANT[*]} " == *" $1 "* ]]; }
if have python3-yappi && have python3-coverage && have python3-line-profiler &&
   have python3-objgraph && have python3-psutil && have python3-greenlet && have python3.14-dev; then
    ok "sid's root wants the profilers, greenlet's test dependencies and its pythons"
else
    bad "sid's root wants: ${WANT[*]}"
fi

# reason STAMP_PACKAGES LACKS: the list --json reason of sid-3.14.
reason() {
    local r=$W/cache/roots/sid
    mkdir -p "$r"
    printf 'packages=%s \nlacks=%s\nbuilt=2026-01-01T00:00:00Z\nsize=1M\n' "$1" "$2" >"$r.stamp"
    "$E" list --json sid-3.14 | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["reason"])'
}
without() { local p out=(); for p in "${WANT[@]}"; do [ "$p" = "$1" ] || out+=("$p"); done; printf '%s' "${out[*]}"; }

r=$("$E" list --json sid-3.14 | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["reason"])')
[ "$r" = "root sid not built" ] && ok "no root: not built" || bad "no root: $r"
r=$(reason "${WANT[*]}" "")
[[ $r != root* ]] && ok "every package: the root is ready ($r)" || bad "every package: $r"
r=$(reason "${WANT[*]} python3-extra" "")
[[ $r != root* ]] && ok "more packages than wanted: ready" || bad "superset: $r"
r=$(reason "$(without python3-yappi)" "")
[ "$r" = "root sid package list changed (provision installs the missing packages)" ] &&
    ok "an optional package missing: changed, provision extends it" || bad "yappi missing: $r"
r=$(reason "$(without python3-yappi)" "python3-yappi")
[[ $r != root* ]] && ok "missing but in lacks= (the suite has none): ready" || bad "yappi lacked: $r"
r=$(reason "$(without python3-greenlet)" "python3-yappi")
[[ $r == *"package list changed"* ]] && ok "a required package missing: changed" || bad "greenlet missing: $r"
echo "$NPASS passed, $NFAIL failed"
[ "$NFAIL" -eq 0 ]
