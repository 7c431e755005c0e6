/* follow.h - following the threads the program starts (follow.c). */
#ifndef GR_FOLLOW_H
#define GR_FOLLOW_H

#include "recorder.h"

/* A C call of thread t (what: PyTrace_C_CALL, C_RETURN or C_EXCEPTION;
 * arg: its function) to one of r->thread_start: at its c_call the start
 * site is noted, at its c_return the recorder goes into the new thread
 * state (threading.Thread.start) or counts the start as not followed.
 * Out of line: the profile function tests only that arg is one of them. */
void gr_thread_start_event(gr_recorder *r, gr_thread *t, int what, PyObject *arg);

/* The audit event of a thread start (3.12+), between its c_call and
 * c_return (args: the audit event's). */
void gr_thread_start_announced(gr_recorder *r, PyObject *args);

/* Thread state ts, started unfollowed, is reached now (sys.setprofile
 * with threading's profile hook): its start counts as followed. */
void gr_unfollowed_reached(gr_recorder *r, PyThreadState *ts);

#endif
