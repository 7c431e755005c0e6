/* diff_stream.c - `greenreplay diff` one batch of records at a time
 * (diff_stream.h). */
#include "diff_stream.h"

#include "diff_int.h"
#include "dump.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 4096

/* ---- pass 0 -------------------------------------------------------------- */

int gr_diff_scan(gr_diff_info *d, const char *path)
{
    memset(d, 0, sizeof *d);
    int st = gr_trace_open(&d->t, path);
    if (st != GR_READ_OK)
        return st;
    gr_trace_set_batch(&d->t, BATCH);
    gr_launch_scan ls;
    gr_launch_scan_init(&ls);
    int k;
    while ((k = gr_trace_next_chunk(&d->t)) > 0) {
        for (size_t i = 0; i < d->t.nrecs; i++) {
            const gr_record *r = &d->t.recs[i];
            gr_launch_scan_feed(&ls, &d->t, r, (size_t)r->index);
            if (r->tag == GR_INSTR)
                d->has_instr = 1;
            else if (r->tag == GR_SWITCH || r->tag == GR_THROW) {
                if (r->flags & GR_SW_USE_TRACING_KNOWN)
                    d->knows_ut = 1;
                if (r->flags & GR_SW_CONTINUED)
                    d->has_continued = 1;
            }
        }
    }
    d->launch = ls.l;
    d->nrecs = gr_trace_count(&d->t);
    return k < 0 ? d->t.err.status : GR_READ_OK;
}

void gr_diff_info_free(gr_diff_info *d)
{
    gr_trace_free(&d->t);
}

int gr_diff_streamable(const gr_diff_opts *o)
{
    return o->c_names != GR_CNAMES_SCRIPT && !o->ignore;
}

/* ---- pass 1: tokens ------------------------------------------------------ */

/* Whether record r is compared (has a token): not an INSTR when only one
 * trace has them, not the return of a launch frame (launch.h).  Token
 * positions count these. */
static int compared(const gr_launch *l, int cmp_instr, const gr_record *r)
{
    if (r->tag == GR_INSTR && !cmp_instr)
        return 0;
    return !l->found || !gr_launch_is_return(l, (size_t)r->index);
}

/* A token: the interned text of the record with its greenlets written
 * "g#" (shape), and their orders of first sight (diff_int.h).  Two records
 * have the same gr_diff token text exactly when their tok are equal: the
 * greenlets come before any name, label or stack in a token text. */
typedef struct tok {
    uint32_t shape, n;
    uint64_t r[GR_DIFF_RANKS];
} tok;

static int tok_eq(const tok *x, const tok *y)
{
    return x->shape == y->shape && x->n == y->n && x->r[0] == y->r[0] && x->r[1] == y->r[1] &&
           x->r[2] == y->r[2];
}

/* One trace's tokens: from its records, or from the window queue. */
typedef struct tstream {
    gr_trace t;
    gr_diff_side s;
    size_t ci;          /* next record of the batch */
    int eof;            /* -1 error, 1 end */
    uint64_t last_tid, last_gid; /* the last call's greenlet, and its rank */
    size_t last_slot;
    gr_idmap cache;     /* (tid, shape_key) -> shape */
    struct front {      /* the cache's recent entries, direct-mapped */
        uint64_t tid, key;
        uint32_t shape, used;
    } front[1024];
    tok *q;             /* queued tokens q[head..head + n) */
    size_t head, n, cap;
} tstream;

static int ts_open(tstream *ts, const char *path, const gr_diff_info *d)
{
    memset(ts, 0, sizeof *ts);
    ts->s.t = &ts->t;
    ts->s.has_instr = d->has_instr;
    ts->s.knows_ut = d->knows_ut;
    ts->s.has_continued = d->has_continued;
    ts->s.placeholders = 1;
    ts->s.launch = d->launch;
    for (size_t k = 0; k < d->launch.nframes; k++)
        ts->s.launch_skipped += d->launch.ret_rec[k] != GR_LAUNCH_NONE;
    ts->s.top_seed = ts->s.top_skip = ts->s.top_module = ts->s.exit_at = GR_NONE;
    ts->last_slot = SIZE_MAX;
    if (gr_trace_open(&ts->t, path) != GR_READ_OK) {
        fprintf(stderr, "greenreplay: %s\n", ts->t.err.msg);
        return -1;
    }
    gr_trace_set_batch(&ts->t, BATCH);
    return 0;
}

static void ts_free(tstream *ts)
{
    gr_diff_side_free(&ts->s);
    gr_idmap_free(&ts->cache);
    free(ts->q);
    gr_trace_free(&ts->t);
}

static uint64_t grank_of(tstream *ts, uint64_t tid, uint64_t gid)
{
    if (ts->last_slot != SIZE_MAX && tid == ts->last_tid && gid == ts->last_gid)
        return ts->last_slot;
    ts->last_tid = tid;
    ts->last_gid = gid;
    ts->last_slot = (size_t)gr_diff_grank(&ts->s, tid, gid);
    return ts->last_slot;
}

/* The key of record r's shape in tstream.cache (second half; the first is
 * its thread), or 0 when its shape is not looked up but made: calls,
 * returns, DEAD, START and STOP by kind and code; switches without a
 * stack in their token by kind, state and whether they have a parent;
 * INSTR by its counts.  Everything else in the token text is the
 * greenlets', carried as ranks (ts_ranks). */
static uint64_t shape_key(const tstream *ts, const gr_record *r)
{
    switch (r->tag) {
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
    case GR_DEAD:
    case GR_START:
    case GR_STOP: return (uint64_t)r->tag << 32 | r->code;
    case GR_SWITCH:
    case GR_THROW:
        if ((r->flags & GR_SW_REAL_STACK) ||
            ((r->flags & GR_SW_CONTINUED) && ts->s.has_continued) || r->flags >> 16 ||
            r->tracing >> 38)
            return 0;
        return 1ull << 63 | (uint64_t)(r->tag == GR_THROW) << 56 | r->flags << 40 |
               (uint64_t)(r->use_tracing != 0) << 39 | (uint64_t)(r->parent == 0) << 38 |
               r->tracing;
    case GR_INSTR:
        if (r->parent >> 31 || r->use_tracing >> 31)
            return 0;
        return 1ull << 62 | r->parent << 31 | r->use_tracing;
    default: return 0;
    }
}


/* The greenlets of a record of a cached shape, in the order its token
 * text names them (gr_diff_token: which gives them their ranks). */
static void ts_ranks(tstream *ts, const gr_record *r, tok *t)
{
    t->r[t->n++] = grank_of(ts, r->tid, r->gid);
    if (r->tag == GR_SWITCH || r->tag == GR_THROW) {
        t->r[t->n++] = gr_diff_grank(&ts->s, r->tid, r->target);
        if (r->parent)
            t->r[t->n++] = gr_diff_grank(&ts->s, r->tid, r->parent);
    }
}

/* The token of record r (1), or 0 when it is not compared.  A shape
 * looked up (shape_key) needs no text: the thread's rank exists. */
static int ts_token(gr_diff_ctx *c, tstream *ts, const gr_record *r, gr_sb *sb, tok *t)
{
    if (!compared(&ts->s.launch, c->cmp_instr, r))
        return 0;
    uint64_t key = shape_key(ts, r);
    memset(t, 0, sizeof *t);
    if (key) {
        struct front *f = &ts->front[(r->tid * 31 + key * 0x9e3779b97f4a7c15ull) >> 54];
        size_t v;
        if (f->key == key && f->tid == r->tid && f->used) {
            t->shape = f->shape;
            ts_ranks(ts, r, t);
            return 1;
        }
        if (gr_idmap_get(&ts->cache, r->tid, key, &v)) {
            *f = (struct front){r->tid, key, (uint32_t)v, 1};
            t->shape = (uint32_t)v;
            ts_ranks(ts, r, t);
            return 1;
        }
    }
    gr_sb_reset(sb);
    ts->s.nranks = 0;
    if (!gr_diff_token(c, &ts->s, r, (size_t)r->index, sb))
        return 0;
    t->shape = gr_intern(&c->in, sb->s, sb->len);
    t->n = (uint32_t)ts->s.nranks;
    memcpy(t->r, ts->s.ranks, ts->s.nranks * sizeof *t->r);
    if (key)
        gr_idmap_put(&ts->cache, r->tid, key, t->shape);
    return 1;
}

/* The next token of the trace's records (not the queue's) into *out: 1,
 * or 0 at its end, -1 on an error (message on stderr). */
static int ts_read(gr_diff_ctx *c, tstream *ts, gr_sb *sb, tok *out)
{
    for (;;) {
        if (ts->eof)
            return ts->eof > 0 ? 0 : -1;
        if (ts->ci >= ts->t.nrecs) {
            int k = gr_trace_next_chunk(&ts->t);
            ts->ci = 0;
            if (k <= 0) {
                ts->eof = k < 0 ? -1 : 1;
                if (k < 0)
                    fprintf(stderr, "greenreplay: %s\n", ts->t.err.msg);
            }
            continue;
        }
        const gr_record *r = &ts->t.recs[ts->ci++];
        int got = ts_token(c, ts, r, sb, out);
        if (ts->s.has_continued) /* every record, the ones not compared too */
            gr_diff_cshadow_apply(&ts->s, r);
        if (got)
            return 1;
    }
}

static void ts_push(tstream *ts, const tok *t)
{
    if (ts->head + ts->n >= ts->cap) {
        if (ts->head && ts->head >= ts->cap / 2) { /* amortized */
            memmove(ts->q, ts->q + ts->head, ts->n * sizeof *ts->q);
            ts->head = 0;
        } else {
            ts->q = gr_xgrow(ts->q, &ts->cap, ts->head + ts->n + 1, sizeof *ts->q);
        }
    }
    ts->q[ts->head + ts->n++] = *t;
}

/* Append the next token of the trace to the queue: 1, or 0 at its end,
 * -1 on an error. */
static int ts_pull(gr_diff_ctx *c, tstream *ts, gr_sb *sb)
{
    tok t;
    int k = ts_read(c, ts, sb, &t);
    if (k > 0)
        ts_push(ts, &t);
    return k;
}

/* Queue up to want tokens; returns -1 on an error, else 0. */
static int ts_fill(gr_diff_ctx *c, tstream *ts, size_t want, gr_sb *sb)
{
    while (ts->n < want) {
        int k = ts_pull(c, ts, sb);
        if (k <= 0)
            return k;
    }
    return 0;
}

static void ts_drop(tstream *ts, size_t n)
{
    ts->head += n;
    ts->n -= n;
    if (!ts->n)
        ts->head = 0;
}

typedef struct runs {
    gr_edit *r;
    size_t n, cap;
} runs;

static void add_run(runs *rs, char op, size_t a, size_t b, size_t n)
{
    if (!n)
        return;
    if (rs->n && rs->r[rs->n - 1].op == op) {
        rs->r[rs->n - 1].n += n;
        return;
    }
    rs->r = gr_xgrow(rs->r, &rs->cap, rs->n + 1, sizeof *rs->r);
    rs->r[rs->n++] = (gr_edit){op, a, b, n};
}

static uint64_t tok_hash(const tok *t)
{
    uint64_t h = t->shape * 0x9e3779b97f4a7c15ull ^ t->n;
    for (int k = 0; k < GR_DIFF_RANKS; k++)
        h = (h ^ t->r[k]) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* Number the tokens of the two windows a[0..na) and b[0..nb) by equality
 * into ia and ib (the aligner's small integers). */
static void local_ids(const tok *a, size_t na, const tok *b, size_t nb, uint32_t *ia, uint32_t *ib)
{
    size_t cap = 16;
    while (cap < 2 * (na + nb))
        cap *= 2;
    uint32_t *tab = gr_xrealloc(NULL, cap * sizeof *tab); /* index + 1 into all, 0 empty */
    memset(tab, 0, cap * sizeof *tab);
    for (size_t i = 0; i < na + nb; i++) {
        const tok *t = i < na ? &a[i] : &b[i - na];
        uint32_t *id = i < na ? &ia[i] : &ib[i - na];
        size_t h = (size_t)tok_hash(t) & (cap - 1);
        for (;; h = (h + 1) & (cap - 1)) {
            if (!tab[h]) {
                tab[h] = (uint32_t)i + 1;
                *id = (uint32_t)i;
                break;
            }
            size_t j = tab[h] - 1;
            if (tok_eq(t, j < na ? &a[j] : &b[j - na])) {
                *id = (uint32_t)j;
                break;
            }
        }
    }
    free(tab);
}

/* Align the first na and nb queued tokens; *w receives the runs.  Returns
 * their number and, in *end, the first run of at least `resync` equal
 * tokens after the first (nw when none). */
static size_t align_part(const tstream *A, const tstream *B, size_t na, size_t nb,
                         uint64_t budget, size_t resync, gr_edit **w, size_t *end,
                         int *exhausted)
{
    int ex = 0;
    uint32_t *ia = gr_xrealloc(NULL, (na + nb + 1) * sizeof *ia), *ib = ia + na;
    local_ids(A->q + A->head, na, B->q + B->head, nb, ia, ib);
    size_t nw = gr_align(ia, na, ib, nb, budget, w, &ex);
    free(ia);
    *exhausted |= ex;
    *end = nw;
    for (size_t k = 1; k < nw; k++)
        if ((*w)[k].op == '=' && (*w)[k].n >= resync) {
            *end = k;
            break;
        }
    return nw;
}

/* The last run of equal tokens after the first run of w[0..nw), nw when
 * none. */
static size_t last_equal(const gr_edit *w, size_t nw)
{
    for (size_t k = nw; k-- > 1;)
        if (w[k].op == '=')
            return k;
    return nw;
}

/* At a mismatch (positions pa, pb), with up to a window of tokens of each
 * trace queued: when both traces end in it, align all of it (the global
 * alignment of the rest); else align growing prefixes of the queues
 * (`first` tokens each, doubling) until one has a run of `resync`
 * equal tokens after its first run, and take the runs before that run
 * (when the whole queues have none: the runs before their last equal
 * run, whose end meets the window's; all of them when there is none), so
 * that a difference costs about its own size, not the window's.  The runs taken are
 * appended to rs and their tokens dropped; *pa, *pb advance. */
static void align_window(tstream *A, tstream *B, runs *rs, size_t *pa, size_t *pb,
                         uint64_t budget, size_t first, size_t resync, int *exhausted)
{
    gr_edit *w = NULL;
    size_t nw, end, na, nb, part = first;
    for (;; part *= 2) {
        int all = A->eof && B->eof;
        na = all || A->n < part ? A->n : part;
        nb = all || B->n < part ? B->n : part;
        nw = align_part(A, B, na, nb, budget, resync, &w, &end, exhausted);
        if (all)
            end = nw;
        else if (end == nw && na == A->n && nb == B->n)
            end = last_equal(w, nw); /* the runs after it meet the window's end */
        if (end < nw || (na == A->n && nb == B->n))
            break;
        free(w);
    }
    size_t da = end < nw ? w[end].a : na, db = end < nw ? w[end].b : nb;
    for (size_t k = 0; k < end; k++)
        add_run(rs, w[k].op, *pa + w[k].a, *pb + w[k].b, w[k].n);
    ts_drop(A, da);
    ts_drop(B, db);
    *pa += da;
    *pb += db;
    free(w);
}

/* Pass 1: the edit script of the two token sequences.  Returns 0, or -1
 * on a read error. */
static int compare(gr_diff_ctx *c, tstream *A, tstream *B, runs *rs, int *exhausted)
{
    uint64_t budget = c->o->budget ? c->o->budget : GR_DIFF_DEFAULT_BUDGET;
    size_t window = c->o->window ? c->o->window : GR_DIFF_WINDOW;
    size_t resync = window / 8 < GR_DIFF_RESYNC ? window / 8 + 1 : GR_DIFF_RESYNC;
    size_t first = window < GR_DIFF_FIRST ? window : GR_DIFF_FIRST;
    size_t pa = 0, pb = 0, eq = 0;
    gr_sb sb;
    gr_sb_init(&sb);
    int rc = 0;
    for (;;) {
        if (!A->n && !B->n) { /* in lockstep: nothing queued */
            tok x, y;
            int ra = ts_read(c, A, &sb, &x), rb = ts_read(c, B, &sb, &y);
            if (ra > 0 && rb > 0 && tok_eq(&x, &y)) {
                pa++, pb++, eq++;
                continue;
            }
            if (ra > 0)
                ts_push(A, &x);
            if (rb > 0)
                ts_push(B, &y);
        }
        int ga = A->n ? 1 : ts_pull(c, A, &sb), gb = B->n ? 1 : ts_pull(c, B, &sb);
        if (ga < 0 || gb < 0) {
            rc = -1;
            break;
        }
        if (!ga && !gb)
            break;
        if (ga && gb && tok_eq(&A->q[A->head], &B->q[B->head])) {
            ts_drop(A, 1);
            ts_drop(B, 1);
            pa++, pb++, eq++;
            continue;
        }
        add_run(rs, '=', pa - eq, pb - eq, eq);
        eq = 0;
        if (ts_fill(c, A, window, &sb) < 0 || ts_fill(c, B, window, &sb) < 0) {
            rc = -1;
            break;
        }
        align_window(A, B, rs, &pa, &pb, budget, first, resync, exhausted);
    }
    add_run(rs, '=', pa - eq, pb - eq, eq);
    A->s.n = pa;
    B->s.n = pb;
    gr_sb_free(&sb);
    return rc;
}

/* ---- pass 2: the records the report shows -------------------------------- */

/* A position the report asks for, and what it found there. */
typedef struct want {
    size_t pos;
    uint64_t rec;       /* record index, nrecs when past the end */
    int first;          /* the hunk header's greenlet and stack asked for */
    size_t hdr;         /* offset of the header text in text */
} want;

typedef struct wants {
    want *w;
    size_t n, cap;
    gr_sb text;         /* NUL-separated texts */
} wants;

/* A trace read again in print order (each side's positions only grow). */
typedef struct cursor {
    gr_trace t;
    int open, end;
    size_t ci;          /* next record of the batch */
    size_t pos;         /* position of that record if compared */
} cursor;

typedef struct resolver {
    wants side[2];
    int collecting;
    uint64_t nrecs[2];
    cursor cur[2];
    const char *path[2];
    const gr_launch *launch[2];
    int cmp_instr;
    gr_sb line;
} resolver;

/* Position p's record of side k, the cursor moved to it; NULL past the end. */
static const gr_record *cursor_at(resolver *rv, int k, size_t p)
{
    cursor *cu = &rv->cur[k];
    if (!cu->open) {
        cu->open = 1;
        if (gr_trace_open(&cu->t, rv->path[k]) != GR_READ_OK)
            cu->end = 1;
        gr_trace_set_batch(&cu->t, BATCH);
    }
    while (!cu->end) {
        if (cu->ci >= cu->t.nrecs) {
            cu->ci = 0;
            if (gr_trace_next_chunk(&cu->t) <= 0)
                cu->end = 1;
            continue;
        }
        const gr_record *r = &cu->t.recs[cu->ci];
        if (!compared(rv->launch[k], rv->cmp_instr, r)) {
            cu->ci++;
            continue;
        }
        if (cu->pos == p)
            return r;
        cu->ci++;
        cu->pos++;
    }
    return NULL;
}

static void ask(resolver *rv, int k, size_t p, int first)
{
    wants *ws = &rv->side[k];
    ws->w = gr_xgrow(ws->w, &ws->cap, ws->n + 1, sizeof *ws->w);
    ws->w[ws->n++] = (want){p, rv->nrecs[k], first, 0};
}

static const want *find(const resolver *rv, int k, size_t p)
{
    const wants *ws = &rv->side[k];
    size_t lo = 0, hi = ws->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ws->w[mid].pos < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ws->n && ws->w[lo].pos == p ? &ws->w[lo] : NULL;
}

static uint64_t rv_rec_at(void *priv, int k, size_t p)
{
    resolver *rv = priv;
    if (rv->collecting) {
        ask(rv, k, p, 0);
        return 0;
    }
    const want *w = find(rv, k, p);
    return w ? w->rec : rv->nrecs[k];
}

static void rv_line(void *priv, FILE *out, char sign, int k, size_t p)
{
    resolver *rv = priv;
    if (rv->collecting)
        return;
    const gr_record *r = cursor_at(rv, k, p);
    if (!r)
        return;
    gr_sb_reset(&rv->line);
    gr_dump_record(&rv->line, &rv->cur[k].t, r);
    fprintf(out, "%c%s\n", sign, gr_sb_str(&rv->line));
}

static void rv_first(void *priv, int k, size_t p, gr_sb *hdr)
{
    resolver *rv = priv;
    if (rv->collecting) {
        ask(rv, k, p, 1);
        return;
    }
    const want *w = find(rv, k, p);
    if (w && w->rec < rv->nrecs[k])
        gr_sb_puts(hdr, rv->side[k].text.s + w->hdr);
}

static int want_cmp(const void *x, const void *y)
{
    const want *a = x, *b = y;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Sort the wants by position, one per position (first if any asked). */
static void wants_unique(wants *ws)
{
    qsort(ws->w, ws->n, sizeof *ws->w, want_cmp);
    size_t m = 0;
    for (size_t i = 0; i < ws->n; i++) {
        if (m && ws->w[m - 1].pos == ws->w[i].pos)
            ws->w[m - 1].first |= ws->w[i].first;
        else
            ws->w[m++] = ws->w[i];
    }
    ws->n = m;
}

/* Shadow stacks of shadow_before (diff.c), per (thread, greenlet). */
typedef struct shadows {
    gr_idmap map;
    struct sh { uint32_t *ids; size_t n, cap; } *st;
    size_t n, cap;
} shadows;

static struct sh *sh_of(shadows *sh, uint64_t tid, uint64_t gid)
{
    size_t k;
    if (!gr_idmap_get(&sh->map, tid, gid, &k)) {
        sh->st = gr_xgrow(sh->st, &sh->cap, sh->n + 1, sizeof *sh->st);
        k = sh->n++;
        memset(&sh->st[k], 0, sizeof sh->st[k]);
        gr_idmap_put(&sh->map, tid, gid, k);
    }
    return &sh->st[k];
}

static void sh_push(struct sh *h, uint32_t code)
{
    h->ids = gr_xgrow(h->ids, &h->cap, h->n + 1, sizeof *h->ids);
    h->ids[h->n++] = code;
}

static void sh_apply(shadows *sh, const gr_trace *t, const gr_record *r)
{
    struct sh *h;
    switch (r->tag) {
    case GR_GREENLET: {
        const uint32_t *ids = gr_record_stack(t, r);
        h = sh_of(sh, r->tid, r->gid);
        h->n = 0;
        for (uint32_t k = (uint32_t)gr_launch_record_prefix(t, r); k < r->depth; k++)
            sh_push(h, ids[k]);
        break;
    }
    case GR_CALL:
    case GR_C_CALL: sh_push(sh_of(sh, r->tid, r->gid), r->code); break;
    case GR_RETURN:
    case GR_C_RETURN:
    case GR_C_EXCEPTION: {
        h = sh_of(sh, r->tid, r->gid);
        size_t k = h->n;
        while (k > 0 && h->ids[k - 1] != r->code)
            k--;
        if (k > 0)
            h->n = k - 1;
        break;
    }
    default: break;
    }
}

static void shadows_free(shadows *sh)
{
    for (size_t k = 0; k < sh->n; k++)
        free(sh->st[k].ids);
    free(sh->st);
    gr_idmap_free(&sh->map);
}

/* Fill the wants of side k (sorted) from its trace at path: positions
 * count the records compared (`compared`). */
static int resolve(wants *ws, int k, const char *path, int cmp_instr, const gr_launch *launch)
{
    if (!ws->n)
        return 0;
    gr_trace t;
    if (gr_trace_open(&t, path) != GR_READ_OK) {
        fprintf(stderr, "greenreplay: %s\n", t.err.msg);
        gr_trace_free(&t);
        return -1;
    }
    gr_trace_set_batch(&t, BATCH);
    shadows sh;
    memset(&sh, 0, sizeof sh);
    gr_sb_putc(&ws->text, '\0');
    size_t pos = 0, wi = 0;
    int rc;
    while (wi < ws->n && (rc = gr_trace_next_chunk(&t)) > 0) {
        for (size_t i = 0; i < t.nrecs && wi < ws->n; i++) {
            const gr_record *r = &t.recs[i];
            if (compared(launch, cmp_instr, r)) {
                want *w = &ws->w[wi];
                if (w->pos == pos) {
                    w->rec = r->index;
                    if (w->first) {
                        w->hdr = ws->text.len;
                        struct sh *h = sh_of(&sh, r->tid, r->gid);
                        gr_sb_printf(&ws->text, " t%" PRIu64 " g%" PRIu64 " in %s: ", r->tid,
                                     r->gid, k ? "B" : "A");
                        gr_diff_stack_text(&t, h->ids, h->n, &ws->text);
                        gr_sb_putc(&ws->text, '\0');
                    }
                    wi++;
                }
                pos++;
            }
            sh_apply(&sh, &t, r);
        }
    }
    rc = t.err.status ? -1 : 0;
    if (rc)
        fprintf(stderr, "greenreplay: %s\n", t.err.msg);
    shadows_free(&sh);
    gr_trace_free(&t);
    return rc;
}

/* ---- driver -------------------------------------------------------------- */

int gr_diff_stream(FILE *out, const gr_diff_info *a, const char *path_a, const char *name_a,
                   const gr_diff_info *b, const char *path_b, const char *name_b,
                   const gr_diff_opts *o)
{
    gr_diff_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.cmp_instr = a->has_instr && b->has_instr;
    c.cmp_ut = a->knows_ut && b->knows_ut;
    tstream *ts = gr_xrealloc(NULL, 2 * sizeof *ts);
    memset(ts, 0, 2 * sizeof *ts);
    runs rs = {NULL, 0, 0};
    int exhausted = 0, rc = 2;
    resolver rv;
    memset(&rv, 0, sizeof rv);
    gr_sb_init(&rv.side[0].text);
    gr_sb_init(&rv.side[1].text);
    gr_sb_init(&rv.line);
    rv.path[0] = path_a;
    rv.path[1] = path_b;
    rv.cmp_instr = c.cmp_instr;
    rv.launch[0] = &a->launch;
    rv.launch[1] = &b->launch;
    if (ts_open(&ts[0], path_a, a) < 0 || ts_open(&ts[1], path_b, b) < 0)
        goto done;
    if (compare(&c, &ts[0], &ts[1], &rs, &exhausted) < 0)
        goto done;
    gr_diff_sum sa = {&a->t, name_a, a->nrecs, &ts[0].s}, sb = {&b->t, name_b, b->nrecs, &ts[1].s};
    rv.nrecs[0] = a->nrecs;
    rv.nrecs[1] = b->nrecs;
    gr_diff_src src = {rv_rec_at, rv_line, rv_first, &rv};
    /* first the positions the report shows, then their records */
    rv.collecting = 1;
    FILE *null = fopen("/dev/null", "w");
    if (!null) {
        perror("greenreplay: /dev/null");
        goto done;
    }
    gr_edit *copy = gr_xrealloc(NULL, (rs.n + 1) * sizeof *copy);
    memcpy(copy, rs.r, rs.n * sizeof *copy);
    gr_diff_report(null, &c, &sa, &sb, copy, rs.n, exhausted, &src);
    free(copy);
    fclose(null);
    rv.collecting = 0;
    for (int k = 0; k < 2; k++) {
        wants_unique(&rv.side[k]);
        if (resolve(&rv.side[k], k, k ? path_b : path_a, c.cmp_instr, &(k ? b : a)->launch) < 0)
            goto done;
    }
    rc = gr_diff_report(out, &c, &sa, &sb, rs.r, rs.n, exhausted, &src);
done:
    for (int k = 0; k < 2; k++) {
        free(rv.side[k].w);
        gr_sb_free(&rv.side[k].text);
        gr_trace_free(&rv.cur[k].t);
        ts_free(&ts[k]);
    }
    gr_sb_free(&rv.line);
    free(ts);
    free(rs.r);
    gr_interner_free(&c.in);
    return rc;
}
