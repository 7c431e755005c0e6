/* slots.c - the recorder's own changes of profile and trace slots (see
 * recorder.h, gr_own_set_profile).  Writes CPython's thread state as its
 * own _PyEval_SetProfile/_PyEval_SetTrace do, without their audit event:
 * built with the slots section of compat.h. */
#define GR_COMPAT_SLOTS 1
#include "compat.h"
#include "recorder.h"

int gr_own_set_profile(PyThreadState *ts, Py_tracefunc fn, PyObject *arg)
{
    return gr_slot_set_profile(ts, fn, arg);
}

int gr_own_set_trace(PyThreadState *ts, Py_tracefunc fn, PyObject *arg)
{
    return gr_slot_set_trace(ts, fn, arg);
}

int gr_own_swap_trace(PyThreadState *ts, Py_tracefunc fn)
{
    return gr_slot_swap_trace(ts, fn);
}

int gr_own_dispatch(PyThreadState *ts, PyFrameObject **frame, int *what)
{
    return gr_slot_dispatch(ts, frame, what);
}

PyObject *gr_own_call_quiet(PyObject *fn, PyObject *args)
{
    return gr_slot_call_quiet(fn, args);
}
