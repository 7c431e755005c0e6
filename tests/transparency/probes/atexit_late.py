"""The program imports atexit only after recording started, registers an
exit function and ends without stop(): its function runs at exit, and so
does the recorder's stop (the trace must check clean).  Before 3.10 a
second atexit module replaced the first one's callbacks: start() must not
leave its atexit in sys.modules, and the program's import must get that
same module back (tracer/boot.c), or recording is not stopped at exit."""
# requires:
# manual: start
# trace: clean
import sys

if "--start" in sys.argv:
    import greenreplay
    greenreplay.start()

print("atexit loaded before the import:", "atexit" in sys.modules)
import atexit  # noqa: E402

atexit.register(print, "the program's exit function")
print("registered")
