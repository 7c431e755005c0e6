/* check.h - the checker: replay a decoded trace against a shadow stack per
 * (thread, greenlet) and report violations of the rules imbalance,
 * blind_spot, switch_consistency and propagation (docs/FORMAT.md §7).
 *
 * The checker is pure: it reads a gr_trace and fills a gr_check_result;
 * report.h turns results into text, JSON or JUnit XML.
 */
#ifndef GR_CHECK_H
#define GR_CHECK_H

#include "reader.h"

#include <stddef.h>
#include <stdint.h>

enum gr_rule {
    GR_RULE_IMBALANCE = 0,
    GR_RULE_BLIND_SPOT,
    GR_RULE_SWITCH_CONSISTENCY,
    GR_RULE_PROPAGATION,
    GR_NRULES,
};

/* "imbalance", "blind_spot", "switch_consistency", "propagation". */
const char *gr_rule_name(enum gr_rule rule);

/* Most context records kept per violation: 3 before, plus the record. */
#define GR_CONTEXT_MAX 4

/* One violation. */
typedef struct gr_violation {
    enum gr_rule rule;
    uint64_t index;      /* event index (record index) it is reported at */
    uint64_t tid, gid;
    char *message;       /* owned, one line, escaped (valid UTF-8) */
    size_t ctx[GR_CONTEXT_MAX]; /* record indices, oldest first; the last one
                                   is `index` unless the violation is about
                                   the end of the trace */
    int nctx;
    size_t seq;          /* order of detection (internal, for stable sort) */
} gr_violation;

/* An informational note about frames open at the end (not a violation). */
enum gr_note_kind {
    GR_NOTE_OPEN_AT_STOP,      /* shadow matches the STACK record after STOP */
    GR_NOTE_OPEN_AT_TRUNCATION, /* no STOP, trace cut short */
    GR_NOTE_OPEN_AT_END,       /* no STOP, trailer present (exit, write error) */
};

typedef struct gr_note {
    enum gr_note_kind kind;
    uint64_t tid, gid;
    char *frames;        /* owned: the open shadow entries, "a > b" */
} gr_note;

/* Result of checking one trace.  Everything is owned; free with
 * gr_check_result_free. */
typedef struct gr_check_result {
    gr_violation *v;     /* sorted by index, then detection order */
    size_t nv, cap_v;
    size_t counts[GR_NRULES];
    gr_note *notes;      /* in order of first sight of the greenlet */
    size_t nnotes, cap_notes;
    char **warnings;     /* owned lines (trailer drops/errors, truncation) */
    size_t nwarnings, cap_warnings;
} gr_check_result;

/* Check every record of t (a successfully read trace, complete or
 * truncated) and fill *res (need not be initialised).  Exits(2) on out of
 * memory.  Returns the number of violations. */
size_t gr_check_run(const gr_trace *t, gr_check_result *res);

/* Release what *res owns and zero it. */
void gr_check_result_free(gr_check_result *res);

#endif
