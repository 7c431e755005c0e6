"""The reader of the dump text itself (grtrace.py): the fields the other
tests rely on, and a line it cannot read is an error, never skipped."""
import pytest

import grtrace

DUMP = r'''# python: 3.11.2
# switches: passive
     0 THREAD      t1
     5 SWITCH      t1 g1->g2 parent=g1 prof=ours tracing=0 use_tracing=255 inferred new depth=0 stack=-
     7 HOOK        t1 g1 profile set subject=off chained during=_lsprof.Profiler.enable profiler=P1 cprofile cProfile.Profile frame=f (a.py:3)
     8 MARK        t1 g2 "say \"hi\"\x1b" flags=ours depth=2 stack=<module> (a.py:1) > f (a.py:3)
     9 C_EXCEPTION t1 g2 builtins.sorted
# trailer: events=10 dropped=0 errors=0 reason=stop
'''


def test_fields():
    t = grtrace.Trace(DUMP)
    assert t.meta == {"python": "3.11.2", "switches": "passive"}
    assert t.trailer["reason"] == "stop"
    thread, switch, hook, mark, cexc = t.records
    assert (thread.kind, thread.tid, thread.gid) == ("THREAD", 1, None)
    assert (switch.gid, switch.target, switch.fields["parent"]) == (1, 2, "g1")
    assert switch.words == ["inferred", "new"] and switch.stack == []
    assert (hook.slot, hook.action, hook.value("during")) == ("profile", "set", "_lsprof.Profiler.enable")
    assert hook.value("frame") == "f (a.py:3)" and "cProfile.Profile" in hook.words
    assert mark.label == 'say "hi"\x1b' and mark.stack == ["<module> (a.py:1)", "f (a.py:3)"]
    assert (cexc.kind, cexc.name) == ("C_EXCEPTION", "builtins.sorted")


def test_unreadable_line_is_an_error():
    with pytest.raises(ValueError):
        grtrace.Trace("     1 call t1 g1 f\n")
