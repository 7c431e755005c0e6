"""A program killed by a signal, SIGTERM sent to itself
(tests/integration/conform.sh): conform must name signal 15."""
import os
import signal


def work(n):
    return n + 1


work(1)
os.kill(os.getpid(), signal.SIGTERM)
