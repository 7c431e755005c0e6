/* beside.h - watching beside a program's profile function (beside.c). */
#ifndef GR_BESIDE_H
#define GR_BESIDE_H

#include "recorder.h"

/* Turn the recorder's sys.monitoring tool on (3.12+, compat.h GR_BESIDE):
 * from then on a thread whose t->hook.beside is set gets its profile
 * events recorded from the tool.  Returns 1 when the tool is on, 0 where
 * it cannot be (before 3.12, no free tool id, a failure: counted): the
 * caller chains the program's function then.  Never raises. */
int gr_beside_on(gr_recorder *r);

/* Turn it off and give the tool id back (stop(), the fork child). */
void gr_beside_off(gr_recorder *r);

/* Whether thread t (state ts) watches beside the function now in its
 * slot: the program's function and object it saw installed there. */
static inline int gr_beside_holds(const gr_thread *t, const PyThreadState *ts)
{
    return t->hook.beside && ts->c_profilefunc && ts->c_profilefunc == t->hook.chain_func &&
           ts->c_profileobj == t->hook.chain_obj;
}

/* At the audit event sys.setprofile, not raised by sys.setprofile itself
 * (the recorder's sys.setprofile sets r->own.in_setprofile): if the
 * program's Python function, watched beside on thread t (state ts), is in
 * the slot and the thread is inside a tool callback, the function raised
 * out of the event being dispatched: CPython's profile_trampoline clears
 * the slot then.  The recorder's tool will not get that event
 * (sys.monitoring calls no tool after one that raised, and tool 6 comes
 * first): give it to the recorder now.  3.12+; never raises.  Example: the
 * `profile` module's "Bad call" assertion at the call of a function a
 * greenlet starts in; recorded, that call is still written, as the
 * chaining recorder of 3.9-3.11 writes it.  Not a return (PY_RETURN,
 * PY_YIELD): the exception is raised in that frame then, and unwinds it
 * (PY_UNWIND, which the recorder's function, back in the slot, records)
 * or is caught there, and the frame goes on: written at the raise, the
 * return was written twice (tests/integration/programs/
 * profile_raises_return.py).  The end of a C call (c_return,
 * c_exception) is written for the C_CALL the tool wrote in the running
 * frame (t->open_c): CPython's event names the callable, the thread state
 * does not (tests/integration/programs/profile_raises_c.py).  Would also take
 * threading.setprofile_all_threads called from inside a Python profile
 * function for such a clear (not seen in practice). */
void gr_beside_raised(gr_recorder *r, gr_thread *t, PyThreadState *ts);

/* The slot's function right after the program's sys.setprofile(callable):
 * CPython's trampoline for Python functions (gr_beside_raised). */
void gr_beside_learn_trampoline(Py_tracefunc f);

/* Whether the profile slot of thread state ts gives the recorder its
 * events: the recorder's function is there (gr_profile, gr_profile_chain),
 * or the program's function it watches beside. */
int gr_slot_observed(gr_recorder *r, PyThreadState *ts);

#endif
