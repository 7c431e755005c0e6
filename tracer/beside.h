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

/* Whether the profile slot of thread state ts gives the recorder its
 * events: the recorder's function is there (gr_profile, gr_profile_chain),
 * or the program's function it watches beside. */
int gr_slot_observed(gr_recorder *r, PyThreadState *ts);

#endif
