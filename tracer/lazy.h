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

/* After a clear of a slot: give tool 6's handlers back to CPython when no
 * thread has a program's function any more. */
void gr_lazy_cleared(PyThreadState *ts);

/* Give them back now (stop(), the fork child). */
void gr_lazy_disarm(void);

#endif
