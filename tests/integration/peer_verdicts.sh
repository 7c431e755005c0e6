#!/usr/bin/env bash
# tests/integration/peer_verdicts.sh --python PY: ci/peer.sh's classes of a
# greenlet test that differs recorded and unrecorded, on made-up results.
#
#   - tests/peer/classify.py: the test fails the same way recorded and
#     under an empty profile function without the recorder (same type and
#     first line of the message, addresses aside): PROFILER; the same
#     outcome with another message, or another exception type, or another
#     outcome: RECORDER (the recorder failed it its own way, which the
#     outcome alone hid);
#   - tests/peer/run_suite.py writes, for a failure, the exception's type
#     and the first line of its message (a multi-line assertion message:
#     its first line, not the traceback's last).
# One line per test, then "N passed, N failed".  Exit 1 if any failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init peer "$@"
PY=$GR_PY work=$GR_WORK
classify=$GR_ROOT/tests/peer/classify.py

# tsv FILE OUTCOME DETAIL: one run_suite.py line for test t.T.x.
tsv() { printf 'greenlet.tests.test_x.T.test_y\t%s\t%s\n' "$2" "$3" >"$1"; }

# case NAME WANT REC_OUTCOME REC_DETAIL PROF_OUTCOME PROF_DETAIL
case_() {
    local name=$1 want=$2 got
    tsv "$work/rec.tsv" "$3" "$4"
    tsv "$work/prof.tsv" "$5" "$6"
    got=$("$PY" "$classify" "$work/rec.tsv" "$work/prof.tsv")
    if [ "${got%% *}" = "$want" ]; then
        gr_ok "classify: $name: $got"
    else
        gr_bad "classify: $name: got '$got', want $want"
    fi
}
case_ "same failure" PROFILER fail "AssertionError: 0 != 1" fail "AssertionError: 0 != 1"
case_ "same failure, other address" PROFILER error "RuntimeError: <greenlet.greenlet object at 0x7f1c2a> dead" \
    error "RuntimeError: <greenlet.greenlet object at 0x7f55d0> dead"
case_ "same pass (a rerun that agrees)" PROFILER ok "" ok ""
case_ "other message" RECORDER fail "AssertionError: 0 != 1" fail "AssertionError: 0 != 2"
case_ "other exception type" RECORDER error "SystemError: returned NULL" error "RuntimeError: returned NULL"
case_ "other outcome" RECORDER fail "AssertionError: 0 != 1" ok ""
rm -f "$work/prof.tsv"
tsv "$work/rec.tsv" fail "AssertionError: 0 != 1"
got=$("$PY" "$classify" "$work/rec.tsv" "$work/prof.tsv")
[ "${got%% *}" = RECORDER ] && gr_ok "classify: no result under the empty profile function: $got" ||
    gr_bad "classify: no result under the empty profile function: got '$got', want RECORDER"

# run_suite.py on a module of its own (it loads any test module by name).
if ! "$PY" -c 'import greenlet.tests' >/dev/null 2>&1; then
    echo "SKIP  run_suite: $PY cannot import greenlet.tests"
else
    mkdir -p "$work/mods"
    cat >"$work/mods/peer_probe.py" <<'PYEOF'
import unittest


class T(unittest.TestCase):
    def test_multiline(self):
        self.assertEqual([1, 2, 3], [1, 2, 4])

    def test_error(self):
        raise KeyError("first line\nsecond line")
PYEOF
    (cd "$work" && PYTHONPATH=$work/mods "$PY" "$GR_ROOT/tests/peer/run_suite.py" "$work/suite.tsv" peer_probe) \
        >"$work/suite.log" 2>&1
    ml=$(awk -F'\t' '$1 ~ /test_multiline$/ { print $2 "|" $3 }' "$work/suite.tsv")
    er=$(awk -F'\t' '$1 ~ /test_error$/ { print $2 "|" $3 }' "$work/suite.tsv")
    if [ "$ml" = "fail|AssertionError: Lists differ: [1, 2, 3] != [1, 2, 4]" ] &&
        [ "$er" = "error|KeyError: 'first line\\nsecond line'" ]; then
        gr_ok "run_suite: a failure's type and first line of its message ($ml; $er)"
    else
        gr_bad "run_suite: got '$ml' and '$er'"
        gr_show "$work/suite.tsv" "$work/suite.log"
    fi
fi

gr_tally
