/* shadow.c - the checker's shared state: threads, shadow stacks, context,
 * naming and comparing (shadow.h). */
#include "shadow.h"

#include "dump.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ threads, shadows */

ck_thread *ck_get_thread(ck *c, uint64_t tid)
{
    size_t i;
    if (!gr_idmap_get(&c->thmap, tid, 0, &i)) {
        c->th = gr_xgrow(c->th, &c->cap_th, c->nth + 1, sizeof *c->th);
        i = c->nth++;
        memset(&c->th[i], 0, sizeof c->th[i]);
        c->th[i].tid = tid;
        c->th[i].last_si = SIZE_MAX;
        gr_idmap_put(&c->thmap, tid, 0, i);
    }
    return &c->th[i];
}

/* A new shadow slot for (tid, gid): a freed one, or a new one. */
static size_t new_shadow(ck *c, uint64_t tid, uint64_t gid)
{
    size_t i;
    if (c->cache.nfree) {
        i = c->cache.free_si[--c->cache.nfree];
    } else {
        c->sh = gr_xgrow(c->sh, &c->cap_sh, c->nsh + 1, sizeof *c->sh);
        i = c->nsh++;
    }
    memset(&c->sh[i], 0, sizeof c->sh[i]);
    if (c->cache.nspare) {
        const ck_spare *sp = &c->cache.spare[--c->cache.nspare];
        c->sh[i].e = sp->e;
        c->sh[i].cap = sp->cap;
    }
    c->sh[i].tid = tid;
    c->sh[i].gid = gid;
    c->sh[i].base_unknown = 1;
    gr_idmap_put(&c->shmap, tid, gid, i);
    return i;
}

size_t ck_get_shadow(ck *c, uint64_t tid, uint64_t gid)
{
    size_t i;
    if (gr_idmap_get(&c->shmap, tid, gid, &i))
        return i;
    i = new_shadow(c, tid, gid);
    ck_shadow *s = &c->sh[i];
    ck_grave g;
    if (gid == 0) { /* one per thread, each counted */
        s->seq = c->cache.nseq++;
        s->counted = 1;
        c->cov.cov_shadows++;
    } else if (c->tomb.buried && ck_tomb_find(&c->tomb, gid, &g, 0) && g.slot < c->nth &&
               c->th[g.slot].tid == tid) {
        /* Freed at its DEAD: back as it was then (a record after its DEAD,
         * which switch_consistency reports; then it is alive again). */
        ck_tomb_find(&c->tomb, gid, &g, 1);
        ck_tomb_raise(&c->tomb, gid);
        s->seq = g.seq;
        s->counted = 1;
        s->dead = 1;
        s->dead_index = g.dead_index;
        s->base_unknown = (g.flags & CK_GRAVE_BASE_UNKNOWN) != 0;
        s->stack_seen = (g.flags & CK_GRAVE_STACK_SEEN) != 0;
        s->truth = (g.flags & CK_GRAVE_TRUTH) != 0;
        gr_idmap_put(&c->glmap, gid, 0, i);
    } else if (ck_tomb_see(&c->tomb, gid)) { /* the greenlet's first shadow */
        s->seq = c->cache.nseq++;
        s->counted = 1;
        c->cov.cov_shadows++;
        c->cov.cov_greenlets++;
        gr_idmap_put(&c->glmap, gid, 0, i);
    } else { /* the same gid on another thread: never freed */
        s->seq = c->cache.nseq++;
        ck_tomb_set_multi(&c->tomb, gid);
    }
    return i;
}

void ck_drop_stack(ck *c, ck_shadow *s)
{
    if (s->e && s->cap <= CK_SPARE_CAP && c->cache.nspare < CK_SPARE) {
        c->cache.spare[c->cache.nspare].e = s->e;
        c->cache.spare[c->cache.nspare++].cap = s->cap;
    } else {
        free(s->e);
    }
    s->e = NULL;
    s->cap = 0;
    s->n = 0;
}

void ck_bury(ck *c, size_t si, size_t th_slot)
{
    ck_shadow *s = &c->sh[si];
    ck_grave g = {.slot = th_slot, .dead_index = s->dead_index, .seq = s->seq};
    g.flags = (s->base_unknown ? CK_GRAVE_BASE_UNKNOWN : 0) |
              (s->stack_seen ? CK_GRAVE_STACK_SEEN : 0) | (s->truth ? CK_GRAVE_TRUTH : 0);
    ck_tomb_bury(&c->tomb, s->gid, &g);
    gr_idmap_del(&c->shmap, s->tid, s->gid);
    gr_idmap_del(&c->glmap, s->gid, 0);
    free(s->e);
    memset(s, 0, sizeof *s);
    s->freed = 1;
    s->dead = 1; /* loops over c->sh skip it as dead and empty */
    c->cache.free_si = gr_xgrow(c->cache.free_si, &c->cache.cap_free, c->cache.nfree + 1, sizeof *c->cache.free_si);
    c->cache.free_si[c->cache.nfree++] = si;
}

/* Live shadows by creation number (ck_shadows_in_order). */
typedef struct seq_si {
    uint64_t seq;
    size_t si;
} seq_si;

static int by_seq(const void *pa, const void *pb)
{
    const seq_si *a = pa, *b = pb;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

size_t ck_shadows_in_order(const ck *c, size_t **order, size_t *cap)
{
    size_t n = 0;
    int sorted = 1;
    *order = gr_xgrow(*order, cap, c->nsh + 1, sizeof **order);
    for (size_t i = 0; i < c->nsh; i++) {
        if (c->sh[i].freed)
            continue;
        if (n && c->sh[(*order)[n - 1]].seq > c->sh[i].seq)
            sorted = 0;
        (*order)[n++] = i;
    }
    if (!sorted) { /* a freed index was reused: back to creation order */
        seq_si *v = gr_xrealloc(NULL, n * sizeof *v);
        for (size_t k = 0; k < n; k++)
            v[k] = (seq_si){c->sh[(*order)[k]].seq, (*order)[k]};
        qsort(v, n, sizeof *v, by_seq);
        for (size_t k = 0; k < n; k++)
            (*order)[k] = v[k].si;
        free(v);
    }
    return n;
}

int ck_find_shadow(const ck *c, uint64_t tid, uint64_t gid, size_t *si)
{
    return gr_idmap_get(&c->shmap, tid, gid, si);
}

size_t ck_innermost_py(const ck_shadow *s)
{
    for (size_t k = s->n; k > 0; k--)
        if (!s->e[k - 1].is_c)
            return k - 1;
    return SIZE_MAX;
}

int ck_code_is_c(const gr_trace *t, uint32_t code)
{
    const gr_code *cd = gr_trace_code(t, code);
    return cd && cd->kind == GR_CODE_C;
}

void *ck_slot_grow(void **v, size_t *n, size_t i, size_t size)
{
    if (i >= *n) {
        size_t cap = *n, want = i + 1;
        *v = gr_xgrow(*v, &cap, want, size);
        memset((char *)*v + *n * size, 0, (cap - *n) * size);
        *n = cap;
    }
    return (char *)*v + i * size;
}

int ck_unseen_takeover(const ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    return (r->tag == GR_SWITCH || r->tag == GR_THROW) && (r->flags & GR_SW_AT_MARK) &&
           !(r->flags & GR_SW_PROFILE_OURS) && r->tracing == 0 && e->th->had_events &&
           !c->profile_off;
}

/* ------------------------------------------------------------ applying */

/* GREENLET: the shadow becomes the seed. */
static void seed(ck *c, ck_shadow *s, const gr_record *r)
{
    const uint32_t *ids = gr_record_stack(c->t, r);
    s->n = 0;
    for (uint32_t k = 0; k < r->depth; k++)
        ck_push(s, ids[k], ck_code_is_c(c->t, ids[k]));
    for (uint32_t k = 0; k < r->depth; k++) {
        ck_entry *e = &s->e[k];
        e->seed = CK_SEED;
        if (k + 1 == r->depth) /* top: suspended inside a C call (switch) */
            e->gap_ok = (r->flags & GR_GL_SUSPENDED) != 0;
        else /* a C call between this frame and the next is invisible */
            e->gap_ok = !e->is_c && !s->e[k + 1].is_c;
    }
    s->base_unknown = (r->flags & GR_GL_CUT) != 0;
}

/* The shadow becomes the Python frames of record r's stack, as a seed
 * (after a blind spot at a ground-truth point, so that one loss is
 * reported once and not as a cascade of imbalances). */
static void reseed(ck *c, ck_shadow *s, const gr_record *r)
{
    const uint32_t *ids = gr_record_stack(c->t, r);
    s->n = 0;
    for (uint32_t k = 0; k < r->depth; k++)
        if (!ck_code_is_c(c->t, ids[k]))
            ck_push(s, ids[k], 0);
    for (size_t k = 0; k < s->n; k++) {
        s->e[k].seed = CK_RESEED;
        s->e[k].gap_ok = 1;
    }
}

/* RETURN / C_RETURN / C_EXCEPTION: pop the matching entry, or resync
 * (the imbalance rule reports the same cases).  Returns 1 for a case the
 * imbalance rule reports, else 0. */
static int pop(ck_shadow *s, const gr_record *r, int is_c)
{
    ck_entry *top = s->n ? &s->e[s->n - 1] : NULL;
    if (top && top->code == r->code && top->is_c == is_c) {
        s->n--;
        return 0;
    }
    if (is_c && top && top->seed && top->gap_ok) {
        top->gap_ok = 0; /* the C call the seed's frame was inside */
        return 0;
    }
    if (!top && s->base_unknown)
        return 0; /* returns below the known part of the stack */
    size_t k = s->n;
    while (k > 0 && !(s->e[k - 1].code == r->code && s->e[k - 1].is_c == is_c))
        k--;
    if (k > 0) /* the entry is deeper: the returns above it were lost */
        s->n = k - 1;
    return 1;
}

/* The record's greenlet (and a switch's target) is alive again: a record
 * after a DEAD is reported once by switch_consistency. */
static void undead(ck *c, size_t si)
{
    if (si != SIZE_MAX)
        c->sh[si].dead = 0;
}

/* A CALL/RETURN/C_ * /MARK comes from the running greenlet; on a mismatch
 * (reported by switch_consistency) the record's greenlet is adopted. */
static void running(ck_thread *th, const gr_record *r)
{
    th->has_current = 1;
    th->current = r->gid;
}

void ck_apply(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    ck_thread *th = e->th;
    switch (r->tag) {
    case GR_THREAD:
        th->expect_greenlet = 1;
        break;
    case GR_GREENLET:
        undead(c, e->si);
        seed(c, &c->sh[e->si], r);
        if (th->expect_greenlet) {
            th->expect_greenlet = 0;
            th->has_current = 1;
            th->current = r->gid;
        }
        break;
    case GR_CALL:
    case GR_C_CALL:
        th->had_events = 1;
        running(th, r);
        undead(c, e->si);
        ck_push(&c->sh[e->si], r->code, r->tag == GR_C_CALL);
        break;
    case GR_RETURN:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        th->had_events = 1;
        running(th, r);
        undead(c, e->si);
        if (!e->skip && pop(&c->sh[e->si], r, r->tag != GR_RETURN))
            th->ran_gap = 0; /* the imbalance rule named the cause, once */
        if (th->intrace && r->gid == th->intrace_gid && c->sh[e->si].n < th->intrace_depth)
            th->intrace = 0; /* the frame on top at the HOOK has returned */
        break;
    case GR_SWITCH:
    case GR_THROW: {
        undead(c, e->si);
        undead(c, e->st);
        ck_shadow *s = &c->sh[e->st];
        if ((r->flags & GR_SW_REAL_STACK) && r->tracing == 0) {
            size_t na = ck_shadow_py(c, s), nb = ck_record_py(c, r);
            if (ck_differs(c, na, nb, (r->flags & GR_SW_CUT) != 0, s->base_unknown))
                reseed(c, s, r);
        }
        if (ck_unseen_takeover(c, e))
            th->observer_gap = 1; /* until the next MARK, as after its HOOK */
        th->has_current = 1;
        th->current = r->target;
        break;
    }
    case GR_MARK: {
        running(th, r);
        undead(c, e->si);
        if (th->observer_gap) {
            /* The recorder's own events were lost before this MARK (an
             * unannounced takeover of the profile slot): its real stack
             * is the new seed. */
            reseed(c, &c->sh[e->si], r);
            th->observer_gap = 0;
        }
        const ck_shadow *s = &c->sh[e->si];
        const ck_entry *top = s->n ? &s->e[s->n - 1] : NULL;
        int bracketed = top && top->is_c && top->code == r->code;
        if ((r->flags & GR_MARK_PROFILE_OURS) && !bracketed) {
            th->skip_mark_return = 1;
            th->skip_code = r->code;
        }
        if (!(r->flags & (GR_MARK_PROFILE_OURS | GR_MARK_IN_CALLBACK)) && !c->profile_off &&
            !th->had_events)
            th->unobserved = 1;
        break;
    }
    case GR_DEAD: {
        ck_shadow *s = &c->sh[e->si];
        /* A dead greenlet keeps only its small record (for a record after
         * its DEAD, and coverage): its stack's memory goes back. */
        ck_drop_stack(c, s);
        s->dead = 1;
        s->dead_index = r->index;
        break;
    }
    case GR_START:
        undead(c, e->si);
        break;
    case GR_STOP:
        undead(c, e->si);
        c->stop.stopped = 1;
        c->stop.stop_index = (size_t)r->index;
        c->stop.stop_nctx = ck_make_ctx(th, (size_t)r->index, c->stop.stop_ctx);
        if (c->lines) {
            ck_free_lines(c->stop.stop_text);
            ck_ctx_lines(c, th, c->stop.stop_ctx, c->stop.stop_nctx, c->stop.stop_text);
        }
        break;
    case GR_STACK:
        undead(c, e->si);
        c->sh[e->si].stack_seen = 1;
        break;
    case GR_HOOK: {
        /* The C call in progress (sys.setprofile, Profile.enable, ...)
         * reports its c_return to whatever the program installed, not to
         * the recorder. */
        ck_shadow *s = &c->sh[e->si];
        if (r->flags == GR_HOOK_PROFILE && r->code && !(r->parent & GR_HOOK_BY_OTHER) && s->n && s->e[s->n - 1].is_c &&
            s->e[s->n - 1].code == r->code)
            s->n--;
        if (r->parent & GR_HOOK_UNANNOUNCED) {
            th->observer_gap = 1;
            th->gap_index = r->index;
        }
        if (r->flags == GR_HOOK_PROFILE) {
            th->ran_gap = (r->parent & GR_HOOK_RAN) != 0;
            th->ran_index = r->index;
        }
        if (r->flags == GR_HOOK_PROFILE && (r->parent & GR_HOOK_IN_TRACE)) {
            th->intrace = 1;
            th->intrace_index = r->index;
            th->intrace_gid = r->gid;
            th->intrace_depth = s->n;
        }
        break;
    }
    default:
        break;
    }
}

/* ------------------------------------------------------------- context */

int ck_make_ctx(const ck_thread *th, size_t i, size_t ctx[GR_CONTEXT_MAX])
{
    int n = 0;
    uint64_t have = th->nseen < CK_RECENT ? th->nseen : CK_RECENT;
    for (uint64_t k = th->nseen - have; k < th->nseen; k++)
        ctx[n++] = th->ring[k % CK_RING].idx;
    ctx[n++] = i;
    return n;
}

/* Record number i for context: held by the trace, or a copy in th's ring
 * (*ids: its stack).  NULL when neither has it. */
static const gr_record *ctx_record(const ck *c, const ck_thread *th, size_t i,
                                   const uint32_t **ids)
{
    const gr_record *r = gr_trace_record(c->t, i);
    if (r) {
        *ids = r->depth ? gr_record_stack(c->t, r) : NULL;
        return r;
    }
    for (int k = 0; th && k < CK_RING; k++)
        if (th->ring[k].own && th->ring[k].idx == i) {
            *ids = th->ring[k].ids;
            return &th->ring[k].rec;
        }
    return NULL;
}

void ck_ctx_lines(const ck *c, const ck_thread *th, const size_t *ctx, int n,
                  char *text[GR_CONTEXT_MAX])
{
    for (int k = 0; k < GR_CONTEXT_MAX; k++)
        text[k] = NULL;
    for (int k = 0; k < n && k < GR_CONTEXT_MAX; k++) {
        gr_sb sb;
        gr_sb_init(&sb);
        const uint32_t *ids = NULL;
        const gr_record *r = ctx_record(c, th, ctx[k], &ids);
        if (r)
            gr_dump_record_ids(&sb, c->t, r, ids);
        else
            gr_sb_printf(&sb, "%6zu ?", ctx[k]);
        text[k] = gr_sb_take(&sb);
    }
}

void ck_free_lines(char *text[GR_CONTEXT_MAX])
{
    for (int k = 0; k < GR_CONTEXT_MAX; k++) {
        free(text[k]);
        text[k] = NULL;
    }
}

void ck_violate_lines(ck *c, enum gr_rule rule, uint64_t index, uint64_t tid, uint64_t gid,
                      const size_t *ctx, int nctx, const ck_thread *th, char **text)
{
    gr_check_add_violation(c->res, rule, index, tid, gid, gr_sb_take(&c->msg), ctx, nctx);
    if (!c->lines) {
        if (text)
            ck_free_lines(text);
        return;
    }
    gr_violation *v = &c->res->v[c->res->nv - 1];
    if (text) {
        for (int k = 0; k < GR_CONTEXT_MAX; k++) {
            v->ctx_line[k] = text[k];
            text[k] = NULL;
        }
    } else {
        ck_ctx_lines(c, th, ctx, nctx, v->ctx_line);
    }
}

void ck_violate(ck *c, enum gr_rule rule, const gr_record *r, const ck_thread *th, uint64_t gid)
{
    size_t ctx[GR_CONTEXT_MAX];
    int n = ck_make_ctx(th, (size_t)r->index, ctx);
    ck_violate_lines(c, rule, r->index, r->tid, gid, ctx, n, th, NULL);
}

void ck_add_warning(ck *c)
{
    /* kept to the end: its buffer cut to the text (a 3.12+ trace can have
     * a refuted prediction's warning at every switch) */
    char *m = gr_sb_take(&c->msg), *fit = realloc(m, strlen(m) + 1);
    gr_check_add_warning(c->res, fit ? fit : m);
}

void ck_add_info(ck *c)
{
    char *m = gr_sb_take(&c->msg), *fit = realloc(m, strlen(m) + 1);
    gr_check_add_info(c->res, fit ? fit : m);
}

void ck_add_note(ck *c, enum gr_note_kind kind, const ck_shadow *s)
{
    gr_check_result *res = c->res;
    gr_sb_reset(&c->msg);
    ck_entries(c, s, 0, s->n);
    res->notes = gr_xgrow(res->notes, &res->cap_notes, res->nnotes + 1, sizeof *res->notes);
    gr_note *nt = &res->notes[res->nnotes++];
    nt->kind = kind;
    nt->tid = s->tid;
    nt->gid = s->gid;
    nt->frames = gr_sb_take(&c->msg);
}

/* -------------------------------------------------- naming, comparing */

const char *ck_kind_name(const gr_record *r)
{
    const char *k = gr_tag_name(r->tag);
    return k ? k : "?";
}

/* gr_trace_meta of the trace checked (shadow.h). */
const char *ck_meta_value(const ck *c, const char *key, char *buf, size_t n)
{
    return gr_trace_meta(c->t, key, buf, n);
}

void ck_code_name(ck *c, uint32_t code)
{
    gr_dump_code(&c->msg, c->t, code);
}

/* Long stacks in messages show their first SHOW_HEAD and last SHOW_TAIL
 * entries around "... (N more) ...". */
#define SHOW_HEAD 4
#define SHOW_TAIL 8

void ck_codes(ck *c, const uint32_t *ids, size_t n)
{
    if (n == 0) {
        gr_sb_putc(&c->msg, '-');
        return;
    }
    for (size_t k = 0; k < n; k++) {
        if (n > SHOW_HEAD + SHOW_TAIL + 1 && k == SHOW_HEAD) {
            gr_sb_printf(&c->msg, " > ... (%zu more) ...", n - SHOW_HEAD - SHOW_TAIL);
            k = n - SHOW_TAIL - 1;
            continue;
        }
        if (k)
            gr_sb_puts(&c->msg, " > ");
        ck_code_name(c, ids[k]);
    }
}

void ck_entries(ck *c, const ck_shadow *s, size_t from, size_t to)
{
    size_t n = to - from;
    for (size_t k = 0; k < n; k++) {
        if (n > SHOW_HEAD + SHOW_TAIL + 1 && k == SHOW_HEAD) {
            gr_sb_printf(&c->msg, " > ... (%zu more) ...", n - SHOW_HEAD - SHOW_TAIL);
            k = n - SHOW_TAIL - 1;
            continue;
        }
        if (k)
            gr_sb_puts(&c->msg, " > ");
        ck_code_name(c, s->e[from + k].code);
    }
}

size_t ck_shadow_py(ck *c, const ck_shadow *s)
{
    c->fa = gr_xgrow(c->fa, &c->cap_fa, s->n + 1, sizeof *c->fa);
    size_t n = 0;
    for (size_t k = 0; k < s->n; k++)
        if (!s->e[k].is_c)
            c->fa[n++] = s->e[k].code;
    return n;
}

size_t ck_record_py(ck *c, const gr_record *r)
{
    c->fb = gr_xgrow(c->fb, &c->cap_fb, (size_t)r->depth + 1, sizeof *c->fb);
    const uint32_t *ids = gr_record_stack(c->t, r);
    size_t n = 0;
    for (uint32_t k = 0; k < r->depth; k++)
        if (!ck_code_is_c(c->t, ids[k]))
            c->fb[n++] = ids[k];
    return n;
}

/* Append "profiler missed WHAT of x, WHAT of y" for n frames (at most
 * SHOW_TAIL named); first: no "; " separator before it. */
static void missed(ck *c, const char *what, const uint32_t *ids, size_t n, int first)
{
    if (n == 0)
        return;
    gr_sb_printf(&c->msg, "%sprofiler missed %s of ", first ? "" : "; ", what);
    for (size_t k = 0; k < n && k < SHOW_TAIL; k++) {
        if (k)
            gr_sb_printf(&c->msg, ", %s of ", what);
        ck_code_name(c, ids[k]);
    }
    if (n > SHOW_TAIL)
        gr_sb_printf(&c->msg, " and %zu more", n - SHOW_TAIL);
}

/* The compared windows of c->fa and c->fb (see ck_compare). */
static void window(const ck *c, size_t *na, size_t *nb, int real_cut, int base_unknown,
                   const uint32_t **a, const uint32_t **b)
{
    *a = c->fa;
    *b = c->fb;
    if (real_cut && *na > *nb) {
        *a += *na - *nb;
        *na = *nb;
    }
    if (base_unknown && *nb > *na) {
        *b += *nb - *na;
        *nb = *na;
    }
}

int ck_code_is_generator(const ck *c, uint32_t code)
{
    return code < c->code.ngen && c->code.gen[code];
}

/* Whether the only difference of a (shadow) and b (real) is real frames
 * b[p..nb-s) no event named, each a generator's or coroutine's frame with
 * one inside it: a throw() delegated through them (yield from, await).
 * CPython hands the exception to the innermost delegate without running
 * the outer frames, yet keeps them on the frame chain (CPython issue
 * 73776): no profiler gets their call, and the real stack holds them.
 * When the error leaves the inner one, the outer frame resumes with a
 * call event and its shadow entry comes back. */
static int delegated_throw(const ck *c, const uint32_t *b, size_t nb, size_t na, size_t p,
                           size_t s)
{
    if (nb - s <= p || s == 0)
        return 0; /* no missed call, or no inner frame */
    /* 3.10+: the delegating frames sit between the thrower's and the
     * inner one's.  3.9: the chain starts at the outermost delegating
     * frame (its f_back is not set while the throw is delegated), so the
     * thrower's frames are not on it: a cut real stack. */
    if (na - s != p && p != 0)
        return 0; /* a missed return */
    for (size_t k = p; k < nb - s; k++)
        if (!ck_code_is_generator(c, b[k]) || !ck_code_is_generator(c, b[k + 1]))
            return 0;
    return 1;
}

/* The common prefix p and suffix s (not overlapping p) of stacks a and b;
 * 0 when they are equal. */
static int common_ends(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, size_t *pp, size_t *ps)
{
    size_t p = 0;
    while (p < na && p < nb && a[p] == b[p])
        p++;
    if (p == na && p == nb)
        return 0;
    size_t s = 0;
    while (s < na - p && s < nb - p && a[na - 1 - s] == b[nb - 1 - s])
        s++;
    *pp = p;
    *ps = s;
    return 1;
}

int ck_same(const ck *c, size_t na, size_t nb, int real_cut, int base_unknown)
{
    const uint32_t *a, *b;
    window(c, &na, &nb, real_cut, base_unknown, &a, &b);
    size_t p, s;
    return !common_ends(a, na, b, nb, &p, &s);
}

int ck_differs(const ck *c, size_t na, size_t nb, int real_cut, int base_unknown)
{
    const uint32_t *a, *b;
    window(c, &na, &nb, real_cut, base_unknown, &a, &b);
    size_t p, s;
    if (!common_ends(a, na, b, nb, &p, &s))
        return 0;
    return !delegated_throw(c, b, nb, na, p, s);
}

int ck_compare(ck *c, size_t na, size_t nb, int real_cut, int base_unknown)
{
    const uint32_t *a, *b;
    window(c, &na, &nb, real_cut, base_unknown, &a, &b);
    size_t p, s;
    if (!common_ends(a, na, b, nb, &p, &s))
        return 0;
    if (delegated_throw(c, b, nb, na, p, s)) {
        if (!c->notes.delegated++)
            c->notes.delegated_first = c->cmp_index;
        return 0;
    }
    missed(c, "return", a + p, na - s - p, 1);
    missed(c, "call", b + p, nb - s - p, na - s - p == 0);
    gr_sb_puts(&c->msg, "; real stack: ");
    ck_codes(c, b, nb);
    gr_sb_puts(&c->msg, "; shadow: ");
    ck_codes(c, a, na);
    return 1;
}
