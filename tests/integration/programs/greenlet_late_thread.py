"""greenlet imported after a thread started: the thread, seen before the
import, waits; then it imports greenlet itself and switches, and the main
thread switches too (tests/integration/threads.sh, greenlet-late)."""
import threading

ready = threading.Event()
out = []


def work():
    ready.wait()
    import greenlet

    def child(x):
        return greenlet.getcurrent().parent.switch(x + 1)

    g = greenlet.greenlet(child)
    out.append(g.switch(1))
    g.switch(0)


t = threading.Thread(target=work)
t.start()
import greenlet  # noqa: E402


def child_main():
    greenlet.getcurrent().parent.switch(7)


ready.set()
t.join()
print(out, greenlet.greenlet(child_main).switch())
