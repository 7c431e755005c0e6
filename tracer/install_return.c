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
 * The same holds for the C calls the frames below are in: a
 * contextmanager's generator that installs f runs inside next(), called
 * by __enter__; a script run by exec() inside exec.  Unrecorded none of
 * them gives f a c_return; recorded each did.
 *
 * So at the audit event (before the change) the recorder notes the C
 * calls in progress on the thread (frame, code object, offset of each:
 * gr_c_calls_in_progress), when no other thread has a program's profile
 * function, leaving out frames whose code a program's tool has CALL
 * events on, and puts its own handler in tool 6's C_RETURN cell for as
 * long as one of them is noted.  The handler forwards every event to
 * CPython's handler except those calls' own C_RETURNs; a frame's note goes
 * at its first C_RETURN (a frame in a C call gets its next C_RETURN from
 * that call), and CPython's handler goes back with the last note.  Frames
 * in a Python call are not noted: one such frame may return with no C
 * call, and a later frame at the same address, same code and offset
 * (dispatch(install, f), then dispatch(len, x)) must keep its c_return.
 * The recorder still records the c_return (its tool gets the event after).
 * The cell is out of the program's reach: sys.monitoring refuses tool 6.
 *
 * The same for the call event of a frame whose dispatch makes the install
 * (the program's trace function installs f at a frame's `call`): the
 * recorder's handler holds tool 6's cell of that event until the thread's
 * next call event, and drops that frame's (start_expect_arm).  The frame
 * is the first below the innermost C entry: an install made through a C
 * function that called Python code inside the trace function is missed.
 *
 * Not covered (docs/RECORDER.md): another thread inside a C call when
 * PyEval_SetProfileAllThreads installs a function there (its c_return
 * reaches the new function recorded only), the C call a suspended
 * greenlet of the thread is in (its switch()), calls below the 32
 * innermost noted, and a program's sys.monitoring tool given the
 * C_RETURN of the call that set its events.
 * Before 3.12 the recorder chains the program's function
 * (gr_profile_chain), which drops the event itself.
 */
#define GR_COMPAT_MONITORING 1
#include "install_return.h"

#include "profile.h"

#include <string.h>

#if GR_INSTALL_RETURN
/* The C calls in progress when the program's function was installed,
 * innermost first: the installing call, and those of frames below it
 * (a contextmanager's __enter__ in next(), a script run by exec()). */
#define GR_EXPECT_MAX 32
static struct {
    PyObject *handler; /* ours (owned, made once) */
    PyObject *cpython; /* CPython's, set aside while armed (owned) */
    PyThreadState *ts; /* the calls' thread: compared, never read */
    int n;
    gr_call_at at[GR_EXPECT_MAX];
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
    expect.n = 0;
}

/* Whether the C_RETURN of (code, offset) in the running frame of thread
 * ts is one of the calls expected; the frame's entry goes either way (a
 * frame's next C_RETURN ends the C call it was in, or a later one). */
static int expected(PyThreadState *ts, PyObject *const *args, Py_ssize_t n)
{
    const void *frame = gr_tstate_frame_id(ts);
    for (int i = 0; i < expect.n; i++) {
        if (expect.at[i].frame != frame)
            continue;
        int same = n >= 2 && args[0] == expect.at[i].code && PyLong_Check(args[1]) &&
                   PyLong_AsLong(args[1]) == expect.at[i].offset;
        expect.at[i] = expect.at[--expect.n];
        return same;
    }
    return 0;
}

/* Tool 6's C_RETURN handler while armed: (code, offset, callable, arg0). */
static PyObject *on_c_return(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    PyObject *cpython = Py_NewRef(expect.cpython);
    PyThreadState *ts = PyThreadState_Get();
    int drop = 0;
    if (ts == expect.ts) {
        drop = expected(ts, args, n) && ts->c_profilefunc != gr_profile;
        if (!expect.n)
            disarm();
    }
    PyObject *res = drop ? Py_NewRef(Py_None) : PyObject_Vectorcall(cpython, args, (size_t)n, NULL);
    Py_DECREF(cpython);
    return res;
}

static PyMethodDef handler_def = {"greenreplay_c_return", (PyCFunction)(void (*)(void))on_c_return,
                                  METH_FASTCALL, NULL};

/* The recorder's own tool (a bit per id). */
static unsigned ours(gr_recorder *r)
{
    return r->beside.tool ? 1u << (r->beside.tool - 1) : 0;
}

/* Whether, without the recorder, every C call in progress on thread ts
 * would be instrumented for CALL: another thread has a profile function
 * of the program (tool 6's events are the whole interpreter's). */
static int instrumented_without_us(PyThreadState *ts)
{
    for (PyThreadState *o = PyInterpreterState_ThreadHead(ts->interp); o; o = PyThreadState_Next(o))
        if (o != ts && o->c_profilefunc && o->c_profilefunc != gr_profile)
            return 1;
    return 0;
}

/* The call event of a frame whose dispatch installed the program's
 * function: the program's trace function (tool 7, called first) made the
 * install at the frame's PY_START (or PY_RESUME, PY_THROW).  Unrecorded
 * tool 6 had no events there, and the function just installed gets no
 * `call` for that frame; recorded, the recorder's function had them, and
 * tool 6's handler, called next, handed the event to the function now in
 * the slot.  So its cell holds a handler of the recorder's until the
 * thread's next call event, which drops that frame's. */
static struct {
    PyObject *handler; /* ours (owned, made once) */
    PyObject *cpython; /* CPython's, set aside while armed (owned) */
    PyObject **cell;
    PyThreadState *ts; /* compared, never read */
    const void *frame;
    PyObject *code;    /* compared, never read */
} start_expect;

static void start_disarm(void)
{
    PyObject *cpython = start_expect.cpython;
    if (!cpython)
        return;
    if (*start_expect.cell == start_expect.handler) {
        *start_expect.cell = cpython;
        Py_DECREF(start_expect.handler);
    } else {
        Py_DECREF(cpython);
    }
    start_expect.cpython = NULL;
    start_expect.ts = NULL;
}

/* Tool 6's call-event handler while armed: (code, offset). */
static PyObject *on_start(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    PyObject *cpython = Py_NewRef(start_expect.cpython);
    PyThreadState *ts = PyThreadState_Get();
    int drop = 0;
    if (ts == start_expect.ts) {
        drop = gr_tstate_frame_id(ts) == start_expect.frame && n >= 1 && args[0] == start_expect.code &&
               ts->c_profilefunc != gr_profile;
        start_disarm();
    }
    PyObject *res = drop ? Py_NewRef(Py_None) : PyObject_Vectorcall(cpython, args, (size_t)n, NULL);
    Py_DECREF(cpython);
    return res;
}

static PyMethodDef start_def = {"greenreplay_start", (PyCFunction)(void (*)(void))on_start, METH_FASTCALL, NULL};

/* At the install, inside a dispatch (tracing): arm when that dispatch is
 * a frame's call event and tool 6's events are the recorder's alone. */
static void start_expect_arm(gr_recorder *r, PyThreadState *ts)
{
    PyObject **cell = gr_profile_call_cell(ts), *code = NULL;
    const void *frame = cell && *cell && ts->c_tracefunc ? gr_dispatched_frame_id(ts, &code) : NULL;
    if (!frame || instrumented_without_us(ts))
        return;
    if (!start_expect.handler && !(start_expect.handler = PyCFunction_New(&start_def, NULL))) {
        gr_swallow(r);
        return;
    }
    start_disarm();
    start_expect.code = code;
    start_expect.cpython = *cell; /* the cell's reference, now ours */
    *cell = Py_NewRef(start_expect.handler);
    start_expect.cell = cell;
    start_expect.ts = ts;
    start_expect.frame = frame;
}
#endif

void gr_install_return_expect(gr_recorder *r, PyThreadState *ts)
{
#if GR_INSTALL_RETURN
    if (ts->c_profilefunc == gr_profile && gr_tstate_tracing(ts) > 0)
        start_expect_arm(r, ts);
    if (ts->c_profilefunc != gr_profile || gr_tstate_tracing(ts) > 0)
        return;
    PyObject **cell = gr_profile_c_return_cell(ts->interp);
    if (!*cell || instrumented_without_us(ts))
        return;
    gr_call_at at[GR_EXPECT_MAX];
    int n = gr_c_calls_in_progress(ts, at, GR_EXPECT_MAX), kept = 0;
    for (int i = 0; i < n; i++) /* (a program's tool with CALL there: its own) */
        if (!(gr_call_tools(ts->interp, (PyCodeObject *)at[i].code) & 0x3Fu & ~ours(r)))
            at[kept++] = at[i];
    if (!kept)
        return;
    if (!expect.handler && !(expect.handler = PyCFunction_New(&handler_def, NULL))) {
        gr_swallow(r);
        return;
    }
    disarm(); /* an earlier install's, not all ended */
    expect.cpython = *cell; /* the cell's reference, now ours */
    *cell = Py_NewRef(expect.handler);
    expect.ts = ts;
    expect.n = kept;
    memcpy(expect.at, at, sizeof at[0] * (size_t)kept);
#else
    (void)r;
    (void)ts;
#endif
}

int gr_install_return_unwrap(PyObject *inner, PyObject *real)
{
#if GR_INSTALL_RETURN
    if (!expect.cpython || expect.cpython != inner)
        return 0;
    expect.cpython = real;
    return 1;
#else
    (void)inner;
    (void)real;
    return 0;
#endif
}

void gr_install_return_cancel(void)
{
#if GR_INSTALL_RETURN
    disarm();
#endif
}

void gr_install_return_off(void)
{
#if GR_INSTALL_RETURN
    /* The calling thread's calls go on after the recording (stop() made
     * by the program's audit hook during the install, or fork() there: the
     * child goes on with the call), and they were instrumented by it: the
     * handler stays until they end.  It reads nothing of the recording. */
    if (expect.ts != PyThreadState_Get())
        disarm();
    if (start_expect.ts != PyThreadState_Get())
        start_disarm();
#endif
}
