"""Threads of a recorded program: each thread threading starts is
followed (a THREAD record, its own thread id on its events), a thread's
greenlets are its own, and the program's view of its threads is
unchanged."""
import sys
import threading

import greenlet

import greenreplay


def work(n):
    return sum(range(n))


def in_threads(n, target, *args):
    threads = [threading.Thread(target=target, args=args) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_every_thread_followed(recorded):
    with recorded() as rec:
        in_threads(3, work, 10)
    trace = rec.trace()
    tids = [r.tid for r in trace.of("THREAD")]
    assert tids == sorted(set(tids)) and tids[0] == 1 and len(tids) == 4
    # each work() call recorded once, on its own thread, with its RETURN
    calls = [r.tid for r in trace.of("CALL") if r.name == "work"]
    returns = [r.tid for r in trace.of("RETURN") if r.name == "work"]
    assert sorted(calls) == sorted(returns) == tids[1:]
    # a thread's events come after its THREAD record
    first = {r.tid: r.index for r in reversed(trace.records)}
    assert all(trace.records[first[t]].kind == "THREAD" for t in tids)
    assert rec.check()[0] == 0


def test_thread_sees_no_profile_function(recorded):
    seen = []
    with recorded():
        in_threads(1, lambda: seen.append((sys.getprofile(), threading.current_thread().name)))
    assert seen[0][0] is None


def test_greenlets_of_a_thread(recorded):
    def body():
        g = greenlet.greenlet(work)
        g.switch(5)
        greenreplay.mark("in thread")
    with recorded() as rec:
        in_threads(1, body)
    trace = rec.trace()
    (mark,) = trace.of("MARK")
    assert mark.tid != 1
    # the thread's main greenlet and the one it made, both defined on it
    defs = [r for r in trace.of("GREENLET") if r.tid == mark.tid]
    assert [("main" in r.fields.get("flags", "")) for r in defs] == [True, False]
    main, child = defs
    assert child.fields["parent"] == "g%d" % main.gid
    switches = [(s.gid, s.target) for s in trace.of("SWITCH")]
    assert switches == [(main.gid, child.gid), (child.gid, main.gid)]
    assert all(s.tid == mark.tid for s in trace.of("SWITCH"))
    assert [r.gid for r in trace.of("CALL") if r.name == "work"] == [child.gid]
    assert rec.check()[0] == 0


def test_thread_started_before_start(recorded):
    # A thread running when recording starts is followed from its next
    # event (start() installs the profile function on every thread).
    go, done = threading.Event(), threading.Event()

    def body():
        go.wait()
        work(3)
        done.set()
    t = threading.Thread(target=body)
    t.start()
    with recorded() as rec:
        go.set()
        done.wait()
        t.join()
    tids = {r.tid for r in rec.trace().of("CALL") if r.name == "work"}
    assert len(tids) == 1 and tids != {1}
