"""Tests for the greenreplay pytest plugin (tests/integration/pip_install.sh
runs them with `pytest --greenreplay`).  Expected outcome: test_blind_spot
fails with a blind_spot report; every other test passes.

The blind spot: a greenlet switched to from inside a sys.settrace trace
function runs while the thread is tracing (tstate->tracing > 0), so the
profiler sees none of its calls although its marks prove they ran, on every
CPython (as in fixtures/switch_in_tracefunc.py).
"""
import sys

import greenlet
import pytest

import greenreplay


def work(n):
    return sum(range(n))


def switch_in_trace_function():
    def hidden():
        greenreplay.mark("hidden: inside a greenlet the profiler cannot see")
        work(3)

    g = greenlet.greenlet(hidden)

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "trigger" and not g.dead:
            g.switch()
        return None

    def trigger():
        greenreplay.mark("trigger")

    sys.settrace(tracer)
    try:
        trigger()
    finally:
        sys.settrace(None)


def test_plain():
    assert work(4) == 6


def test_greenlets_switch():
    def child(x):
        greenreplay.mark("child")
        y = greenlet.getcurrent().parent.switch(x + 1)
        return y * 2

    g = greenlet.greenlet(child)
    assert g.switch(1) == 2
    assert g.switch(5) == 10
    greenreplay.mark("back in main")


def test_blind_spot():
    switch_in_trace_function()


@pytest.mark.greenreplay(expect=["blind_spot"])
def test_expected_blind_spot():
    switch_in_trace_function()


@pytest.mark.greenreplay(skip=True)
def test_not_recorded():
    switch_in_trace_function()


@pytest.mark.greenreplay(skip=True)
def test_records_itself():
    with greenreplay.recording() as rec:
        work(2)
    try:
        assert rec.check().clean
    finally:
        rec.cleanup()
