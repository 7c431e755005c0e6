/* footholds.h - the foothold in the trace slot (footholds.c). */
#ifndef GR_FOOTHOLDS_H
#define GR_FOOTHOLDS_H

#include "recorder.h"

/* Give the trace slot of thread state ts (thread t, any thread) back to
 * the function it held before a foreign foothold. */
void gr_drop_foreign(gr_thread *t, PyThreadState *ts);

/* The audit event of a profile change on a thread the recorder has not
 * reached (yet): foreign footholds on the followed threads, and one on
 * this thread if its trace slot is empty. */
void gr_stray_foothold(gr_recorder *r, PyThreadState *ts);

/* A new sys.setprofile audit event on thread t (state ts) while its
 * foothold still waits: 1 if the previous change was made and is now
 * resolved (the caller sets up a new foothold), 0 if the foothold stays
 * as it is. */
int gr_foothold_overtaken(gr_recorder *r, gr_thread *t, PyThreadState *ts, int keep_code);

/* A sys.setprofile audit event on thread t (the calling thread's state
 * ts), with no foothold of its own waiting: take one. */
void gr_foothold_take(gr_recorder *r, gr_thread *t, PyThreadState *ts);

/* At a mark on thread t (thread state ts, its own): a foreign profile
 * function in the slot that no audit event announced (a C extension that
 * writes tstate->c_profilefunc directly, e.g. yappi's per-thread start;
 * the docstring of yappi's _profile_thread_callback says it changes the
 * thread state's profile function) is chained like an announced one, and
 * its HOOK record carries GR_HOOK_UNANNOUNCED: what ran between the
 * thread's previous record and the mark may be missing from the trace.
 * An empty slot where the recorder's function had delivered events (a
 * direct clear, as yappi's stop) gets the recorder's function back, the
 * same way.  Nothing to do when the slot is ours, empty on a thread the
 * recorder never reached (the unprofiled-thread rule speaks for that), or
 * inside a trace/profile callback.  Also called at stop().  Never
 * raises. */
void gr_profile_slot_at_mark(gr_recorder *r, gr_thread *t, PyThreadState *ts);

/* stop(): give every chained profile slot back to the program's function
 * and drop any foothold in the trace slot. */
void gr_slots_give_back(gr_recorder *r);

/* How many thread states of the interpreter of `me` (the calling thread's
 * state) have the recorder's foothold (footholds.c) in their trace slot, with
 * or without a recording: for tests (none may outlive a recording).  GIL
 * held; never raises. */
int gr_footholds(PyThreadState *me);

#endif
