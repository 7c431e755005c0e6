"""A deliberately broken adapter (tests/integration/conform.sh): the
example adapter callcount.py beside this file, except that every call made
outside its thread's main greenlet is dropped.  `greenreplay conform` must
exit 1 with a blind_spot naming the function and the greenlet where the
dropped calls ran: the comparison can fail."""
import importlib.util
import os
import sys

import greenlet

_spec = importlib.util.spec_from_file_location(
    "callcount_for_drop_greenlets", os.path.join(os.path.dirname(os.path.abspath(__file__)), "callcount.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
available, stop, results = _base.available, _base.stop, _base.results


def _profile(frame, event, arg):
    if greenlet.getcurrent().parent is None:  # the bug: other greenlets unseen
        _base._profile(frame, event, arg)


def version():
    return "drop_greenlets (broken on purpose)"


def start():
    sys.setprofile(_profile)
