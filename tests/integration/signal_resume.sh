#!/usr/bin/env bash
# tests/integration/signal_resume.sh --python PY: a signal handler that
# marks at a function's first instruction, at a generator resumed after a
# yield and at a new greenlet's first instruction
# (tests/integration/programs/signal_resume.py) is checked clean: the call
# of the frame under it comes after the handler, so the profile function
# did not miss it.  Run with PY and with a 3.13+ interpreter, GR_PY313
# (default: pyenv's 3.13.0; greenlet not needed).  3.11 is skipped: it
# checks for signals both before and after the call event at the same
# instruction, so the recorder cannot tell the two (docs/RECORDER.md).
# With greenlet, `signal_resume.py unseen` (the greenlet switched to inside
# a trace function) must still give blind_spot.
# One line per test, then "N passed, N failed[, N skipped]".  Exit 1 if any
# failed.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
gr_script_init sigresume "$@"
PY=$GR_PY cli=$GR_CLI work=$GR_WORK here=$GR_ROOT/tests/integration top=$GR_ROOT
PY313=${GR_PY313:-$HOME/.pyenv/versions/3.13.0/bin/python3.13}
nskip=0
minor() { "$1" -c 'import sys; print(sys.version_info[1])' 2>/dev/null; }
has_greenlet() { "$1" -c 'import greenlet' 2>/dev/null; }

# run NAME PY ARGS...: record signal_resume.py ARGS with PY; leaves
# $work/NAME.json (check --format json) and prints the failing rules.
run() {
    local name=$1 py=$2
    shift 2
    if ! (cd "$here/programs" && "$cli" record --manual -o "$work/$name.grt" -- "$py" signal_resume.py "$@") \
        >"$work/$name.log" 2>&1; then
        echo "record-failed"
        return
    fi
    "$cli" check --format json "$work/$name.grt" >"$work/$name.json" 2>/dev/null
    gr_json_rules "$work/$name.json"
}

cells=("$PY")
if [ -x "$PY313" ] && [ "$PY313" != "$PY" ]; then
    if make -C "$top" -s ext PYTHON="$PY313" >"$work/build.log" 2>&1; then
        cells+=("$PY313")
    else
        echo "SKIP  the recorder does not build for $PY313"
        nskip=$((nskip + 1))
    fi
fi
i=0
for py in "${cells[@]}"; do
    i=$((i + 1))
    m=$(minor "$py")
    if [ "$m" = 11 ]; then
        echo "SKIP  seen, 3.$m: signals checked before and after the call event at RESUME"
        nskip=$((nskip + 1))
    else
        got=$(run "seen$i" "$py")
        if [ -z "$got" ]; then
            gr_ok "seen, 3.$m: clean (handler at first instructions, a resumed generator)"
        else
            gr_bad "seen, 3.$m: got [$got], expected clean"
            gr_show "$work/seen$i.log" "$work/seen$i.json"
        fi
    fi
    if ! has_greenlet "$py"; then
        echo "SKIP  unseen, 3.$m: no greenlet"
        nskip=$((nskip + 1))
        continue
    fi
    got=$(run "unseen$i" "$py" unseen)
    if [ "$got" = blind_spot ]; then
        gr_ok "unseen, 3.$m: blind_spot (greenlet run inside a trace function)"
    else
        gr_bad "unseen, 3.$m: got [$got], expected blind_spot"
        gr_show "$work/unseen$i.log" "$work/unseen$i.json"
    fi
done
if [ "$nskip" -gt 0 ]; then
    echo "$GR_NOK passed, $GR_NBAD failed, $nskip skipped"
    [ "$GR_NBAD" -eq 0 ]
else
    gr_tally
fi
