"""Greenlet switches: new greenlets, passive mode's continued switches
(docs/FORMAT.md section 4, state bit 9), throws, deaths, callback mode."""
import contextvars
import os
import subprocess
import sys

import greenlet
import pytest

import greenreplay

# 3.12+ writes a real stack at every switch (compat.h GR_CONTINUED_SWITCHES).
CONTINUED = sys.version_info < (3, 12)
# greenlet < 0.4.15 moves no switch witness: nothing is continued.
WITNESS = tuple(int(x) for x in greenlet.__version__.split(".")[:3]) >= (0, 4, 15)


def kinds(trace):
    """The SWITCH/THROW records as letters: N new greenlet, R real stack,
    D real stack with the origin dead, C continued; lower case for THROW."""
    out = ""
    for r in trace.of("SWITCH", "THROW"):
        k = "C" if "continued" in r.words else "N" if "new" in r.words else \
            "D" if "origin_dead" in r.words else "R"
        out += k.lower() if r.kind == "THROW" else k
    return out


def ping(n):
    main = greenlet.getcurrent().parent
    for _ in range(n):
        main.switch()


def round_trip():
    """Five round trips: after the first ones, every switch is continued."""
    g = greenlet.greenlet(ping)
    g.switch(5)
    for _ in range(5):
        g.switch()


def unseen_between():
    """A greenlet whose run is a builtin delivers no event: main's resume
    is asked and walked."""
    main = greenlet.getcurrent()
    b = greenlet.greenlet(lambda: main.switch())
    a = greenlet.greenlet(b.switch)
    a.switch()
    b.switch()


def hook_between():
    """The program installs its own profile function between two switches
    (a HOOK record): the switch back into main is asked and walked."""
    def inner():
        main = greenlet.getcurrent().parent
        main.switch()
        sys.setprofile(lambda *a: None)
        main.switch()
        sys.setprofile(None)
        main.switch()
    g = greenlet.greenlet(inner)
    for _ in range(4):
        g.switch()


def throw():
    """greenlet.throw into a suspended greenlet: a continued THROW."""
    def target():
        main = greenlet.getcurrent().parent
        for _ in range(2):
            try:
                main.switch()
            except ValueError:
                pass
        main.switch()
    g = greenlet.greenlet(target)
    g.switch()
    g.throw(ValueError)
    g.throw(ValueError)
    g.switch()


def origin_ends():
    """A greenlet that finishes: its parent's resume is asked (DEAD)."""
    g = greenlet.greenlet(lambda: None)
    g.switch()
    h = greenlet.greenlet(ping)
    h.switch(1)
    h.switch()


def context_run():
    """Context.run moves the witness without a switch; the switches inside
    it and around it are continued all the same."""
    def body():
        main = greenlet.getcurrent().parent
        main.switch()
        main.switch()

    def inner():
        contextvars.copy_context().run(body)
    g = greenlet.greenlet(inner)
    for _ in range(3):
        g.switch()


CASES = [
    (round_trip, "NCCCCCCCCCCD"),
    (unseen_between, "NRCD"),
    (hook_between, "NCCRCRCD"),
    (throw, "NCcCcCCD"),
    (origin_ends, "NDNCCD"),
    (context_run, "NCCCCD"),
]


@pytest.mark.skipif(not WITNESS, reason="greenlet older than 0.4.15 moves no switch witness")
@pytest.mark.parametrize("stacks", ["needed", "every"])
@pytest.mark.parametrize("case,want", CASES, ids=[c.__name__ for c, _ in CASES])
def test_continued_switches(recorded, case, want, stacks):
    with recorded(switch_stacks=stacks) as rec:
        case()
    trace = rec.trace()
    if stacks == "every" or not CONTINUED:
        want = want.replace("C", "R").replace("c", "r")
    assert kinds(trace) == want
    assert trace.meta.get("switch_stacks") == ("every" if stacks == "every" else None)
    status, report = rec.check()
    assert status == 0, report


def test_same_program_same_bytes(tmp_path):
    # Whether a switch is continued never depends on addresses: the same
    # program gives the same bytes.  Each run is a fresh process (3.12+
    # writes the interpreter's instrumentation version, which only grows
    # within a process).
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(greenreplay.__file__)), here]
        + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    for key in [k for k in env if k.startswith("GREENREPLAY_") and k != "GREENREPLAY_CLI"]:
        del env[key]
    traces = []
    for n in (1, 2):
        path = str(tmp_path / ("run%d.grt" % n))
        subprocess.run([sys.executable, "-c", PROGRAM, path], cwd=here, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(path, "rb") as f:
            traces.append(f.read())
    assert len(traces[0]) > 16 and traces[0] == traces[1]


PROGRAM = """
import sys
import greenreplay
from test_switches import hook_between
greenreplay.start(sys.argv[1])
hook_between()
greenreplay.stop()
"""


def test_new_greenlet_and_its_death(recorded):
    with recorded() as rec:
        g = greenlet.greenlet(ping)
        g.switch(1)
        g.switch()
    trace = rec.trace()
    new = [r for r in trace.of("GREENLET") if r.gid != 1]
    assert len(new) == 1 and new[0].fields["parent"] == "g1"
    gid = new[0].gid
    switches = trace.of("SWITCH")
    assert [(s.gid, s.target) for s in switches] == [(1, gid), (gid, 1), (1, gid), (gid, 1)]
    assert all("inferred" in s.words for s in switches)
    # the first switch into it is "new" with an empty stack; the last
    # leaves a dead origin, then its DEAD
    assert "new" in switches[0].words and switches[0].stack == []
    assert "origin_dead" in switches[-1].words
    dead = trace.of("DEAD")
    assert [d.gid for d in dead] == [gid]
    assert trace.records.index(dead[0]) > trace.records.index(switches[-1])
    # the greenlet's own events carry its id
    assert [r.gid for r in trace.of("CALL") if r.name == "ping"] == [gid]


class PropertyGreenlet(greenlet.greenlet):
    """A subclass whose `dead` is a Python property, as gevent's Greenlet's
    is: the recorder must not run it (program code inside its profile
    function), and must still see the greenlet die."""
    reads = 0

    @property
    def dead(self):
        type(self).reads += 1
        return greenlet.greenlet.dead.__get__(self)


def test_subclass_dead_property_not_run(recorded):
    PropertyGreenlet.reads = 0
    with recorded() as rec:
        g = PropertyGreenlet(ping)
        g.switch(1)
        g.switch()
        greenreplay.mark("after")
    assert PropertyGreenlet.reads == 0
    trace = rec.trace()
    switches = trace.of("SWITCH")
    assert "origin_dead" in switches[-1].words
    assert [d.gid for d in trace.of("DEAD")] == [switches[-1].gid]


def test_greenlet_parent_is_recorded(recorded):
    with recorded() as rec:
        outer = greenlet.greenlet(lambda: inner.switch())
        inner = greenlet.greenlet(lambda: None, parent=outer)
        outer.switch()
    trace = rec.trace()
    defs = {r.gid: r.fields["parent"] for r in trace.of("GREENLET")}
    assert len(defs) == 3
    g_outer, g_inner = sorted(g for g in defs if g != 1)
    assert defs[g_outer] == "g1" and defs[g_inner] == "g%d" % g_outer


@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_throw_reaches_the_greenlet(recorded, mode):
    caught = []

    def target():
        try:
            greenlet.getcurrent().parent.switch()
        except KeyError as e:
            caught.append(e.args)
    with recorded(switches=mode) as rec:
        g = greenlet.greenlet(target)
        g.switch()
        g.throw(KeyError, "k")
    assert caught == [("k",)] and g.dead
    trace = rec.trace()
    assert trace.meta["switches"] == mode
    (thr,) = trace.of("THROW")
    gid = [r.gid for r in trace.of("GREENLET") if r.gid != 1][0]
    assert (thr.gid, thr.target) == (1, gid)
    # callback mode is told by greenlet; passive mode infers it
    assert ("inferred" in thr.words) == (mode == "passive")
    # the throw is followed by the target's own events, then its death
    after = trace.records[trace.records.index(thr) + 1:]
    assert next(r for r in after if r.gid == gid).gid == gid
    assert [r.gid for r in trace.of("DEAD")] == [gid]
    assert rec.check()[0] == 0


def test_callback_mode_switches_are_not_inferred(recorded):
    with recorded(switches="callback") as rec:
        round_trip()
    trace = rec.trace()
    switches = trace.of("SWITCH")
    assert len(switches) == 12
    assert not any("inferred" in s.words or "continued" in s.words for s in switches)
    # the program sees no greenlet trace callback of the recorder's
    assert rec.check()[0] == 0


@pytest.mark.parametrize("mode", ["passive", "callback"])
def test_greenlet_gettrace_while_recording(recorded, mode):
    # Passive mode installs no greenlet callback: the program's gettrace()
    # is what it set.  Callback mode's callback is visible (docs/RECORDER.md).
    def mine(event, args):
        pass
    seen = []
    with recorded(switches=mode):
        seen.append(greenlet.gettrace())
        greenlet.settrace(mine)
        seen.append(greenlet.gettrace())
        greenlet.settrace(None)
    if mode == "passive":
        assert seen == [None, mine]
    else:
        assert seen[0] is not None and seen[1] is mine
    assert greenlet.gettrace() is None


@pytest.mark.skipif(sys.version_info < (3, 12), reason="INSTR records are written on 3.12+ only")
def test_instr_version_counts_for_the_process(recorded):
    # docs/FORMAT.md, INSTR: `version` is the interpreter's, counted for
    # the whole process and not reset by start(): a second recording in
    # the same process starts higher, a profile function set and cleared
    # between two recordings raises it further; `stale` means the same.
    def versions():
        with recorded() as rec:
            round_trip()
        instr = [r.fields for r in rec.trace().of("INSTR")]
        assert instr
        assert all(f["stale"] == "0" for f in instr)
        return [int(f["version"]) for f in instr]

    first = versions()
    second = versions()
    sys.setprofile(lambda *a: None)
    sys.setprofile(None)
    third = versions()
    assert len(set(first)) == len(set(second)) == len(set(third)) == 1
    assert first[0] < second[0] < third[0]
    assert third[0] - second[0] > second[0] - first[0]
