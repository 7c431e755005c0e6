/* boot.c - the whole-program start of `greenreplay record` (no --manual).
 *
 *     _greenreplay._arm(fire)    # greenreplay/boot/sitecustomize.py, run by site
 *     ...                        # the interpreter starts the program
 *     fire(frame, caller)        # called at the call of its first frame
 *
 * _arm installs a one-shot C profile function.  At the call event of the
 * program's first frame (a `<module>` frame whose __name__ is "__main__")
 * it removes itself, puts the use_tracing flags of the frames below back to
 * what a profiler started in that frame would leave (compat.h,
 * gr_unarm_below: on 3.10/3.11 the arming left a 1 in the thread's root
 * CFrame, which greenlet issue 256 class bugs then copy into new
 * greenlets), and calls fire(frame, caller): caller is the C function that
 * runs the frame (exec, under runpy for -m), or None.  Written in C so
 * that no frame of ours sits between the program's frame and the start.
 */
#include "boot.h"
#include "instr.h"

/* The callable of _arm, until the program's first frame. */
static PyObject *arm_fire;

/* C calls in progress since arming, innermost last (borrowed: each lives
 * while its call is in progress); deeper ones are counted, not kept. */
#define ARM_DEPTH 64
static struct {
    PyFrameObject *frame;
    PyObject *func;
} arm_calls[ARM_DEPTH];
static int arm_ncalls;

/* The trace file of the whole-program recording, while one runs: the
 * program's own start() with no path (or this one) then changes nothing. */
static PyObject *whole_program_path;

/* `greenreplay record --manual`'s settings (GREENREPLAY_OUTPUT, ...), which
 * the boot took out of the environment before the program ran: a dict, kept
 * here for the package the program imports itself (docs/recorder-start.md,
 * "--manual"). */
static PyObject *record_settings;

static int is_program_frame(PyFrameObject *frame)
{
    PyCodeObject *co = gr_frame_code(frame);
    if (!PyUnicode_Check(co->co_name) || PyUnicode_CompareWithASCIIString(co->co_name, "<module>") != 0)
        return 0;
    PyObject *globals = gr_frame_globals(frame);
    PyObject *name = globals && PyDict_Check(globals) ? PyDict_GetItemString(globals, "__name__") : NULL;
    int yes = name && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__main__") == 0;
    Py_XDECREF(globals);
    return yes;
}

static int arm_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    if (what == PyTrace_C_CALL) {
        if (arm_ncalls < ARM_DEPTH) {
            arm_calls[arm_ncalls].frame = frame;
            arm_calls[arm_ncalls].func = arg;
        }
        arm_ncalls++;
        return 0;
    }
    if (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION) {
        if (arm_ncalls > ARM_DEPTH || (arm_ncalls > 0 && arm_calls[arm_ncalls - 1].frame == frame))
            arm_ncalls--;
        return 0;
    }
    if (what != PyTrace_CALL || !arm_fire || !is_program_frame(frame))
        return 0;
    PyThreadState *ts = PyThreadState_Get();
    PyObject *fire = arm_fire;
    arm_fire = NULL;
    PyFrameObject *back = PyFrame_GetBack(frame);
    PyObject *caller = Py_None;
    if (back && arm_ncalls > 0 && arm_ncalls <= ARM_DEPTH && arm_calls[arm_ncalls - 1].frame == back)
        caller = arm_calls[arm_ncalls - 1].func;
    Py_INCREF(caller);
    Py_XDECREF(back);
    arm_ncalls = 0;
    if (_PyEval_SetProfile(ts, NULL, NULL) < 0)
        PyErr_Clear();
    gr_unarm_below(ts);
    PyObject *res = PyObject_CallFunctionObjArgs(fire, (PyObject *)frame, caller, NULL);
    if (!res)
        PyErr_Clear(); /* fire reports its own failures; the program runs on */
    Py_XDECREF(res);
    Py_DECREF(caller);
    Py_DECREF(fire);
    return 0;
}

const char gr_arm_doc[] =
    "_arm(fire): for `greenreplay record`'s boot only.  Install a one-shot profile function on\n"
    "this thread that, at the call of the program's first frame (`<module>` with __name__\n"
    "\"__main__\"), removes itself, leaves the tracing flags of the frames below as a profiler\n"
    "started in that frame would, and calls fire(frame, caller): caller is the C function that\n"
    "runs the frame (exec for -m), or None.  fire's exceptions are ignored.";

PyObject *gr_mod_arm(PyObject *module, PyObject *fire)
{
    (void)module;
    if (!PyCallable_Check(fire)) {
        PyErr_SetString(PyExc_TypeError, "_arm: fire must be callable");
        return NULL;
    }
    if (arm_fire) {
        PyErr_SetString(PyExc_RuntimeError, "_arm: already armed");
        return NULL;
    }
    PyThreadState *ts = PyThreadState_Get();
    arm_fire = Py_NewRef(fire);
    arm_ncalls = 0;
    if (_PyEval_SetProfile(ts, arm_profile, NULL) < 0) {
        Py_CLEAR(arm_fire);
        return NULL;
    }
    Py_RETURN_NONE;
}

const char gr_tracing_state_doc[] =
    "_tracing_state(): for tests.  The calling thread's tracing state, read directly: a list\n"
    "of use_tracing flags (3.10/3.11: one per CFrame from the running one down to the root;\n"
    "3.9: [tstate->use_tracing, tstate->tracing]; 3.12+: empty) and, on 3.12+, the number of\n"
    "the thread's frames whose code lags the interpreter's instrumentation (else -1).";

PyObject *gr_mod_tracing_state(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PyObject *flags = gr_use_tracing_list(PyThreadState_Get());
    if (!flags)
        return NULL;
    long stale = -1;
    uint64_t version;
    uint32_t frames, nstale;
    if (gr_instr_state(&version, &frames, &nstale, 4096) == 0)
        stale = (long)nstale;
    return Py_BuildValue("(Nl)", flags, stale);
}

const char gr_whole_program_doc[] =
    "_whole_program([path]): the trace file of `greenreplay record`'s whole-program\n"
    "recording (None when there is none); with an argument (a str, or None once it ended),\n"
    "set it.  Kept in the extension so that a greenreplay package imported again by the\n"
    "program finds the recording running.";

PyObject *gr_mod_whole_program(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "|O:_whole_program", &path))
        return NULL;
    if (path) {
        if (path != Py_None && !PyUnicode_Check(path)) {
            PyErr_SetString(PyExc_TypeError, "_whole_program: path must be a str or None");
            return NULL;
        }
        Py_XSETREF(whole_program_path, path == Py_None ? NULL : Py_NewRef(path));
    }
    return Py_NewRef(whole_program_path ? whole_program_path : Py_None);
}

const char gr_atexit_leave_doc[] =
    "_atexit_leave(module): the atexit module start() imported and registered in leaves\n"
    "sys.modules.  Before 3.10 it is kept here, and goes back into sys.modules at the\n"
    "program's own `import atexit` (its audit event), so that the program gets it.";

/* Before 3.10 (compat.h, GR_ATEXIT_SHARED) the atexit module that start()
 * imported holds the recorder's callback, and the interpreter keeps only a
 * borrowed pointer to it: it is kept alive here for good.  `pending`: it is
 * out of sys.modules, waiting for the program's own import. */
static PyObject *atexit_kept;
static int atexit_pending;

PyObject *gr_mod_atexit_leave(PyObject *module, PyObject *atexit_module)
{
    (void)module;
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    if (!GR_ATEXIT_SHARED && !atexit_kept) { /* the first start() imports it */
        atexit_kept = Py_NewRef(atexit_module);
        atexit_pending = 1;
    }
    if (PyDict_GetItemString(modules, "atexit") == atexit_module && PyDict_DelItemString(modules, "atexit") < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The audit hook's "import" event (args: the module's name first), raised
 * before a module not in sys.modules is looked for (the import statement,
 * __import__, PyImport_ImportModule).  Before 3.10 a second atexit module
 * would replace the first one's callbacks (the recorder's stop at exit):
 * the kept one goes back first, and the import returns it.  An import that
 * raises no event (importlib.import_module) still gets a new module, whose
 * callbacks then replace the recorder's: recording is not stopped at exit.
 * Never raises. */
void gr_atexit_import_event(PyObject *args)
{
    if (!atexit_pending || !args || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1)
        return;
    PyObject *name = PyTuple_GET_ITEM(args, 0); /* borrowed */
    if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "atexit") != 0)
        return;
    atexit_pending = 0;
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    if (!PyDict_GetItemString(modules, "atexit") && PyDict_SetItemString(modules, "atexit", atexit_kept) < 0)
        PyErr_Clear();
}

const char gr_record_settings_doc[] =
    "_record_settings([settings]): the settings `greenreplay record --manual` passed (a dict\n"
    "of its GREENREPLAY_* variables, taken out of the environment by the boot before the\n"
    "program ran), or None; with an argument (a dict, or None), set them.  Kept in the\n"
    "extension so that the greenreplay package the program imports itself finds them.";

PyObject *gr_mod_record_settings(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *settings = NULL;
    if (!PyArg_ParseTuple(args, "|O:_record_settings", &settings))
        return NULL;
    if (settings) {
        if (settings != Py_None && !PyDict_Check(settings)) {
            PyErr_SetString(PyExc_TypeError, "_record_settings: settings must be a dict or None");
            return NULL;
        }
        Py_XSETREF(record_settings, settings == Py_None ? NULL : Py_NewRef(settings));
    }
    return Py_NewRef(record_settings ? record_settings : Py_None);
}
