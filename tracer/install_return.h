/* install_return.h - the c_return of the call that installs a program's
 * profile function (install_return.c). */
#ifndef GR_INSTALL_RETURN_H
#define GR_INSTALL_RETURN_H

#include "recorder.h"

/* At the audit event sys.setprofile on the calling thread (state ts),
 * before the change is made: if, without the recorder, the call in
 * progress would give the function being installed no c_return (3.12+:
 * its CALL instruction not instrumented), see that it gets none recorded
 * either.  Never raises. */
void gr_install_return_expect(gr_recorder *r, PyThreadState *ts);

/* At stop() and in the fork child: give up the c_returns still expected
 * on other threads; the calling thread's are still dropped, as they would
 * be unrecorded (its calls were instrumented for the recording). */
void gr_install_return_off(void);

/* Give up every c_return expected (lazy.c, before it stands in front of
 * the cell). */
void gr_install_return_cancel(void);

/* If the handler set aside is `inner` (lazy.c's, going away), set `real`
 * aside instead (the reference moves to it) and return 1; else 0: the
 * caller keeps both references. */
int gr_install_return_unwrap(PyObject *inner, PyObject *real);

#endif
