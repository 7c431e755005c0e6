/* launch.c - runpy's launch frames of a program run with -m (launch.h). */
#include "launch.h"

#include <string.h>

static int bytes_are(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    return p && n == k && memcmp(p, s, k) == 0;
}

/* A Python code of runpy named `name`: file "<frozen runpy>" (3.11+) or a
 * path whose last component is "runpy.py" (3.9, 3.10). */
static int runpy_code(const gr_trace *t, uint32_t code, const char *name)
{
    const gr_code *c = gr_trace_code(t, code);
    if (!c || c->kind != GR_CODE_PY || !c->file)
        return 0;
    size_t qn, fn;
    const uint8_t *q = gr_trace_string(t, c->qualname, &qn);
    const uint8_t *f = gr_trace_string(t, c->file, &fn);
    if (!bytes_are(q, qn, name) || !f)
        return 0;
    if (bytes_are(f, fn, "<frozen runpy>") || bytes_are(f, fn, "runpy.py"))
        return 1;
    static const char tail[] = "/runpy.py";
    return fn >= sizeof tail - 1 && memcmp(f + fn - (sizeof tail - 1), tail, sizeof tail - 1) == 0;
}

static int exec_code(const gr_trace *t, uint32_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    if (!c || c->kind != GR_CODE_C)
        return 0;
    size_t qn;
    const uint8_t *q = gr_trace_string(t, c->qualname, &qn);
    return bytes_are(q, qn, "builtins.exec");
}

size_t gr_launch_prefix(const gr_trace *t, const uint32_t *ids, size_t n)
{
    if (n < 2 || !ids || !runpy_code(t, ids[0], "_run_module_as_main") ||
        !runpy_code(t, ids[1], "_run_code"))
        return 0;
    return n > 2 && exec_code(t, ids[2]) ? 3 : 2;
}

size_t gr_launch_record_prefix(const gr_trace *t, const gr_record *r)
{
    int cut;
    switch (r->tag) {
    case GR_GREENLET: cut = (r->flags & GR_GL_CUT) != 0; break;
    case GR_SWITCH:
    case GR_THROW: cut = (r->flags & GR_SW_CUT) != 0; break;
    case GR_MARK: cut = (r->flags & GR_MARK_CUT) != 0; break;
    case GR_STACK: cut = (r->flags & GR_STACK_CUT) != 0; break;
    default: return 0;
    }
    return cut ? 0 : gr_launch_prefix(t, gr_record_stack(t, r), r->depth);
}

void gr_launch_scan_init(gr_launch_scan *sc)
{
    memset(sc, 0, sizeof *sc);
    for (size_t k = 0; k < GR_LAUNCH_MAX; k++)
        sc->l.ret_rec[k] = GR_LAUNCH_NONE;
}

/* The seed: GREENLET record g (number i) starts with the prefix. */
static void launch_seed(gr_launch_scan *sc, const gr_trace *t, const gr_record *g, size_t i)
{
    gr_launch *l = &sc->l;
    const uint32_t *ids = gr_record_stack(t, g);
    l->found = 1;
    l->tid = g->tid;
    l->gid = g->gid;
    l->seed_rec = i;
    for (size_t k = 0; k < l->nframes; k++)
        l->code[k] = ids[k];
    /* Python frames of the program open above the prefix.  C calls are
     * not counted: a c_return may come without its c_call (CPython issue
     * 122029), Python calls and returns pair up. */
    sc->above = 0;
    sc->open = l->nframes;
    for (uint32_t d = (uint32_t)l->nframes; d < g->depth; d++) {
        const gr_code *c = gr_trace_code(t, ids[d]);
        if (c && c->kind == GR_CODE_PY)
            sc->above++;
    }
}

void gr_launch_scan_feed(gr_launch_scan *sc, const gr_trace *t, const gr_record *r, size_t i)
{
    gr_launch *l = &sc->l;
    if (!l->found) {
        if (r->tag == GR_GREENLET && (l->nframes = gr_launch_record_prefix(t, r)) > 0)
            launch_seed(sc, t, r, i);
        return;
    }
    if (sc->open == 0 || r->tid != l->tid || r->gid != l->gid)
        return;
    if (r->tag == GR_CALL) {
        sc->above++;
    } else if (r->tag == GR_RETURN) {
        if (sc->above > 0) {
            sc->above--;
        } else {
            /* the innermost open launch frame of that code (an exec
             * whose c_return was not seen stays unmatched) */
            for (size_t k = sc->open; k-- > 0;)
                if (r->code == l->code[k]) {
                    l->ret_rec[k] = i;
                    sc->open = k;
                    break;
                }
        }
    } else if ((r->tag == GR_C_RETURN || r->tag == GR_C_EXCEPTION) && sc->above == 0 &&
               r->code == l->code[sc->open - 1] && exec_code(t, (uint32_t)r->code)) {
        l->ret_rec[--sc->open] = i;
    }
}

void gr_launch_find(const gr_trace *t, gr_launch *l)
{
    gr_launch_scan sc;
    gr_launch_scan_init(&sc);
    for (size_t i = 0; i < t->nrecs && !(sc.l.found && sc.open == 0); i++)
        gr_launch_scan_feed(&sc, t, &t->recs[i], i);
    *l = sc.l;
}

int gr_launch_is_return(const gr_launch *l, size_t i)
{
    if (!l->found)
        return 0;
    for (size_t k = 0; k < l->nframes; k++)
        if (l->ret_rec[k] == i)
            return 1;
    return 0;
}
