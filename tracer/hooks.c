/* hooks.c - the C profile function and the greenlet trace callback.
 *
 * These run inside the recorded program.  They never raise into it, never
 * block and never release the GIL; a failure is counted (gr_recorder.errors)
 * and the event goes on.  The profile function is the hot path: a known
 * code object costs one hash lookup and a few bytes of buffer.
 */
#include "recorder.h"

#include "instr.h"

#include <string.h>

/* Per-OS-thread cache of the calling thread's gr_thread for mark() and
 * stop(); valid only while tls_gen equals the active recording's gen. */
static _Thread_local gr_thread *tls_thread;
static _Thread_local uint64_t tls_gen;

/* ---- gr_thread object ------------------------------------------------ */

static void thread_dealloc(gr_thread *t)
{
    Py_CLEAR(t->prev_trace);
    Py_CLEAR(t->settrace);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* Record a greenlet switch or throw.  Runs in the target, after the stack
 * switch, inside greenlet's tracing guard. */
static void record_switch(gr_recorder *r, gr_thread *t, PyObject *event, PyObject *pair)
{
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        r->errors++;
        return;
    }
    PyObject *origin = PyTuple_GET_ITEM(pair, 0), *target = PyTuple_GET_ITEM(pair, 1);
    PyThreadState *ts = PyThreadState_Get();
    uint64_t t0 = r->reg ? gr_now_ns() : 0;

    uint32_t og = gr_greenlet_id(r, t, origin);
    uint32_t tg = gr_ptrmap_get(&r->greenlets, (uintptr_t)target, 0);
    if (!tg) {
        /* First sight of the target, which is running now: its frames are
         * the live ones.  If it has any, it was suspended in a C call. */
        PyFrameObject *top = PyEval_GetFrame();
        tg = gr_greenlet_define(r, t, target, top, 0, top ? GR_GL_SUSPENDED : 0);
    }
    PyObject *parent = PyObject_GetAttr(target, r->str_parent);
    uint32_t pg = 0;
    if (parent) {
        pg = gr_greenlet_id(r, t, parent);
        Py_DECREF(parent);
    } else {
        gr_swallow(r);
    }
    int dead = 0;
    PyObject *d = PyObject_GetAttr(origin, r->str_dead);
    if (d) {
        dead = PyObject_IsTrue(d) == 1;
        Py_DECREF(d);
    } else {
        gr_swallow(r);
    }

    uint64_t flags = 0;
    if (ts->c_profilefunc == gr_profile)
        flags |= GR_SW_PROFILE_OURS;
    if (ts->c_profilefunc)
        flags |= GR_SW_PROFILE_SET;
    if (GR_HAVE_USE_TRACING)
        flags |= GR_SW_USE_TRACING_KNOWN;
    if (dead)
        flags |= GR_SW_ORIGIN_DEAD;
    /* greenlet's tracing guard added one level for this callback. */
    int tracing = gr_tstate_tracing(ts) - 1;
    uint64_t f[7] = {t->tid, og, tg, pg, flags, (uint64_t)(tracing < 0 ? 0 : tracing),
                     (uint64_t)gr_resume_use_tracing(ts)};
    int is_throw = PyUnicode_Check(event) && PyUnicode_CompareWithASCIIString(event, "throw") == 0;
    uint64_t wait = 0;
    int contended = 0;
    if (r->reg) {
        /* The sampler's registry: origin suspended at its top frame (the
         * address only; the sampler reads it without the GIL), target
         * running.  Updated before the record is counted, so a sample
         * stamped with N records never predates the registry it saw. */
        uintptr_t frame = 0;
        if (!dead) {
            PyObject *fr = PyObject_GetAttr(origin, r->str_gr_frame);
            if (fr && PyFrame_Check(fr))
                frame = (uintptr_t)fr; /* kept alive by the suspended greenlet */
            if (!fr)
                gr_swallow(r);
            Py_XDECREF(fr);
        }
        contended = gr_registry_switch(r->reg, og, frame, dead, tg, pg, &wait);
    }
    uint64_t index = atomic_load_explicit(&r->nevents, memory_order_relaxed);
    gr_emit(r, is_throw ? GR_THROW : GR_SWITCH, 7, f);
    uint64_t iv;
    uint32_t nframes, nstale;
    if (gr_instr_state(&iv, &nframes, &nstale, GR_STACK_CAP) == 0) {
        /* 3.12+: whether the target's frames will report events. */
        uint64_t g[5] = {t->tid, tg, iv, nframes, nstale};
        gr_emit(r, GR_INSTR, 5, g);
    }
    if (dead) {
        uint64_t g[2] = {t->tid, og};
        gr_emit(r, GR_DEAD, 2, g);
    }
    t->cur_gid = tg;
    if (r->reg)
        gr_note_switch(r, index, wait, gr_now_ns() - t0, contended);
}

/* The recording this callback belongs to has ended, but stop() ran on
 * another thread and could not put back this thread's previous greenlet
 * callback (greenlet.settrace is per thread).  Do it now, on the first
 * switch after stop, if ours is still the installed one; this call still
 * chains to the previous callback. */
static void restore_after_stop(gr_thread *t)
{
    if (!t->settrace)
        return;
    GR_EXC_SAVE(saved);
    PyObject *was = PyObject_CallOneArg(t->settrace, t->prev_trace ? t->prev_trace : Py_None);
    if (was && was != (PyObject *)t) {
        /* Someone replaced ours meanwhile: leave theirs in place. */
        PyObject *back = PyObject_CallOneArg(t->settrace, was);
        Py_XDECREF(back);
    }
    Py_XDECREF(was);
    PyErr_Clear();
    Py_CLEAR(t->settrace); /* done once */
    GR_EXC_RESTORE(saved);
}

/* greenlet calls this as callback(event, (origin, target)).  It records,
 * then chains to the callback installed before ours; an error raised by
 * that callback propagates, as it would have without us. */
static PyObject *thread_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    gr_thread *t = (gr_thread *)self;
    gr_recorder *r = gr_active;
    if (r && t->gen == r->gen && t->tid && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 2) {
        GR_EXC_SAVE(saved);
        record_switch(r, t, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1));
        if (PyErr_Occurred())
            gr_swallow(r);
        GR_EXC_RESTORE(saved);
    }
    else if (!r || t->gen != r->gen)
        restore_after_stop(t);
    if (t->prev_trace)
        return PyObject_Call(t->prev_trace, args, kwargs);
    Py_RETURN_NONE;
}

PyTypeObject gr_thread_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "greenreplay._greenreplay.ThreadRecorder",
    .tp_basicsize = sizeof(gr_thread),
    .tp_dealloc = (destructor)thread_dealloc,
    .tp_call = thread_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Per-thread recording state; greenlet's trace callback for the thread.",
};

gr_thread *gr_thread_new(gr_recorder *r, PyThreadState *ts)
{
    gr_thread *t = PyObject_New(gr_thread, &gr_thread_type);
    if (!t) {
        gr_swallow(r);
        return NULL;
    }
    t->gen = r->gen;
    t->tid = 0;
    t->cur_gid = 0;
    t->tstate = ts;
    t->thread_id = ts->thread_id;
    t->prev_trace = NULL;
    t->settrace = NULL;
    if (PyList_Append(r->threads, (PyObject *)t) < 0) {
        Py_DECREF(t);
        gr_swallow(r);
        return NULL;
    }
    return t;
}

gr_thread *gr_thread_current(gr_recorder *r)
{
    if (tls_thread && tls_gen == r->gen)
        return tls_thread;
    PyThreadState *ts = PyThreadState_Get();
    gr_thread *t;
    if (ts->c_profilefunc == gr_profile && ((gr_thread *)ts->c_profileobj)->gen == r->gen) {
        t = (gr_thread *)ts->c_profileobj;
    } else {
        t = gr_thread_new(r, ts);
        if (!t)
            return NULL;
        Py_DECREF(t); /* r->threads keeps it */
    }
    tls_thread = t;
    tls_gen = r->gen;
    return t;
}

/* ---- the profile function --------------------------------------------- */

/* First event on a thread: the frames outside the event are its seed. */
static void profile_first_sight(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg)
{
    GR_EXC_SAVE(saved);
    PyFrameObject *top = frame;
    if (what == PyTrace_CALL)
        top = frame ? PyFrame_GetBack(frame) : NULL;
    else
        Py_XINCREF(top);
    uint32_t extra = 0;
    if (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION)
        extra = gr_cfunc_id(r, arg);
    gr_thread_first_sight(r, t, top, extra);
    Py_XDECREF(top);
    tls_thread = t;
    tls_gen = r->gen;
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

int gr_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_thread *t = (gr_thread *)obj;
    gr_recorder *r = gr_active;
    if (!r || t->gen != r->gen)
        return 0;
    if (!t->tid)
        profile_first_sight(r, t, frame, what, arg);
    switch (what) {
    case PyTrace_CALL:
        gr_emit3(r, GR_CALL, t->tid, t->cur_gid, gr_code_id(r, gr_frame_code(frame)));
        break;
    case PyTrace_RETURN:
        gr_emit3(r, GR_RETURN, t->tid, t->cur_gid, gr_code_id(r, gr_frame_code(frame)));
        break;
    case PyTrace_C_CALL:
        gr_emit3(r, GR_C_CALL, t->tid, t->cur_gid, gr_cfunc_id(r, arg));
        break;
    case PyTrace_C_RETURN:
        gr_emit3(r, GR_C_RETURN, t->tid, t->cur_gid, gr_cfunc_id(r, arg));
        break;
    case PyTrace_C_EXCEPTION:
        gr_emit3(r, GR_C_EXCEPTION, t->tid, t->cur_gid, gr_cfunc_id(r, arg));
        break;
    default:
        break;
    }
    return 0;
}
