"""The profile function's records: CALL, RETURN, C_CALL, C_RETURN,
C_EXCEPTION, MARK, and the frame of a recording (START ... STOP, trailer)."""
import sys

import greenreplay


def seq(records):
    """Records as "KIND name" strings, the way the tests state them."""
    return ["%s %s" % (r.kind, r.name or r.label or "") for r in records]


def leaf(x):
    return len(x)


def boom():
    raise ValueError("boom")


def caller():
    try:
        boom()
    except ValueError:
        pass
    return leaf([1, 2])


def gen():
    yield 1
    yield 2


def test_python_and_c_calls(recorded):
    with recorded() as rec:
        greenreplay.mark("begin")
        leaf([1])
        greenreplay.mark("end")
    assert seq(rec.trace().between("begin", "end")) == [
        "CALL leaf", "C_CALL builtins.len", "C_RETURN builtins.len", "RETURN leaf"]


def test_c_exception(recorded):
    with recorded() as rec:
        greenreplay.mark("begin")
        try:
            sorted([1, "a"])
        except TypeError:
            pass
        greenreplay.mark("end")
    assert seq(rec.trace().between("begin", "end")) == [
        "C_CALL builtins.sorted", "C_EXCEPTION builtins.sorted"]


def test_exception_through_python(recorded):
    # A Python function left by an exception gets its RETURN all the same.
    with recorded() as rec:
        greenreplay.mark("begin")
        caller()
        greenreplay.mark("end")
    assert seq(rec.trace().between("begin", "end")) == [
        "CALL caller", "CALL boom", "RETURN boom",
        "CALL leaf", "C_CALL builtins.len", "C_RETURN builtins.len", "RETURN leaf",
        "RETURN caller"]


def test_generator_resumes(recorded):
    # Each resume of a generator is a CALL, each yield a RETURN (as the
    # profile function sees them).
    with recorded() as rec:
        g = gen()
        greenreplay.mark("begin")
        next(g)
        next(g)
        greenreplay.mark("end")
    assert seq(rec.trace().between("begin", "end")) == [
        "C_CALL builtins.next", "CALL gen", "RETURN gen", "C_RETURN builtins.next",
        "C_CALL builtins.next", "CALL gen", "RETURN gen", "C_RETURN builtins.next"]


def test_code_names_file_and_line(recorded):
    with recorded() as rec:
        greenreplay.mark("begin")
        leaf([])
        greenreplay.mark("end")
    call = rec.trace().between("begin", "end")[0]
    # relative to the recording's root (tests/recorder/), the def's line
    assert call.code == "leaf (test_events.py:%d)" % leaf.__code__.co_firstlineno


def test_mark_holds_the_real_stack(recorded):
    def inner():
        greenreplay.mark("inner")
    with recorded() as rec:
        inner()
    (mark,) = rec.trace().of("MARK")
    assert mark.label == "inner"
    assert [c.split(" (")[0] for c in mark.stack[-2:]] == [
        "test_mark_holds_the_real_stack", "test_mark_holds_the_real_stack.<locals>.inner"]
    assert int(mark.fields["depth"]) == len(mark.stack)


def test_mark_label_is_escaped(recorded):
    # A label is untrusted text: control bytes never reach the dump as such.
    with recorded() as rec:
        greenreplay.mark('a "quoted"\x1b[31m\nlabel')
    trace = rec.trace()
    assert "\x1b" not in trace.text
    assert '\\x1b[31m\\x0alabel' in trace.text
    assert trace.marks() == ['a "quoted"\x1b[31m\nlabel']


def test_start_stop_and_trailer(recorded):
    with recorded() as rec:
        leaf([])
    trace = rec.trace()
    kinds = [r.kind for r in trace.records]
    assert kinds[:3] == ["THREAD", "GREENLET", "START"]
    assert "STOP" in kinds and kinds.index("STOP") > kinds.index("START")
    assert trace.meta["python"] == "%d.%d.%d" % sys.version_info[:3]
    assert trace.meta["switches"] == "passive"
    assert trace.trailer == {"events": str(len(trace.records)), "dropped": "0",
                             "errors": "0", "reason": "stop"}
    assert [r.index for r in trace.records] == list(range(len(trace.records)))


def test_nothing_recorded_outside_the_block(recorded):
    with recorded() as rec:
        pass
    leaf([])
    assert "leaf" not in rec.trace().text
    assert rec.check()[0] == 0
