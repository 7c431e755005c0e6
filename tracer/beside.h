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

/* At start(), for each greenlet g suspended then (switches.c,
 * gr_note_preexisting), with the tool on: the code objects of its frames
 * that were instrumented up to date before the tool was turned on are
 * brought up to date again, so that they give the tool their events when
 * g resumes (sys.monitoring re-instruments only the code of running
 * frames when events are turned on, and a greenlet resumes its frames
 * without the RESUME instruction that would catch up).  Code that lagged
 * before is left as it is: the program's own tools would see the change.
 * Never raises. */
void gr_beside_catch_up(gr_recorder *r, PyObject *g);

/* Turn it off and give the tool id back (stop(), the fork child). */
void gr_beside_off(gr_recorder *r);

/* Whether thread t (state ts) watches beside the function now in its
 * slot: the program's function and object it saw installed there. */
static inline int gr_beside_holds(const gr_thread *t, const PyThreadState *ts)
{
    return t->hook.beside && ts->c_profilefunc && ts->c_profilefunc == t->hook.chain_func &&
           ts->c_profileobj == t->hook.chain_obj;
}

/* Whether the profile slot of thread state ts gives the recorder its
 * events: the recorder's function is there (gr_profile, gr_profile_chain),
 * or the program's function it watches beside. */
int gr_slot_observed(gr_recorder *r, PyThreadState *ts);

#endif
