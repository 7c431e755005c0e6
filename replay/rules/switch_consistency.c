/* switch_consistency.c - the switch_consistency rule (docs/FORMAT.md §7):
 * every event comes from the greenlet running on its thread, a switch
 * starts from the running greenlet, a continued switch resumes a greenlet
 * suspended in a C call, and no record concerns a greenlet after its DEAD
 * (each reported once: the greenlet counts as alive again, shadow.c). */
#include "rule.h"

#include <inttypes.h>

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
        const char *k = ck_kind_name(r);
        if (th->has_current && th->current != r->gid) {
            gr_sb_printf(&c->msg, "%s from g%" PRIu64 " but g%" PRIu64 " is running on t%" PRIu64,
                         k, r->gid, th->current, r->tid);
            ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->gid);
        }
        /* A continued switch (FORMAT §4, state bit 9) claims the target
         * resumes in the C call its last event made: its shadow's top. */
        const ck_shadow *ts = &c->sh[e->st];
        if ((r->flags & GR_SW_CONTINUED) && (!ts->n || !ts->e[ts->n - 1].is_c)) {
            gr_sb_printf(&c->msg, "continued %s to g%" PRIu64 ", which was not suspended in a C call "
                                  "(its shadow top: ", k, r->target);
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
            gr_sb_printf(&c->msg, "%s to g%" PRIu64 " after its DEAD at event %" PRIu64, k,
                         r->target, c->sh[e->st].dead_index);
            ck_violate(c, GR_RULE_SWITCH_CONSISTENCY, r, th, r->target);
        }
        break;
    }
    default:
        break;
    }
}

const gr_rule_ops gr_rule_switch_consistency = {
    .id = GR_RULE_SWITCH_CONSISTENCY,
    .kinds = GR_KINDS_EVENTS | GR_KIND(GR_MARK) | GR_KIND(GR_GREENLET) | GR_KIND(GR_DEAD) |
             GR_KIND(GR_START) | GR_KIND(GR_STOP) | GR_KIND(GR_STACK) | GR_KIND(GR_SWITCH) |
             GR_KIND(GR_THROW),
    .on_record = on_record,
    .stateless = 1, /* reads the shadows and running greenlets only */
};
