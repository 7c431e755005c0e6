/* compat.h - every CPython-version difference the recorder depends on.
 *
 * Each entry names the CPython (or greenlet) change behind it.  Nothing
 * outside this header tests PY_VERSION_HEX.
 */
#ifndef GR_COMPAT_H
#define GR_COMPAT_H

/* A translation unit that reads frames without the GIL (unwind.c) defines
 * GR_COMPAT_FRAMES first: it needs CPython's internal frame layout, which
 * only Py_BUILD_CORE_MODULE exposes.  The one that writes the recorder's
 * own profile and trace slots (slots.c) defines GR_COMPAT_SLOTS: on 3.9 it
 * needs the interpreter's internal ceval state.  Those that reach into
 * sys.monitoring's state (install_return.c, beside.c) define
 * GR_COMPAT_MONITORING. */
#if (defined(GR_COMPAT_FRAMES) || defined(GR_COMPAT_SLOTS) || defined(GR_COMPAT_MONITORING)) && \
    !defined(Py_BUILD_CORE_MODULE)
#define Py_BUILD_CORE_MODULE
#endif

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

/* Py_NewRef/Py_XNewRef are new in 3.10 (bpo-42262). */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *gr_new_ref(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
static inline PyObject *gr_xnew_ref(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}
#define Py_NewRef(o) gr_new_ref((PyObject *)(o))
#define Py_XNewRef(o) gr_xnew_ref((PyObject *)(o))
#endif

/* Code object of a frame, borrowed (the frame keeps it alive).
 * 3.11 made PyFrameObject opaque (bpo-46836); PyFrame_GetCode (3.9+,
 * bpo-40421) returns a new reference there.  A translation unit with
 * GR_COMPAT_FRAMES (the profile function's, profile.c) reads what
 * PyFrame_GetCode reads, without the call and the reference: the frame's
 * _PyInterpreterFrame (f_frame, 3.11, bpo-44590) and its code object,
 * f_code (3.11/3.12), f_executable (3.13, gh-117045), a tagged
 * _PyStackRef f_executable (3.14, gh-118926: the tag bits masked). */
#if defined(GR_COMPAT_FRAMES) && PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#if PY_VERSION_HEX >= 0x030E0000
#include <internal/pycore_interpframe.h> /* (3.14, gh-130931) */
#endif
#endif
static inline PyCodeObject *gr_frame_code(PyFrameObject *f)
{
#if defined(GR_COMPAT_FRAMES) && PY_VERSION_HEX >= 0x030E0000
    return (PyCodeObject *)(f->f_frame->f_executable.bits & ~(uintptr_t)Py_TAG_BITS);
#elif defined(GR_COMPAT_FRAMES) && PY_VERSION_HEX >= 0x030D0000
    return (PyCodeObject *)f->f_frame->f_executable;
#elif defined(GR_COMPAT_FRAMES) && PY_VERSION_HEX >= 0x030B0000
    return f->f_frame->f_code;
#elif PY_VERSION_HEX >= 0x030B0000
    PyCodeObject *co = PyFrame_GetCode(f);
    Py_DECREF(co);
    return co;
#else
    return f->f_code;
#endif
}

/* Globals of a frame, new reference.  PyFrame_GetGlobals is new in 3.11
 * (bpo-46836, which made PyFrameObject opaque). */
static inline PyObject *gr_frame_globals(PyFrameObject *f)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetGlobals(f);
#else
    return Py_NewRef(f->f_globals);
#endif
}

/* Qualified name of a code object, borrowed.  co_qualname is new in 3.11
 * (bpo-44530); earlier versions only have co_name. */
static inline PyObject *gr_code_qualname(PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030B0000
    return co->co_qualname;
#else
    return co->co_name;
#endif
}

/* The thread's re-entrancy depth of trace/profile callbacks.  Present as
 * tstate->tracing in every supported version. */
static inline int gr_tstate_tracing(PyThreadState *ts)
{
    return ts->tracing;
}

/* The calling thread's state, for a caller that holds the GIL with a
 * thread state (the profile function): PyThreadState_Get without its test
 * for none (a fatal error), two instructions less per event.  With
 * GR_COMPAT_FRAMES up to 3.11, the internal inline reader (no call).  Public as
 * PyThreadState_GetUnchecked from 3.13; _PyThreadState_UncheckedGet
 * before (cpython/pystate.h, 3.5-3.12; an alias of the public one
 * after). */
#if defined(GR_COMPAT_FRAMES) && PY_VERSION_HEX < 0x030C0000
#include <internal/pycore_pystate.h>
#endif
static inline PyThreadState *gr_tstate_now(void)
{
#if defined(GR_COMPAT_FRAMES) && PY_VERSION_HEX < 0x030C0000
    /* With the internal headers, up to 3.11: an atomic load of
     * _PyRuntime.gilstate.tstate_current, inline (3.12 made it a
     * thread-local that a module reaches only through a call, gh-104812). */
    return _PyThreadState_GET();
#elif PY_VERSION_HEX >= 0x030D0000
    return PyThreadState_GetUnchecked();
#else
    return _PyThreadState_UncheckedGet();
#endif
}

/* Whether the interpreter is finalizing, from a thread without the GIL
 * (tracer/window.c).  Public as Py_IsFinalizing from 3.13 (gh-108014);
 * _Py_IsFinalizing before (cpython/pylifecycle.h, 3.7-3.12). */
static inline int gr_is_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* A per-thread counter that every greenlet switch changes, read to skip
 * asking greenlet which greenlet runs when no switch can have happened.
 * greenlet increments tstate->context_ver each time it restores a
 * greenlet's state into the thread (0.4.15+, with its support of
 * contextvars, PEP 567: 0.4/1.x g_switchstack, 2.0+ PythonState
 * operator>>), to invalidate the contextvars cache.  CPython itself
 * increments it only when a Context is entered or left (Context.run,
 * PyContext_Enter/Exit).  A 64-bit counter: it never comes back to a value
 * seen before.  Present in PyThreadState from 3.7 to 3.15
 * (cpython/pystate.h).  A step of exactly one across the call or return of
 * Context.run is that Context's, not a switch (switches.c, context_step):
 * asking greenlet there would run greenlet's deferred cleanup of the
 * thread's greenlets at a moment the program did not choose.  Since 3.14 a
 * threading.Thread runs its target inside Context.run (CPython gh-128555,
 * the Thread `context` argument), so every thread's end is such a step. */
static inline uint64_t gr_switch_witness(PyThreadState *ts)
{
    return ts->context_ver;
}

/* Whether the frame chain of a suspended greenlet, read from gr_frame, is
 * cut after its innermost frame: greenlet 3.0.0 to 3.0.2 on CPython 3.12+
 * set that frame's f_back to None while the greenlet is suspended (the
 * workaround of greenlet commit 40646dc for interpreter frames on the C
 * stack, CPython PR 96319); greenlet 3.0.3 exposes the whole chain again
 * (greenlet issue 388, PR 393).  The recorder then marks the stacks it
 * reads there (a suspended greenlet's GREENLET seed, its STACK at stop) as
 * cut: only their innermost frames are ground truth. */
static inline int gr_greenlet_chain_cut(int major, int minor, int micro)
{
    return PY_VERSION_HEX >= 0x030C0000 && major == 3 && minor == 0 && micro <= 2;
}

/* Whether passive mode may write continued switches (switches.c): where a
 * greenlet's turn is seen whole or not at all.  3.9-3.11: profile events
 * are gated by one flag (tstate->use_tracing; 3.10/3.11
 * cframe->use_tracing, copied into each C-level eval loop and back out of
 * it, CPython PR 25276), which only a hook change or a switch changes.
 * 3.12+: legacy profiling runs on sys.monitoring (PEP 669), instrumented
 * per code object: a frame suspended across a monitoring change resumes in
 * stale bytecode whose C calls and return are not reported while other
 * frames of the same turn are, so every switch carries its real stack. */
#define GR_CONTINUED_SWITCHES (PY_VERSION_HEX < 0x030C0000)

/* Whether a switch is followed by an INSTR record (instr.h): 3.12+, where
 * the instrumentation of the target's frames decides whether it reports
 * events (PEP 669, CPython gh-103082).  A constant, so that the call is
 * compiled out before 3.12. */
#define GR_INSTR_SWITCH (PY_VERSION_HEX >= 0x030C0000)

/* Whether the profile function is a sys.monitoring tool dispatched after the
 * trace function within one event (3.12+, Python/legacy_tracing.c: tool 6
 * profile, tool 7 trace; Python/instrumentation.c calls an event's tools
 * from the highest id down, from a set of tools taken before the first is
 * called).  The profile tool is on only while some thread of the
 * interpreter has a profile function (interp->sys_profiling_threads): when
 * none had one as the event began, a profile function installed by the
 * trace function during that CALL or RETURN does not get it.  3.9-3.11
 * read the profile slot after the trace function returns
 * (trace_function_entry/exit): it gets it. */
#define GR_PROFILE_TOOL (PY_VERSION_HEX >= 0x030C0000)

/* Whether the recorder can watch beside a program's profile function
 * instead of chaining it (tracer/beside.c).  3.12+ (PEP 669, gh-103082):
 * the profile slot's function is called by the sys.monitoring tool 6
 * (Python/legacy_tracing.c), and a tool of the recorder's own gets the
 * same events (PY_START, PY_RESUME, PY_THROW, PY_RETURN, PY_YIELD,
 * PY_UNWIND, CALL, C_RETURN, C_RAISE) while the program's function stays
 * in the slot.  3.9-3.11: the eval loop calls the slot's function alone
 * (call_trace_protected in Python/ceval.c): the recorder chains. */
#define GR_BESIDE (PY_VERSION_HEX >= 0x030C0000)

/* Whether the version keeps a per-thread (and so, with greenlet, per
 * greenlet) "use_tracing" flag that gates profile events:
 *  - 3.9: tstate->use_tracing;
 *  - 3.10/3.11: tstate->cframe->use_tracing (CPython PR 25276, bpo-43760);
 *  - 3.12+: none; legacy profiling runs on sys.monitoring (PEP 669). */
#if PY_VERSION_HEX < 0x030C0000
#define GR_HAVE_USE_TRACING 1
#else
#define GR_HAVE_USE_TRACING 0
#endif

/* use_tracing that the target greenlet resumes with after a greenlet trace
 * callback returns.  greenlet calls the callback inside a tracing guard
 * (greenlet 0.4/1.x g_calltrace; 2.0+ TracingGuard with
 * PyThreadState_EnterTracing/LeaveTracing), which zeroes the flag during the
 * callback and recomputes it on the way out:
 *  - 3.9/3.10 (greenlet's own code): tracing <= 0 after the decrement and a
 *    trace or profile function set;
 *  - 3.11 (PyThreadState_LeaveTracing -> _PyThreadState_ResumeTracing):
 *    255 if a trace or profile function is set, else 0.
 * So the value read inside the callback is always 0; this returns the value
 * the target runs with once the callback is done.  0 on 3.12+. */
static inline int gr_resume_use_tracing(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030C0000
    (void)ts;
    return 0;
#elif PY_VERSION_HEX >= 0x030B0000
    return (ts->c_tracefunc || ts->c_profilefunc) ? 255 : 0;
#else
    return (ts->tracing - 1 <= 0 && (ts->c_tracefunc || ts->c_profilefunc)) ? 1 : 0;
#endif
}

/* The per-greenlet "use_tracing" flag of the running code, read directly
 * (not inside a profile or trace callback, where CPython zeroes it):
 *  - 3.9: tstate->use_tracing;
 *  - 3.10/3.11: tstate->cframe->use_tracing (CPython PR 25276, bpo-43760),
 *    which greenlet saves and restores per greenlet (greenlet issue 256 was
 *    a new greenlet starting with a stale copy).
 * -1 on 3.12+, where no such flag exists (PEP 669). */
static inline int gr_use_tracing_now(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030C0000
    (void)ts;
    return -1;
#elif PY_VERSION_HEX >= 0x030A0000
    return ts->cframe ? ts->cframe->use_tracing : 0;
#else
    return ts->use_tracing;
#endif
}

/* Whole-program start (boot.c): the one-shot profile function that waits
 * for the program's first frame is set while `site` imports the boot, in
 * frames that return before the program runs.  On 3.10/3.11 setting a
 * profile function sets the running CFrame's use_tracing, and an eval loop
 * that returns copies its CFrame's use_tracing into the one below (CPython
 * PR 25276, bpo-43760): the flag reaches tstate->root_cframe, and every
 * CFrame entered later (runpy's, for -m) starts from it.  greenlet 1.1.0
 * starts new greenlets on the root CFrame (greenlet issue 256), so a stale
 * 1 there shows a profiler what it would not see.  A profiler started in the
 * program's first frame leaves every CFrame below it as a trace function
 * alone sets it: gr_unarm_below(ts), called at that frame's call event,
 * puts them back to that.  3.9 keeps one flag per thread
 * (tstate->use_tracing, recomputed by the next setprofile) and 3.12+ none
 * (PEP 669): nothing to do there.
 * The same at the first event of a thread that threading started while
 * recording (threads.h, gr_thread_known): the recorder set its profile
 * function into the fresh thread state, whose running CFrame was then the
 * root one, so the root CFrame says 1.  threading.setprofile's function
 * is set inside _bootstrap_inner and leaves the root CFrame at 0 (as long
 * as the thread runs): with greenlet 1.1.0, new greenlets there start
 * with profiling off. */
static inline void gr_unarm_below(PyThreadState *ts)
{
    /* The walk ends at the root CFrame: 3.10's new_threadstate takes the
     * state from PyMem_RawMalloc and never sets root_cframe.previous. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
    for (_PyCFrame *c = ts->cframe; c && c != &ts->root_cframe;) {
        c = c->previous;
        if (c)
            c->use_tracing = ts->c_tracefunc ? 255 : 0;
    }
#elif PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030B0000
    for (CFrame *c = ts->cframe; c && c != &ts->root_cframe;) {
        c = c->previous;
        if (c)
            c->use_tracing = ts->c_tracefunc != NULL;
    }
#else
    (void)ts;
#endif
}

/* CPython's JIT (PEP 744, built with --enable-experimental-jit, 3.13+,
 * turned on or off by PYTHON_JIT) runs no executor while a profile function
 * is set, so code paths only the JIT runs cannot run under recording.  The
 * recorder says so (META jit): "enabled" when sys._jit.is_enabled() says so
 * (3.14+); "requested" on a version without sys._jit (3.13) when
 * PYTHON_JIT is set to something other than 0 (the build may have no JIT);
 * NULL otherwise and before 3.13. */
static inline const char *gr_jit_state(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *jit = PySys_GetObject("_jit"); /* borrowed */
    if (jit) {
        PyObject *on = PyObject_CallMethod(jit, "is_enabled", NULL);
        int yes = on ? PyObject_IsTrue(on) : 0;
        Py_XDECREF(on);
        PyErr_Clear();
        return yes > 0 ? "enabled" : NULL;
    }
    PyErr_Clear();
    const char *env = getenv("PYTHON_JIT");
    return env && *env && strcmp(env, "0") != 0 ? "requested" : NULL;
#else
    return NULL;
#endif
}

/* Whether a frame whose call event the profile function raised out of
 * gets no return event: 3.9 and 3.10's _PyEval_EvalFrameDefault jumps to
 * exit_eval_frame then, past the return's call_trace_protected.  3.11's
 * eval loop traces the call at the frame's start (TRACE_FUNCTION_ENTRY,
 * `goto error`) and the frame unwinds through TRACE_FUNCTION_UNWIND,
 * which gives the return (profile.c, event_refused). */
#define GR_CALL_REFUSED_NO_RETURN (PY_VERSION_HEX < 0x030B0000)

/* Whether the atexit module's callbacks belong to the interpreter rather
 * than to the module object (3.10, bpo-42639): from then on a module that
 * imported atexit only to register may take it out of sys.modules again,
 * and a later `import atexit` still runs the same callbacks.  Before, a
 * second atexit module replaced the first one's callbacks, and the
 * interpreter held the latest one by a borrowed pointer: boot.c keeps the
 * recorder's alive, and gives it back at the program's own import. */
#define GR_ATEXIT_SHARED (PY_VERSION_HEX >= 0x030A0000)

/* For tests of the whole-program start: the use_tracing flags that gate
 * profile events, read directly, as a list: 3.10/3.11 one per CFrame from
 * the running one down to tstate->root_cframe (CPython PR 25276,
 * bpo-43760); 3.9 [tstate->use_tracing, tstate->tracing]; 3.12+ an empty
 * list (the instrumentation is read by instr.c). */
static inline PyObject *gr_use_tracing_list(PyThreadState *ts)
{
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030C0000
    for (__typeof__(ts->cframe) c = ts->cframe; c; c = c->previous) {
        PyObject *v = PyLong_FromLong(c->use_tracing ? 1 : 0);
        if (!v || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
#elif PY_VERSION_HEX < 0x030A0000
    Py_DECREF(out);
    out = Py_BuildValue("[ii]", ts->use_tracing ? 1 : 0, ts->tracing);
#else
    (void)ts;
#endif
    return out;
}

/* Run Python code that no profile or trace function, and no sys.monitoring
 * tool, sees: the recorder's own work inside the program (the uncaught
 * exception's stop, audit.c; the program's audit hooks that its own slot
 * changes raise, recorder.h gr_own_change_begin), which neither the
 * recorder nor a profiler under test must count.  CPython
 * reports no event while tstate->tracing > 0 (3.9-3.11 call_trace; 3.12+
 * call_instrumentation_vector), the guard it runs profile functions in.
 * gr_enter_tracing(ts) raises it; gr_leave_tracing(ts) lowers it and
 * recomputes use_tracing from the functions set then (the code in between
 * may have set or cleared them), as PyThreadState_LeaveTracing does.
 * Public API from 3.11; 3.9/3.10 by hand, as greenlet's own guard. */
static inline void gr_enter_tracing(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_EnterTracing(ts);
#elif PY_VERSION_HEX >= 0x030A0000
    ts->tracing++;
    ts->cframe->use_tracing = 0;
#else
    ts->tracing++;
    ts->use_tracing = 0;
#endif
}

static inline void gr_leave_tracing(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_LeaveTracing(ts);
#elif PY_VERSION_HEX >= 0x030A0000
    ts->tracing--;
    ts->cframe->use_tracing = ts->tracing <= 0 && (ts->c_tracefunc || ts->c_profilefunc);
#else
    ts->tracing--;
    ts->use_tracing = ts->tracing <= 0 && (ts->c_tracefunc || ts->c_profilefunc);
#endif
}

/* Replace only the function of a thread's profile slot, keeping its object
 * (what sys.getprofile() returns) and firing no audit event: used to chain
 * in front of a profile function the program installed.  On 3.9-3.11 the
 * slot is read by the eval loop as tstate->c_profilefunc; on 3.12+ the
 * legacy profile tool (sys.monitoring tool 6) calls it the same way
 * (Python/legacy_tracing.c), so a non-NULL function can be swapped in place. */
static inline void gr_swap_profile_func(PyThreadState *ts, Py_tracefunc fn)
{
    ts->c_profilefunc = fn;
}

/* _PyEval_SetProfile(tstate, ...), the per-thread variant (bpo-39947 in
 * 3.9), is exported on 3.9-3.13+; 3.13 moved its declaration to
 * internal/pycore_ceval.h (still PyAPI_FUNC): declare it here rather than
 * pull in Py_BUILD_CORE.  3.12 also added PyEval_SetProfileAllThreads, which
 * the recorder does not use: it would replace other tools' profilers on
 * threads that are not ours. */
#if PY_VERSION_HEX >= 0x030D0000
PyAPI_FUNC(int) _PyEval_SetProfile(PyThreadState *tstate, Py_tracefunc func, PyObject *arg);
#endif

#ifdef GR_COMPAT_SLOTS
/* The recorder's own changes of a thread's profile or trace slot (slots.c,
 * recorder.h gr_own_set_profile), which must not raise the audit events
 * sys.setprofile / sys.settrace that a program's audit hook would see
 * (without the recorder there is no such change).
 * _PyEval_SetProfile/_PyEval_SetTrace raise the event first, then write
 * the slot; on 3.9-3.11 the slot is plain thread state, so the write is
 * mirrored here step for step, minus the audit call (Python/ceval.c of
 * each version): keep the old object, empty the slot, recompute
 * use_tracing from the other slot alone (so that function is not ignored
 * while the old object may be freed), release the old object, set the new
 * object and function, recompute use_tracing.  The new object is taken
 * before the old one is released (no difference for the recorder, which
 * passes NULL).  Per version:
 *  - 3.9: tstate->use_tracing; a trace change also moves the interpreter's
 *    count of threads with a trace function, interp->ceval.tracing_possible
 *    (internal/pycore_interp.h, struct _ceval_state), which gates line
 *    events;
 *  - 3.10: tstate->cframe->use_tracing (CPython PR 25276, bpo-43760); no
 *    tracing_possible any more;
 *  - 3.11: cframe->use_tracing as _PyThreadState_UpdateTracingState
 *    computes it (internal/pycore_pystate.h): 255 when tstate->tracing is
 *    0 and a function is set, else 0.
 * (gh-98257's reordering, release the old object last, is 3.12+; 3.9-3.11
 * got a re-entrancy guard in sys.setprofile/sys.settrace instead, which
 * the recorder's own changes do not go through.)
 * 3.12+: legacy profiling and tracing run on sys.monitoring (PEP 669,
 * Python/legacy_tracing.c): a change also counts the interpreter's
 * profiling/tracing threads and re-instruments code with internal
 * functions that are not exported, so the CPython function is called
 * (_PyEval_SetProfile; _PyEval_SetTrace is not exported from 3.13, so
 * PyEval_SetTrace, on the calling thread: the only one whose trace slot
 * the recorder changes).  Its audit event is kept from the program's
 * audit hooks instead: they are the interpreter's list interp->audit_hooks
 * (sys.addaudithook; internal/pycore_interp.h, 3.14+
 * pycore_interp_structs.h), which PySys_Audit calls after the runtime's C
 * hooks (PySys_AddAuditHook, the recorder's own among them); the list is
 * set aside for the duration of the call and put back.  No Python code
 * runs in between: the old object of the slot is kept alive until after
 * (its finalizer would run there otherwise), and the garbage collector
 * runs only from the eval loop's breaker since 3.12 (gh-97922), not from
 * the allocations the call makes; the one exception is a C audit hook
 * refusing sys.settrace, which PyEval_SetTrace reports through
 * sys.unraisablehook inside the window.  C hooks still see the event.  Not on
 * free-threaded builds (Py_GIL_DISABLED), where another thread's audit
 * events could fall in the window: the event is raised there.
 * Return 0, or -1 with an exception set (3.12+ _PyEval_SetProfile, when
 * a C audit hook refuses the event). */
#if PY_VERSION_HEX < 0x030A0000 || PY_VERSION_HEX >= 0x030C0000
#include <internal/pycore_interp.h>
#endif
#if PY_VERSION_HEX >= 0x030C0000
/* Set the interpreter's audit hooks of Python aside (NULL: none to set
 * aside, or a free-threaded build), and put them back. */
static inline PyObject *gr_audit_hooks_aside(PyInterpreterState *interp)
{
#ifdef Py_GIL_DISABLED
    (void)interp;
    return NULL;
#else
    PyObject *hooks = interp->audit_hooks;
    interp->audit_hooks = NULL;
    return hooks;
#endif
}
static inline void gr_audit_hooks_back(PyInterpreterState *interp, PyObject *hooks)
{
#ifdef Py_GIL_DISABLED
    (void)interp;
    (void)hooks;
#else
    if (hooks)
        interp->audit_hooks = hooks; /* still NULL: no Python code ran */
#endif
}
#endif
/* Call fn(*args) with the program's audit hooks set aside (3.12+, as
 * for gr_slot_set_profile above): the recorder's own calls of
 * sys.monitoring functions (tracer/beside.c), whose
 * sys.monitoring.register_callback audit event the program would not see
 * without the recorder.  fn must run no Python code (sys.monitoring's
 * functions are C).  Before 3.12 a plain call (never used there). */
static inline PyObject *gr_slot_call_quiet(PyObject *fn, PyObject *args)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    PyObject *hooks = gr_audit_hooks_aside(interp);
    PyObject *res = PyObject_CallObject(fn, args);
    gr_audit_hooks_back(interp, hooks);
    return res;
#else
    return PyObject_CallObject(fn, args);
#endif
}

#if PY_VERSION_HEX < 0x030C0000
static inline void gr_update_use_tracing(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030B0000
    ts->cframe->use_tracing = (ts->tracing == 0 && (ts->c_tracefunc || ts->c_profilefunc)) ? 255 : 0;
#elif PY_VERSION_HEX >= 0x030A0000
    ts->cframe->use_tracing = (ts->c_tracefunc != NULL) || (ts->c_profilefunc != NULL);
#else
    ts->use_tracing = (ts->c_tracefunc != NULL) || (ts->c_profilefunc != NULL);
#endif
}
#endif

static inline int gr_slot_set_profile(PyThreadState *ts, Py_tracefunc fn, PyObject *arg)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyInterpreterState *interp = PyThreadState_Get()->interp; /* where the event is raised */
    PyObject *keep = Py_XNewRef(ts->c_profileobj);
    PyObject *hooks = gr_audit_hooks_aside(interp);
    int rc = _PyEval_SetProfile(ts, fn, arg);
    gr_audit_hooks_back(interp, hooks);
    Py_XDECREF(keep);
    return rc;
#else
    PyObject *old = ts->c_profileobj;
    ts->c_profilefunc = NULL;
    ts->c_profileobj = NULL;
    gr_update_use_tracing(ts); /* the trace function alone, while old may be freed */
    Py_XINCREF(arg);
    Py_XDECREF(old);
    ts->c_profileobj = arg;
    ts->c_profilefunc = fn;
    gr_update_use_tracing(ts);
    return 0;
#endif
}

static inline int gr_slot_set_trace(PyThreadState *ts, Py_tracefunc fn, PyObject *arg)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyInterpreterState *interp = ts->interp;
    PyObject *keep = Py_XNewRef(ts->c_traceobj);
    PyObject *hooks = gr_audit_hooks_aside(interp);
    PyEval_SetTrace(fn, arg); /* reports its own failure (unraisable) */
    gr_audit_hooks_back(interp, hooks);
    Py_XDECREF(keep);
    return 0;
#else
    PyObject *old = ts->c_traceobj;
#if PY_VERSION_HEX < 0x030A0000
    ts->interp->ceval.tracing_possible += (fn != NULL) - (ts->c_tracefunc != NULL);
#endif
    ts->c_tracefunc = NULL;
    ts->c_traceobj = NULL;
    gr_update_use_tracing(ts); /* the profile function alone, while old may be freed */
    Py_XINCREF(arg);
    Py_XDECREF(old);
    ts->c_traceobj = arg;
    ts->c_tracefunc = fn;
    gr_update_use_tracing(ts);
    return 0;
#endif
}

/* Swap the function of a thread's trace slot for fn, on any thread of the
 * interpreter (the calling thread's or another's), keeping its object and
 * raising no audit event: a foothold on a thread other than the one whose
 * audit event announced a profile change (footholds.c, foreign footholds).  No
 * re-instrumentation (3.12+: the calling thread's own foothold, set just
 * before through gr_slot_set_trace, keeps the trace events of every thread
 * on; each thread's legacy trace handler reads its own c_tracefunc), but
 * the interpreter's count of threads with a trace function moves as
 * CPython's own changes move it, so a later change of the slot by CPython
 * (sys.settrace, PyThreadState_Clear at thread exit) finds it right:
 * 3.12+ interp->sys_tracing_threads, 3.9 interp->ceval.tracing_possible;
 * 3.10/3.11 have none.  Returns 0, or -1 where it cannot be done
 * (free-threaded builds: another thread may be running). */
static inline int gr_slot_swap_trace(PyThreadState *ts, Py_tracefunc fn)
{
#ifdef Py_GIL_DISABLED
    (void)ts;
    (void)fn;
    return -1;
#else
    int delta = (fn != NULL) - (ts->c_tracefunc != NULL);
#if PY_VERSION_HEX >= 0x030C0000
    ts->interp->sys_tracing_threads += delta;
#elif PY_VERSION_HEX < 0x030A0000
    ts->interp->ceval.tracing_possible += delta;
#else
    (void)delta;
#endif
    ts->c_tracefunc = fn;
    return 0;
#endif
}
/* The event the calling thread is dispatching to a trace or profile
 * function now, and the frame it concerns (borrowed), for a profile change
 * made inside that function: a CALL or RETURN dispatched to the program's
 * trace function goes to the profile slot only after it returns (CPython's
 * trace_function_entry/exit call the trace function first), so to whatever
 * the change left there.
 *  - 3.11: call_trace keeps the event in tstate->tracing_what and gives the
 *    frame object its line in f_lineno only during the dispatch (0 outside
 *    it, internal/pycore_frame.h), so the frame being dispatched is the
 *    innermost one with a line; tracing_what holds a stale value outside
 *    call_trace (a greenlet callback's tracing guard), hence the frame test.
 *  - 3.10: call_trace gives the frame its line in f_lineno during the
 *    dispatch too (0 outside it), but keeps no event: only a CALL of a
 *    frame that has not started (f_lasti -1: no other event comes then) is
 *    known; a RETURN, or the CALL of a resumed generator, is not.
 *  - 3.9 keeps neither (f_lineno is kept up to date outside tracing too):
 *    unknown.
 *  - 3.12+ (legacy tracing on sys.monitoring, whose trace tool is also
 *    called before the profile tool) keep neither: unknown.
 * Returns 1 with *frame and *what (PyTrace_*) set, 0 when unknown or no
 * dispatch.  Never raises (PyFrame_GetBack's errors are cleared). */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#include <internal/pycore_frame.h>
static inline int gr_slot_dispatch(PyThreadState *ts, PyFrameObject **frame, int *what)
{
    if (!ts->tracing)
        return 0;
    PyFrameObject *f = PyThreadState_GetFrame(ts); /* new reference */
    while (f && f->f_lineno == 0) {
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    if (!f)
        return 0;
    *frame = f;
    Py_DECREF(f); /* borrowed: the thread's stack keeps it while dispatching */
    *what = ts->tracing_what;
    return 1;
}
#elif PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030B0000
static inline int gr_slot_dispatch(PyThreadState *ts, PyFrameObject **frame, int *what)
{
    if (!ts->tracing)
        return 0;
    PyFrameObject *f = ts->frame; /* borrowed, as its f_back chain */
    while (f && f->f_lineno == 0)
        f = f->f_back;
    if (!f || f->f_lasti >= 0)
        return 0;
    *frame = f;
    *what = PyTrace_CALL;
    return 1;
}
#else
static inline int gr_slot_dispatch(PyThreadState *ts, PyFrameObject **frame, int *what)
{
    (void)ts;
    (void)frame;
    (void)what;
    return 0;
}
#endif
#endif /* GR_COMPAT_SLOTS */

#ifdef GR_COMPAT_MONITORING
/* What decides whether the call that installs a program's profile function
 * gives that function its own c_return (tracer/install_return.c).  3.12+
 * (PEP 669, gh-103082): a CALL instruction gives C_RETURN only if it was
 * instrumented when it started (INSTRUMENTED_CALL, Python/bytecodes.c);
 * the event then goes to every tool with CALL on that instruction when it
 * ends (get_tools_for_instruction, Python/instrumentation.c), from the
 * highest id down, tool 6 (the profile slot, Python/legacy_tracing.c)
 * through interp->monitoring_callables[6][C_RETURN], a handler made once
 * per interpreter.  3.14 moved struct _is to
 * internal/pycore_interp_structs.h, still included by
 * internal/pycore_interp.h.  Not on free-threaded builds, where another
 * thread could read the handler while it is swapped: GR_INSTALL_RETURN 0
 * there and before 3.12 (the recorder chains: its own function drops the
 * event, profile.c). */
#if PY_VERSION_HEX >= 0x030C0000 && !defined(Py_GIL_DISABLED)
#define GR_INSTALL_RETURN 1
#include <internal/pycore_interp.h>
/* The cell holding tool 6's C_RETURN handler (NULL before any profile
 * function was ever set in this interpreter). */
static inline PyObject **gr_profile_c_return_cell(PyInterpreterState *interp)
{
    return &interp->monitoring_callables[PY_MONITORING_SYS_PROFILE_ID][PY_MONITORING_EVENT_C_RETURN];
}
/* The cell holding tool 6's handler of the call event the thread is
 * dispatching (PY_START, PY_RESUME, PY_THROW: tstate->what_event, PEP 669),
 * or NULL for any other event. */
static inline PyObject **gr_profile_call_cell(PyThreadState *ts)
{
    int ev = ts->what_event;
    if (ev != PY_MONITORING_EVENT_PY_START && ev != PY_MONITORING_EVENT_PY_RESUME &&
        ev != PY_MONITORING_EVENT_PY_THROW)
        return NULL;
    return &ts->interp->monitoring_callables[PY_MONITORING_SYS_PROFILE_ID][ev];
}
/* The tools (a bit per id) that have CALL events on code co: set for the
 * whole interpreter (interp->monitors) or for co alone
 * (co->_co_monitoring->local_monitors, set_local_events). */
static inline unsigned gr_call_tools(PyInterpreterState *interp, PyCodeObject *co)
{
    unsigned tools = interp->monitors.tools[PY_MONITORING_EVENT_CALL];
    if (co->_co_monitoring)
        tools |= co->_co_monitoring->local_monitors.tools[PY_MONITORING_EVENT_CALL];
    return tools;
}
/* The thread's running frame, to compare only (never read): 3.12 keeps
 * it in tstate->cframe (gh-108035 moved it to tstate->current_frame in
 * 3.13). */
static inline const void *gr_tstate_frame_id(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->current_frame;
#else
    return ts->cframe ? ts->cframe->current_frame : NULL;
#endif
}
/* The C calls in progress on thread ts's stack, innermost first, as
 * sys.monitoring names their C_RETURN: the frame (its id, as
 * gr_tstate_frame_id), the code object and the offset of the CALL.  The
 * running frame is in the C call that reached the caller; a frame below
 * it is in a C call when the frame above it is an entry frame of the C
 * stack (owner FRAME_OWNED_BY_CSTACK: the entry_frame that
 * _PyEval_EvalFrameDefault pushes from 3.12 on, where a C function calls
 * back into the interpreter); else in a Python call, which gives no
 * C_RETURN: left out.  3.14 put FRAME_OWNED_BY_INTERPRETER before CSTACK
 * (internal/pycore_interpframe_structs.h) and moved the frame helpers into
 * internal/pycore_interpframe.h (gh-130931); 3.12 has no _PyFrame_GetCode
 * (f_code, as gr_frame_code).  At most max; returns how many. */
#if PY_VERSION_HEX >= 0x030E0000
#include <internal/pycore_interpframe.h>
#define GR_FRAME_SHIM(f) ((f)->owner >= FRAME_OWNED_BY_INTERPRETER)
#define GR_IFRAME_CODE(f) _PyFrame_GetCode(f)
#elif PY_VERSION_HEX >= 0x030D0000
#include <internal/pycore_frame.h>
#define GR_FRAME_SHIM(f) ((f)->owner == FRAME_OWNED_BY_CSTACK)
#define GR_IFRAME_CODE(f) _PyFrame_GetCode(f)
#else
#include <internal/pycore_frame.h>
#define GR_FRAME_SHIM(f) ((f)->owner == FRAME_OWNED_BY_CSTACK)
#define GR_IFRAME_CODE(f) ((f)->f_code)
#endif
typedef struct {
    const void *frame;
    PyObject *code; /* compared, never read */
    long offset;
} gr_call_at;
static inline int gr_c_calls_in_progress(PyThreadState *ts, gr_call_at *out, int max)
{
    _PyInterpreterFrame *f = (_PyInterpreterFrame *)gr_tstate_frame_id(ts);
    int n = 0, in_c = 1;
    for (; f && n < max; f = f->previous) {
        if (GR_FRAME_SHIM(f)) {
            in_c = 1;
            continue;
        }
        int lasti = _PyInterpreterFrame_LASTI(f);
        if (in_c && lasti >= 0) {
            out[n].frame = f;
            out[n].code = (PyObject *)GR_IFRAME_CODE(f);
            out[n].offset = (long)lasti * (long)sizeof(_Py_CODEUNIT);
            n++;
        }
        in_c = 0;
    }
    return n;
}
/* What a program's profile function gets of code CPython instruments
 * lazily (tracer/lazy.c).  3.12+ (PEP 669, gh-103082): turning tool 6's
 * events on bumps the interpreter's instrumentation version and
 * instruments the code of each thread's executing frames only
 * (instrument_all_executing_code_objects, Python/instrumentation.c);
 * other code is brought up to date at its next RESUME (Python/bytecodes.c),
 * which a greenlet's suspended frame does not run when it resumes.  The
 * tools of an instruction of code behind the interpreter's version are
 * those of its last instrumentation (get_tools_for_instruction), and a
 * debug build asserts there that the code is up to date
 * (debug_check_sanity, 3.13+; 3.12 asserts the same facts one by one).
 * Tool 6's handler of event ev, as gr_profile_c_return_cell. */
static inline PyObject **gr_profile_cell(PyInterpreterState *interp, int ev)
{
    return &interp->monitoring_callables[PY_MONITORING_SYS_PROFILE_ID][ev];
}
/* fn(code, ctx) for the code object of each executing frame of thread ts,
 * the frames instrument_all_executing_code_objects instruments. */
static inline void gr_executing_codes(PyThreadState *ts, void (*fn)(PyObject *, void *), void *ctx)
{
    for (_PyInterpreterFrame *f = (_PyInterpreterFrame *)gr_tstate_frame_id(ts); f; f = f->previous)
        if (!GR_FRAME_SHIM(f))
            fn((PyObject *)GR_IFRAME_CODE(f), ctx);
}
/* Bring code co up to date where CPython's own catch-up (_Py_Instrument,
 * at the next RESUME) would change nothing but its version: the tools it
 * was instrumented for are those of the interpreter and its own local
 * events now (instrumentation_cross_checks), and no restart_events came
 * since.  Its instructions stay as they are; a debug build's check
 * (debug_check_sanity, compat.h gr_profile_cell) then passes.  The code's
 * version is what _Py_Instrument writes: 3.12 monitoring_version; 3.13+
 * the interpreter's ceval.instrumentation_version as a 32-bit number
 * (global_version, gh-116098).  Compared over the events a code object
 * keeps (_Py_LocalMonitors: every ungrouped event on 3.12 and 3.15, the
 * local ones on 3.13 and 3.14, gh-111963). */
/* Only debug builds check it: elsewhere a code object behind the version
 * with the same tools behaves as one up to date, and the catch-up, which
 * walks every suspended greenlet's frames, is not done. */
#ifdef Py_DEBUG
#define GR_CATCH_UP 1
#else
#define GR_CATCH_UP 0
#endif
static inline int gr_code_catch_up(PyInterpreterState *interp, PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030D0000
    uint32_t now = (uint32_t)interp->ceval.instrumentation_version;
#else
    uint64_t now = interp->monitoring_version;
#endif
    if (!co->_co_monitoring || co->_co_instrumentation_version == now ||
        interp->last_restart_version > co->_co_instrumentation_version)
        return 0;
    for (size_t e = 0; e < sizeof co->_co_monitoring->active_monitors.tools; e++)
        if (co->_co_monitoring->active_monitors.tools[e] !=
            (interp->monitors.tools[e] | co->_co_monitoring->local_monitors.tools[e]))
            return 0;
    co->_co_instrumentation_version = now;
    return 1;
}
/* The frame whose event the thread is dispatching to a Python callback
 * (the program's trace function, running now with any Python frames it
 * called): the first frame below the innermost C entry (shim), and its
 * code (*code); NULL when there is none.  Only compared, never read. */
static inline const void *gr_dispatched_frame_id(PyThreadState *ts, PyObject **code)
{
    _PyInterpreterFrame *f = (_PyInterpreterFrame *)gr_tstate_frame_id(ts);
    while (f && !GR_FRAME_SHIM(f))
        f = f->previous;
    while (f && GR_FRAME_SHIM(f))
        f = f->previous;
    *code = f ? (PyObject *)GR_IFRAME_CODE(f) : NULL;
    return f;
}
/* The profile event of the sys.monitoring event the thread is
 * dispatching (tstate->what_event, new in 3.12 with PEP 669), as tool 6
 * gives it to the slot's function: PyTrace_CALL, PyTrace_RETURN (*unwind
 * 1 for PY_UNWIND, whose arg is NULL), or -1 for the events of C calls
 * (their callable is not at hand) and any other. */
static inline int gr_dispatching_python_event(PyThreadState *ts, int *unwind)
{
    *unwind = 0;
    switch (ts->what_event) {
    case PY_MONITORING_EVENT_PY_START:
    case PY_MONITORING_EVENT_PY_RESUME:
    case PY_MONITORING_EVENT_PY_THROW:
        return PyTrace_CALL;
    case PY_MONITORING_EVENT_PY_UNWIND:
        *unwind = 1;
        return PyTrace_RETURN;
    case PY_MONITORING_EVENT_PY_RETURN:
    case PY_MONITORING_EVENT_PY_YIELD:
        return PyTrace_RETURN;
    default:
        return -1;
    }
}

/* The same for the end of a C call: PyTrace_C_RETURN (C_RETURN),
 * PyTrace_C_EXCEPTION (C_RAISE), else -1. */
static inline int gr_dispatching_c_end(PyThreadState *ts)
{
    switch (ts->what_event) {
    case PY_MONITORING_EVENT_C_RETURN:
        return PyTrace_C_RETURN;
    case PY_MONITORING_EVENT_C_RAISE:
        return PyTrace_C_EXCEPTION;
    default:
        return -1;
    }
}
#else
#define GR_INSTALL_RETURN 0
#endif
#endif /* GR_COMPAT_MONITORING */

/* The last instruction a frame started (its call in progress, while a C
 * function it called runs): PyFrame_GetLasti is public from 3.11; before,
 * the f_lasti field. */
static inline int gr_frame_lasti(PyFrameObject *f)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(f);
#else
    return f->f_lasti;
#endif
}

/* 1 if frame f (code co, borrowed) stands at a RESUME whose profile `call`
 * has not been given yet: code that runs there (a signal handler, a
 * pending call, a finalizer) runs on top of a frame no profile function
 * has heard of; its call comes when that code returns.  3.13+ only, where
 * RESUME checks the eval breaker before the monitoring call that gives
 * PY_START (first instruction) or PY_RESUME (after a yield): RESUME's
 * rework around RESUME_CHECK, CPython gh-108614.  3.12's INSTRUMENTED_RESUME
 * (PEP 669, gh-103082) gives PY_START first: 0.  3.11 checks the eval
 * breaker both before and after the call event (DO_TRACING, then
 * RESUME_QUICK) at the same instruction, so the frame cannot tell: 0 (kept,
 * as before).  3.9/3.10 give the call before the first instruction: 0.
 * The deoptimized code (PyCode_GetCode, cached from 3.12) holds RESUME at
 * _co_firsttraceable; a resumed generator is at a later RESUME whose oparg
 * location is 1 (0 start, 2 and 3 after yield from / await, where the eval
 * breaker is not checked).  Not right inside a sys.monitoring callback of
 * a tool below the profile's (ids 0-5, called after it): the call was given
 * there, and a stack taken (a switch made in that callback) loses the
 * frame.  Never raises. */
static inline int gr_frame_call_pending(PyFrameObject *f, PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030D0000
    int at = PyFrame_GetLasti(f);
    if (at < 0 || at % 2)
        return 0;
    int first = co->_co_firsttraceable * 2;
    if (at == first)
        return 1;
    if (at < first || !(co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)))
        return 0;
    PyObject *code = PyCode_GetCode(co);
    if (!code) {
        PyErr_Clear();
        return 0;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(code);
    int yes = PyBytes_GET_SIZE(code) > at + 1 && b[at] == b[first] && (b[at + 1] & 3) == 1;
    Py_DECREF(code);
    return yes;
#else
    (void)f;
    (void)co;
    return 0;
#endif
}

/* Current frame of a thread, new reference or NULL.  PyThreadState_GetFrame
 * is public from 3.9 (bpo-39947). */
static inline PyFrameObject *gr_tstate_frame(PyThreadState *ts)
{
    return PyThreadState_GetFrame(ts);
}

/* Save and restore the thread's pending exception around work that may
 * fail and clear errors.  PyErr_Fetch/PyErr_Restore are deprecated from 3.12
 * (gh-101578) in favour of PyErr_GetRaisedException/SetRaisedException.
 * The usual case, no exception pending, costs one PyErr_Occurred each way
 * instead of a fetch and a restore (the switch path pays it twice, measured
 * with tests/bench/instr_cost.sh); restoring "nothing" clears whatever the
 * work left set, as PyErr_Restore(NULL, NULL, NULL) would. */
#if PY_VERSION_HEX >= 0x030C0000
#define GR_EXC_SAVE(name) PyObject *name = PyErr_Occurred() ? PyErr_GetRaisedException() : NULL
#define GR_EXC_RESTORE(name) do { \
        if (name) PyErr_SetRaisedException(name); \
        else if (PyErr_Occurred()) PyErr_Clear(); \
    } while (0)
#else
#define GR_EXC_SAVE(name) PyObject *name##_t = NULL, *name##_v = NULL, *name##_tb = NULL; \
    if (PyErr_Occurred()) PyErr_Fetch(&name##_t, &name##_v, &name##_tb)
#define GR_EXC_RESTORE(name) do { \
        if (name##_t) PyErr_Restore(name##_t, name##_v, name##_tb); \
        else if (PyErr_Occurred()) PyErr_Clear(); \
    } while (0)
#endif

/* Referent of a weakref, new reference, or NULL when it is gone (no error
 * set).  PyWeakref_GetObject (borrowed) is deprecated from 3.13 and removed
 * in 3.15 (gh-105927); PyWeakref_GetRef is new in 3.13. */
static inline PyObject *gr_weakref_get(PyObject *wr)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(wr, &o) < 0)
        PyErr_Clear();
    return o;
#else
    PyObject *o = PyWeakref_GetObject(wr);
    if (!o) {
        PyErr_Clear();
        return NULL;
    }
    if (o == Py_None)
        return NULL;
    Py_INCREF(o);
    return o;
#endif
}

#ifdef GR_COMPAT_FRAMES
/* Where a suspended greenlet's frames are, for a reader without the GIL.
 * Offsets come from the headers the recorder is built against:
 *  - 3.9/3.10: a chain of PyFrameObject (f_back, f_code);
 *  - 3.11+: PyFrameObject.f_frame points at a _PyInterpreterFrame; frames
 *    chain through `previous` (3.11, bpo-44590 "lazy frame objects");
 *  - code object field: f_code (3.11/3.12), f_executable (3.13,
 *    gh-117045), a tagged _PyStackRef f_executable (3.14, gh-118926: mask
 *    the tag bits);
 *  - frames owned by the C stack (entry shims, owner >= 3 from 3.12,
 *    gh-104584; 3.14 renamed it FRAME_OWNED_BY_INTERPRETER) are skipped. */
#include <stddef.h>   /* offsetof */
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x030E0000
/* 3.14 moved struct _PyInterpreterFrame out of pycore_frame.h into
 * pycore_interpframe_structs.h; pycore_interpframe.h includes it together
 * with pycore_stackref.h, which defines Py_TAG_BITS (gh-130931). */
#include <internal/pycore_interpframe.h>
#endif
/* Debug builds (Py_DEBUG, python3.Xd) need nothing of their own: the
 * offsets above come from the interpreter's own headers, whose pyconfig.h
 * defines Py_DEBUG (3.14 ends _PyInterpreterFrame with a debug-only
 * bitfield, after `owner`, the last field read).  Py_STACKREF_DEBUG
 * (3.14, gh-127705: stack references become indices into a table) is a
 * separate build option that Py_DEBUG does not imply; f_executable is then
 * no pointer at all, so refuse to build rather than read garbage. */
#if defined(Py_STACKREF_DEBUG) && !defined(Py_GIL_DISABLED)
#error "Py_STACKREF_DEBUG builds are not supported: _PyStackRef is not a tagged pointer there"
#endif

typedef struct {
    int interp_frames;      /* 1: 3.11+ _PyInterpreterFrame chain */
    size_t fo_size;         /* bytes of PyFrameObject to read */
    size_t fo_back;         /* PyFrameObject.f_back (<= 3.10) */
    size_t fo_code;         /* PyFrameObject.f_code (<= 3.10) */
    size_t fo_frame;        /* PyFrameObject.f_frame (3.11+) */
    size_t if_size;         /* bytes of _PyInterpreterFrame to read */
    size_t if_code;         /* its code object field */
    size_t if_previous;     /* its link to the calling frame */
    size_t if_owner;        /* its owner byte */
    int shim_owner;         /* owner values >= this are not Python frames; 0 none */
    uintptr_t code_mask;    /* mask applied to the code field */
} gr_frame_layout;

static inline void gr_frame_layout_get(gr_frame_layout *l)
{
    memset(l, 0, sizeof *l);
    l->fo_size = sizeof(PyFrameObject);
    l->code_mask = ~(uintptr_t)0;
#if PY_VERSION_HEX >= 0x030B0000
    l->interp_frames = 1;
    l->fo_frame = offsetof(PyFrameObject, f_frame);
    l->if_size = offsetof(_PyInterpreterFrame, owner) + 1;
    l->if_previous = offsetof(_PyInterpreterFrame, previous);
    l->if_owner = offsetof(_PyInterpreterFrame, owner);
#if PY_VERSION_HEX >= 0x030D0000
    l->if_code = offsetof(_PyInterpreterFrame, f_executable);
#else
    l->if_code = offsetof(_PyInterpreterFrame, f_code);
#endif
#if PY_VERSION_HEX >= 0x030E0000
    l->code_mask = ~(uintptr_t)Py_TAG_BITS;
#endif
#if PY_VERSION_HEX >= 0x030C0000
    l->shim_owner = 3;
#endif
#else
    l->fo_back = offsetof(PyFrameObject, f_back);
    l->fo_code = offsetof(PyFrameObject, f_code);
#endif
}
#endif /* GR_COMPAT_FRAMES */

#ifdef GR_COMPAT_FRAMES
/* Instrumentation state on 3.12+ (PEP 669, gh-103082): legacy profiling
 * runs on sys.monitoring; enabling it bumps the interpreter's version and
 * re-instruments only the code on each thread's current frame chain.  A
 * frame whose code object's _co_instrumentation_version lags the
 * interpreter's fires no events of its own when it resumes.
 *  - 3.12: interp->monitoring_version (internal/pycore_interp.h);
 *  - 3.13+: interp->ceval.instrumentation_version, whose low 8 bits
 *    (_PY_EVAL_EVENTS_MASK) are eval-breaker flags (gh-116098); 3.14 moved
 *    the struct to internal/pycore_interp_structs.h, still included by
 *    internal/pycore_interp.h.
 * Both return the version without flag bits, comparable with the code
 * object's (whose flag bits are zero). */
#if PY_VERSION_HEX >= 0x030C0000
#include <internal/pycore_interp.h>
#define GR_HAVE_INSTRUMENTATION 1
static inline uint64_t gr_interp_instr_version(PyInterpreterState *interp)
{
#if PY_VERSION_HEX >= 0x030D0000
    return (uint64_t)(interp->ceval.instrumentation_version & ~(uintptr_t)0xFF);
#else
    return interp->monitoring_version;
#endif
}
static inline uint64_t gr_code_instr_version(PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030D0000
    return (uint64_t)(co->_co_instrumentation_version & ~(uintptr_t)0xFF);
#else
    return co->_co_instrumentation_version;
#endif
}
/* The version as a small counter for traces: 3.13+ counts in steps of 256. */
static inline uint64_t gr_instr_version_number(uint64_t v)
{
#if PY_VERSION_HEX >= 0x030D0000
    return v >> 8;
#else
    return v;
#endif
}
#else
#define GR_HAVE_INSTRUMENTATION 0
#endif
#endif /* GR_COMPAT_FRAMES */

#endif
