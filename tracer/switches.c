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

#include "instr.h"

PyObject *gr_current_greenlet(gr_recorder *r)
{
    PyObject *g = NULL;
    if (r->gl_current)
        g = r->gl_current();
    else if (r->getcurrent)
        g = PyObject_CallNoArgs(r->getcurrent);
    if (!g && PyErr_Occurred())
        PyErr_Clear();
    return g;
}

PyObject *gr_greenlet_parent(gr_recorder *r, PyObject *g)
{
    if (!r->gl_parent)
        return PyObject_GetAttr(g, r->str_parent);
    PyObject *p = r->gl_parent(g);
    if (!p && !PyErr_Occurred())
        p = Py_NewRef(Py_None);
    return p;
}

void gr_switch_check_slow(gr_recorder *r, gr_thread *t, PyFrameObject *frame, int what)
{
    PyObject *g = gr_current_greenlet(r);
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

void gr_witness_verify(gr_recorder *r, gr_thread *t, PyObject *g)
{
    if (r->witness_ok && t->cur_g && g != t->cur_g &&
        gr_switch_witness(PyThreadState_GET()) == t->witness) {
        r->witness_ok = 0;
        r->errors++;
        /* Every thread asks greenlet at its next event from now on. */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r->threads); i++)
            ((gr_thread *)PyList_GET_ITEM(r->threads, i))->witness = GR_WITNESS_UNKNOWN;
    }
}

/* 1 if greenlet gid is dead now (freed, or its `dead` attribute is true). */
static int greenlet_dead(gr_recorder *r, uint32_t gid)
{
    gr_gl *e = gr_gl_of(r, gid);
    if (!e || !e->addr || !e->wr)
        return 1; /* freed */
    PyObject *g = gr_weakref_get(e->wr);
    if (!g)
        return 1;
    PyObject *d = PyObject_GetAttr(g, r->str_dead);
    int dead = d ? PyObject_IsTrue(d) == 1 : 0;
    Py_XDECREF(d);
    Py_DECREF(g);
    if (PyErr_Occurred())
        gr_swallow(r);
    return dead;
}

void gr_emit_dead(gr_recorder *r, uint32_t gid, uint64_t tid)
{
    if (r->reg) /* its sampler registry slot is free for another greenlet */
        gr_registry_release(r->reg, gid);
    gr_gl *e = gr_gl_of(r, gid);
    if (!e || (e->state & GR_GLS_DEAD))
        return; /* written already (its slot may be gone) */
    e->state |= GR_GLS_DEAD;
    uint64_t g[2] = {tid, gid};
    gr_emit(r, GR_DEAD, 2, g);
    gr_gl_settle(r, gid);
}

void gr_switch_seen(gr_recorder *r, gr_thread *t, PyObject *g, PyFrameObject *top, int at_mark,
                    int raising)
{
    GR_EXC_SAVE(saved);
    PyThreadState *ts = PyThreadState_Get();
    uint64_t t0 = r->reg ? gr_now_ns() : 0;
    uint32_t og = t->cur_gid;
    int announced = t->cb_pending && t->cb_target == g;
    /* greenlet reports a "throw" whenever the target resumes with an
     * exception (greenlet.throw, GreenletExit, a child's exception passed
     * to its parent); passively that is a target whose first event is
     * the C_EXCEPTION of the call it was suspended in. */
    int is_throw = announced ? t->cb_pending == 2 : raising;
    t->cb_pending = 0;
    t->cb_target = NULL;

    uint64_t flags = 0;
    uint32_t tg = gr_ptrmap_get(&r->greenlets, (uintptr_t)g, 0);
    if (!tg) {
        /* First sight.  A greenlet alive at start(), or the main greenlet
         * of its thread, had frames before recording began: they are its
         * seed.  A greenlet created while recording starts empty, so
         * every frame it has now should have been reported. */
        int pre = gr_ptrmap_get(&r->preexisting, (uintptr_t)g, 0) != 0;
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
    PyObject *parent = gr_greenlet_parent(r, g);
    uint32_t pg = 0;
    if (parent) {
        pg = gr_greenlet_id(r, t, parent);
        Py_DECREF(parent);
    } else {
        gr_swallow(r);
    }
    /* The origin can have finished only if its last event was a return
     * (a finished greenlet's run returned: a RETURN, or C_RETURN /
     * C_EXCEPTION when nothing of Python ran last); one whose last event
     * was a CALL or C_CALL (the c_call of switch, mostly) is suspended
     * inside that call.  Asking greenlet costs a weakref and an
     * attribute lookup per switch.  A death missed here (events lost
     * while the origin ran) is written when it is freed or at stop(). */
    int dead = og && og != tg && (at_mark || t->may_have_ended) && greenlet_dead(r, og);

    flags |= GR_SW_REAL_STACK;
    if (!announced)
        flags |= GR_SW_INFERRED;
    if (at_mark)
        flags |= GR_SW_AT_MARK;
    if (ts->c_profilefunc == gr_profile || ts->c_profilefunc == gr_profile_chain)
        flags |= GR_SW_PROFILE_OURS;
    if (ts->c_profilefunc)
        flags |= GR_SW_PROFILE_SET;
    if (dead)
        flags |= GR_SW_ORIGIN_DEAD;
    int tracing, use_tracing;
    if (at_mark) {
        /* Outside any callback: the state this greenlet really runs with. */
        tracing = gr_tstate_tracing(ts);
        use_tracing = gr_use_tracing_now(ts);
    } else {
        /* Inside the profile callback (tracing + 1): an event was
         * delivered, so the greenlet runs with tracing on; this is the
         * value CPython restores when the callback returns. */
        tracing = gr_tstate_tracing(ts) - 1;
        use_tracing = GR_HAVE_USE_TRACING ? gr_resume_use_tracing(ts) : -1;
    }
    if (use_tracing >= 0)
        flags |= GR_SW_USE_TRACING_KNOWN;
    uint64_t f[7] = {t->tid, og, tg, pg, flags, (uint64_t)(tracing < 0 ? 0 : tracing),
                     (uint64_t)(use_tracing < 0 ? 0 : use_tracing)};

    uint64_t wait = 0;
    int contended = 0;
    if (r->reg) {
        /* The sampler's registry: the origin is suspended at its top frame
         * (the address only; the sampler reads it without the GIL). */
        uintptr_t frame = 0;
        gr_gl *oe = og && !dead ? gr_gl_of(r, og) : NULL;
        PyObject *o = oe && oe->wr ? gr_weakref_get(oe->wr) : NULL;
        if (o) {
            PyObject *fr = PyObject_GetAttr(o, r->str_gr_frame);
            if (fr && PyFrame_Check(fr))
                frame = (uintptr_t)fr; /* kept alive by the suspended greenlet */
            if (!fr)
                gr_swallow(r);
            Py_XDECREF(fr);
            Py_DECREF(o);
        }
        contended = gr_registry_switch(r->reg, og, frame, dead, tg, pg, &wait);
    }
    uint64_t index = atomic_load_explicit(&r->nevents, memory_order_relaxed);
    gr_emit_stack(r, is_throw ? GR_THROW : GR_SWITCH, 7, f, 4, GR_SW_CUT, top, 0);
    uint64_t iv;
    uint32_t nframes, nstale;
    if (gr_instr_state(&iv, &nframes, &nstale, GR_STACK_CAP) == 0) {
        /* 3.12+: whether the target's frames will report events. */
        uint64_t h[5] = {t->tid, tg, iv, nframes, nstale};
        gr_emit(r, GR_INSTR, 5, h);
    }
    if (dead)
        gr_emit_dead(r, og, t->tid);
    if (og && og != tg) {
        gr_gl *oe = gr_gl_of(r, og);
        if (oe && oe->on == t)
            oe->on = NULL;
    }
    t->cur_g = g;
    t->cur_gid = tg;
    gr_gl *te = gr_gl_of(r, tg);
    if (te) {
        te->tid = t->tid;
        te->on = t;
    }
    if (r->reg)
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
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *all = gc ? PyObject_CallMethod(gc, "get_objects", NULL) : NULL;
    if (type && PyType_Check(type) && all && PyList_Check(all)) {
        Py_ssize_t n = PyList_GET_SIZE(all);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *o = PyList_GET_ITEM(all, i);
            /* Only started ones: a greenlet not started yet has no frames
             * from before the recording (bool(g) is "active": started and
             * not dead). */
            if (PyObject_TypeCheck(o, (PyTypeObject *)type) && PyObject_IsTrue(o) == 1 &&
                gr_ptrmap_put(&r->preexisting, (uintptr_t)o, 0, 1) < 0)
                r->errors++;
        }
    }
    Py_XDECREF(all);
    Py_XDECREF(gc);
    Py_XDECREF(type);
    if (PyErr_Occurred())
        gr_swallow(r);
}
