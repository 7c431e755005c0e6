# realworld: eventlet.tpool.execute
# report: gunicorn issue 1830 (eventlet's tpool runs functions in real
#   threads) and gevent issue 1670 (pool workers no profiler reaches);
#   eventlet starts its tpool workers from its private copy of threading.
#   https://github.com/benoitc/gunicorn/issues/1830
# semantics: digest() runs in a tpool worker thread that eventlet started
#   from its own copy of the threading module, which knows nothing of the
#   profile hook set through the real one: Python code ran in a thread no
#   profiler reached.
# modes: whole
# needs: eventlet
# quick: yes
# expect: unreached
import eventlet
import greenreplay
from eventlet import tpool


def digest(data):
    return sum(data) % 97


def main():
    greenreplay.start()
    assert tpool.execute(digest, bytes(range(50))) == sum(range(50)) % 97
    tpool.killall()
    greenreplay.stop()


main()
