/* stackview.c - a test profiler that keeps its own view of the Python
 * stack, the way in-process memory profilers do (a C profile function
 * installed through the C API, pushing a frame at each call and popping it
 * at each return), and reports that view on request.
 *
 * install() empties the profile slot of every thread, reads the calling
 * thread's stack, and puts a one-shot trampoline in the slot; at its first
 * event the trampoline installs the real profile function with
 * PyEval_SetProfile from inside the profile callback (with a guard object
 * as its profile object: released, it empties the view), then hands it
 * the event.  The real function ignores events whose frame is not the
 * running frame (PyEval_GetFrame()).  Like memray 1.20, which checks
 * at every allocation that the thread's profile slot still holds its
 * function (and drops its stack if not: the function was uninstalled,
 * the frames it holds may be gone), view() first checks
 * PyThreadState_Get()->c_profilefunc and empties the view if the slot
 * holds another function.  view() returns the names of the frames in the
 * view, outermost first; stats() what was ignored or lost.  Used by the
 * transparency probe c_profile_slot.py: the view must be the same
 * recorded and unrecorded.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#define MAXDEPTH 512
static PyObject *names[MAXDEPTH];
static int depth;
static long mismatched, forgotten, overflow, displaced;
static int active;

static void view_clear(void)
{
    while (depth > 0) {
        depth--;
        Py_CLEAR(names[depth]); /* Py_CLEAR names its argument twice */
    }
}

static void view_push(PyFrameObject *frame)
{
    if (depth >= MAXDEPTH) {
        overflow++;
        return;
    }
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_INCREF(code->co_name);
    names[depth++] = code->co_name;
    Py_DECREF(code);
}

/* The profile object of the real function: dropping it from the slot
 * drops the view, as a profiler does when its function is uninstalled. */
typedef struct {
    PyObject_HEAD
} Guard;

static void guard_dealloc(PyObject *self)
{
    if (active) {
        forgotten++;
        view_clear();
    }
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject GuardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stackview.Guard",
    .tp_basicsize = sizeof(Guard),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = guard_dealloc,
    .tp_new = PyType_GenericNew,
};

static int real_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (!active)
        return 0;
    if (frame != PyEval_GetFrame()) {
        mismatched++;
        return 0;
    }
    if (what == PyTrace_CALL)
        view_push(frame);
    else if (what == PyTrace_RETURN && depth > 0) {
        depth--;
        Py_CLEAR(names[depth]);
    }
    return 0;
}

static int trampoline(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    PyObject *guard = PyObject_CallNoArgs((PyObject *)&GuardType);
    if (!guard)
        return -1;
    PyEval_SetProfile(real_profile, guard);
    Py_DECREF(guard);
    return real_profile(obj, frame, what, arg);
}

static void set_all(Py_tracefunc f)
{
#ifdef SV_ALL_THREADS /* 3.12+: PyEval_SetProfileAllThreads (c_profile_slot.py sets it) */
    PyEval_SetProfileAllThreads(f, NULL);
#else
    PyEval_SetProfile(f, NULL);
#endif
}

static PyObject *install(PyObject *m, PyObject *unused)
{
    set_all(NULL);
    view_clear();
    mismatched = forgotten = overflow = displaced = 0;
    /* The calling thread's stack, outermost first; the caller of install()
     * is the innermost frame kept. */
    PyFrameObject *stack[MAXDEPTH];
    int n = 0;
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f && n < MAXDEPTH) {
        stack[n++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    while (n > 0) {
        view_push(stack[--n]);
        Py_DECREF(stack[n]);
    }
    active = 1;
    set_all(trampoline);
    Py_RETURN_NONE;
}

static PyObject *uninstall(PyObject *m, PyObject *unused)
{
    active = 0;
    set_all(NULL);
    view_clear();
    Py_RETURN_NONE;
}

static PyObject *view(PyObject *m, PyObject *unused)
{
    if (active && PyThreadState_Get()->c_profilefunc != real_profile) {
        displaced++;
        view_clear();
    }
    PyObject *l = PyList_New(depth);
    for (int i = 0; l && i < depth; i++) {
        Py_INCREF(names[i]);
        PyList_SET_ITEM(l, i, names[i]);
    }
    return l;
}

static PyObject *stats(PyObject *m, PyObject *unused)
{
    return Py_BuildValue("{s:l,s:l,s:l,s:l}", "mismatched", mismatched, "forgotten", forgotten, "overflow", overflow,
                         "displaced", displaced);
}

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, "Install the profiler on every thread."},
    {"uninstall", uninstall, METH_NOARGS, "Remove it from every thread."},
    {"view", view, METH_NOARGS, "The profiler's view of the stack, outermost first."},
    {"stats", stats, METH_NOARGS, "Events ignored (frame not running), views dropped (guard released, slot not ours)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "stackview", NULL, -1, methods};

PyMODINIT_FUNC PyInit_stackview(void)
{
    if (PyType_Ready(&GuardType) < 0)
        return NULL;
    return PyModule_Create(&moduledef);
}
