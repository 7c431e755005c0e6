# realworld: a line tracer for new threads (coverage.py's way)
# report: coverage.py issue 582, "Executed lines reported as missing in
#   threads" (coverage installs its tracer with threading.settrace).
#   https://github.com/coveragepy/coveragepy/issues/582
# semantics: threading.settrace sets the trace function, a slot apart
#   from the profile function; the profiler keeps seeing every call in the
#   threads: clean.
# modes: whole manual
# needs:
# quick: yes
# expect: clean
import threading

import greenreplay

lines = []


def tracer(frame, event, arg):
    if event == "line":
        lines.append(frame.f_lineno)
    return tracer


def work(n):
    total = 0
    for k in range(n):
        total += k
    greenreplay.mark("work done")
    return total


def main():
    greenreplay.start()
    threading.settrace(tracer)
    threads = [threading.Thread(target=work, args=(n,)) for n in (3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    threading.settrace(None)
    assert lines
    greenreplay.stop()


main()
