/* split.c - check one range of a trace's chunks (split.h). */
#include "split.h"

#include "rule.h"
#include "seek.h"

#include <stdlib.h>
#include <string.h>

/* Whether a rule still waits for records to decide about one before hi. */
static int any_pending(const ck *c, uint64_t hi)
{
    for (size_t k = 0; k < gr_rule_count; k++)
        if (gr_rule_table[k]->pending && gr_rule_table[k]->pending(c, hi))
            return 1;
    return 0;
}

/* Drop the violations of res outside [lo, hi) (reported by the replay of
 * the records before the range, or at records past it while reading on);
 * those decided by the whole trace (of_whole: a META written at stop) are
 * kept by the worker of the last range (`last`) wherever they are, and
 * dropped by every other (which may not have read that far). */
static void keep_range(gr_check_result *res, uint64_t lo, uint64_t hi, int last)
{
    size_t n = 0;
    for (size_t i = 0; i < res->nv; i++) {
        gr_violation *v = &res->v[i];
        if (v->of_whole ? last : v->index >= lo && v->index < hi) {
            res->v[n++] = *v;
            continue;
        }
        if ((int)v->rule >= 0 && v->rule < GR_NRULES)
            res->counts[v->rule]--;
        res->nadvisory -= v->advisory != 0;
        free(v->message);
        for (int k = 0; k < GR_CONTEXT_MAX; k++)
            free(v->ctx_line[k]);
    }
    res->nv = n;
}

int gr_check_split(gr_trace *t, gr_split *sp, gr_check_result *res)
{
    gr_checker *c = gr_checker_new(t, res);
    uint64_t n = 0; /* chunks decoded */
    int in_range = 0;
    sp->lo = 0;
    sp->hi = UINT64_MAX;
    sp->ended = 0;
    sp->read_on = 0;
    c->split.prefix = sp->from > 0;
    for (;;) {
        if (n == sp->to)
            c->split.split_hi = sp->hi = gr_trace_count(t);
        if (n >= sp->to && !any_pending(c, sp->hi)) {
            c->split.no_end = 1;
            break;
        }
        gr_checker_detach(c);
        uint64_t before = gr_trace_count(t);
        if (gr_trace_next_chunk(t) <= 0)
            break;
        if (n == sp->from) {
            sp->lo = before;
            c->split.split_lo = before;
            c->split.prefix = 0;
            in_range = 1;
        }
        n++;
        gr_checker_advance(c, (size_t)gr_trace_count(t));
    }
    sp->chunks = n;
    uint64_t more = 0;
    if (c->split.no_end && !t->err.status) {
        /* What ended the recording, and the number of chunks, without
         * decoding the rest.  No chunk left (--to the number of chunks):
         * the whole trace was replayed, and the end-of-trace verdicts run
         * as for a range to the end. */
        gr_trace_skip_rest(t, &more);
        sp->chunks += more;
        if (!more && !t->err.status)
            c->split.no_end = 0;
    }
    sp->ended = !c->split.no_end;
    if (sp->hi != UINT64_MAX && gr_checker_position(c) > sp->hi)
        sp->read_on = gr_checker_position(c) - sp->hi;
    gr_checker_finish(c);
    if (!sp->ended && !t->err.status) {
        /* The coverage of what was replayed stays, with no verdict about
         * the whole trace (nothing checked, records missing: the worker
         * that reads to the end gives those). */
        res->coverage.nothing = NULL;
        res->coverage.dropped = t->has_trailer ? t->trailer.dropped : 0;
    }
    if (t->err.status) {
        gr_check_result_free(res);
        return GR_SPLIT_CORRUPT;
    }
    if (!in_range) {
        gr_check_result_free(res);
        return GR_SPLIT_PAST_END;
    }
    keep_range(res, sp->lo, sp->hi, sp->ended && sp->to >= sp->chunks);
    return GR_SPLIT_OK;
}
