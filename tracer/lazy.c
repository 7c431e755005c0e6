/* lazy.c - what a program's profile function gets in code CPython
 * instruments lazily.
 *
 * Example, on 3.13, unrecorded:
 *
 *     def worker():
 *         parent.switch()     # g suspended here, then:
 *         len("a")            # sys.setprofile(f) in the parent; g resumed
 *
 * f gets no c_call len, no return of worker: on 3.12+ sys.setprofile turns
 * tool 6's events on, which instruments only the code of the frames
 * executing then; other code is instrumented at its next RESUME, and a
 * greenlet's suspended frame resumes without one (compat.h
 * gr_profile_cell).  Until worker's code is entered again, f sees nothing
 * of g's frames.  Recorded, the recorder's own function had kept tool 6's
 * events on from start(), so worker's code had been instrumented when g
 * first ran it, and f got every event there: yappi counted len twice
 * where unrecorded it counts it once.
 *
 * So from the program's first install (when, unrecorded, tool 6's events
 * would go on) the recorder puts its own handlers in tool 6's cells of the
 * events whose tools come from the code's instrumentation (PY_START,
 * PY_RESUME, PY_RETURN, PY_YIELD, CALL, C_RETURN, C_RAISE) and keeps the
 * set of code objects that, unrecorded, would have been instrumented since
 * (live): those executing on any thread at the install, and any code
 * entered since (PY_START, PY_RESUME: a RESUME).  On a thread whose slot
 * holds a program's function, the handler passes an event to CPython's
 * handler only where the code is live; a C call's C_RETURN or C_RAISE
 * also needs its CALL to have been in live code (unrecorded, a CALL
 * instruction gives C_RETURN only if it was instrumented when it began,
 * and a call begun before the install was not).  Where the slot holds the
 * recorder's function, every event passes.  The recorder's own tool
 * (beside.c) gets every event, live or not.  The cells are out of the
 * program's reach: sys.monitoring refuses tool 6.
 *
 * This covers the C calls in progress at the install (the installing call
 * and the calls below it, other threads' calls, the switch() of each
 * suspended greenlet): their C_RETURN finds no CALL seen in live code.
 * install_return.c's handler still stands in front of this one for the
 * installing thread's calls: it keeps them after stop() and in the fork
 * child, where this one is gone.
 *
 * Not covered (docs/RECORDER.md): code entered only inside a profile or
 * trace function (RESUME instruments it, but no tool is called), the
 * program's later monitoring changes (cProfile's enable() instruments the
 * code executing then: not noted as live), a second install after every
 * program function was cleared (the set starts again from the code
 * executing then, where unrecorded the code instrumented before still
 * has tool 6), and the events after stop().
 */
#define GR_COMPAT_MONITORING 1
#include "lazy.h"

#include "profile.h"
#include "ptrmap.h"

#if GR_INSTALL_RETURN
enum { EV_START, EV_RESUME, EV_RETURN, EV_YIELD, EV_CALL, EV_C_RETURN, EV_C_RAISE, NEV };
static const int ev_ids[NEV] = {
    PY_MONITORING_EVENT_PY_START, PY_MONITORING_EVENT_PY_RESUME, PY_MONITORING_EVENT_PY_RETURN,
    PY_MONITORING_EVENT_PY_YIELD, PY_MONITORING_EVENT_CALL,      PY_MONITORING_EVENT_C_RETURN,
    PY_MONITORING_EVENT_C_RAISE,
};

static struct {
    int armed;
    unsigned ours;              /* the recorder's tool, a bit per id */
    PyObject *handler[NEV];     /* ours (owned, made once) */
    PyObject *cpython[NEV];     /* CPython's, set aside while armed (owned) */
    gr_ptrmap live;             /* (code, 0) -> 1 */
    gr_ptrmap calls;            /* (frame, code) -> offset + 1: a C call begun in live code */
} lz;

static int live(PyObject *code)
{
    return gr_ptrmap_get(&lz.live, (uintptr_t)code, 0) != 0;
}

static void make_live(PyObject *code, void *ctx)
{
    (void)ctx;
    if (!live(code) && gr_ptrmap_put(&lz.live, (uintptr_t)code, 0, 1) < 0)
        PyErr_Clear(); /* left out: its events go by, as before */
}

/* Whether a program's function in the slot gets event k now; the
 * bookkeeping of the live set and of the C calls is done either way. */
static int program_sees(int k, PyThreadState *ts, PyObject *const *args, Py_ssize_t n)
{
    PyObject *code = n >= 1 ? args[0] : NULL;
    if (!code || !PyCode_Check(code))
        return 1;
    if (k == EV_START || k == EV_RESUME) {
        make_live(code, NULL);
        return 1;
    }
    if (k == EV_RETURN || k == EV_YIELD)
        return live(code);
    long offset = n >= 2 && PyLong_Check(args[1]) ? PyLong_AsLong(args[1]) : -1;
    uintptr_t frame = (uintptr_t)gr_tstate_frame_id(ts);
    if (offset < 0 || !frame) {
        PyErr_Clear();
        return 1;
    }
    if (k == EV_CALL) {
        int l = live(code);
        PyObject *callable = n >= 3 ? args[2] : NULL;
        if (!callable || !(PyCFunction_Check(callable) || Py_TYPE(callable) == &PyMethodDescr_Type))
            return l;
        if (!l)
            gr_ptrmap_del(&lz.calls, frame, (uintptr_t)code);
        else if (gr_ptrmap_put(&lz.calls, frame, (uintptr_t)code, (uint32_t)offset + 1) < 0)
            PyErr_Clear();
        return l;
    }
    /* C_RETURN, C_RAISE: the call's CALL in live code, or a program's own
     * tool with CALL there (it was instrumented for that tool). */
    int begun = gr_ptrmap_get(&lz.calls, frame, (uintptr_t)code) == (uint32_t)offset + 1;
    if (begun)
        gr_ptrmap_del(&lz.calls, frame, (uintptr_t)code);
    return live(code) &&
           (begun || (gr_call_tools(ts->interp, (PyCodeObject *)code) & 0x3Fu & ~lz.ours));
}

static PyObject *dispatch(int k, PyObject *const *args, Py_ssize_t n)
{
    PyObject *cpython = lz.cpython[k];
    if (!cpython)
        Py_RETURN_NONE;
    PyThreadState *ts = PyThreadState_Get();
    Py_tracefunc f = ts->c_profilefunc;
    int program = f && f != gr_profile && f != gr_profile_chain;
    if (!program_sees(k, ts, args, n) && program)
        Py_RETURN_NONE;
    Py_INCREF(cpython);
    PyObject *res = PyObject_Vectorcall(cpython, args, (size_t)n, NULL);
    Py_DECREF(cpython);
    return res;
}

#define GR_LZ(name, k)                                                            \
    static PyObject *name(PyObject *self, PyObject *const *args, Py_ssize_t n)    \
    {                                                                             \
        (void)self;                                                               \
        return dispatch(k, args, n);                                              \
    }
GR_LZ(on_start, EV_START)
GR_LZ(on_resume, EV_RESUME)
GR_LZ(on_return, EV_RETURN)
GR_LZ(on_yield, EV_YIELD)
GR_LZ(on_call, EV_CALL)
GR_LZ(on_c_return, EV_C_RETURN)
GR_LZ(on_c_raise, EV_C_RAISE)

#define GR_LZ_DEF(fn) {"greenreplay_lazy", (PyCFunction)(void (*)(void))(fn), METH_FASTCALL, NULL}
static PyMethodDef defs[NEV] = {
    GR_LZ_DEF(on_start), GR_LZ_DEF(on_resume), GR_LZ_DEF(on_return), GR_LZ_DEF(on_yield),
    GR_LZ_DEF(on_call),  GR_LZ_DEF(on_c_return), GR_LZ_DEF(on_c_raise),
};

/* Whether any thread's slot holds a function of the program's. */
static int program_function_anywhere(PyInterpreterState *interp)
{
    for (PyThreadState *o = PyInterpreterState_ThreadHead(interp); o; o = PyThreadState_Next(o))
        if (o->c_profilefunc && o->c_profilefunc != gr_profile && o->c_profilefunc != gr_profile_chain)
            return 1;
    return 0;
}
#endif

void gr_lazy_arm(gr_recorder *r, PyThreadState *ts)
{
#if GR_INSTALL_RETURN
    if (lz.armed || !r->beside.tool || ts->c_profilefunc != gr_profile || program_function_anywhere(ts->interp))
        return;
    for (int k = 0; k < NEV; k++)
        if (!*gr_profile_cell(ts->interp, ev_ids[k]))
            return; /* tool 6 never set up: nothing to stand in front of */
    for (int k = 0; k < NEV; k++)
        if (!lz.handler[k] && !(lz.handler[k] = PyCFunction_New(&defs[k], NULL))) {
            gr_swallow(r);
            return;
        }
    gr_install_return_cancel(); /* its cell is one of ours; the set covers its calls */
    lz.ours = 1u << (r->beside.tool - 1);
    for (PyThreadState *o = PyInterpreterState_ThreadHead(ts->interp); o; o = PyThreadState_Next(o))
        gr_executing_codes(o, make_live, NULL);
    for (int k = 0; k < NEV; k++) {
        PyObject **cell = gr_profile_cell(ts->interp, ev_ids[k]);
        lz.cpython[k] = *cell; /* the cell's reference, now ours */
        *cell = Py_NewRef(lz.handler[k]);
    }
    lz.armed = 1;
#else
    (void)r;
    (void)ts;
#endif
}

void gr_lazy_disarm(void)
{
#if GR_INSTALL_RETURN
    if (!lz.armed)
        return;
    PyInterpreterState *interp = PyInterpreterState_Get();
    for (int k = 0; k < NEV; k++) {
        PyObject **cell = gr_profile_cell(interp, ev_ids[k]);
        PyObject *cpython = lz.cpython[k];
        lz.cpython[k] = NULL;
        if (*cell == lz.handler[k]) {
            *cell = cpython; /* the cell's reference */
            Py_DECREF(lz.handler[k]);
        } else if (gr_install_return_unwrap(lz.handler[k], cpython)) {
            Py_DECREF(lz.handler[k]); /* install_return.c's, set aside, was the cell's */
        } else {
            Py_XDECREF(cpython); /* someone else changed the cell: leave it */
        }
    }
    gr_ptrmap_free(&lz.live);
    gr_ptrmap_free(&lz.calls);
    lz.armed = 0;
#endif
}

#if GR_INSTALL_RETURN
/* Bring the code of every suspended greenlet's frames up to date where
 * that changes nothing else (compat.h gr_code_catch_up); all 0: only code
 * that is not live. */
static void catch_up(gr_recorder *r, int all)
{
    if (!GR_CATCH_UP || !r->gl_api.str_gr_frame)
        return;
    GR_EXC_SAVE(saved);
    PyInterpreterState *interp = PyInterpreterState_Get();
    for (uint32_t i = 0; i < r->gls.gl_used; i++) {
        PyObject *g = r->gls.gl[i].wr ? gr_weakref_get(r->gls.gl[i].wr) : NULL;
        PyObject *f = g ? PyObject_GetAttr(g, r->gl_api.str_gr_frame) : NULL; /* None: running */
        Py_XDECREF(g);
        while (f && PyFrame_Check(f)) {
            PyCodeObject *co = PyFrame_GetCode((PyFrameObject *)f);
            if (all || !live((PyObject *)co))
                (void)gr_code_catch_up(interp, co);
            Py_DECREF(co);
            PyObject *back = (PyObject *)PyFrame_GetBack((PyFrameObject *)f);
            Py_DECREF(f);
            f = back;
        }
        Py_XDECREF(f);
        if (PyErr_Occurred())
            PyErr_Clear();
    }
    GR_EXC_RESTORE(saved);
}
#endif

void gr_lazy_after_change(gr_recorder *r, PyThreadState *ts)
{
#if GR_INSTALL_RETURN
    if (!lz.armed)
        return; /* which code has tool 6 unrecorded is not known */
    int cleared = !program_function_anywhere(ts->interp);
    catch_up(r, !cleared);
    if (cleared)
        gr_lazy_disarm();
#else
    (void)r;
    (void)ts;
#endif
}
