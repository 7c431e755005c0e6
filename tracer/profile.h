/* profile.h - the recorder's C profile function (profile.c). */
#ifndef GR_PROFILE_H
#define GR_PROFILE_H

#include "recorder.h"

/* Which C calls of the running greenlet had their c_call passed on to the
 * program's own profile function: a bit per open C call (innermost in bit
 * 0, 64 deep; deeper ones count as passed on while a function of the
 * program is installed).  CPython reports a c_return only when a profile
 * function was set at the c_call, so the program's function must get the
 * c_return of exactly the calls whose c_call it got (the recorder, always
 * installed, gets every one).  Kept per greenlet: a C call (switch) may
 * return in another turn of its greenlet. */
static inline uint64_t *gr_c_bits(gr_recorder *r, gr_thread *t)
{
    gr_gl *e = gr_gl_of(r, t->cur_gid);
    return e ? &e->cbits : &t->cbits;
}

static inline void gr_c_push(gr_recorder *r, gr_thread *t, int passed)
{
    uint64_t *b = gr_c_bits(r, t);
    *b = (*b << 1) | (uint64_t)(passed != 0);
}

static inline int gr_c_pop(gr_recorder *r, gr_thread *t)
{
    uint64_t *b = gr_c_bits(r, t);
    int passed = (int)(*b & 1);
    *b >>= 1;
    return passed;
}

/* The end (what: PyTrace_C_RETURN or PyTrace_C_EXCEPTION) of the C call
 * whose C_CALL thread t wrote in frame (code: its code id), written with
 * the switch check as the profile function writes it, when the C function
 * is no longer at hand (beside.c, gr_beside_raised).  Never raises. */
void gr_profile_c_end(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, uint32_t code);

/* The C profile function installed with PyEval_SetProfile; obj is the
 * thread's gr_thread.  Never raises; returns 0. */
int gr_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* Profile function that records and then calls the program's own profile
 * function (t->hook.chain_func with the slot's object). */
int gr_profile_chain(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

#endif
