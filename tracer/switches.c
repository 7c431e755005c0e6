/* switches.c - which greenlet is running: switch detection.
 *
 * Passive mode (the default) installs no greenlet trace callback: any
 * callback makes greenlet recompute the tracing state of the target on its
 * way out of the callback, which heals the very bug class (greenlet issue
 * 256) this tool exists to catch (docs/FORMAT.md §4, SWITCH).  Instead, at
 * every mark(), and at every profile event after which a switch may have
 * happened (the thread's switch witness changed: compat.h,
 * gr_switch_witness), the recorder asks greenlet which greenlet is running
 * (its C API, PyGreenlet_GetCurrent) and compares the answer with the one it
 * saw last on that thread.  Asking at events with no switch before them
 * would also run greenlet's deferred cleanup of greenlets dropped by other
 * threads at a moment of the recorder's choosing (greenlet's own leak
 * tests see it).  A change is a switch; it is written with the target's
 * real Python stack, so every switch is also a ground-truth point.
 *
 * What passive mode cannot know: greenlets that ran without delivering any
 * event (a hub in compiled code) between two that did; whether a switch was
 * a throw; the exact moment of the switch (it is seen at the target's first
 * event).  A greenlet that died unseen is reported when it is freed or at
 * stop().  In callback mode greenlet's callback announces each switch and
 * throw; the record is still written here, at the target's first event, so
 * that a callback wrapped by the program never lends its own frames to the
 * target's stack.
 */
#include "recorder.h"
#include "profile.h"
#include "beside.h"

#include "instr.h"

PyObject *gr_current_greenlet(gr_recorder *r)
{
    PyObject *g = NULL;
    if (r->gl_api.gl_current)
        g = r->gl_api.gl_current();
    else if (r->gl_api.getcurrent)
        g = PyObject_CallNoArgs(r->gl_api.getcurrent);
    if (!g && PyErr_Occurred())
        PyErr_Clear();
    return g;
}

/* gr_greenlet_parent, inline for the switch path (the exported one is a
 * call of its own: about 13 instructions per parent read). */
static inline PyObject *greenlet_parent(gr_recorder *r, PyObject *g)
{
    if (!r->gl_api.gl_parent)
        return PyObject_GetAttr(g, r->gl_api.str_parent);
    PyObject *p = r->gl_api.gl_parent(g);
    if (!p && !PyErr_Occurred())
        p = Py_NewRef(Py_None);
    return p;
}

PyObject *gr_greenlet_parent(gr_recorder *r, PyObject *g)
{
    return greenlet_parent(r, g);
}

/* The C getter of `dead` on the most basic type of g's MRO that defines it
 * as one (greenlet.greenlet): kept in r->gl_api at first use. */
static void find_dead_getter(gr_recorder *r, PyObject *g)
{
    PyObject *mro = Py_TYPE(g)->tp_mro;
    if (!mro || !PyTuple_Check(mro))
        return;
    for (Py_ssize_t i = PyTuple_GET_SIZE(mro) - 1; i >= 0; i--) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!t->tp_dict) /* a core static type on 3.12+: not greenlet's */
            continue;
        PyObject *d = PyDict_GetItemWithError(t->tp_dict, r->gl_api.str_dead);
        if (!d) {
            if (PyErr_Occurred())
                return;
            continue;
        }
        if (Py_IS_TYPE(d, &PyGetSetDescr_Type) && ((PyGetSetDescrObject *)d)->d_getset->get) {
            r->gl_api.dead_type = t;
            r->gl_api.dead_get = ((PyGetSetDescrObject *)d)->d_getset->get;
            r->gl_api.dead_closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
        }
        return;
    }
}

int gr_greenlet_dead(gr_recorder *r, PyObject *g)
{
    if (!r->gl_api.dead_type)
        find_dead_getter(r, g);
    PyObject *d;
    if (r->gl_api.dead_type && PyType_IsSubtype(Py_TYPE(g), r->gl_api.dead_type))
        d = r->gl_api.dead_get(g, r->gl_api.dead_closure);
    else /* not greenlet's own type (no C getter found): the attribute */
        d = PyObject_GetAttr(g, r->gl_api.str_dead);
    if (!d)
        return -1;
    int dead = PyObject_IsTrue(d);
    Py_DECREF(d);
    return dead;
}

/* ---- continued switches ------------------------------------------------
 *
 * Asking greenlet which greenlet runs (about 120 instructions) and walking
 * the target's frames (about 350) are most of a switch's cost; both can be
 * skipped when the trace already says what they would find.  Greenlet X's
 * last event was the C_CALL of some C function in frame F (of `switch`,
 * mostly), and the very next change of the thread's witness (exactly one
 * switch, no greenlet running unseen in between: gr_switch_check's
 * sw_direct) came with the next event.  Then X is suspended inside that
 * call, and F is alive as long as X does not run: X holds it.  While every
 * later witness change on the thread is direct too (each greenlet that ran
 * delivered events, so none ran unseen) and no hook changed (a HOOK
 * record), a C_RETURN or C_EXCEPTION in F can only be X returning from
 * that call: two live frames never share an address, and a frame runs in
 * one greenlet at a time (a generator's frame leaves with a RETURN and
 * comes back with a CALL).  X's stack is then the one it had when it was
 * suspended, which is what its records give: its last real stack (a
 * GREENLET seed, a SWITCH or a MARK) with every CALL and RETURN since, all
 * seen (tracing does not turn off within a greenlet's turn without a hook
 * change).  So the SWITCH is written without asking greenlet and without
 * a stack, flag GR_SW_CONTINUED (docs/FORMAT.md §4).  Whether a switch is
 * continued depends only on what the program does, never on addresses,
 * so traces stay deterministic.  Not used with the sampler's registry
 * (each switch updates it with the origin's frame), in callback mode, or
 * in ring mode (a ring keeps only the last records, so a reader may not
 * have the records a continued stack stands on). */

/* The SWITCH record's state: fields f[4..6] (state flags with `flags`
 * added, tracing, use_tracing) of a target running on thread state ts.
 * at_mark: seen by mark() or stop(), outside any callback, where the state
 * is read directly; else inside the profile callback (tracing + 1), where
 * an event was delivered, so the greenlet runs with tracing on, and
 * use_tracing is the value CPython restores when the callback returns. */
static inline void switch_state(PyThreadState *ts, int at_mark, uint64_t flags, uint64_t *f)
{
    /* gr_profile first, the common case (the compiler keeps this order
     * only when told). */
    if (__builtin_expect(ts->c_profilefunc == gr_profile, 1) || gr_slot_observed(gr_active, ts))
        flags |= GR_SW_PROFILE_OURS;
    if (ts->c_profilefunc)
        flags |= GR_SW_PROFILE_SET;
    int tracing, use_tracing;
    if (at_mark) {
        tracing = gr_tstate_tracing(ts);
        use_tracing = gr_use_tracing_now(ts);
    } else {
        tracing = gr_tstate_tracing(ts) - 1;
        use_tracing = GR_HAVE_USE_TRACING ? gr_resume_use_tracing(ts) : -1;
    }
    if (use_tracing >= 0)
        flags |= GR_SW_USE_TRACING_KNOWN;
    f[4] = flags;
    f[5] = (uint64_t)(tracing < 0 ? 0 : tracing);
    f[6] = (uint64_t)(use_tracing < 0 ? 0 : use_tracing);
}

/* Greenlet e (slot es - 1), the origin of a direct switch on thread t, is
 * suspended in the C call its last event made, in t->ccall_frame.  Kept in
 * r->sw.susp (frame -> slot + 1) until it runs again or is freed: a hub
 * switching round-robin over any number of greenlets finds each of them
 * there.  A failed allocation only loses the note (the switch back is
 * then written in full). */
static inline void susp_note(gr_recorder *r, gr_thread *t, gr_gl *e, uint32_t es)
{
    if (gr_keymap_put_at(&r->sw.susp, (uintptr_t)t->ccall_frame, es, &e->susp_at) < 0)
        return;
    e->susp_frame = (uintptr_t)t->ccall_frame;
    e->susp_stamp = ++r->sw.stamp;
}

int gr_susp_holds(void *ctx, uintptr_t frame, uint32_t slot)
{
    gr_recorder *r = ctx;
    return slot <= r->gls.gl_used && r->gls.gl[slot - 1].susp_frame == frame && r->gls.gl[slot - 1].addr;
}

/* The greenlet of thread t remembered as suspended in `frame` whose
 * suspension still holds (every witness change on t direct since, no
 * hook changed, not freed, not running), or NULL.  A stale entry (its
 * greenlet ran since, or its slot went to another greenlet) fails the
 * checks: entries are dropped only when the map is rebuilt (gr_susp_holds)
 * or replaced by a later suspension in a frame at the same address.  At
 * most one greenlet can be suspended in a live frame, and a frame that
 * runs in greenlet B after greenlet A was noted in it means A's note no
 * longer holds, so the latest note of a frame is the only candidate:
 * which switches are continued depends on what the program does, not on
 * addresses. */
static inline gr_gl *susp_find(gr_recorder *r, gr_thread *t, PyFrameObject *frame, uint32_t *slot)
{
    uint32_t s = gr_keymap_get(&r->sw.susp, (uintptr_t)frame);
    if (!s || s > r->gls.gl_used)
        return NULL;
    gr_gl *e = &r->gls.gl[s - 1];
    if (e->susp_frame == (uintptr_t)frame && e->tid == t->tid && e->addr && !e->on &&
        e->susp_stamp > t->break_stamp && e->susp_stamp > r->sw.hook_stamp) {
        *slot = s;
        return e;
    }
    return NULL;
}

/* The state of greenlet og, the one running on thread t until now: the
 * slot remembered at its switch in (t->cur_slot) when it still holds that
 * gid (gids are never reused), else the gid's lookup.  A slot freed
 * since (gr_gl_settle) still holds its gid: its greenlet was freed
 * (addr 0), which every use of it below reads as such. */
static inline gr_gl *origin_gl(gr_recorder *r, const gr_thread *t, uint32_t og)
{
    uint32_t os = t->cur_slot;
    if (os && os <= r->gls.gl_used && r->gls.gl[os - 1].gid == og)
        return &r->gls.gl[os - 1];
    return gr_gl_of(r, og);
}

/* 3.12+: the INSTR record after a switch to tg on thread t (whether the
 * target's frames will report events); compiled out before 3.12. */
static inline void switch_instr(gr_recorder *r, gr_thread *t, uint32_t tg)
{
    uint64_t iv;
    uint32_t nframes, nstale;
    if (GR_INSTR_SWITCH && gr_instr_state(&iv, &nframes, &nstale, GR_STACK_CAP) == 0) {
        uint64_t h[5] = {t->tid, tg, iv, nframes, nstale};
        gr_emit(r, GR_INSTR, 5, h);
    }
}

/* The switch on thread t is written: greenlet g (gid tg, state te or NULL)
 * runs there now, origin oe (or NULL) does not; with note_origin the
 * origin is suspended in the C call of its last event (susp_note). */
static inline void switch_hand_over(gr_recorder *r, gr_thread *t, gr_gl *oe, int note_origin,
                                    PyObject *g, uint32_t tg, gr_gl *te)
{
    if (oe) {
        if (oe->on == t)
            oe->on = NULL;
        if (note_origin)
            susp_note(r, t, oe, (uint32_t)(oe - r->gls.gl) + 1);
    }
    t->cur_g = g;
    t->cur_gid = tg;
    t->cur_slot = te ? (uint32_t)(te - r->gls.gl) + 1 : 0;
    if (te) {
        te->tid = t->tid;
        te->on = t;
        te->susp_frame = 0; /* it runs: its suspension is over */
    }
}

/* The self-check GREENREPLAY_VERIFY_CONTINUED=1 (module.c reads it at
 * start()): a continued switch about to be written on thread t names
 * greenlet g (borrowed), gid tg; ask greenlet which greenlet really runs
 * and count a disagreement, keeping the first (its record index, tid, the
 * gid written and the gid greenlet names, 0 if not one seen).  The counts
 * go to META records at stop() (module.c) and `greenreplay check` reports
 * a mismatch as a switch_consistency violation (docs/RULES.md).  The
 * trace is otherwise unchanged: the switch is still written without a
 * stack.  Any pending exception (a C_EXCEPTION's) is kept. */
static void verify_continued(gr_recorder *r, gr_thread *t, PyObject *g, uint32_t tg)
{
    GR_EXC_SAVE(saved); /* getcurrent() is Python-level before greenlet 2.0 */
    PyObject *real = gr_current_greenlet(r);
    r->sw.cont_verified++;
    if (real != g) {
        if (!r->sw.cont_mismatch++) {
            r->sw.cont_first[0] = atomic_load_explicit(&r->nevents, memory_order_relaxed);
            r->sw.cont_first[1] = t->tid;
            r->sw.cont_first[2] = tg;
            r->sw.cont_first[3] = real ? gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)real, 0) : 0;
        }
    }
    Py_XDECREF(real);
    if (PyErr_Occurred())
        PyErr_Clear();
    GR_EXC_RESTORE(saved);
}

/* switch_continued's SWITCH/THROW record (thr) at p, no stack: the
 * shortest form of gr_enc_switch_head (the usual one: the origin's
 * C_CALL was the chunk's last record, and the state is the chunk's last
 * switch's) without its field array, else gr_enc_switch_head.  Room:
 * 2 + 7 * GR_VARINT_MAX bytes.  Returns the end. */
static inline __attribute__((always_inline)) uint8_t *cont_head(gr_chunk_ctx *c, uint8_t *p, int thr, uint32_t tid,
                                                                uint32_t og, uint32_t tg, uint32_t pg,
                                                                uint64_t state, uint64_t tracing,
                                                                uint64_t use_tracing)
{
    if (tid == c->tid && og == c->gid && c->sw_known && state == c->sw_state && tracing == c->sw_tracing &&
        use_tracing == c->sw_use_tracing) {
        c->gid = tg;
        *p++ = (uint8_t)(thr ? GR_CTX_THROW_SAME : GR_CTX_SWITCH_SAME);
        p = gr_put_varint(p, gr_zigzag(tg, c->sw_origin));
        c->sw_origin = og;
        p = gr_put_varint(p, pg);
    } else {
        uint64_t f[7] = {tid, og, tg, pg, state, tracing, use_tracing};
        p = gr_enc_switch_head(c, p, thr ? GR_THROW : GR_SWITCH, f);
    }
    *p++ = 0;
    return p;
}

/* The event record (ev_tag, code id ev_code, cache slot ev_slot) after
 * cont_head, in the context it left.  Room: 1 + 3 * GR_VARINT_MAX bytes. */
static inline __attribute__((always_inline)) uint8_t *cont_event(gr_chunk_ctx *c, uint8_t *p, int ev_tag,
                                                                 uint32_t ev_code, unsigned ev_slot)
{
    unsigned k = (unsigned)(ev_tag - GR_CALL);
    if (c->code[ev_slot] == ev_code && k < 4 && ev_code) {
        *p++ = (uint8_t)(GR_CACHED_BASE + k * GR_CODE_SLOTS + ev_slot);
    } else {
        *p++ = (uint8_t)(GR_CTX_EVENT + k);
        c->code[ev_slot] = ev_code;
        p = gr_put_varint(p, ev_code);
    }
    return p;
}

/* A continued switch to greenlet e (slot es - 1) at an event (C_RETURN or
 * C_EXCEPTION, `what`) on thread t (thread state ts): written and 1; 0
 * (nothing written) when the full path must write it: the origin may have
 * ended (its death is asked there), or the target's parent is not a
 * greenlet seen yet.  ev_tag (0: none): the event's record tag, its code
 * id ev_code and cache slot ev_slot: 2 when that record was written too,
 * right after the SWITCH (gr_event_state is then the caller's).  plain:
 * the times side channel is known to be off (r->tw NULL). */
static inline __attribute__((always_inline)) int switch_continued(gr_recorder *r, gr_thread *t, gr_gl *e,
                                                                   uint32_t es, int what, PyThreadState *ts,
                                                                   int ev_tag, uint32_t ev_code, unsigned ev_slot,
                                                                   int plain, int fast)
{
    int written = 1;
    if (t->may_have_ended)
        return 0;
    PyObject *g = (PyObject *)e->addr;
    uint32_t pg;
    if (e->par == Py_None) {
        /* A main greenlet (its parent read as None before): its parent
         * cannot change.  greenlet 2.0+ refuses to set it ("cannot set the
         * parent of a main greenlet"); greenlet 0.4 and 1.x refuse every
         * candidate, as each live greenlet's parent chain on the main
         * greenlet's thread ends at it ("cyclic parent chain") and one of
         * another thread is refused ("parent cannot be on a different
         * thread").  So greenlet is not asked (about 65 instructions). */
        pg = 0;
    } else {
        PyObject *parent;
        if (r->gl_api.gl_parent) {
            /* greenlet's C API: no Python code, the pending exception of a
             * C_EXCEPTION untouched. */
            parent = greenlet_parent(r, g);
        } else {
            GR_EXC_SAVE(saved); /* the `parent` attribute (greenlet < 2.0) */
            parent = greenlet_parent(r, g);
            if (!parent)
                PyErr_Clear();
            GR_EXC_RESTORE(saved);
        }
        if (!parent)
            return 0;
        /* Its parent's gid: as last time when it is the same object and
         * no greenlet was freed since (so the address names the same
         * one). */
        if (parent == Py_None) {
            pg = 0;
            e->par = Py_None; /* a main greenlet: not asked again */
        } else if (parent == e->par && e->par_frees == r->gls.gl_frees) {
            pg = e->par_gid;
        } else {
            pg = gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)parent, 0);
            e->par = parent;
            e->par_gid = pg;
            e->par_frees = r->gls.gl_frees;
        }
        int known = parent == Py_None || pg;
        Py_DECREF(parent);
        if (!known)
            return 0;
    }
    uint32_t og = t->cur_gid, tg = e->gid, tid = t->tid;
    uint64_t st[7]; /* the state in st[4..6] (kept apart from the
                       record's field array below: held in registers) */
    switch_state(ts, 0, GR_SW_INFERRED | GR_SW_CONTINUED, st);
    uint64_t state = st[4], tracing = st[5], use_tracing = st[6];
    if (!fast && r->sw.verify_continued)
        verify_continued(r, t, g, tg);
    /* gr_emit_stack without a stack, inline: the compact head, depth 0,
     * and (ev_tag) the event's own record (C_RETURN or C_EXCEPTION, code
     * id ev_code) right after it, where gr_writer_event would put it (its
     * room in this chunk: no flush between the two), in the context the
     * SWITCH left (tid, tg): gr_enc_event_slot's short forms.  Both
     * counted at once (no side channel: its entries go record by
     * record).  The room for both is tested once (open_cap is 0 when the
     * writer is blocked); when the chunk has less, the general write
     * below fills it as far as it goes. */
    gr_writer *w = r->w;
    int thr = what == PyTrace_C_EXCEPTION;
    gr_chunk_ctx *c = &w->ctx;
    uint8_t *base = w->buf + GR_CHUNK_HEADER_LEN;
    if (ev_tag && (plain || !r->tw) && w->len + 3 + 10 * GR_VARINT_MAX <= w->open_cap) {
        uint8_t *p = base + w->len;
        p = cont_head(c, p, thr, tid, og, tg, pg, state, tracing, use_tracing);
        p = cont_event(c, p, ev_tag, ev_code, ev_slot);
        w->len = (size_t)(p - base);
        w->records += 2;
        w->indexed += 2;
        atomic_store_explicit(&r->nevents, atomic_load_explicit(&r->nevents, memory_order_relaxed) + 2,
                              memory_order_relaxed);
        written = 2;
    } else {
        uint8_t *p = gr_writer_reserve(w, 2 + 7 * GR_VARINT_MAX);
        if (p) {
            p = cont_head(c, p, thr, tid, og, tg, pg, state, tracing, use_tracing);
            base = w->buf + GR_CHUNK_HEADER_LEN;
            if (ev_tag && !r->tw && (size_t)(p - base) + 1 + 3 * GR_VARINT_MAX <= w->cap) {
                p = cont_event(c, p, ev_tag, ev_code, ev_slot);
                w->len = (size_t)(p - base);
                w->records += 2;
                w->indexed += 2;
                atomic_store_explicit(&r->nevents,
                                      atomic_load_explicit(&r->nevents, memory_order_relaxed) + 2,
                                      memory_order_relaxed);
                written = 2;
            } else {
                gr_writer_commit(w, p);
                gr_count_record(r);
            }
        } else {
            gr_writer_drop(w);
        }
    }
    switch_instr(r, t, tg);
    /* switch_hand_over with both slots known (es: e's; the origin's from
     * t->cur_slot when it holds og, as origin_gl finds it). */
    uint32_t os = t->cur_slot;
    gr_gl *oe;
    if (os && os <= r->gls.gl_used && r->gls.gl[os - 1].gid == og) {
        oe = &r->gls.gl[os - 1];
    } else {
        oe = gr_gl_of(r, og);
        os = oe ? (uint32_t)(oe - r->gls.gl) + 1 : 0;
    }
    if (oe) {
        if (oe->on == t)
            oe->on = NULL;
        if (t->ccall_frame)
            susp_note(r, t, oe, os);
    }
    t->cur_g = g;
    t->cur_gid = tg;
    t->cur_slot = es;
    e->on = t; /* (e->tid is tid: susp_find) */
    e->susp_frame = 0; /* it runs: its suspension is over */
    return written;
}

static void switch_asked(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg);

/* Whether the thread's witness, moved by exactly one since its previous
 * event (t->sw_direct), moved for a contextvars Context entered or left by
 * Context.run, not for a switch (compat.h, gr_switch_witness): this event
 * is the CALL right after the C_CALL of Context.run (entered: the callable
 * it runs), or the C_RETURN/C_EXCEPTION of Context.run (left).  Greenlet is
 * then not asked: asking runs greenlet's deferred cleanup of the thread's
 * greenlets (greenlet 3.x, getcurrent), which a thread ending in
 * Context.run (3.14+) would otherwise always get, and greenlet's own leak
 * tests see (test_issue251_issue252_*).  what: a profile event. */
static int context_step(gr_recorder *r, gr_thread *t, int what, uint32_t code)
{
    uint32_t id = r->sw.ctx_run_id;
    if (!id)
        return 0;
    if (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION)
        return code == id;
    return what == PyTrace_CALL && t->ccall_frame && t->last_c_call == id;
}

void gr_switch_check_slow(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg,
                          PyThreadState *ts, uint32_t code)
{
    if (t->sw_direct && context_step(r, t, what, code))
        return;
    if (!t->sw_direct)
        t->break_stamp = ++r->sw.stamp; /* greenlets may have run unseen */
    else if (r->sw.continued_ok && (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION)) {
        uint32_t es;
        gr_gl *e = susp_find(r, t, frame, &es);
        if (e && switch_continued(r, t, e, es, what, ts, 0, 0, 0, 0, 0))
            return;
    }
    switch_asked(r, t, frame, what, arg);
}

/* The greenlet issue 256 class where nothing at all is seen: a greenlet
 * created while recording runs with tracing off, so not one event of it
 * reaches the recorder, and passive mode never learns it ran.  What the
 * origin sees: the C_RETURN (or C_EXCEPTION) of g.switch() or g.throw(),
 * with the witness moved by more than one (something ran) and greenlet
 * saying the origin still runs.  If g was never seen and is now suspended
 * in a Python frame, Python code ran in it with no event: its frame
 * (owned) is returned, else NULL.  Example: on the mut256 mutant,
 * `greenlet.greenlet(child).switch()` where child switches back to its
 * parent.  Only reads g (gr_frame, parent): nothing is installed. */
static PyFrameObject *unseen_target(gr_recorder *r, gr_thread *t, PyObject *arg)
{
    if (!arg || !r->gl_api.type || !PyCFunction_Check(arg))
        return NULL;
    PyObject *g = PyCFunction_GET_SELF(arg);
    if (!g || g == t->cur_g || !PyObject_TypeCheck(g, r->gl_api.type))
        return NULL;
    const char *name = ((PyCFunctionObject *)arg)->m_ml->ml_name;
    if (!name || (strcmp(name, "switch") != 0 && strcmp(name, "throw") != 0))
        return NULL;
    if (gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)g, 0) || gr_ptrmap_get(&r->gls.preexisting, (uintptr_t)g, 0))
        return NULL; /* seen, or it had frames before the recording */
    PyObject *parent = greenlet_parent(r, g);
    PyObject *fr = parent && parent != Py_None ? PyObject_GetAttr(g, r->gl_api.str_gr_frame) : NULL;
    Py_XDECREF(parent);
    if (fr && !PyFrame_Check(fr))
        Py_CLEAR(fr); /* None: not started, dead, or suspended in C code only */
    if (PyErr_Occurred())
        gr_swallow(r);
    return (PyFrameObject *)fr;
}

/* gr_switch_check_slow after the continued switch: ask greenlet which
 * greenlet runs on thread t and write the switch if it is not t->cur_g
 * (arg: the event's C function, for unseen_target). */
static void switch_asked(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what, PyObject *arg)
{
    PyObject *g = gr_current_greenlet(r);
    if (g && g == t->cur_g && !t->sw_direct && (what == PyTrace_C_RETURN || what == PyTrace_C_EXCEPTION) &&
        !r->sw.callback_mode) {
        GR_EXC_SAVE(saved);
        PyFrameObject *fr = unseen_target(r, t, arg);
        if (fr) /* into it, then (below) back to g */
            gr_switch_seen(r, t, PyCFunction_GET_SELF(arg), fr, GR_SEEN_UNSEEN, 0);
        Py_XDECREF(fr);
        GR_EXC_RESTORE(saved);
    }
    if (g && g != t->cur_g) {
        GR_EXC_SAVE(saved); /* PyFrame_GetBack may allocate (3.11+) */
        PyFrameObject *top = frame;
        if (what == PyTrace_CALL)
            top = frame ? PyFrame_GetBack(frame) : NULL;
        else
            Py_XINCREF(top);
        gr_switch_seen(r, t, g, top, 0, what == PyTrace_C_EXCEPTION);
        Py_XDECREF(top);
        GR_EXC_RESTORE(saved);
    }
    Py_XDECREF(g);
}

/* The profile function's `what` of each event record tag
 * (GR_CALL..GR_C_EXCEPTION, at tag - GR_CALL). */
static const int8_t what_of_tag[5] = {PyTrace_CALL, PyTrace_RETURN, PyTrace_C_CALL, PyTrace_C_RETURN,
                                      PyTrace_C_EXCEPTION};

/* gr_event_switched after the continued switch was tried: ask greenlet
 * (direct: the witness moved by exactly one). */
static inline __attribute__((always_inline)) int event_asked_in(gr_thread *t, PyFrameObject *frame, int tag,
                                                                PyObject *arg, int direct, uint64_t code_slot)
{
    gr_recorder *r = gr_active;
    t->sw_direct = direct;
    if (!direct)
        t->break_stamp = ++r->sw.stamp; /* greenlets may have run unseen */
    switch_asked(r, t, frame, what_of_tag[tag - GR_CALL], arg);
    t->sw_direct = 0;
    gr_event_tail(r, t, frame, tag, arg, (uint32_t)code_slot, (unsigned)(code_slot >> 32));
    return 0;
}

/* event_asked_in out of line (six arguments: the C_RETURN entry jumps
 * here, its registers kept for the continued switch). */
static __attribute__((noinline)) int event_asked(gr_thread *t, PyFrameObject *frame, int tag, PyObject *arg,
                                                 int direct, uint64_t code_slot)
{
    return event_asked_in(t, frame, tag, arg, direct, code_slot);
}

/* gr_event_switched, inline in its two entries.  plain: a C_RETURN of
 * the profile function's leaf path (profile_c_event: the times side
 * channel off, arg not greenlet.settrace), whose tests of those two are
 * left out. */
static inline __attribute__((always_inline)) int event_switched(gr_thread *t, PyFrameObject *frame, int tag,
                                                                PyObject *arg, PyThreadState *ts,
                                                                uint64_t code_slot, int plain)
{
    gr_recorder *r = gr_active;
    uint32_t code = (uint32_t)code_slot;
    unsigned slot = (unsigned)(code_slot >> 32);
    /* gr_switch_check and gr_switch_check_slow, with the continued
     * switch (the common case) first. */
    uint64_t v = gr_switch_witness(ts), was = t->witness;
    int direct = was != GR_WITNESS_UNKNOWN && v == was + 1;
    if (plain && r->sw.cont_fast) {
        /* The same with the mode tests made once (cont_fast): a C_RETURN
         * is never Context.run's step when its id is not known. */
        t->witness = v;
        if (direct) {
            uint32_t es;
            gr_gl *e = susp_find(r, t, frame, &es);
            int written = e ? switch_continued(r, t, e, es, PyTrace_C_RETURN, ts, tag, code, slot, 1, 1) : 0;
            if (written == 2) {
                gr_event_state(t, frame, tag, code);
                return 0;
            }
            if (written) {
                gr_event_tail(r, t, frame, tag, arg, code, slot);
                return 0;
            }
        }
        return event_asked(t, frame, tag, arg, direct, code_slot);
    }
    t->witness = r->sw.witness_ok ? v : GR_WITNESS_UNKNOWN;
    if (direct && r->sw.ctx_run_id && context_step(r, t, what_of_tag[tag - GR_CALL], code)) {
        gr_event_tail(r, t, frame, tag, arg, code, slot);
        return 0;
    }
    if (direct && r->sw.continued_ok && (tag == GR_C_RETURN || tag == GR_C_EXCEPTION)) {
        uint32_t es;
        gr_gl *e = susp_find(r, t, frame, &es);
        int written = e ? switch_continued(r, t, e, es, tag == GR_C_RETURN ? PyTrace_C_RETURN : PyTrace_C_EXCEPTION,
                                           ts, tag, code, slot, plain, 0)
                        : 0;
        if (written == 2) {
            gr_event_state(t, frame, tag, code);
            if (!plain && __builtin_expect(tag == GR_C_RETURN && arg == r->gl_settrace, 0))
                gr_note_greenlet_callback(r, t, 0); /* the program changed its greenlet callback */
            return 0;
        }
        if (written) {
            gr_event_tail(r, t, frame, tag, arg, code, slot);
            return 0;
        }
    }
    return plain ? event_asked(t, frame, tag, arg, direct, code_slot)
                 : event_asked_in(t, frame, tag, arg, direct, code_slot);
}

int gr_event_switched(gr_thread *t, PyFrameObject *frame, int tag, PyObject *arg, PyThreadState *ts,
                      uint64_t code_slot)
{
    return event_switched(t, frame, tag, arg, ts, code_slot, 0);
}

int gr_event_switched_c_return(gr_thread *t, PyFrameObject *frame, PyObject *arg, PyThreadState *ts,
                               uint64_t code_slot)
{
    return event_switched(t, frame, GR_C_RETURN, arg, ts, code_slot, 1);
}

void gr_witness_verify(gr_recorder *r, gr_thread *t, PyObject *g)
{
    if (r->sw.witness_ok && t->cur_g && g != t->cur_g &&
        gr_switch_witness(PyThreadState_GET()) == t->witness) {
        r->sw.witness_ok = 0;
        gr_sw_refresh(r);
        r->errors++;
        /* Every thread asks greenlet at its next event from now on. */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->follow.threads); i++)
            ((gr_thread *)PyList_GET_ITEM(r->follow.threads, i))->witness = GR_WITNESS_UNKNOWN;
    }
}

/* 1 if the greenlet of state e (NULL: not known) is dead now (freed, or
 * greenlet says so: gr_greenlet_dead). */
static int greenlet_dead(gr_recorder *r, const gr_gl *e)
{
    if (!e || !e->addr || !e->wr)
        return 1; /* freed */
    PyObject *g = gr_weakref_get(e->wr);
    if (!g)
        return 1;
    int dead = gr_greenlet_dead(r, g) == 1;
    Py_DECREF(g);
    if (PyErr_Occurred())
        gr_swallow(r);
    return dead;
}

void gr_emit_dead(gr_recorder *r, uint32_t gid, uint64_t tid)
{
    if (r->samp.reg) /* its sampler registry slot is free for another greenlet */
        gr_registry_release(r->samp.reg, gid);
    gr_gl *e = gr_gl_of(r, gid);
    if (!e || (e->state & GR_GLS_DEAD))
        return; /* written already (its slot may be gone) */
    e->state |= GR_GLS_DEAD;
    uint64_t g[2] = {tid, gid};
    gr_emit(r, GR_DEAD, 2, g);
    gr_gl_settle(r, gid);
}

void gr_switch_seen(gr_recorder *r, gr_thread *t, PyObject *g, PyFrameObject *top, int seen,
                    int raising)
{
    int at_mark = seen == GR_SEEN_AT_MARK, in_tracing = seen == GR_SEEN_IN_TRACING;
    int unseen = seen == GR_SEEN_UNSEEN;
    GR_EXC_SAVE(saved);
    PyThreadState *ts = PyThreadState_Get();
    uint64_t t0 = r->samp.reg ? gr_now_ns() : 0;
    uint32_t og = t->cur_gid;
    int announced = t->cb.pending && t->cb.target == g;
    /* greenlet reports a "throw" whenever the target resumes with an
     * exception (greenlet.throw, GreenletExit, a child's exception passed
     * to its parent); passively that is a target whose first event is
     * the C_EXCEPTION of the call it was suspended in. */
    int is_throw = announced ? t->cb.pending == 2 : raising;
    t->cb.pending = 0;
    t->cb.target = NULL;

    uint64_t flags = 0;
    uint32_t tg = gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)g, 0);
    if (!tg) {
        /* First sight.  A greenlet alive at start(), or the main greenlet
         * of its thread, had frames before recording began: they are its
         * seed.  A greenlet created while recording starts empty, so
         * every frame it has now should have been reported. */
        int pre = gr_ptrmap_get(&r->gls.preexisting, (uintptr_t)g, 0) != 0;
        PyObject *parent = gr_greenlet_parent(r, g);
        int is_main = parent == Py_None;
        if (!parent)
            gr_swallow(r);
        Py_XDECREF(parent);
        if (pre || is_main) {
            tg = gr_greenlet_define(r, t, g, top, 0, top ? GR_GL_SUSPENDED : 0);
        } else {
            tg = gr_greenlet_define(r, t, g, NULL, 0, 0);
            flags |= GR_SW_NEW;
        }
    }
    if (!tg) {
        GR_EXC_RESTORE(saved);
        return;
    }
    /* Its parent's gid: as last time when it is the same object and no
     * greenlet was freed since (switch_continued's cache); else looked up,
     * which may define it (and move the greenlet table). */
    PyObject *parent = gr_greenlet_parent(r, g);
    uint32_t pg = 0;
    gr_gl *te = gr_gl_of(r, tg);
    if (parent) {
        if (te && parent == te->par && parent != Py_None && te->par_frees == r->gls.gl_frees) {
            pg = te->par_gid;
        } else {
            pg = gr_greenlet_id(r, t, parent);
            te = gr_gl_of(r, tg);
            if (te && (pg || parent == Py_None)) {
                te->par = parent;
                te->par_gid = pg;
                te->par_frees = r->gls.gl_frees;
            }
        }
        Py_DECREF(parent);
    } else {
        gr_swallow(r);
    }
    /* No greenlet is defined from here on: te and oe stay valid. */
    gr_gl *oe = og && og != tg ? origin_gl(r, t, og) : NULL;
    /* The origin can have finished only if its last event was a return
     * (a finished greenlet's run returned: a RETURN, or C_RETURN /
     * C_EXCEPTION when nothing of Python ran last); one whose last event
     * was a CALL or C_CALL (the c_call of switch, mostly) is suspended
     * inside that call.  Asking greenlet costs a weakref and an
     * attribute lookup per switch.  A death missed here (events lost
     * while the origin ran) is written when it is freed or at stop(). */
    int dead = og && og != tg && (at_mark || in_tracing || t->may_have_ended) && greenlet_dead(r, oe);

    if (!announced)
        flags |= GR_SW_INFERRED;
    if (at_mark)
        flags |= GR_SW_AT_MARK;
    if (dead)
        flags |= GR_SW_ORIGIN_DEAD;
    if (!in_tracing)
        flags |= GR_SW_REAL_STACK;
    uint64_t f[7] = {t->tid, og, tg, pg};
    switch_state(ts, at_mark, flags, f);
    if (unseen) { /* the target's own tracing state is not known */
        f[4] = (f[4] & ~(uint64_t)GR_SW_USE_TRACING_KNOWN) | GR_SW_UNSEEN;
        f[5] = f[6] = 0;
    }

    uint64_t wait = 0;
    int contended = 0;
    if (r->samp.reg) {
        /* The sampler's registry: the origin is suspended at its top frame
         * (the address only; the sampler reads it without the GIL). */
        uintptr_t frame = 0;
        PyObject *o = oe && !dead && oe->wr ? gr_weakref_get(oe->wr) : NULL;
        if (o) {
            PyObject *fr = PyObject_GetAttr(o, r->gl_api.str_gr_frame);
            if (fr && PyFrame_Check(fr))
                frame = (uintptr_t)fr; /* kept alive by the suspended greenlet */
            if (!fr)
                gr_swallow(r);
            Py_XDECREF(fr);
            Py_DECREF(o);
        }
        contended = gr_registry_switch(r->samp.reg, og, frame, dead, tg, pg, &wait);
    }
    uint64_t index = atomic_load_explicit(&r->nevents, memory_order_relaxed);
    gr_emit_stack(r, is_throw ? GR_THROW : GR_SWITCH, 7, f, 4, GR_SW_CUT, top, 0);
    switch_instr(r, t, tg);
    if (dead)
        gr_emit_dead(r, og, t->tid);
    if (at_mark || in_tracing || unseen)
        t->break_stamp = ++r->sw.stamp; /* the target ran without an event */
    /* Continued switches: a direct switch leaves the origin suspended in
     * the C call of its last event (above). */
    switch_hand_over(r, t, oe,
                     !dead && t->sw_direct && !at_mark && !in_tracing && t->ccall_frame && r->sw.continued_ok,
                     g, tg, te);
    if (r->samp.reg)
        gr_note_switch(r, index, wait, gr_now_ns() - t0, contended);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}

void gr_note_preexisting(gr_recorder *r)
{
    if (!r->greenlet_mod)
        return;
    PyObject *type = PyObject_GetAttrString(r->greenlet_mod, "greenlet");
    /* gc leaves sys.modules again if the program had not imported it: its
     * state is the interpreter's, and the program must find the modules it
     * finds unrecorded (docs/recorder-start.md). */
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    int had_gc = modules && PyDict_GetItemString(modules, "gc") != NULL;
    PyObject *gc = PyImport_ImportModule("gc");
    if (gc && !had_gc && PyDict_DelItemString(modules, "gc") < 0)
        PyErr_Clear();
    PyObject *all = gc ? PyObject_CallMethod(gc, "get_objects", NULL) : NULL;
    if (type && PyType_Check(type) && all && PyList_Check(all)) {
        Py_ssize_t n = PyList_GET_SIZE(all);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *o = PyList_GET_ITEM(all, i);
            /* Only started ones: a greenlet not started yet has no frames
             * from before the recording (bool(g) is "active": started and
             * not dead). */
            if (!PyObject_TypeCheck(o, (PyTypeObject *)type) || PyObject_IsTrue(o) != 1)
                continue;
            if (gr_ptrmap_put(&r->gls.preexisting, (uintptr_t)o, 0, 1) < 0)
                r->errors++;
        }
    }
    Py_XDECREF(all);
    Py_XDECREF(gc);
    Py_XDECREF(type);
    if (PyErr_Occurred())
        gr_swallow(r);
}
