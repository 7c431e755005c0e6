/* split.h - check one range of a trace's chunks (`greenreplay check --from
 * A --to B`), so that several workers share the rule work of one trace and
 * the union of their violations is exactly the whole check's
 * (docs/ARCHITECTURE.md, "Checking a trace in pieces").
 *
 * Chunks are numbered 0, 1, ... in file order, counting the records chunks
 * ('E', docs/FORMAT.md §2) only; `greenreplay stats` prints how many a
 * trace has.  A worker for chunks [A, B)
 *   1. replays the records of chunks [0, A) into the shared state (ck_apply)
 *      and through the rules that keep state of their own (rule.h:
 *      `stateless` rules are skipped), dropping their violations: the state
 *      at the first record of A is then exactly the whole check's;
 *   2. checks the records of chunks [A, B) with every rule;
 *   3. reads on past B, whole chunks at a time, while a rule still waits
 *      for later records to decide about a record before B (rule.h:
 *      `pending`); when that reaches the end of the trace it also runs the
 *      end-of-trace verdicts;
 *   4. keeps the violations reported at record indices [lo, hi), the
 *      records of chunks [A, B).  A violation belongs to the record it is
 *      reported at, so every violation of the whole check is kept by
 *      exactly one worker; except one decided by what only the end of the
 *      trace holds (gr_violation.of_whole: the self-check of continued
 *      switches, from METAs the recorder writes at stop), which the worker
 *      of the last range (B at or past the last chunk) keeps, whatever its
 *      index: merged by index (docs/ARCHITECTURE.md), it is where the
 *      whole check has it.  A worker whose range ends at the last chunk
 *      runs the end-of-trace verdicts even when no rule is pending.
 * Warnings and notes about the whole trace (trailer, what is open at the
 * end) come from every worker that read to the end; merging deduplicates
 * them (docs/ARCHITECTURE.md).
 */
#ifndef GR_SPLIT_H
#define GR_SPLIT_H

#include "check.h"

#include <stdint.h>

/* A range and what the worker did. */
typedef struct gr_split {
    uint64_t from, to;  /* in: chunk indices [from, to); to = UINT64_MAX: to
                           the end.  from < to. */
    uint64_t lo, hi;    /* out: the range's record indices [lo, hi); hi =
                           UINT64_MAX when the range reaches the end */
    uint64_t chunks;    /* out: the trace's number of chunks (those after
                           the worker stopped are counted by their headers,
                           seek.h) */
    int ended;          /* out: the worker replayed the whole trace and ran
                           the end-of-trace verdicts (else the trace's end
                           was only looked up: trailer or truncation) */
    uint64_t read_on;   /* out: records replayed past hi (step 3) */
} gr_split;

enum gr_split_status {
    GR_SPLIT_OK = 0,
    GR_SPLIT_CORRUPT = -1,   /* the trace turned out corrupt part way (t->err) */
    GR_SPLIT_PAST_END = -2,  /* sp->from >= the number of chunks (sp->chunks) */
};

/* Check chunks [sp->from, sp->to) of t, opened with gr_trace_open (read one
 * chunk at a time; a loaded trace works too), into *res (need not be
 * initialised; its violations are those at record indices [sp->lo,
 * sp->hi), sorted, with their context lines).  Returns GR_SPLIT_OK, or a
 * negative enum gr_split_status, and then *res is released and zeroed.
 * Exits(2) on out of memory.  Memory: that of gr_check_stream. */
int gr_check_split(gr_trace *t, gr_split *sp, gr_check_result *res);

#endif
