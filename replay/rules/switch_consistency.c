/* switch_consistency.c - the switch_consistency rule (docs/RULES.md):
 * every event comes from the greenlet running on its thread, a switch
 * starts from the running greenlet, a continued switch resumes a greenlet
 * suspended in a C call, and no record concerns a greenlet after its DEAD
 * (each reported once: the greenlet counts as alive again, shadow.c). */
#include "rule.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Report record r, attributed to g`gid` whose shadow s is dead. */
static void dead_record(ck *c, const gr_record *r, const ck_thread *th, const ck_shadow *s,
                        uint64_t gid)
{
    gr_sb_printf(&c->msg, "%s record for g%" PRIu64 " after its DEAD at event %" PRIu64,
                 ck_kind_name(r), gid, s->dead_index);
    ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, gid);
}

/* A record attributed to a dead greenlet. */
static inline void check_alive(ck *c, const gr_record *r, const ck_thread *th, size_t si,
                               uint64_t gid)
{
    const ck_shadow *s = &c->sh[si];
    if (s->dead)
        dead_record(c, r, th, s, gid);
}

/* A CALL/RETURN/C_ * /MARK must come from the running greenlet. */
static void check_running(ck *c, const gr_record *r, const ck_thread *th)
{
    if (!th->has_current || r->gid == th->current)
        return;
    gr_sb_printf(&c->msg,
                 "%s in g%" PRIu64 " but g%" PRIu64 " is running on t%" PRIu64
                 " (no SWITCH to g%" PRIu64 " seen)",
                 ck_kind_name(r), r->gid, th->current, r->tid, r->gid);
    ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->gid);
}

static void on_record(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    const ck_thread *th = e->th;
    switch (r->tag) {
    case GR_CALL:
    case GR_C_CALL:
    case GR_RETURN:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
    case GR_MARK:
        check_running(c, r, th);
        check_alive(c, r, th, e->si, r->gid);
        break;
    case GR_GREENLET:
    case GR_DEAD:
    case GR_START:
    case GR_STOP:
    case GR_STACK:
        check_alive(c, r, th, e->si, r->gid);
        break;
    case GR_SWITCH:
    case GR_THROW: {
        if (th->has_current && th->current != r->gid) {
            gr_sb_printf(&c->msg, "%s from g%" PRIu64 " but g%" PRIu64 " is running on t%" PRIu64,
                         ck_kind_name(r), r->gid, th->current, r->tid);
            ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->gid);
        }
        /* A continued switch (FORMAT §4, state bit 9) claims the target
         * resumes in the C call its last event made: its shadow's top. */
        const ck_shadow *ts = &c->sh[e->st];
        if ((r->flags & GR_SW_CONTINUED) && (!ts->n || !ts->e[ts->n - 1].is_c)) {
            gr_sb_printf(&c->msg, "continued %s to g%" PRIu64 ", which was not suspended in a C call "
                                  "(its shadow top: ", ck_kind_name(r), r->target);
            if (ts->n)
                ck_code_name(c, ts->e[ts->n - 1].code);
            else
                gr_sb_puts(&c->msg, "empty");
            gr_sb_puts(&c->msg, ")");
            ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->target);
        }
        int origin_dead = c->sh[e->si].dead;
        check_alive(c, r, th, e->si, r->gid);
        /* (a switch to itself: the origin's report covers the target) */
        if (c->sh[e->st].dead && !(e->st == e->si && origin_dead)) {
            gr_sb_printf(&c->msg, "%s to g%" PRIu64 " after its DEAD at event %" PRIu64,
                         ck_kind_name(r), r->target, c->sh[e->st].dead_index);
            ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->target);
        }
        break;
    }
    default:
        break;
    }
}

/* The self-check GREENREPLAY_VERIFY_CONTINUED=1 (docs/FORMAT.md §4): the
 * recorder asked greenlet at every continued switch and wrote at stop how
 * many it checked (META continued_verified), how many greenlet contradicted
 * (continued_mismatch) and the first of those (continued_mismatch_first:
 * "INDEX TID WRITTEN_GID GREENLET_GID").  A contradiction means the trace
 * attributed events to the wrong greenlet from that switch on: one
 * violation at the first, naming the count. */
static void finish(ck *c)
{
    char count[32], verified[32], first[128];
    if (!ck_meta_value(c, "continued_mismatch", count, sizeof count) || strcmp(count, "0") == 0)
        return;
    if (!ck_meta_value(c, "continued_verified", verified, sizeof verified))
        strcpy(verified, "?");
    uint64_t index = 0, tid = 0, wrote = 0, real = 0;
    if (!ck_meta_value(c, "continued_mismatch_first", first, sizeof first) ||
        sscanf(first, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &index, &tid, &wrote, &real) != 4)
        index = tid = wrote = real = 0;
    gr_sb_printf(&c->msg,
                 "continued SWITCH to g%" PRIu64 " but greenlet says g%" PRIu64
                 " is running (0: one not seen) (self-check GREENREPLAY_VERIFY_CONTINUED: %s of %s"
                 " continued switches contradicted; the first is here)",
                 wrote, real, count, verified);
    ck_violate_lines(c, GR_RULE_SWITCH_CONSISTENCY, index, tid, wrote, NULL, 0, NULL, NULL);
    /* known only from the METAs written at stop: a split check's worker
     * whose range holds `index` may never read them (split.h) */
    c->res->v[c->res->nv - 1].of_whole = 1;
}

/* Passive mode: greenlets ran inside the program's own profile function
 * (META switches_in_profile_function: how many of its calls; _first:
 * "INDEX TID GID" of the event of the first).  A switch made there
 * delivers no event, so the recorder could not see which greenlets ran
 * nor what they called: a warning, since nothing says whether the
 * profiler missed any Python code there (callback mode records those
 * switches, docs/FORMAT.md section 4). */
static void report(ck *c)
{
    char count[32], first[128];
    if (c->split.no_end || !ck_meta_value(c, "switches_in_profile_function", count, sizeof count))
        return;
    uint64_t index = 0, tid = 0, gid = 0;
    if (!ck_meta_value(c, "switches_in_profile_function_first", first, sizeof first) ||
        sscanf(first, "%" SCNu64 " %" SCNu64 " %" SCNu64, &index, &tid, &gid) != 3)
        index = tid = gid = 0;
    gr_sb_printf(&c->msg,
                 "switch_consistency: greenlets ran inside the program's own profile function, "
                 "unseen, in %s of its calls (the first at event %" PRIu64 " on t%" PRIu64 " g%" PRIu64
                 "): a switch made there delivers no event, so passive mode cannot tell which "
                 "greenlets ran or what they called; record with --switches callback to see those "
                 "switches",
                 count, index, tid, gid);
    ck_add_warning(c);
}

const gr_rule_ops gr_rule_switch_consistency = {
    .id = GR_RULE_SWITCH_CONSISTENCY,
    .kinds = GR_KINDS_EVENTS | GR_KIND(GR_MARK) | GR_KIND(GR_GREENLET) | GR_KIND(GR_DEAD) |
             GR_KIND(GR_START) | GR_KIND(GR_STOP) | GR_KIND(GR_STACK) | GR_KIND(GR_SWITCH) |
             GR_KIND(GR_THROW),
    /* a plain event comes from the running greenlet, which is alive */
    .skips_plain = GR_KINDS_EVENTS,
    .on_record = on_record,
    .finish = finish,
    .report = report,
    .stateless = 1, /* reads the shadows and running greenlets only */
};
