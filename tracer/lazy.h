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

/* After the program's change of a profile slot is resolved and the
 * recorder's own changes for it are done (its function back in a slot the
 * program cleared, calling thread ts; a foothold out of the trace slot,
 * footholds.c).  Each turned tool 6's or tool 7's events off and on: the
 * code of every suspended greenlet's frames is behind the interpreter's
 * version, its instructions still instrumented for the same tools, and a
 * debug build asserts it is up to date when the greenlet resumes
 * (debug_check_sanity), which unrecorded it never does where that code has
 * no instrumented instruction.  So on debug builds (GR_CATCH_UP) each
 * such code object is brought up to date where that changes nothing else
 * (compat.h gr_code_catch_up): every one after an install or a clear that
 * leaves a program's function somewhere (unrecorded, such code is up to
 * date or has no instrumented instruction); after the clear of the last one only code that is not live (live code
 * has tool 6's instructions unrecorded too, and aborts there as well:
 * greenlet issue 368).  Then, with no program function left, tool 6's
 * handlers go back to CPython.  Only while armed: otherwise which code
 * has tool 6 unrecorded is not known.  Never raises. */
void gr_lazy_after_change(gr_recorder *r, PyThreadState *ts);

/* Give tool 6's handlers back now (stop(), the fork child). */
void gr_lazy_disarm(void);

#endif
