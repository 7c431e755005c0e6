/* footholds.c - the foothold: the recorder's trace function that waits
 * for the program's profile change to be made.
 *
 * The audit event of a profile change (audit.c) comes before the change.
 * The recorder then puts its foothold into the thread's trace slot (the
 * program's own trace function chained behind it): its next event is the
 * first after the change, where the recorder sees what the program
 * installed and resolves every followed thread's profile slot
 * (profile_slot.c).  A change can concern another thread's slot, so the
 * other followed threads get foreign footholds.  Withheld events: a change
 * made inside the program's trace function can withhold the event it was
 * dispatching from the profile slot.
 */
#include "footholds.h"

#include "beside.h"
#include "install_return.h"
#include "lazy.h"
#include "profile.h"
#include "profile_slot.h"
#include "threads.h"
#include "profiler_id.h"

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
    int moved = f != t->foot.frame || (f && gr_frame_lasti(f) != t->foot.lasti);
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
    t->foot.kind = 0;
    t->foot.func = NULL;
    Py_CLEAR(t->foot.obj);
    Py_CLEAR(t->foot.frame);
}

void gr_profile_slot_at_mark(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
    Py_tracefunc f = ts->c_profilefunc;
    /* A thread's own foothold the program's trace change displaced (no
     * sys.settrace audit event resolved it): it will get no event, so the
     * change it waited for is looked at here (hook_pending names its C
     * call). */
    if (t->foot.kind == 1 && ts->c_tracefunc != foothold) {
        forget_foothold(t);
        if (r->out.profile_on && t->tid && gr_tstate_tracing(ts) <= 0)
            gr_resolve_profile_slot(r, t, ts, 0);
        return;
    }
    if (!r->out.profile_on || !t->tid || f == gr_profile || f == gr_profile_chain || gr_beside_holds(t, ts) ||
        t->hook.pending || t->foot.kind || gr_tstate_tracing(ts) > 0)
        return;
    /* An empty slot is a loss only where the recorder's function was
     * installed (it had events here); else it is a thread the profiler
     * never reached (the unprofiled-thread rule). */
    if (!f && !t->had_events)
        return;
    t->hook.unannounced = 1;
    gr_resolve_profile_slot(r, t, ts, 0);
    t->hook.unannounced = 0;
}

/* Every thread's profile slot, after a change announced by the audit
 * hook on thread `by` (a change can concern another thread: 3.12's
 * threading.setprofile_all_threads): another thread's HOOK names `by` and
 * the C call in progress there (GR_HOOK_BY_OTHER). */
static void resolve_all(gr_recorder *r, gr_thread *by)
{
    PyThreadState *me = PyThreadState_Get();
    uint32_t by_code = by && by->hook.pending ? by->hook.code : 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = gr_thread_of_tstate(r, ts);
        if (!t || !r->out.profile_on)
            continue;
        if (ts != me && t->foot.kind && moved_on(t, ts))
            t->hook.ran_unseen = 1;
        if (by && t != by && by->tid) {
            t->hook.by_tid = by->tid;
            t->hook.by_code = by_code;
        }
        gr_resolve_profile_slot(r, t, ts, 0);
        t->hook.by_tid = 0;
        t->hook.by_code = 0;
    }
}

/* Give the trace slot of thread state ts (thread t, any thread) back to
 * the function it held before a foreign foothold (its object never left
 * the slot). */

void gr_drop_foreign(gr_thread *t, PyThreadState *ts)
{
    if (t->foot.kind != 2)
        return;
    t->foot.kind = 0;
    if (ts->c_tracefunc == foothold)
        gr_own_swap_trace(ts, t->foot.func);
    t->foot.func = NULL;
    Py_CLEAR(t->foot.frame);
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
        gr_thread *t = gr_thread_of_tstate(r, ts);
        if (!t || t->ended || !t->tid || t->foot.kind || ts->c_tracefunc == foothold)
            continue;
        Py_tracefunc prev = ts->c_tracefunc;
        if (gr_own_swap_trace(ts, foothold) < 0)
            return;
        t->foot.kind = 2;
        t->foot.func = prev;
        /* Where the thread waits now (moved_on: did it run before the
         * change was resolved?). */
        PyFrameObject *f = gr_tstate_frame(ts); /* a new reference, held (moved_on) */
        Py_XSETREF(t->foot.frame, f);
        t->foot.lasti = f ? gr_frame_lasti(f) : -1;
        if (PyErr_Occurred())
            PyErr_Clear();
    }
}

/* Drop the foreign footholds of every thread but `me`: the change they
 * watched for has been resolved. */
static void drop_foreign_all(gr_recorder *r, PyThreadState *me)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = gr_thread_of_tstate(r, ts);
        if (t && t->foot.kind == 2)
            gr_drop_foreign(t, ts);
    }
}

/* Whether the profile slot of ts holds the recorder's own function, or
 * the program's one it watches beside (beside.c). */
static inline int slot_is_ours(PyThreadState *ts)
{
    return gr_slot_observed(gr_active, ts);
}

/* Take the event the foothold's change withheld (t->foot.withheld), if the
 * recorder's function was not in the profile slot when the program's trace
 * function returned: returns the record tag to write once the slot is
 * resolved (withheld_write), or 0.  Call before resolving: the slot then
 * is still what the trace function left (no event reached the program's
 * code in between: the foothold gets the first one). */
static int withheld_take(gr_thread *t, PyThreadState *ts)
{
    int what = t->foot.withheld;
    t->foot.withheld = -1;
    /* (an event the interpreter does not name: the HOOK says so) */
    t->hook.intrace = t->foot.intrace && !slot_is_ours(ts);
    t->foot.intrace = 0;
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
    gr_emit3(r, tag, t->tid, t->cur_gid, t->foot.code);
}

/* Give the trace slot of the calling thread back to what it held before
 * the foothold. */
static void drop_foothold(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
    if (t->foot.kind == 2) {
        gr_drop_foreign(t, ts);
        return;
    }
    if (!t->foot.kind)
        return;
    /* Only while the slot still holds the foothold: a function the
     * program's sys.settrace put there since stays. */
    if (ts->c_tracefunc != foothold) {
    } else if (t->foot.func) {
        ts->c_tracefunc = t->foot.func; /* its object never left the slot */
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
 * compared by identity, which is sound because t->foot.frame is a strong
 * reference: no other frame can have its address while it is held. */
static int foot_in_dispatch(gr_thread *t, PyThreadState *ts, PyFrameObject *frame)
{
    if (!t->foot.frame || !frame || frame == t->foot.frame ||
        ts->c_profilefunc != t->foot.prof || ts->c_profileobj != t->foot.pobj)
        return 0;
    int found = 0;
    PyFrameObject *f = PyFrame_GetBack(frame); /* may allocate (3.11+) */
    while (f) {
        if (f == t->foot.frame) {
            found = gr_frame_lasti(f) == t->foot.lasti;
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
        gr_thread *t = ts == me ? NULL : gr_thread_of_tstate(r, ts);
        if (t && t->foot.kind == 1)
            return t;
    }
    return NULL;
}

/* The foothold's event with no recording (gr_slots_give_back removes
 * every foothold: this is only a safety net): the foothold goes, and the
 * thread's state of a recording gone is not read. */
static void foothold_unrecorded(PyThreadState *ts)
{
    if (ts->c_tracefunc == foothold) {
        GR_EXC_SAVE(saved);
        gr_enter_tracing(ts);
        gr_own_set_trace(ts, NULL, NULL); /* no recording: no audit hook of ours to quiet */
        gr_leave_tracing(ts);
        if (PyErr_Occurred())
            PyErr_Clear();
        GR_EXC_RESTORE(saved);
    }
}

/* The foothold's event on a thread the recorder has not reached, after
 * its change (gr_stray_foothold), or one it came to follow since (a later
 * recording's, or threading's hook): every followed thread's slot, then
 * the foothold goes. */
static void foothold_unfollowed(gr_recorder *r, PyThreadState *ts)
{
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
        foothold_unrecorded(ts);
        return 0;
    }
    gr_thread *t = gr_thread_known(r);
    if (!t || !t->foot.kind) {
        foothold_unfollowed(r, ts);
        return 0;
    }
    Py_tracefunc prev = t ? t->foot.func : NULL;
    if (r && t && t->foot.kind == 1 && foot_in_dispatch(t, ts, frame))
        return prev ? prev(obj, frame, what, arg) : 0;
    if (r && t) {
        GR_EXC_SAVE(saved);
        int own = t->foot.kind == 1;
        int ran = t->foot.kind == 2 && !gr_slot_observed(r, ts);
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
        t->hook.ran_unseen = ran;
        if (ran && t->ccall_frame && frame == t->ccall_frame) {
            /* A foreign foothold, in the frame that made this thread's
             * last recorded event, a C_CALL: that C call has ended, and
             * its end went to the function another thread put in this
             * thread's slot.  The HOOK names it (`during`), as for a
             * change made inside the C call. */
            t->hook.pending = 1;
            t->hook.code = t->last_c_call;
            t->hook.frame = 0; /* another thread made the change (§4.2) */
            t->last_c_call = 0;
            t->ccall_frame = NULL;
            t->may_have_ended = 1;
            (void)gr_c_pop(r, t);
        }
        /* This thread's own foothold at an event of a frame the C call
         * named at the audit event called (not of its caller, foot.frame
         * then): that C call is still in progress, its c_return comes to
         * the recorder. */
        if (own && t->hook.pending && t->hook.code && frame != t->foot.frame)
            t->hook.code = 0;
        if (!own)
            drop_foothold(r, t, ts);
        resolve_all(r, by);
        t->hook.intrace = 0;
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
        gr_lazy_after_change(r, ts);
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
void gr_stray_foothold(gr_recorder *r, PyThreadState *ts)
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
int gr_foothold_overtaken(gr_recorder *r, gr_thread *t, PyThreadState *ts, int keep_code)
{
    if (ts->c_profilefunc == t->foot.prof && ts->c_profileobj == t->foot.pobj)
        return 0;
    /* The C call that made the first change, if the HOOK would name it
     * (`during`), is the one raising this audit event and has not
     * returned (PyEval_SetProfileAllThreads, 3.12+: one event per thread
     * from one call): its c_return comes to the recorder, put back now.
     * keep_code: the audit event is another call's (sys.settrace), made
     * from the frame that made the change: that C call has returned. */
    if (!keep_code)
        t->hook.code = 0;
    GR_EXC_SAVE(saved);
    /* Still tracing: the dispatch that made the previous change may be this
     * one, its withheld event not yet delivered (the caller looks again). */
    int withheld = gr_tstate_tracing(ts) ? 0 : withheld_take(t, ts);
    t->foot.withheld = -1;
    t->foot.intrace = 0;
    if (ts->c_tracefunc == foothold) {
        drop_foothold(r, t, ts);
    } else {
        t->foot.kind = 0;
        t->foot.func = NULL;
        Py_CLEAR(t->foot.obj);
        Py_CLEAR(t->foot.frame);
    }
    if (r->out.profile_on)
        gr_resolve_profile_slot(r, t, ts, 0);
    t->hook.intrace = 0;
    withheld_write(r, t, withheld);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
    return 1;
}

/* A sys.setprofile audit event on thread t (state ts, the calling
 * thread), with no foothold of its own waiting: take one, to see the
 * change at the thread's next event, and foreign footholds on the other
 * followed threads (foothold_others). */
void gr_foothold_take(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
    GR_EXC_SAVE(saved);
    t->hook.pending = 1;
    t->foot.kind = 1;
    /* C audit hooks run before the dispatch's tracing guard: a thread
     * tracing now (inside a profile or trace function) stays so for the
     * whole dispatch, and no event can come from inside it. */
    PyFrameObject *cur = PyEval_GetFrame();
    Py_XSETREF(t->foot.frame, gr_tstate_tracing(ts) ? NULL : (PyFrameObject *)Py_XNewRef(cur));
    /* The C call in progress made the change only if it was this
     * thread's last event and no Python frame runs above its caller:
     * not when Python code made it, a profile callback of the program's
     * included (yappi 1.7 on 3.14 at a new thread's call of run(), inside
     * threading's _contextvars.Context.run, whose c_return comes to the
     * recorder later). */
    t->hook.code = t->ccall_frame && t->ccall_frame == cur ? t->last_c_call : 0;
    t->hook.frame = gr_profiler_frame(r, cur);
    t->foot.lasti = t->foot.frame ? gr_frame_lasti(t->foot.frame) : -1;
    t->foot.prof = ts->c_profilefunc;
    t->foot.pobj = ts->c_profileobj;
    /* Made inside the program's trace function dispatching a CALL or RETURN
     * (not the program's profile function, whose event is recorded already),
     * with the recorder's function in the profile slot: that event goes to
     * the profile slot after the trace function returns, to what the change
     * leaves there (withheld_take). */
    t->foot.withheld = -1;
    t->foot.intrace = 0;
    PyFrameObject *df;
    int dw;
    if (gr_tstate_tracing(ts) && !t->hook.chain_calls && slot_is_ours(ts) && ts->c_tracefunc &&
        ts->c_tracefunc != foothold) {
        if (!gr_own_dispatch(ts, &df, &dw)) {
            t->foot.intrace = 1; /* which event: unknown (not 3.11: compat.h) */
        } else if (dw == PyTrace_CALL || dw == PyTrace_RETURN) {
            t->foot.code = gr_code_id(r, gr_frame_code(df));
            t->foot.withheld = dw;
        }
    }
    t->foot.func = ts->c_tracefunc;
    if (t->foot.func) {
        /* The program's trace function stays; we chain in front of it. */
        Py_XSETREF(t->foot.obj, Py_XNewRef(ts->c_traceobj));
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
}

void gr_slots_give_back(gr_recorder *r)
{
    /* Unchain: the program's profile functions get their slots back.  The
     * calling thread's foothold goes last, through CPython's setter, once
     * the other threads' are swapped out (see foothold()). */
    PyThreadState *me = PyThreadState_Get();
    gr_thread *mine = NULL;
    int others = gr_footholds(me) - (me->c_tracefunc == foothold);
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts)) {
        gr_thread *t = gr_thread_of_tstate(r, ts);
        if (!t)
            continue;
        if (ts->c_profilefunc == gr_profile_chain && t->hook.chain_func)
            gr_swap_profile_func(ts, t->hook.chain_func);
        t->hook.beside = 0; /* (its function is in its slot already) */
        if (ts == me) {
            mine = t;
            continue;
        }
        if (t->foot.kind == 2)
            gr_drop_foreign(t, ts);
        else if (t->foot.kind) {
            /* Another thread's own foothold: swapped out so that the
             * interpreter's count of tracing threads comes down with it
             * (taken on an empty slot, it was counted). */
            if (ts->c_tracefunc == foothold)
                (void)gr_own_swap_trace(ts, t->foot.func);
            forget_foothold(t);
        }
        Py_CLEAR(t->foot.frame); /* a foothold the program's trace function displaced */
    }
    /* Footholds left on threads the recorder does not follow (stray
     * footholds, on an empty trace slot): none may outlive the recording. */
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
        if (ts != me && ts->c_tracefunc == foothold)
            (void)gr_own_swap_trace(ts, NULL);
    if (mine) {
        drop_foothold(r, mine, me);
        Py_CLEAR(mine->foot.frame);
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
    gr_lazy_disarm();
    gr_install_return_off();
    gr_beside_off(r);
}

int gr_footholds(PyThreadState *me)
{
    int n = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts; ts = PyThreadState_Next(ts))
        n += ts->c_tracefunc == foothold;
    return n;
}
