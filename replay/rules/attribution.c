/* attribution.c - the attribution rule: what each of the program's own
 * profilers saw, and what it missed.
 *
 * A profile function belongs to a thread, but a program often means one to
 * belong to a greenlet: per-request cProfile middleware under gevent
 * enables a cProfile.Profile around each request.  While request A waits,
 * request B enables its own, which replaces A's on the thread: B's
 * profiler then counts A's calls, and A's counts nothing.  The HOOK
 * records of format 1.3 name each profiler the program installs or
 * removes, the greenlet and the frame (FORMAT.md §4.2); with the full
 * event stream of the observer this rule works out, for each profiler:
 *
 *   owner    the greenlet that first enabled it; a profiler enabled in a
 *            thread's main greenlet (or with no greenlet, or by another
 *            thread), and a tool that profiles whole threads wherever it
 *            is started (yappi, coverage, line_profiler), is thread-wide:
 *            every greenlet of each thread it was enabled on is its owner;
 *   enabled  from an install (HOOK set) on a thread until a clear on that
 *            thread that ends it: the clear ends the enabled profiler the
 *            clearing greenlet owns (cProfile's disable() clears the slot
 *            whatever is in it), else the thread-wide one last installed,
 *            else the one it removed;
 *   seen     Python calls delivered to it: made while it was the installed
 *            profiler of the thread, or reached through the installed one
 *            when that one chains it (it read sys.getprofile() in the same
 *            greenlet before it installed itself: an APM-style chain);
 *            `own` of them by an owner, `foreign` by other greenlets;
 *   missed   Python calls of an owner while it was enabled but not
 *            delivered to it, and which profiler got them instead;
 *   inside   calls of its own function in which greenlets ran: CPython
 *            runs a profile function with tracing on, so what a greenlet
 *            switched to there runs unseen by every profile function, and
 *            how many calls it missed there is not known (callback mode:
 *            SWITCH/THROW records with `tracing` 1 or more while it was
 *            installed, one per run of its function; passive mode: META
 *            switches_in_profile_function, given to the profiler
 *            installed at the first of them).
 *
 * One finding per profiler that missed calls and one per profiler that
 * saw foreign calls, folded into one when more than FOLD_AT profilers of
 * the same kind, type and enabling frame behave alike.  Advisory, like
 * displaced: the program's profiler gives it wrong numbers, but the
 * recorder, greenlet and CPython did what they should (check --fail-on
 * attribution makes them fail).  Every profiler is listed in the result
 * (gr_check_result.prof) with its counts, so a clean verdict is shown,
 * not implied.
 */
#include "rule.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_AT 3        /* more profilers alike than this: one finding */
#define FN_TRACKED 4096  /* distinct functions counted per profiler */
#define CHAIN_MAX 8      /* profilers reached through chains */
#define TAKERS 4         /* profilers that got missed calls, named */

typedef struct {
    uint32_t code;
    uint64_t own, missed, foreign;
    uint64_t taker;      /* missed: the profiler that got the first one */
    uint64_t from_gid;   /* foreign: the greenlet of the first one */
} fnstat;

typedef struct {
    int known;           /* installed at least once (its owner is known) */
    uint64_t tid, gid;
    int thread_wide;
    uint32_t frame;
    uint64_t first_index, last_set;
    uint32_t chains;
    uint64_t intervals, seen, own, foreign, missed, missed_by_none;
    uint64_t first_missed, fm_tid, fm_gid;
    uint64_t inside, first_inside, fi_tid, fi_gid; /* see the top */
    uint64_t first_foreign, ff_tid, ff_gid;
    size_t ctx[3][GR_CONTEXT_MAX]; /* context of the first missed and
                            the first foreign call, and of the first
                            switch inside its function */
    int nctx[3];
    char *text[3][GR_CONTEXT_MAX]; /* their lines (streamed; owned) */
    fnstat *fn;
    size_t nfn, cap_fn;
    gr_idmap fnmap;      /* (code, 0) -> fn index */
    fnstat over;         /* functions past FN_TRACKED (code 0) */
    uint32_t taker[TAKERS];
    uint64_t taker_n[TAKERS], taker_other;
} prof;

typedef struct {
    uint32_t installed;  /* the program's profiler installed now, 0 none */
    int gp_valid;        /* the last sys.getprofile() C call here ... */
    uint64_t gp_gid;     /* ... its greenlet ... */
    uint32_t gp_prof;    /* ... and what was installed then */
    int in_fn;           /* a switch made inside the installed profiler's
                            function was counted, no CALL/C_CALL since */
} thr;

typedef struct {
    uint64_t tid, index;
    uint32_t installed;  /* after this HOOK */
} hook_ent;

typedef struct {
    uint32_t id;
    uint64_t tid;
} open_ent;

typedef struct {
    prof *p;             /* by profiler id */
    size_t np;
    thr *th;
    size_t nth;          /* capacity of th (ck_slot) */
    size_t nthr;         /* threads in thmap */
    gr_idmap thmap;      /* (tid, 0) -> th index */
    gr_idmap mainmap;    /* (gid, 0) -> 1: a main greenlet */
    open_ent *open;
    size_t nopen, cap_open;
    uint8_t *getprof;    /* by code id: bits 0-1: 0 not looked at, 1 no,
                            2 sys.getprofile; bits 2-3: 0 not looked at,
                            1 the program's, 2 greenreplay's own */
    size_t ngetprof;
    int widened;
    hook_ent *hooks;     /* every change of a profile slot, in order: the
                            profiler installed at a META's index */
    size_t nhooks, cap_hooks;
} st;

static void *zalloc(size_t n)
{
    return memset(gr_xrealloc(NULL, n ? n : 1), 0, n ? n : 1);
}

static st *state(ck *c)
{
    if (!c->rule_state[GR_RULE_ATTRIBUTION])
        c->rule_state[GR_RULE_ATTRIBUTION] = zalloc(sizeof(st));
    return c->rule_state[GR_RULE_ATTRIBUTION];
}

static prof *prof_of(st *s, uint32_t id)
{
    return ck_slot((void **)&s->p, &s->np, id, sizeof *s->p);
}

static thr *thr_of(st *s, uint64_t tid)
{
    size_t i;
    if (!gr_idmap_get(&s->thmap, tid, 0, &i)) {
        /* the next index: s->nth is the array's capacity (ck_slot), not
         * the count, and taking it doubled the array at each new thread */
        i = s->nthr++;
        gr_idmap_put(&s->thmap, tid, 0, i);
    }
    return ck_slot((void **)&s->th, &s->nth, i, sizeof *s->th);
}

/* Thread tid's state if it has one already, else NULL. */
static thr *thr_known(st *s, uint64_t tid)
{
    size_t i;
    return gr_idmap_get(&s->thmap, tid, 0, &i) ? &s->th[i] : NULL;
}

static fnstat *fn_of(prof *p, uint32_t code)
{
    size_t i;
    if (gr_idmap_get(&p->fnmap, code, 0, &i))
        return &p->fn[i];
    if (p->nfn >= FN_TRACKED)
        return &p->over;
    p->fn = gr_xgrow(p->fn, &p->cap_fn, p->nfn + 1, sizeof *p->fn);
    fnstat *f = &p->fn[p->nfn];
    memset(f, 0, sizeof *f);
    f->code = code;
    gr_idmap_put(&p->fnmap, code, 0, p->nfn++);
    return f;
}

static int is_getprofile(ck *c, st *s, uint32_t code)
{
    if (code < s->ngetprof && (s->getprof[code] & 3))
        return (s->getprof[code] & 3) == 2;
    size_t len = 0;
    const gr_code *cd = gr_trace_code(c->t, code);
    const uint8_t *q = cd ? gr_trace_string(c->t, cd->qualname, &len) : NULL;
    int yes = cd && cd->kind == GR_CODE_C && q && len == 14 && memcmp(q, "sys.getprofile", 14) == 0;
    if (code <= c->t->ncodes) {
        size_t n = s->ngetprof;
        if (code >= n) {
            size_t cap = n;
            s->getprof = gr_xgrow(s->getprof, &cap, (size_t)code + 1, 1);
            memset(s->getprof + n, 0, cap - n);
            s->ngetprof = cap;
        }
        s->getprof[code] = (uint8_t)((s->getprof[code] & ~3) | (yes ? 2 : 1));
    }
    return yes;
}

/* Whether code is greenreplay's own (its calls are not the program's),
 * cached by code id (bits 2-3 of getprof). */
static int code_own(ck *c, st *s, uint32_t code)
{
    if (code < s->ngetprof && (s->getprof[code] & 0x0C))
        return (s->getprof[code] & 0x0C) == 0x08;
    int own = gr_code_is_own(c->t, code);
    if (code <= c->t->ncodes) {
        size_t n = s->ngetprof;
        if (code >= n) {
            size_t cap = n;
            s->getprof = gr_xgrow(s->getprof, &cap, (size_t)code + 1, 1);
            memset(s->getprof + n, 0, cap - n);
            s->ngetprof = cap;
        }
        s->getprof[code] |= own ? 0x08 : 0x04;
    }
    return own;
}

/* Tools that profile a whole thread (or process) wherever they are
 * started: yappi (greenlet-aware itself), coverage's tracers,
 * line_profiler.  A profile per greenlet is made with cProfile, profile,
 * pyinstrument or a function of the program's own. */
static int whole_tool(unsigned kind)
{
    return kind == GR_PROF_YAPPI || kind == GR_PROF_COVERAGE_C || kind == GR_PROF_COVERAGE_PY ||
           kind == GR_PROF_LINE_PROFILER;
}

static int owned_by(const prof *p, uint64_t gid)
{
    return p->thread_wide || p->gid == gid;
}

static void widen(ck *c, st *s)
{
    if (s->widened)
        return;
    s->widened = 1;
    ck_rule_kinds(c, GR_RULE_ATTRIBUTION,
                  gr_rule_attribution.kinds | GR_KIND(GR_CALL) | GR_KIND(GR_C_CALL));
}

static void on_hook(ck *c, st *s, const gr_record *r)
{
    if (r->flags != GR_HOOK_PROFILE)
        return;
    thr *h = thr_of(s, r->tid);
    int gp_valid = h->gp_valid;
    h->gp_valid = 0;
    uint32_t pid = r->target <= c->t->nprofilers ? (uint32_t)r->target : 0;
    s->hooks = gr_xgrow(s->hooks, &s->cap_hooks, s->nhooks + 1, sizeof *s->hooks);
    s->hooks[s->nhooks++] = (hook_ent){r->tid, r->index, r->tracing == GR_HOOK_SET ? pid : 0};
    if (r->tracing == GR_HOOK_SET) {
        uint32_t before = h->installed;
        h->installed = pid;
        if (!pid)
            return; /* a trace without profiler names (format 1.2) */
        prof *p = prof_of(s, pid);
        if (!p->known) {
            size_t dummy;
            p->known = 1;
            p->tid = r->tid;
            p->gid = r->gid;
            unsigned kind = c->t->profilers[pid].kind;
            p->thread_wide = r->gid == 0 || (r->parent & GR_HOOK_BY_OTHER) ||
                             gr_idmap_get(&s->mainmap, r->gid, 0, &dummy) || whole_tool(kind);
            p->frame = (uint32_t)r->use_tracing;
            p->first_index = r->index;
        }
        if (gp_valid && h->gp_gid == r->gid && h->gp_prof && h->gp_prof == before &&
            before != pid && !p->chains)
            p->chains = before;
        p->intervals++;
        p->last_set = r->index;
        for (size_t k = 0; k < s->nopen; k++)
            if (s->open[k].id == pid && s->open[k].tid == r->tid)
                return;
        s->open = gr_xgrow(s->open, &s->cap_open, s->nopen + 1, sizeof *s->open);
        s->open[s->nopen++] = (open_ent){pid, r->tid};
        widen(c, s);
        return;
    }
    if (r->tracing != GR_HOOK_CLEARED && r->tracing != GR_HOOK_RESTORED)
        return;
    uint32_t removed = h->installed ? h->installed : pid;
    h->installed = 0;
    /* Which enabled profiler this clear ends (see the top of the file). */
    size_t best = SIZE_MAX, wide = SIZE_MAX, gone = SIZE_MAX;
    for (size_t k = 0; k < s->nopen; k++) {
        if (s->open[k].tid != r->tid)
            continue;
        const prof *p = &s->p[s->open[k].id];
        if (!p->thread_wide && p->gid == r->gid &&
            (best == SIZE_MAX || p->last_set > s->p[s->open[best].id].last_set))
            best = k;
        if (p->thread_wide && (wide == SIZE_MAX || p->last_set > s->p[s->open[wide].id].last_set))
            wide = k;
        if (s->open[k].id == removed)
            gone = k;
    }
    size_t k = best != SIZE_MAX ? best : wide != SIZE_MAX ? wide : gone;
    if (k != SIZE_MAX)
        s->open[k] = s->open[--s->nopen];
}

/* Keep the context of p's first finding of kind by (0 missed, 1 foreign)
 * at event e. */
static void keep_ctx(ck *c, prof *p, int by, const ck_event *e)
{
    p->nctx[by] = ck_make_ctx(e->th, e->r->index, p->ctx[by]);
    if (c->lines)
        ck_ctx_lines(c, e->th, p->ctx[by], p->nctx[by], p->text[by]);
}

static void on_call(ck *c, st *s, const ck_event *e)
{
    const gr_record *r = e->r;
    thr *h = thr_of(s, r->tid);
    if (!h->installed && !s->nopen)
        return;
    if (code_own(c, s, r->code))
        return;
    uint32_t got[CHAIN_MAX];
    int ngot = 0;
    for (uint32_t q = h->installed; q && ngot < CHAIN_MAX; q = s->p[q].chains) {
        int dup = 0;
        for (int i = 0; i < ngot; i++)
            dup |= got[i] == q;
        if (dup)
            break;
        got[ngot++] = q;
    }
    for (int i = 0; i < ngot; i++) {
        prof *p = prof_of(s, got[i]);
        fnstat *f = fn_of(p, r->code);
        p->seen++;
        if (owned_by(p, r->gid)) {
            p->own++;
            f->own++;
        } else {
            if (!p->foreign) {
                keep_ctx(c, p, 1, e);
                p->first_foreign = r->index + 1;
                p->ff_tid = r->tid;
                p->ff_gid = r->gid;
            }
            p->foreign++;
            if (!f->foreign)
                f->from_gid = r->gid;
            f->foreign++;
        }
    }
    for (size_t k = 0; k < s->nopen; k++) {
        if (s->open[k].tid != r->tid)
            continue;
        uint32_t id = s->open[k].id;
        int delivered = 0;
        for (int i = 0; i < ngot; i++)
            delivered |= got[i] == id;
        prof *p = &s->p[id];
        if (delivered || !owned_by(p, r->gid))
            continue;
        if (!p->missed) {
            keep_ctx(c, p, 0, e);
            p->first_missed = r->index + 1;
            p->fm_tid = r->tid;
            p->fm_gid = r->gid;
        }
        p->missed++;
        fnstat *f = fn_of(p, r->code);
        if (!f->missed)
            f->taker = h->installed;
        f->missed++;
        if (!h->installed) {
            p->missed_by_none++;
            continue;
        }
        int j = 0;
        while (j < TAKERS && p->taker[j] && p->taker[j] != h->installed)
            j++;
        if (j == TAKERS) {
            p->taker_other++;
        } else {
            p->taker[j] = h->installed;
            p->taker_n[j]++;
        }
    }
}

/* Callback mode: a SWITCH/THROW made inside a profile or trace function
 * (`tracing` 1 or more) while the program's profiler is installed on the
 * thread; the first of a run of them (no CALL/C_CALL since) counts one
 * call of its function. */
static void on_switch_inside(ck *c, st *s, const ck_event *e)
{
    const gr_record *r = e->r;
    thr *h = r->tracing ? thr_known(s, r->tid) : NULL;
    if (!h || !h->installed || h->in_fn)
        return;
    h->in_fn = 1;
    prof *p = prof_of(s, h->installed);
    if (!p->inside) {
        keep_ctx(c, p, 2, e);
        p->first_inside = r->index + 1;
        p->fi_tid = r->tid;
        p->fi_gid = r->gid;
    }
    p->inside++;
}

/* Passive mode: META switches_in_profile_function ("N") and _first
 * ("INDEX TID GID"), given to the profiler installed on that thread at
 * INDEX. */
static void inside_from_meta(ck *c, st *s)
{
    char count[32], first[128];
    uint64_t n = 0, index = 0, tid = 0, gid = 0;
    if (!ck_meta_value(c, "switches_in_profile_function", count, sizeof count) ||
        sscanf(count, "%" SCNu64, &n) != 1 || !n ||
        !ck_meta_value(c, "switches_in_profile_function_first", first, sizeof first) ||
        sscanf(first, "%" SCNu64 " %" SCNu64 " %" SCNu64, &index, &tid, &gid) != 3)
        return;
    uint32_t pid = 0;
    for (size_t k = 0; k < s->nhooks && s->hooks[k].index <= index; k++)
        if (s->hooks[k].tid == tid)
            pid = s->hooks[k].installed;
    if (!pid || pid >= s->np || !s->p[pid].known || index >= gr_trace_count(c->t))
        return;
    prof *p = &s->p[pid];
    if (!p->inside || index + 1 < p->first_inside) {
        p->first_inside = index + 1;
        p->fi_tid = tid;
        p->fi_gid = gid;
    }
    p->inside += n;
}

static void on_record(ck *c, const ck_event *e)
{
    const gr_record *r = e->r;
    st *s = state(c);
    if (r->tag == GR_CALL || r->tag == GR_C_CALL) {
        thr *h = thr_known(s, r->tid);
        if (h)
            h->in_fn = 0;
    }
    switch (r->tag) {
    case GR_SWITCH:
    case GR_THROW:
        on_switch_inside(c, s, e);
        break;
    case GR_GREENLET:
        if (r->flags & GR_GL_MAIN)
            gr_idmap_put(&s->mainmap, r->gid, 0, 1);
        break;
    case GR_HOOK:
        on_hook(c, s, r);
        break;
    case GR_C_CALL:
        if (is_getprofile(c, s, r->code)) {
            thr *h = thr_of(s, r->tid);
            h->gp_valid = 1;
            h->gp_gid = r->gid;
            h->gp_prof = h->installed;
        }
        break;
    case GR_CALL:
        on_call(c, s, e);
        break;
    default:
        break;
    }
}

/* ---- findings ------------------------------------------------------------ */

enum { BY_MISSED = 0, BY_FOREIGN = 1 };

static uint64_t fn_count(const fnstat *f, int which)
{
    return which == 0 ? f->own : which == 1 ? f->missed : f->foreign;
}

/* The functions of p with a count in `which` (0 own, 1 missed, 2
 * foreign), most first (then by code id), the first `max` of them; the
 * rest summed into one entry of code 0.  Owned array, *n entries. */
static gr_prof_fn *fn_list(const prof *p, int which, size_t max, size_t *n)
{
    size_t m = 0;
    gr_prof_fn *v = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < p->nfn; i++) {
        uint64_t k = fn_count(&p->fn[i], which);
        if (!k)
            continue;
        v = gr_xgrow(v, &cap, m + 1, sizeof *v);
        v[m++] = (gr_prof_fn){p->fn[i].code, k,
                              which == 1 ? p->fn[i].taker : which == 2 ? p->fn[i].from_gid : 0};
    }
    /* insertion sort: most first, then code id (deterministic) */
    for (size_t i = 1; i < m; i++) {
        gr_prof_fn x = v[i];
        size_t j = i;
        while (j && (v[j - 1].count < x.count ||
                     (v[j - 1].count == x.count && v[j - 1].code > x.code))) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    uint64_t rest = fn_count(&p->over, which);
    for (size_t i = max; i < m; i++)
        rest += v[i].count;
    if (m > max)
        m = max;
    if (rest) {
        v = gr_xgrow(v, &cap, m + 1, sizeof *v);
        v[m++] = (gr_prof_fn){0, rest, 0};
    }
    *n = m;
    return v;
}

/* "compute (app.py:10) 3, recv 2, ..." of up to `shown` entries. */
static void put_fns(ck *c, const gr_prof_fn *v, size_t n, size_t shown)
{
    for (size_t i = 0; i < n && i < shown; i++) {
        if (i)
            gr_sb_puts(&c->msg, ", ");
        if (v[i].code)
            ck_code_name(c, v[i].code);
        else
            gr_sb_puts(&c->msg, "other functions");
        gr_sb_printf(&c->msg, " %" PRIu64, v[i].count);
    }
    if (n > shown)
        gr_sb_puts(&c->msg, ", ...");
}

/* "a cprofile profiler (cProfile.Profile)" of profiler id. */
static void put_what(ck *c, uint32_t id, int plural)
{
    const gr_profdef *d = &c->t->profilers[id];
    gr_sb_printf(&c->msg, "%s profiler%s", gr_profiler_kind_name(d->kind), plural ? "s" : "");
    size_t len = 0;
    const uint8_t *ty = d->type ? gr_trace_string(c->t, d->type, &len) : NULL;
    if (ty) {
        gr_sb_puts(&c->msg, " (");
        gr_sb_escape(&c->msg, ty, len, 0);
        gr_sb_putc(&c->msg, ')');
    } else if (d->code) {
        gr_sb_puts(&c->msg, " (");
        ck_code_name(c, d->code);
        gr_sb_putc(&c->msg, ')');
    }
}

static void put_where(ck *c, const prof *p)
{
    gr_sb_puts(&c->msg, " enabled in ");
    if (p->frame)
        ck_code_name(c, p->frame);
    else
        gr_sb_puts(&c->msg, "a frame not named");
}

static void put_owner(ck *c, const prof *p)
{
    if (p->thread_wide)
        gr_sb_printf(&c->msg, "of its thread t%" PRIu64 " (thread-wide)", p->tid);
    else
        gr_sb_printf(&c->msg, "of its owner g%" PRIu64, p->gid);
}

/* Where the missed calls of p went. */
static void put_takers(ck *c, const prof *p)
{
    int any = 0;
    for (int j = 0; j < TAKERS && p->taker[j]; j++) {
        gr_sb_printf(&c->msg, "%sP%" PRIu32 " got %" PRIu64, any ? ", " : "; ", p->taker[j],
                     p->taker_n[j]);
        any = 1;
    }
    if (p->taker_other) {
        gr_sb_printf(&c->msg, "%sother profilers got %" PRIu64, any ? ", " : "; ", p->taker_other);
        any = 1;
    }
    if (p->missed_by_none)
        gr_sb_printf(&c->msg, "%sno profiler of the program was installed for %" PRIu64,
                     any ? ", " : "; ", p->missed_by_none);
}

/* One profiler's finding of kind `by` (the message's first part). */
static void put_one(ck *c, uint32_t id, const prof *p, int by)
{
    size_t n;
    gr_prof_fn *v = fn_list(p, by == BY_MISSED ? 1 : 2, 3, &n);
    if (by == BY_MISSED) {
        gr_sb_printf(&c->msg, "missed %" PRIu64 " Python call%s ", p->missed,
                     p->missed == 1 ? "" : "s");
        put_owner(c, p);
        gr_sb_puts(&c->msg, " while enabled but not installed (");
        put_fns(c, v, n, 3);
        gr_sb_putc(&c->msg, ')');
        put_takers(c, p);
    } else {
        gr_sb_printf(&c->msg, "counted %" PRIu64 " Python call%s of other greenlets as its own "
                     "(first g%" PRIu64 ": ", p->foreign, p->foreign == 1 ? "" : "s", p->ff_gid);
        put_fns(c, v, n, 3);
        gr_sb_putc(&c->msg, ')');
    }
    (void)id;
    free(v);
}

/* The group of profilers alike (same kind, type and function, enabled in
 * the same frame, thread-wide or not) that p (id i) belongs to, as two
 * keys. */
static void group_key(const gr_trace *t, const prof *p, uint32_t i, uint64_t *a, uint64_t *b)
{
    const gr_profdef *d = &t->profilers[i];
    *a = (uint64_t)d->type << 32 | d->code;
    *b = (uint64_t)p->frame << 16 | (uint64_t)d->kind << 1 | (p->thread_wide != 0);
}

typedef struct {
    size_t all, nbad;
    uint64_t sum;
    uint32_t first; /* the first profiler (by id) with the finding */
} group;

static void violate(ck *c, prof *p, int by)
{
    uint64_t at = by == BY_MISSED ? p->first_missed - 1 : p->first_foreign - 1;
    uint64_t tid = by == BY_MISSED ? p->fm_tid : p->ff_tid;
    uint64_t gid = by == BY_MISSED ? p->fm_gid : p->ff_gid;
    ck_violate_lines(c, GR_RULE_ATTRIBUTION, at, tid, gid, p->ctx[by], p->nctx[by], NULL,
                     c->lines ? p->text[by] : NULL);
    for (int k = 0; k < GR_CONTEXT_MAX; k++)
        p->text[by][k] = NULL; /* taken over */
    /* decided by the whole trace (split.h) */
    c->res->v[c->res->nv - 1].of_whole = 1;
}

static void findings(ck *c, st *s, int by)
{
    /* Group the profilers alike (one pass), then one finding per group of
     * more than FOLD_AT with the finding, else one per profiler. */
    gr_idmap gmap = {0};
    group *g = NULL;
    size_t ng = 0, cap = 0;
    size_t *of = zalloc(s->np * sizeof *of);
    for (uint32_t i = 1; i < s->np; i++) {
        const prof *p = &s->p[i];
        if (!p->known)
            continue;
        uint64_t ka, kb;
        size_t gi;
        group_key(c->t, p, i, &ka, &kb);
        if (!gr_idmap_get(&gmap, ka, kb, &gi)) {
            gi = ng++;
            g = gr_xgrow(g, &cap, ng, sizeof *g);
            memset(&g[gi], 0, sizeof g[gi]);
            gr_idmap_put(&gmap, ka, kb, gi);
        }
        of[i] = gi;
        g[gi].all++;
        uint64_t bad = by == BY_MISSED ? p->missed : p->foreign;
        if (bad) {
            if (!g[gi].nbad)
                g[gi].first = i;
            g[gi].nbad++;
            g[gi].sum += bad;
        }
    }
    for (uint32_t i = 1; i < s->np; i++) {
        prof *p = &s->p[i];
        uint64_t bad = by == BY_MISSED ? p->missed : p->foreign;
        if (!p->known || !bad)
            continue;
        const group *gr = &g[of[i]];
        if (gr->nbad <= FOLD_AT) {
            gr_sb_printf(&c->msg, "P%" PRIu32 ", a ", i);
            put_what(c, i, 0);
            put_where(c, p);
            gr_sb_puts(&c->msg, ", ");
            put_one(c, i, p, by);
            violate(c, p, by);
            continue;
        }
        if (gr->first != i)
            continue; /* folded into the group's finding */
        gr_sb_printf(&c->msg, "%zu of %zu ", gr->nbad, gr->all);
        put_what(c, i, 1);
        put_where(c, p);
        if (by == BY_MISSED)
            gr_sb_printf(&c->msg, " missed Python calls of their owner (%" PRIu64 " in all); first: "
                         "P%" PRIu32 " ", gr->sum, i);
        else
            gr_sb_printf(&c->msg, " counted Python calls of other greenlets as their own (%" PRIu64
                         " in all); first: P%" PRIu32 " ", gr->sum, i);
        put_one(c, i, p, by);
        violate(c, p, by);
    }
    free(of);
    free(g);
    gr_idmap_free(&gmap);
}

/* One finding per profiler whose own function ran greenlets. */
static void findings_inside(ck *c, st *s)
{
    for (uint32_t i = 1; i < s->np; i++) {
        prof *p = &s->p[i];
        if (!p->known || !p->inside)
            continue;
        gr_sb_printf(&c->msg, "P%" PRIu32 ", a ", i);
        put_what(c, i, 0);
        put_where(c, p);
        gr_sb_printf(&c->msg, ", ran greenlets inside its own function in %" PRIu64 " of its calls: "
                     "CPython runs a profile function with tracing on, so the Python calls ",
                     p->inside);
        put_owner(c, p);
        gr_sb_puts(&c->msg, " made there reached no profile function; how many it missed is not known");
        int from_meta = !p->nctx[2];
        if (from_meta) { /* the event itself (the META is read at the end) */
            p->ctx[2][0] = p->first_inside - 1;
            p->nctx[2] = 1;
        }
        ck_violate_lines(c, GR_RULE_ATTRIBUTION, p->first_inside - 1, p->fi_tid, p->fi_gid, p->ctx[2],
                         p->nctx[2], NULL, c->lines && !from_meta ? p->text[2] : NULL);
        if (from_meta) {
            /* Named the same way whether the trace is streamed or loaded
             * (the report prints a context line given before the record). */
            gr_violation *v = &c->res->v[c->res->nv - 1];
            gr_sb sb;
            gr_sb_init(&sb);
            gr_sb_printf(&sb, "%6" PRIu64 " (the event the program's profile function ran for: "
                              "META switches_in_profile_function_first)",
                         p->first_inside - 1);
            free(v->ctx_line[0]);
            v->ctx_line[0] = gr_sb_take(&sb);
        }
        c->res->v[c->res->nv - 1].of_whole = 1; /* decided by the whole trace (split.h) */
    }
}

static void finish(ck *c)
{
    st *s = c->rule_state[GR_RULE_ATTRIBUTION];
    if (!s || c->split.no_end)
        return;
    inside_from_meta(c, s);
    gr_check_result *res = c->res;
    for (uint32_t i = 1; i < s->np; i++) {
        const prof *p = &s->p[i];
        if (!p->known)
            continue;
        const gr_profdef *d = &c->t->profilers[i];
        size_t cap = res->nprof;
        res->prof = gr_xgrow(res->prof, &cap, res->nprof + 1, sizeof *res->prof);
        gr_prof_attr *a = &res->prof[res->nprof++];
        memset(a, 0, sizeof *a);
        a->id = i;
        a->kind = d->kind;
        a->type = d->type;
        a->code = d->code;
        a->tid = p->tid;
        a->gid = p->gid;
        a->thread_wide = p->thread_wide;
        a->frame = p->frame;
        a->first_index = p->first_index;
        a->chains = p->chains;
        a->intervals = p->intervals;
        a->seen = p->seen;
        a->own = p->own;
        a->foreign = p->foreign;
        a->missed = p->missed;
        a->missed_by_none = p->missed_by_none;
        a->inside = p->inside;
        a->first_missed = p->first_missed;
        a->first_foreign = p->first_foreign;
        size_t mx = res->prof_fn_max ? res->prof_fn_max : GR_PROF_FN_MAX;
        a->own_fn = fn_list(p, 0, mx, &a->nown_fn);
        a->missed_fn = fn_list(p, 1, mx, &a->nmissed_fn);
        a->foreign_fn = fn_list(p, 2, mx, &a->nforeign_fn);
    }
    findings(c, s, BY_MISSED);
    findings(c, s, BY_FOREIGN);
    findings_inside(c, s);
}

static void release(ck *c)
{
    st *s = c->rule_state[GR_RULE_ATTRIBUTION];
    if (!s)
        return;
    for (size_t i = 0; i < s->np; i++) {
        ck_free_lines(s->p[i].text[0]);
        ck_free_lines(s->p[i].text[1]);
        ck_free_lines(s->p[i].text[2]);
        free(s->p[i].fn);
        gr_idmap_free(&s->p[i].fnmap);
    }
    free(s->p);
    free(s->th);
    gr_idmap_free(&s->thmap);
    gr_idmap_free(&s->mainmap);
    free(s->open);
    free(s->getprof);
    free(s->hooks);
    free(s);
    c->rule_state[GR_RULE_ATTRIBUTION] = NULL;
}

const gr_rule_ops gr_rule_attribution = {
    .id = GR_RULE_ATTRIBUTION,
    .kinds = GR_KIND(GR_HOOK) | GR_KIND(GR_GREENLET) | GR_KIND(GR_SWITCH) | GR_KIND(GR_THROW),
    .on_record = on_record,
    .finish = finish,
    .release = release,
};
