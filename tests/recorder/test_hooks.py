"""The program's own hooks while it is recorded: its profile functions
(sys.setprofile, threading.setprofile, cProfile), its greenlet trace
callbacks, and the recorder's footholds.  Each change is a HOOK record
naming what was installed; the program sees its own hooks, never the
recorder's; its profilers see the same events as unrecorded."""
import contextlib
import cProfile
import functools
import os
import subprocess
import sys
import threading

import greenlet
import pytest

import greenreplay
import grtrace
from greenreplay import _greenreplay

# 3.9-3.11: cProfile's enable() changes the profile slot from C (3.12+
# profiles through sys.monitoring and changes no slot).
SLOTS = sys.version_info < (3, 12)


def work():
    return sum(range(3))


def hooks(trace, slot=None):
    return [r for r in trace.of("HOOK") if slot is None or r.slot == slot]


def events_seen_by(run):
    """The (event, name) pairs a profile function of the program sees
    while run() runs."""
    seen = []

    def prof(frame, event, arg):
        if event in ("call", "return"):
            seen.append((event, frame.f_code.co_name))
        elif arg is not None:
            seen.append((event, getattr(arg, "__name__", "?")))
    sys.setprofile(prof)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


def test_program_profile_function(recorded):
    def prof(frame, event, arg):
        pass
    seen = []
    with recorded() as rec:
        sys.setprofile(prof)
        seen.append(sys.getprofile())
        work()
        sys.setprofile(None)
        seen.append(sys.getprofile())
        work()
    # the program sees its own profile function, and None when it cleared it
    assert seen == [prof, None]
    trace = rec.trace()
    on, off = hooks(trace, "profile")
    assert (on.action, on.fields["subject"]) == ("set", "off")
    assert "chained" in on.words and "function" in on.words and "before" not in on.words
    assert on.value("code") == "test_program_profile_function.<locals>.prof (test_hooks.py:%d)" \
        % prof.__code__.co_firstlineno
    assert on.value("frame").startswith("test_program_profile_function (test_hooks.py:")
    assert (off.action, off.fields["subject"]) == ("restored", "on")
    assert on.fields["profiler"] == off.fields["profiler"]
    # recorded before, between and after the program's changes
    calls = [r.index for r in trace.of("CALL") if r.name == "work"]
    assert len(calls) == 2 and on.index < calls[0] < off.index < calls[1]
    assert rec.check()[0] == 0


def test_program_profile_function_sees_the_same_events(recorded):
    def run():
        work()
        sorted([3, 1])
    plain = events_seen_by(run)
    with recorded():
        recorded_ = events_seen_by(run)
    assert recorded_ == plain
    assert ("call", "work") in plain


def test_chained_profilers_and_getprofile_identity(recorded):
    # The program saves its profile function, installs another, restores
    # the first: getprofile() gives back its own object each time, and
    # each function gets the events of the time it is installed.
    calls = []

    def first(frame, event, arg):
        if event == "call":
            calls.append(("first", frame.f_code.co_name))

    def second(frame, event, arg):
        if event == "call":
            calls.append(("second", frame.f_code.co_name))
    seen = []
    with recorded() as rec:
        sys.setprofile(first)
        work()
        old = sys.getprofile()
        sys.setprofile(second)
        work()
        seen.append(sys.getprofile())
        sys.setprofile(old)
        work()
        seen.append(sys.getprofile())
        sys.setprofile(None)
    assert old is first and seen == [second, first]
    assert [c for c in calls if c[1] == "work"] == [("first", "work"), ("second", "work"), ("first", "work")]
    trace = rec.trace()
    got = [(h.action, h.fields["subject"], h.value("code").split(" (")[0].rsplit(".", 1)[-1])
           for h in hooks(trace, "profile")]
    assert got == [("set", "off", "first"), ("set", "off", "second"), ("set", "off", "first"),
                   ("restored", "on", "first")]
    assert "chained" in hooks(trace, "profile")[0].words
    assert len([r for r in trace.of("CALL") if r.name == "work"]) == 3


def test_profile_function_set_before_start_is_kept(recorded):
    calls = []

    def prof(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)
    sys.setprofile(prof)
    try:
        seen = []
        with recorded():
            seen.append(sys.getprofile())
            work()
        seen.append(sys.getprofile())
    finally:
        sys.setprofile(None)
    assert seen == [prof, prof]
    assert calls.count("work") == 1


def c_name(func):
    # By name: 3.12+ gives a method's c_call and c_return each a new bound
    # method object.
    return getattr(func, "__qualname__", func.__name__)


class Watch:
    """A profile function of the program: the events of this file's frames,
    and the C calls whose c_return it did not get (or got without the
    c_call) by name."""

    def __init__(self):
        self.seen = []
        self.open_c = []
        self.unmatched = []

    def __call__(self, frame, event, arg):
        if event == "c_call":
            self.open_c.append(c_name(arg))
        elif event in ("c_return", "c_exception"):
            if self.open_c and self.open_c[-1] == c_name(arg):
                self.open_c.pop()
            else:
                self.unmatched.append(c_name(arg))
        if frame.f_code.co_filename == __file__:
            name = frame.f_code.co_name if event in ("call", "return") else arg.__name__
            self.seen.append((event, name))

    def result(self):
        return self.seen, self.open_c, self.unmatched


def test_profile_function_set_before_start_sees_the_same_events(recorded):
    # Set before start(): the program's function gets the events it gets
    # unrecorded, the c_return of the start() it saw begin included, and
    # its slot is as it left it afterwards.
    def run(record):
        w = Watch()
        sys.setprofile(w)
        try:
            with record:
                work()
                during = sys.getprofile()
            after = sys.getprofile()
        finally:
            sys.setprofile(None)
        return w.result(), during is w and after is w
    rec = recorded()
    got = run(rec)
    assert got == run(contextlib.nullcontext())
    assert got[1] and ("call", "work") in got[0][0]
    trace = rec.trace()
    (h,) = hooks(trace, "profile")
    start = trace.of("START")[0]
    assert h.index == start.index + 1 and h.tid == start.tid
    assert (h.action, h.fields["subject"]) == ("set", "off") and "chained" in h.words
    assert "before" in h.words
    assert "callable" in h.words and "test_hooks.Watch" in h.words
    assert h.value("during") is None and h.value("frame") is None
    # greenreplay's own start() is in no record: not in the seed, and the
    # c_return of the C start() the program's function saw begin is not
    # recorded (it still reaches that function: the comparison above)
    assert not any("greenreplay" in name for name in trace.of("GREENLET")[0].stack)
    assert not any(r.name and "greenreplay._greenreplay.start" in r.name for r in trace.records)
    status, report = rec.check()
    assert status == 0 and "imbalance            0" in report, report


def test_profile_function_set_before_start_keeps_its_references(recorded):
    def prof(frame, event, arg):
        pass
    sys.setprofile(prof)
    try:
        before = sys.getrefcount(prof)
        with recorded():
            work()
        after = sys.getrefcount(prof)
        kept = sys.getprofile()
    finally:
        sys.setprofile(None)
    assert kept is prof and after == before


def test_cprofile_enabled_before_start(recorded):
    def count(prof):
        prof.create_stats()
        return {k[2]: v[:2] for k, v in prof.stats.items()
                if k[0] == __file__ or "_greenreplay.start" in k[2]}

    def run(record):
        prof = cProfile.Profile()
        prof.enable()
        with record:
            work()
            during = sys.getprofile()
        after = sys.getprofile()
        prof.disable()
        return prof, during, after
    base, _, _ = run(contextlib.nullcontext())
    rec = recorded()
    prof, during, after = run(rec)
    got, want = count(prof), count(base)
    # the program's own functions counted the same; start() counted as a
    # whole call (its c_return came to cProfile)
    starts = [k for k in got if "_greenreplay.start" in k]
    assert {k: v for k, v in got.items() if k not in starts} == want
    assert got["work"] == (1, 1)
    if not SLOTS:
        return  # 3.12+: cProfile profiles through sys.monitoring
    assert [got[k] for k in starts] == [(1, 1)]
    assert during is after and after is not None
    (h,) = hooks(rec.trace(), "profile")
    assert h.action == "set" and "chained" in h.words and "cprofile" in h.words
    assert rec.check()[0] == 0


@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_profile_function_set_before_start_on_another_thread(recorded, mode):
    # A thread that set its own profile function before start() and waits
    # (inside a C call its function saw begin): it keeps it, and gets the
    # c_return of that wait and every event of its work as unrecorded.
    def run(record):
        w = Watch()
        ready, go, done, end = (threading.Event() for _ in range(4))
        out = []

        def body():
            sys.setprofile(w)
            ready.set()
            go.wait()
            work()
            out.append(sys.getprofile() is w)
            done.set()
            end.wait()
            out.append(sys.getprofile() is w)
            sys.setprofile(None)
        t = threading.Thread(target=body)
        t.start()
        ready.wait()
        with record:
            go.set()
            done.wait()
        end.set()
        t.join()
        return w.result(), out
    rec = recorded(switches=mode)
    got = run(rec)
    assert got == run(contextlib.nullcontext())
    assert got[1] == [True, True] and ("call", "work") in got[0][0]
    trace = rec.trace()
    (h,) = hooks(trace, "profile")
    (w,) = [r.tid for r in trace.of("CALL") if r.name == "work"]
    assert h.tid == w != 1 and h.action == "set" and "chained" in h.words and "before" in h.words
    status, report = rec.check()
    assert "imbalance            0" in report, report


def test_threading_setprofile_before_start(recorded):
    # threading's hook set before start(): a thread started while recording
    # installs it itself (a HOOK, chained), and it sees that thread's work.
    calls = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "work":
            calls.append(threading.get_ident())
    threading.setprofile(prof)
    try:
        with recorded() as rec:
            t = threading.Thread(target=work)
            t.start()
            t.join()
            hook = threading._profile_hook
    finally:
        threading.setprofile(None)
    assert hook is prof and len(calls) == 1
    trace = rec.trace()
    (h,) = hooks(trace, "profile")
    assert h.tid != 1 and h.action == "set" and "chained" in h.words and "before" not in h.words
    assert rec.check()[0] == 0


@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_profile_function_set_before_start_with_greenlets(recorded, mode):
    # A greenlet suspended in switch() when recording starts: the program's
    # function saw that switch's c_call, and gets its c_return.
    def run(record):
        w = Watch()
        sys.setprofile(w)
        try:
            main = greenlet.getcurrent()

            def child():
                main.switch(1)
                work()
                return 2
            g = greenlet.greenlet(child)
            g.switch()
            with record:
                g.switch()
                work()
            kept = sys.getprofile() is w
        finally:
            sys.setprofile(None)
        return w.result(), kept
    rec = recorded(switches=mode)
    got = run(rec)
    assert got == run(contextlib.nullcontext())
    assert got[1] and got[0][0].count(("call", "work")) == 2
    status, report = rec.check()
    assert status == 0 and "imbalance            0" in report, report


@pytest.mark.skipif(not SLOTS, reason="cProfile changes no profile slot on 3.12+")
def test_cprofile_enable_and_disable(recorded):
    def count(prof):
        prof.create_stats()
        return sum(v[1] for k, v in prof.stats.items() if k[2] == "work")

    plain = cProfile.Profile()
    plain.enable()
    work()
    plain.disable()
    seen = []
    with recorded() as rec:
        prof = cProfile.Profile()
        prof.enable()
        seen.append(sys.getprofile())
        work()
        prof.disable()
        seen.append(sys.getprofile())
    # cProfile counts the same, and the program sees its profiler
    assert count(prof) == count(plain) == 1
    assert seen[1] is None and seen[0] is not None
    on, off = hooks(rec.trace(), "profile")
    assert (on.action, on.value("during")) == ("set", "_lsprof.Profiler.enable")
    assert (off.action, off.value("during")) == ("restored", "_lsprof.Profiler.disable")
    assert "cprofile" in on.words and "cProfile.Profile" in on.words
    assert on.fields["profiler"] == off.fields["profiler"]


def test_threading_setprofile(recorded):
    calls = []
    in_thread = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "work":
            calls.append(threading.get_ident())

    def run(target):
        t = threading.Thread(target=target)
        t.start()
        t.join()
    original = (threading.setprofile, threading.getprofile if hasattr(threading, "getprofile") else None)
    with recorded() as rec:
        run(lambda: in_thread.append(sys.getprofile()))
        threading.setprofile(prof)
        hook = threading._profile_hook
        run(work)
        threading.setprofile(None)
        same = (threading.setprofile, threading.getprofile if hasattr(threading, "getprofile") else None)
    # threading's functions and hook are the program's; a new thread's
    # getprofile() is None; the thread started after setprofile runs under prof
    assert same == original and hook is prof
    assert in_thread == [None]
    assert len(calls) == 1
    trace = rec.trace()
    t_work = [r.tid for r in trace.of("CALL") if r.name == "work"]
    assert len(t_work) == 1 and t_work[0] != 1
    (h,) = hooks(trace, "profile")
    assert h.tid == t_work[0] and h.action == "set"
    assert h.value("code").startswith("test_threading_setprofile.<locals>.prof ")


@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_greenlet_callbacks_named(recorded, mode):
    # Each greenlet callback the program sets is a HOOK naming it: a
    # function by its code, a functools.partial by the code it runs, a
    # builtin by its C name; clearing it is "cleared".
    def cb(event, args):
        pass
    with recorded(switches=mode) as rec:
        greenlet.settrace(cb)
        greenlet.settrace(functools.partial(cb))
        greenlet.settrace({}.setdefault)
        greenlet.settrace(None)
    where = "test_greenlet_callbacks_named.<locals>.cb (test_hooks.py:%d)" % cb.__code__.co_firstlineno
    got = [(h.action, h.value("callback")) for h in hooks(rec.trace(), "greenlet")]
    assert got == [("set", where), ("set", where), ("set", "dict.setdefault"), ("cleared", None)]


def test_greenlet_callback_set_before_start_is_chained(recorded):
    events = []

    def cb(event, args):
        events.append(event)
    greenlet.settrace(cb)
    try:
        with recorded(switches="callback") as rec:
            g = greenlet.greenlet(lambda: None)
            g.switch()
    finally:
        greenlet.settrace(None)
    # the program's callback still sees its switch
    assert "switch" in events
    (h,) = hooks(rec.trace(), "greenlet")
    assert h.action == "set" and "chained" in h.words
    assert h.value("callback").startswith("test_greenlet_callback_set_before_start_is_chained.<locals>.cb ")


@pytest.mark.skipif(not SLOTS, reason="cProfile changes no profile slot on 3.12+")
def test_no_foothold_left_after_stop(recorded):
    # A profile change from C (cProfile's enable()) puts a foothold in the
    # thread's trace slot until its next event; stop() first must take it away.
    prof = cProfile.Profile()
    with recorded():
        list(map(lambda f: f(), [prof.enable]))
    try:
        assert sys.gettrace() is None
        assert _greenreplay._footholds() == 0
    finally:
        prof.disable()


@pytest.mark.skipif(not SLOTS, reason="cProfile changes no profile slot on 3.12+")
def test_no_stray_foothold_on_an_unfollowed_thread(recorded):
    # A thread of _thread (not followed by the recorder) changes its
    # profile slot from C and blocks before any event: after stop(), and
    # after a second recording, no trace slot holds the recorder's foothold.
    import _thread
    import operator
    prof = cProfile.Profile()
    ready, blocker, done = (_thread.allocate_lock() for _ in range(3))
    for lock in (ready, blocker, done):
        lock.acquire()

    def worker():
        list(map(operator.call, [prof.enable, ready.release, blocker.acquire]))
        prof.disable()
        done.release()
    with recorded():
        _thread.start_new_thread(worker, ())
        ready.acquire()
    after_first = _greenreplay._footholds()
    with recorded():
        blocker.release()
        done.acquire()
    assert (after_first, _greenreplay._footholds()) == (0, 0)


def switch_in_profile():
    """The program's profile function, at the call of trigger(), switches
    into g (which switches back half way through target()) and into h
    (which runs to its end); later the program switches to g from its own
    code.  Returns what the switches returned."""
    def step():
        return 1

    def target():
        step()
        greenlet.getcurrent().parent.switch("first")
        step()
        return "done"

    def target2():
        step()
        return "done2"
    g = greenlet.greenlet(target)
    h = greenlet.greenlet(target2)
    results = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "trigger" and not results:
            results.append(g.switch())
            results.append(h.switch())

    def trigger():
        step()
    sys.setprofile(prof)
    trigger()
    sys.setprofile(None)
    results.append(g.switch())
    return results


@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_switches_inside_the_program_profile_function(recorded, mode):
    # Greenlets that run inside the program's profile function deliver no
    # event.  Callback mode writes each of their switches (tracing 1) and
    # h's death there; passive mode cannot see them and says so (META).
    plain = switch_in_profile()
    with recorded(switches=mode) as rec:
        results = switch_in_profile()
    assert results == plain == ["first", "done2", "done"]
    trace = rec.trace()
    inside = [s for s in trace.of("SWITCH") if s.fields["tracing"] == "1"]
    if mode == "passive":
        assert (len(inside), len(trace.of("DEAD"))) == (0, 1)
        assert trace.meta.get("switches_in_profile_function") == "1"
    else:
        assert (len(inside), len(trace.of("DEAD"))) == (4, 2)
        assert "switches_in_profile_function" not in trace.meta
    result = greenreplay.check(rec.path)
    if SLOTS:
        # attribution: prof missed what the greenlets ran inside it (how
        # much is not known), from the META or from the switches there.
        assert result.rules() == {"displaced", "blind_spot", "attribution"}
    assert any("missed call of switch_in_profile.<locals>.target" in v.message for v in result.violations
               if v.rule == "blind_spot")
    assert any("ran greenlets inside its own function in 1 of its calls" in v.message
               for v in result.violations if v.rule == "attribution") == (SLOTS or mode == "callback")


@pytest.mark.skipif(not SLOTS, reason="cProfile changes no profile slot on 3.12+")
def test_foothold_holds_no_reference_to_the_program(recorded):
    # The foothold keeps the frame running at the audit event only until
    # that frame's next line: its reference count is the program's again.
    prof = cProfile.Profile()

    def toggle():
        f = sys._getframe()
        before = sys.getrefcount(f)
        prof.enable()
        prof.disable()
        return sys.getrefcount(f) - before
    plain = toggle()
    with recorded() as rec:
        changed = toggle()
    assert (plain, changed) == (0, 0)
    got = [(h.action, h.value("during")) for h in hooks(rec.trace(), "profile")]
    assert got == [("set", "_lsprof.Profiler.enable"), ("restored", "_lsprof.Profiler.disable")]


@pytest.mark.skipif(not SLOTS, reason="cProfile changes no profile slot on 3.12+")
def test_changes_inside_the_program_trace_function(recorded):
    # enable() and disable() inside the program's trace function: a local
    # of that function is freed when it returns (the recorder holds no frame
    # of a thread that was tracing), and the two changes are two HOOKs,
    # set then restored, not one "cleared".
    import weakref
    prof = cProfile.Profile()
    freed = []

    class Local:
        pass

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "traced" and not freed:
            local = Local()
            weakref.finalize(local, freed.append, "local")
            prof.enable()
            prof.disable()

    def traced():
        return list(freed)
    with recorded() as rec:
        sys.settrace(tracer)
        seen = traced()
        sys.settrace(None)
    assert seen == ["local"]
    trace = rec.trace()
    got = [h.action for h in hooks(trace, "profile")]
    assert got == ["set", "restored"]
    if sys.version_info[:2] in ((3, 10), (3, 11)):
        # the call of traced(), withheld from the profile slot until the
        # trace function returned, is written after the two HOOKs
        last = hooks(trace, "profile")[-1]
        nxt = next(r for r in trace.records[trace.records.index(last) + 1:] if r.kind == "CALL")
        assert nxt.name.endswith("traced")


@pytest.mark.skipif(sys.version_info[:2] != (3, 11),
                    reason="only 3.11 says which event it is dispatching")
@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_events_withheld_by_a_change_in_the_trace_function(recorded, mode):
    # CPython gives a "call" or "return" to the trace function first, then
    # to the profile slot: a change made in the trace function gets it.
    # The recorder writes that event itself, after the change's HOOKs.
    prof = cProfile.Profile()
    plan = {"called_toggled": ("call", prof.enable, prof.disable),
            "returned_toggled": ("return", prof.enable, prof.disable),
            "called_enabled": ("call", prof.enable)}

    def tracer(frame, event, arg):
        what = plan.get(frame.f_code.co_name)
        if what and what[0] == event:
            del plan[frame.f_code.co_name]
            for step in what[1:]:
                step()
        return tracer if frame.f_code.co_name == "returned_toggled" else None

    def called_toggled():
        return 1

    def returned_toggled():
        return 2

    def called_enabled():
        return 3

    def inner():
        return 4
    with recorded(switches=mode) as rec:
        sys.settrace(tracer)
        seen = [called_toggled(), returned_toggled(), called_enabled(), inner()]
        sys.settrace(None)
        prof.disable()
    assert seen == [1, 2, 3, 4] and plan == {}
    names = ("called_toggled", "returned_toggled", "called_enabled", "inner")
    got = []
    for r in rec.trace().records:
        if r.kind == "HOOK" and r.slot == "profile":
            got.append("HOOK %s" % r.action)
        elif r.kind in ("CALL", "RETURN") and r.name and r.name.rsplit(".", 1)[-1] in names:
            got.append("%s %s" % (r.kind, r.name.rsplit(".", 1)[-1]))
    assert got == [
        "HOOK set", "HOOK restored", "CALL called_toggled", "RETURN called_toggled",
        "CALL returned_toggled", "HOOK set", "HOOK restored", "RETURN returned_toggled",
        "HOOK set", "CALL called_enabled", "RETURN called_enabled", "CALL inner", "RETURN inner",
        "HOOK restored"]
    result = greenreplay.check(rec.path)
    assert result.rules() == {"displaced"}


CHAINED_FREED = """
import cProfile, pstats, sys
import greenreplay

def f():
    pass

greenreplay.start(sys.argv[1], switches=sys.argv[2])
cProfile.Profile().enable()
p = cProfile.Profile()
p.enable()
for _ in range(5):
    f()
p.disable()
greenreplay.stop()
try:
    print("f calls:", sum(v[1] for k, v in pstats.Stats(p).stats.items() if k[2] == "f"))
except TypeError:
    print("f calls: None")
"""


@pytest.mark.skipif(not SLOTS, reason="cProfile changes no profile slot on 3.12+")
@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_chained_profiler_freed_by_its_finalizer(tmp_path, mode):
    # A profiler held only by the profile slot is freed when another one's
    # enable() replaces it, and its finalizer clears the slot: the recording
    # completes (it was a SIGSEGV), in a process of its own.
    path = str(tmp_path / "freed.grt")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(greenreplay.__file__))]
        + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, "-c", CHAINED_FREED, path, mode], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("f calls: ")
    trace = grtrace.read(path)
    sets = [h for h in hooks(trace, "profile")
            if h.action == "set" and h.value("during") == "_lsprof.Profiler.enable"]
    assert len(sets) >= 2
    assert trace.trailer["reason"] == "stop"


def test_call_where_the_program_profile_function_raises(recorded):
    # The program's function raises at the call of the function a new
    # greenlet starts in, as the profile module's "Bad call" check does.
    # CPython clears the slot; the call still began and is recorded, with
    # the clear after it (on 3.12+ the recorder's sys.monitoring tool gets
    # no event after the program's function raised out of it).
    def target():
        return 1

    def prof(frame, event, arg):
        if event == "call" and frame.f_code is target.__code__:
            raise AssertionError("bad call")

    outcome = []
    with recorded() as rec:
        sys.setprofile(prof)
        try:
            greenlet.greenlet(target).switch()
        except AssertionError as e:
            outcome.append(str(e))
        outcome.append(sys.getprofile())
    assert outcome == ["bad call", None]
    trace = rec.trace()
    calls = [r for r in trace.of("CALL") if r.name.endswith(".target")]
    assert len(calls) == 1
    cleared = [h for h in hooks(trace, "profile") if h.action == "restored"]
    assert len(cleared) == 1 and calls[0].index < cleared[0].index


def test_program_profilers_leave_no_weak_reference(recorded):
    # The recorder knows each profiler of the program by a weak reference
    # to its object.  Once the object is gone, that reference must go too:
    # greenlet's own leak checks count the weak references alive around
    # each test that sets a profiler (test_tracing), and saw one more.
    import gc
    import weakref

    class Tracer:
        def __call__(self, frame, event, arg):
            pass

    def install_one():
        t = Tracer()
        sys.setprofile(t)
        work()
        sys.setprofile(None)

    def weak_references():
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is weakref.ReferenceType)

    with recorded():
        install_one()
        before = weak_references()
        for _ in range(3):
            install_one()
        after = weak_references()
    assert after == before
