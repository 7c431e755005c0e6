/* profile_slot.h - the profile slot after the program changes it
 * (profile_slot.c). */
#ifndef GR_PROFILE_SLOT_H
#define GR_PROFILE_SLOT_H

#include "recorder.h"

/* The profile slot of thread state ts (thread t) after the program may
 * have changed it: keep observing (take the slot back, or chain in front
 * of the program's function), and write a HOOK record saying what the
 * program did and what the subject profiler is now.  standard: the
 * program gave the thread threading's profile hook. */
void gr_resolve_profile_slot(gr_recorder *r, gr_thread *t, PyThreadState *ts, int standard);

/* start(): keep the program's profile function already in thread state
 * ts's slot (thread t): chained as one installed while recording.  Returns
 * 1 when kept; 0 for an empty slot, where the caller installs gr_profile.
 * gr_profile_kept_hook writes its HOOK once the thread has a tid. */
int gr_profile_keep(gr_recorder *r, gr_thread *t, PyThreadState *ts);
void gr_profile_kept_hook(gr_recorder *r, gr_thread *t);

/* The recorder's sys.setprofile (profile_slot.c), installed in the sys module
 * while recording so that a change made through it is chained at once;
 * the original (owned, set by module.c) is called first.  Its docstring
 * is the original's. */
extern PyObject *gr_sys_setprofile_orig;
extern PyMethodDef gr_sys_setprofile_def;

#endif
