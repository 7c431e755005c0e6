"""The c_return of the C calls in progress when the program's own
sys.monitoring tool turns CALL and C_RETURN on (3.12+): set_events
itself, and list() below it.  Unrecorded nothing had instrumented those
calls when they began, so the tool gets no C_RETURN of them; recorded
the recorder's function had (tool 6), and CPython gives the C_RETURN to
every tool with CALL at that instruction when the call ends."""
# requires:
# manual: start
import sys

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

events = []


def on_c_return(code, offset, callable, arg0):
    events.append("C_RETURN %s" % getattr(callable, "__name__", "-"))


TOOL = 3


def tool_on():
    mon = sys.monitoring
    mon.use_tool_id(TOOL, "probe")
    mon.register_callback(TOOL, mon.events.C_RETURN, on_c_return)
    # set_events is itself the C call in progress
    mon.set_events(TOOL, mon.events.C_RETURN | mon.events.C_RAISE | mon.events.CALL)


def tool_off():
    mon = sys.monitoring
    mon.set_events(TOOL, 0)
    mon.register_callback(TOOL, mon.events.C_RETURN, None)
    mon.free_tool_id(TOOL)


def own_tool():
    tool_on()
    len("ab")
    tool_off()


def own_tool_below():
    # turned on inside the C call list() (map's next() is no CALL)
    list(map(lambda f: f(), [tool_on]))
    len("abc")
    tool_off()


if hasattr(sys, "monitoring"):
    own_tool()
    own_tool_below()
    for line in events:
        print(line)
if "--start" in sys.argv:
    greenreplay.stop()
