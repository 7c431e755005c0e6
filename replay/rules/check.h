/* check.h - the checker: replay a decoded trace against a shadow stack per
 * (thread, greenlet) and report violations of the rules imbalance,
 * blind_spot, switch_consistency, propagation and callback_guard
 * (docs/RULES.md).
 *
 * The checker is pure: it reads a gr_trace and fills a gr_check_result;
 * report.h turns results into text, JSON or JUnit XML.  gr_check_run does
 * it in one call; the gr_checker functions do it step by step so that
 * other checks (stall.h) can look at the shadow stacks at any record
 * index, and add violations of their own rules to the same result.
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
    GR_RULE_CALLBACK_GUARD, /* callback_guard.c: greenlet's callback ran with tracing on */
    GR_RULE_DISPLACED,   /* blind_spot.c: the program removed or replaced the
                            profiler (HOOK); not failing by default */
    GR_RULE_UNREACHED,   /* unreached.c: threads no profiler reached */
    GR_RULE_ATTRIBUTION, /* attribution.c: a profiler of the program missed
                            its owner's calls or saw other greenlets' calls;
                            not failing by default */
    GR_RULE_STALL_WAIT,  /* stall.h: a switch waited too long for the sampler lock */
    GR_RULE_STALL_DEPTH, /* stall.h: the sampler read frames holding the lock */
    GR_RULE_SAMPLE,      /* stall.h: a sampled stack differs from the shadow */
    GR_NRULES,
};

/* Rules of plain `check` (the first ones of enum gr_rule). */
#define GR_NRULES_CHECK (GR_RULE_ATTRIBUTION + 1)

/* "imbalance", "blind_spot", "switch_consistency", "propagation",
 * "callback_guard", "displaced", "unreached", "attribution", "stall_wait", "stall_depth",
 * "sample". */
const char *gr_rule_name(enum gr_rule rule);

/* Most context records kept per violation: 3 before, plus the record. */
#define GR_CONTEXT_MAX 4

/* One violation. */
typedef struct gr_violation {
    enum gr_rule rule;
    uint64_t index;      /* event index (record index) it is reported at */
    uint64_t tid, gid;   /* tid 0: not about one thread (stall rules) */
    char *message;       /* owned, one line, escaped (valid UTF-8) */
    size_t ctx[GR_CONTEXT_MAX]; /* record indices, oldest first; the last one
                                   is `index` unless the violation is about
                                   the end of the trace */
    int nctx;
    char *ctx_line[GR_CONTEXT_MAX]; /* owned dump lines of ctx[k] when the
                                       checker kept them (a streamed trace no
                                       longer holds the records at report
                                       time); NULL: look ctx[k] up in the
                                       trace */
    size_t seq;          /* order of detection (internal, for stable sort) */
    int allowed;         /* the user allowed it (gr_check_allow): still
                            listed and counted, not in the exit status */
    const char *allowed_by; /* borrowed, or NULL: where the allow came
                            from ("--allow", a pyproject.toml's path), as
                            the reports name it (set by the caller) */
    int advisory;        /* a finding of a rule that does not fail by
                            default (displaced, gr_check_fail_on): listed
                            and counted, not in the exit status */
    int of_whole;        /* decided by what the whole trace holds (a META
                            the recorder writes at stop), not by the records
                            up to `index`: a split check keeps it in the
                            worker whose range reaches the end (split.h) */
} gr_violation;

/* An informational note about frames open at the end (not a violation). */
enum gr_note_kind {
    GR_NOTE_OPEN_AT_STOP,      /* shadow matches the STACK record after STOP */
    GR_NOTE_OPEN_AT_TRUNCATION, /* no STOP, trace cut short */
    GR_NOTE_OPEN_AT_END,       /* no STOP, trailer present (exit, write error) */
    GR_NOTE_ABANDONED,         /* suspended on a thread that ended before STOP */
    GR_NOTE_UNOBSERVED,        /* on a thread whose MARK found no profile
                                  function of the recorder's: its returns were
                                  never seen (the blind_spot at that MARK names
                                  the cause) */
};

typedef struct gr_note {
    enum gr_note_kind kind;
    uint64_t tid, gid;
    char *frames;        /* owned: the open shadow entries, "a > b" */
} gr_note;

/* What a check could and could not look at (docs/RULES.md,
 * "Coverage").  Filled by gr_checker_finish / gr_check_run. */
typedef struct gr_coverage {
    size_t records;         /* indexed records replayed */
    size_t program_events;  /* CALL..C_EXCEPTION of code that is not
                               greenreplay's own (gr_code_is_own), SWITCH,
                               THROW and MARK records */
    size_t threads;         /* threads seen */
    size_t greenlets;       /* greenlets seen (gid > 0) */
    size_t greenlets_truth; /* greenlets (gid 0: threads) with at least one
                               ground-truth point */
    size_t shadows;         /* greenlets, or threads of gid 0, checked */
    size_t marks;           /* MARK records */
    size_t truth_points;    /* ground-truth points (gr_check_ground_truth) */
    size_t switch_truth;    /* of them: SWITCH/THROW records with the
                               target's real stack */
    size_t continued;       /* SWITCH/THROW records flagged continued: the
                               target's stack is what its records give, as
                               nothing ran unseen (FORMAT §4); they count
                               with ground-truth points in greenlets_truth */
    size_t stacks;          /* STACK records (real stacks at stop) */
    uint64_t dropped;       /* trailer `dropped` (0 without a trailer) */
    uint64_t gap;           /* records left out by ring mode (GAP) */
    uint64_t missing;       /* trailer `events` minus the records the file
                               holds, when more (records lost unaccounted) */
    int profile_off;        /* META profile: off (start(profile=False)): no
                               profile events, so the real stacks were not
                               compared (blind spots not checkable) */
    const char *nothing;    /* static text: why nothing was checked (no
                               complete record, or no event of the
                               program); NULL when something was */
} gr_coverage;

/* Whether record r is a ground-truth point for the blind_spot rule: a
 * record that carries the real Python stack of its greenlet in the middle
 * of the run, so that the shadow stack can be compared with it: MARK, and
 * a SWITCH/THROW with the target's real stack (GR_SW_REAL_STACK, not seen
 * inside a callback: tracing 0), a point of the target greenlet.  (STACK
 * records at stop are ground truth too, but only at the end: they are
 * counted apart in gr_coverage.stacks.)  Extend this function when another
 * record carries a real stack. */
int gr_check_ground_truth(const gr_trace *t, const gr_record *r);

/* Whether code id `code` is greenreplay's own (its Python package, file
 * "<greenreplay>/...", or its C functions "greenreplay.*" /
 * "_greenreplay.*"): events of such code are the recorder's, not the
 * program's. */
int gr_code_is_own(const gr_trace *t, uint32_t code);

/* Warnings of one kind counted, not listed: the propagation rule lists
 * the refutations of a greenlet's first GR_PROP_LISTED predictions in full
 * (at most GR_PROP_TRACE_LISTED in the whole trace) and counts the others
 * here (docs/RULES.md), so that a 3.12+ trace with a prediction at
 * every switch does not keep a ~350-byte warning for each: one entry per
 * greenlet for those past its first predictions (for at most
 * GR_PROP_FOLDED_LINES greenlets), and one for the trace (`whole`) for
 * the rest. */
typedef struct gr_folded {
    enum gr_rule rule;   /* GR_RULE_PROPAGATION */
    int whole;           /* 1: the trace's count of refutations past the
                            caps (GR_PROP_TRACE_LISTED, GR_PROP_FOLDED_LINES;
                            tid and gid 0, unused); 0: the greenlet's past
                            its first predictions */
    uint64_t tid, gid;   /* the greenlet (whole 0) */
    uint64_t count;      /* warnings not listed (>= 1) */
} gr_folded;

/* Refuted predictions listed in full per greenlet: those of its first
 * GR_PROP_LISTED predictions (counted in the order made, so that a split
 * check lists the same ones). */
#define GR_PROP_LISTED 3

/* Of those, the trace's first GR_PROP_TRACE_LISTED predictions (in the
 * order made, counted before a split range too) are listed when refuted;
 * the refutations of the later ones are counted in one line, so that the
 * listed warnings of a trace take at most about 350 KB whatever its
 * length. */
#define GR_PROP_TRACE_LISTED 1000

/* The refutations past a greenlet's first GR_PROP_LISTED predictions are
 * counted in a line of its own for the trace's first GR_PROP_FOLDED_LINES
 * greenlets to have more than GR_PROP_LISTED predictions (in the order of
 * their (GR_PROP_LISTED + 1)th, counted before a split range too); those
 * of later greenlets in the trace's one line. */
#define GR_PROP_FOLDED_LINES 1000

/* One function in a program profiler's attribution (gr_prof_attr): its
 * Python calls, and who else was involved (the profiler that got a missed
 * call, the greenlet whose call a profiler saw as foreign; the first). */
typedef struct gr_prof_fn {
    uint32_t code;       /* code id; 0: the functions past the list's cap */
    uint64_t count;
    uint64_t other;      /* missed: the profiler id that got the first one
                            (0 none); foreign: the greenlet that ran it */
} gr_prof_fn;

/* Most functions listed per profiler and list (the rest in one entry of
 * code 0). */
#define GR_PROF_FN_MAX 24

/* What one of the program's profilers saw (rule attribution, docs/RULES.md):
 * the Python calls delivered to it while it was the installed profile
 * function of its thread (or reached through one that chains it), those of
 * its owner (`own`) and of other greenlets (`foreign`), and the calls its
 * owner ran while it was enabled but not installed (`missed`). */
typedef struct gr_prof_attr {
    uint32_t id;         /* PROFILER id */
    uint8_t kind;        /* enum gr_profiler_kind */
    uint32_t type;       /* string id, 0 none */
    uint32_t code;       /* its function's code id, 0 none */
    uint64_t tid, gid;   /* owner: the thread and greenlet that first
                            enabled it */
    int thread_wide;     /* enabled in a main greenlet (or with no
                            greenlet, or by another thread): owned by every
                            greenlet of its thread */
    uint32_t frame;      /* code id of the frame that first enabled it */
    uint64_t first_index; /* that HOOK */
    uint32_t chains;     /* the profiler it passes events on to (it read
                            sys.getprofile() before installing itself), 0 */
    uint64_t intervals;  /* times installed */
    uint64_t seen, own, foreign, missed; /* Python calls */
    uint64_t missed_by_none; /* of missed: while no program profiler was
                            installed */
    uint64_t inside;     /* calls of its own function in which greenlets
                            ran: what they missed there is not counted */
    uint64_t first_missed, first_foreign; /* record index + 1, 0 none */
    gr_prof_fn *own_fn, *missed_fn, *foreign_fn; /* owned, by count */
    size_t nown_fn, nmissed_fn, nforeign_fn;
} gr_prof_attr;

/* Result of checking one trace.  Everything is owned; free with
 * gr_check_result_free. */
typedef struct gr_check_result {
    gr_violation *v;     /* sorted by index, then detection order */
    size_t nv, cap_v;
    int nrules;          /* rules checked: the first nrules of enum gr_rule
                            (GR_NRULES_CHECK, or GR_NRULES with --stall) */
    size_t counts[GR_NRULES];
    size_t nallowed;     /* of nv, those gr_check_allow allowed */
    size_t nadvisory;    /* of nv, those not failing by default (advisory) */
    gr_note *notes;      /* in order of first sight of the greenlet */
    size_t nnotes, cap_notes;
    char **warnings;     /* owned lines (trailer drops/errors, truncation) */
    size_t nwarnings, cap_warnings;
    char **infos;        /* owned lines: what the checker knows to be no
                            violation (CPython's or a library's defined
                            behaviour, a prediction nothing confirmed),
                            said once with a count; never in the exit
                            status */
    size_t ninfos, cap_infos;
    char *summary;       /* owned figures of extra checks (stall.h), lines
                            ending in newlines; NULL when none */
    gr_folded *folded;   /* warnings counted per greenlet, not listed: one
                            entry per greenlet, in the order of its first
                            one counted (a split check: those about its
                            range's switches) */
    size_t nfolded, cap_folded;
    gr_coverage coverage; /* what was checkable */
    gr_prof_attr *prof;  /* the program's profilers (rule attribution), in
                            id order; none when the program installed none */
    size_t nprof;
    size_t prof_fn_max;  /* functions listed per profiler and list: 0 is
                            GR_PROF_FN_MAX; conform sets it (after
                            gr_checker_new) to list every function */
} gr_check_result;

/* Check every record of t (a successfully read trace, complete or
 * truncated) and fill *res (need not be initialised).  Exits(2) on out of
 * memory.  Returns the number of violations. */
size_t gr_check_run(const gr_trace *t, gr_check_result *res);

/* Check a trace opened with gr_trace_open, reading it one chunk at a time
 * (a loaded trace is checked like gr_check_run).  Memory: one chunk, the
 * definitions, and per thread and greenlet its shadow stack and a few
 * records of context (docs/ARCHITECTURE.md); violations keep their
 * context lines (gr_violation.ctx_line).  Returns the number of
 * violations, or SIZE_MAX when the trace turned out corrupt part way
 * (t->err; *res is then released and zeroed). */
size_t gr_check_stream(gr_trace *t, gr_check_result *res);

/* Release what *res owns and zero it. */
void gr_check_result_free(gr_check_result *res);

/* ---- step by step --------------------------------------------------- */

/* A check in progress: the shadow stacks after the records replayed so
 * far.  Opaque. */
typedef struct gr_checker gr_checker;

/* Start checking t into *res (need not be initialised; res->nrules is
 * set to GR_NRULES_CHECK).  No record is replayed yet.  Exits(2) on out
 * of memory.  Free with gr_checker_finish. */
gr_checker *gr_checker_new(const gr_trace *t, gr_check_result *res);

/* keep 1: never free a dead greenlet's shadow (the checker's memory then
 * grows with every greenlet ever seen, as before the tomb, tomb.h); 0, the
 * default: free it at its DEAD, keeping the facts later verdicts need.
 * The verdicts, notes and coverage are the same either way: tests and the
 * fuzz target compare the two.  Call before the first record. */
void gr_checker_keep_dead(gr_checker *c, int keep);

/* on 0: replay every record through the rules of its kind, one by one;
 * 1, the default: replay a plain record (a profile event that the running
 * greenlet's shadow takes as it is, rule.h) that no rule wants without
 * them.  The verdicts, notes and coverage are the same either way: tests
 * and the fuzz target compare the two.  Call before the first record. */
void gr_checker_plain(gr_checker *c, int on);

/* Replay the records from the current position up to, not including,
 * index `end` (clamped to the number of records read, gr_trace_count); a
 * smaller `end` does nothing.  Afterwards the shadows reflect records
 * 0..end-1.  A streamed trace must still hold the records from the
 * current position on (advance to gr_trace_count, detach, then decode the
 * next chunk). */
void gr_checker_advance(gr_checker *c, size_t end);

/* Before t (streamed) decodes its next chunk: copy the records of the
 * current chunk that c may still cite as context.  No-op for a loaded
 * trace. */
void gr_checker_detach(gr_checker *c);

/* Number of records replayed so far. */
size_t gr_checker_position(const gr_checker *c);

/* State of a greenlet at the current position. */
enum gr_shadow_state {
    GR_SHADOW_UNSEEN = 0, /* no record of this gid replayed yet */
    GR_SHADOW_RUNNING,    /* the running greenlet of its thread */
    GR_SHADOW_IDLE,       /* not running: suspended, or not started */
    GR_SHADOW_DEAD,       /* after its DEAD record */
};

/* State of greenlet gid (> 0); *tid receives the thread of its shadow (the
 * first thread it was seen on), 0 when unseen. */
enum gr_shadow_state gr_checker_greenlet(const gr_checker *c, uint64_t gid, uint64_t *tid);

/* Compare the Python frames of gid's shadow (C entries left out) with
 * ids[0..n) (outermost first; C code ids are left out too).  cut: ids are
 * only the innermost frames of the real stack, so a shadow with more
 * frames outside them still matches.  A shadow whose base is unknown (seed
 * cut at the cap) is compared on its known innermost frames.  Returns 0
 * when equal; 1 when they differ, and then *diff (if diff is not NULL)
 * receives an owned one-line description ("profiler missed ...; real
 * stack: ...; shadow: ..."). */
int gr_checker_compare(gr_checker *c, uint64_t gid, const uint32_t *ids, size_t n, int cut,
                       char **diff);

/* The shadow stack of greenlet gid (its first thread's) at the current
 * position: *n code ids, outermost first, C entries included (a code's
 * kind tells which); *base_unknown is 1 when frames below the first are
 * unknown (seed cut at the cap, or never seeded).  The array is the
 * checker's scratch, valid until the next call on c; NULL with *n = 0 for
 * a greenlet not seen yet.  Used by the HTML report (html.h). */
const uint32_t *gr_checker_shadow(gr_checker *c, uint64_t gid, size_t *n,
                                  int *base_unknown);

/* Replay the remaining records, run the end-of-trace checks, sort the
 * violations and free c.  Returns the number of violations in *res. */
size_t gr_checker_finish(gr_checker *c);

/* Add a violation to res: message is taken over (owned by res from now
 * on), ctx[0..nctx) are record indices (at most GR_CONTEXT_MAX kept).
 * Results are sorted by gr_checker_finish (or gr_check_sort). */
void gr_check_add_violation(gr_check_result *res, enum gr_rule rule, uint64_t index,
                            uint64_t tid, uint64_t gid, char *message, const size_t *ctx,
                            int nctx);

/* Add a warning line to res (taken over). */
void gr_check_add_warning(gr_check_result *res, char *message);

/* Allow the violations of res that specs[0..n) name: "RULE" (every
 * violation of that rule) or "RULE:FUNCTION" (those whose message names
 * FUNCTION as a code, e.g. "blind_spot:Pool._after_run_task").  An
 * allowed violation stays in res (listed, counted) with `allowed` set;
 * res->nallowed counts them.  Returns the index in specs of the first
 * spec whose RULE is no rule name, or -1. */
long gr_check_allow(gr_check_result *res, const char *const *specs, size_t n);

/* strict 1: the known-benign causes of the subject profiler going off
 * (a library that removes it by design, blind_spot.c) are displaced
 * findings like any other cause; 0 (the default): each is one note with a count.  For every
 * check that follows (`check --strict-known`). */
void gr_check_known_causes(int strict);

/* The rules that fail the check although they do not by default
 * (displaced): names[0..n) are rule names; naming a rule that fails
 * anyway is allowed and does nothing.  For every check that follows
 * (`check --fail-on RULE`, pyproject `fail_on = [...]`).  Returns the
 * index in names of the first one that is no rule name, or -1 (then
 * nothing changed). */
long gr_check_fail_on(const char *const *names, size_t n);

/* Whether rule fails the check by default or through gr_check_fail_on
 * (1), or its findings are advisory (0). */
int gr_check_rule_fails(enum gr_rule rule);

/* Violations of res that make the exit status 1: neither allowed nor
 * advisory. */
size_t gr_check_failing(const gr_check_result *res);

/* Add a note line to res (taken over): no violation, no warning. */
void gr_check_add_info(gr_check_result *res, char *message);

/* Sort res's violations by index, then order of detection. */
void gr_check_sort(gr_check_result *res);

#endif
