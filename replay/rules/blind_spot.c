/* blind_spot.c - the blind_spot rule (docs/RULES.md): the profiler
 * missed events, shown by a ground-truth point whose real stack differs
 * from the shadow (a MARK, a SWITCH/THROW carrying the target's real
 * stack), by a MARK not bracketed by the c_call/c_return of `mark`, or by
 * a MARK on a thread without the profile function.  It also finds the
 * program removing or replacing the subject profiler (HOOK records) while
 * Python calls ran unseen: those are findings of their own rule,
 * displaced (one per cause; not failing by default, gr_check_fail_on).
 * A recording without profile events (start(profile=False), META
 * profile: off) has no shadow built from events: its real stacks (MARK,
 * SWITCH/THROW) are not compared. */
#include "rule.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per thread. */
typedef struct bthread {
    int pending_mark;       /* a bracketed MARK waits for its C_RETURN */
    size_t mark_index;
    uint64_t mark_gid;
    uint32_t mark_code;
    size_t mark_ctx[GR_CONTEXT_MAX];
    int mark_nctx;
    int unprofiled_reported;/* MARK without the profile function reported */
    uint32_t greenlet_cb;   /* code of the program's greenlet trace callback
                               (HOOK slot greenlet; 0 none, or a C callable) */
    /* The subject profiler (HOOK records): */
    int subject_off;        /* removed or displaced by the program */
    size_t off_index;       /* the HOOK that turned it off */
    size_t off_ctx[GR_CONTEXT_MAX];
    int off_nctx;
    char *off_text[GR_CONTEXT_MAX]; /* its lines (streamed; owned) */
    uint64_t off_action, off_gid;
    uint32_t off_code;      /* the C call during which it happened */
    uint64_t off_by;        /* the thread that made it, if another one
                               (HOOK GR_HOOK_BY_OTHER), else 0 */
    uint32_t off_frame;     /* innermost Python frame then (0 unknown) */
    uint64_t off_calls;     /* Python calls since, unseen by the subject */
    int off_unannounced;    /* the HOOK came without the audit event */
    int off_before;         /* the program's function was there before
                               start() (HOOK GR_HOOK_BEFORE) */
    uint32_t off_first[3];  /* the first of them */
} bthread;

/* A cause of the subject profiler going off (what the program did, in
 * which C call and Python frame): reported at the episode with unseen
 * calls that began first (the earliest HOOK), whichever ended first; the
 * other episodes of the same cause (gevent's thread pool removes the
 * profiler after every task) are counted, not reported.  Episodes on
 * several threads overlap: one that ends may not be the first to begin
 * while an earlier one of the same cause is still open (it may yet run a
 * call unseen).  So the episode that ended is kept as the candidate, and
 * reported once no episode of its cause that began before it is open
 * (at once, when none overlaps it). */
typedef struct bcause {
    uint64_t action;
    uint32_t code, frame;
    int before;             /* set before start() (GR_HOOK_BEFORE) */
    int reported;           /* the named episode's violation was written */
    uint64_t first_index;   /* the HOOK of the named episode (or candidate) */
    uint64_t first_calls;   /* its unseen calls (while a candidate) */
    uint64_t first_tid, first_gid;
    size_t first_ctx[GR_CONTEXT_MAX];
    int first_nctx;
    char *first_text[GR_CONTEXT_MAX]; /* its context lines (streamed; owned) */
    char *first_msg;        /* the candidate's message (owned), NULL once
                               reported */
    int known;              /* 1 + index in known_causes: documented
                               behaviour of a library, reported as a note
                               (gr_check_known_causes) */
    uint64_t repeats;       /* the other episodes with unseen calls */
    uint64_t repeat_calls;  /* Python calls they ran unseen */
    uint64_t last_index;    /* the HOOK of the latest-beginning of them */
} bcause;

/* Known-benign causes: a library that removes or replaces the profile
 * function by design, matched by the Python frame that made the change
 * (qualname, and the end of its file name).  Each is reported as one note
 * with a count, not a violation, unless `check --strict-known` (then as
 * any other cause).  Add an entry only with a public source. */
static const struct known_cause {
    const char *qualname, *file_end;
    uint64_t action;
    const char *what;      /* who does it, as users know it */
    const char *source;    /* where it is documented or coded */
} known_causes[] = {
    {"ThreadPool._after_run_task", "gevent/threadpool.py", GR_HOOK_CLEARED,
     "gevent's thread pool (used by its default resolver for getaddrinfo)",
     "gevent/threadpool.py: _after_run_task calls sys.setprofile(None) after every task"},
    {"_WorkerGreenlet._after_run_task", "gevent/threadpool.py", GR_HOOK_CLEARED,
     "gevent's thread pool (used by its default resolver for getaddrinfo)",
     "gevent/threadpool.py: _after_run_task calls sys.setprofile(None) after every task"},
};

static int strict_known; /* gr_check_known_causes */

void gr_check_known_causes(int strict)
{
    strict_known = strict != 0;
}

/* 1 + the index in known_causes of the cause (action, frame), or 0. */
static int known_cause(const ck *c, uint64_t action, uint32_t frame)
{
    const gr_trace *t = c->t;
    if (strict_known || !frame || frame > t->ncodes)
        return 0;
    size_t qn, fn;
    const uint8_t *q = gr_trace_string(t, t->codes[frame].qualname, &qn);
    const uint8_t *f = t->codes[frame].file ? gr_trace_string(t, t->codes[frame].file, &fn) : NULL;
    if (!q || !f)
        return 0;
    for (size_t i = 0; i < sizeof known_causes / sizeof known_causes[0]; i++) {
        const struct known_cause *k = &known_causes[i];
        size_t kq = strlen(k->qualname), kf = strlen(k->file_end);
        if (k->action == action && qn == kq && memcmp(q, k->qualname, kq) == 0 && fn >= kf &&
            memcmp(f + fn - kf, k->file_end, kf) == 0 && (fn == kf || f[fn - kf - 1] == '/'))
            return (int)i + 1;
    }
    return 0;
}

typedef struct bstate {
    bthread *th;            /* by thread slot */
    size_t nth;
    bcause *causes;
    size_t ncauses, cap_causes;
    size_t npending;        /* causes with a candidate not yet reported */
} bstate;

static bthread *bth(ck *c, size_t slot)
{
    bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    return ck_slot((void **)&b->th, &b->nth, slot, sizeof *b->th);
}

static void init(ck *c)
{
    bstate *b = gr_xrealloc(NULL, sizeof *b);
    memset(b, 0, sizeof *b);
    c->rule_state[GR_RULE_BLIND_SPOT] = b;
}

/* The record after a bracketed MARK on the same thread (next NULL: the
 * trace ended). */
static void resolve_mark(ck *c, const gr_record *next, const ck_thread *th, bthread *bt)
{
    bt->pending_mark = 0;
    if (next && (next->tag == GR_C_RETURN || next->tag == GR_C_EXCEPTION) &&
        next->code == bt->mark_code)
        return;
    gr_sb_puts(&c->msg, "mark not bracketed by c_call/c_return of mark: ");
    if (next)
        gr_sb_printf(&c->msg, "the next record of t%" PRIu64 " is %s at event %" PRIu64
                              ", not the C_RETURN of ",
                     th->tid, ck_kind_name(next), next->index);
    else
        gr_sb_puts(&c->msg, "the trace ends before the C_RETURN of ");
    ck_code_name(c, bt->mark_code);
    ck_violate_lines(c, GR_RULE_BLIND_SPOT, bt->mark_index, th->tid, bt->mark_gid, bt->mark_ctx,
                     bt->mark_nctx, th, NULL);
}

/* The cause bt's episode (open or ended) belongs to, or NULL. */
static bcause *cause_of(bstate *b, const bthread *bt)
{
    for (size_t i = 0; i < b->ncauses; i++) {
        bcause *k = &b->causes[i];
        if (k->action == bt->off_action && k->code == bt->off_code && k->frame == bt->off_frame &&
            k->before == bt->off_before)
            return k;
    }
    return NULL;
}

/* Count an episode of cause k that is not the named one. */
static void add_repeat(bcause *k, uint64_t index, uint64_t calls)
{
    k->repeats++;
    k->repeat_calls += calls;
    if (k->repeats == 1 || index > k->last_index)
        k->last_index = index;
}

/* Write the violation of k's candidate episode if no episode of its cause
 * that began before it is still open on any thread. */
static void flush_cause(ck *c, bcause *k)
{
    bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    if (!k->first_msg)
        return;
    for (size_t i = 0; i < b->nth; i++) {
        const bthread *o = &b->th[i];
        if (o->subject_off && o->off_index < k->first_index && o->off_action == k->action &&
            o->off_code == k->code && o->off_frame == k->frame && o->off_before == k->before)
            return; /* it may yet run a call unseen: then it is the first */
    }
    k->reported = 1;
    b->npending--;
    if (k->known) { /* a note at the end (report) */
        free(k->first_msg);
        k->first_msg = NULL;
        ck_free_lines(k->first_text);
        return;
    }
    gr_sb_puts(&c->msg, k->first_msg);
    free(k->first_msg);
    k->first_msg = NULL;
    ck_violate_lines(c, GR_RULE_DISPLACED, k->first_index, k->first_tid, k->first_gid,
                     k->first_ctx, k->first_nctx, NULL, c->lines ? k->first_text : NULL);
}

static void flush_causes(ck *c)
{
    bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    for (size_t i = 0; b->npending && i < b->ncauses; i++)
        flush_cause(c, &b->causes[i]);
}

/* What the program did to the subject profiler (cause k's or, k NULL,
 * bt's): it follows "was". */
static const char *off_what(const bcause *k, const bthread *bt)
{
    if (k ? k->before : bt->off_before)
        return "displaced by the program's own profile function, set before start()";
    return (k ? k->action : bt->off_action) == GR_HOOK_SET ? "replaced by the program's own profile function"
                                                           : "removed by the program";
}

/* The message of bt's ended episode, in c->msg.  It names the subject
 * "greenreplay's reference profiler": a reader who set a profiler of
 * their own must not read the unseen calls as that profiler's (rule
 * attribution judges it). */
static void episode_message(ck *c, const ck_thread *th, const bthread *bt, const char *until)
{
    gr_sb_printf(&c->msg, "greenreplay's reference profiler on t%" PRIu64 " was %s (HOOK at event %zu",
                 th->tid, off_what(NULL, bt), bt->off_index);
    if (bt->off_by)
        gr_sb_printf(&c->msg, ", made by t%" PRIu64, bt->off_by);
    if (bt->off_code) {
        gr_sb_puts(&c->msg, ", during ");
        ck_code_name(c, bt->off_code);
    }
    if (bt->off_frame) {
        if (bt->off_by)
            gr_sb_printf(&c->msg, "; t%" PRIu64 " was", th->tid);
        gr_sb_puts(&c->msg, " in ");
        ck_code_name(c, bt->off_frame);
    }
    if (bt->off_unannounced)
        gr_sb_puts(&c->msg, "; without the audit event sys.setprofile (the thread state was written "
                            "directly): the recorder found it only at the next MARK and what ran "
                            "before that is missing from the trace too");
    if (!bt->off_calls) { /* unannounced, and no call after its HOOK */
        gr_sb_puts(&c->msg, "): the calls the thread ran before that HOOK were unseen by the "
                            "reference profiler (how many is not known)");
        return;
    }
    gr_sb_printf(&c->msg, "): %" PRIu64 " Python call%s ran unseen by the reference profiler %s "
                          "(first: ", bt->off_calls, bt->off_calls == 1 ? "" : "s", until);
    for (uint64_t k = 0; k < bt->off_calls && k < 3; k++) {
        if (k)
            gr_sb_puts(&c->msg, ", ");
        ck_code_name(c, bt->off_first[k]);
    }
    gr_sb_puts(&c->msg, ")");
    if (bt->off_before || bt->off_action == GR_HOOK_SET)
        gr_sb_puts(&c->msg, "; what the program's own profiler saw is judged apart, by rule "
                            "attribution");
}

/* The end of an episode in which the subject profiler was off on th: with
 * unseen calls, it is its cause's candidate if it began before every
 * other one seen so far (else it is counted); then any candidate no longer
 * waiting for an earlier open episode is reported. */
static void subject_back(ck *c, const ck_thread *th, bthread *bt, const char *until)
{
    if (!bt->subject_off)
        return;
    bt->subject_off = 0;
    bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    /* an unannounced change ran unseen calls by itself: the recorder
     * found it only after them, and they are in no record */
    int unseen = bt->off_calls || bt->off_unannounced;
    bcause *k = unseen ? cause_of(b, bt) : NULL;
    if (unseen && !k) {
        if (b->ncauses == b->cap_causes)
            b->causes = gr_xgrow(b->causes, &b->cap_causes, b->ncauses + 1, sizeof *b->causes);
        k = &b->causes[b->ncauses++];
        memset(k, 0, sizeof *k);
        k->action = bt->off_action;
        k->code = bt->off_code;
        k->frame = bt->off_frame;
        k->before = bt->off_before;
        k->known = known_cause(c, k->action, k->frame);
    } else if (k && (k->reported || bt->off_index > k->first_index)) {
        add_repeat(k, bt->off_index, bt->off_calls);
        k = NULL;
    } else if (k) { /* began before the candidate, which is counted instead */
        add_repeat(k, k->first_index, k->first_calls);
        free(k->first_msg);
        k->first_msg = NULL;
        ck_free_lines(k->first_text);
        b->npending--;
    }
    if (k) { /* the candidate now */
        b->npending++;
        episode_message(c, th, bt, until);
        k->first_msg = gr_sb_take(&c->msg);
        k->first_index = bt->off_index;
        k->first_calls = bt->off_calls;
        k->first_tid = th->tid;
        k->first_gid = bt->off_gid;
        k->first_nctx = bt->off_nctx;
        memcpy(k->first_ctx, bt->off_ctx, sizeof k->first_ctx);
        for (int i = 0; i < GR_CONTEXT_MAX; i++) { /* taken over */
            k->first_text[i] = bt->off_text[i];
            bt->off_text[i] = NULL;
        }
    }
    flush_causes(c);
}

/* HOOK: the program changed a profile slot; the observer kept recording. */
static void on_hook(ck *c, const ck_event *e, bthread *bt)
{
    const gr_record *r = e->r;
    if (r->flags == GR_HOOK_GREENLET)
        bt->greenlet_cb = r->tracing == GR_HOOK_SET ? r->code : 0;
    if (r->flags != GR_HOOK_PROFILE)
        return;
    int on = (r->parent & GR_HOOK_SUBJECT_ON) != 0;
    if (on) {
        char until[64];
        snprintf(until, sizeof until, "until event %" PRIu64, r->index);
        subject_back(c, e->th, bt, until);
        return;
    }
    if (bt->subject_off)
        return; /* still off: the first cause is the one named */
    bt->subject_off = 1;
    ck_rule_kinds(c, GR_RULE_BLIND_SPOT, gr_rule_blind_spot.kinds | GR_KIND(GR_CALL));
    bt->off_index = (size_t)r->index;
    bt->off_nctx = ck_make_ctx(e->th, (size_t)r->index, bt->off_ctx);
    if (c->lines) {
        ck_free_lines(bt->off_text);
        ck_ctx_lines(c, e->th, bt->off_ctx, bt->off_nctx, bt->off_text);
    }
    bt->off_action = r->tracing;
    bt->off_unannounced = (r->parent & GR_HOOK_UNANNOUNCED) != 0;
    bt->off_before = (r->parent & GR_HOOK_BEFORE) != 0;
    bt->off_gid = r->gid;
    bt->off_code = r->code;
    bt->off_by = (r->parent & GR_HOOK_BY_OTHER) ? r->parent >> GR_HOOK_BY_SHIFT : 0;
    bt->off_frame = 0;
    const ck_shadow *s = &c->sh[e->si];
    size_t k = ck_innermost_py(s);
    if (k != SIZE_MAX && !bt->off_before) /* (before: no frame of the recording made it) */
        bt->off_frame = s->e[k].code;
    bt->off_calls = 0;
}

/* A MARK written with tracing suspended (MARK bit 4) inside the program's
 * greenlet trace callback `cb` (HOOK slot greenlet: greenlet runs it in
 * its TracingGuard, greenlet PR 268): its innermost real frames are the
 * callback's and what it called, which the profile function is right not
 * to see.  1 when the real Python frames c->fb[0..nb) are the shadow's
 * c->fa[0..na) followed by cb's frame and its callees (with a cut real
 * stack or an unknown shadow base, which align the two at their innermost
 * frames: when cb's frame is on the real stack at all); 0 when the stacks
 * are compared as for any MARK.  Any other callback (a profile or trace
 * function of the program, or a greenlet switched to from inside one, as
 * in fixtures/switch_in_tracefunc.py) is not excused: the frames it ran
 * unseen are the program's. */
static int in_greenlet_callback(const ck *c, size_t na, size_t nb, int cut, int base_unknown,
                                uint32_t cb)
{
    if (!cb)
        return 0;
    if (cut || base_unknown) {
        for (size_t k = 0; k < nb; k++)
            if (c->fb[k] == cb)
                return 1;
        return 0;
    }
    return na < nb && c->fb[na] == cb && (na == 0 || memcmp(c->fa, c->fb, na * sizeof *c->fa) == 0);
}

static void on_mark(ck *c, const ck_event *e, bthread *bt)
{
    const gr_record *r = e->r;
    if (c->notes.explained_mark == r->index + 1)
        return; /* it confirmed a predicted blind spot (propagation): the
                   one cause is reported there */
    if (e->th->observer_gap)
        return; /* the recorder's own events are missing before it (HOOK
                   with GR_HOOK_UNANNOUNCED): nothing to compare with; the
                   episode's violation names the cause */
    if (!(r->flags & (GR_MARK_PROFILE_OURS | GR_MARK_IN_CALLBACK)) && !c->profile_off &&
        !bt->subject_off && !bt->unprofiled_reported) {
        gr_sb_printf(&c->msg,
                     "no profile function on t%" PRIu64 " at this MARK: the code of this thread "
                     "ran unseen (a thread the profiler never reached, e.g. one started with "
                     "_thread.start_new_thread)",
                     r->tid);
        ck_violate(c, GR_RULE_BLIND_SPOT, r, e->th, r->gid);
        bt->unprofiled_reported = 1;
    }
    const ck_shadow *s = &c->sh[e->si];
    size_t na = ck_shadow_py(c, s), nb = ck_record_py(c, r);
    int cut = (r->flags & GR_MARK_CUT) != 0;
    /* With profile=False (META profile: off) no profile event was recorded:
     * a real stack has no shadow built from events to be compared with. */
    if (!c->profile_off && !((r->flags & GR_MARK_IN_CALLBACK) &&
          in_greenlet_callback(c, na, nb, cut, s->base_unknown, bt->greenlet_cb))) {
        gr_sb_puts(&c->msg, "stack at MARK differs from the profile events: ");
        if (ck_compare(c, na, nb, cut, s->base_unknown))
            ck_violate(c, GR_RULE_BLIND_SPOT, r, e->th, r->gid);
        else
            gr_sb_reset(&c->msg);
    }
    if (!(r->flags & GR_MARK_PROFILE_OURS))
        return;
    const ck_entry *top = s->n ? &s->e[s->n - 1] : NULL;
    if (top && top->is_c && top->code == r->code) { /* bracketed so far */
        bt->pending_mark = 1; /* the next record of th must be its C_RETURN */
        bt->mark_index = (size_t)r->index;
        bt->mark_gid = r->gid;
        bt->mark_code = r->code;
        bt->mark_nctx = ck_make_ctx(e->th, (size_t)r->index, bt->mark_ctx);
        return;
    }
    gr_sb_puts(&c->msg, "mark not bracketed by c_call/c_return of mark: no C_CALL of ");
    ck_code_name(c, r->code);
    gr_sb_puts(&c->msg, " before it (shadow top: ");
    if (top)
        ck_code_name(c, top->code);
    else
        gr_sb_puts(&c->msg, "empty");
    gr_sb_puts(&c->msg, ")");
    ck_violate(c, GR_RULE_BLIND_SPOT, r, e->th, r->gid);
}

/* A ground-truth stack at a switch (format 1.1): the target's real Python
 * frames where the switch was seen, against its shadow (which shadow.c
 * then reseeds, so that one loss is reported once). */
static void switch_stack(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    if (!(r->flags & GR_SW_REAL_STACK) || r->tracing != 0)
        return; /* no stack, or seen inside a callback */
    if (r->flags & GR_SW_UNSEEN)
        return; /* the target ran with no event at all: the propagation
                   rule reports it, once */
    if (c->profile_off)
        return; /* start(profile=False): no profile events, no shadow to
                   compare with (shadow.c still reseeds from the stack) */
    if (e->th->observer_gap || ck_unseen_takeover(c, e))
        return; /* the recorder's own events are missing before it: the
                   HOOK with GR_HOOK_UNANNOUNCED names the cause */
    const ck_shadow *s = &c->sh[e->st];
    size_t na = ck_shadow_py(c, s), nb = ck_record_py(c, r);
    if (ck_same(c, na, nb, (r->flags & GR_SW_CUT) != 0, s->base_unknown))
        return; /* (the common case: no message begun) */
    gr_sb_printf(&c->msg, "real stack of g%" PRIu64 " at %s differs from the profile events: ",
                 r->target, ck_kind_name(r));
    if (ck_compare(c, na, nb, (r->flags & GR_SW_CUT) != 0, s->base_unknown))
        ck_violate(c, GR_RULE_BLIND_SPOT, r, e->th, r->target);
    else
        gr_sb_reset(&c->msg);
}

static void on_record(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    bthread *bt = bth(c, e->th_index);
    if (bt->pending_mark) {
        resolve_mark(c, r, e->th, bt);
        ck_want_next(c, e->th, GR_RULE_BLIND_SPOT, 0);
    }
    switch (r->tag) {
    case GR_CALL:
        if (bt->subject_off) {
            if (bt->off_calls < 3)
                bt->off_first[bt->off_calls] = r->code;
            bt->off_calls++;
        }
        break;
    case GR_SWITCH:
    case GR_THROW:
        switch_stack(c, e);
        break;
    case GR_MARK:
        on_mark(c, e, bt);
        if (bt->pending_mark) /* its C_RETURN must be th's next record */
            ck_want_next(c, e->th, GR_RULE_BLIND_SPOT, 1);
        break;
    case GR_HOOK:
        on_hook(c, e, bt);
        break;
    default:
        break;
    }
}

static void finish(ck *c)
{
    for (size_t i = 0; i < c->nth; i++)
        subject_back(c, &c->th[i], bth(c, i),
                     c->stop.stopped ? "until STOP" : "until the end of the trace");
    for (size_t i = 0; i < c->nth; i++) {
        bthread *bt = bth(c, i);
        if (bt->pending_mark) {
            if (c->t->truncated) /* its C_RETURN may be in the lost part */
                bt->pending_mark = 0;
            else
                resolve_mark(c, NULL, &c->th[i], bt);
        }
    }
}

/* One warning per cause whose later episodes were counted, not reported:
 * how many, and what they ran unseen.  (A range of a split check that
 * stops before the end writes none; the last range has counted the
 * episodes of its prefix too.) */
static void report(ck *c)
{
    bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    if (!b || c->split.no_end)
        return;
    for (size_t i = 0; i < b->ncauses; i++) {
        const bcause *k = &b->causes[i];
        if (k->known && k->reported) {
            const struct known_cause *kc = &known_causes[k->known - 1];
            gr_sb_printf(&c->msg,
                         "displaced: greenreplay's reference profiler was removed by %s %" PRIu64
                         " time%s (the first at the HOOK at event %" PRIu64 ", in ",
                         kc->what, k->repeats + 1, k->repeats ? "s" : "", k->first_index);
            ck_code_name(c, k->frame);
            gr_sb_printf(&c->msg, "): %" PRIu64 " Python call%s ran unseen by it; known "
                                  "behaviour (%s), not a violation (`check --strict-known "
                                  "--fail-on displaced` makes it one)",
                         k->first_calls + k->repeat_calls,
                         k->first_calls + k->repeat_calls == 1 ? "" : "s", kc->source);
            ck_add_info(c);
            continue;
        }
        if (!k->repeats)
            continue;
        if (k->before) /* one episode per thread: the others are threads */
            gr_sb_printf(&c->msg,
                         "displaced: greenreplay's reference profiler of %" PRIu64
                         " more thread%s was %s, as "
                         "reported at event %" PRIu64,
                         k->repeats, k->repeats == 1 ? "" : "s", off_what(k, NULL), k->first_index);
        else
            gr_sb_printf(&c->msg,
                         "displaced: greenreplay's reference profiler was %s %" PRIu64
                         " more time%s for the cause reported at event %" PRIu64,
                         off_what(k, NULL), k->repeats, k->repeats == 1 ? "" : "s", k->first_index);
        if (k->code) {
            gr_sb_puts(&c->msg, " (during ");
            ck_code_name(c, k->code);
            gr_sb_puts(&c->msg, k->frame ? " in " : ")");
        } else if (k->frame) {
            gr_sb_puts(&c->msg, " (in ");
        }
        if (k->frame) {
            ck_code_name(c, k->frame);
            gr_sb_puts(&c->msg, ")");
        }
        gr_sb_printf(&c->msg, ", the last at event %" PRIu64 ": %" PRIu64 " more Python call%s ran "
                              "unseen by it (not reported again)",
                     k->last_index, k->repeat_calls, k->repeat_calls == 1 ? "" : "s");
        ck_add_warning(c);
    }
}

static void release(ck *c)
{
    bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    if (!b)
        return;
    for (size_t i = 0; i < b->nth; i++)
        ck_free_lines(b->th[i].off_text);
    for (size_t i = 0; i < b->ncauses; i++) { /* candidates left unreported
                                                 (a range's worker that stopped) */
        free(b->causes[i].first_msg);
        ck_free_lines(b->causes[i].first_text);
    }
    free(b->th);
    free(b->causes);
    free(b);
    c->rule_state[GR_RULE_BLIND_SPOT] = NULL;
}

/* Before the range of a split check (rule.h): the verdicts about those
 * records (stacks, bracketing, the episodes that begin there) are dropped;
 * later ones depend on whether the subject profiler is off (HOOK) and
 * whether the thread's MARK without the profile function was reported. */
static void on_prefix(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    if (r->tag == GR_HOOK) {
        on_hook(c, e, bth(c, e->th_index));
    } else if (r->tag == GR_CALL) {
        /* whether an episode ran calls unseen decides whether its cause
         * was reported (later ones of the same cause are not) */
        bthread *bt = bth(c, e->th_index);
        if (bt->subject_off)
            bt->off_calls++;
    } else if (r->tag == GR_MARK && !e->th->observer_gap &&
               !(r->flags & (GR_MARK_PROFILE_OURS | GR_MARK_IN_CALLBACK)) && !c->profile_off) {
        bthread *bt = bth(c, e->th_index);
        if (!bt->subject_off)
            bt->unprofiled_reported = 1;
    }
}

/* A bracketed MARK waiting for its C_RETURN, or an episode of the subject
 * profiler being off (reported when it ends), at a record before hi. */
static int pending(const ck *c, uint64_t hi)
{
    const bstate *b = c->rule_state[GR_RULE_BLIND_SPOT];
    for (size_t i = 0; b && i < b->nth; i++) {
        const bthread *bt = &b->th[i];
        if ((bt->pending_mark && bt->mark_index < hi) || (bt->subject_off && bt->off_index < hi))
            return 1;
    }
    return 0;
}

const gr_rule_ops gr_rule_blind_spot = {
    .id = GR_RULE_BLIND_SPOT,
    /* and CALL once a profiler was turned off (on_hook), and a thread's
     * next record after a MARK (ck_want_next) */
    .kinds = GR_KIND(GR_SWITCH) | GR_KIND(GR_THROW) | GR_KIND(GR_MARK) | GR_KIND(GR_HOOK),
    .init = init,
    .on_record = on_record,
    .finish = finish,
    .report = report,
    .release = release,
    .on_prefix = on_prefix,
    .pending = pending,
};
