#!/usr/bin/env bash
# tests/integration/gen_finalize.sh --python PY: `diff --ignore gen-finalize`
# on real recordings of tests/integration/programs/gen_gc.py (generators
# finalized by `del`, by the garbage collector and by their frame's
# return) made with PY (3.9-3.12: extra call/return pairs) and with a 3.13+
# interpreter without them: GR_PY313 (default: pyenv's 3.13.0; greenlet not
# needed).  Skipped when either interpreter is missing or on the same side.
# The recorder is built for GR_PY313 (make ext PYTHON=...) if needed.
# One line per test, then "N passed, N failed[, N skipped]".  Exit 1 if any
# failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init genfin "$@"
PY=$GR_PY cli=$GR_CLI work=$GR_WORK here=$GR_ROOT/tests/integration top=$GR_ROOT
PY313=${GR_PY313:-$HOME/.pyenv/versions/3.13.0/bin/python3.13}
minor() { "$1" -c 'import sys; print(sys.version_info[1])' 2>/dev/null; }
a=$(minor "$PY") b=$(minor "$PY313")
[ -n "$a" ] && [ -n "$b" ] || gr_skip_all "gen-finalize on real recordings: $PY or $PY313 missing"
[ "$a" -le 12 ] && [ "$b" -ge 13 ] || gr_skip_all "gen-finalize on real recordings: needs 3.9-3.12 and 3.13+ (have 3.$a, 3.$b)"
make -C "$top" -s ext PYTHON="$PY313" >"$work/build.log" 2>&1 ||
    gr_skip_all "gen-finalize on real recordings: the recorder does not build for $PY313"
prog=$here/programs/gen_gc.py
for side in a:"$PY" b:"$PY313"; do
    (cd "$here/programs" && "$cli" record --manual -o "$work/${side%%:*}.grt" -- "${side#*:}" "$prog") \
        >"$work/${side%%:*}.log" 2>&1
done
"$cli" diff "$work/a.grt" "$work/b.grt" >"$work/plain.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q '^-.*CALL .* gen (gen_gc.py' "$work/plain.out"; then
    gr_ok "gen_gc.py, 3.$a vs 3.$b: the finalization pairs differ (exit 1)"
else
    gr_bad "gen_gc.py, 3.$a vs 3.$b: exit $rc, expected 1 with the generator's CALL only in A"
    sed -n '1,20p' "$work/plain.out" "$work/a.log" "$work/b.log" | sed 's/^/      | /'
fi
"$cli" diff --ignore gen-finalize "$work/a.grt" "$work/b.grt" >"$work/ign.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then
    gr_ok "gen_gc.py, 3.$a vs 3.$b, --ignore gen-finalize: same structure ($(grep '^# ignored' "$work/ign.out"))"
else
    gr_bad "gen_gc.py, 3.$a vs 3.$b, --ignore gen-finalize: exit $rc"
    sed -n '1,30p' "$work/ign.out" | sed 's/^/      | /'
fi
gr_tally
