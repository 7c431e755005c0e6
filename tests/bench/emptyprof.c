/* emptyprof.c - benchmark baseline: a C profile function that does nothing.
 *
 * The recorder's cost per profile event is compared with this (the cost of
 * CPython calling any C profile function at all) and with cProfile.
 * install() sets it with PyEval_SetProfile on the calling thread;
 * uninstall() removes it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static long long nevents;

static int empty_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    nevents++;
    return 0;
}

static PyObject *install(PyObject *m, PyObject *unused)
{
    nevents = 0;
    PyEval_SetProfile(empty_profile, NULL);
    Py_RETURN_NONE;
}

/* Remove the profile function; returns the number of events it saw. */
static PyObject *uninstall(PyObject *m, PyObject *unused)
{
    PyEval_SetProfile(NULL, NULL);
    return PyLong_FromLongLong(nevents);
}

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, "Install the empty C profile function."},
    {"uninstall", uninstall, METH_NOARGS, "Remove it; returns the events it saw."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "emptyprof", NULL, -1, methods};

PyMODINIT_FUNC PyInit_emptyprof(void) { return PyModule_Create(&moduledef); }
