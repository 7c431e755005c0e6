/* imbalance.c - the imbalance rule (docs/RULES.md): every return
 * matches the call on top of its shadow stack; a greenlet dies with an
 * empty shadow; at stop() the open shadow frames are the real stack (STACK
 * records).  What is still open at the end is a note, not a violation.
 * A recording without profile events (start(profile=False), META profile:
 * off) has no shadow built from them: only the returns are checked.
 * The shadow's own resync after a mismatch is shadow.c's (ck_apply). */
#include "rule.h"

#include <inttypes.h>
#include <stdlib.h>

/* The cause, once, of an imbalance on a thread that ran with the
 * program's profile function alone before the recorder saw the change
 * (HOOK with GR_HOOK_RAN): the recorder's own events, not the profiler,
 * missed the C call's c_call or c_return. */
static void ran_cause(ck *c, const ck_thread *th)
{
    if (!th->ran_gap)
        return; /* shadow.c clears it after this record */
    gr_sb_printf(&c->msg, "; cause: the recorder lost it, not the profiler: t%" PRIu64
                          " ran with the program's profile function alone before the recorder saw "
                          "it (HOOK at event %" PRIu64 ", ran: a change another thread announced, or "
                          "this thread's own before its next event), and C calls made there went "
                          "to that function only",
                 th->tid, th->ran_index);
}

/* RETURN / C_RETURN / C_EXCEPTION against the shadow top. */
static void on_return(ck *c, const ck_event *e, int is_c)
{
    const gr_record *r = e->r;
    const ck_shadow *s = &c->sh[e->si];
    const ck_entry *top = s->n ? &s->e[s->n - 1] : NULL;
    if (top && top->code == r->code && top->is_c == is_c)
        return;
    if (is_c && top && top->seed && top->gap_ok)
        return; /* the C call the seed's frame was inside */
    if (!top && s->base_unknown)
        return; /* returns below the known part of the stack */
    size_t k = s->n;
    while (k > 0 && !(s->e[k - 1].code == r->code && s->e[k - 1].is_c == is_c))
        k--;
    gr_sb_printf(&c->msg, "%s of ", ck_kind_name(r));
    ck_code_name(c, r->code);
    if (k > 0) {
        /* the entry is deeper: the returns above it were lost */
        gr_sb_puts(&c->msg, " but the shadow top is ");
        ck_code_name(c, top->code);
        gr_sb_puts(&c->msg, ": profiler missed the return of ");
        ck_entries(c, s, k, s->n);
        gr_sb_printf(&c->msg, "; resynced by popping %zu entr%s", s->n - (k - 1),
                     s->n - (k - 1) == 1 ? "y" : "ies");
    } else {
        gr_sb_printf(&c->msg, " without a matching %s (shadow top: ", is_c ? "C_CALL" : "CALL");
        if (top)
            ck_code_name(c, top->code);
        else
            gr_sb_puts(&c->msg, "empty");
        gr_sb_puts(&c->msg, ")");
        if (is_c && !e->th->ran_gap)
            gr_sb_puts(&c->msg, "; a c_return without its c_call is the CPython issue "
                                "122029 class (c_call not reported to the profiler)");
        gr_sb_puts(&c->msg, "; ignored");
    }
    ran_cause(c, e->th);
    /* The frame on top at a HOOK made inside the program's trace function
     * (GR_HOOK_IN_TRACE) is the one missed, or the call missed is above
     * it: the event that function handled went elsewhere. */
    const ck_thread *th = e->th;
    if (th->intrace && r->gid == th->intrace_gid &&
        (k > 0 ? k < th->intrace_depth : s->n == th->intrace_depth))
        gr_sb_printf(&c->msg, "; cause: the program's trace function changed the profile slot "
                              "(HOOK at event %" PRIu64 ") while it handled a call or return, "
                              "which CPython then gave to what the change left in the slot, not "
                              "to the recorder (this Python does not say which event it handled)",
                     th->intrace_index);
    ck_violate(c, GR_RULE_IMBALANCE, r, e->th, r->gid);
}

/* DEAD with entries left open.  Entries re-seeded from a real stack after
 * a blind spot (CK_RESEED, always the bottom of the shadow) are not
 * counted: the profiler saw neither their call nor their return, which
 * that blind spot already reported (a greenlet run with tracing off dies
 * that way, greenlet issue 256).  One cause, one finding. */
static void on_dead(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    const ck_shadow *s = &c->sh[e->si];
    if (e->th->observer_gap)
        return; /* the recorder's own events were lost (an unannounced
                   takeover of the slot): its HOOK names the cause */
    size_t from = 0;
    while (from < s->n && s->e[from].seed == CK_RESEED)
        from++;
    if (from == s->n)
        return;
    size_t n = s->n - from;
    gr_sb_printf(&c->msg, "g%" PRIu64 " died with %zu open shadow entr%s: ", r->gid, n,
                 n == 1 ? "y" : "ies");
    ck_entries(c, s, from, s->n);
    ck_violate(c, GR_RULE_IMBALANCE, r, e->th, r->gid);
}

static void on_stack(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    const ck_shadow *s = &c->sh[e->si];
    if (e->th->observer_gap && (r->flags & GR_STACK_RUNNING))
        return; /* the recorder's own events were lost before (a HOOK with
                   GR_HOOK_UNANNOUNCED, whose episode names the cause) */
    size_t na = ck_shadow_py(c, s), nb = ck_record_py(c, r);
    gr_sb_printf(&c->msg, "g%" PRIu64 " at stop: open frames differ from its real stack: ",
                 r->gid);
    int differ = ck_compare(c, na, nb, (r->flags & GR_STACK_CUT) != 0, s->base_unknown);
    if (differ && !(r->flags & GR_STACK_THREAD_ENDED)) {
        ck_violate(c, GR_RULE_IMBALANCE, r, e->th, r->gid);
        return;
    }
    gr_sb_reset(&c->msg);
    if (s->n)
        ck_add_note(c, (r->flags & GR_STACK_THREAD_ENDED) ? GR_NOTE_ABANDONED : GR_NOTE_OPEN_AT_STOP,
                    s);
}

static void on_record(ck *c, const ck_event *e)
{
    switch (e->r->tag) {
    case GR_RETURN:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        if (!e->skip)
            on_return(c, e, e->r->tag != GR_RETURN);
        break;
    case GR_DEAD: /* with profile=False (META profile: off) no profile
                     event was recorded: a shadow holds the last real stack
                     seen (seed, switch, MARK), not frames left open */
        if (!c->profile_off)
            on_dead(c, e);
        break;
    case GR_STACK:
        if (!c->profile_off)
            on_stack(c, e);
        break;
    default:
        break;
    }
}

/* Open shadows at the end: at STOP every one needs its STACK record;
 * without STOP they are notes (cut short, or ended without stop()). */
static void finish(ck *c)
{
    if (c->profile_off)
        return; /* no profile events: the shadows hold only the real stacks
                   seen (seeds, switches, marks), not open frames */
    /* in creation order: the order of these verdicts (all at STOP) and
     * notes does not depend on which freed index a shadow reused */
    size_t *order = NULL, cap = 0, n = ck_shadows_in_order(c, &order, &cap);
    for (size_t j = 0; j < n; j++) {
        const ck_shadow *s = &c->sh[order[j]];
        if (s->dead || s->n == 0)
            continue;
        if (c->stop.stopped) {
            if (s->stack_seen)
                continue;
            size_t ti;
            if (gr_idmap_get(&c->thmap, s->tid, 0, &ti) && c->th[ti].unobserved) {
                /* its thread ran without the recorder's profile function
                   (blind_spot at its MARK): the returns were never seen */
                ck_add_note(c, GR_NOTE_UNOBSERVED, s);
                continue;
            }
            /* As at DEAD (on_dead): entries re-seeded after a blind spot
             * are that finding's loss (a greenlet that ran with no event
             * and ended unseen: greenlet issue 256). */
            size_t from = 0;
            while (from < s->n && s->e[from].seed == CK_RESEED)
                from++;
            if (from == s->n)
                continue;
            gr_sb_printf(&c->msg,
                         "g%" PRIu64 " on t%" PRIu64 " has %zu open shadow entr%s at STOP but "
                         "no STACK record: ",
                         s->gid, s->tid, s->n - from, s->n - from == 1 ? "y" : "ies");
            ck_entries(c, s, from, s->n);
            char *text[GR_CONTEXT_MAX];
            if (c->lines)
                for (int k = 0; k < GR_CONTEXT_MAX; k++)
                    text[k] = c->stop.stop_text[k] ? gr_xstrdup(c->stop.stop_text[k]) : NULL;
            ck_violate_lines(c, GR_RULE_IMBALANCE, c->stop.stop_index, s->tid, s->gid, c->stop.stop_ctx,
                             c->stop.stop_nctx, NULL, c->lines ? text : NULL);
        } else {
            ck_add_note(c, c->t->truncated ? GR_NOTE_OPEN_AT_TRUNCATION : GR_NOTE_OPEN_AT_END, s);
        }
    }
    free(order);
}

/* The verdicts at STOP (open shadows without a STACK record) need the
 * records up to the end of the trace. */
static int pending(const ck *c, uint64_t hi)
{
    return c->stop.stopped && c->stop.stop_index < hi;
}

const gr_rule_ops gr_rule_imbalance = {
    .id = GR_RULE_IMBALANCE,
    .kinds = GR_KIND(GR_RETURN) | GR_KIND(GR_C_RETURN) | GR_KIND(GR_C_EXCEPTION) |
             GR_KIND(GR_DEAD) | GR_KIND(GR_STACK),
    /* a plain return matches the shadow top */
    .skips_plain = GR_KIND(GR_RETURN) | GR_KIND(GR_C_RETURN) | GR_KIND(GR_C_EXCEPTION),
    .on_record = on_record,
    .finish = finish,
    .stateless = 1, /* reads the shadows only */
    .pending = pending,
};
