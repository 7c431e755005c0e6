/* recorder.c - identities (strings, code objects, C functions, greenlets)
 * and the records of one recording (docs/FORMAT.md §3-4). */
#include "recorder.h"
#include "threads.h"
#include "profile_slot.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

gr_recorder *gr_active;

void gr_swallow(gr_recorder *r)
{
    if (PyErr_Occurred())
        PyErr_Clear();
    r->errors++;
}

/* ---- side channel ---------------------------------------------------- */

void gr_times_entry(gr_recorder *r)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t d = (int64_t)(now.tv_sec - r->out.last.tv_sec) * 1000000000 + (now.tv_nsec - r->out.last.tv_nsec);
    r->out.last = now;
    gr_writer *tw = r->tw;
    gr_sampler *s = r->samp.sampler;
    /* The samples too when a 'T' chunk is due, a second has passed since
     * the last look, or a quarter of the ring is used (a run without
     * switches, or with records far apart: the ring must not fill while
     * the program records at all). */
    if (s && (__builtin_expect(tw->cap - tw->len < GR_VARINT_MAX, 0) || now.tv_sec != r->samp.drain_sec ||
              gr_handoff_used(&s->ho) > s->ho.cap / 4)) {
        r->samp.drain_sec = now.tv_sec;
        gr_side_drain(r);
    }
    uint8_t *p = gr_writer_reserve(tw, GR_VARINT_MAX);
    if (!p) {
        gr_writer_drop(tw);
        return;
    }
    gr_writer_commit(tw, gr_put_varint(p, d < 0 ? 0 : (uint64_t)d));
}

void gr_note_switch(gr_recorder *r, uint64_t index, uint64_t wait_ns, uint64_t callback_ns, int contended)
{
    gr_writer *w = r->samp.ww;
    if (w) {
        uint8_t *p = gr_writer_reserve(w, 4 * GR_VARINT_MAX);
        if (p) {
            p = gr_put_varint(p, index);
            p = gr_put_varint(p, wait_ns);
            p = gr_put_varint(p, callback_ns);
            p = gr_put_varint(p, (uint64_t)contended);
            gr_writer_commit(w, p);
            r->samp.nswitches++;
        } else {
            gr_writer_drop(w);
        }
    }
    if (r->samp.sampler && gr_sampler_pending(r->samp.sampler))
        gr_side_drain(r);
}

/* Room for n bytes in r->samp.scratch; 0 or -1. */
static int scratch_room(gr_recorder *r, size_t n)
{
    if (r->samp.scratch_cap >= n)
        return 0;
    size_t cap = r->samp.scratch_cap ? r->samp.scratch_cap : 4096;
    while (cap < n)
        cap *= 2;
    unsigned char *p = PyMem_RawRealloc(r->samp.scratch, cap);
    if (!p)
        return -1;
    r->samp.scratch = p;
    r->samp.scratch_cap = cap;
    return 0;
}

/* One sample from the sampler (see gr_sampler_drain): its header as it
 * is, its stacks with code addresses turned into ids, outermost first. */
static void put_sample(void *ctx, const unsigned char *p, size_t n)
{
    gr_recorder *r = ctx;
    gr_writer *w = r->samp.pw;
    const unsigned char *end = p + n;
    uint64_t h[10];
    for (int i = 0; i < 10; i++)
        if (gr_get_varint(&p, end, &h[i]) < 0)
            goto bad;
    /* Code ids take at most 5 bytes, addresses at least 1: 5 n bounds
     * the re-encoded sample. */
    if (scratch_room(r, 5 * n + 10 * GR_VARINT_MAX) < 0)
        goto bad;
    unsigned char *o = r->samp.scratch;
    for (int i = 0; i < 10; i++)
        o = gr_put_varint(o, h[i]);
    size_t head_len = (size_t)(o - r->samp.scratch);
    uint64_t codes[GR_SAMPLE_DEPTH];
    for (uint64_t j = 0; j < h[9]; j++) {
        uint64_t gid, depth;
        if (gr_get_varint(&p, end, &gid) < 0 || gr_get_varint(&p, end, &depth) < 0 || depth > GR_SAMPLE_DEPTH)
            goto bad;
        for (uint64_t i = 0; i < depth; i++)
            if (gr_get_varint(&p, end, &codes[i]) < 0)
                goto bad;
        o = gr_put_varint(o, gid);
        o = gr_put_varint(o, depth);
        for (uint64_t i = depth; i-- > 0;) /* outermost first */
            o = gr_put_varint(o, gr_ptrmap_get(&r->codes, (uintptr_t)codes[i], 0));
    }
    size_t len = (size_t)(o - r->samp.scratch);
    /* A sample the writer refuses (a failed write or the size cap
     * blocked the side channel) is counted in its dropped records, not as
     * an error of the recorder. */
    if (len <= w->cap) { /* whole into one chunk: the current one, or the next */
        gr_writer_append(w, r->samp.scratch, len);
        return;
    }
    /* Larger than a chunk: the header, then each stack whole (FORMAT §5:
     * the stacks continue in the next 'P' chunk, written right after). */
    if (gr_writer_append(w, r->samp.scratch, head_len) < 0)
        return;
    const unsigned char *q = r->samp.scratch + head_len, *qe = r->samp.scratch + len;
    while (q < qe) {
        const unsigned char *st = q;
        uint64_t gid = 0, depth = 0, c;
        gr_get_varint(&q, qe, &gid);
        gr_get_varint(&q, qe, &depth);
        for (uint64_t i = 0; i < depth; i++)
            gr_get_varint(&q, qe, &c);
        if (gr_writer_append(w, st, (size_t)(q - st)) < 0)
            return;
    }
    return;
bad: /* no memory for the scratch buffer (or a bad encoding: cannot happen) */
    r->errors++;
}

void gr_side_drain(gr_recorder *r)
{
    if (r->samp.sampler && r->samp.pw)
        gr_sampler_drain(r->samp.sampler, put_sample, r);
}

/* ---- records --------------------------------------------------------- */

void gr_emit(gr_recorder *r, int tag, int n, const uint64_t *fields)
{
    if (tag == GR_HOOK || tag == GR_HOOK_PROF) /* a hook changed: no continued switch across it */
        r->sw.hook_stamp = ++r->sw.stamp;
    gr_writer *w = tag >= GR_FIRST_INDEXED ? r->w : r->out.dw;
    uint8_t *p = gr_writer_reserve(w, 1 + (size_t)n * GR_VARINT_MAX);
    if (!p) {
        gr_writer_drop(w);
        return;
    }
    *p++ = (uint8_t)tag;
    for (int i = 0; i < n; i++)
        p = gr_put_varint(p, fields[i]);
    gr_writer_commit(w, p);
    if (tag >= GR_FIRST_INDEXED)
        gr_count_record(r);
}

/* Collect up to GR_STACK_CAP code ids from `top` outwards into ids[],
 * innermost first, leaving out greenreplay's own frames (gr_code_ours) and
 * frames whose call the profile function has not been given yet
 * (gr_frame_call_pending: a signal handler run at a function's first
 * instruction, 3.13+; its call event follows once the handler returns, so
 * the frame is not one the profiler missed).  Returns the count; *cut = 1
 * if frames were left out for the cap; *top_ours = 1 if `top` itself is
 * ours. */
static int collect_stack(gr_recorder *r, PyFrameObject *top, uint32_t *ids, int *cut, int *top_ours)
{
    int n = 0;
    *cut = 0;
    *top_ours = 0;
    if (!top)
        return 0;
    PyFrameObject *f = top;
    Py_INCREF(f);
    while (f) {
        if (n == GR_STACK_CAP) {
            *cut = 1;
            Py_DECREF(f);
            break;
        }
        PyCodeObject *co = gr_frame_code(f);
        uint32_t id = gr_code_id(r, co);
        if (gr_code_ours(r, id)) {
            if (f == top)
                *top_ours = 1;
        } else if (!gr_frame_call_pending(f, co)) {
            ids[n++] = id;
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    return n;
}

void gr_emit_stack(gr_recorder *r, int tag, int n, uint64_t *fields, int flag_field,
                   uint64_t cut_bit, PyFrameObject *top, uint32_t extra_c)
{
    uint32_t ids[GR_STACK_CAP + 1];
    int cut = 0, top_ours = 0;
    int depth = collect_stack(r, top, ids, &cut, &top_ours);
    if (top_ours)
        extra_c = 0; /* a C function greenreplay's own frame called */
    if (cut)
        fields[flag_field] |= cut_bit;
    /* collect_stack may have defined codes: reserve only now. */
    size_t need = 1 + (size_t)(n + 2 + depth) * GR_VARINT_MAX;
    uint8_t *p = gr_writer_reserve(r->w, need);
    if (!p) {
        gr_writer_drop(r->w);
        return;
    }
    p = gr_writer_head(r->w, p, tag, n, fields); /* SWITCH/THROW: compact (FORMAT §4.1) */
    p = gr_put_varint(p, (uint64_t)depth + (extra_c ? 1 : 0));
    for (int i = depth - 1; i >= 0; i--)
        p = gr_put_varint(p, ids[i]);
    if (extra_c)
        p = gr_put_varint(p, extra_c);
    gr_writer_commit(r->w, p);
    gr_count_record(r);
}

/* ---- strings ---------------------------------------------------------- */

/* A string of more bytes than this is cut: a definition must fit in one
 * chunk (FORMAT §2: a record never spans two), with room to spare for the
 * records around it; under --max-size 8K chunks are 1 KiB. */
static size_t string_room(const gr_writer *w)
{
    return w->cap / 2 > 64 ? w->cap / 2 : 64;
}

/* Write the STRING definition of `len` bytes at utf8, cut to the writer's
 * room with a marker "...[N bytes cut]" (counted in r->out.replaced). */
static void define_string(gr_recorder *r, const char *utf8, size_t len)
{
    char mark[48];
    size_t keep = len, mlen = 0;
    size_t room = string_room(r->out.dw);
    if (len > room) {
        mlen = (size_t)snprintf(mark, sizeof mark, "...[%zu bytes cut]", len);
        keep = room - mlen;
        while (keep > 0 && ((uint8_t)utf8[keep] & 0xC0) == 0x80)
            keep--; /* cut on a character boundary */
        r->out.replaced++;
    }
    size_t need = 1 + GR_VARINT_MAX + keep + mlen;
    uint8_t *p = gr_writer_reserve(r->out.dw, need);
    if (!p) {
        gr_writer_drop(r->out.dw);
        return;
    }
    *p++ = GR_STRING;
    p = gr_put_varint(p, (uint64_t)(keep + mlen));
    memcpy(p, utf8, keep);
    memcpy(p + keep, mark, mlen);
    gr_writer_commit(r->out.dw, p + keep + mlen);
}

static uint32_t string_id_obj(gr_recorder *r, PyObject *s)
{
    PyObject *v = PyDict_GetItemWithError(r->ids.strings, s);
    if (v)
        return (uint32_t)PyLong_AsUnsignedLong(v);
    if (PyErr_Occurred())
        goto fail;
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "greenreplay: a string was expected");
        goto fail;
    }
    Py_ssize_t len;
    PyObject *enc = NULL;
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &len);
    if (!utf8) {
        /* Lone surrogates (a non-UTF-8 file name decoded with
         * surrogateescape, a name made by the program): kept readable as
         * \udcXX, and counted. */
        PyErr_Clear();
        enc = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
        if (!enc)
            goto fail;
        utf8 = PyBytes_AS_STRING(enc);
        len = PyBytes_GET_SIZE(enc);
        r->out.replaced++;
    }
    uint32_t id = r->ids.nstrings + 1;
    PyObject *idobj = PyLong_FromUnsignedLong(id);
    if (!idobj || PyDict_SetItem(r->ids.strings, s, idobj) < 0) {
        Py_XDECREF(idobj);
        Py_XDECREF(enc);
        goto fail;
    }
    Py_DECREF(idobj);
    r->ids.nstrings = id;
    define_string(r, utf8, (size_t)len);
    Py_XDECREF(enc);
    return id;
fail:
    gr_swallow(r);
    return 0;
}

uint32_t gr_string_id_obj(gr_recorder *r, PyObject *s)
{
    return string_id_obj(r, s);
}

uint32_t gr_string_id(gr_recorder *r, const char *s)
{
    PyObject *o = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
    if (!o) {
        gr_swallow(r);
        return 0;
    }
    uint32_t id = string_id_obj(r, o);
    Py_DECREF(o);
    return id;
}

/* ---- code identities -------------------------------------------------- */

/* Define (or find) the identity (kind, qualname, file, line); returns its
 * code id or 0. */
static uint32_t identity_id(gr_recorder *r, int kind, PyObject *qualname, PyObject *file, long line)
{
    PyObject *key = Py_BuildValue("(iOOl)", kind, qualname, file, line);
    if (!key)
        goto fail;
    PyObject *v = PyDict_GetItemWithError(r->ids.identities, key);
    if (v) {
        Py_DECREF(key);
        return (uint32_t)PyLong_AsUnsignedLong(v);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        goto fail;
    }
    uint32_t qs = string_id_obj(r, qualname);
    uint32_t fs = kind == GR_CODE_PY ? string_id_obj(r, file) : 0;
    uint32_t id = r->ncodes + 1;
    PyObject *idobj = PyLong_FromUnsignedLong(id);
    if (!idobj || PyDict_SetItem(r->ids.identities, key, idobj) < 0) {
        Py_XDECREF(idobj);
        Py_DECREF(key);
        goto fail;
    }
    Py_DECREF(idobj);
    Py_DECREF(key);
    r->ncodes = id;
    /* Code of greenlet, gevent or eventlet: a thread running it uses
     * greenlet (gr_thread_touch). */
    uint8_t *gl = PyMem_Realloc(r->code_gl, (size_t)id + 1);
    if (gl) {
        r->code_gl = gl;
        Py_ssize_t qn = 0, fn = 0;
        const char *q = PyUnicode_AsUTF8AndSize(qualname, &qn);
        const char *fl = file != Py_None && PyUnicode_Check(file) ? PyUnicode_AsUTF8AndSize(file, &fn) : NULL;
        int hit = 0;
        static const char *const words[] = {"greenlet", "gevent", "eventlet"};
        for (int k = 0; k < 3 && !hit; k++)
            hit = (q && strstr(q, words[k])) || (fl && strstr(fl, words[k]));
        gl[id] = (uint8_t)hit;
        PyErr_Clear();
    }
    uint64_t f[4] = {(uint64_t)kind, qs, fs, (uint64_t)(line < 0 ? 0 : line)};
    gr_emit(r, GR_CODE, 4, f);
    return id;
fail:
    gr_swallow(r);
    return 0;
}

/* co_filename rewritten by the recording's path rules, new reference.
 * *keep_line is cleared when the rule says line numbers under its prefix
 * are not part of the identity. */
static PyObject *rewrite_path(gr_recorder *r, PyObject *filename, int *keep_line)
{
    *keep_line = 1;
    /* Bytes as the file system has them: a non-UTF-8 directory (lib\xe9,
     * decoded with surrogateescape) matches its rule too.  The part after
     * the prefix is kept whole, NULs included. */
    PyObject *b = PyUnicode_Check(filename)
                      ? PyUnicode_AsEncodedString(filename, "utf-8", "surrogateescape")
                      : NULL;
    if (!b) {
        PyErr_Clear(); /* not a str, or surrogates of another kind */
        Py_INCREF(filename);
        return filename;
    }
    const char *s = PyBytes_AS_STRING(b);
    size_t n = (size_t)PyBytes_GET_SIZE(b);
    for (size_t i = 0; i < r->out.nrules; i++) {
        const gr_path_rule *rule = &r->out.rules[i];
        if (n >= rule->prefix_len && memcmp(s, rule->prefix, rule->prefix_len) == 0) {
            *keep_line = rule->keep_line;
            size_t rn = strlen(rule->replacement), tn = n - rule->prefix_len;
            char *buf = PyMem_Malloc(rn + tn + 1);
            PyObject *out = NULL;
            if (buf) {
                memcpy(buf, rule->replacement, rn);
                memcpy(buf + rn, s + rule->prefix_len, tn);
                out = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)(rn + tn), "surrogateescape");
                PyMem_Free(buf);
            } else {
                PyErr_NoMemory();
            }
            Py_DECREF(b);
            return out;
        }
    }
    Py_DECREF(b);
    Py_INCREF(filename);
    return filename;
}

/* Note code id `id` as greenreplay's own (recorder.h, gr_code_ours). */
static int mark_ours(gr_recorder *r, uint32_t id)
{
    if (id >= r->ours_cap) {
        uint32_t cap = r->ours_cap ? r->ours_cap : 64;
        while (cap <= id)
            cap *= 2;
        unsigned char *o = PyMem_Realloc(r->ours, cap);
        if (!o) {
            PyErr_NoMemory();
            return -1;
        }
        memset(o + r->ours_cap, 0, cap - r->ours_cap);
        r->ours = o;
        r->ours_cap = cap;
    }
    r->ours[id] = 1;
    return 0;
}

static uint32_t code_id_slow(gr_recorder *r, PyCodeObject *co)
{
    int keep_line;
    PyObject *file = rewrite_path(r, co->co_filename, &keep_line);
    if (!file) {
        gr_swallow(r);
        return 0;
    }
    uint32_t id = identity_id(r, GR_CODE_PY, gr_code_qualname(co), file,
                              keep_line ? co->co_firstlineno : 0);
    Py_DECREF(file);
    /* The code of a generator or coroutine is said once (META generator):
     * a throw() into one that delegates (yield from, await) reaches the
     * inner one without an event of the outer frame, which the real stack
     * still holds (CPython issue 73776); the checker must know which
     * frames can be in that state. */
    if (id && r->code_gl && id <= r->ncodes && !(r->code_gl[id] & GR_CODE_GENERATOR) &&
        (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR |
                         CO_ITERABLE_COROUTINE))) {
        char v[16];
        snprintf(v, sizeof v, "%" PRIu32, id);
        r->code_gl[id] |= GR_CODE_GENERATOR;
        uint64_t f[2] = {gr_string_id(r, "generator"), gr_string_id(r, v)};
        gr_emit(r, GR_META, 2, f);
    }
    /* The one rule without line numbers is greenreplay's own package
     * (greenreplay/__init__.py, _path_rules): its code is ours. */
    if (id && !keep_line && r->out.hide_ours && mark_ours(r, id) < 0)
        gr_swallow(r);
    /* Keep the code object alive so its address is not reused by another
     * code object while this recording maps it. */
    if (id && PyList_Append(r->ids.keep, (PyObject *)co) == 0 &&
        gr_ptrmap_put(&r->codes, (uintptr_t)co, 0, id) == 0)
        return id;
    if (id)
        gr_swallow(r);
    return id;
}

uint32_t gr_code_id_slow(gr_recorder *r, PyCodeObject *co)
{
    GR_EXC_SAVE(saved);
    uint32_t id = code_id_slow(r, co);
    GR_EXC_RESTORE(saved);
    return id;
}

/* The type among tp's MRO whose tp_methods holds `ml`: the type that
 * defines a C method (a Python subclass only inherits it).  NULL when none
 * does (a method added otherwise). */
static PyTypeObject *defining_type(PyTypeObject *tp, PyMethodDef *ml)
{
    PyObject *mro = tp->tp_mro;
    Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        for (PyMethodDef *m = t->tp_methods; m && m->ml_name; m++)
            if (m == ml)
                return t;
    }
    return NULL;
}

static uint32_t cfunc_id_slow(gr_recorder *r, PyObject *fn)
{
    uintptr_t a, b;
    gr_cfunc_key(fn, &a, &b);
    PyObject *name, *keep = NULL;
    if (!PyCFunction_Check(fn)) {
        name = PyUnicode_FromString(Py_TYPE(fn)->tp_name);
        keep = (PyObject *)Py_TYPE(fn); /* its address is the key */
    } else {
        PyCFunctionObject *f = (PyCFunctionObject *)fn;
        if (b) {
            /* A C method is named by the type that defines it, not by the
             * instance's type: the name is then the same for every
             * subclass, and a Python subclass is not kept alive by the
             * recording (greenlet's own leak checks count types). */
            PyTypeObject *self_type = Py_TYPE(f->m_self);
            PyTypeObject *def = defining_type(self_type, f->m_ml);
            PyTypeObject *owner = def ? def : self_type;
            name = PyUnicode_FromFormat("%s.%s", owner->tp_name, f->m_ml->ml_name);
            /* The key holds the instance's type: if that type is freed and
             * another takes its address, the key still maps to the same
             * defining type's method (m_ml is the definer's).  Only a
             * method found in no MRO needs its type kept. */
            if (!def && (self_type->tp_flags & Py_TPFLAGS_HEAPTYPE))
                keep = (PyObject *)self_type;
        } else if (f->m_module && PyUnicode_Check(f->m_module))
            name = PyUnicode_FromFormat("%U.%s", f->m_module, f->m_ml->ml_name);
        else
            name = PyUnicode_FromString(f->m_ml->ml_name);
    }
    if (!name) {
        gr_swallow(r);
        return 0;
    }
    uint32_t id = identity_id(r, GR_CODE_C, name, Py_None, 0);
    Py_DECREF(name);
    if (!id)
        return 0;
    if (keep && !(((PyTypeObject *)keep)->tp_flags & Py_TPFLAGS_HEAPTYPE))
        keep = NULL; /* static types never die */
    if ((keep && PyList_Append(r->ids.keep, keep) < 0) || gr_ptrmap_put(&r->codes, a, b, id) < 0)
        gr_swallow(r);
    return id;
}

uint32_t gr_cfunc_id_slow(gr_recorder *r, PyObject *fn)
{
    GR_EXC_SAVE(saved);
    uint32_t id = cfunc_id_slow(r, fn);
    /* The thread start functions, by their PyMethodDef: any module object
     * of _thread shares the id (gr_cfunc_key of a module function). */
    if (id && PyCFunction_Check(fn)) {
        for (int i = 0; i < 2; i++)
            if (r->thread_start[i] && PyCFunction_Check(r->thread_start[i]) &&
                ((PyCFunctionObject *)r->thread_start[i])->m_ml == ((PyCFunctionObject *)fn)->m_ml) {
                r->follow.thread_start_id[i] = id;
                gr_cf_forget(r);
            }
    }
    /* Context.run (switches.c, context_step), by its key. */
    if (id && r->sw.ctx_run) {
        uintptr_t a, b;
        gr_cfunc_key(fn, &a, &b);
        if (a == (uintptr_t)r->sw.ctx_run && b == (uintptr_t)&PyContext_Type)
        {
            r->sw.ctx_run_id = id;
            gr_sw_refresh(r);
        }
    }
    GR_EXC_RESTORE(saved);
    return id;
}

/* ---- greenlets -------------------------------------------------------- */

/* A free slot of the greenlet table (growing it when none is free), or
 * -1 on failure. */
static int64_t gl_slot(gr_recorder *r)
{
    if (r->gls.gl_nfree)
        return r->gls.gl_free[--r->gls.gl_nfree];
    if (r->gls.gl_used == r->gls.gl_cap) {
        uint32_t cap = r->gls.gl_cap ? 2 * r->gls.gl_cap : 64;
        gr_gl *gl = PyMem_Realloc(r->gls.gl, cap * sizeof *gl);
        if (!gl)
            return -1;
        r->gls.gl = gl;
        r->gls.gl_cap = cap;
    }
    return r->gls.gl_used++;
}

/* Give greenlet g the next gid and remember its address until it is
 * freed (the weakref callback r->gls.forget removes it).  0 on failure. */
static uint32_t register_greenlet(gr_recorder *r, PyObject *g)
{
    uint32_t gid = r->ids.ngreenlets + 1;
    int64_t slot = gl_slot(r);
    if (slot < 0)
        goto fail;
    PyObject *wr = PyWeakref_NewRef(g, r->gls.forget);
    if (!wr) {
        r->gls.gl_free[r->gls.gl_nfree++] = (uint32_t)slot; /* room: it came from there or the end */
        goto fail;
    }
    if (gr_ptrmap_put(&r->ids.greenlets, (uintptr_t)g, 0, gid) < 0 ||
        gr_ptrmap_put(&r->ids.weakrefs, (uintptr_t)wr, 0, gid) < 0 ||
        gr_ptrmap_put(&r->gls.gl_index, GR_GL_KEY(gid), 0, (uint32_t)slot + 1) < 0) {
        Py_DECREF(wr);
        goto fail;
    }
    gr_gl *e = &r->gls.gl[slot];
    memset(e, 0, sizeof *e);
    e->addr = (uintptr_t)g;
    e->wr = wr;
    e->gid = gid;
    r->ids.ngreenlets = gid;
    return gid;
fail:
    gr_swallow(r);
    return 0;
}

void gr_gl_settle(gr_recorder *r, uint32_t gid)
{
    uint32_t s = gid ? gr_ptrmap_get(&r->gls.gl_index, GR_GL_KEY(gid), 0) : 0;
    if (!s)
        return;
    gr_gl *e = &r->gls.gl[s - 1];
    if (e->addr || !(e->state & (GR_GLS_DEAD | GR_GLS_MAIN)))
        return;
    if (r->gls.gl_nfree == r->gls.gl_free_cap) {
        uint32_t cap = r->gls.gl_free_cap ? 2 * r->gls.gl_free_cap : 64;
        uint32_t *f = PyMem_Realloc(r->gls.gl_free, cap * sizeof *f);
        if (!f)
            return; /* the slot stays taken */
        r->gls.gl_free = f;
        r->gls.gl_free_cap = cap;
    }
    gr_ptrmap_del(&r->gls.gl_index, GR_GL_KEY(gid), 0);
    r->gls.gl_free[r->gls.gl_nfree++] = s - 1;
}

/* Whether thread tid of the recording has ended: its gr_thread was swept
 * (its greenlets are GR_GLS_GONE), is marked ended, or its thread state is
 * no longer in the interpreter.  O(threads tracked + live threads). */
static int thread_ended(gr_recorder *r, const gr_gl *e)
{
    if (e->state & GR_GLS_GONE)
        return 1;
    gr_thread *owner = NULL;
    Py_ssize_t n = PyList_GET_SIZE(r->follow.threads);
    for (Py_ssize_t i = 0; i < n && !owner; i++) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (t->tid == e->tid)
            owner = t;
    }
    if (!owner)
        return 0; /* unknown: keep it for stop() */
    return !gr_thread_alive(owner);
}

void gr_greenlet_forget(gr_recorder *r, PyObject *wr)
{
    uint32_t gid = gr_ptrmap_get(&r->ids.weakrefs, (uintptr_t)wr, 0);
    if (!gid)
        return;
    gr_ptrmap_del(&r->ids.weakrefs, (uintptr_t)wr, 0);
    r->gls.gl_frees++; /* its address may name another greenlet now */
    if (r->samp.reg) /* freed: its sampler registry slot is free for another greenlet */
        gr_registry_release(r->samp.reg, gid);
    gr_gl *e = gr_gl_of(r, gid);
    if (!e)
        return;
    if (gr_ptrmap_get(&r->ids.greenlets, e->addr, 0) == gid)
        gr_ptrmap_del(&r->ids.greenlets, e->addr, 0);
    /* The thread whose last seen greenlet this was must not take a new
     * object at the same address for it (passive switch detection
     * compares addresses). */
    if (e->on && (uintptr_t)e->on->cur_g == e->addr) {
        e->on->cur_g = NULL;
        e->on->witness = GR_WITNESS_UNKNOWN;
    }
    e->on = NULL;
    e->addr = 0;
    /* The caller holds its own reference to the weakref during this
     * callback. */
    Py_CLEAR(e->wr);
    /* Freed before it finished, after its thread ended (abandoned):
     * stop() writes nothing for it (no DEAD: its thread cannot run it
     * again), so its slot is free now; else a program that leaves
     * thousands of suspended greenlets in each ended thread grows the
     * recorder's memory until stop() (greenlet's own test
     * test_untracked_memory_doesnt_increase_unfinished_thread_dealloc_in_main). */
    if (!(e->state & (GR_GLS_DEAD | GR_GLS_MAIN)) && e->tid && thread_ended(r, e)) {
        e->state |= GR_GLS_DEAD;
        /* 8 bytes kept per such greenlet, for stop()'s STACK record */
        if (r->gls.nfreed_abandoned == r->gls.cap_freed_abandoned) {
            size_t cap = r->gls.cap_freed_abandoned ? 2 * r->gls.cap_freed_abandoned : 64;
            uint64_t *a = PyMem_Realloc(r->gls.freed_abandoned, cap * sizeof *a);
            if (a) {
                r->gls.freed_abandoned = a;
                r->gls.cap_freed_abandoned = cap;
            }
        }
        if (r->gls.nfreed_abandoned < r->gls.cap_freed_abandoned)
            r->gls.freed_abandoned[r->gls.nfreed_abandoned++] = (uint64_t)e->tid << 32 | gid;
        else
            gr_swallow(r);
    }
    gr_gl_settle(r, gid);
}

static uint32_t define_suspended(gr_recorder *r, gr_thread *t, PyObject *g);

/* String id of a greenlet's name for the sampler's registry: the
 * qualified name of its run callable, else its type's name. */
static uint32_t greenlet_name(gr_recorder *r, PyObject *g)
{
    PyObject *run = PyObject_GetAttrString(g, "run");
    PyObject *name = run ? PyObject_GetAttrString(run, "__qualname__") : NULL;
    Py_XDECREF(run);
    PyErr_Clear();
    uint32_t id;
    if (name && PyUnicode_Check(name))
        id = string_id_obj(r, name);
    else
        id = gr_string_id(r, Py_TYPE(g)->tp_name);
    Py_XDECREF(name);
    return id;
}

uint32_t gr_greenlet_define(gr_recorder *r, gr_thread *t, PyObject *g, PyFrameObject *top,
                            uint32_t extra_c, uint64_t flags)
{
    uint32_t gid = gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)g, 0);
    int fresh = !gid;
    if (!gid && !(gid = register_greenlet(r, g)))
        return 0;
    /* The parent gets its gid now but its GREENLET record after this one,
     * so that the record after THREAD is the running greenlet's
     * (docs/FORMAT.md §4). */
    PyObject *parent = gr_greenlet_parent(r, g);
    uint32_t pgid = 0;
    int define_parent = 0;
    if (!parent) {
        gr_swallow(r);
    } else if (parent != Py_None) {
        pgid = gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)parent, 0);
        if (!pgid && (pgid = register_greenlet(r, parent)))
            define_parent = 1;
    }
    if (!pgid)
        flags |= GR_GL_MAIN;
    gr_gl *e = gr_gl_of(r, gid);
    if (e && (flags & GR_GL_MAIN))
        e->state |= GR_GLS_MAIN;
    if (e && fresh && t && t->kept)
        e->cbits = ~(uint64_t)0; /* C calls open at start() (profile_slot.c, gr_profile_keep) */
    if (e && t && !e->tid)
        e->tid = t->tid;
    uint64_t f[4] = {t ? t->tid : 0, gid, pgid, flags};
    gr_emit_stack(r, GR_GREENLET, 4, f, 3, GR_GL_CUT, top, extra_c);
    if (r->samp.reg)
        gr_registry_add(r->samp.reg, gid, pgid, greenlet_name(r, g));
    if (define_parent)
        define_suspended(r, t, parent);
    Py_XDECREF(parent);
    return gid;
}

/* GREENLET record of a greenlet that is not running: if it has frames they
 * are in gr_frame, and it is suspended inside a C call (switch) that we did
 * not see.  Returns its gid. */
static uint32_t define_suspended(gr_recorder *r, gr_thread *t, PyObject *g)
{
    PyObject *fr = PyObject_GetAttr(g, r->gl_api.str_gr_frame);
    if (!fr)
        gr_swallow(r);
    PyFrameObject *top = fr && PyFrame_Check(fr) ? (PyFrameObject *)fr : NULL;
    uint32_t gid = gr_greenlet_define(r, t, g, top, 0,
                                      top ? GR_GL_SUSPENDED | (r->gl_api.gl_chain_cut ? GR_GL_CUT : 0) : 0);
    Py_XDECREF(fr);
    return gid;
}

uint32_t gr_greenlet_id(gr_recorder *r, gr_thread *t, PyObject *g)
{
    if (!g || g == Py_None)
        return 0;
    uint32_t gid = gr_ptrmap_get(&r->ids.greenlets, (uintptr_t)g, 0);
    return gid ? gid : define_suspended(r, t, g);
}

/* ---- threads ---------------------------------------------------------- */

/* A gid for the main greenlet of thread t, which the recorder does not
 * ask greenlet for yet (gr_thread_touch binds it to the object later). */
static uint32_t register_pending_main(gr_recorder *r, gr_thread *t)
{
    uint32_t gid = r->ids.ngreenlets + 1;
    int64_t slot = gl_slot(r);
    if (slot < 0 || gr_ptrmap_put(&r->gls.gl_index, GR_GL_KEY(gid), 0, (uint32_t)slot + 1) < 0) {
        gr_swallow(r);
        return 0;
    }
    gr_gl *e = &r->gls.gl[slot];
    memset(e, 0, sizeof *e);
    e->gid = gid;
    e->tid = t->tid;
    e->state = GR_GLS_MAIN;
    e->on = t;
    e->cbits = t->kept ? ~(uint64_t)0 : 0; /* profile_slot.c, gr_profile_keep */
    r->ids.ngreenlets = gid;
    return gid;
}

/* Callback mode: chain in front of any callback installed before us on
 * thread t (the calling thread), whose greenlet is known.  Passive mode
 * installs none (switches.c). */
static void install_callback(gr_recorder *r, gr_thread *t)
{
    if (!r->gl_settrace || !r->sw.callback_mode || t->cb.gl_settrace)
        return;
    PyObject *prev = PyObject_CallOneArg(r->gl_settrace, (PyObject *)t);
    if (!prev) {
        gr_swallow(r);
        return;
    }
    if (prev == Py_None)
        Py_DECREF(prev);
    else
        t->cb.prev = prev;
    Py_INCREF(r->gl_settrace);
    t->cb.gl_settrace = r->gl_settrace;
}

void gr_thread_touch(gr_recorder *r, gr_thread *t)
{
    if (!r->greenlet_mod)
        return; /* greenlet not loaded yet (gl_load.c): no greenlet to ask */
    t->gl_pending = 0;
    gr_thread_path(r, t);
    PyObject *g = gr_current_greenlet(r);
    if (!g)
        return;
    gr_gl *e = gr_gl_of(r, t->cur_gid);
    PyObject *wr = e && !e->addr ? PyWeakref_NewRef(g, r->gls.forget) : NULL;
    if (wr && gr_ptrmap_put(&r->ids.greenlets, (uintptr_t)g, 0, t->cur_gid) == 0 &&
        gr_ptrmap_put(&r->ids.weakrefs, (uintptr_t)wr, 0, t->cur_gid) == 0) {
        /* Before any greenlet API call the thread runs in its main
         * greenlet: this is the one its placeholder gid stands for. */
        e = gr_gl_of(r, t->cur_gid);
        e->addr = (uintptr_t)g;
        e->wr = wr;
        t->cur_g = g;
        if (r->samp.reg)
            gr_registry_add(r->samp.reg, t->cur_gid, 0, gr_string_id(r, "main"));
        install_callback(r, t);
        gr_note_greenlet_callback(r, t, 1);
    } else {
        Py_XDECREF(wr);
        if (PyErr_Occurred())
            gr_swallow(r);
        /* unknown: the next event compares with NULL and sees a switch */
    }
    Py_DECREF(g);
}

void gr_thread_first_sight(gr_recorder *r, gr_thread *t, PyFrameObject *top, uint32_t extra_c,
                           int defer)
{
    t->tid = ++r->ids.nthreads;
    gr_thread_path(r, t);
    uint64_t f[1] = {t->tid};
    gr_emit(r, GR_THREAD, 1, f);

    if ((defer && r->greenlet_mod && !r->sw.callback_mode) || r->gl_api.lazy) {
        /* Passive mode does not ask greenlet about a thread before the
         * thread uses greenlet itself: asking creates greenlet's state for
         * the thread (a main greenlet), which changes what greenlet does
         * when the thread ends (greenlet's own leak tests see it).  Both
         * modes wait while the program has not imported greenlet
         * (gl_load.c). */
        t->cur_gid = register_pending_main(r, t);
        t->cur_g = NULL;
        t->gl_pending = t->cur_gid != 0;
        gr_thread_path(r, t);
        uint64_t g[4] = {t->tid, t->cur_gid, 0, GR_GL_MAIN};
        gr_emit_stack(r, GR_GREENLET, 4, g, 3, GR_GL_CUT, top, extra_c);
        if (t->at_start) /* its profile function set before start() */
            gr_profile_kept_hook(r, t);
        return;
    }

    PyObject *cur = NULL;
    if (r->gl_api.getcurrent) {
        cur = PyObject_CallNoArgs(r->gl_api.getcurrent);
        if (!cur)
            gr_swallow(r);
    }
    if (cur) {
        t->cur_gid = gr_greenlet_define(r, t, cur, top, extra_c, 0);
    } else {
        t->cur_gid = 0;
        uint64_t g[4] = {t->tid, 0, 0, GR_GL_MAIN};
        gr_emit_stack(r, GR_GREENLET, 4, g, 3, GR_GL_CUT, top, extra_c);
    }

    if (cur) {
        t->cur_g = cur; /* compared by address only */
        gr_gl *e = gr_gl_of(r, t->cur_gid);
        if (e)
            e->on = t;
    }
    if (cur)
        install_callback(r, t);
    /* The program's greenlet callback on a thread seen after start() (the
     * starting thread, tid 1, writes it after its START record). */
    if (cur && t->tid != 1)
        gr_note_greenlet_callback(r, t, 1);
    /* Its profile function set before start() (the starting thread's HOOK
     * follows its START record). */
    if (t->at_start)
        gr_profile_kept_hook(r, t);
    Py_XDECREF(cur);
}

void gr_put_back_callback(gr_thread *t)
{
    if (!t->cb.gl_settrace)
        return;
    PyObject *gettrace = PyObject_GetAttrString(gr_active && gr_active->greenlet_mod ?
                                                gr_active->greenlet_mod : Py_None, "gettrace");
    PyObject *active = NULL;
    if (!gettrace) {
        PyErr_Clear();
        PyObject *mod = PyImport_ImportModule("greenlet");
        gettrace = mod ? PyObject_GetAttrString(mod, "gettrace") : NULL;
        Py_XDECREF(mod);
    }
    if (gettrace)
        active = PyObject_CallNoArgs(gettrace);
    Py_XDECREF(gettrace);
    if (active == (PyObject *)t) {
        /* Ours is active: put back exactly what the program had. */
        PyObject *was = PyObject_CallOneArg(t->cb.gl_settrace, t->cb.prev ? t->cb.prev : Py_None);
        Py_XDECREF(was);
    }
    /* Otherwise the program replaced ours: leave its callback in place. */
    Py_XDECREF(active);
    PyErr_Clear();
    Py_CLEAR(t->cb.gl_settrace);
}

/* The callable a functools.partial object calls (new reference), or NULL
 * when tp is not functools.partial: read through the C type's own `func`
 * member descriptor, so no code of the program runs (a subclass's
 * __getattribute__ or property is not consulted). */
static PyObject *partial_func(PyTypeObject *tp, PyObject *obj)
{
    if (strcmp(tp->tp_name, "functools.partial") != 0 || !tp->tp_dict)
        return NULL;
    PyObject *desc = PyDict_GetItemString(tp->tp_dict, "func");
    if (!desc || !Py_IS_TYPE(desc, &PyMemberDescr_Type) || !Py_TYPE(desc)->tp_descr_get)
        return NULL;
    PyObject *fn = Py_TYPE(desc)->tp_descr_get(desc, obj, (PyObject *)tp);
    if (!fn)
        PyErr_Clear();
    return fn;
}

/* How deep callback_id follows callables that call another (bound
 * methods, functools.partial): a partial of a partial of ... */
#define GR_CALLBACK_DEPTH 16

/* The code id of what greenlet runs when it calls trace callback cb: the
 * code of a Python function, of a bound method's function, of the
 * __call__ defined in Python by the class of a callable object (found in
 * the class dicts along its MRO), or of the callable a functools.partial
 * wraps (followed through nested partials and bound methods): the frame
 * greenlet's call of cb runs first, which the checker looks for (§7,
 * callback_guard and blind_spot).  A callback that runs no Python code of
 * its own (a builtin, a bound C method, a partial of one, an object of a
 * C type) gets the identity of that C callable, named as its C_CALL
 * events would name it (e.g. `dict.setdefault`, `builtins.print`, or the
 * type's name).  No code of the program runs.  0 on failure (swallowed). */
static uint32_t callback_id(gr_recorder *r, PyObject *cb)
{
    uint32_t id = 0;
    Py_INCREF(cb);
    for (int hop = 0; hop < GR_CALLBACK_DEPTH; hop++) {
        PyObject *next = NULL;
        if (PyMethod_Check(cb)) {
            next = Py_NewRef(PyMethod_GET_FUNCTION(cb));
        } else if (PyFunction_Check(cb)) {
            id = gr_code_id(r, (PyCodeObject *)PyFunction_GET_CODE(cb));
            break;
        } else if (!PyCFunction_Check(cb)) {
            PyObject *mro = Py_TYPE(cb)->tp_mro;
            Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyTypeObject *tp = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
                PyObject *d = tp->tp_dict;
                PyObject *call = d && PyDict_Check(d) ? PyDict_GetItemString(d, "__call__") : NULL;
                if (!call)
                    continue;
                if (PyFunction_Check(call))
                    id = gr_code_id(r, (PyCodeObject *)PyFunction_GET_CODE(call));
                else
                    next = partial_func(tp, cb);
                break;
            }
            if (id)
                break;
        }
        if (!next)
            break; /* a C callable: cb */
        Py_SETREF(cb, next);
    }
    if (!id)
        id = gr_cfunc_id(r, cb);
    Py_DECREF(cb);
    return id;
}

void gr_note_greenlet_callback(gr_recorder *r, gr_thread *t, int at_start)
{
    if (!r->greenlet_mod || !t->tid)
        return;
    GR_EXC_SAVE(saved);
    PyObject *gettrace = PyObject_GetAttrString(r->greenlet_mod, "gettrace");
    PyObject *cb = gettrace ? PyObject_CallNoArgs(gettrace) : NULL;
    Py_XDECREF(gettrace);
    if (!cb) {
        gr_swallow(r);
        GR_EXC_RESTORE(saved);
        return;
    }
    /* Callback mode: ours may be the one greenlet calls; the program's is
     * the one it chains to. */
    uint64_t who = 0;
    PyObject *prog = cb;
    if (cb == (PyObject *)t) {
        prog = t->cb.prev ? t->cb.prev : Py_None;
        who = GR_HOOK_CHAINED;
    }
    if (!(at_start && prog == Py_None)) {
        uint64_t f[6] = {t->tid, t->cur_gid, GR_HOOK_GREENLET,
                         prog == Py_None ? GR_HOOK_CLEARED : GR_HOOK_SET, who,
                         prog == Py_None ? 0 : callback_id(r, prog)};
        gr_emit(r, GR_HOOK, 6, f);
    }
    Py_DECREF(cb);
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}
