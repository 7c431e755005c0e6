"""Run with -m: a module whose __main__ block calls into a greenlet."""
import greenlet

import greenreplay


def hello():
    greenreplay.mark("in module greenlet")


if __name__ == "__main__":
    greenlet.greenlet(hello).switch()
