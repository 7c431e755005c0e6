/* lazy.h - what a program's profile function gets in code CPython
 * instruments lazily (lazy.c). */
#ifndef GR_LAZY_H
#define GR_LAZY_H

#include "install_return.h"
#include "recorder.h"

/* Before a change of the profile slot of the calling thread (state ts)
 * that may install the program's first profile function (3.12+, with the
 * recorder's tool on): from now on a program's function gets events only
 * in code CPython would have instrumented for it unrecorded.  Does
 * nothing where a program's function is in some slot already, or armed.
 * Never raises. */
void gr_lazy_arm(gr_recorder *r, PyThreadState *ts);

/* After the recorder's own trace function (a foothold, footholds.c) left
 * the trace slot (all 1): tool 7's events went on and off, and the code
 * of every suspended greenlet's frames is behind the interpreter's
 * version, its instructions still instrumented for the same tools.  Or
 * after the recorder's function went back into a slot the program
 * cleared (all 0): tool 6's events went off and on; only code that is
 * not live then (unrecorded it has no instrumented instruction; live
 * code has tool 6's, and unrecorded a debug build aborts there too,
 * greenlet issue 368).  Bring each such code object up to date where that
 * changes nothing else (compat.h gr_code_catch_up): a debug build asserts
 * it when the greenlet resumes (debug_check_sanity).  Debug builds only
 * (GR_CATCH_UP).  Never raises. */
void gr_lazy_catch_up(gr_recorder *r, int all);

/* After a clear of a slot: give tool 6's handlers back to CPython when no
 * thread has a program's function any more. */
void gr_lazy_cleared(PyThreadState *ts);

/* Give them back now (stop(), the fork child). */
void gr_lazy_disarm(void);

#endif
