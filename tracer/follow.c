/* follow.c - following the threads the program starts.
 *
 * The recorder follows the threads threading.Thread.start starts, as a
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
 * its first event (gr_thread_known, r->follow.adopt).  A program's
 * threading.setprofile(f) is then the program's sys.setprofile(f) inside
 * the thread (threading's _bootstrap_inner makes it): chained, with a HOOK,
 * as any other.  On 3.10/3.11 the fresh thread state's running CFrame is
 * its root one, which the install sets to 1; the thread's first event puts
 * it back to 0 (threads.h, gr_thread_known; compat.h, gr_unarm_below), as
 * threading.setprofile leaves it: greenlet 1.1.0 starts new greenlets
 * there (greenlet issue 256).
 * Threads started otherwise (_thread.start_new_thread called directly, a
 * private copy of threading as eventlet's) are not followed, exactly as
 * threading.setprofile would not reach them; their starts are counted per
 * call site (r->follow.start_sites) and written at stop (THREADS_UNREACHED).  On
 * 3.12+ the start's audit event (_thread.start_new_thread, added in 3.12;
 * _thread.start_joinable_thread) names the function: one written in C runs
 * no Python code of its own and is not counted.  Before 3.12 every start
 * is counted. */
#include "follow.h"

#include "profile.h"
#include "threads.h"

#include <string.h>

/* Index + 1 of the start site (code of frame f, its line, via: a string
 * constant), added if new; 0 if memory runs out. */
static uint32_t start_site(gr_recorder *r, PyFrameObject *f, const char *via)
{
    uint32_t code = f ? gr_code_id(r, gr_frame_code(f)) : 0;
    uint32_t line = f ? (uint32_t)PyFrame_GetLineNumber(f) : 0;
    for (size_t i = 0; i < r->follow.nstart_sites; i++) {
        gr_start_site *s = &r->follow.start_sites[i];
        if (s->code == code && s->line == line && s->via == via)
            return (uint32_t)i + 1;
    }
    if (r->follow.nstart_sites == r->follow.start_sites_cap) {
        size_t cap = r->follow.start_sites_cap ? 2 * r->follow.start_sites_cap : 8;
        gr_start_site *more = PyMem_Realloc(r->follow.start_sites, cap * sizeof *more);
        if (!more)
            return 0;
        r->follow.start_sites = more;
        r->follow.start_sites_cap = cap;
    }
    r->follow.start_sites[r->follow.nstart_sites] = (gr_start_site){code, line, via, 0, 0, 0};
    return (uint32_t)++r->follow.nstart_sites;
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
void gr_thread_start_announced(gr_recorder *r, PyObject *args)
{
    PyObject *func = PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    gr_thread *t = func && PyCFunction_Check(func) ? gr_thread_known(r) : NULL;
    if (t && t->start.call)
        t->start.nopy = 1;
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
        if (r->follow.nunfollowed == r->follow.unfollowed_cap) {
            size_t cap = r->follow.unfollowed_cap ? 2 * r->follow.unfollowed_cap : 8;
            struct gr_unfollowed *more = PyMem_Realloc(r->follow.unfollowed, cap * sizeof *more);
            if (!more)
                return;
            r->follow.unfollowed = more;
            r->follow.unfollowed_cap = cap;
        }
        r->follow.unfollowed[r->follow.nunfollowed++] = (struct gr_unfollowed){ts, site_no};
        return; /* one thread per call */
    }
}

/* Thread state ts, started unfollowed, is reached now: its start counts
 * as followed.  Thread states are reused after a thread ends, so an entry
 * found for another thread at worst moves one count between sites. */
void gr_unfollowed_reached(gr_recorder *r, PyThreadState *ts)
{
    for (size_t i = 0; i < r->follow.nunfollowed; i++) {
        if (r->follow.unfollowed[i].ts != ts)
            continue;
        uint32_t site_no = r->follow.unfollowed[i].site;
        if (site_no && site_no <= r->follow.nstart_sites) {
            r->follow.start_sites[site_no - 1].followed++;
            r->follow.start_sites[site_no - 1].handover = 1;
        }
        r->follow.unfollowed[i] = r->follow.unfollowed[--r->follow.nunfollowed];
        return;
    }
}

/* A C call of thread t (state as a profile function sees it: what, arg)
 * that may start a thread.  Out of line: the profile function tests only
 * that arg is one of the two start functions (r->thread_start). */
__attribute__((noinline)) void gr_thread_start_event(gr_recorder *r, gr_thread *t, int what, PyObject *arg)
{
    if (!is_thread_start(arg))
        return;
    GR_EXC_SAVE(saved);
    PyThreadState *me = PyThreadState_Get();
    if (what == PyTrace_C_CALL) {
        PyFrameObject *f = PyEval_GetFrame(); /* borrowed: the caller */
        int via = f ? in_thread_start(f) : 0;
        PyFrameObject *site_frame = via ? PyFrame_GetBack(f) : (PyFrameObject *)Py_XNewRef(f);
        t->start.site = start_site(r, site_frame, via == 1 ? "threading.Thread.start"
                                                  : via == 2 ? "threading.Thread.start(copy)"
                                                             : "_thread.start_new_thread");
        Py_XDECREF(site_frame);
        t->start.call = via == 1 ? 1 : 2;
        t->start.nopy = 0;
        t->start.head = PyInterpreterState_ThreadHead(me->interp);
        gr_thread_path(r, t);
        goto out;
    }
    if (!t->start.call)
        goto out;
    uint32_t site_no = t->start.site <= r->follow.nstart_sites ? t->start.site : 0;
    gr_start_site *site = site_no ? &r->follow.start_sites[site_no - 1] : NULL;
    PyThreadState *head = t->start.head;
    int follow = t->start.call == 1, count = what == PyTrace_C_RETURN && !t->start.nopy;
    t->start.call = 0;
    t->start.nopy = 0;
    t->start.site = 0;
    t->start.head = NULL;
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
        if (r->follow.nadopt == r->follow.adopt_cap) {
            size_t cap = r->follow.adopt_cap ? 2 * r->follow.adopt_cap : 8;
            PyThreadState **more = PyMem_Realloc(r->follow.adopt, cap * sizeof *more);
            if (!more)
                break;
            r->follow.adopt = more;
            r->follow.adopt_cap = cap;
        }
        gr_own_change_begin(r);
        int rc = gr_own_set_profile(ts, gr_profile, NULL);
        gr_own_change_end(r);
        if (rc < 0) {
            gr_swallow(r);
            break;
        }
        r->follow.adopt[r->follow.nadopt++] = ts;
        if (site)
            site->followed++;
        break; /* one thread per call */
    }
out:
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}
