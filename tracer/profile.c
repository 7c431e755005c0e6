/* profile.c - the recorder's C profile function: the hot path.
 *
 * CPython calls gr_profile at every profile event of a thread the recorder
 * follows (gr_profile_chain when the program's own profile function is
 * chained behind it: profile_slot.c).  It runs inside the recorded
 * program: it never raises into it, never blocks and never releases the
 * GIL; a failure is counted (gr_recorder.errors) and the event goes on.
 * A known code object costs one hash lookup and a few bytes of buffer
 * (docs/RECORDER.md, "One event, start to end").
 */
/* The frame's code object and the thread state read inline (compat.h,
 * gr_frame_code, gr_tstate_now): CPython's internal frame layout. */
#define GR_COMPAT_FRAMES 1
#include "profile.h"

#include "follow.h"
#include "footholds.h"
#include "gl_load.h"
#include "threads.h"

/* The two leaf paths, reached from gr_profile by a jump: GCC's noipa
 * keeps their signature gr_profile's (with noinline alone it gives each a
 * clone without the unused argument, and gr_profile moves the other three
 * before the jump).  clang makes no such clone and knows no noipa. */
#if defined(__clang__)
#define GR_LEAF_PATH __attribute__((noinline))
#else
#define GR_LEAF_PATH __attribute__((noipa))
#endif

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
    gr_thread_bind(r, t);
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

static void record_rest(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg,
                        uint32_t code);

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
        if (code == r->follow.thread_start_id[0] || code == r->follow.thread_start_id[1])
            gr_thread_start_event(r, t, what, arg);
        break;
    default:
        break;
    }
    if (r->ours && is_ours_event(r, t, frame, what, code)) {
        ours_moved(r, t, frame, what);
        return;
    }
    record_rest(r, t, frame, what, arg, code);
}

/* record_event after the thread's first sight and its own frames' test:
 * the switch check and the record (code: the event's code id). */
static __attribute__((noinline)) void record_rest(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what,
                                                  PyObject *arg, uint32_t code)
{
    /* A thread that waits asks greenlet at its first event in greenlet's
     * code; in callback mode at its first event once greenlet is loaded. */
    if (t->gl_pending && r->greenlet_mod && (r->sw.callback_mode || gr_code_is_gl(r, code)))
        gr_thread_touch(r, t);
    if (r->greenlet_mod && !t->gl_pending)
        gr_switch_check(r, t, frame, what, arg, code);
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
        if (arg == r->gl_settrace) /* the program changed its greenlet callback */
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

void gr_profile_c_end(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, uint32_t code)
{
    if (!t->tid || !code)
        return;
    GR_EXC_SAVE(saved);
    record_rest(r, t, frame, what, NULL, code);
    if (r->any_chain)
        (void)gr_c_pop(r, t);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

/* Record tag of each profile event kind (PyTrace_*: CALL 0, RETURN 3,
 * C_CALL 4, C_EXCEPTION 5, C_RETURN 6); 0 for kinds a profile function
 * is not given. */
static const uint8_t tag_of_what[8] = {GR_CALL, 0, 0, GR_RETURN, GR_C_CALL, GR_C_EXCEPTION, GR_C_RETURN, 0};

/* The hot path: an event of a thread already seen whose running greenlet
 * is known, with no program profile function chained anywhere.  The same
 * records as record_event, with its branches laid out for this case: the
 * tag from a table, the code id through a one-entry cache, no C-call
 * bookkeeping, the record inline.  pending (a constant): the thread has
 * not used greenlet yet (t->gl_pending: a thread pool's worker in a
 * program that imported greenlet), so there is no switch to look for,
 * only the thread's first event in greenlet's, gevent's or eventlet's
 * code, which goes the general way (record_rest asks greenlet).
 * Measured with tests/bench/instr_cost.sh (docs/PERFORMANCE.md). */
static inline __attribute__((always_inline)) void record_fast(gr_recorder *r, gr_thread *t, PyFrameObject *frame,
                                                              int what, int tag, PyObject *arg, int pending)
{
    uint32_t code;
    unsigned slot;
    if (what <= PyTrace_RETURN) {
        code = gr_code_id_cached(r, gr_frame_code(frame), &slot);
    } else {
        code = gr_cfunc_id_cached(r, arg, &slot);
        if (__builtin_expect(code == r->follow.thread_start_id[0] || code == r->follow.thread_start_id[1], 0))
            gr_thread_start_event(r, t, what, arg);
    }
    if (r->ours && __builtin_expect(is_ours_event(r, t, frame, what, code), 0)) {
        ours_moved(r, t, frame, what);
        return;
    }
    if (pending) {
        if (__builtin_expect(gr_code_is_gl(r, code), 0)) {
            record_rest(r, t, frame, what, arg, code);
            return;
        }
    } else if (r->greenlet_mod) {
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

/* gr_profile for every event the leaf path leaves (below). */
static __attribute__((noinline)) int profile_event(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    gr_thread *t = gr_thread_known(r);
    if (!t)
        return 0;
    if (__builtin_expect(r->gl_api.watch, 0))
        gr_greenlet_watch(r, t); /* the program imports greenlet (gl_load.c) */
    if (__builtin_expect(!t->slow_path, 1)) {
        /* t->tid && !t->gl_pending, and no program's function chained.
         * A profile function is only given CALL, RETURN and C_* events. */
        int tag = tag_of_what[(unsigned)what & 7u];
        if (__builtin_expect(tag != 0, 1))
            record_fast(r, t, frame, what, tag, arg, 0);
        return 0;
    }
    if (t->slow_path == GR_PATH_PENDING) {
        /* t->tid && t->gl_pending, and no program's function chained. */
        int tag = tag_of_what[(unsigned)what & 7u];
        if (tag != 0)
            record_fast(r, t, frame, what, tag, arg, 1);
        return 0;
    }
    if (t->tid && !t->gl_pending) {
        /* The same once a program's function was chained somewhere, with
         * the C-call bookkeeping (as below). */
        int tag = tag_of_what[(unsigned)what & 7u];
        if (tag != 0)
            record_fast(r, t, frame, what, tag, arg, 0);
        if (tag >= GR_C_CALL) {
            if (tag == GR_C_CALL)
                gr_c_push(r, t, 0);
            else
                gr_c_pop(r, t);
        }
        return 0;
    }
    record_event(r, t, frame, what, arg);
    /* Before any program function was chained every bit is 0, which
     * is what an empty stack pops: no bookkeeping needed until then. */
    if (r->any_chain && what == PyTrace_C_CALL)
        gr_c_push(r, t, 0);
    else if (r->any_chain && (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION))
        gr_c_pop(r, t);
    return 0;
}

/* The leaf path's end (gr_profile, profile_c_event): the thread's switch
 * test, then the record, as gr_event_tail writes it, with room known.
 * Returns 0 (written), 1 when the witness moved (nothing written: the
 * caller goes to gr_event_switched, as record_fast does), or -1 when the
 * event must go to profile_event (nothing written). */
static inline __attribute__((always_inline)) int leaf_record(gr_recorder *r, gr_thread *t, PyFrameObject *frame,
                                                             int tag, uint32_t code, unsigned slot)
{
    if (t->slow_path) {
        /* GR_PATH_PENDING: no switch to look for; the first event in
         * greenlet's code goes the general way (record_fast). */
        if (__builtin_expect(gr_code_is_gl(r, code), 0))
            return -1;
    } else if (r->greenlet_mod && __builtin_expect(gr_switch_witness(gr_tstate_now()) != t->witness, 0)) {
        return 1;
    }
    gr_writer *w = r->w;
    if (__builtin_expect(w->len + 1 + 3 * GR_VARINT_MAX > w->open_cap, 0))
        return -1;
    gr_event_state(t, frame, tag, code);
    gr_writer_commit(w, gr_enc_event_slot(&w->ctx, w->buf + GR_CHUNK_HEADER_LEN + w->len, tag, t->tid, t->cur_gid,
                                          code, slot));
    atomic_store_explicit(&r->nevents, atomic_load_explicit(&r->nevents, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    w->indexed++;
    return 0;
}

/* leaf_record, then where it could not write: the switch that came first
 * (gr_event_switched) or the general path (profile_event).  Inlined into
 * both leaf paths. */
static inline __attribute__((always_inline)) int leaf_event(gr_recorder *r, gr_thread *t, PyObject *obj,
                                                            PyFrameObject *frame, int what, PyObject *arg,
                                                            int tag, uint32_t code, unsigned slot)
{
    int rc = leaf_record(r, t, frame, tag, code, slot);
    if (__builtin_expect(rc == 0, 1))
        return 0;
    if (rc < 0)
        return profile_event(obj, frame, what, arg);
    if (tag == GR_C_RETURN)
        return gr_event_switched_c_return(t, frame, arg, gr_tstate_now(), GR_CODE_SLOT(code, slot));
    return gr_event_switched(t, frame, tag, arg, gr_tstate_now(), GR_CODE_SLOT(code, slot));
}

/* The leaf path of C events (gr_profile): the C_* event of a builtin
 * function or method in the recorder's caches (gr_cfunc_id_cached's hit:
 * the previous C event's, or the last one of its way),
 * then record_fast's tests of the thread starts and of the C calls of
 * greenreplay's own frame (is_ours_event), and gr_event_tail's of
 * greenlet.settrace.  A function of its own, so that the registers it
 * needs are not saved at the Python events. */
static GR_LEAF_PATH int profile_c_event(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    if (!r)
        return 0;
    gr_thread *t = gr_tls.thread;
    if (__builtin_expect(gr_tls.gen != r->tls_key || !t || t->slow_path > GR_PATH_PENDING || r->tw ||
                             !Py_IS_TYPE(arg, &PyCFunction_Type),
                         0))
        return profile_event(obj, frame, what, arg);
    PyCFunctionObject *f = (PyCFunctionObject *)arg;
    PyTypeObject *st = f->m_self ? Py_TYPE(f->m_self) : NULL;
    const gr_cf_entry *e = &r->cf[0];
    if (__builtin_expect(f->m_ml != e->ml || st != e->self_type, 0)) {
        e = &r->cf[1 + GR_CF_WAY(f->m_ml)];
        if (f->m_ml != e->ml || st != e->self_type)
            return profile_event(obj, frame, what, arg);
    }
    if (__builtin_expect(e->general || (frame == t->ours_frame && frame), 0))
        return profile_event(obj, frame, what, arg);
    uint32_t code = e->id;
    return leaf_event(r, t, obj, frame, what, arg, tag_of_what[(unsigned)what & 7u], code, e->slot);
}

/* The leaf path: the commonest events of all, the CALL or RETURN of a
 * Python function whose code was seen before (here; and, in
 * profile_c_event, the C_* events of a builtin in the caches), on a thread of
 * the fast path (t->slow_path 0, or GR_PATH_PENDING outside greenlet's
 * code) with no switch since its previous event and room in the chunk.
 * The same record as record_fast writes then, by the same steps, with no
 * call on the way (compat.h reads the frame's code and the thread state
 * inline where it can): the compiler then saves almost no register,
 * which is much of what a function costs at this size.  Anything else (a
 * code object not seen yet, another C function, greenreplay's own code, a
 * thread start, a moved witness, a full chunk, the times side channel, a
 * greenlet.settrace) goes to profile_event before anything is written, as
 * a tail call. */
static GR_LEAF_PATH int profile_py_event(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    if (!r)
        return 0;
    gr_thread *t = gr_tls.thread;
    if (__builtin_expect(gr_tls.gen != r->tls_key || !t || t->slow_path > GR_PATH_PENDING || r->tw, 0))
        return profile_event(obj, frame, what, arg);
    /* gr_code_id_cached without gr_code_id_slow (its cache never holds
     * greenreplay's own code). */
    PyCodeObject *co = gr_frame_code(frame);
    uint32_t code;
    unsigned slot;
    if (co == r->last_co) {
        code = r->last_co_id;
        slot = r->last_co_slot;
    } else {
        code = gr_ptrmap_get(&r->codes, (uintptr_t)co, 0);
        if (__builtin_expect(!code, 0) || (r->ours && __builtin_expect(gr_code_ours(r, code), 0)))
            return profile_event(obj, frame, what, arg);
        slot = code % GR_CODE_SLOTS;
        r->last_co = co;
        r->last_co_id = code;
        r->last_co_slot = slot;
    }
    return leaf_event(r, t, obj, frame, what, arg, what == PyTrace_CALL ? GR_CALL : GR_RETURN, code, slot);
}

/* The profile function: the event's kind decides the leaf path to take,
 * with nothing loaded or saved before (profile_c_event and
 * profile_py_event are tail calls, each saving only the registers it
 * needs). */
int gr_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (what > PyTrace_RETURN)
        return what <= PyTrace_C_RETURN ? profile_c_event(obj, frame, what, arg) : 0;
    if (__builtin_expect((unsigned)what - PyTrace_EXCEPTION <= PyTrace_LINE - PyTrace_EXCEPTION, 0))
        return 0; /* (never given to a profile function: tag_of_what's 0) */
    return profile_py_event(obj, frame, what, arg);
}

/* 3.9-3.11: the program's function, chained, raised out of a call or a
 * c_call (CPython's profile_trampoline then cleared its slot); its CALL or
 * C_CALL is written already.  A C call: CPython does not make it, and
 * gives no c_return or c_exception (the C_TRACE macro of ceval.c): its end
 * is written now, as a C_EXCEPTION (the exception comes out of the call).
 * A frame's call: 3.9 and 3.10 give no return either (compat.h,
 * GR_CALL_REFUSED_NO_RETURN): its RETURN is written now.  So the trace
 * stays balanced.  Examples: a profile function that raises at the c_call
 * of len(), or at the call of a function (the `profile` module's "Bad
 * call"); tests/integration/programs/profile_raises_c.py.
 * 3.12+ gives the recorder's tool no event after the program's raised:
 * nothing is written there.  Never raises. */
static void event_refused(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg)
{
    if (gr_active != r || !t->tid || !frame)
        return; /* recording stopped in there */
    if (what == PyTrace_C_CALL ? t->ccall_frame != frame : !GR_CALL_REFUSED_NO_RETURN || what != PyTrace_CALL)
        return; /* no C_CALL written last; a return that comes */
    GR_EXC_SAVE(saved);
    if (what == PyTrace_C_CALL) {
        record_event(r, t, frame, PyTrace_C_EXCEPTION, arg);
        (void)gr_c_pop(r, t);
    } else {
        /* CPython cleared the slot before the frame ends: the HOOK of
         * that change comes first, as on 3.11, where the unwind's return
         * reaches the foothold after the clear. */
        if (t->foot.kind == 1)
            (void)gr_foothold_overtaken(r, t, PyThreadState_GET(), 0);
        record_event(r, t, frame, PyTrace_RETURN, Py_None);
    }
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

int gr_profile_chain(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    gr_recorder *r = gr_active;
    gr_thread *t = r ? gr_thread_known(r) : gr_tls.thread;
    int pass = 1;
    if (r && t) {
        if (__builtin_expect(r->gl_api.watch, 0))
            gr_greenlet_watch(r, t);
        record_event(r, t, frame, what, arg);
        if (what == PyTrace_C_CALL)
            gr_c_push(r, t, 1);
        else if (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION)
            pass = gr_c_pop(r, t);
    }
    Py_tracefunc f = t ? t->hook.chain_func : NULL;
    if (!f || !pass)
        return 0;
    if (!r || !t)
        return f(obj, frame, what, arg);
    if (!r->greenlet_mod || r->sw.callback_mode) {
        Py_INCREF(t); /* the program's function may stop the recording */
        t->hook.chain_calls++;
        int rc = f(obj, frame, what, arg);
        t->hook.chain_calls--;
        if (rc)
            event_refused(r, t, frame, what, arg);
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
    t->hook.chain_calls++;
    int rc = f(obj, frame, what, arg);
    t->hook.chain_calls--;
    if (rc)
        event_refused(r, t, frame, what, arg);
    Py_DECREF(t);
    if (gr_active == r && gr_switch_witness(ts) != w0 && at) {
        if (!r->sw.prof_switches++) {
            r->sw.prof_switch_first[0] = at - 1; /* the event just written */
            r->sw.prof_switch_first[1] = tid;
            r->sw.prof_switch_first[2] = gid;
        }
    }
    return rc;
}
