/* rule.h - the interface of one checker rule (one file each in replay/rules/), and the
 * rule table the engine (check.c) runs.
 *
 * A rule is a module over the one stream of records: the engine calls
 *   init       once, before the first record (may be NULL);
 *   on_record  for every record of the kinds in `kinds`, after the threads
 *              and shadows the record concerns exist and before the record
 *              is applied to them (shadow.h: ck_apply), so the rule sees the
 *              state the record must agree with (may be NULL);
 *   finish     once at the end of the trace: the verdicts that need the
 *              whole trace (what is still open), in table order (may be
 *              NULL);
 *   report     after every rule finished: notes and warnings of its own
 *              for the result (may be NULL);
 *   release    free the rule's state (may be NULL);
 *   keeps      whether the rule holds state about shadow si (by its index)
 *              that must outlive the greenlet's DEAD: the engine then does
 *              not free the shadow (check.c, maybe_bury; may be NULL:
 *              never).  A freed shadow's index is reused for a new one,
 *              so per-shadow state of a rule must be empty when it says 0.
 * Two more fields serve a check of one range of chunks (split.h, `check
 * --from A --to B`), which replays the records before the range to build
 * the state at its start and may read on past its end:
 *   stateless  1: the rule keeps nothing of its own from one record to
 *              the next (it only reads the shared state), so the records
 *              before the range need not go through it;
 *   on_prefix  for a record before the range: keep only what verdicts
 *              about records at or after the range's start depend on (a
 *              verdict about a record before the range is dropped anyway);
 *              NULL and not stateless: on_record runs (always exact, and
 *              the cost of the whole rule);
 *   pending    whether a verdict about a record before index `hi` still
 *              waits for later records (a MARK waiting for its C_RETURN, a
 *              prediction waiting for evidence, what is open at STOP); the
 *              range's worker reads on past its end until no rule has one
 *              (may be NULL: never).
 * `kinds` is the set of record kinds the rule looks at (GR_KIND(tag) bits;
 * 0: every kind): the engine calls a rule only for those, which keeps the
 * per-record cost to the rules that have something to check.  Of those,
 * `skips_plain` are the profile event kinds whose plain records (shadow.h,
 * ck_plain: an event of the running, live greenlet that its shadow takes
 * as it is) the rule finds nothing in: the engine does not call it for
 * them, and replays a plain record no rule wants without building its
 * ck_event (check.c).  A rule may say so only when on_record adds nothing
 * and keeps nothing for such a record; the unit tests and the fuzz target
 * compare every report with one made without this (gr_checker_plain).  A rule that
 * must see a thread's very next record whatever its kind (a MARK waiting
 * for its C_RETURN) asks for it with ck_want_next (shadow.h).
 * Violations are added with ck_violate / ck_violate_lines under the rule's
 * `id`.  Within one record the rules run in table order, which is also
 * the order of their violations at that record in the report.
 *
 * Adding a rule: a new file replay/rules/NAME.c defining a gr_rule_ops,
 * a line in gr_rule_table (check.c), and its id and name in check.h
 * (enum gr_rule, gr_rule_name).  The sampler's rules (stall_wait,
 * stall_depth, sample) are checked by stall.c with the side channel.
 */
#ifndef GR_RULE_H
#define GR_RULE_H

#include "shadow.h"

/* The kinds bit of record tag `tag` (GR_FIRST_INDEXED.. + 63). */
#define GR_KIND(tag) (UINT64_C(1) << ((tag) - GR_FIRST_INDEXED))
/* The profile events CALL, RETURN, C_CALL, C_RETURN, C_EXCEPTION. */
#define GR_KINDS_EVENTS                                                                     \
    (GR_KIND(GR_CALL) | GR_KIND(GR_RETURN) | GR_KIND(GR_C_CALL) | GR_KIND(GR_C_RETURN) |    \
     GR_KIND(GR_C_EXCEPTION))

typedef struct gr_rule_ops {
    enum gr_rule id;
    uint64_t kinds;     /* record kinds on_record wants (GR_KIND bits), 0 all */
    uint64_t skips_plain; /* of the profile event kinds, those whose plain
                             records on_record need not see */
    void (*init)(ck *c);
    void (*on_record)(ck *c, const ck_event *e);
    void (*finish)(ck *c);
    void (*report)(ck *c);
    void (*release)(ck *c);
    int stateless;
    void (*on_prefix)(ck *c, const ck_event *e);
    int (*pending)(const ck *c, uint64_t hi);
    int (*keeps)(const ck *c, size_t si);
} gr_rule_ops;

extern const gr_rule_ops gr_rule_switch_consistency;
extern const gr_rule_ops gr_rule_propagation;
extern const gr_rule_ops gr_rule_blind_spot;
extern const gr_rule_ops gr_rule_imbalance;
extern const gr_rule_ops gr_rule_callback_guard;
/* unreached.c: threads no profiler reached (META threads_unreached). */
extern const gr_rule_ops gr_rule_unreached;
/* attribution.c: what each of the program's own profilers saw and missed. */
extern const gr_rule_ops gr_rule_attribution;

/* Change the kinds rule `id` looks at from now on (GR_KIND bits, 0 all):
 * a rule that needs a kind only once something happened (an open
 * prediction, a profiler turned off) declares the smaller set and widens
 * it then, so that the common records do not call it at all. */
void ck_rule_kinds(ck *c, enum gr_rule id, uint64_t kinds);

/* The rules of `check`, in the order they run (check.c). */
extern const gr_rule_ops *const gr_rule_table[];
extern const size_t gr_rule_count;

#endif
