/* instr.c - instrumentation state of the running greenlet (see instr.h).
 * Reads CPython's internal interpreter state: built with the internals
 * section of compat.h. */
#define GR_COMPAT_FRAMES 1
#include "compat.h"
#include "instr.h"

int gr_instr_available(void)
{
    return GR_HAVE_INSTRUMENTATION;
}

int gr_instr_state(uint64_t *version, uint32_t *frames, uint32_t *stale, uint32_t cap)
{
#if GR_HAVE_INSTRUMENTATION
    PyThreadState *ts = PyThreadState_Get();
    uint64_t v = gr_interp_instr_version(ts->interp);
    uint32_t n = 0, k = 0;
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f && n < cap) {
        PyCodeObject *co = PyFrame_GetCode(f);
        if (gr_code_instr_version(co) != v)
            k++;
        Py_DECREF(co);
        n++;
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    *version = gr_instr_version_number(v);
    *frames = n;
    *stale = k;
    return 0;
#else
    (void)version;
    (void)frames;
    (void)stale;
    (void)cap;
    return -1;
#endif
}
