/* profile_slot.c - the profile slot after the program changes it.
 *
 * The recorder stays in each followed thread's profile slot.  When the
 * program installs its own profile function there (sys.setprofile,
 * cProfile's enable(), a C extension), the recorder chains in front of it
 * (gr_profile_chain) and writes a HOOK record saying what the program did
 * and what the subject profiler is now; when the program clears the slot,
 * the recorder's function goes back in.  The recorder's sys.setprofile
 * (installed in the sys module while recording) does this at once; the
 * audit hook and the footholds (footholds.c) for every other way.
 *
 * On 3.12+ the recorder does not chain: the program's function stays in
 * the slot, as it would without the recorder, and the recorder gets the
 * thread's events from its own sys.monitoring tool (beside.c,
 * t->hook.beside); chain_func and chain_obj then name what the program
 * installed.  Chaining remains for 3.9-3.11 and where no tool id is free.
 */
#include "profile_slot.h"

#include "beside.h"
#include "follow.h"
#include "footholds.h"
#include "install_return.h"
#include "lazy.h"
#include "profile.h"
#include "threads.h"
#include "profiler_id.h"

/* Every thread's events take the bookkeeping path once a program's
 * function is chained anywhere (gr_c_push, gr_c_pop). */
static void chain_seen(gr_recorder *r)
{
    if (r->any_chain)
        return;
    r->any_chain = 1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->follow.threads); i++)
        gr_thread_path(r, (gr_thread *)PyList_GET_ITEM(r->follow.threads, i));
}

static void emit_hook(gr_recorder *r, gr_thread *t, int slot, int action, uint32_t code,
                      uint32_t prof, uint32_t frame)
{
    uint64_t who = (t->hook.subject ? GR_HOOK_SUBJECT_ON : 0) |
                   (t->hook.chain_func && !t->hook.beside ? GR_HOOK_CHAINED : 0) |
                   (t->hook.unannounced ? GR_HOOK_UNANNOUNCED : 0) | (t->hook.ran_unseen ? GR_HOOK_RAN : 0) |
                   (t->hook.intrace ? GR_HOOK_IN_TRACE : 0) | (t->kept == 1 ? GR_HOOK_BEFORE : 0);
    /* Another thread's change names that thread and its C call, unless a C
     * call of this thread's own ended with the program's function (code:
     * its c_return went there, foothold()), which `during` names then. */
    if (t->hook.by_tid && !code) {
        who |= GR_HOOK_BY_OTHER | (uint64_t)t->hook.by_tid << GR_HOOK_BY_SHIFT;
        code = t->hook.by_code;
    }
    /* Every code id given was defined when it was given (identity_id):
     * one above them is no code of this recording (a reader rejects the
     * trace, §4.2), so it is written as none and counted as an error. */
    if (code > r->ncodes || frame > r->ncodes) {
        r->errors++;
        code = code > r->ncodes ? 0 : code;
        frame = frame > r->ncodes ? 0 : frame;
    }
    uint64_t f[8] = {t->tid, t->cur_gid, (uint64_t)slot, (uint64_t)action, who, code, prof, frame};
    gr_emit(r, slot == GR_HOOK_PROFILE ? GR_HOOK_PROF : GR_HOOK, slot == GR_HOOK_PROFILE ? 8 : 6, f);
}

/* The profile slot of thread state ts (thread t) after the program may
 * have changed it: keep observing (take the slot back, or chain in front
 * of the program's function), and write a HOOK record saying what the
 * program did and what the subject profiler is now.  standard: the program
 * gave the thread threading's profile hook, which stands for the subject
 * (sys_setprofile below): the slot is empty and the subject is back. */
void gr_resolve_profile_slot(gr_recorder *r, gr_thread *t, PyThreadState *ts, int standard)
{
    Py_tracefunc f = ts->c_profilefunc;
    PyObject *old_chain = NULL;
    uint32_t code = t->hook.pending ? t->hook.code : 0;
    uint32_t frame = t->hook.by_tid ? 0 : t->hook.pending ? t->hook.frame
                     : ts == PyThreadState_Get() ? gr_profiler_frame(r, PyEval_GetFrame()) : 0;
    t->hook.pending = 0;
    int ran = t->hook.ran_unseen;
    t->hook.ran_unseen = 0;
    if (f == gr_profile || f == gr_profile_chain || gr_beside_holds(t, ts))
        return;
    t->hook.ran_unseen = ran; /* for emit_hook, below */
    /* The program's profiler installed, or removed (profiler_id.c). */
    uint32_t prof = f ? gr_profiler_id(r, f, ts->c_profileobj)
                      : gr_profiler_id(r, t->hook.chain_func, t->hook.chain_obj);
    int action;
    if (!f) {
        /* Cleared.  While the subject was displaced by the program's own
         * profiler, clearing puts back what the program saw before it
         * (None, as the recorder is invisible): the subject returns.
         * Otherwise the program removed the profiler a standard tool had
         * installed: the subject is gone from this thread. */
        if (standard || (!t->hook.subject && t->hook.displaced)) {
            action = GR_HOOK_RESTORED;
            t->hook.subject = 1;
            t->hook.displaced = 0;
        } else {
            action = GR_HOOK_CLEARED;
            t->hook.subject = 0;
        }
        t->hook.chain_func = NULL;
        t->hook.beside = 0;
        Py_CLEAR(t->hook.chain_obj);
        gr_own_change_begin(r);
        if (gr_own_set_profile(ts, gr_profile, NULL) < 0)
            gr_swallow(r);
        gr_own_change_end(r);
        /* (a foothold still in a trace slot: after it goes, footholds.c) */
        if (!gr_footholds(PyThreadState_Get()))
            gr_lazy_after_change(r, ts);
    } else {
        action = GR_HOOK_SET;
        if (t->hook.subject) {
            t->hook.subject = 0;
            t->hook.displaced = 1;
        }
        t->hook.chain_func = f;
        /* The profile object chained before is released last, once the
         * slot is whole again: releasing it can run its finalizer, and
         * _lsprof's clears the slot when the profiler is still enabled
         * (a cProfile.Profile().enable() held only by the slot, replaced
         * by another profiler's enable()).  Released between the two
         * writes, that clear left gr_profile_chain in the slot with no
         * object, and the next event called the program's function with
         * a NULL object: a crash.  Released here, the clear empties the
         * slot whole (its own audit event: a HOOK at the next event). */
        old_chain = t->hook.chain_obj;
        t->hook.chain_obj = Py_XNewRef(ts->c_profileobj);
        t->hook.beside = gr_beside_on(r);
        if (!t->hook.beside) {
            chain_seen(r);
            gr_swap_profile_func(ts, gr_profile_chain);
        }
    }
    if (t->tid)
        emit_hook(r, t, GR_HOOK_PROFILE, action, code, prof, frame);
    t->hook.ran_unseen = 0;
    Py_XDECREF(old_chain);
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
 * when a profile function was set at the c_call).  Where the program's
 * function stays in the slot (3.12+, beside.c), CPython itself would hand
 * it that c_return: install_return.c keeps it away.
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
    if (func != Py_None)
        gr_lazy_arm(r, PyThreadState_Get());
    gr_install_return_expect(r, PyThreadState_Get());
    r->own.in_setprofile++;
    PyObject *res = PyObject_CallOneArg(orig, func);
    r->own.in_setprofile--;
    if (res && func != Py_None)
        gr_beside_learn_trampoline(PyThreadState_Get()->c_profilefunc);
    if (res && gr_active == r) {
        gr_thread *t = gr_thread_known(r);
        int standard = 0;
        if (r->out.profile_on && (!t || (func == Py_None && t->hook.by_hook && !t->hook.subject)) &&
            is_thread_profile_hook(func)) {
            standard = func == Py_None;
            if (!t) {
                gr_unfollowed_reached(r, PyThreadState_Get());
                t = gr_thread_current(r);
                if (t)
                    t->hook.by_hook = 1;
            }
        }
        if (t) {
            GR_EXC_SAVE(saved);
            t->hook.pending = 0; /* no C call to pop: its c_return comes to us */
            gr_resolve_profile_slot(r, t, PyThreadState_Get(), standard);
            if (PyErr_Occurred())
                gr_swallow(r);
            GR_EXC_RESTORE(saved);
        }
    }
    return res;
}

PyObject *gr_sys_setprofile_orig;
PyMethodDef gr_sys_setprofile_def = {"setprofile", sys_setprofile, METH_O, NULL};

/* start(): the program's own profile function already in the slot of
 * thread state ts (set before start(): sys.setprofile, cProfile's
 * enable(), a C profiler's PyEval_SetProfile, threading's hook on a thread
 * started before) is kept as one the program installs while recording
 * (gr_resolve_profile_slot): chained, its object left in the slot, so that
 * sys.getprofile() returns it and it gets every event it would get alone;
 * gr_slots_give_back gives its function the slot back.  The subject is
 * displaced, as by an install (a clear puts it back).  The C calls open on
 * the thread then had their c_call given to that function (CPython gives a
 * c_return only where it gave the c_call), so their c_return goes there
 * too: the C-call bits of the thread's greenlets alive then start at 1
 * (t->kept; recorder.c sets them when it first sees each greenlet). */
int gr_profile_keep(gr_recorder *r, gr_thread *t, PyThreadState *ts)
{
    Py_tracefunc f = ts->c_profilefunc;
    if (!f || f == gr_profile || f == gr_profile_chain)
        return 0;
    t->kept = 1;
    t->hook.subject = 0;
    t->hook.displaced = 1;
    t->hook.chain_func = f;
    Py_XSETREF(t->hook.chain_obj, Py_XNewRef(ts->c_profileobj));
    t->hook.beside = gr_beside_on(r);
    if (t->hook.beside)
        return 1; /* left in the slot: CPython gives it its c_returns */
    t->cbits = ~(uint64_t)0;
    chain_seen(r);
    gr_swap_profile_func(ts, gr_profile_chain);
    return 1;
}

/* The HOOK of a kept profile function (gr_profile_keep), right after the
 * thread's first records (the starting thread's: after START): installed,
 * chained, named, `before` (GR_HOOK_BEFORE), by no frame of the recording
 * and in no C call (it came before).  Also, at a thread's first records,
 * the function another thread's change chained there before them (no HOOK
 * could name the thread then). */
void gr_profile_kept_hook(gr_recorder *r, gr_thread *t)
{
    if (!t->tid || !t->hook.chain_func)
        return;
    GR_EXC_SAVE(saved);
    uint32_t prof = gr_profiler_id(r, t->hook.chain_func, t->hook.chain_obj);
    emit_hook(r, t, GR_HOOK_PROFILE, GR_HOOK_SET, 0, prof, 0);
    if (t->kept) /* (else: a change before the thread's first records) */
        t->kept = 2; /* written (GR_HOOK_BEFORE): later HOOKs are changes */
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}
