/* shadow.h - the checker's shared state, read by every rule (rule.h):
 * per-thread state (the running greenlet, the last records for context),
 * per-(thread, greenlet) shadow stacks built from the profile events, and
 * the helpers rules use to name code, compare stacks and report.
 *
 * Internal to replay/rules/: check.h is the public interface.  The engine
 * (check.c) creates the threads and shadows a record concerns, lets every
 * rule look at the record against the state *before* it (rule.h,
 * on_record), then applies the record to the shared state (ck_apply).  A
 * rule never changes the shadows; what it keeps of its own lives in its
 * own state (ck.rule_state, ck_slot).
 */
#ifndef GR_SHADOW_H
#define GR_SHADOW_H

#include "check.h"
#include "idmap.h"
#include "text.h"
#include "tomb.h"

#include <stddef.h>
#include <stdint.h>

/* One shadow-stack entry. */
typedef struct ck_entry {
    uint32_t code;
    uint8_t is_c;   /* pushed by C_CALL (or a C code id in a seed) */
    uint8_t seed;   /* came from the GREENLET record's seed (CK_SEED), or
                       from a real stack after a blind spot (CK_RESEED) */
    uint8_t gap_ok; /* seed entry: one unmatched C_RETURN/C_EXCEPTION is
                       tolerated while it is the top (a C call we never saw) */
} ck_entry;

#define CK_SEED 1   /* ck_entry.seed: from the GREENLET record */
#define CK_RESEED 2 /* ck_entry.seed: re-seeded from a real stack; the
                       profiler saw neither its call nor (yet) its return */

/* Shadow stack of one (thread, greenlet).  72 bytes: its index is scaled
 * at every record (c->sh[si]), so the flags are bytes. */
typedef struct ck_shadow {
    uint64_t tid, gid;
    ck_entry *e;
    size_t n, cap;
    uint8_t base_unknown; /* frames below e[0] unknown (seed cut, or never seeded) */
    uint8_t dead;
    uint8_t stack_seen;   /* a STACK record was seen for it */
    uint8_t freed;        /* a free slot (ck_bury), dead and empty */
    uint8_t counted;      /* coverage counts it: gid 0, or its gid's first */
    uint64_t dead_index;
    size_t truth;         /* ground-truth points seen in it */
    uint64_t seq;         /* creation number (kept across a burial): the
                             order of the verdicts about open shadows */
} ck_shadow;

#define CK_RECENT 3 /* records of context before the one a violation is at */
#define CK_RING (CK_RECENT + 1) /* records kept per thread: a saved context
                                   (a switch or MARK and the CK_RECENT before
                                   it) is still whole at the thread's next
                                   record */

/* A record of a thread's ring: its index, and once a streamed trace has
 * dropped its chunk, a copy of it and of its stack. */
typedef struct ck_ringent {
    size_t idx;
    int own;            /* rec/ids hold the copy */
    gr_record rec;
    uint32_t *ids;
    size_t cap;
} ck_ringent;

/* Per-thread state. */
typedef struct ck_thread {
    uint64_t tid;
    int has_current;
    uint64_t current;       /* gid of the greenlet running on the thread */
    int expect_greenlet;    /* THREAD seen, its GREENLET not yet */
    ck_ringent ring[CK_RING]; /* last records of this thread, record number
                                 nseen - 1 at ring[(nseen - 1) % CK_RING] */
    uint64_t nseen;
    int skip_mark_return;   /* a MARK without our c_call: the C_RETURN of
                               mark that follows is ignored */
    uint32_t skip_code;
    int observer_gap;       /* a HOOK with GR_HOOK_UNANNOUNCED: the recorder
                               itself saw nothing from the slot's takeover
                               to that HOOK; the next MARK's real stack
                               reseeds the shadow (no comparison there) */
    uint64_t gap_index;     /* that HOOK */
    int ran_gap;            /* a HOOK with GR_HOOK_RAN: the thread ran with
                               the program's profile function alone before
                               the recorder saw the change, so a C call's
                               c_call or c_return may be missing; the next
                               imbalance of the thread names it (once) */
    uint64_t ran_index;     /* that HOOK */
    int intrace;            /* a HOOK with GR_HOOK_IN_TRACE: a call or
                               return the program's trace function handled
                               may have gone to the function it left in the
                               slot; until the frame on top then returns */
    uint64_t intrace_index; /* that HOOK */
    uint64_t intrace_gid;   /* its greenlet */
    size_t intrace_depth;   /* its shadow's depth after it */
    int had_events;         /* a profile event (CALL..C_EXCEPTION) was seen */
    int unobserved;         /* a MARK on this thread, before any of its
                               profile events, found no profile function of
                               the recorder's (a thread the profiler never
                               reached): the thread's returns were never
                               seen, so frames still open at STOP are a
                               note, not an imbalance */
    uint64_t last_gid;      /* the last greenlet with a record on this
                               thread, and its shadow (a cache) */
    size_t last_si;         /* SIZE_MAX: none */
    uint32_t want_next;     /* rules (bits of rule_bit) that see this
                               thread's next record whatever its kind
                               (ck_want_next) */
} ck_thread;

/* What the engine hands each rule for one record. */
typedef struct ck_event {
    const gr_record *r;
    ck_thread *th;          /* r's thread */
    size_t th_index;        /* its slot (ck_slot) */
    size_t si;              /* shadow of r->gid (SWITCH/THROW: the origin),
                               SIZE_MAX when the kind has none (THREAD, INSTR) */
    size_t st;              /* SWITCH/THROW: shadow of the target */
    int skip;               /* a C_RETURN of mark after an unbracketed MARK:
                               not applied to the shadow, and no evidence
                               for imbalance or propagation */
} ck_event;

typedef struct gr_checker ck;

/* An entry of the engine's cache of shadow indices (check.c, shadow_on):
 * (tid, gid) -> si1 - 1; si1 0 is an empty entry.  A shadow's index does
 * not change while it lives; a shadow freed at its greenlet's DEAD
 * (ck_bury) is cleared from this cache and from its thread's last_si, and
 * its index is given to a later shadow. */
typedef struct ck_shcache {
    uint64_t tid, gid;
    size_t si1;
} ck_shcache;
#define CK_SHCACHE 4096 /* entries, a power of two: 96 KB */

/* A dead greenlet's stack memory, kept for a new shadow: a trace with a
 * greenlet per task makes a new shadow about every hundred records, and
 * its stack would otherwise grow from nothing (8, 16, 32 ... entries)
 * each time.  At most CK_SPARE of them, of at most CK_SPARE_CAP entries:
 * 512 KB. */
typedef struct ck_spare {
    ck_entry *e;
    size_t cap;
} ck_spare;
#define CK_SPARE 64
#define CK_SPARE_CAP 1024

struct gr_checker {
    const gr_trace *t;
    gr_check_result *res;
    size_t pos;             /* records replayed so far */
    ck_shadow *sh;
    size_t nsh, cap_sh;
    gr_idmap shmap;
    gr_idmap glmap;         /* (gid, 0) -> first shadow of that gid */
    ck_thread *th;
    size_t nth, cap_th;
    gr_idmap thmap;
    gr_sb msg;              /* scratch for messages */
    uint32_t *fa, *fb;      /* scratch stacks for comparisons */
    size_t cap_fa, cap_fb;
    struct {                /* coverage (gr_check_coverage) */
        size_t program_events; /* records of the program */
        size_t marks, truth_points, switch_truth, continued, stacks;
        size_t cov_shadows, cov_greenlets, cov_truth; /* counted as shadows
                               are created and see ground truth */
    } cov;
    int profile_off;        /* META profile: off (no subject at all) */
    struct {                /* the STOP record, once replayed */
        int stopped;
        size_t stop_index;
        size_t stop_ctx[GR_CONTEXT_MAX];
        int stop_nctx;
        char *stop_text[GR_CONTEXT_MAX]; /* its lines (streamed; owned) */
    } stop;
    int lines;              /* violations keep context lines (streamed) */
    struct {                /* facts by code id */
        size_t metas_seen;  /* META definitions looked at */
        uint8_t *gen;       /* 1 a generator's or coroutine's code (META
                               generator) */
        size_t ngen;
        uint8_t *own;       /* by code id below nown: 1 greenreplay's own
                               (gr_code_is_own), 0 the program's */
        size_t nown;
    } code;
    struct {                /* what notes report rather than violations */
        uint64_t delegated; /* ground-truth points whose only difference
                               was frames of a throw() delegated through
                               them (ck_compare; CPython issue 73776) */
        uint64_t delegated_first; /* the record of the first of them */
        uint64_t explained_mark; /* 1 + index of a MARK that confirmed a
                               predicted blind spot (propagation.c): its
                               own blind_spot findings are that cause,
                               reported once by propagation; 0 none */
        uint64_t unconfirmed; /* predictions no evidence decided (notes) */
        uint64_t unconfirmed_first; /* the switch of the first of them */
    } notes;
    uint64_t cmp_index;     /* the record a comparison is made at */
    void *rule_state[GR_NRULES_CHECK]; /* each rule's own (rule.h) */
    struct {                /* split.h: a range of chunks checked */
        int prefix;         /* records before the range: rules marked
                               stateless are not run */
        int no_end;         /* stopped before the end of the trace: no
                               end-of-trace verdicts, notes or warnings */
        uint64_t split_lo;  /* the range's first record once it began,
                               else 0 */
        uint64_t split_hi;  /* the first record past the range once known
                               (the worker reads on), else UINT64_MAX:
                               what is counted about a switch there is the
                               next worker's (gr_check_result.folded) */
    } split;
    uint32_t kind_rules[256]; /* by record tag: the rules (bit k: gr_rule_table[k])
                                 whose on_record wants that kind (rule.h) */
    uint32_t plain_rules[256]; /* by record tag: those of kind_rules that want
                                 its plain records too (rule.h, skips_plain);
                                 CK_NEVER_PLAIN for a tag that is no profile
                                 event, or with plain replay off */
    uint32_t rule_bit[GR_NRULES]; /* by rule id: its bit in kind_rules, 0 none */
    ck_tomb tomb;           /* what is kept of freed dead greenlets, and
                               which gids were seen (tomb.h) */
    int keep_dead;          /* gr_checker_keep_dead: never bury */
    struct {                /* caches, and the shadows' free list */
        size_t last_th;     /* slot of the last record's thread */
        ck_shcache *shcache; /* [CK_SHCACHE] by (gid ^ tid << 7) mod size */
        size_t *free_si;    /* indices of freed shadows, for reuse */
        size_t nfree, cap_free;
        uint64_t nseq;      /* shadows created (ck_shadow.seq) */
        ck_spare spare[CK_SPARE]; /* stacks of dead greenlets, for new
                               shadows (ck_get_shadow) */
        size_t nspare;
    } cache;
};

/* plain_rules bit of a tag whose records are never plain. */
#define CK_NEVER_PLAIN (UINT32_C(1) << 31)

/* Whether rule `id` sees the next record of thread th whatever its kind
 * (on: 1), or only the kinds it declared (on: 0), rule.h. */
static inline void ck_want_next(ck *c, ck_thread *th, enum gr_rule id, int on)
{
    if (on)
        th->want_next |= c->rule_bit[id];
    else
        th->want_next &= ~c->rule_bit[id];
}

/* ---- threads and shadows ---------------------------------------------- */

/* The state of thread tid, created when new.  Pointers stay valid until
 * the next call; ck_thread_index gives a stable slot number. */
ck_thread *ck_get_thread(ck *c, uint64_t tid);

/* Index of the shadow of (tid, gid), created empty with an unknown base
 * when new, or brought back as it was at its DEAD when it was freed then
 * (ck_bury; still dead: the record that names it is reported).  Indices
 * stay valid while the shadow lives; pointers only until the next call. */
size_t ck_get_shadow(ck *c, uint64_t tid, uint64_t gid);

/* Release the stack of shadow s (its greenlet died): kept as a spare, or
 * freed. */
void ck_drop_stack(ck *c, ck_shadow *s);

/* Free shadow si (dead; its gid not 0, never on two threads) of thread
 * slot th_slot: its facts go to the tomb (tomb.h), its index to the free
 * list; the caller clears the caches that hold si (check.c). */
void ck_bury(ck *c, size_t si, size_t th_slot);

/* The indices of the live shadows (not freed) in creation order, into
 * *order (grown; owned by the caller); returns how many. */
size_t ck_shadows_in_order(const ck *c, size_t **order, size_t *cap);

/* Index of the shadow of (tid, gid) if it exists. */
int ck_find_shadow(const ck *c, uint64_t tid, uint64_t gid, size_t *si);

/* Shadow index of the innermost Python entry of s, SIZE_MAX if none. */
size_t ck_innermost_py(const ck_shadow *s);

/* Whether code id `code` is a C function's. */
int ck_code_is_c(const gr_trace *t, uint32_t code);

/* A SWITCH or THROW found at a mark or at stop with the profile slot not
 * the recorder's, on a thread where the recorder had events: its function
 * was taken out without the audit event (a C extension writing the thread
 * state, as yappi 1.0's start does), so it saw nothing since.  The HOOK
 * with GR_HOOK_UNANNOUNCED written after it names the cause. */
int ck_unseen_takeover(const ck *c, const ck_event *e);

/* Apply record e->r to the shared state (after every rule looked at it):
 * push, pop and resync shadows, seed and reseed them, the running
 * greenlet, DEAD, STOP. */
void ck_apply(ck *c, const ck_event *e);

/* Push an entry on shadow s. */
static inline void ck_push(ck_shadow *s, uint32_t code, int is_c)
{
    if (s->n == s->cap)
        s->e = gr_xgrow(s->e, &s->cap, s->n + 1, sizeof *s->e);
    s->e[s->n++] = (ck_entry){.code = code, .is_c = (uint8_t)is_c};
}

/* A record of thread th, attributed to shadow s, is plain (rule.h,
 * skips_plain) when it is a profile event of the greenlet running on th,
 * whose shadow is alive (ck_plain_state), that the shadow takes as it is:
 * a CALL or C_CALL (pushed: ck_plain_pushes), or a RETURN, C_RETURN or
 * C_EXCEPTION of the entry on top (the same code and kind: popped), and
 * not a C_RETURN that an unbracketed MARK left to skip.  Most records of
 * a trace are plain; ck_apply does nothing else with one than the push or
 * pop and th->had_events.  (check.c, plain_run, tests it record by
 * record.) */
static inline int ck_plain_state(const ck_thread *th, const ck_shadow *s, uint64_t gid)
{
    return th->has_current && th->current == gid && !s->dead && !th->skip_mark_return;
}

/* Whether a plain record of kind tag pushes (else it pops). */
static inline int ck_plain_pushes(unsigned tag)
{
    return tag == GR_CALL || tag == GR_C_CALL;
}

/* ---- per-rule storage ------------------------------------------------- */

/* Element i of a rule's growable array *v (zeroed when new) of elements of
 * `size` bytes, *n of them so far. */
void *ck_slot_grow(void **v, size_t *n, size_t i, size_t size);
static inline void *ck_slot(void **v, size_t *n, size_t i, size_t size)
{
    return i < *n ? (char *)*v + i * size : ck_slot_grow(v, n, i, size);
}

/* ---- context and violations ------------------------------------------- */

/* Context of record index i on thread th: its recent records, then i. */
int ck_make_ctx(const ck_thread *th, size_t i, size_t ctx[GR_CONTEXT_MAX]);

/* Dump lines of ctx[0..n) into text[] (owned), for a streamed trace. */
void ck_ctx_lines(const ck *c, const ck_thread *th, const size_t *ctx, int n,
                  char *text[GR_CONTEXT_MAX]);

/* Free text[0..GR_CONTEXT_MAX) and set them NULL. */
void ck_free_lines(char *text[GR_CONTEXT_MAX]);

/* Record a violation whose message is in c->msg (which is then reset).
 * Streamed: its context lines are text[] (taken over) when given, else
 * made now from th's ring (th may be NULL). */
void ck_violate_lines(ck *c, enum gr_rule rule, uint64_t index, uint64_t tid, uint64_t gid,
                      const size_t *ctx, int nctx, const ck_thread *th, char **text);

/* Violation at record r of thread th (context: th's recent records + r). */
void ck_violate(ck *c, enum gr_rule rule, const gr_record *r, const ck_thread *th, uint64_t gid);

/* A warning line from c->msg (then reset). */
void ck_add_warning(ck *c);

/* A note line from c->msg (then reset): no violation. */
void ck_add_info(ck *c);

/* An informational note about the open entries of s. */
void ck_add_note(ck *c, enum gr_note_kind kind, const ck_shadow *s);

/* ---- naming and comparing --------------------------------------------- */

/* Kind of r ("CALL", ...). */
const char *ck_kind_name(const gr_record *r);

/* Append code's name to c->msg. */
void ck_code_name(ck *c, uint32_t code);

/* The value of the first META `key` as a NUL-terminated copy in buf (at
 * most n - 1 bytes kept), or NULL without one. */
const char *ck_meta_value(const ck *c, const char *key, char *buf, size_t n);

/* Append code ids (outermost first) as "a > b", eliding the middle of long
 * stacks; "-" when n == 0. */
void ck_codes(ck *c, const uint32_t *ids, size_t n);

/* Append shadow entries [from, to) of s like ck_codes(). */
void ck_entries(ck *c, const ck_shadow *s, size_t from, size_t to);

/* Python frames of shadow s into c->fa; returns how many. */
size_t ck_shadow_py(ck *c, const ck_shadow *s);

/* Python frames of a record's stack into c->fb; returns how many. */
size_t ck_record_py(ck *c, const gr_record *r);

/* Compare shadow Python frames (c->fa, na) with the real ones (c->fb, nb),
 * outermost first.  real_cut: only the innermost real frames are listed;
 * base_unknown: only the innermost shadow frames are known.  On a
 * difference, appends to c->msg what the profiler missed and returns 1. */
int ck_compare(ck *c, size_t na, size_t nb, int real_cut, int base_unknown);

/* Whether code id `code` is a generator's, coroutine's or async
 * generator's (META generator, written by recorders since format 1.2's
 * generator METAs; 0 in older traces). */
int ck_code_is_generator(const ck *c, uint32_t code);

/* ck_compare's answer, nothing appended. */
int ck_differs(const ck *c, size_t na, size_t nb, int real_cut, int base_unknown);

/* Whether the compared windows are equal (ck_compare then finds nothing,
 * notes nothing and appends nothing): a cheap test before a message is
 * begun. */
int ck_same(const ck *c, size_t na, size_t nb, int real_cut, int base_unknown);

#endif
