/* threads.c - gr_thread objects: one per thread the recorder follows.
 *
 * A gr_thread is a Python object (recorder.h): CPython holds it as the
 * profile slot's object and, in callback mode, greenlet calls it as the
 * thread's trace callback.  Here: its type and that callback, making one,
 * sweeping those of ended threads, and finding the calling thread's
 * through a per-OS-thread cache (threads.h gr_thread_known).  Runs inside
 * the recorded program: never raises into it (docs/RECORDER.md,
 * invariant 1).
 */
#include "threads.h"

#include <string.h>

/* Per-OS-thread cache of the calling thread's gr_thread (threads.h). */
_Thread_local struct gr_tls gr_tls __attribute__((tls_model("initial-exec")));

/* ---- gr_thread object ------------------------------------------------ */

static void thread_dealloc(gr_thread *t)
{
    Py_CLEAR(t->cb.prev);
    Py_CLEAR(t->cb.gl_settrace);
    Py_CLEAR(t->hook.chain_obj);
    Py_CLEAR(t->foot.obj);
    Py_CLEAR(t->foot.frame);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* Whether a switch to greenlet g can be written without g's stack: g is
 * known to the recording, or a greenlet created while recording (no seed
 * needed).  A greenlet alive at start() or a main greenlet seen for the
 * first time needs its frames as its seed: written at its first event or
 * mark() instead. */
static int unseen_writable(gr_recorder *r, PyObject *g)
{
    if (gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)g, 0))
        return 1;
    if (gr_ptrmap_get(&r->gls.preexisting, (uintptr_t)g, 0))
        return 0;
    PyObject *parent = gr_greenlet_parent(r, g);
    int ok = parent && parent != Py_None;
    Py_XDECREF(parent);
    if (!parent)
        PyErr_Clear();
    return ok;
}

/* Callback mode: greenlet announces a switch or throw.  Runs in the
 * target, after the stack switch, inside greenlet's tracing guard.  The
 * record is written at the target's first event (switches.c), where its
 * real stack is known; a wrapper of this callback lends it no frames. */
static void note_switch_callback(gr_recorder *r, gr_thread *t, PyObject *event, PyObject *pair)
{
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        r->errors++;
        return;
    }
    int is_throw = PyUnicode_Check(event) && PyUnicode_CompareWithASCIIString(event, "throw") == 0;
    t->cb.pending = is_throw ? 2 : 1;
    t->cb.target = PyTuple_GET_ITEM(pair, 1);
    if (!r->out.profile_on) {
        /* start(profile=False) (the switch-path benchmark): no event will
         * follow, so the switch is written here, in the target. */
        PyFrameObject *top = PyEval_GetFrame();
        gr_switch_seen(r, t, t->cb.target, top, 0, is_throw);
    } else if (gr_tstate_tracing(PyThreadState_GET()) > 1 && unseen_writable(r, t->cb.target)) {
        /* greenlet's guard adds one: the switch was made inside a profile
         * or trace function of the program (or a greenlet callback it
         * calls), so the target delivers no event until that returns:
         * the switch is written here, or it would be lost with every
         * greenlet that ran there.  Without a stack: this callback may be
         * wrapped by the program's, whose frames are on top. */
        gr_switch_seen(r, t, t->cb.target, NULL, GR_SEEN_IN_TRACING, is_throw);
    }
}

/* The recording this callback belongs to has ended, but stop() ran on
 * another thread and could not put back this thread's previous greenlet
 * callback (greenlet.settrace is per thread).  Do it now, on the first
 * switch after stop, if ours is still the installed one; this call still
 * chains to the previous callback. */
static void restore_after_stop(gr_thread *t)
{
    if (!t->cb.gl_settrace)
        return;
    GR_EXC_SAVE(saved);
    gr_put_back_callback(t);
    PyErr_Clear();
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
        note_switch_callback(r, t, PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1));
        if (PyErr_Occurred())
            gr_swallow(r);
        GR_EXC_RESTORE(saved);
    }
    else if (!r || t->gen != r->gen)
        restore_after_stop(t);
    if (t->cb.prev)
        return PyObject_Call(t->cb.prev, args, kwargs);
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

/* A live thread state and the thread it serves now (CPython reuses both). */
typedef struct {
    uintptr_t ts;
    unsigned long id;
} live_ts;

static int by_tstate(const void *a, const void *b)
{
    const live_ts *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Drop from r->follow.threads the gr_threads of threads that have ended: their
 * thread state (with their thread id) is no longer in the interpreter's
 * list, or a new thread took both over (ended; memory stays
 * bounded by the live threads, not by every thread ever seen).  What the
 * recording still needs of such a thread stays in its greenlets' state:
 * they are marked GR_GLS_GONE (stop() then knows their thread ended and
 * writes them under its tid), the placeholder of a main greenlet that
 * greenlet was never asked about is released, and no greenlet keeps a
 * pointer to it.  An OS thread that gets a new thread state later (a C
 * thread using PyGILState_Ensure) must not find the dropped object in its
 * cache: tls_key changes.  A gr_thread held elsewhere (callback mode: the
 * thread's greenlet callback) lives on with its last reference.
 * Cost: O(live threads log live threads + threads + greenlet slots), at
 * most once per doubling of r->follow.threads.  Never raises. */
static void sweep_threads(gr_recorder *r, PyThreadState *me)
{
    Py_ssize_t n = PyList_GET_SIZE(r->follow.threads);
    size_t nlive = 0, cap = 64;
    live_ts *live = PyMem_Malloc(cap * sizeof *live);
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); live && ts; ts = PyThreadState_Next(ts)) {
        if (nlive == cap) {
            live_ts *more = PyMem_Realloc(live, 2 * cap * sizeof *live);
            if (!more) {
                PyMem_Free(live);
                live = NULL;
                break;
            }
            live = more;
            cap *= 2;
        }
        live[nlive].ts = (uintptr_t)ts;
        live[nlive++].id = ts->thread_id;
    }
    uint8_t *gone_tid = live ? PyMem_Calloc((size_t)r->ids.nthreads / 8 + 1, 1) : NULL;
    PyObject *keep = gone_tid ? PyList_New(0) : NULL;
    if (!keep) {
        PyErr_Clear();
        PyMem_Free(live);
        PyMem_Free(gone_tid);
        r->follow.threads_sweep_at = 2 * n; /* try again later */
        return;
    }
    qsort(live, nlive, sizeof *live, by_tstate);
    Py_ssize_t dropped = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        live_ts key = {(uintptr_t)t->tstate, t->thread_id};
        if (!t->ended && bsearch(&key, live, nlive, sizeof *live, by_tstate)) {
            if (PyList_Append(keep, (PyObject *)t) < 0)
                goto fail;
            continue;
        }
        t->ended = 1;
        dropped++;
        if (t->tid && t->tid <= r->ids.nthreads)
            gone_tid[t->tid / 8] |= (uint8_t)(1u << (t->tid % 8));
        if (t->gl_pending && t->cur_gid) {
            gr_gl *e = gr_gl_of(r, t->cur_gid);
            if (e)
                e->on = NULL;
            gr_gl_settle(r, t->cur_gid);
        }
    }
    if (dropped) {
        for (uint32_t i = 0; i < r->gls.gl_used; i++) {
            gr_gl *e = &r->gls.gl[i];
            if (gr_ptrmap_get(&r->gls.gl_index, GR_GL_KEY(e->gid), 0) != i + 1)
                continue;
            /* tids are 1..nthreads, one per gr_thread: a bit set here is
             * a thread being dropped (none of tid 0 is pointed at). */
#define GONE(tid) ((tid) && (tid) <= r->ids.nthreads && (gone_tid[(tid) / 8] >> ((tid) % 8) & 1))
            if (e->on && GONE(e->on->tid))
                e->on = NULL;
            if (GONE(e->tid))
                e->state |= GR_GLS_GONE;
#undef GONE
        }
        Py_SETREF(r->follow.threads, keep);
        keep = NULL;
        r->tls_key++;
    }
fail:
    Py_XDECREF(keep);
    PyErr_Clear();
    PyMem_Free(live);
    PyMem_Free(gone_tid);
    Py_ssize_t left = PyList_GET_SIZE(r->follow.threads);
    r->follow.threads_sweep_at = left < 32 ? 64 : 2 * left;
}

gr_thread *gr_thread_new(gr_recorder *r, PyThreadState *ts)
{
    gr_thread *t = PyObject_New(gr_thread, &gr_thread_type);
    if (!t) {
        gr_swallow(r);
        return NULL;
    }
    /* PyObject_New leaves the fields as the memory's last owner left
     * them: every field starts at 0 here, then what is not 0 is set.
     * Before, ours_frame and hook.by_hook kept old bytes.  Example, on
     * 3.14: ours_frame held the address of an ended thread's frame of
     * worker(), the next thread's worker() frame got the same address,
     * and its C calls were taken for the recorder's own and dropped
     * (tests/realworld/suspended_in_ended_thread.py). */
    memset((char *)t + sizeof(PyObject), 0, sizeof *t - sizeof(PyObject));
    t->gen = r->gen;
    t->tstate = ts;
    t->thread_id = ts->thread_id;
    t->witness = GR_WITNESS_UNKNOWN;
    t->may_have_ended = 1;
    t->foot.lasti = -1;
    t->foot.withheld = -1;
    t->hook.subject = r->out.profile_on;
    gr_thread_path(r, t);
    if (PyList_GET_SIZE(r->follow.threads) >= r->follow.threads_sweep_at)
        sweep_threads(r, ts);
    /* A gr_thread of the same thread state (reused by CPython, with a
     * reused pthread id) belongs to a thread that has ended. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->follow.threads); i++) {
        gr_thread *o = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (o->tstate == ts && o->thread_id == ts->thread_id && o->bound)
            o->ended = 1;
    }
    if (PyList_Append(r->follow.threads, (PyObject *)t) < 0) {
        Py_DECREF(t);
        gr_swallow(r);
        return NULL;
    }
    return t;
}

int gr_thread_alive(const gr_thread *t)
{
    if (t->ended)
        return 0;
    PyThreadState *me = PyThreadState_Get();
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
        if (ts == t->tstate && ts->thread_id == t->thread_id)
            return 1;
    return 0;
}

/* The gr_thread of thread state ts in recording r, or NULL. */
gr_thread *gr_thread_of_tstate(gr_recorder *r, PyThreadState *ts)
{
    for (Py_ssize_t i = PyList_GET_SIZE(r->follow.threads); i-- > 0;) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (t->tstate == ts && t->thread_id == ts->thread_id)
            return t;
    }
    return NULL;
}

/* The gr_thread of the calling OS thread, found by its thread state.
 * One that was already bound to an OS thread (TLS) belongs to a thread
 * that has ended: this one would have found it in its own TLS.  CPython
 * reuses thread states and pthread ids, so (tstate, thread_id) alone
 * cannot tell a new thread from an ended one. */
gr_thread *gr_thread_unbound(gr_recorder *r, PyThreadState *ts)
{
    for (Py_ssize_t i = PyList_GET_SIZE(r->follow.threads); i-- > 0;) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (t->tstate == ts && t->thread_id == ts->thread_id && !t->bound)
            return t;
    }
    return NULL;
}

/* The cache of the calling OS thread after a sweep (tls_key moved on
 * within the same recording): its gr_thread if still in r->follow.threads (the
 * pointer is compared, never followed), rebinding the cache; else NULL
 * (dropped, or another recording's). */
gr_thread *gr_tls_after_sweep(gr_recorder *r)
{
    if (!gr_tls.thread || (gr_tls.gen >> 32) != (r->tls_key >> 32))
        return NULL;
    for (Py_ssize_t i = PyList_GET_SIZE(r->follow.threads); i-- > 0;) {
        if (PyList_GET_ITEM(r->follow.threads, i) == (PyObject *)gr_tls.thread) {
            gr_tls.gen = r->tls_key;
            return gr_tls.thread;
        }
    }
    return NULL;
}

gr_thread *gr_thread_current(gr_recorder *r)
{
    if (gr_tls.thread && gr_tls.gen == r->tls_key)
        return gr_tls.thread;
    gr_thread *k = gr_tls_after_sweep(r);
    if (k)
        return k;
    PyThreadState *ts = PyThreadState_Get();
    gr_thread *t = gr_thread_unbound(r, ts);
    if (!t) {
        t = gr_thread_new(r, ts);
        if (!t)
            return NULL;
        Py_DECREF(t); /* r->follow.threads keeps it */
    }
    gr_thread_bind(r, t);
    return t;
}
