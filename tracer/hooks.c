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
 * stop(); valid only while tls_gen equals the active recording's tls_key
 * (a new recording, or a sweep that dropped ended threads, changes it). */
/* initial-exec: a plain load from the thread pointer on the hot path
 * instead of a call to __tls_get_addr (the extension is a shared object). */
/* One struct: one thread-pointer offset to load on the hot path. */
static _Thread_local struct {
    gr_thread *thread;
    uint64_t gen;
} tls __attribute__((tls_model("initial-exec")));
#define tls_thread (tls.thread)
#define tls_gen (tls.gen)

/* ---- gr_thread object ------------------------------------------------ */

static void thread_dealloc(gr_thread *t)
{
    Py_CLEAR(t->prev_trace);
    Py_CLEAR(t->settrace);
    Py_CLEAR(t->chain_obj);
    Py_CLEAR(t->foot_obj);
    Py_CLEAR(t->foot_frame);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* Whether a switch to greenlet g can be written without g's stack: g is
 * known to the recording, or a greenlet created while recording (no seed
 * needed).  A greenlet alive at start() or a main greenlet seen for the
 * first time needs its frames as its seed: written at its first event or
 * mark() instead. */
static int unseen_writable(gr_recorder *r, PyObject *g)
{
    if (gr_ptrmap_get(&r->greenlets, (uintptr_t)g, 0))
        return 1;
    if (gr_ptrmap_get(&r->preexisting, (uintptr_t)g, 0))
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
    t->cb_pending = is_throw ? 2 : 1;
    t->cb_target = PyTuple_GET_ITEM(pair, 1);
    if (!r->profile_on) {
        /* start(profile=False) (the switch-path benchmark): no event will
         * follow, so the switch is written here, in the target. */
        PyFrameObject *top = PyEval_GetFrame();
        gr_switch_seen(r, t, t->cb_target, top, 0, is_throw);
    } else if (gr_tstate_tracing(PyThreadState_GET()) > 1 && unseen_writable(r, t->cb_target)) {
        /* greenlet's guard adds one: the switch was made inside a profile
         * or trace function of the program (or a greenlet callback it
         * calls), so the target delivers no event until that returns:
         * the switch is written here, or it would be lost with every
         * greenlet that ran there.  Without a stack: this callback may be
         * wrapped by the program's, whose frames are on top. */
        gr_switch_seen(r, t, t->cb_target, NULL, GR_SEEN_IN_TRACING, is_throw);
    }
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

/* Drop from r->threads the gr_threads of threads that have ended: their
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
 * most once per doubling of r->threads.  Never raises. */
static void sweep_threads(gr_recorder *r, PyThreadState *me)
{
    Py_ssize_t n = PyList_GET_SIZE(r->threads);
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
    uint8_t *gone_tid = live ? PyMem_Calloc((size_t)r->nthreads / 8 + 1, 1) : NULL;
    PyObject *keep = gone_tid ? PyList_New(0) : NULL;
    if (!keep) {
        PyErr_Clear();
        PyMem_Free(live);
        PyMem_Free(gone_tid);
        r->threads_sweep_at = 2 * n; /* try again later */
        return;
    }
    qsort(live, nlive, sizeof *live, by_tstate);
    Py_ssize_t dropped = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->threads, i);
        live_ts key = {(uintptr_t)t->tstate, t->thread_id};
        if (!t->ended && bsearch(&key, live, nlive, sizeof *live, by_tstate)) {
            if (PyList_Append(keep, (PyObject *)t) < 0)
                goto fail;
            continue;
        }
        t->ended = 1;
        dropped++;
        if (t->tid && t->tid <= r->nthreads)
            gone_tid[t->tid / 8] |= (uint8_t)(1u << (t->tid % 8));
        if (t->gl_pending && t->cur_gid) {
            gr_gl *e = gr_gl_of(r, t->cur_gid);
            if (e)
                e->on = NULL;
            gr_gl_settle(r, t->cur_gid);
        }
    }
    if (dropped) {
        for (uint32_t i = 0; i < r->gl_used; i++) {
            gr_gl *e = &r->gl[i];
            if (gr_ptrmap_get(&r->gl_index, GR_GL_KEY(e->gid), 0) != i + 1)
                continue;
            /* tids are 1..nthreads, one per gr_thread: a bit set here is
             * a thread being dropped (none of tid 0 is pointed at). */
#define GONE(tid) ((tid) && (tid) <= r->nthreads && (gone_tid[(tid) / 8] >> ((tid) % 8) & 1))
            if (e->on && GONE(e->on->tid))
                e->on = NULL;
            if (GONE(e->tid))
                e->state |= GR_GLS_GONE;
#undef GONE
        }
        Py_SETREF(r->threads, keep);
        keep = NULL;
        r->tls_key++;
    }
fail:
    Py_XDECREF(keep);
    PyErr_Clear();
    PyMem_Free(live);
    PyMem_Free(gone_tid);
    Py_ssize_t left = PyList_GET_SIZE(r->threads);
    r->threads_sweep_at = left < 32 ? 64 : 2 * left;
}

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
    t->cur_g = NULL;
    t->witness = GR_WITNESS_UNKNOWN;
    t->ccall_frame = NULL;
    t->sw_direct = 0;
    t->break_stamp = 0;
    memset(t->susp_frame, 0, sizeof t->susp_frame);
    memset(t->susp_slot, 0, sizeof t->susp_slot);
    t->susp_next = 0;
    t->cur_slot = 0;
    t->may_have_ended = 1;
    t->last_c_call = 0;
    t->chain_func = NULL;
    t->chain_obj = NULL;
    t->foothold = 0;
    t->foot_func = NULL;
    t->foot_obj = NULL;
    t->foot_frame = NULL;
    t->foot_lasti = -1;
    t->foot_withheld = -1;
    t->foot_code = 0;
    t->foot_intrace = 0;
    t->hook_intrace = 0;
    t->by_tid = 0;
    t->by_code = 0;
    t->chain_calls = 0;
    t->foot_prof = NULL;
    t->foot_pobj = NULL;
    t->subject = r->profile_on;
    t->displaced = 0;
    t->cb_pending = 0;
    t->cb_target = NULL;
    t->hook_code = 0;
    t->hook_pending = 0;
    t->bound = 0;
    t->gl_pending = 0;
    t->starting = 0;
    t->start_nopy = 0;
    t->start_head = NULL;
    t->start_site = 0;
    gr_thread_path(r, t);
    t->at_start = 0;
    t->ended = 0;
    t->unannounced = 0;
    t->ran_unseen = 0;
    t->had_events = 0;
    t->cbits = 0;
    if (PyList_GET_SIZE(r->threads) >= r->threads_sweep_at)
        sweep_threads(r, ts);
    /* A gr_thread of the same thread state (reused by CPython, with a
     * reused pthread id) belongs to a thread that has ended. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->threads); i++) {
        gr_thread *o = (gr_thread *)PyList_GET_ITEM(r->threads, i);
        if (o->tstate == ts && o->thread_id == ts->thread_id && o->bound)
            o->ended = 1;
    }
    if (PyList_Append(r->threads, (PyObject *)t) < 0) {
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
static gr_thread *thread_of_tstate(gr_recorder *r, PyThreadState *ts)
{
    for (Py_ssize_t i = PyList_GET_SIZE(r->threads); i-- > 0;) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->threads, i);
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
static gr_thread *thread_unbound(gr_recorder *r, PyThreadState *ts)
{
    for (Py_ssize_t i = PyList_GET_SIZE(r->threads); i-- > 0;) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->threads, i);
        if (t->tstate == ts && t->thread_id == ts->thread_id && !t->bound)
            return t;
    }
    return NULL;
}

static inline void bind_thread(gr_recorder *r, gr_thread *t)
{
    t->bound = 1;
    tls_thread = t;
    tls_gen = r->tls_key;
}

/* The cache of the calling OS thread after a sweep (tls_key moved on
 * within the same recording): its gr_thread if still in r->threads (the
 * pointer is compared, never followed), rebinding the cache; else NULL
 * (dropped, or another recording's). */
static gr_thread *tls_after_sweep(gr_recorder *r)
{
    if (!tls_thread || (tls_gen >> 32) != (r->tls_key >> 32))
        return NULL;
    for (Py_ssize_t i = PyList_GET_SIZE(r->threads); i-- > 0;) {
        if (PyList_GET_ITEM(r->threads, i) == (PyObject *)tls_thread) {
            tls_gen = r->tls_key;
            return tls_thread;
        }
    }
    return NULL;
}

gr_thread *gr_thread_current(gr_recorder *r)
{
    if (tls_thread && tls_gen == r->tls_key)
        return tls_thread;
    gr_thread *k = tls_after_sweep(r);
    if (k)
        return k;
    PyThreadState *ts = PyThreadState_Get();
    gr_thread *t = thread_unbound(r, ts);
    if (!t) {
        t = gr_thread_new(r, ts);
        if (!t)
            return NULL;
        Py_DECREF(t); /* r->threads keeps it */
    }
    bind_thread(r, t);
    return t;
}

/* Take thread state ts out of r->adopt: 1 if it was there. */
static int adopt_take(gr_recorder *r, PyThreadState *ts)
{
    for (size_t i = 0; i < r->nadopt; i++) {
        if (r->adopt[i] == ts) {
            r->adopt[i] = r->adopt[--r->nadopt];
            return 1;
        }
    }
    return 0;
}

/* The calling thread's gr_thread if the recorder knows this thread, else
 * NULL (no new one: a thread the recorder never reached stays unknown; a
 * thread state it went into when threading started the thread, r->adopt,
 * gets its gr_thread at its first event). */
static inline gr_thread *thread_known(gr_recorder *r)
{
    /* tls_gen is set only with tls_thread, and r->tls_key is never 0. */
    if (tls_gen == r->tls_key)
        return tls_thread;
    gr_thread *t = tls_after_sweep(r);
    if (t)
        return t;
    PyThreadState *ts = PyThreadState_Get();
    t = thread_unbound(r, ts);
    if (t)
        bind_thread(r, t);
    else if (r->nadopt && adopt_take(r, ts))
        t = gr_thread_current(r);
    return t;
}

/* ---- threads the program starts ----------------------------------------- */

/* The recorder follows the threads threading.Thread.start starts, as a
 * profiler installed with threading.setprofile before the program would,
 * without touching threading (its setprofile, getprofile, _profile_hook
 * stay the program's).  threading calls _thread.start_new_thread (3.9-3.12)
 * or _thread.start_joinable_thread (3.13+), which creates the new thread
 * state in the calling thread and returns before the new thread can run
 * Python code (it takes the GIL first: t_bootstrap 3.9-3.12, thread_run
 * 3.13+).  New thread states go to the head of the interpreter's list
 * (new_threadstate, every version).  So at the c_return of that call the
 * thread states in front of the head seen at its c_call are new, and the
 * recorder puts its profile function into the fresh one (no profile or
 * trace function, no frame), as start() does for existing threads: with no
 * object, so sys.getprofile() there stays None.  Its gr_thread is made at
 * its first event (thread_known, r->adopt).  A program's
 * threading.setprofile(f) is then the program's sys.setprofile(f) inside
 * the thread (threading's _bootstrap_inner makes it): chained, with a HOOK,
 * as any other.
 * Threads started otherwise (_thread.start_new_thread called directly, a
 * private copy of threading as eventlet's) are not followed, exactly as
 * threading.setprofile would not reach them; their starts are counted per
 * call site (r->start_sites) and written at stop (THREADS_UNREACHED).  On
 * 3.12+ the start's audit event (_thread.start_new_thread, added in 3.12;
 * _thread.start_joinable_thread) names the function: one written in C runs
 * no Python code of its own and is not counted.  Before 3.12 every start
 * is counted. */

/* Index + 1 of the start site (code of frame f, its line, via: a string
 * constant), added if new; 0 if memory runs out. */
static uint32_t start_site(gr_recorder *r, PyFrameObject *f, const char *via)
{
    uint32_t code = f ? gr_code_id(r, gr_frame_code(f)) : 0;
    uint32_t line = f ? (uint32_t)PyFrame_GetLineNumber(f) : 0;
    for (size_t i = 0; i < r->nstart_sites; i++) {
        gr_start_site *s = &r->start_sites[i];
        if (s->code == code && s->line == line && s->via == via)
            return (uint32_t)i + 1;
    }
    if (r->nstart_sites == r->start_sites_cap) {
        size_t cap = r->start_sites_cap ? 2 * r->start_sites_cap : 8;
        gr_start_site *more = PyMem_Realloc(r->start_sites, cap * sizeof *more);
        if (!more)
            return 0;
        r->start_sites = more;
        r->start_sites_cap = cap;
    }
    r->start_sites[r->nstart_sites] = (gr_start_site){code, line, via, 0, 0, 0};
    return (uint32_t)++r->nstart_sites;
}

/* Whether the running Python frame (the caller of the C call) is
 * threading's Thread.start: 1 a function named so in the namespace of
 * sys.modules["threading"]; 2 one in the namespace of another module whose
 * __name__ is "threading" (a copy of it, such as eventlet's
 * patcher.original("threading"), whose threads threading.setprofile's
 * hook never reaches); else 0. */
static int in_thread_start(PyFrameObject *f)
{
    PyObject *name = gr_frame_code(f)->co_name;
    if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "start") != 0)
        return 0;
    PyObject *modname = PyUnicode_FromString("threading");
    PyObject *threading = modname ? PyImport_GetModule(modname) : NULL;
    Py_XDECREF(modname);
    PyObject *globals = PyEval_GetGlobals(); /* borrowed */
    int found = threading && PyModule_Check(threading) && globals == PyModule_GetDict(threading);
    Py_XDECREF(threading);
    if (!found && globals && PyDict_Check(globals)) {
        PyObject *gname = PyDict_GetItemString(globals, "__name__"); /* borrowed */
        if (gname && PyUnicode_Check(gname) && PyUnicode_CompareWithASCIIString(gname, "threading") == 0)
            found = 2;
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    return found;
}

/* Whether C function object f is _thread's start_new_thread (or its old
 * name start_new) or start_joinable_thread. */
static int is_thread_start(PyObject *f)
{
    if (!PyCFunction_Check(f))
        return 0;
    PyCFunctionObject *cf = (PyCFunctionObject *)f;
    if (!cf->m_module || !PyUnicode_Check(cf->m_module) || PyUnicode_CompareWithASCIIString(cf->m_module, "_thread") != 0)
        return 0;
    const char *name = cf->m_ml->ml_name;
    return strcmp(name, "start_new_thread") == 0 || strcmp(name, "start_joinable_thread") == 0 ||
           strcmp(name, "start_new") == 0;
}

/* The audit event of a thread start (3.12+), between its c_call and
 * c_return: a function written in C runs no Python code of its own. */
static void thread_start_announced(gr_recorder *r, PyObject *args)
{
    PyObject *func = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    gr_thread *t = func && PyCFunction_Check(func) ? thread_known(r) : NULL;
    if (t && t->starting)
        t->start_nopy = 1;
}

/* The thread state a start not followed made (in front of head, the
 * list's head at its c_call), kept with its start site: if that thread
 * later applies threading's profile hook itself (sys_setprofile), the
 * recorder goes in with it and the start counts as followed. */
static void remember_unfollowed(gr_recorder *r, PyThreadState *me, PyThreadState *head, uint32_t site_no)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts && ts != head;
         ts = PyThreadState_Next(ts)) {
        if (ts == me)
            continue;
        if (r->nunfollowed == r->unfollowed_cap) {
            size_t cap = r->unfollowed_cap ? 2 * r->unfollowed_cap : 8;
            struct gr_unfollowed *more = PyMem_Realloc(r->unfollowed, cap * sizeof *more);
            if (!more)
                return;
            r->unfollowed = more;
            r->unfollowed_cap = cap;
        }
        r->unfollowed[r->nunfollowed++] = (struct gr_unfollowed){ts, site_no};
        return; /* one thread per call */
    }
}

/* Thread state ts, started unfollowed, is reached now: its start counts
 * as followed.  Thread states are reused after a thread ends, so an entry
 * found for another thread at worst moves one count between sites. */
static void unfollowed_reached(gr_recorder *r, PyThreadState *ts)
{
    for (size_t i = 0; i < r->nunfollowed; i++) {
        if (r->unfollowed[i].ts != ts)
            continue;
        uint32_t site_no = r->unfollowed[i].site;
        if (site_no && site_no <= r->nstart_sites) {
            r->start_sites[site_no - 1].followed++;
            r->start_sites[site_no - 1].handover = 1;
        }
        r->unfollowed[i] = r->unfollowed[--r->nunfollowed];
        return;
    }
}

/* A C call of thread t (state as a profile function sees it: what, arg)
 * that may start a thread.  Out of line: the profile function tests only
 * that arg is one of the two start functions (r->thread_start). */
static __attribute__((noinline)) void thread_start_event(gr_recorder *r, gr_thread *t, int what, PyObject *arg)
{
    if (!is_thread_start(arg))
        return;
    GR_EXC_SAVE(saved);
    PyThreadState *me = PyThreadState_Get();
    if (what == PyTrace_C_CALL) {
        PyFrameObject *f = PyEval_GetFrame(); /* borrowed: the caller */
        int via = f ? in_thread_start(f) : 0;
        PyFrameObject *site_frame = via ? PyFrame_GetBack(f) : (PyFrameObject *)Py_XNewRef(f);
        t->start_site = start_site(r, site_frame, via == 1 ? "threading.Thread.start"
                                                  : via == 2 ? "threading.Thread.start(copy)"
                                                             : "_thread.start_new_thread");
        Py_XDECREF(site_frame);
        t->starting = via == 1 ? 1 : 2;
        t->start_nopy = 0;
        t->start_head = PyInterpreterState_ThreadHead(me->interp);
        gr_thread_path(r, t);
        goto out;
    }
    if (!t->starting)
        goto out;
    uint32_t site_no = t->start_site <= r->nstart_sites ? t->start_site : 0;
    gr_start_site *site = site_no ? &r->start_sites[site_no - 1] : NULL;
    PyThreadState *head = t->start_head;
    int follow = t->starting == 1, count = what == PyTrace_C_RETURN && !t->start_nopy;
    t->starting = 0;
    t->start_nopy = 0;
    t->start_site = 0;
    t->start_head = NULL;
    gr_thread_path(r, t);
    if (!count)
        goto out; /* no thread started, or one running C code only */
    if (site)
        site->started++;
    if (!follow) {
        remember_unfollowed(r, me, head, site_no);
        goto out;
    }
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts && ts != head;
         ts = PyThreadState_Next(ts)) {
        if (ts == me || ts->c_profilefunc || ts->c_tracefunc)
            continue;
        PyFrameObject *running = PyThreadState_GetFrame(ts);
        Py_XDECREF(running);
        if (running)
            continue;
        if (r->nadopt == r->adopt_cap) {
            size_t cap = r->adopt_cap ? 2 * r->adopt_cap : 8;
            PyThreadState **more = PyMem_Realloc(r->adopt, cap * sizeof *more);
            if (!more)
                break;
            r->adopt = more;
            r->adopt_cap = cap;
        }
        gr_own_change_begin(r);
        int rc = gr_own_set_profile(ts, gr_profile, NULL);
        gr_own_change_end(r);
        if (rc < 0) {
            gr_swallow(r);
            break;
        }
        r->adopt[r->nadopt++] = ts;
        if (site)
            site->followed++;
        break; /* one thread per call */
    }
out:
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
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
    t->had_events = 1;
    gr_thread_first_sight(r, t, top, extra, !t->at_start);
    Py_XDECREF(top);
    bind_thread(r, t);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

/* greenreplay's own frames (recorder.h, gr_code_ours): whether the event
 * is theirs, not to be recorded: the call and return of such a frame, and
 * the C calls it makes (t->ours_frame, the innermost of them running).
 * Python functions they call are recorded, as called by the frame below.
 * Inline: one test per event once such code was seen (r->ours). */
static inline int is_ours_event(const gr_recorder *r, const gr_thread *t, PyFrameObject *frame, int what,
                                uint32_t code)
{
    /* (Events written later by the foothold may come without a frame.) */
    return what <= PyTrace_RETURN ? gr_code_ours(r, code) : frame == t->ours_frame && frame;
}

/* After is_ours_event: the call or return of such a frame moves
 * t->ours_frame (to the caller when it is ours too). */
static __attribute__((noinline)) void ours_moved(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what)
{
    if (what == PyTrace_CALL) {
        t->ours_frame = frame;
    } else if (what == PyTrace_RETURN) {
        GR_EXC_SAVE(saved);
        PyFrameObject *back = PyFrame_GetBack(frame); /* may allocate (3.11+) */
        t->ours_frame = back && gr_code_ours(r, gr_code_id(r, gr_frame_code(back))) ? back : NULL;
        Py_XDECREF(back);
        GR_EXC_RESTORE(saved);
    }
}

/* Record one profile event of thread t: the general path (first event of
 * a thread, a thread whose greenlet is not known yet; gr_profile_chain). */
static __attribute__((noinline)) void record_event(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg)
{
    if (!t->tid)
        profile_first_sight(r, t, frame, what, arg);
    uint32_t code = 0;
    switch (what) {
    case PyTrace_CALL:
    case PyTrace_RETURN:
        code = gr_code_id(r, gr_frame_code(frame));
        break;
    case PyTrace_C_CALL:
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        code = gr_cfunc_id(r, arg);
        if (code == r->thread_start_id[0] || code == r->thread_start_id[1])
            thread_start_event(r, t, what, arg);
        break;
    default:
        break;
    }
    if (r->ours && is_ours_event(r, t, frame, what, code)) {
        ours_moved(r, t, frame, what);
        return;
    }
    if (t->gl_pending && gr_code_is_gl(r, code))
        gr_thread_touch(r, t);
    if (r->greenlet_mod && !t->gl_pending)
        gr_switch_check(r, t, frame, what, code);
    t->may_have_ended = what != PyTrace_CALL && what != PyTrace_C_CALL;
    t->ccall_frame = what == PyTrace_C_CALL ? frame : NULL;
    switch (what) {
    case PyTrace_CALL:
        gr_emit3(r, GR_CALL, t->tid, t->cur_gid, code);
        break;
    case PyTrace_RETURN:
        gr_emit3(r, GR_RETURN, t->tid, t->cur_gid, code);
        break;
    case PyTrace_C_CALL:
        t->last_c_call = code;
        gr_emit3(r, GR_C_CALL, t->tid, t->cur_gid, code);
        break;
    case PyTrace_C_RETURN:
        t->last_c_call = 0;
        gr_emit3(r, GR_C_RETURN, t->tid, t->cur_gid, code);
        if (arg == r->settrace) /* the program changed its greenlet callback */
            gr_note_greenlet_callback(r, t, 0);
        break;
    case PyTrace_C_EXCEPTION:
        t->last_c_call = 0;
        gr_emit3(r, GR_C_EXCEPTION, t->tid, t->cur_gid, code);
        break;
    default:
        break;
    }
}

/* Which C calls of the running greenlet had their c_call passed on to the
 * program's own profile function: a bit per open C call (innermost in bit
 * 0, 64 deep; deeper ones count as passed on while a function of the
 * program is installed).  CPython reports a c_return only when a profile
 * function was set at the c_call, so the program's function must get the
 * c_return of exactly the calls whose c_call it got (the recorder, always
 * installed, gets every one).  Kept per greenlet: a C call (switch) may
 * return in another turn of its greenlet. */
static inline uint64_t *c_bits(gr_recorder *r, gr_thread *t)
{
    gr_gl *e = gr_gl_of(r, t->cur_gid);
    return e ? &e->cbits : &t->cbits;
}

static inline void c_push(gr_recorder *r, gr_thread *t, int passed)
{
    uint64_t *b = c_bits(r, t);
    *b = (*b << 1) | (uint64_t)(passed != 0);
}

static inline int c_pop(gr_recorder *r, gr_thread *t)
{
    uint64_t *b = c_bits(r, t);
    int passed = (int)(*b & 1);
    *b >>= 1;
    return passed;
}

/* Record tag of each profile event kind (PyTrace_*: CALL 0, RETURN 3,
 * C_CALL 4, C_EXCEPTION 5, C_RETURN 6); 0 for kinds a profile function
 * is not given. */
static const uint8_t tag_of_what[8] = {GR_CALL, 0, 0, GR_RETURN, GR_C_CALL, GR_C_EXCEPTION, GR_C_RETURN, 0};

/* The hot path: an event of a thread already seen whose running greenlet
 * is known, with no program profile function chained anywhere.  The same
 * records as record_event, with its branches laid out for this case: the
 * tag from a table, the code id through a one-entry cache, no C-call
 * bookkeeping, the record inline.  Measured with
 * tests/bench/instr_cost.sh (docs/PERFORMANCE.md). */
static inline __attribute__((always_inline)) void record_fast(gr_recorder *r, gr_thread *t, PyFrameObject *frame,
                                                              int what, int tag, PyObject *arg)
{
    uint32_t code;
    unsigned slot;
    if (what <= PyTrace_RETURN) {
        code = gr_code_id_cached(r, gr_frame_code(frame), &slot);
    } else {
        code = gr_cfunc_id_cached(r, arg, &slot);
        if (__builtin_expect(code == r->thread_start_id[0] || code == r->thread_start_id[1], 0))
            thread_start_event(r, t, what, arg);
    }
    if (r->ours && __builtin_expect(is_ours_event(r, t, frame, what, code), 0)) {
        ours_moved(r, t, frame, what);
        return;
    }
    if (r->greenlet_mod) {
        /* gr_switch_check's test, inline; what follows a moved witness is
         * out of line (the switch path). */
        PyThreadState *ts = gr_tstate_now();
        if (__builtin_expect(gr_switch_witness(ts) != t->witness, 0)) {
            gr_event_switched(t, frame, tag, arg, ts, GR_CODE_SLOT(code, slot));
            return;
        }
    }
    gr_event_tail(r, t, frame, tag, arg, code, slot);
}

int gr_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    if (!r)
        return 0;
    gr_thread *t = thread_known(r);
    if (!t)
        return 0;
    if (__builtin_expect(!t->slow_path, 1)) {
        /* t->tid && !t->gl_pending, and no program's function chained.
         * A profile function is only given CALL, RETURN and C_* events. */
        int tag = tag_of_what[(unsigned)what & 7u];
        if (__builtin_expect(tag != 0, 1))
            record_fast(r, t, frame, what, tag, arg);
        return 0;
    }
    if (t->tid && !t->gl_pending) {
        /* The same once a program's function was chained somewhere, with
         * the C-call bookkeeping (as below). */
        int tag = tag_of_what[(unsigned)what & 7u];
        if (tag != 0)
            record_fast(r, t, frame, what, tag, arg);
        if (tag >= GR_C_CALL) {
            if (tag == GR_C_CALL)
                c_push(r, t, 0);
            else
                c_pop(r, t);
        }
        return 0;
    }
    record_event(r, t, frame, what, arg);
    /* Before any program function was chained every bit is 0, which
     * is what an empty stack pops: no bookkeeping needed until then. */
    if (r->any_chain && what == PyTrace_C_CALL)
        c_push(r, t, 0);
    else if (r->any_chain && (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION))
        c_pop(r, t);
    return 0;
}

int gr_profile_chain(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    gr_thread *t = r ? thread_known(r) : tls_thread;
    int pass = 1;
    if (r && t) {
        record_event(r, t, frame, what, arg);
        if (what == PyTrace_C_CALL)
            c_push(r, t, 1);
        else if (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION)
            pass = c_pop(r, t);
    }
    Py_tracefunc f = t ? t->chain_func : NULL;
    if (!f || !pass)
        return 0;
    if (!r || !t)
        return f(obj, frame, what, arg);
    if (!r->greenlet_mod || r->callback_mode) {
        Py_INCREF(t); /* the program's function may stop the recording */
        t->chain_calls++;
        int rc = f(obj, frame, what, arg);
        t->chain_calls--;
        Py_DECREF(t);
        return rc;
    }
    /* Passive mode: a switch made inside the program's function delivers
     * no event (the thread is tracing), so the greenlets that run there
     * are not seen.  Say so: the witness moved across the call. */
    PyThreadState *ts = PyThreadState_GET();
    uint64_t w0 = gr_switch_witness(ts);
    uint64_t at = atomic_load_explicit(&r->nevents, memory_order_relaxed);
    uint64_t tid = t->tid, gid = t->cur_gid;
    Py_INCREF(t);
    t->chain_calls++;
    int rc = f(obj, frame, what, arg);
    t->chain_calls--;
    Py_DECREF(t);
    if (gr_active == r && gr_switch_witness(ts) != w0 && at) {
        if (!r->prof_switches++) {
            r->prof_switch_first[0] = at - 1; /* the event just written */
            r->prof_switch_first[1] = tid;
            r->prof_switch_first[2] = gid;
        }
    }
    return rc;
}

/* ---- the program's own hooks -------------------------------------------- */

static void emit_hook(gr_recorder *r, gr_thread *t, int slot, int action, uint32_t code)
{
    uint64_t who = (t->subject ? GR_HOOK_SUBJECT_ON : 0) | (t->chain_func ? GR_HOOK_CHAINED : 0) |
                   (t->unannounced ? GR_HOOK_UNANNOUNCED : 0) | (t->ran_unseen ? GR_HOOK_RAN : 0) |
                   (t->hook_intrace ? GR_HOOK_IN_TRACE : 0);
    /* Another thread's change names that thread and its C call, unless a C
     * call of this thread's own ended with the program's function (code:
     * its c_return went there, foothold()), which `during` names then. */
    if (t->by_tid && !code) {
        who |= GR_HOOK_BY_OTHER | (uint64_t)t->by_tid << GR_HOOK_BY_SHIFT;
        code = t->by_code;
    }
    uint64_t f[6] = {t->tid, t->cur_gid, (uint64_t)slot, (uint64_t)action, who, code};
    gr_emit(r, GR_HOOK, 6, f);
}

/* The profile slot of thread state ts (thread t) after the program may
 * have changed it: keep observing (take the slot back, or chain in front
 * of the program's function), and write a HOOK record saying what the
 * program did and what the subject profiler is now.  standard: the program
 * gave the thread threading's profile hook, which stands for the subject
 * (sys_setprofile below): the slot is empty and the subject is back. */
static void resolve_profile_slot(gr_recorder *r, gr_thread *t, PyThreadState *ts, int standard)
{
    Py_tracefunc f = ts->c_profilefunc;
    PyObject *old_chain = NULL;
    uint32_t code = t->hook_pending ? t->hook_code : 0;
    t->hook_pending = 0;
    int ran = t->ran_unseen;
    t->ran_unseen = 0;
    if (f == gr_profile || f == gr_profile_chain)
        return;
    t->ran_unseen = ran; /* for emit_hook, below */
    int action;
    if (!f) {
        /* Cleared.  While the subject was displaced by the program's own
         * profiler, clearing puts back what the program saw before it
         * (None, as the recorder is invisible): the subject returns.
         * Otherwise the program removed the profiler a standard tool had
         * installed: the subject is gone from this thread. */
        if (standard || (!t->subject && t->displaced)) {
            action = GR_HOOK_RESTORED;
            t->subject = 1;
            t->displaced = 0;
        } else {
            action = GR_HOOK_CLEARED;
            t->subject = 0;
        }
        t->chain_func = NULL;
        Py_CLEAR(t->chain_obj);
        gr_own_change_begin(r);
        if (gr_own_set_profile(ts, gr_profile, NULL) < 0)
            gr_swallow(r);
        gr_own_change_end(r);
    } else {
        action = GR_HOOK_SET;
        if (t->subject) {
            t->subject = 0;
            t->displaced = 1;
        }
        t->chain_func = f;
        if (!r->any_chain) {
            r->any_chain = 1;
            /* Every thread's events now take the bookkeeping path. */
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->threads); i++)
                gr_thread_path(r, (gr_thread *)PyList_GET_ITEM(r->threads, i));
        }
        /* The profile object chained before is released last, once the
         * slot is whole again: releasing it can run its finalizer, and
         * _lsprof's clears the slot when the profiler is still enabled
         * (a cProfile.Profile().enable() held only by the slot, replaced
         * by another profiler's enable()).  Released between the two
         * writes, that clear left gr_profile_chain in the slot with no
         * object, and the next event called the program's function with
         * a NULL object: a crash.  Released here, the clear empties the
         * slot whole (its own audit event: a HOOK at the next event). */
        old_chain = t->chain_obj;
        t->chain_obj = Py_XNewRef(ts->c_profileobj);
        gr_swap_profile_func(ts, gr_profile_chain);
    }
    if (t->tid)
        emit_hook(r, t, GR_HOOK_PROFILE, action, code);
    t->ran_unseen = 0;
    Py_XDECREF(old_chain);
}

/* Whether thread state ts (thread t, not the calling thread), with a
 * foothold still waiting for its next event, has run since the foothold
 * was taken: its running frame or that frame's instruction is no longer
 * the one then (1: the call that made the change, at its own audit event;
 * 2: where it waited when another thread's audit event came).  Then C
 * calls it made since went to the program's function alone (GR_HOOK_RAN).
 * Also 1 when the frame could not be materialized (NULL, no error kept). */
static int moved_on(gr_thread *t, PyThreadState *ts)
{
    PyFrameObject *f = gr_tstate_frame(ts);
    int moved = f != t->foot_frame || (f && gr_frame_lasti(f) != t->foot_lasti);
    Py_XDECREF(f);
    if (PyErr_Occurred())
        PyErr_Clear();
    return moved;
}

static int foothold(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* Forget the calling-thread foothold of t (its state only: the trace slot
 * is left as it is). */
static void forget_foothold(gr_thread *t)
{
    t->foothold = 0;
    t->foot_func = NULL;
    Py_CLEAR(t->foot_obj);
    Py_CLEAR(t->foot_frame);
}

void gr_profile_slot_at_mark(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
    Py_tracefunc f = ts->c_profilefunc;
    /* A thread's own foothold the program's trace change displaced (no
     * sys.settrace audit event resolved it): it will get no event, so the
     * change it waited for is looked at here (hook_pending names its C
     * call). */
    if (t->foothold == 1 && ts->c_tracefunc != foothold) {
        forget_foothold(t);
        if (r->profile_on && t->tid && gr_tstate_tracing(ts) <= 0)
            resolve_profile_slot(r, t, ts, 0);
        return;
    }
    if (!r->profile_on || !t->tid || f == gr_profile || f == gr_profile_chain ||
        t->hook_pending || t->foothold || gr_tstate_tracing(ts) > 0)
        return;
    /* An empty slot is a loss only where the recorder's function was
     * installed (it had events here); else it is a thread the profiler
     * never reached (the unprofiled-thread rule). */
    if (!f && !t->had_events)
        return;
    t->unannounced = 1;
    resolve_profile_slot(r, t, ts, 0);
    t->unannounced = 0;
}

/* Every thread's profile slot, after a change announced by the audit
 * hook on thread `by` (a change can concern another thread: 3.12's
 * threading.setprofile_all_threads): another thread's HOOK names `by` and
 * the C call in progress there (GR_HOOK_BY_OTHER). */
static void resolve_all(gr_recorder *r, gr_thread *by)
{
    PyThreadState *me = PyThreadState_Get();
    uint32_t by_code = by && by->hook_pending ? by->hook_code : 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = thread_of_tstate(r, ts);
        if (!t || !r->profile_on)
            continue;
        if (ts != me && t->foothold && moved_on(t, ts))
            t->ran_unseen = 1;
        if (by && t != by && by->tid) {
            t->by_tid = by->tid;
            t->by_code = by_code;
        }
        resolve_profile_slot(r, t, ts, 0);
        t->by_tid = 0;
        t->by_code = 0;
    }
}

/* Give the trace slot of thread state ts (thread t, any thread) back to
 * the function it held before a foreign foothold (its object never left
 * the slot). */

static void drop_foreign(gr_thread *t, PyThreadState *ts)
{
    if (t->foothold != 2)
        return;
    t->foothold = 0;
    if (ts->c_tracefunc == foothold)
        gr_own_swap_trace(ts, t->foot_func);
    t->foot_func = NULL;
    Py_CLEAR(t->foot_frame);
}

/* Foreign footholds.  A profile change announced on one thread can
 * concern another thread's slot: PyEval_SetProfileAllThreads (yappi
 * 1.6+ on 3.12+ calls it for every new thread it profiles, from that
 * thread), _PyEval_SetProfile on another thread state (yappi 1.4 at its
 * start on 3.11), threading.setprofile_all_threads.  The audit event comes
 * on the calling thread, whose foothold sees the change at its next event
 * (resolve_all, every thread); but the GIL can pass to another thread
 * before that event, and that thread's profile events then went to the
 * program's function alone (yappi 1.6.10 on 3.13: the main thread lost
 * hundreds of calls, 2 runs in 20, with nothing in the trace saying so).
 * So every other thread the recorder follows gets a foothold too, swapped
 * into its trace slot (its own trace function chained, its object kept):
 * the first event of any of them after the change resolves every slot.
 * The trace function gets a Python call or return before the profile
 * function (3.12+: sys.monitoring calls the tools from the highest id
 * down, sys.settrace's 7 before sys.setprofile's 6; 3.9-3.11: the eval
 * loop calls c_tracefunc, then c_profilefunc), and line events go to it
 * alone, so what such a thread can still give to the program's function
 * alone is C calls: the end of the C call it was in when the change came
 * (blocked with the GIL released: a lock, a sleep), which the HOOK then
 * names (`during`: its c_return went to the program's function; see
 * foothold()), and a C call it makes and ends before its next Python-level
 * event (on the line where the blocking call returned), not recorded. */
static void foothold_others(gr_recorder *r, PyThreadState *me)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        if (ts == me)
            continue;
        gr_thread *t = thread_of_tstate(r, ts);
        if (!t || t->ended || !t->tid || t->foothold || ts->c_tracefunc == foothold)
            continue;
        Py_tracefunc prev = ts->c_tracefunc;
        if (gr_own_swap_trace(ts, foothold) < 0)
            return;
        t->foothold = 2;
        t->foot_func = prev;
        /* Where the thread waits now (moved_on: did it run before the
         * change was resolved?). */
        PyFrameObject *f = gr_tstate_frame(ts); /* a new reference, held (moved_on) */
        Py_XSETREF(t->foot_frame, f);
        t->foot_lasti = f ? gr_frame_lasti(f) : -1;
        if (PyErr_Occurred())
            PyErr_Clear();
    }
}

/* Drop the foreign footholds of every thread but `me`: the change they
 * watched for has been resolved. */
static void drop_foreign_all(gr_recorder *r, PyThreadState *me)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = thread_of_tstate(r, ts);
        if (t && t->foothold == 2)
            drop_foreign(t, ts);
    }
}

/* Whether the profile slot of ts holds the recorder's own function. */
static inline int slot_is_ours(PyThreadState *ts)
{
    return ts->c_profilefunc == gr_profile || ts->c_profilefunc == gr_profile_chain;
}

/* Take the event the foothold's change withheld (t->foot_withheld), if the
 * recorder's function was not in the profile slot when the program's trace
 * function returned: returns the record tag to write once the slot is
 * resolved (withheld_write), or 0.  Call before resolving: the slot then
 * is still what the trace function left (no event reached the program's
 * code in between: the foothold gets the first one). */
static int withheld_take(gr_thread *t, PyThreadState *ts)
{
    int what = t->foot_withheld;
    t->foot_withheld = -1;
    /* (an event the interpreter does not name: the HOOK says so) */
    t->hook_intrace = t->foot_intrace && !slot_is_ours(ts);
    t->foot_intrace = 0;
    if (what < 0 || slot_is_ours(ts))
        return 0;
    return what == PyTrace_CALL ? GR_CALL : GR_RETURN;
}

/* Write the withheld event taken by withheld_take (tag), after the HOOKs
 * of the changes that withheld it: the program's trace function made them
 * before the event went to the profile slot.  The event is the program's,
 * as the recorder's function would have been given it (docs/FORMAT.md §4
 * HOOK, "withheld events"). */
static void withheld_write(gr_recorder *r, gr_thread *t, int tag)
{
    if (!tag || !t->tid)
        return;
    t->may_have_ended = tag == GR_RETURN;
    t->ccall_frame = NULL;
    gr_emit3(r, tag, t->tid, t->cur_gid, t->foot_code);
}

/* Give the trace slot of the calling thread back to what it held before
 * the foothold. */
static void drop_foothold(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
    if (t->foothold == 2) {
        drop_foreign(t, ts);
        return;
    }
    if (!t->foothold)
        return;
    /* Only while the slot still holds the foothold: a function the
     * program's sys.settrace put there since stays. */
    if (ts->c_tracefunc != foothold) {
    } else if (t->foot_func) {
        ts->c_tracefunc = t->foot_func; /* its object never left the slot */
    } else {
        gr_own_change_begin(r);
        gr_own_set_trace(ts, NULL, NULL);
        gr_own_change_end(r);
    }
    forget_foothold(t);
}

/* Whether an event the foothold gets still comes from inside the audit
 * dispatch, before the change the audit event announced: the program's
 * own audit hooks run after the recorder's, and one that may be traced
 * (__cantrace__) gives the foothold its events.  So: the profile slot is
 * what it was at the audit event, the event's frame is above the frame
 * that was running then, and that frame is still in the same call (its
 * last instruction unchanged: the C function that raised the event has
 * not returned).  Without a frame at the audit event, no.  The frame is
 * compared by identity, which is sound because t->foot_frame is a strong
 * reference: no other frame can have its address while it is held. */
static int foot_in_dispatch(gr_thread *t, PyThreadState *ts, PyFrameObject *frame)
{
    if (!t->foot_frame || !frame || frame == t->foot_frame ||
        ts->c_profilefunc != t->foot_prof || ts->c_profileobj != t->foot_pobj)
        return 0;
    int found = 0;
    PyFrameObject *f = PyFrame_GetBack(frame); /* may allocate (3.11+) */
    while (f) {
        if (f == t->foot_frame) {
            found = gr_frame_lasti(f) == t->foot_lasti;
            Py_DECREF(f);
            break;
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    return found;
}

/* Whether no thread of the calling thread's interpreter has a profile
 * function: on 3.12+ the profile tool is then off for the event being
 * dispatched (compat.h GR_PROFILE_TOOL).  Always 0 before 3.12. */
static int no_profiling_thread(PyThreadState *me)
{
    if (!GR_PROFILE_TOOL)
        return 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
        if (ts->c_profilefunc)
            return 0;
    return 1;
}

/* The thread other than `me` whose own foothold (an audit event there)
 * waits for the change it announced, or NULL. */
static gr_thread *own_foothold_thread(gr_recorder *r, PyThreadState *me)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = ts == me ? NULL : thread_of_tstate(r, ts);
        if (t && t->foothold == 1)
            return t;
    }
    return NULL;
}

/* Trace function that holds the trace slot from the audit event of a
 * program's profile change to the next event after the change: that is
 * where the recorder can see what the program installed.  Events from
 * inside the audit dispatch (foot_in_dispatch) come before the change:
 * the foothold stays for the next one. */
static int foothold(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    PyThreadState *ts = PyThreadState_Get();
    if (!r) {
        /* No recording (gr_hooks_stop removes every foothold: this is
         * only a safety net): the foothold goes, and the thread's state
         * of a recording gone is not read. */
        if (ts->c_tracefunc == foothold) {
            GR_EXC_SAVE(saved);
            gr_enter_tracing(ts);
            gr_own_set_trace(ts, NULL, NULL); /* no recording: no audit hook of ours to quiet */
            gr_leave_tracing(ts);
            if (PyErr_Occurred())
                PyErr_Clear();
            GR_EXC_RESTORE(saved);
        }
        return 0;
    }
    gr_thread *t = thread_known(r);
    if (!t || !t->foothold) {
        /* A thread the recorder has not reached, after its change
         * (stray_foothold), or one it came to follow since (a later
         * recording's, or threading's hook): every followed thread's
         * slot, then the foothold goes. */
        GR_EXC_SAVE(saved);
        resolve_all(r, own_foothold_thread(r, ts));
        drop_foreign_all(r, ts);
        if (ts->c_tracefunc == foothold) {
            gr_own_change_begin(r);
            gr_own_set_trace(ts, NULL, NULL);
            gr_own_change_end(r);
        }
        if (PyErr_Occurred())
            gr_swallow(r);
        GR_EXC_RESTORE(saved);
        return 0;
    }
    Py_tracefunc prev = t ? t->foot_func : NULL;
    if (r && t && t->foothold == 1 && foot_in_dispatch(t, ts, frame))
        return prev ? prev(obj, frame, what, arg) : 0;
    if (r && t) {
        GR_EXC_SAVE(saved);
        int own = t->foothold == 1;
        int ran = t->foothold == 2 && ts->c_profilefunc != gr_profile && ts->c_profilefunc != gr_profile_chain;
        /* the thread whose audit event announced the change */
        gr_thread *by = own ? t : own_foothold_thread(r, ts);
        int withheld = own ? withheld_take(t, ts) : 0;
        /* 3.12+: with no profiling thread (the program cleared every
         * profile slot: threading.setprofile_all_threads(None)), this
         * event's profile tool is off, so the recorder's function put back
         * now would not get a CALL or RETURN: it is given the event here,
         * after the HOOK. */
        int tool_off = (what == PyTrace_CALL || what == PyTrace_RETURN) && no_profiling_thread(ts);
        /* A foreign foothold on a thread whose slot still holds the
         * program's function: this thread ran with it alone since the
         * change (how far, the recorder cannot tell: C calls only). */
        t->ran_unseen = ran;
        if (ran && t->ccall_frame && frame == t->ccall_frame) {
            /* A foreign foothold, in the frame that made this thread's
             * last recorded event, a C_CALL: that C call has ended, and
             * its end went to the function another thread put in this
             * thread's slot.  The HOOK names it (`during`), as for a
             * change made inside the C call. */
            t->hook_pending = 1;
            t->hook_code = t->last_c_call;
            t->last_c_call = 0;
            t->ccall_frame = NULL;
            t->may_have_ended = 1;
            (void)c_pop(r, t);
        }
        /* This thread's own foothold at an event of a frame the C call
         * named at the audit event called (not of its caller, foot_frame
         * then): that C call is still in progress, its c_return comes to
         * the recorder. */
        if (own && t->hook_pending && t->hook_code && frame != t->foot_frame)
            t->hook_code = 0;
        if (!own)
            drop_foothold(r, t, ts);
        resolve_all(r, by);
        t->hook_intrace = 0;
        /* The change is made (this thread's audit event came before it):
         * the other threads' footholds have nothing left to watch.  They
         * go first: this thread's own foothold, given back last through
         * CPython's setter, then finds no other thread counted as tracing
         * and turns the trace events off (3.12+: swapping the others out
         * afterwards would leave them on, every code object instrumented
         * for line events, until the program's next sys.settrace). */
        if (own) {
            drop_foreign_all(r, ts);
            drop_foothold(r, t, ts);
        }
        withheld_write(r, t, withheld);
        if (tool_off && ts->c_profilefunc == gr_profile && gr_active == r)
            gr_profile(NULL, frame, what, arg);
        if (PyErr_Occurred())
            gr_swallow(r);
        GR_EXC_RESTORE(saved);
    }
    return prev ? prev(obj, frame, what, arg) : 0;
}

/* The audit event of a profile change on a thread the recorder has not
 * reached (yet): a thread started before threading's hook was the
 * recorder's, or a new thread before it (yappi 1.6+ on 3.12+: its
 * PyEval_SetProfileAllThreads from a thread that has started gives every
 * thread state its function, a new thread's not yet running too, whose
 * first event then makes yappi call it again, before threading's hook
 * brings the recorder; 1 run in 10 lost the rest of a worker thread).  The
 * change can concern the followed threads: foreign footholds on them, and
 * a foothold on this thread if its trace slot is empty (on 3.12+ the
 * foreign footholds get events only while some thread has a trace
 * function installed through CPython); this thread itself stays as it
 * was, not followed.  Its foothold (foothold(), no gr_thread) resolves
 * every followed slot at its next event and goes. */
static void stray_foothold(gr_recorder *r, PyThreadState *ts)
{
    GR_EXC_SAVE(saved);
    if (!ts->c_tracefunc) {
        gr_own_change_begin(r);
        gr_own_set_trace(ts, foothold, NULL);
        gr_own_change_end(r);
    }
    if (ts->c_tracefunc)
        foothold_others(r, ts);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

/* Whether func is what threading.setprofile last set (threading's
 * _profile_hook, None when the program set none or has no threading):
 * code that hands it to sys.setprofile gives the thread what threading's
 * new threads get. */
static int is_thread_profile_hook(PyObject *func)
{
    PyObject *name = PyUnicode_FromString("threading");
    PyObject *threading = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    PyObject *hook = threading ? PyObject_GetAttrString(threading, "_profile_hook") : NULL;
    Py_XDECREF(threading);
    if (PyErr_Occurred())
        PyErr_Clear();
    int same = func == (hook ? hook : Py_None);
    Py_XDECREF(hook);
    return same;
}

/* sys.setprofile while recording (module.c installs it in the sys module
 * under the same name): the original, then at once what the foothold would
 * do at the next event.  So the c_return of this very call goes to the
 * recorder, which passes it on to the program's new function only if that
 * function saw the c_call: as without the recorder, a function set here
 * gets no c_return of the call that set it (CPython reports c_return only
 * when a profile function was set at the c_call).
 *
 * The recorder stands for a profiler installed with threading.setprofile
 * before the program.  Code that reads threading._profile_hook and hands
 * it to sys.setprofile gives the thread that profiler: gevent 20.12+'s
 * thread pool does before each task, in workers it starts with
 * _thread.start_new_thread, and clears the slot after it.  So when the
 * program set no threading hook, sys.setprofile(None) on a thread the
 * recorder never reached brings it in as the subject (HOOK restored), and
 * so again on such a thread after the subject was removed; where the
 * subject is installed, it removes it, as any clear does.  The program's
 * own hook (threading.setprofile(prof)) handed to a thread never reached
 * brings the recorder in too, chained in front of prof as on threading's
 * threads (HOOK set): the observer sees the tasks either way. */
static PyObject *sys_setprofile(PyObject *self, PyObject *func)
{
    gr_recorder *r = gr_active;
    PyObject *orig = gr_sys_setprofile_orig;
    if (!orig) {
        PyErr_SetString(PyExc_RuntimeError, "sys.setprofile is not available");
        return NULL;
    }
    if (!r)
        return PyObject_CallOneArg(orig, func);
    r->wrapping++;
    PyObject *res = PyObject_CallOneArg(orig, func);
    r->wrapping--;
    if (res && gr_active == r) {
        gr_thread *t = thread_known(r);
        int standard = 0;
        if (r->profile_on && (!t || (func == Py_None && t->by_hook && !t->subject)) &&
            is_thread_profile_hook(func)) {
            standard = func == Py_None;
            if (!t) {
                unfollowed_reached(r, PyThreadState_Get());
                t = gr_thread_current(r);
                if (t)
                    t->by_hook = 1;
            }
        }
        if (t) {
            GR_EXC_SAVE(saved);
            t->hook_pending = 0; /* no C call to pop: its c_return comes to us */
            resolve_profile_slot(r, t, PyThreadState_Get(), standard);
            if (PyErr_Occurred())
                gr_swallow(r);
            GR_EXC_RESTORE(saved);
        }
    }
    return res;
}

PyObject *gr_sys_setprofile_orig;
PyMethodDef gr_sys_setprofile_def = {"setprofile", sys_setprofile, METH_O, NULL};

PyObject *gr_uncaught_cb;

/* sys.excepthook's audit event (CPython 3.8+, bpo-36842): an uncaught
 * exception is about to be handed to sys.excepthook.  Whole-program mode
 * stops recording there, before the traceback is printed (3.13+ prints it
 * with Python code), without replacing sys.excepthook: the program sees its
 * own hook.  The callable is greenreplay's (set by _on_uncaught); its
 * errors are swallowed.  It runs inside a tracing guard: it is the
 * recorder's work, not the program's, and a profiler the program (or
 * greenreplay conform) still runs there must not count its calls
 * (_thread._count, the stop); the recorder does not record them either. */
static void uncaught(gr_recorder *r)
{
    PyObject *cb = gr_uncaught_cb;
    if (!cb)
        return;
    Py_INCREF(cb);
    GR_EXC_SAVE(saved);
    PyThreadState *ts = PyThreadState_Get();
    int was_quiet = r->quiet;
    PyFrameObject *was_top = r->quiet_top;
    if (!was_quiet) {
        r->quiet_top = PyEval_GetFrame();
        r->quiet = 1;
    }
    gr_enter_tracing(ts);
    PyObject *res = PyObject_CallNoArgs(cb);
    gr_leave_tracing(ts);
    /* r may have stopped and been freed: only touch it if still active. */
    if (gr_active == r) {
        r->quiet = was_quiet;
        r->quiet_top = was_top;
    }
    Py_XDECREF(res);
    if (!res)
        PyErr_Clear();
    GR_EXC_RESTORE(saved);
    Py_DECREF(cb);
}

/* A new sys.setprofile audit event on thread t (state ts) while its
 * foothold still waits for its first event after the previous change:
 * when the profile slot is no longer what it was at the previous audit
 * event, that change is done (two changes with no traced event between
 * them: both in a profile or trace function of the program, where no
 * event is delivered), so it is resolved now, with its own HOOK, and the
 * foothold is given up (the trace slot back to what it held, unless the
 * program's sys.settrace has taken it since); 1: the caller sets up a new
 * foothold for this change.  0 while the slot is unchanged (this event
 * comes from inside the previous dispatch, or that change has not been
 * made): the foothold stays as it is. */
static int foothold_overtaken(gr_recorder *r, gr_thread *t, PyThreadState *ts, int keep_code)
{
    if (ts->c_profilefunc == t->foot_prof && ts->c_profileobj == t->foot_pobj)
        return 0;
    /* The C call that made the first change, if the HOOK would name it
     * (`during`), is the one raising this audit event and has not
     * returned (PyEval_SetProfileAllThreads, 3.12+: one event per thread
     * from one call): its c_return comes to the recorder, put back now.
     * keep_code: the audit event is another call's (sys.settrace), made
     * from the frame that made the change: that C call has returned. */
    if (!keep_code)
        t->hook_code = 0;
    GR_EXC_SAVE(saved);
    /* Still tracing: the dispatch that made the previous change may be this
     * one, its withheld event not yet delivered (the caller looks again). */
    int withheld = gr_tstate_tracing(ts) ? 0 : withheld_take(t, ts);
    t->foot_withheld = -1;
    t->foot_intrace = 0;
    if (ts->c_tracefunc == foothold) {
        drop_foothold(r, t, ts);
    } else {
        t->foothold = 0;
        t->foot_func = NULL;
        Py_CLEAR(t->foot_obj);
        Py_CLEAR(t->foot_frame);
    }
    if (r->profile_on)
        resolve_profile_slot(r, t, ts, 0);
    t->hook_intrace = 0;
    withheld_write(r, t, withheld);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
    return 1;
}

/* Whether the calling thread's gr_thread (its TLS cache, valid for
 * recording r) holds a foothold frame. */
static inline int t_foothold_frame(gr_recorder *r)
{
    return tls_gen == r->tls_key && tls_thread && tls_thread->foot_frame;
}

int gr_audit_hook(const char *event, PyObject *args, void *userdata)
{
    gr_recorder *r = gr_active;
    if (r && gr_uncaught_cb && strcmp(event, "sys.excepthook") == 0) {
        uncaught(r);
        return 0;
    }
    if (r && !r->own_change && tls_gen == r->tls_key && tls_thread && tls_thread->foothold == 2 &&
        strcmp(event, "sys.settrace") == 0) {
        /* The program changes this thread's trace slot, which holds a
         * foreign foothold: give the slot back first, so the change
         * replaces the program's own function and CPython counts it. */
        drop_foreign(tls_thread, PyThreadState_Get());
        return 0;
    }
    if (r && !r->own_change && tls_gen == r->tls_key && tls_thread && tls_thread->foothold == 1 &&
        strcmp(event, "sys.settrace") == 0) {
        /* The program takes the trace slot from this thread's own
         * foothold, after the change it announced (prof.enable();
         * sys.settrace(f), or both in the program's trace function): the
         * foothold would get no event, so the change is resolved now,
         * with its HOOK, and the foothold given up before the slot
         * changes hands. */
        gr_thread *t = tls_thread;
        PyFrameObject *cur = PyEval_GetFrame();
        PyThreadState *ts = PyThreadState_Get();
        int same_frame = t->foot_frame && cur == t->foot_frame;
        if (foothold_overtaken(r, t, ts, same_frame)) {
            /* sys.settrace's own c_call went to the function the program's
             * change left in the profile slot, before this resolution put
             * the recorder back in front of it: its c_return comes to the
             * recorder, so its C_CALL is written now, after the HOOK
             * (not inside the program's trace function: no event there). */
            if (same_frame && r->profile_on && t->tid && gr_tstate_tracing(ts) == 0 &&
                (ts->c_profilefunc == gr_profile || ts->c_profilefunc == gr_profile_chain)) {
                PyObject *fn = PySys_GetObject("settrace"); /* borrowed */
                if (fn && PyCFunction_Check(fn)) {
                    GR_EXC_SAVE(saved);
                    uint32_t code = gr_cfunc_id(r, fn);
                    if (code) {
                        gr_emit3(r, GR_C_CALL, t->tid, t->cur_gid, code);
                        t->ccall_frame = cur;
                    }
                    if (PyErr_Occurred())
                        gr_swallow(r);
                    GR_EXC_RESTORE(saved);
                }
            }
            return 0;
        }
    }
    if (r && !r->own_change && t_foothold_frame(r) && strcmp(event, "sys.settrace") == 0) {
        /* The program takes the trace slot from the foothold, which then
         * decides nothing more: its frame need not be held. */
        Py_CLEAR(tls_thread->foot_frame);
        return 0;
    }
    if (r && r->profile_on && !r->own_change && event[0] == '_' &&
        (strcmp(event, "_thread.start_new_thread") == 0 || strcmp(event, "_thread.start_joinable_thread") == 0)) {
        thread_start_announced(r, args);
        return 0;
    }
    if (!r || r->own_change || r->wrapping || !r->profile_on || strcmp(event, "sys.setprofile") != 0)
        return 0;
    PyThreadState *ts = PyThreadState_Get();
    gr_thread *t = thread_known(r);
    if (!t) {
        stray_foothold(r, ts);
        return 0;
    }
    if (t->foothold == 2)
        drop_foreign(t, ts); /* this thread's own change: its own foothold */
    /* Raised inside a profile or trace function (a profiler that
     * re-installs itself from its own first event: yappi 1.4): the C call
     * of the first change has ended, its c_return delivered to the
     * program's function that runs now, so the HOOK still names it. */
    if (t->foothold && !foothold_overtaken(r, t, ts, gr_tstate_tracing(ts) > 0))
        return 0;
    GR_EXC_SAVE(saved);
    t->hook_pending = 1;
    t->foothold = 1;
    /* C audit hooks run before the dispatch's tracing guard: a thread
     * tracing now (inside a profile or trace function) stays so for the
     * whole dispatch, and no event can come from inside it. */
    PyFrameObject *cur = PyEval_GetFrame();
    Py_XSETREF(t->foot_frame, gr_tstate_tracing(ts) ? NULL : (PyFrameObject *)Py_XNewRef(cur));
    /* The C call in progress made the change only if it was this
     * thread's last event and no Python frame runs above its caller:
     * not when Python code made it, a profile callback of the program's
     * included (yappi 1.7 on 3.14 at a new thread's call of run(), inside
     * threading's _contextvars.Context.run, whose c_return comes to the
     * recorder later). */
    t->hook_code = t->ccall_frame && t->ccall_frame == cur ? t->last_c_call : 0;
    t->foot_lasti = t->foot_frame ? gr_frame_lasti(t->foot_frame) : -1;
    t->foot_prof = ts->c_profilefunc;
    t->foot_pobj = ts->c_profileobj;
    /* Made inside the program's trace function dispatching a CALL or RETURN
     * (not the program's profile function, whose event is recorded already),
     * with the recorder's function in the profile slot: that event goes to
     * the profile slot after the trace function returns, to what the change
     * leaves there (withheld_take). */
    t->foot_withheld = -1;
    t->foot_intrace = 0;
    PyFrameObject *df;
    int dw;
    if (gr_tstate_tracing(ts) && !t->chain_calls && slot_is_ours(ts) && ts->c_tracefunc &&
        ts->c_tracefunc != foothold) {
        if (!gr_own_dispatch(ts, &df, &dw)) {
            t->foot_intrace = 1; /* which event: unknown (not 3.11: compat.h) */
        } else if (dw == PyTrace_CALL || dw == PyTrace_RETURN) {
            t->foot_code = gr_code_id(r, gr_frame_code(df));
            t->foot_withheld = dw;
        }
    }
    t->foot_func = ts->c_tracefunc;
    if (t->foot_func) {
        /* The program's trace function stays; we chain in front of it. */
        Py_XSETREF(t->foot_obj, Py_XNewRef(ts->c_traceobj));
        ts->c_tracefunc = foothold;
    } else {
        gr_own_change_begin(r);
        gr_own_set_trace(ts, foothold, NULL);
        gr_own_change_end(r);
    }
    if (ts->c_tracefunc == foothold)
        foothold_others(r, ts);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
    return 0;
}

void gr_hooks_stop(gr_recorder *r)
{
    /* Unchain: the program's profile functions get their slots back.  The
     * calling thread's foothold goes last, through CPython's setter, once
     * the other threads' are swapped out (see foothold()). */
    PyThreadState *me = PyThreadState_Get();
    gr_thread *mine = NULL;
    int others = gr_footholds(me) - (me->c_tracefunc == foothold);
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = thread_of_tstate(r, ts);
        if (!t)
            continue;
        if (ts->c_profilefunc == gr_profile_chain && t->chain_func)
            gr_swap_profile_func(ts, t->chain_func);
        if (ts == me) {
            mine = t;
            continue;
        }
        if (t->foothold == 2)
            drop_foreign(t, ts);
        else if (t->foothold) {
            /* Another thread's own foothold: swapped out so that the
             * interpreter's count of tracing threads comes down with it
             * (taken on an empty slot, it was counted). */
            if (ts->c_tracefunc == foothold)
                (void)gr_own_swap_trace(ts, t->foot_func);
            forget_foothold(t);
        }
        Py_CLEAR(t->foot_frame); /* a foothold the program's trace function displaced */
    }
    /* Footholds left on threads the recorder does not follow (stray
     * footholds, on an empty trace slot): none may outlive the recording. */
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
        if (ts != me && ts->c_tracefunc == foothold)
            (void)gr_own_swap_trace(ts, NULL);
    if (mine) {
        drop_foothold(r, mine, me);
        Py_CLEAR(mine->foot_frame);
    }
    gr_own_change_begin(r);
    if (me->c_tracefunc == foothold) {
        gr_own_set_trace(me, NULL, NULL);
    } else if (GR_PROFILE_TOOL && others) {
        /* 3.12+: the slot set again as it is, so that CPython turns the
         * trace events off if the swaps above left no thread tracing. */
        gr_own_set_trace(me, me->c_tracefunc, me->c_traceobj);
    }
    gr_own_change_end(r);
    if (PyErr_Occurred())
        PyErr_Clear();
}

int gr_footholds(PyThreadState *me)
{
    int n = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
        n += ts->c_tracefunc == foothold;
    return n;
}
