/* install_return.c - the c_return of the call that installs a program's
 * profile function.
 *
 * Example, on 3.13, unrecorded:
 *
 *     def main():
 *         sys.setprofile(f)   # f's first event: the call of work
 *         work()
 *
 * Recorded, f got one event more first: the c_return of its own
 * sys.setprofile call.  The pure Python `profile` module asserts on it
 * ("Bad return"); yappi and memray take it as a C call that ended.
 *
 * Why: on 3.12+ a CALL instruction gives C_RETURN only if it was
 * instrumented when it started, and the event goes to every tool with
 * CALL on that instruction when it ends (compat.h GR_INSTALL_RETURN).
 * Unrecorded, no tool had CALL there: the call gives no C_RETURN at all.
 * Recorded, the recorder's own function in the slot (tool 6) and its
 * sys.monitoring tool (beside.c) had instrumented it; the install adds
 * nothing, and the event reaches tool 6's handler, which hands it to the
 * slot's function: by then the program's.
 *
 * So at the audit event (before the change) the recorder notes the call
 * in progress (thread, frame, code object, offset) when nothing but the
 * recorder instrumented it, and puts its own handler in tool 6's C_RETURN
 * cell for as long as that call is in progress.  The handler forwards
 * every event to CPython's handler except that call's own C_RETURN, and
 * puts CPython's handler back at the first C_RETURN of that frame.  The
 * recorder still records the c_return (its tool gets the event after).
 * The cell is out of the program's reach: sys.monitoring refuses tool 6.
 *
 * Not covered (docs/RECORDER.md): another thread inside a C call when
 * PyEval_SetProfileAllThreads installs a function there (its c_return
 * reaches the new function recorded only), and a program's
 * sys.monitoring tool given the C_RETURN of the call that set its events.
 * Before 3.12 the recorder chains the program's function
 * (gr_profile_chain), which drops the event itself.
 */
#define GR_COMPAT_MONITORING 1
#include "install_return.h"

#include "profile.h"

#if GR_INSTALL_RETURN
static struct {
    PyObject *handler; /* ours (owned, made once) */
    PyObject *cpython; /* CPython's, set aside while armed (owned) */
    PyThreadState *ts; /* the call in progress: compared, never read */
    const void *frame;
    PyObject *code;
    long offset;
} expect;

static void disarm(void)
{
    PyObject *cpython = expect.cpython;
    if (!cpython)
        return;
    PyObject **cell = gr_profile_c_return_cell(PyInterpreterState_Get());
    if (*cell == expect.handler) {
        *cell = cpython; /* the cell's reference */
        Py_DECREF(expect.handler);
    } else {
        Py_DECREF(cpython); /* someone else changed the cell: leave it */
    }
    expect.cpython = NULL;
    expect.ts = NULL;
    expect.frame = NULL;
    expect.code = NULL;
}

/* Tool 6's C_RETURN handler while armed: (code, offset, callable, arg0). */
static PyObject *on_c_return(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    PyObject *cpython = Py_NewRef(expect.cpython);
    PyThreadState *ts = PyThreadState_Get();
    int drop = 0;
    if (ts == expect.ts && gr_tstate_frame_id(ts) == expect.frame) {
        drop = n >= 2 && args[0] == expect.code && PyLong_Check(args[1]) &&
               PyLong_AsLong(args[1]) == expect.offset && ts->c_profilefunc != gr_profile;
        disarm();
    }
    PyObject *res = drop ? Py_NewRef(Py_None) : PyObject_Vectorcall(cpython, args, (size_t)n, NULL);
    Py_DECREF(cpython);
    return res;
}

static PyMethodDef handler_def = {"greenreplay_c_return", (PyCFunction)(void (*)(void))on_c_return,
                                  METH_FASTCALL, NULL};

/* Whether, without the recorder, the call in progress in frame f (code
 * co) of thread ts would be instrumented for CALL: a tool of the program
 * has CALL there, or another thread has a profile function of the
 * program (tool 6's events are the whole interpreter's). */
static int instrumented_without_us(gr_recorder *r, PyThreadState *ts, PyCodeObject *co)
{
    unsigned ours = r->beside.tool ? 1u << (r->beside.tool - 1) : 0;
    if (gr_call_tools(ts->interp, co) & 0x3Fu & ~ours) /* tools 0-5 */
        return 1;
    for (PyThreadState *o = PyInterpreterState_ThreadHead(ts->interp); o; o = PyThreadState_Next(o))
        if (o != ts && o->c_profilefunc && o->c_profilefunc != gr_profile)
            return 1;
    return 0;
}
#endif

void gr_install_return_expect(gr_recorder *r, PyThreadState *ts)
{
#if GR_INSTALL_RETURN
    if (ts->c_profilefunc != gr_profile || gr_tstate_tracing(ts) > 0)
        return;
    PyObject **cell = gr_profile_c_return_cell(ts->interp);
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    if (!*cell || !f)
        return;
    PyCodeObject *co = gr_frame_code(f);
    if (instrumented_without_us(r, ts, co))
        return;
    if (!expect.handler && !(expect.handler = PyCFunction_New(&handler_def, NULL))) {
        gr_swallow(r);
        return;
    }
    disarm(); /* an earlier call's, never ended */
    expect.cpython = *cell; /* the cell's reference, now ours */
    *cell = Py_NewRef(expect.handler);
    expect.ts = ts;
    expect.frame = gr_tstate_frame_id(ts);
    expect.code = (PyObject *)co;
    expect.offset = gr_frame_lasti(f);
#else
    (void)r;
    (void)ts;
#endif
}

void gr_install_return_off(void)
{
#if GR_INSTALL_RETURN
    disarm();
#endif
}
