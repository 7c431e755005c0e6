/* callback_guard.c - the callback_guard rule (docs/RULES.md): greenlet
 * ran the program's greenlet trace callback with the thread's tracing on,
 * so the profile function saw the callback's frames inside a switch.
 *
 * greenlet calls the callback set with greenlet.settrace() in the target,
 * right after the stack switch, inside its TracingGuard
 * (PyThreadState_EnterTracing/LeaveTracing since greenlet PR 268; a
 * hand-written tstate->tracing++ / use_tracing = 0 before it), as CPython
 * runs profile and trace functions.  A greenlet without that guard (the
 * mutguard mutant, ci/mutants/mutguard.patch) lets every profiler see the
 * tool's frames inside every switch.
 *
 * Evidence: the recorder writes the program's callback on each thread as a
 * HOOK record of slot GR_HOOK_GREENLET whose code is the callback's code id
 * (at start() and after each greenlet.settrace).  The violation is a CALL
 * of that code as the first event of the target after a SWITCH/THROW of the
 * same thread (only DEAD, INSTR, GREENLET and HOOK records may come between
 * them).  The same code called by the program outside a switch is not
 * flagged.  Reported once per (thread, callback), at the first such CALL,
 * with the count of switches where it happened. */
#include "rule.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One callback seen running with tracing on, on one thread. */
typedef struct guard_hit {
    uint32_t code;          /* the callback's code id */
    uint64_t count;         /* switches where its CALL was seen */
    size_t index;           /* the first such CALL */
    uint64_t gid;           /* the target greenlet then */
    uint64_t origin;        /* and the switch's origin */
    int is_throw;
    size_t sw_index;        /* that SWITCH/THROW */
    size_t ctx[GR_CONTEXT_MAX];
    int nctx;
    char *text[GR_CONTEXT_MAX]; /* its context lines (streamed; owned) */
} guard_hit;

/* Per thread. */
typedef struct gthread {
    uint32_t cb_code;       /* the program's greenlet callback's Python code (0: none, or C) */
    int after_switch;       /* the previous record was a SWITCH/THROW */
    int sw_throw;
    uint64_t sw_origin;
    size_t sw_index;
    guard_hit *hits;
    size_t nhits;
} gthread;

typedef struct gstate {
    gthread *th;            /* by thread slot */
    size_t nth;
} gstate;

static gthread *gth(ck *c, size_t slot)
{
    gstate *g = c->rule_state[GR_RULE_CALLBACK_GUARD];
    return ck_slot((void **)&g->th, &g->nth, slot, sizeof *g->th);
}

static void init(ck *c)
{
    gstate *g = gr_xrealloc(NULL, sizeof *g);
    memset(g, 0, sizeof *g);
    c->rule_state[GR_RULE_CALLBACK_GUARD] = g;
}

/* A CALL of the callback right after a switch on thread e->th. */
static void hit(ck *c, const ck_event *e, gthread *gt)
{
    const gr_record *r = e->r;
    for (size_t k = 0; k < gt->nhits; k++)
        if (gt->hits[k].code == r->code) {
            gt->hits[k].count++;
            return;
        }
    gt->hits = gr_xrealloc(gt->hits, (gt->nhits + 1) * sizeof *gt->hits);
    guard_hit *h = &gt->hits[gt->nhits++];
    memset(h, 0, sizeof *h);
    h->code = r->code;
    h->count = 1;
    h->index = (size_t)r->index;
    h->gid = r->gid;
    h->origin = gt->sw_origin;
    h->is_throw = gt->sw_throw;
    h->sw_index = gt->sw_index;
    h->nctx = ck_make_ctx(e->th, (size_t)r->index, h->ctx);
    if (c->lines)
        ck_ctx_lines(c, e->th, h->ctx, h->nctx, h->text);
}

static void on_record(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    gthread *gt = gth(c, e->th_index);
    switch (r->tag) {
    case GR_HOOK:
        /* A C callable (a builtin, or a partial of one) runs no frame of
         * its own that a CALL could show: nothing to look for. */
        if (r->flags == GR_HOOK_GREENLET)
            gt->cb_code = r->tracing == GR_HOOK_SET && !ck_code_is_c(c->t, r->code) ? r->code : 0;
        return; /* keeps after_switch */
    case GR_DEAD:
    case GR_INSTR:
    case GR_GREENLET:
        return; /* belong to the switch before them */
    case GR_SWITCH:
    case GR_THROW:
        gt->after_switch = 1;
        gt->sw_throw = r->tag == GR_THROW;
        gt->sw_origin = r->gid;
        gt->sw_index = (size_t)r->index;
        /* the thread's next record, whatever its kind (rule.h) */
        ck_want_next(c, e->th, GR_RULE_CALLBACK_GUARD, gt->cb_code != 0);
        return;
    case GR_CALL:
        if (gt->after_switch && gt->cb_code && r->code == gt->cb_code)
            hit(c, e, gt);
        break;
    default:
        break;
    }
    gt->after_switch = 0;
    ck_want_next(c, e->th, GR_RULE_CALLBACK_GUARD, 0);
}

static void finish(ck *c)
{
    gstate *g = c->rule_state[GR_RULE_CALLBACK_GUARD];
    for (size_t i = 0; i < g->nth && i < c->nth; i++) {
        gthread *gt = &g->th[i];
        const ck_thread *th = &c->th[i];
        for (size_t k = 0; k < gt->nhits; k++) {
            guard_hit *h = &gt->hits[k];
            gr_sb_puts(&c->msg, "greenlet ran its trace callback ");
            ck_code_name(c, h->code);
            gr_sb_printf(&c->msg,
                         " with tracing on: the profile function sees the tool's frames inside "
                         "every switch (greenlet PR 268 / TracingGuard); its call is the first "
                         "event of g%" PRIu64 " after %s g%" PRIu64 "->g%" PRIu64
                         " at event %zu, and after %" PRIu64 " switch%s in all on t%" PRIu64,
                         h->gid, h->is_throw ? "THROW" : "SWITCH", h->origin, h->gid,
                         h->sw_index, h->count, h->count == 1 ? "" : "es", th->tid);
            ck_violate_lines(c, GR_RULE_CALLBACK_GUARD, h->index, th->tid, h->gid, h->ctx,
                             h->nctx, th, c->lines ? h->text : NULL);
        }
    }
}

/* check --from/--to: a hit at a record before `hi` is reported with the
 * count of the whole trace, so the worker that owns it reads to the end. */
static int pending(const ck *c, uint64_t hi)
{
    const gstate *g = c->rule_state[GR_RULE_CALLBACK_GUARD];
    for (size_t i = 0; g && i < g->nth; i++)
        for (size_t k = 0; k < g->th[i].nhits; k++)
            if (g->th[i].hits[k].index < hi)
                return 1;
    return 0;
}

static void release(ck *c)
{
    gstate *g = c->rule_state[GR_RULE_CALLBACK_GUARD];
    if (!g)
        return;
    for (size_t i = 0; i < g->nth; i++) {
        for (size_t k = 0; k < g->th[i].nhits; k++)
            ck_free_lines(g->th[i].hits[k].text);
        free(g->th[i].hits);
    }
    free(g->th);
    free(g);
    c->rule_state[GR_RULE_CALLBACK_GUARD] = NULL;
}

const gr_rule_ops gr_rule_callback_guard = {
    .id = GR_RULE_CALLBACK_GUARD,
    /* the records a switch's first event may follow; that event itself
     * through ck_want_next */
    .kinds = GR_KIND(GR_SWITCH) | GR_KIND(GR_THROW) | GR_KIND(GR_HOOK),
    .init = init,
    .on_record = on_record,
    .finish = finish,
    .release = release,
    .pending = pending,
};
