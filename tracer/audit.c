/* audit.c - the recorder's audit hook: what the program does to the
 * profile and trace slots, heard before it happens.
 *
 * CPython raises an audit event (PEP 578, 3.8+) before a profile or trace
 * function is set, from Python or C.  The recorder's hook (installed once,
 * at import) takes a foothold there (footholds.c) to see the change at the
 * thread's next event; the recorder's own slot changes raise no event the
 * program's hooks see (slots.c): the recorder stays invisible
 * (docs/RECORDER.md, invariant 2).  The same hook hears thread starts
 * (follow.c), an uncaught exception (whole-program mode stops there) and
 * the program's import of greenlet (gl_load.c).
 */
#include "audit.h"

#include "beside.h"
#include "boot.h"
#include "follow.h"
#include "footholds.h"
#include "gl_load.h"
#include "install_return.h"
#include "lazy.h"
#include "profile.h"
#include "threads.h"

#include <string.h>

PyObject *gr_uncaught_cb;

/* sys.excepthook's audit event (CPython 3.8+, bpo-36842): an uncaught
 * exception is about to be handed to sys.excepthook.  Whole-program mode
 * stops recording there, before the traceback is printed (3.13+ prints it
 * with Python code), without replacing sys.excepthook: the program sees its
 * own hook.  The callable is greenreplay's (set by _on_uncaught); its
 * errors are swallowed.  It runs inside a tracing guard: it is the
 * recorder's work, not the program's, and a profiler the program (or
 * greenreplay conform) still runs there must not count its calls
 * (_thread._count, the stop); the recorder does not record them either.
 * Before the stop, a META `uncaught` names the exception's type (args: the
 * audit event's (hook, type, value, traceback)): the trailer's reason is
 * `exit` either way, and `check` says what ended the program. */
static void uncaught(gr_recorder *r, PyObject *args)
{
    PyObject *cb = gr_uncaught_cb;
    if (!cb)
        return;
    Py_INCREF(cb);
    GR_EXC_SAVE(saved);
    PyObject *ty = args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 1
                       ? PyTuple_GET_ITEM(args, 1) : NULL; /* borrowed */
    const char *name = ty && PyType_Check(ty) ? ((PyTypeObject *)ty)->tp_name : NULL;
    if (name) { /* tp_name: C, no code of the program runs */
        uint64_t f[2] = {gr_string_id(r, "uncaught"), gr_string_id(r, name)};
        if (f[0] && f[1])
            gr_emit(r, GR_META, 2, f);
        if (PyErr_Occurred())
            gr_swallow(r);
    }
    PyThreadState *ts = PyThreadState_Get();
    int was_quiet = r->own.quiet;
    PyFrameObject *was_top = r->own.quiet_top;
    if (!was_quiet) {
        r->own.quiet_top = PyEval_GetFrame();
        r->own.quiet = 1;
    }
    gr_enter_tracing(ts);
    PyObject *res = PyObject_CallNoArgs(cb);
    gr_leave_tracing(ts);
    /* r may have stopped and been freed: only touch it if still active. */
    if (gr_active == r) {
        r->own.quiet = was_quiet;
        r->own.quiet_top = was_top;
    }
    Py_XDECREF(res);
    if (!res)
        PyErr_Clear();
    GR_EXC_RESTORE(saved);
    Py_DECREF(cb);
}

/* Whether the calling thread's gr_thread (its TLS cache, valid for
 * recording r) holds a foothold frame. */
static inline int t_foothold_frame(gr_recorder *r)
{
    return gr_tls.gen == r->tls_key && gr_tls.thread && gr_tls.thread->foot.frame;
}

/* After a foothold overtaken at sys.settrace's audit event: sys.settrace's
 * own c_call went to the function the program's change left in the profile
 * slot, before this resolution put the recorder back in front of it; its
 * c_return comes to the recorder, so its C_CALL is written now, after the
 * HOOK (not inside the program's trace function: no event there).  cur:
 * the calling frame, the foothold's. */
static void settrace_c_call(gr_recorder *r, gr_thread *t, PyThreadState *ts, PyFrameObject *cur)
{
    if (!r->out.profile_on || !t->tid || gr_tstate_tracing(ts) != 0 || !gr_slot_observed(r, ts))
        return;
    PyObject *fn = PySys_GetObject("settrace"); /* borrowed */
    if (!fn || !PyCFunction_Check(fn))
        return;
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

int gr_audit_hook(const char *event, PyObject *args, void *userdata)
{
    gr_recorder *r = gr_active;
    if (r && gr_uncaught_cb && strcmp(event, "sys.excepthook") == 0) {
        uncaught(r, args);
        return 0;
    }
    if (event[0] == 'i' && strcmp(event, "import") == 0)
        gr_atexit_import_event(args); /* recording or not (boot.c) */
    if (r && r->gl_api.lazy && strcmp(event, "import") == 0) {
        /* The program imports greenlet: the recorder waits for it (gl_load.c). */
        gr_greenlet_import_event(r, args);
        return 0;
    }
    if (r && !r->own.change && gr_tls.gen == r->tls_key && gr_tls.thread && gr_tls.thread->foot.kind == 2 &&
        strcmp(event, "sys.settrace") == 0) {
        /* The program changes this thread's trace slot, which holds a
         * foreign foothold: give the slot back first, so the change
         * replaces the program's own function and CPython counts it. */
        gr_drop_foreign(gr_tls.thread, PyThreadState_Get());
        return 0;
    }
    if (r && !r->own.change && gr_tls.gen == r->tls_key && gr_tls.thread && gr_tls.thread->foot.kind == 1 &&
        strcmp(event, "sys.settrace") == 0) {
        /* The program takes the trace slot from this thread's own
         * foothold, after the change it announced (prof.enable();
         * sys.settrace(f), or both in the program's trace function): the
         * foothold would get no event, so the change is resolved now,
         * with its HOOK, and the foothold given up before the slot
         * changes hands. */
        gr_thread *t = gr_tls.thread;
        PyFrameObject *cur = PyEval_GetFrame();
        PyThreadState *ts = PyThreadState_Get();
        int same_frame = t->foot.frame && cur == t->foot.frame;
        if (gr_foothold_overtaken(r, t, ts, same_frame)) {
            if (same_frame)
                settrace_c_call(r, t, ts, cur);
            return 0;
        }
    }
    if (r && !r->own.change && t_foothold_frame(r) && strcmp(event, "sys.settrace") == 0) {
        /* The program takes the trace slot from the foothold, which then
         * decides nothing more: its frame need not be held. */
        Py_CLEAR(gr_tls.thread->foot.frame);
        return 0;
    }
    if (r && r->out.profile_on && !r->own.change && event[0] == '_' &&
        (strcmp(event, "_thread.start_new_thread") == 0 || strcmp(event, "_thread.start_joinable_thread") == 0)) {
        gr_thread_start_announced(r, args);
        return 0;
    }
    if (!r || r->own.change || r->own.in_setprofile || !r->out.profile_on || strcmp(event, "sys.setprofile") != 0)
        return 0;
    PyThreadState *ts = PyThreadState_Get();
    gr_thread *t = gr_thread_known(r);
    /* 3.12+: the tool that will watch beside the program's function is on
     * before the event where the change is resolved (beside.c). */
    (void)gr_beside_on(r);
    gr_lazy_arm(r, ts);
    gr_install_return_expect(r, ts);
    if (!t) {
        gr_stray_foothold(r, ts);
        return 0;
    }
    gr_beside_raised(r, t, ts);
    if (t->foot.kind == 2)
        gr_drop_foreign(t, ts); /* this thread's own change: its own foothold */
    /* Raised inside a profile or trace function (a profiler that
     * re-installs itself from its own first event: yappi 1.4): the C call
     * of the first change has ended, its c_return delivered to the
     * program's function that runs now, so the HOOK still names it. */
    if (t->foot.kind && !gr_foothold_overtaken(r, t, ts, gr_tstate_tracing(ts) > 0))
        return 0;
    gr_foothold_take(r, t, ts);
    return 0;
}
