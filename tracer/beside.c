/* beside.c - the recorder's events beside a program's profile function.
 *
 * Example: memray's tracker calls PyEval_SetProfile with its own C
 * function, and later checks that tstate->c_profilefunc is still that
 * function (at each greenlet switch, and in 1.20 at every allocation).
 * Chained (profile_slot.c), the slot held gr_profile_chain instead, and
 * memray dropped its stacks.
 *
 * On 3.12+ the profile slot is served by sys.monitoring (PEP 669): the
 * slot's function is called by the tool PY_MONITORING_SYS_PROFILE_ID (6),
 * whose callbacks (Python/legacy_tracing.c) turn PY_START, PY_RESUME and
 * PY_THROW into call, PY_RETURN, PY_YIELD and PY_UNWIND into return, and
 * CALL, C_RETURN and C_RAISE of a builtin function (or of a method
 * descriptor with its self, bound first) into c_call, c_return and
 * c_exception.  The recorder registers the same mapping on a tool of its
 * own (the highest free of ids 4 and 3, named "greenreplay") and hands
 * each event to gr_profile, as the slot would.  So when the program
 * installs its own function, the recorder leaves it in the slot, with its
 * object, and only marks the thread (t->hook.beside): its tool's
 * callbacks record the thread's events from then on; every other thread's
 * events come from the recorder's function in its slot, and the tool's
 * callbacks pass them by.  When the program clears the slot, the
 * recorder's function goes back there (gr_resolve_profile_slot) and the
 * thread is no longer marked.  What the program installs, and when, is
 * seen as before (the audit hook and the footholds, footholds.c): the
 * tool only replaces the chaining.
 *
 * The tool is taken at the first change the program announces (the audit
 * event sys.setprofile, before the change is made: the foothold's event,
 * where the change is resolved, then reaches the tool too, since
 * sys.monitoring takes an event's set of tools before calling the first)
 * or at start() with a program function in a slot, and kept until stop().
 * Its calls of sys.monitoring raise no event the program's audit hooks
 * see (gr_own_call_quiet).  Tools are called from the highest id down:
 * the program's function (6) gets each event before the recorder (4).
 * While the tool is on, every followed thread pays one more callback per
 * event.  Before 3.12, or with no free tool id, the recorder chains. */
#define GR_COMPAT_MONITORING 1
#include "beside.h"

#include "instr.h"
#include "profile.h"
#include "threads.h"

/* sys.monitoring.MISSING (owned, kept for good): no self argument. */
static PyObject *missing;

/* The calling thread, if the recorder watches it beside the program's
 * function (else NULL: the slot's gr_profile records its events, or the
 * recorder does not follow it). */
static gr_thread *beside_thread(gr_recorder *r)
{
    if (!r || !r->beside.tool)
        return NULL;
    gr_thread *t = gr_thread_known(r);
    if (!t || !t->hook.beside)
        return NULL;
    Py_tracefunc f = gr_tstate_now()->c_profilefunc;
    return f == gr_profile || f == gr_profile_chain ? NULL : t;
}

/* The event to gr_profile, with the running frame, as the slot gets it. */
static PyObject *deliver(gr_recorder *r, int what, PyObject *arg)
{
    PyFrameObject *frame = PyEval_GetFrame();
    if (frame) {
        Py_INCREF(frame);
        gr_profile(NULL, frame, what, arg);
        Py_DECREF(frame);
    }
    if (PyErr_Occurred())
        gr_swallow(r);
    Py_RETURN_NONE;
}

static PyObject *on_start(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    gr_recorder *r = gr_active;
    return beside_thread(r) ? deliver(r, PyTrace_CALL, Py_None) : Py_NewRef(Py_None);
}

static PyObject *on_return(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    gr_recorder *r = gr_active;
    return beside_thread(r) ? deliver(r, PyTrace_RETURN, n > 2 ? args[2] : Py_None) : Py_NewRef(Py_None);
}

static PyObject *on_unwind(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    gr_recorder *r = gr_active;
    return beside_thread(r) ? deliver(r, PyTrace_RETURN, NULL) : Py_NewRef(Py_None);
}

/* The slot in t->open_c of frame f's open C call, or -1. */
static int open_c_find(const gr_thread *t, PyFrameObject *f)
{
    for (int i = 0; f && i < GR_OPEN_C; i++)
        if (t->open_c.frame[i] == f)
            return i;
    return -1;
}

/* After the C event `what` of frame f was delivered: a C_CALL written
 * there is kept as f's open C call; any other C event ends f's. */
static void open_c_note(gr_thread *t, PyFrameObject *f, int what)
{
    int i = open_c_find(t, f);
    if (what != PyTrace_C_CALL || t->ccall_frame != f || !f || !t->last_c_call) {
        if (i >= 0)
            t->open_c.frame[i] = NULL;
        return;
    }
    if (i < 0) {
        i = (int)(t->open_c.next % GR_OPEN_C);
        t->open_c.next = (unsigned)i + 1;
    }
    t->open_c.frame[i] = f;
    t->open_c.code[i] = t->last_c_call;
}

/* CALL, C_RETURN, C_RAISE (code, offset, callable, arg0): only builtin
 * functions, and method descriptors bound to their self. */
static PyObject *c_event(int what, PyObject *const *args, Py_ssize_t n)
{
    gr_recorder *r = gr_active;
    gr_thread *t = n < 4 ? NULL : beside_thread(r);
    if (!t)
        Py_RETURN_NONE;
    PyObject *callable = args[2], *res;
    if (PyCFunction_Check(callable)) {
        res = deliver(r, what, callable);
    } else {
        if (Py_TYPE(callable) != &PyMethodDescr_Type || args[3] == missing)
            Py_RETURN_NONE;
        PyObject *meth = Py_TYPE(callable)->tp_descr_get(callable, args[3], (PyObject *)Py_TYPE(args[3]));
        if (!meth) {
            gr_swallow(r);
            Py_RETURN_NONE;
        }
        res = deliver(r, what, meth);
        Py_DECREF(meth);
    }
    if (gr_active == r && gr_tls.gen == r->tls_key && gr_tls.thread == t)
        open_c_note(t, PyEval_GetFrame(), what);
    return res;
}

static PyObject *on_call(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    return c_event(PyTrace_C_CALL, args, n);
}

static PyObject *on_c_return(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    return c_event(PyTrace_C_RETURN, args, n);
}

static PyObject *on_c_raise(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    return c_event(PyTrace_C_EXCEPTION, args, n);
}

#define GR_CB(name, fn) {name, (PyCFunction)(void (*)(void))(fn), METH_FASTCALL, NULL}
/* The events and their callbacks; the last two follow CALL (they cannot
 * be set on their own). */
static PyMethodDef cb_defs[] = {
    GR_CB("PY_START", on_start), GR_CB("PY_RESUME", on_start), GR_CB("PY_THROW", on_start),
    GR_CB("PY_RETURN", on_return), GR_CB("PY_YIELD", on_return), GR_CB("PY_UNWIND", on_unwind),
    GR_CB("CALL", on_call), GR_CB("C_RETURN", on_c_return), GR_CB("C_RAISE", on_c_raise),
};
#define NCB ((int)(sizeof cb_defs / sizeof cb_defs[0]))
#define NSET (NCB - 2)
static PyObject *cbs[NCB]; /* owned, made once */

/* sys.monitoring.NAME(*args), quietly; args (a tuple, or NULL after a
 * failed build) is consumed.  New reference or NULL with an exception. */
static PyObject *mon_call(const char *name, PyObject *args)
{
    PyObject *mon = PySys_GetObject("monitoring"); /* borrowed */
    if (!mon && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "no sys.monitoring");
    PyObject *fn = mon && args ? PyObject_GetAttrString(mon, name) : NULL;
    PyObject *res = fn ? gr_own_call_quiet(fn, args) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(args);
    return res;
}

static int mon_do(const char *name, PyObject *args)
{
    PyObject *res = mon_call(name, args);
    Py_XDECREF(res);
    return res ? 0 : -1;
}

/* The id of event NAME (sys.monitoring.events.NAME), -1 with an
 * exception on failure. */
static int event_id(const char *name)
{
    PyObject *mon = PySys_GetObject("monitoring");
    PyObject *events = mon ? PyObject_GetAttrString(mon, "events") : NULL;
    PyObject *v = events ? PyObject_GetAttrString(events, name) : NULL;
    long id = v ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    Py_XDECREF(events);
    if (id < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "no sys.monitoring.events");
    return (int)id;
}

/* Register the callbacks on tool (or None for each: on 0). */
static int register_all(int tool, int on)
{
    for (int i = 0; i < NCB; i++) {
        if (on && !cbs[i] && !(cbs[i] = PyCFunction_New(&cb_defs[i], NULL)))
            return -1;
        int ev = event_id(cb_defs[i].ml_name);
        if (ev < 0 || mon_do("register_callback", Py_BuildValue("(iiO)", tool, ev, on ? cbs[i] : Py_None)) < 0)
            return -1;
    }
    return 0;
}

/* Set the tool's events: all of them (on) or none. */
static int set_events(int tool, int on)
{
    long mask = 0;
    for (int i = 0; on && i < NSET; i++) {
        int ev = event_id(cb_defs[i].ml_name);
        if (ev < 0)
            return -1;
        mask |= ev; /* the events are bits */
    }
    return mon_do("set_events", Py_BuildValue("(il)", tool, mask));
}

/* A free tool id, taken; -1 when none is free (no exception) or on a
 * failure (exception set). */
static int claim(void)
{
    static const int ids[] = {4, 3};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        PyObject *who = mon_call("get_tool", Py_BuildValue("(i)", ids[i]));
        if (!who)
            return -1;
        int is_free = who == Py_None;
        Py_DECREF(who);
        if (is_free)
            return mon_do("use_tool_id", Py_BuildValue("(is)", ids[i], "greenreplay")) < 0 ? -1 : ids[i];
    }
    return -1;
}

int gr_beside_on(gr_recorder *r)
{
    if (!GR_BESIDE || r->beside.failed)
        return 0;
    if (r->beside.tool)
        return 1;
    GR_EXC_SAVE(saved);
    gr_own_change_begin(r);
    if (!missing) {
        PyObject *mon = PySys_GetObject("monitoring");
        missing = mon ? PyObject_GetAttrString(mon, "MISSING") : NULL;
    }
    int tool = missing ? claim() : -1;
    if (tool >= 0 && (register_all(tool, 1) < 0 || set_events(tool, 1) < 0)) {
        GR_EXC_SAVE(failed);
        (void)register_all(tool, 0);
        (void)mon_do("free_tool_id", Py_BuildValue("(i)", tool));
        GR_EXC_RESTORE(failed);
        tool = -1;
    }
    gr_own_change_end(r);
    if (tool < 0)
        r->beside.failed = 1;
    else
        r->beside.tool = tool + 1;
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
    return tool >= 0;
}

void gr_beside_off(gr_recorder *r)
{
    if (!r->beside.tool)
        return;
    int tool = r->beside.tool - 1;
    r->beside.tool = 0;
    GR_EXC_SAVE(saved);
    gr_own_change_begin(r);
    /* Each step even when one before failed (its error counted). */
    if (set_events(tool, 0) < 0)
        gr_swallow(r);
    if (register_all(tool, 0) < 0)
        gr_swallow(r);
    if (mon_do("free_tool_id", Py_BuildValue("(i)", tool)) < 0)
        gr_swallow(r);
    gr_own_change_end(r);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

/* CPython's function that calls a Python profile function from the slot
 * (profile_trampoline, not exported): the one sys.setprofile(callable)
 * puts there, learned at the program's first such call. */
static Py_tracefunc trampoline;

void gr_beside_learn_trampoline(Py_tracefunc f)
{
    if (f && f != gr_profile && f != gr_profile_chain)
        trampoline = f;
}

void gr_beside_raised(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
#if GR_INSTALL_RETURN
    int unwind;
    if (!r->beside.tool || !trampoline || ts->c_profilefunc != trampoline || !gr_beside_holds(t, ts) ||
        gr_tstate_tracing(ts) <= 0)
        return;
    int c_end = gr_dispatching_c_end(ts);
    if (c_end >= 0) {
        /* The end of a C call (c_return, c_exception): the tool's C_CALL
         * of the running frame, if it wrote one, ends now. */
        PyFrameObject *f = PyEval_GetFrame();
        int i = open_c_find(t, f);
        if (i >= 0) {
            t->open_c.frame[i] = NULL;
            gr_profile_c_end(r, t, f, c_end, t->open_c.code[i]);
        }
        return;
    }
    int what = gr_dispatching_python_event(ts, &unwind);
    if (what < 0 || (what == PyTrace_RETURN && !unwind))
        return;
    GR_EXC_SAVE(saved);
    Py_DECREF(deliver(r, what, unwind ? NULL : Py_None));
    GR_EXC_RESTORE(saved);
#else
    (void)r;
    (void)t;
    (void)ts;
#endif
}

int gr_slot_observed(gr_recorder *r, PyThreadState *ts)
{
    Py_tracefunc f = ts->c_profilefunc;
    if (f == gr_profile || f == gr_profile_chain)
        return 1;
    if (!f || !r || !r->beside.tool)
        return 0;
    gr_thread *t = gr_thread_of_tstate(r, ts);
    return t && gr_beside_holds(t, ts);
}
