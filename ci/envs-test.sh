#!/usr/bin/env bash
# ci/envs-test.sh - self-test of ci/envs.sh's interface (docs/ENVIRONMENTS.md).
#
# Runs without network and without building roots: it checks the command
# line, exit codes, JSON, user environments and `run` on environments that
# are ready (host and pyenv when provisioned; roots only when their root is
# there).  Prints one line per check and "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
E=ci/envs.sh
pass=0 fail=0
ok() { pass=$((pass + 1)); printf 'PASS  %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL  %s\n' "$1"; }
expect_rc() {   # WANT NAME CMD...
    local want=$1 name=$2; shift 2
    "$@" > /tmp/envs-test.$$ 2>&1
    local rc=$?
    if [ "$rc" = "$want" ]; then ok "$name (exit $rc)"; else bad "$name: exit $rc, want $want"; sed 's/^/      | /' /tmp/envs-test.$$ | tail -5; fi
}

expect_rc 0 "help" $E help
expect_rc 2 "unknown command" $E frobnicate
expect_rc 2 "unknown environment (python)" $E python no-such-env
expect_rc 125 "unknown environment (run)" $E run no-such-env -- python -V
expect_rc 2 "bad --env" $E --env novalue list

if $E list --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
keys = {"id", "kind", "python", "python_version", "interpreter", "command", "suite", "root", "debug",
        "greenlet", "greenlet_from", "gevent", "versions", "status", "reason", "recorder", "pythonpath",
        "profilers"}
assert d and all(set(e) == keys for e in d), "keys"
assert all(set(e["profilers"]) == {"yappi", "coverage", "line_profiler", "coverage_ctracer"} for e in d), "profilers"
assert all(e["status"] in ("ready", "not provisioned", "unavailable") for e in d), "status"
assert {e["kind"] for e in d} >= {"host", "pyenv", "root"}, "kinds"
'; then ok "list --json shape"; else bad "list --json shape"; fi

# User environments: a missing and a failing interpreter are unavailable,
# each with its reason, and do not disturb the others.
out=$($E --env gone=/no/such/python --env fails=/bin/false list --json gone fails host-3.11)
if printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
d = {e["id"]: e for e in json.load(sys.stdin)}
assert d["gone"]["status"] == "unavailable" and "not found" in d["gone"]["reason"]
assert d["fails"]["status"] == "unavailable" and "exit 1" in d["fails"]["reason"]
assert d["host-3.11"]["status"] != "unavailable"
'; then ok "user env errors stay in their env"; else bad "user env errors stay in their env"; fi
expect_rc 3 "provision of an unavailable user env" $E --env gone=/no/such/python provision gone
expect_rc 125 "run in an unavailable user env" $E --env gone=/no/such/python run gone -- python -V

# python ID in a fresh cache, where nothing is provisioned: an environment
# that is known but not provisioned exits 3 (an unknown one 2), prints
# nothing on stdout (so "$(ci/envs.sh python ID)" is empty) and one stderr
# line naming the provision command.  Built with `build` but not yet
# smoke-tested: the wrapper, and a note; its definition changed since: 3.
fresh=$(mktemp -d "${TMPDIR:-/tmp}/envs-test.XXXXXX")
python_in_fresh() {   # NAME WANT_RC WANT_STDERR_PART ARGS...: ci/envs.sh ARGS... in the fresh cache
    local name=$1 want=$2 part=$3 rc out_ok=0; shift 3
    GREENREPLAY_CACHE=$fresh/cache $E "$@" >"$fresh/out" 2>"$fresh/err"; rc=$?
    if [ "$want" = 0 ]; then [ -x "$(cat "$fresh/out")" ] && out_ok=1   # the wrapper's path
    else [ -s "$fresh/out" ] || out_ok=1; fi                            # nothing
    if [ "$rc" = "$want" ] && [ $out_ok = 1 ] && [ "$(wc -l <"$fresh/err")" = 1 ] && grep -qF -- "$part" "$fresh/err"; then
        ok "$name (exit $rc): $(cat "$fresh/err")"
    else
        bad "$name: exit $rc, want $want and one stderr line with '$part'"
        sed 's/^/      | /' "$fresh/out" "$fresh/err" | tail -5
    fi
}
python_in_fresh "python of a host env not provisioned" 3 \
    "host-3.11 is not provisioned yet (recorder not built and smoke-tested for this clone): run ci/envs.sh provision host-3.11" \
    python host-3.11
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    python_in_fresh "python of a root env not provisioned" 3 \
        "sid-3.14 is not provisioned yet (root sid not built): run ci/envs.sh provision sid-3.14" python sid-3.14
fi
python_in_fresh "python of an unknown env" 2 "unknown environment 'no-such-env'" python no-such-env
if GREENREPLAY_CACHE=$fresh/cache $E --env mine=/usr/bin/python3 build mine >"$fresh/build.log" 2>&1; then
    python_in_fresh "python of a built env not smoke-tested: the wrapper" 0 \
        "note: mine is built but not smoke-tested yet" --env mine=/usr/bin/python3 python mine
    python_in_fresh "python of a built env whose definition changed" 3 \
        "mine is not provisioned yet (definition changed since its build): run ci/envs.sh provision mine" \
        --env "mine=/usr/bin/python3 -X dev" python mine
else
    bad "build of a user env in a fresh cache"; tail -5 "$fresh/build.log" | sed 's/^/      | /'
fi
rm -rf "$fresh"

ready=$($E list --json | /usr/bin/python3 -c '
import json, sys
print(" ".join(e["id"] for e in json.load(sys.stdin) if e["status"] == "ready"))')
[ -n "$ready" ] || printf 'note: no environment is ready (ci/envs.sh provision): run checks skipped\n'
for id in $ready; do
    expect_rc 7 "run $id: exit status passes through" $E run "$id" -- python -c 'import sys; sys.exit(7)'
    v=$($E run "$id" -- python -c 'import greenreplay, os; print(os.environ["GREENREPLAY_ENV"], greenreplay._greenreplay.__file__)' 2>&1)
    case "$v" in
        "$id "*"/$id/build/python/"*) ok "run $id: imports its own recorder build" ;;
        *) bad "run $id: recorder import: $v" ;;
    esac
    w=$($E python "$id" 2>/dev/null)
    if [ -x "$w" ] && [ "$("$w" -c 'print(6*7)')" = 42 ]; then ok "python $id: wrapper runs"; else bad "python $id: wrapper $w"; fi
done

rm -f /tmp/envs-test.$$
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ]
