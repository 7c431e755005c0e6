/* conform.c - a profiler's results against the recording's ground truth
 * (conform.h, docs/conform.md). */
#include "conform.h"

#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls of one function in one greenlet. */
struct gl_count {
    uint64_t tid, gid;
    uint64_t calls;  /* CALL records */
    uint64_t open;      /* frames of it still running (on the greenlet's
                           stack) when the profiler stopped */
    uint64_t primitive; /* of them, calls made while the function had no
                           frame in the greenlet's stack (pstats' primitive
                           calls: not recursive) */
    uint64_t proven; /* most occurrences in one real stack above the seed */
    uint64_t window; /* CALL records between the finish MARK and the MARK
                        that the profiler stopped: it may count them */
    uint64_t limbo;  /* calls on another thread than the finish MARK's that
                        were in progress, or had just returned, when the
                        MARK was written: a profiler whose callback that
                        thread was still running (or that counts a call at
                        its return) may not have counted them */
};

/* A thread's last Python CALL or RETURN record (before the finish MARK). */
struct thr_last {
    uint64_t tid, gid;
    uint32_t code;
    uint8_t tag; /* GR_CALL or GR_RETURN */
};

/* Per code id: the greenlets it ran in. */
struct fn_truth {
    struct gl_count *gl;
    size_t n, cap;
    int spans; /* a call of it was in progress in a greenlet that switched
                  out (its frame on the greenlet's stack then) */
};

/* Calls of callee made by caller (its frame below it in the greenlet's
 * stack) in thread tid: a caller->callee edge as pstats keeps them. */
struct edge {
    uint64_t tid;
    uint32_t caller, callee; /* callee 0: an empty slot */
    uint64_t calls;
};

/* A greenlet as first seen. */
struct gl_info {
    uint64_t tid, gid;
    int main;
    uint32_t first_code; /* code of its first CALL, 0 none */
    uint32_t *seed;      /* its GREENLET stack */
    uint32_t nseed;
    uint32_t *sh;        /* its Python frames as the recorder saw them */
    size_t nsh, capsh;
    size_t nseedpy;      /* how many of them come from its seed (not calls
                            the recorder saw) */
    uint32_t *shc;       /* per entry of sh: the C function being called
                            when that frame was called (0 none) */
    size_t capshc;
    uint32_t incall;     /* the C function being called in the top frame
                            of sh (0 none): set by C_CALL, cleared by its
                            C_RETURN or C_EXCEPTION, restored by the RETURN
                            of a Python function it called */
    size_t nbefore;      /* manual start: how many of sh were called before
                            the start MARK (the profiler never saw them
                            called, so it cannot name them as callers) */
    uint32_t ccall;      /* the C function it is calling (a C_CALL with no
                            C_RETURN, C_EXCEPTION or CALL after it), 0 none */
};

struct gr_conform {
    struct fn_truth *fn; /* indexed by code id */
    size_t nfn;
    struct gl_info *gl;
    size_t ngl, capgl;
    uint64_t start_tid; /* thread of the START record (0 none yet) */
    uint32_t module_code; /* code of the first CALL: the program's <module> */
    int seen_call;
    int windowed;  /* a start MARK was seen: count only inside the window */
    int in_window; /* between the start and the stop MARK */
    int finished;  /* the finish MARK was seen: the program has ended and
                      what follows is the harness's own work at exit */
    int stopped;   /* the MARK GR_CONFORM_MARK_STOPPED was seen: the
                      harness stopped the profiler */
    uint64_t finish_tid; /* the finish MARK's thread, when the recorder was
                            its profile function there (0 otherwise) */
    uint64_t displaced_at;  /* the record where that was found */
    uint64_t displaced_tid; /* the finish MARK's thread, when the recorder
                               was not its profile function there */
    uint64_t *blind_tids; /* threads other than the starting one where the
                             program installed a profile function (HOOK
                             action 1): calls may have run unseen */
    size_t nblind, capblind;
    int program_ran;    /* a CALL after the program's <module>, or a C_CALL,
                           was seen: the adapter's start (automatic mode)
                           is over */
    int adapter_slot;   /* the adapter's start installed a profile function
                           on the starting thread (a HOOK set there, unseen
                           by the recorder's events: during 0 before the
                           program ran, or under the harness's frames) */
    uint64_t own_at;    /* the first HOOK where the program installed its
                           own profile function on the starting thread
                           (announced, during a C call of its own), 0 none */
    uint32_t own_during, own_top, own_inner; /* that HOOK's C call, the top
                           Python frame then and the innermost one under
                           the root (0 none) */
    struct thr_last *last; /* per thread seen */
    size_t nlast, caplast;
    uint8_t *rootcode;  /* per code id: 0 unknown, 1 Python code under the
                           root, 2 anything else */
    size_t nrootcode;
    uint32_t *scratch; /* sorted copy of a stack */
    size_t capscratch;
    struct edge *edges; /* caller->callee calls between Python functions
                           under the root (open addressing, nedges used) */
    size_t nedges, capedges;
    struct edge *adj;   /* pairs of functions under the root that were ever
                           adjacent in a greenlet's Python stack (caller
                           right below callee, a C call between them or
                           not; any thread, tid 0): what a sampled stack
                           may show (results "stacks") */
    size_t nadj, capadj;
};

gr_conform *gr_conform_new(void)
{
    gr_conform *c = gr_xrealloc(NULL, sizeof *c);
    memset(c, 0, sizeof *c);
    return c;
}

void gr_conform_free(gr_conform *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nfn; i++)
        free(c->fn[i].gl);
    free(c->fn);
    for (size_t i = 0; i < c->ngl; i++) {
        free(c->gl[i].seed);
        free(c->gl[i].sh);
        free(c->gl[i].shc);
    }
    free(c->rootcode);
    free(c->gl);
    free(c->scratch);
    free(c->blind_tids);
    free(c->last);
    free(c->edges);
    free(c->adj);
    free(c);
}

static struct gl_info *find_gl(const gr_conform *c, uint64_t tid, uint64_t gid)
{
    /* gid is unique in the process; gid 0 (no greenlet) is one per thread. */
    for (size_t i = c->ngl; i-- > 0;)
        if (c->gl[i].gid == gid && (gid != 0 || c->gl[i].tid == tid))
            return &c->gl[i];
    return NULL;
}

static struct gl_info *add_gl(gr_conform *c, uint64_t tid, uint64_t gid)
{
    struct gl_info *g = find_gl(c, tid, gid);
    if (g)
        return g;
    c->gl = gr_xgrow(c->gl, &c->capgl, c->ngl + 1, sizeof *c->gl);
    g = &c->gl[c->ngl++];
    memset(g, 0, sizeof *g);
    g->tid = tid;
    g->gid = gid;
    return g;
}

static struct fn_truth *fn_of(gr_conform *c, uint32_t code)
{
    if (code >= c->nfn) {
        size_t n = c->nfn ? c->nfn : 64;
        while (n <= code)
            n *= 2;
        c->fn = gr_xrealloc(c->fn, n * sizeof *c->fn);
        memset(c->fn + c->nfn, 0, (n - c->nfn) * sizeof *c->fn);
        c->nfn = n;
    }
    return &c->fn[code];
}

int gr_conform_spans(const gr_conform *c, uint32_t code)
{
    return code < c->nfn && c->fn[code].spans;
}

static struct gl_count *count_of(gr_conform *c, uint32_t code, uint64_t tid, uint64_t gid)
{
    struct fn_truth *f = fn_of(c, code);
    for (size_t i = 0; i < f->n; i++)
        if (f->gl[i].gid == gid && f->gl[i].tid == tid)
            return &f->gl[i];
    f->gl = gr_xgrow(f->gl, &f->cap, f->n + 1, sizeof *f->gl);
    struct gl_count *e = &f->gl[f->n++];
    memset(e, 0, sizeof *e);
    e->tid = tid;
    e->gid = gid;
    return e;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* A real stack of greenlet (tid, gid): every function in it above the
 * greenlet's seed ran at least as often as it occurs there. */
static void real_stack(gr_conform *c, uint64_t tid, uint64_t gid, const uint32_t *stack, uint32_t depth, int cut)
{
    struct gl_info *g = add_gl(c, tid, gid);
    uint32_t from = 0;
    if (g->nseed) {
        if (cut || depth < g->nseed || memcmp(stack, g->seed, g->nseed * sizeof *stack) != 0)
            return; /* cannot tell its frames from the seed's */
        from = g->nseed;
    }
    size_t n = depth - from;
    if (!n)
        return;
    if (!g->first_code)
        g->first_code = stack[from]; /* its outermost frame of its own */
    c->scratch = gr_xgrow(c->scratch, &c->capscratch, n, sizeof *c->scratch);
    memcpy(c->scratch, stack + from, n * sizeof *stack);
    qsort(c->scratch, n, sizeof *c->scratch, cmp_u32);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && c->scratch[j] == c->scratch[i])
            j++;
        struct gl_count *e = count_of(c, c->scratch[i], tid, gid);
        if (e->proven < j - i)
            e->proven = j - i;
        i = j;
    }
}

/* Whether code id is Python code in a file under the root (a relative
 * name in the trace). */
static int is_root_code(gr_conform *c, const gr_trace *t, uint32_t code)
{
    if (code >= c->nrootcode) {
        size_t n = c->nrootcode ? c->nrootcode : 64;
        while (n <= code)
            n *= 2;
        c->rootcode = gr_xrealloc(c->rootcode, n);
        memset(c->rootcode + c->nrootcode, 0, n - c->nrootcode);
        c->nrootcode = n;
    }
    if (!c->rootcode[code]) {
        const gr_code *cd = gr_trace_code(t, code);
        size_t n = 0;
        const uint8_t *f = cd && cd->kind == GR_CODE_PY ? gr_trace_string(t, cd->file, &n) : NULL;
        c->rootcode[code] = f && n && f[0] != '<' && f[0] != '/' ? 1 : 2;
    }
    return c->rootcode[code] == 1;
}

static size_t edge_slot(const struct edge *tab, size_t cap, uint64_t tid, uint32_t caller, uint32_t callee)
{
    size_t h = (size_t)((tid * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)caller << 32 | callee) * 0xC2B2AE3D27D4EB4Full);
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!tab[i].callee || (tab[i].tid == tid && tab[i].caller == caller && tab[i].callee == callee))
            return i;
}

/* The edge caller->callee of thread tid (created with 0 calls). */
static struct edge *edge_of(gr_conform *c, uint64_t tid, uint32_t caller, uint32_t callee)
{
    if ((c->nedges + 1) * 2 > c->capedges) {
        size_t cap = c->capedges ? c->capedges * 2 : 256;
        struct edge *tab = gr_xrealloc(NULL, cap * sizeof *tab);
        memset(tab, 0, cap * sizeof *tab);
        for (size_t i = 0; i < c->capedges; i++)
            if (c->edges[i].callee)
                tab[edge_slot(tab, cap, c->edges[i].tid, c->edges[i].caller, c->edges[i].callee)] = c->edges[i];
        free(c->edges);
        c->edges = tab;
        c->capedges = cap;
    }
    struct edge *e = &c->edges[edge_slot(c->edges, c->capedges, tid, caller, callee)];
    if (!e->callee) {
        *e = (struct edge){.tid = tid, .caller = caller, .callee = callee};
        c->nedges++;
    }
    return e;
}

/* Note that caller was right below callee in a real Python stack. */
static void adj_note(gr_conform *c, uint32_t caller, uint32_t callee)
{
    if ((c->nadj + 1) * 2 > c->capadj) {
        size_t cap = c->capadj ? c->capadj * 2 : 256;
        struct edge *tab = gr_xrealloc(NULL, cap * sizeof *tab);
        memset(tab, 0, cap * sizeof *tab);
        for (size_t i = 0; i < c->capadj; i++)
            if (c->adj[i].callee)
                tab[edge_slot(tab, cap, 0, c->adj[i].caller, c->adj[i].callee)] = c->adj[i];
        free(c->adj);
        c->adj = tab;
        c->capadj = cap;
    }
    struct edge *e = &c->adj[edge_slot(c->adj, c->capadj, 0, caller, callee)];
    if (!e->callee) {
        *e = (struct edge){.caller = caller, .callee = callee};
        c->nadj++;
    }
    e->calls++;
}

/* The adjacent Python frames of a real stack (outermost first). */
static void adj_stack(gr_conform *c, const gr_trace *t, const uint32_t *stack, uint32_t depth)
{
    uint32_t prev = 0;
    for (uint32_t i = 0; i < depth; i++) {
        const gr_code *cd = gr_trace_code(t, stack[i]);
        if (!cd || cd->kind != GR_CODE_PY)
            continue;
        if (prev && is_root_code(c, t, prev) && is_root_code(c, t, stack[i]))
            adj_note(c, prev, stack[i]);
        prev = stack[i];
    }
}

static int adj_seen(const gr_conform *c, uint32_t caller, uint32_t callee)
{
    if (!c->capadj)
        return 0;
    return c->adj[edge_slot(c->adj, c->capadj, 0, caller, callee)].callee != 0;
}

static void sh_push(struct gl_info *g, uint32_t code)
{
    g->sh = gr_xgrow(g->sh, &g->capsh, g->nsh + 1, sizeof *g->sh);
    g->shc = gr_xgrow(g->shc, &g->capshc, g->nsh + 1, sizeof *g->shc);
    g->shc[g->nsh] = g->incall;
    g->incall = 0;
    g->sh[g->nsh++] = code;
}

/* Whether C function code installs a profile function on the calling
 * thread: sys.setprofile, cProfile's enable() (a profile function on
 * 3.9-3.11), sys._setprofileallthreads (threading.setprofile_all_threads,
 * 3.12+).  A C extension's own call of PyEval_SetProfile is not told
 * from a profiler's (docs/conform.md). */
static int installs_profiler(const gr_trace *t, uint32_t code)
{
    static const char *const names[] = {"sys.setprofile", "_lsprof.Profiler.enable", "sys._setprofileallthreads"};
    const gr_code *cd = gr_trace_code(t, code);
    size_t n = 0;
    const uint8_t *q = cd && cd->kind == GR_CODE_C ? gr_trace_string(t, cd->qualname, &n) : NULL;
    for (size_t i = 0; q && i < sizeof names / sizeof *names; i++)
        if (n == strlen(names[i]) && memcmp(q, names[i], n) == 0)
            return 1;
    return 0;
}

/* Remember r (a CALL or RETURN) as its thread's last. */
static void note_last(gr_conform *c, const gr_record *r)
{
    size_t i = 0;
    while (i < c->nlast && c->last[i].tid != r->tid)
        i++;
    if (i == c->nlast) {
        c->last = gr_xgrow(c->last, &c->caplast, c->nlast + 1, sizeof *c->last);
        c->nlast++;
    } else if (c->last[i].gid != r->gid) {
        /* The thread switched greenlets: the calls in progress in the one
         * it left span a switch (gr_conform_spans). */
        struct gl_info *g = find_gl(c, r->tid, c->last[i].gid);
        for (size_t k = 0; g && k < g->nsh; k++)
            fn_of(c, g->sh[k])->spans = 1;
    }
    c->last[i] = (struct thr_last){.tid = r->tid, .gid = r->gid, .code = r->code, .tag = r->tag};
}

/* At the finish MARK written on thread tid: on every other thread, the
 * calls in progress in the greenlet of its last CALL or RETURN (the frames
 * the recorder saw called), and the call that RETURN ended, are in limbo.
 * That thread stopped somewhere after its last record, possibly inside the
 * profiler's callback for it (yappi's runs Python code, where the GIL can
 * pass to the harness, which then stops the profiler): the profiler may
 * not have counted that call; one that counts a call at its return (yappi)
 * never counts the calls still in progress when it stops. */
static void limbo_at_finish(gr_conform *c, uint64_t tid)
{
    for (size_t i = 0; i < c->nlast; i++) {
        const struct thr_last *l = &c->last[i];
        if (l->tid == tid)
            continue;
        if (l->tag == GR_RETURN)
            count_of(c, l->code, l->tid, l->gid)->limbo++;
        struct gl_info *g = find_gl(c, l->tid, l->gid);
        for (size_t k = g ? g->nseedpy : 0; g && k < g->nsh; k++)
            count_of(c, g->sh[k], l->tid, l->gid)->limbo++;
    }
}

/* The profiler stops: every frame still on a greenlet's stack is a call
 * in progress (a profiler may count its primitive call and its caller at
 * its return: yappi does). */
static void mark_open(gr_conform *c)
{
    for (size_t i = 0; i < c->ngl; i++) {
        struct gl_info *g = &c->gl[i];
        for (size_t k = g->nseedpy; k < g->nsh; k++)
            count_of(c, g->sh[k], g->tid, g->gid)->open++;
    }
}

/* Whether MARK r carries label (the harness's window marks). */
static int mark_is(const gr_trace *t, const gr_record *r, const char *label)
{
    size_t n;
    const uint8_t *p = gr_trace_string(t, r->label, &n);
    return p && n == strlen(label) && memcmp(p, label, n) == 0;
}

/* The harness's marks: the window of a manual start, the finish and the
 * profiler stopped.  1 when r was one of them. */
static int feed_harness_mark(gr_conform *c, const gr_trace *t, const gr_record *r)
{
    if (r->tag == GR_MARK && !c->windowed && mark_is(t, r, GR_CONFORM_MARK_START)) {
        /* The program started the profiler itself: forget what ran before
         * (a profile function of its own installed then displaced none). */
        c->windowed = c->in_window = 1;
        c->own_at = 0;
        for (size_t i = 0; i < c->nfn; i++)
            c->fn[i].n = 0;
        for (size_t i = 0; i < c->ngl; i++)
            c->gl[i].nbefore = c->gl[i].nsh;
        if (c->edges)
            memset(c->edges, 0, c->capedges * sizeof *c->edges);
        c->nedges = 0;
        return 1;
    }
    if (r->tag == GR_MARK && c->in_window && mark_is(t, r, GR_CONFORM_MARK_STOP)) {
        c->in_window = 0;
        mark_open(c);
        return 1;
    }
    if (r->tag == GR_MARK && mark_is(t, r, GR_CONFORM_MARK_FINISH)) {
        if (!(r->flags & GR_MARK_PROFILE_OURS) && !c->displaced_tid) {
            c->displaced_tid = r->tid;
            c->displaced_at = r->index;
        }
        if (r->flags & GR_MARK_PROFILE_OURS)
            c->finish_tid = r->tid;
        if (!c->windowed) { /* (manual mode: the profiler stopped before) */
            limbo_at_finish(c, r->tid);
            mark_open(c);
        }
        c->finished = 1;
        return 1;
    }
    if (r->tag == GR_MARK && c->finished && mark_is(t, r, GR_CONFORM_MARK_STOPPED)) {
        c->stopped = 1;
        return 1;
    }
    return 0;
}

/* A new greenlet: its seed stack. */
static void feed_greenlet(gr_conform *c, const gr_trace *t, const gr_record *r, const uint32_t *stack)
{
    struct gl_info *g = add_gl(c, r->tid, r->gid);
    g->main = (r->flags & GR_GL_MAIN) != 0;
    free(g->seed);
    g->seed = NULL;
    g->nseed = r->depth;
    g->nsh = 0;
    g->nseedpy = 0;
    g->incall = 0;

    if (r->depth) {
        g->seed = gr_xrealloc(NULL, r->depth * sizeof *g->seed);
        memcpy(g->seed, stack, r->depth * sizeof *g->seed);
        for (uint32_t i = 0; i < r->depth; i++) {
            const gr_code *cd = gr_trace_code(t, stack[i]);
            if (cd && cd->kind == GR_CODE_PY)
                sh_push(g, stack[i]);
        }
        g->nseedpy = g->nsh;
    }
    g->nbefore = c->in_window ? g->nseedpy : 0; /* (its seed: called before the start) */
}

/* A HOOK: the profile function displaced, the adapter's or the program's
 * own installed, or one put on another thread. */
static void feed_hook(gr_conform *c, const gr_trace *t, const gr_record *r)
{
    /* A takeover the recorder found without the audit event (at a mark
     * or at stop): what ran before it on that thread is missing from
     * the recording (docs/FORMAT.md, HOOK who bit 2). */
    /* Not after the finish MARK on its thread, when the MARK showed
     * the recorder in place there: what the profiler's stop does to the
     * thread's profile function then is not the program's. */
    if (r->flags == GR_HOOK_PROFILE && (r->parent & GR_HOOK_UNANNOUNCED) && !c->displaced_tid &&
        !(c->finished && c->finish_tid && r->tid == c->finish_tid)) {
        c->displaced_tid = r->tid;
        c->displaced_at = r->index;
    }
    /* A profile function installed on the starting thread: the
     * adapter's own at its start (automatic mode: inside the boot's
     * profile function, so no C call of it is seen and the program has
     * not run yet; manual mode: under the harness's frames), or the
     * program's own (cProfile's enable() on 3.9-3.11, sys.setprofile),
     * which displaces a profiler of that slot: a thread has one. */
    if (r->flags == GR_HOOK_PROFILE && r->tracing == GR_HOOK_SET && !(r->parent & GR_HOOK_UNANNOUNCED) &&
        r->tid == c->start_tid && !c->finished) {
        struct gl_info *g = add_gl(c, r->tid, r->gid);
        int harness = 0;
        uint32_t inner = 0;
        for (size_t k = g->nsh; k-- > 0;) {
            const gr_code *cd = gr_trace_code(t, g->sh[k]);
            size_t fn = 0;
            const uint8_t *f = cd ? gr_trace_string(t, cd->file, &fn) : NULL;
            if (f && fn >= 13 && memcmp(f, "<greenreplay>", 13) == 0)
                harness = 1;
            if (!inner && is_root_code(c, t, g->sh[k]))
                inner = g->sh[k];
        }
        /* The C call that changed it: `during` when its c_return went
         * to the new function, else the C call still open (its
         * c_return came after the HOOK: sys.setprofile).  Only the
         * calls that install a profile function count as the
         * program's: a profiler of the slot that puts itself back
         * from its own callback (yappi does, in a new greenlet and at
         * a C call) changes it while some other C call is open. */
        uint32_t during = r->code ? r->code : g->ccall;
        if (harness || (!r->code && !c->program_ran)) {
            c->adapter_slot = 1;
        } else if (during && installs_profiler(t, during) && !c->own_at) {
            c->own_at = r->index;
            c->own_during = during;
            c->own_top = g->nsh ? g->sh[g->nsh - 1] : 0;
            c->own_inner = inner;
        }
    }
    /* The program put its own profile function on another thread than
     * the one it started on: a profiler that writes the thread state
     * directly (yappi does, for every thread) raises no audit event
     * there, and the recorder can then be displaced unseen. */
    if (r->flags == GR_HOOK_PROFILE && r->tracing == GR_HOOK_SET && r->tid != c->start_tid) {
        for (size_t i = 0; i < c->nblind; i++)
            if (c->blind_tids[i] == r->tid)
                return;
        c->blind_tids = gr_xgrow(c->blind_tids, &c->capblind, c->nblind + 1, sizeof *c->blind_tids);
        c->blind_tids[c->nblind++] = r->tid;
    }
}

/* A Python call: counted, primitive or not, and its caller edge. */
static void feed_call(gr_conform *c, const gr_trace *t, const gr_record *r)
{
    if (c->seen_call)
        c->program_ran = 1;
    if (!c->seen_call) {
        c->seen_call = 1;
        c->module_code = r->code;
    }
    struct gl_info *g = add_gl(c, r->tid, r->gid);
    if (!g->first_code)
        g->first_code = r->code;
    struct gl_count *n = count_of(c, r->code, r->tid, r->gid);
    n->calls++;
    /* Primitive unless the function has a frame in this greenlet's
     * stack already; the caller is the frame below, when it is a
     * Python function (not a C function being called, and not the
     * bottom of a new greenlet, which has no caller in its stack). */
    size_t k = g->nsh;
    while (k > 0 && g->sh[k - 1] != r->code)
        k--;
    if (!k)
        n->primitive++;
    if (!g->incall && g->nsh && g->nsh > g->nbefore && is_root_code(c, t, g->sh[g->nsh - 1]) &&
        is_root_code(c, t, r->code))
        edge_of(c, r->tid, g->sh[g->nsh - 1], r->code)->calls++;
    if (g->nsh && is_root_code(c, t, g->sh[g->nsh - 1]) && is_root_code(c, t, r->code))
        adj_note(c, g->sh[g->nsh - 1], r->code);
    sh_push(g, r->code);
    g->ccall = 0;
    note_last(c, r);
}

void gr_conform_feed(gr_conform *c, const gr_trace *t, const gr_record *r)
{
    /* (c is also written by is_root_code, through this non-const pointer.) */
    const uint32_t *stack = r->depth ? gr_record_stack(t, r) : NULL;
    if (feed_harness_mark(c, t, r))
        return;
    /* Between the two, the harness is stopping the profiler: a call made
     * then (a finaliser, an audit hook the profiler's stop raises, another
     * thread) may or may not be counted by it.  Kept apart: an excess up to
     * these is not a verdict. */
    if (c->finished && !c->stopped && r->tag == GR_CALL && (!c->windowed || c->in_window)) {
        count_of(c, r->code, r->tid, r->gid)->window++;
        return;
    }
    /* After the finish MARK the harness stops the profiler and collects its
     * results: calls made then (a finaliser the collector runs during its
     * allocations, another thread still running) are not the program's as
     * the profiler saw it (those before the profiler stopped: above).  Still
     * read: GREENLET and the STACK records at stop (the real stacks of
     * greenlets suspended since before), and HOOK (a takeover found at
     * stop). */
    if (c->finished && r->tag != GR_GREENLET && r->tag != GR_STACK && r->tag != GR_HOOK)
        return;
    if (c->windowed && !c->in_window && r->tag != GR_GREENLET)
        return;
    switch (r->tag) {
    case GR_GREENLET:
        feed_greenlet(c, t, r, stack);
        break;
    case GR_HOOK:
        feed_hook(c, t, r);
        break;
    case GR_START:
        if (!c->start_tid)
            c->start_tid = r->tid;
        break;
    case GR_CALL:
        feed_call(c, t, r);
        break;
    case GR_RETURN: {
        /* Pop it, or down to it when returns were lost; ignore a return
         * of a frame not on the shadow (one opened before recording). */
        struct gl_info *g = add_gl(c, r->tid, r->gid);
        for (size_t k = g->nsh; k-- > 0;)
            if (g->sh[k] == r->code) {
                g->nsh = k;
                g->incall = g->shc[k];
                if (g->nseedpy > k)
                    g->nseedpy = k;
                if (g->nbefore > k)
                    g->nbefore = k;
                break;
            }
        note_last(c, r);
        break;
    }
    case GR_C_CALL: {
        /* A C call made by the program's own code: a C function's truth
         * counts only these (its callers elsewhere are not compared). */
        struct gl_info *g = add_gl(c, r->tid, r->gid);
        c->program_ran = 1;
        g->ccall = r->code;
        g->incall = r->code;
        if (g->nsh && is_root_code(c, t, g->sh[g->nsh - 1]) && g->sh[g->nsh - 1] != c->module_code)
            count_of(c, r->code, r->tid, r->gid)->calls++;
        break;
    }
    case GR_C_RETURN:
    case GR_C_EXCEPTION: {
        struct gl_info *g = add_gl(c, r->tid, r->gid);
        g->ccall = 0;
        g->incall = 0;
        break;
    }
    case GR_MARK:
        adj_stack(c, t, stack, r->depth);
        if (c->windowed)
            break; /* frames in a stack may have been called before the window */
        real_stack(c, r->tid, r->gid, stack, r->depth, (r->flags & GR_MARK_CUT) != 0);
        break;
    case GR_SWITCH:
    case GR_THROW:
        if (r->flags & GR_SW_REAL_STACK)
            adj_stack(c, t, stack, r->depth);
        if ((r->flags & GR_SW_REAL_STACK) && !c->windowed)
            real_stack(c, r->tid, r->target, stack, r->depth, (r->flags & GR_SW_CUT) != 0);
        break;
    case GR_STACK:
        if (!(r->flags & GR_STACK_THREAD_ENDED))
            adj_stack(c, t, stack, r->depth);
        if (!(r->flags & GR_STACK_THREAD_ENDED) && !c->windowed)
            real_stack(c, r->tid, r->gid, stack, r->depth, (r->flags & GR_STACK_CUT) != 0);
        break;
    default:
        break;
    }
}

/* ---- comparison ---- */

const char *gr_conform_str(const gr_trace *t, uint64_t id, gr_sb *sb)
{
    size_t n;
    const uint8_t *p = gr_trace_string(t, id, &n);
    gr_sb_reset(sb);
    gr_sb_put(sb, p ? (const char *)p : "", p ? n : 0);
    return gr_sb_str(sb);
}

/* The last component of a qualname ("A.<locals>.f" -> "f"). */
static const char *base_name(const char *q)
{
    const char *dot = strrchr(q, '.');
    return dot && dot[1] ? dot + 1 : q;
}

static int in_list(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return 1;
    }
    return 0;
}

/* The entry of arr (objects with line, name and, when file is not NULL,
 * file) for [file:]line and the qualname's last component; when no name
 * matches, the only entry at [file:]line.  NULL when absent. */
static json_t *find_entry(json_t *arr, const char *file, long long line, const char *qualname)
{
    const char *want = base_name(qualname);
    json_t *only = NULL, *v;
    size_t i, at = 0;
    json_array_foreach(arr, i, v) {
        json_t *l = json_object_get(v, "line");
        if (!json_is_integer(l) || json_integer_value(l) != line)
            continue;
        if (file) {
            const char *f = json_string_value(json_object_get(v, "file"));
            if (!f || strcmp(f, file) != 0)
                continue;
        }
        const char *nm = json_string_value(json_object_get(v, "name"));
        if (nm && strcmp(base_name(nm), want) == 0)
            return v;
        only = v;
        at++;
    }
    return at == 1 ? only : NULL;
}

/* The entry of arr (objects with file, line, name) for file:line whose
 * name's last component is the qualname's: exactly, no fallback.  NULL
 * when absent or arr is not an array. */
static json_t *find_exact(json_t *arr, const char *file, long long line, const char *qualname)
{
    size_t i;
    json_t *v;
    if (!json_is_array(arr))
        return NULL;
    json_array_foreach(arr, i, v) {
        json_t *l = json_object_get(v, "line");
        const char *f = json_string_value(json_object_get(v, "file"));
        const char *nm = json_string_value(json_object_get(v, "name"));
        if (json_is_integer(l) && json_integer_value(l) == line && f && strcmp(f, file) == 0 && nm &&
            strcmp(base_name(nm), base_name(qualname)) == 0)
            return v;
    }
    return NULL;
}

static long long int_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

static void describe_gl(const gr_conform *c, const gr_trace *t, uint64_t tid, uint64_t gid, gr_sb *out)
{
    struct gl_info *g = find_gl(c, tid, gid);
    if (gid == 0) {
        gr_sb_printf(out, "thread %llu", (unsigned long long)tid);
        return;
    }
    gr_sb_printf(out, "thread %llu greenlet %llu", (unsigned long long)tid, (unsigned long long)gid);
    if (g && g->main) {
        gr_sb_puts(out, " (main)");
    } else if (g && g->first_code) {
        const gr_code *code = gr_trace_code(t, g->first_code);
        size_t n;
        const uint8_t *p = code ? gr_trace_string(t, code->qualname, &n) : NULL;
        gr_sb_puts(out, " (run: ");
        gr_sb_escape(out, p ? p : (const uint8_t *)"?", p ? n : 1, 0);
        gr_sb_putc(out, ')');
    }
}

/* Code id code as "FILE:QUALNAME" (a Python function) or its qualified
 * name (a C function), appended to out; "?" for an unknown id. */
static void code_name(const gr_trace *t, uint32_t code, gr_sb *out)
{
    const gr_code *cd = code ? gr_trace_code(t, code) : NULL;
    size_t n = 0, fn = 0;
    const uint8_t *q = cd ? gr_trace_string(t, cd->qualname, &n) : NULL;
    const uint8_t *f = cd && cd->kind == GR_CODE_PY ? gr_trace_string(t, cd->file, &fn) : NULL;
    if (f && fn) {
        gr_sb_escape(out, f, fn, 0);
        gr_sb_putc(out, ':');
    }
    gr_sb_escape(out, q ? q : (const uint8_t *)"?", q ? n : 1, 0);
}

/* Truth of one function in one greenlet: the larger of the calls the
 * recorder saw and those real stacks prove. */
static uint64_t gl_truth(const struct gl_count *e)
{
    return e->calls > e->proven ? e->calls : e->proven;
}

/* Where function f ran, in the threads in scope (scope_tid, 0: all), and
 * where its `deficit` uncounted calls ran (unit "call", missed
 * "uncounted"; for line hits "run", "without a hit").  Returns the JSON
 * "greenlet" value (a string for one greenlet, else a list; owned by the
 * caller) and appends the text to text:
 *   - deficit 0, or every call uncounted: each greenlet with its count,
 *     "2 in thread 1 greenlet 1 (main), 1 in thread 1 greenlet 2 (...)";
 *   - one greenlet: "1 call uncounted, of the 2 in thread 1 greenlet 1 (main)";
 *   - one greenlet whose count is the deficit: "2 calls uncounted, as many
 *     as ran in thread 1 greenlet 2 (run: worker)" (named alone);
 *   - the non-main greenlets adding up to it: "... as many as ran outside
 *     the main greenlets: 1 in ..., 1 in ..." (named alone);
 *   - else: "1 call uncounted, among: 1 in ..., 1 in ..." (all named).
 * The profiler gives a total only: the last three are what the counts
 * allow, not proof of which calls it missed. */
static json_t *where(const gr_conform *c, const gr_trace *t, const struct fn_truth *f, uint64_t scope_tid,
                     uint64_t deficit, const char *unit, const char *missed, gr_sb *text)
{
    const struct gl_count *exact = NULL;
    int nexact = 0, ngl = 0;
    uint64_t nonmain = 0, total = 0;
    for (size_t i = 0; i < f->n; i++) {
        const struct gl_count *e = &f->gl[i];
        if ((scope_tid && e->tid != scope_tid) || !gl_truth(e))
            continue;
        ngl++;
        total += gl_truth(e);
        if (deficit && gl_truth(e) == deficit) {
            exact = e;
            nexact++;
        }
        struct gl_info *g = find_gl(c, e->tid, e->gid);
        if (!(g && g->main) && e->gid)
            nonmain += gl_truth(e);
    }
    if (deficit >= total)
        deficit = 0; /* none counted: where they ran is where they were missed */
    /* mode 0 every greenlet with its count; 1 one greenlet, part missed;
     * 2 the one greenlet with as many; 3 the non-main ones; 4 among all */
    int mode = !deficit ? 0 : ngl == 1 ? 1 : nexact == 1 ? 2 : nonmain == deficit ? 3 : 4;
    if (mode)
        gr_sb_printf(text, "%llu %s%s %s%s", (unsigned long long)deficit, unit, deficit == 1 ? "" : "s", missed,
                     mode == 1   ? ", of the "
                     : mode == 2 ? ", as many as ran in "
                     : mode == 3 ? ", as many as ran outside the main greenlets: "
                                 : ", among: ");
    json_t *arr = json_array();
    gr_sb one;
    gr_sb_init(&one);
    for (size_t i = 0; i < f->n; i++) {
        const struct gl_count *e = &f->gl[i];
        if ((scope_tid && e->tid != scope_tid) || !gl_truth(e))
            continue;
        if (mode == 2 && e != exact)
            continue;
        struct gl_info *g = find_gl(c, e->tid, e->gid);
        if (mode == 3 && ((g && g->main) || !e->gid))
            continue;
        gr_sb_reset(&one);
        describe_gl(c, t, e->tid, e->gid, &one);
        json_array_append_new(arr, json_string(gr_sb_str(&one)));
        if (mode == 2)
            gr_sb_puts(text, gr_sb_str(&one));
        else
            gr_sb_printf(text, "%s%llu in %s", json_array_size(arr) > 1 ? ", " : "",
                         (unsigned long long)gl_truth(e), gr_sb_str(&one));
        if (e->proven > e->calls)
            gr_sb_puts(text, " (seen in real stacks)");
    }
    gr_sb_free(&one);
    if (json_array_size(arr) == 1) {
        json_t *s = json_incref(json_array_get(arr, 0));
        json_decref(arr);
        return s;
    }
    return arr;
}

static void add_diff(json_t *diffs, const char *kind, const char *fname, long long line, json_t *gl,
                     uint64_t truth, long long prof, const char *msg)
{
    json_t *d = json_object();
    json_object_set_new(d, "kind", json_string(kind));
    json_object_set_new(d, "function", json_string(fname));
    json_object_set_new(d, "line", json_integer(line));
    json_object_set_new(d, "greenlet", gl ? gl : json_array());
    json_object_set_new(d, "truth", json_integer((json_int_t)truth));
    json_object_set_new(d, "profiler", json_integer(prof));
    json_object_set_new(d, "message", json_string(msg));
    json_array_append_new(diffs, d);
}

/* The entry of the results' code map ("code"[file]) for file:line and the
 * qualname, holding "body" and "generator"; NULL when absent. */
static json_t *code_entry(json_t *results, const char *file, long long line, const char *qualname)
{
    json_t *code = json_object_get(results, "code");
    json_t *arr = code ? json_object_get(code, file) : NULL;
    return json_is_array(arr) ? find_entry(arr, NULL, line, qualname) : NULL;
}

/* Threads in scope (scope_tid, 0: all) where the recording lost sight of
 * the program: how many. */
static size_t blind_threads(const gr_conform *c, uint64_t scope_tid)
{
    size_t k = 0;
    for (size_t i = 0; i < c->nblind; i++)
        if (!scope_tid || c->blind_tids[i] == scope_tid)
            k++;
    return k;
}

/* Calls of f in the threads in scope while the harness was stopping the
 * profiler (between the finish MARK and GR_CONFORM_MARK_STOPPED). */
static uint64_t window_of(const struct fn_truth *f, uint64_t scope_tid)
{
    uint64_t w = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!scope_tid || f->gl[i].tid == scope_tid)
            w += f->gl[i].window;
    return w;
}

/* Calls of f in the threads in scope that were in limbo at the finish
 * MARK (limbo_at_finish). */
static uint64_t limbo_of(const struct fn_truth *f, uint64_t scope_tid)
{
    uint64_t w = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!scope_tid || f->gl[i].tid == scope_tid)
            w += f->gl[i].limbo;
    return w;
}

/* Explain why an excess cannot be verified, when it cannot. */
static void excess(const gr_conform *c, uint64_t scope_tid, gr_sb *msg)
{
    if (!blind_threads(c, scope_tid))
        return;
    gr_sb_puts(msg, "; not a verdict: the program installed its own profile function on thread");
    gr_sb_puts(msg, blind_threads(c, scope_tid) > 1 ? "s" : "");
    size_t k = 0;
    for (size_t i = 0; i < c->nblind; i++)
        if (!scope_tid || c->blind_tids[i] == scope_tid)
            gr_sb_printf(msg, "%s %llu", k++ ? "," : "", (unsigned long long)c->blind_tids[i]);
    gr_sb_puts(msg, " (HOOK records), where a profiler that writes the thread's state directly displaces the "
                    "recorder unseen");
}

/* Whether the JSON array arr holds the integer v. */
static int has_int(json_t *arr, long long v)
{
    size_t i;
    json_t *x;
    if (!json_is_array(arr))
        return 0;
    json_array_foreach(arr, i, x) {
        if (json_is_integer(x) && json_integer_value(x) == v)
            return 1;
    }
    return 0;
}

static void put_range(gr_sb *out, long long first, long long last)
{
    gr_sb_printf(out, "%s%lld", out->len ? ", " : "", first);
    if (last != first)
        gr_sb_printf(out, "-%lld", last);
}

/* The lines of body (a sorted array of line numbers) that are in a and
 * not in b (arrays; NULL: empty), appended to out as "43, 65-66" (runs of
 * consecutive body lines joined).  Returns how many. */
static size_t line_diff(json_t *body, json_t *a, json_t *b, gr_sb *out)
{
    size_t i, n = 0;
    json_t *x;
    long long first = 0, last = 0;
    int open = 0;
    json_array_foreach(body, i, x) {
        long long v = json_integer_value(x);
        int in = has_int(a, v) && !has_int(b, v);
        if (in) {
            n++;
            if (open && v == last + 1) {
                last = v;
                continue;
            }
            if (open)
                put_range(out, first, last);
            first = last = v;
            open = 1;
        }
    }
    if (open)
        put_range(out, first, last);
    return n;
}

/* The callers of callee (code id) that the profiler reports (its entry's
 * "callers": [{file, line, name, calls}]) against the recording's
 * caller->callee edges in the threads in scope, callers from the
 * program's <module> and from excluded files left out (the profiler
 * started inside <module>).  A difference per edge whose counts differ
 * (kind "caller_calls").  Returns 1 (callee compared); *nedges grows by
 * the edges compared. */
static size_t compare_callers(const gr_conform *c, const gr_trace *t, uint32_t callee, uint64_t scope_tid,
                              json_t *callers, json_t *exclude, const char *fname, const char *qn, long long line,
                              json_t *diffs, size_t *nedges)
{
    /* The recording's callers of callee, summed over threads. */
    struct { uint32_t caller; uint64_t calls; } *sum = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < c->capedges; i++) {
        const struct edge *e = &c->edges[i];
        if (e->callee != callee || !e->callee || (scope_tid && e->tid != scope_tid) || e->caller == c->module_code)
            continue;
        size_t k = 0;
        while (k < n && sum[k].caller != e->caller)
            k++;
        if (k == n) {
            sum = gr_xgrow(sum, &cap, n + 1, sizeof *sum);
            sum[n].caller = e->caller;
            sum[n++].calls = 0;
        }
        sum[k].calls += e->calls;
    }
    unsigned char *seen = calloc(json_array_size(callers) + 1, 1);
    if (!seen) {
        fputs("greenreplay: out of memory\n", stderr);
        exit(2);
    }
    gr_sb file, qual, msg, who;
    gr_sb_init(&file);
    gr_sb_init(&qual);
    gr_sb_init(&msg);
    gr_sb_init(&who);
    for (size_t k = 0; k < n; k++) {
        const gr_code *cd = gr_trace_code(t, sum[k].caller);
        if (!cd)
            continue;
        const char *cf = gr_conform_str(t, cd->file, &file);
        if (exclude && in_list(exclude, cf))
            continue;
        const char *cq = gr_conform_str(t, cd->qualname, &qual);
        json_t *pe = find_entry(callers, cf, (long long)cd->line, cq);
        long long pc = pe ? int_of(pe, "calls") : 0;
        size_t idx;
        json_t *v;
        json_array_foreach(callers, idx, v) {
            if (v == pe)
                seen[idx] = 1;
        }
        (*nedges)++;
        if ((uint64_t)pc == sum[k].calls)
            continue;
        gr_sb_reset(&msg);
        gr_sb_printf(&msg, "the profiler counts %lld call%s of %s (line %lld) from %s:%s (line %lld), the recording %llu",
                     pc, pc == 1 ? "" : "s", qn, line, cf, cq, (long long)cd->line,
                     (unsigned long long)sum[k].calls);
        add_diff(diffs, "caller_calls", fname, line, NULL, sum[k].calls, pc, gr_sb_str(&msg));
    }
    /* Callers the profiler names that the recording never saw call it. */
    size_t idx;
    json_t *v;
    json_array_foreach(callers, idx, v) {
        const char *cf = json_string_value(json_object_get(v, "file"));
        const char *cn = json_string_value(json_object_get(v, "name"));
        long long cl = int_of(v, "line"), pc = int_of(v, "calls");
        if (seen[idx] || !cf || !cn || pc <= 0 || (exclude && in_list(exclude, cf)))
            continue;
        if (c->module_code) {
            const gr_code *m = gr_trace_code(t, c->module_code);
            if (m && (long long)m->line == cl && strcmp(gr_conform_str(t, m->file, &file), cf) == 0)
                continue; /* <module>: not compared */
        }
        (*nedges)++;
        gr_sb_reset(&msg);
        gr_sb_printf(&msg, "the profiler counts %lld call%s of %s (line %lld) from %s:%s (line %lld), which the "
                           "recording never saw call it",
                     pc, pc == 1 ? "" : "s", qn, line, cf, cn, cl);
        add_diff(diffs, "caller_calls", fname, line, NULL, 0, pc, gr_sb_str(&msg));
    }
    free(seen);
    free(sum);
    gr_sb_free(&file);
    gr_sb_free(&qual);
    gr_sb_free(&msg);
    gr_sb_free(&who);
    return 1;
}

/* ---- sampled stacks (results "stacks": statistical profilers) ---- */

/* Whether code ids a and b are one function (file, first line, qualname):
 * the trace may define a function more than once. */
static int same_fn(const gr_trace *t, uint32_t a, uint32_t b)
{
    if (a == b)
        return 1;
    const gr_code *x = gr_trace_code(t, a), *y = gr_trace_code(t, b);
    return x && y && x->file == y->file && x->line == y->line && x->qualname == y->qualname;
}

/* The trace's code of a sampled frame under the root: same file, same last
 * qualname component, and `first` its first line when the profiler gives
 * it, else the last such definition at or above the running line (with
 * no line, the first definition of the name).  0 when
 * the trace has none (the recording never saw it run). */
static uint32_t frame_code(const gr_trace *t, const char *file, const char *name, long long line, long long first,
                           gr_sb *a, gr_sb *b)
{
    uint32_t best = 0;
    uint64_t bl = 0;
    for (uint32_t code = 1; code <= t->ncodes; code++) {
        const gr_code *cd = gr_trace_code(t, code);
        if (!cd || cd->kind != GR_CODE_PY || !cd->file)
            continue;
        if (strcmp(gr_conform_str(t, cd->file, a), file) != 0 ||
            strcmp(base_name(gr_conform_str(t, cd->qualname, b)), base_name(name)) != 0)
            continue;
        if (first > 0) {
            if ((long long)cd->line == first)
                return code;
            continue;
        }
        if (line <= 0) {
            /* no line (austin 3 gives 0 for a module's frame): the first
             * definition of that name in the file */
            if (!best || cd->line < bl) {
                best = code;
                bl = cd->line;
            }
            continue;
        }
        if ((long long)cd->line <= line && (!best || cd->line > bl)) {
            best = code;
            bl = cd->line;
        }
    }
    return best;
}

uint32_t gr_conform_frame_code(const gr_trace *t, const char *file, const char *name, long long line,
                               long long first)
{
    gr_sb a, b;
    gr_sb_init(&a);
    gr_sb_init(&b);
    uint32_t code = frame_code(t, file, name, line, first, &a, &b);
    gr_sb_free(&a);
    gr_sb_free(&b);
    return code;
}

static int code_ran(const gr_conform *c, const gr_trace *t, uint32_t code)
{
    for (uint32_t k = 1; k < c->nfn && k <= t->ncodes; k++)
        if (c->fn[k].n && same_fn(t, k, code))
            return 1;
    return code == c->module_code;
}

static int pair_seen(const gr_conform *c, const gr_trace *t, uint32_t caller, uint32_t callee)
{
    if (adj_seen(c, caller, callee))
        return 1;
    for (size_t i = 0; i < c->capadj; i++)
        if (c->adj[i].callee && same_fn(t, c->adj[i].caller, caller) && same_fn(t, c->adj[i].callee, callee))
            return 1;
    return 0;
}

/* The greenlets code ran in, as the "greenlet" field of a difference. */
static json_t *gls_of(const gr_conform *c, const gr_trace *t, uint32_t code, gr_sb *sb)
{
    json_t *arr = json_array();
    for (uint32_t k = 1; k < c->nfn && k <= t->ncodes; k++) {
        if (!same_fn(t, k, code))
            continue;
        for (size_t i = 0; i < c->fn[k].n && json_array_size(arr) < 8; i++) {
            gr_sb_reset(sb);
            describe_gl(c, t, c->fn[k].gl[i].tid, c->fn[k].gl[i].gid, sb);
            json_array_append_new(arr, json_string(gr_sb_str(sb)));
        }
    }
    return arr;
}

/* Sampled stacks ("stacks": [{"frames": [{file, line, name[, first]}],
 * "count": N}], outermost frame first; file null for a frame outside the
 * root) against the recording: every sampled function under the root ran
 * (else `never_ran`), and every two adjacent sampled frames under the root
 * were adjacent in some real stack (else `wrong_stack`: time of one
 * function attributed to a caller that never called it, as when a
 * switched-to greenlet's frames are put on the switching frame).  Sample
 * counts and times are not compared: they are statistical. */
static int compare_stacks(const gr_conform *c, const gr_trace *t, json_t *results, json_t *stacks,
                          json_t *differences, size_t *checked, char *reason, size_t n)
{
    json_t *exclude = json_object_get(results, "exclude_files");
    json_t *bad_pairs = json_object(), *never = json_object();
    gr_sb a, b, key, msg, nm1, nm2;
    gr_sb_init(&a);
    gr_sb_init(&b);
    gr_sb_init(&key);
    gr_sb_init(&msg);
    gr_sb_init(&nm1);
    gr_sb_init(&nm2);
    size_t nstacks = 0, npairs = 0;
    long long nsamples = 0;
    json_t *fnseen = json_object();
    size_t i;
    json_t *s;
    json_array_foreach(stacks, i, s) {
        json_t *frames = json_object_get(s, "frames");
        long long count = json_is_integer(json_object_get(s, "count")) ? int_of(s, "count") : 1;
        if (!json_is_array(frames))
            continue;
        nstacks++;
        nsamples += count;
        uint32_t prev = 0;
        size_t j;
        json_t *fr;
        json_array_foreach(frames, j, fr) {
            const char *file = json_string_value(json_object_get(fr, "file"));
            const char *name = json_string_value(json_object_get(fr, "name"));
            if (!file || !name || !*file || file[0] == '<' || file[0] == '/' || (exclude && in_list(exclude, file))) {
                prev = 0; /* outside the root: the frames around it are not adjacent */
                continue;
            }
            long long line = int_of(fr, "line"), first = int_of(fr, "first");
            uint32_t code = frame_code(t, file, name, line, first, &a, &b);
            if (!code || !code_ran(c, t, code)) {
                gr_sb_reset(&key);
                gr_sb_printf(&key, "%s:%s:%lld", file, name, first > 0 ? first : line);
                json_t *v = json_object_get(never, gr_sb_str(&key));
                json_object_set_new(never, gr_sb_str(&key), json_integer((v ? json_integer_value(v) : 0) + count));
                prev = 0;
                continue;
            }
            gr_sb_reset(&key);
            gr_sb_printf(&key, "%u", code);
            json_object_set_new(fnseen, gr_sb_str(&key), json_true());
            if (prev) {
                npairs++;
                if (!pair_seen(c, t, prev, code)) {
                    gr_sb_reset(&key);
                    gr_sb_printf(&key, "%u %u", prev, code);
                    json_t *v = json_object_get(bad_pairs, gr_sb_str(&key));
                    json_object_set_new(bad_pairs, gr_sb_str(&key),
                                        json_integer((v ? json_integer_value(v) : 0) + count));
                }
            }
            prev = code;
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(bad_pairs, k, v) {
        unsigned caller = 0, callee = 0;
        if (sscanf(k, "%u %u", &caller, &callee) != 2)
            continue;
        gr_sb_reset(&nm1);
        gr_sb_reset(&nm2);
        code_name(t, callee, &nm1);
        code_name(t, caller, &nm2);
        gr_sb_reset(&msg);
        gr_sb_printf(&msg,
                     "%lld sample%s put %s right above %s, which the recording never saw call it (in no greenlet's "
                     "real stack were they adjacent): its time is attributed to the wrong caller",
                     (long long)json_integer_value(v), json_integer_value(v) == 1 ? "" : "s", gr_sb_str(&nm1),
                     gr_sb_str(&nm2));
        const gr_code *cd = gr_trace_code(t, callee);
        add_diff(differences, "wrong_stack", gr_sb_str(&nm1), cd ? (long long)cd->line : 0, gls_of(c, t, callee, &a),
                 0, json_integer_value(v), gr_sb_str(&msg));
    }
    json_object_foreach(never, k, v) {
        gr_sb_reset(&msg);
        gr_sb_printf(&msg, "%lld sample%s show %s, which the recording never saw run",
                     (long long)json_integer_value(v), json_integer_value(v) == 1 ? "" : "s", k);
        add_diff(differences, "never_ran", k, 0, NULL, 0, json_integer_value(v), gr_sb_str(&msg));
    }
    *checked = json_object_size(fnseen);
    json_t *yes = json_array(), *no = json_array();
    gr_sb_reset(&msg);
    gr_sb_printf(&msg, "%zu sampled stack%s (%lld sample%s): every sampled function ran, each of %zu adjacent pair%s "
                 "of frames under the root adjacent in a real stack",
                 nstacks, nstacks == 1 ? "" : "s", nsamples, nsamples == 1 ? "" : "s", npairs, npairs == 1 ? "" : "s");
    json_array_append_new(yes, json_string(gr_sb_str(&msg)));
    json_array_append_new(no, json_string("frames outside the root"));
    json_object_set_new(results, "compared", yes);
    json_object_set_new(results, "not_compared", no);
    json_decref(bad_pairs);
    json_decref(never);
    json_decref(fnseen);
    gr_sb_free(&a);
    gr_sb_free(&b);
    gr_sb_free(&key);
    gr_sb_free(&msg);
    gr_sb_free(&nm1);
    gr_sb_free(&nm2);
    if (!nsamples) {
        snprintf(reason, n, "nothing to compare: the profiler took no sample of code under the root");
        return GR_CONFORM_ERROR;
    }
    if (*checked == 0 && !json_array_size(differences)) {
        snprintf(reason, n, "nothing to compare: no sample holds a function under the root");
        return GR_CONFORM_ERROR;
    }
    return json_array_size(differences) ? GR_CONFORM_FAIL : GR_CONFORM_PASS;
}

/* gr_conform_compare's state: what it compares and what it found so far. */
struct cmp {
    const gr_conform *c;
    const gr_trace *t;
    json_t *results;
    json_t *fns, *lines, *hits, *cfns; /* the profiler's results by kind */
    json_t *stacks;                   /* sampled stacks (statistical profilers) */
    int stacks_only;
    json_t *exclude, *unmeasured;
    json_t *ref; /* the reference line tracer's results, or NULL */
    int starts_only;
    uint64_t scope_tid; /* 0: every thread */
    json_t *differences, *notes;
    size_t checked;
    unsigned char *matched; /* functions of the profiler matched to a truth entry (by index) */
    size_t ncompared_exact, ncompared_loose, nno_line, nnever;
    size_t nprimitive, ncallers_of, nedges, ntotal, nhits, ncfn;
    gr_sb file, qual, msg, gtext, fname;
};

/* One Python function of the recording being compared. */
struct cmp_fn {
    uint32_t code;
    const struct fn_truth *f;
    const char *fl, *qn;
    long long line;
    uint64_t truth;
    json_t *ce, *body; /* its code entry and body lines (cmp_lines, cmp_hits) */
};

/* cmp_setup: the program's own profilers are compared instead (reason:
 * where the program installs its first). */
#define CMP_PROGRAMS (-1)

/* The results' parts compared, and the cases where nothing can be:
 * GR_CONFORM_ERROR with the reason, CMP_PROGRAMS, else 0. */
static int cmp_setup(struct cmp *s, const gr_conform *c, const gr_trace *t, json_t *results, char *reason,
                     size_t n)
{
    if (!json_is_object(results)) {
        snprintf(reason, n, "the results are not a JSON object");
        return GR_CONFORM_ERROR;
    }
    s->fns = json_object_get(results, "functions");
    s->lines = json_object_get(results, "lines");
    s->hits = json_object_get(results, "line_hits");
    s->stacks = json_object_get(results, "stacks");
    if (!json_is_array(s->fns) && !json_is_object(s->lines) && !json_is_array(s->hits) &&
        !json_is_array(s->stacks)) {
        snprintf(reason, n, "the results have none of functions, lines, line_hits, stacks");
        return GR_CONFORM_ERROR;
    }
    if (c->displaced_tid) {
        snprintf(reason, n,
                 "the profiler displaced the recorder on thread %llu without an audit event (it wrote the "
                 "thread's profile function directly; found at event %llu): the recording misses what ran "
                 "there before, so it holds no ground truth to compare with",
                 (unsigned long long)c->displaced_tid, (unsigned long long)c->displaced_at);
        return GR_CONFORM_ERROR;
    }
    if (c->adapter_slot && c->own_at) {
        gr_sb where_, during;
        gr_sb_init(&where_);
        gr_sb_init(&during);
        code_name(t, c->own_inner ? c->own_inner : c->own_top, &where_);
        if (c->own_inner && c->own_top && c->own_top != c->own_inner) {
            gr_sb_puts(&where_, " (through ");
            code_name(t, c->own_top, &where_);
            gr_sb_putc(&where_, ')');
        }
        code_name(t, c->own_during, &during);
        if (json_is_array(json_object_get(results, "program_profilers"))) {
            /* The adapter read back each of the program's profilers:
             * compare those instead (conform_prof.c). */
            snprintf(reason, n, "at %s (%s, event %llu) on thread %llu", gr_sb_str(&where_), gr_sb_str(&during),
                     (unsigned long long)c->own_at, (unsigned long long)c->start_tid);
            gr_sb_free(&where_);
            gr_sb_free(&during);
            return CMP_PROGRAMS;
        }
        snprintf(reason, n,
                 "unsupported: the program installs its own profiler at %s (%s, event %llu) on thread %llu, "
                 "displacing the profiler under test there (a thread has one profile function): its counts would "
                 "differ falsely, so nothing is compared (the cprofile adapter reads back the program's own "
                 "cProfile objects instead, not other profilers; `greenreplay check` on the trace, -o, lists what "
                 "each of the program's profilers saw: rule attribution)",
                 gr_sb_str(&where_), gr_sb_str(&during), (unsigned long long)c->own_at,
                 (unsigned long long)c->start_tid);
        gr_sb_free(&where_);
        gr_sb_free(&during);
        return GR_CONFORM_ERROR;
    }
    if (json_is_array(s->stacks) && !json_is_array(s->fns) && !json_is_object(s->lines) &&
        !json_is_array(s->hits)) {
        s->stacks_only = 1;
        return 0;
    }
    s->exclude = json_object_get(results, "exclude_files");
    s->unmeasured = json_object_get(results, "unmeasured");
    /* The reference line tracer's results (a second, unrecorded run), when
     * conform could run it: the exact line comparison. */
    s->ref = json_is_object(json_object_get(results, "reference")) ? json_object_get(results, "reference")
                                                                       : NULL;
    const char *gencalls = json_string_value(json_object_get(results, "generator_calls"));
    s->starts_only = gencalls && strcmp(gencalls, "starts") == 0;
    const char *threads = json_string_value(json_object_get(results, "threads"));
    s->scope_tid = threads && strcmp(threads, "all") == 0 ? 0 : c->start_tid;
    if (!c->start_tid && s->scope_tid == 0 && !(threads && strcmp(threads, "all") == 0)) {
        snprintf(reason, n, "the trace has no START record");
        return GR_CONFORM_ERROR;
    }
    return 0;
}

/* A function the profiler cannot measure apart (its own limitation, named
 * by the adapter): a note when it ran, no check.  1 when it is one. */
static int cmp_unmeasured(struct cmp *s, const struct cmp_fn *fn)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *results = s->results;
    json_t *fns = s->fns;
    json_t *unmeasured = s->unmeasured;
    uint64_t scope_tid = s->scope_tid;
    const struct fn_truth *f = fn->f;
    const char *fl = fn->fl;
    const char *qn = fn->qn;
    long long line = fn->line;
    uint64_t truth = fn->truth;
    json_t *um = find_exact(unmeasured, fl, line, qn);
    if (!um)
        return 0;
    json_t *ceu = code_entry(results, fl, line, qn);
    json_t *bu = ceu ? json_object_get(ceu, "body") : NULL;
    /* (noted only where a check would have run: a line profiler
     * checks nothing in a function without a body line of its own) */
    if (truth && (json_is_array(fns) || (json_is_array(bu) && json_array_size(bu)))) {
        gr_sb_reset(&s->gtext);
        json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
        const char *why = json_string_value(json_object_get(um, "reason"));
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg, "not checked, a limitation of the profiler: %s; it ran %llu time%s: %s",
                     why && *why ? why : "the adapter cannot measure it", (unsigned long long)truth,
                     truth == 1 ? "" : "s", gr_sb_str(&s->gtext));
        add_diff(s->notes, "limitation", gr_sb_str(&s->fname), line, gl, truth, 0, gr_sb_str(&s->msg));
    }
    return 1;
}

/* The total calls of a function. */
static void cmp_calls(struct cmp *s, const struct cmp_fn *fn)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *results = s->results;
    json_t *fns = s->fns;
    int starts_only = s->starts_only;
    uint64_t scope_tid = s->scope_tid;
    unsigned char *matched = s->matched;
    const struct fn_truth *f = fn->f;
    const char *fl = fn->fl;
    const char *qn = fn->qn;
    long long line = fn->line;
    uint64_t truth = fn->truth;
    if (json_is_array(fns)) {
        json_t *e = find_entry(fns, fl, line, qn);
        long long prof = e ? int_of(e, "calls") : 0;
        if (e) {
            size_t idx;
            json_t *v;
            json_array_foreach(fns, idx, v) {
                if (v == e)
                    matched[idx] = 1;
            }
        }
        /* Generators and coroutines: with "generator_calls": "starts"
         * the profiler counts a call once however often it resumed,
         * the recording every resumption: only 0 and excess are sure. */
        json_t *ce0 = code_entry(results, fl, line, qn);
        int starts = starts_only && ce0 && json_is_true(json_object_get(ce0, "generator"));
        if (truth || prof) {
            s->checked++; s->ntotal++;
            if ((uint64_t)prof < truth && (!starts || prof == 0)) {
                gr_sb_reset(&s->gtext);
                json_t *gl = where(c, t, f, scope_tid, starts ? 0 : truth - (uint64_t)prof, "call", "uncounted",
                                   &s->gtext);
                gr_sb_reset(&s->msg);
                gr_sb_printf(&s->msg, "the profiler counts %lld call%s of %s (line %lld), the recording %llu%s: %s",
                             prof, prof == 1 ? "" : "s", qn, line, (unsigned long long)truth,
                             starts ? " (with resumptions)" : "", gr_sb_str(&s->gtext));
                /* Calls another thread was in the middle of (or had
                 * just returned from) when the harness stopped the
                 * profiler: it may have missed them. */
                uint64_t lim = limbo_of(f, scope_tid);
                int limbo = truth - (uint64_t)prof <= lim;
                if (limbo)
                    gr_sb_printf(&s->msg,
                                 "; %llu of them %s in progress or had just returned on another thread than the "
                                 "one that ended the program when the finish mark was written, which the "
                                 "profiler, stopped then, may not have counted: not a verdict",
                                 (unsigned long long)lim, lim == 1 ? "was" : "were");
                add_diff(limbo ? s->notes : s->differences, limbo ? "unverified" : "blind_spot", gr_sb_str(&s->fname),
                         line, gl, truth, prof, gr_sb_str(&s->msg));
            } else if ((uint64_t)prof > truth) {
                /* Calls made while the profiler was stopping: it may
                 * have counted any of them. */
                uint64_t win = window_of(f, scope_tid);
                int late = (uint64_t)prof - truth <= win;
                gr_sb_reset(&s->gtext);
                json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
                gr_sb_reset(&s->msg);
                gr_sb_printf(&s->msg, "the profiler counts %lld calls of %s (line %lld), the recording %llu%s%s", prof,
                             qn, line, (unsigned long long)truth, truth ? ": " : "", gr_sb_str(&s->gtext));
                if (win)
                    gr_sb_printf(&s->msg, "%s%llu more ran after the finish mark while the profiler was stopping%s",
                                 truth ? "; " : ", and ", (unsigned long long)win,
                                 late ? ", which it may have counted: not a verdict" : "");
                if (!late)
                    excess(c, scope_tid, &s->msg);
                int note = late || blind_threads(c, scope_tid);
                add_diff(note ? s->notes : s->differences, note ? "unverified" : "miscount", gr_sb_str(&s->fname), line,
                         gl, truth, prof, gr_sb_str(&s->msg));
            }
        }
    }
}

/* Primitive calls and callers, where the totals agree (else the
 * difference cmp_calls found says it all) and the recorder saw every call
 * (none proven by real stacks alone). */
static void cmp_primitive_callers(struct cmp *s, const struct cmp_fn *fn)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *results = s->results;
    json_t *fns = s->fns;
    json_t *exclude = s->exclude;
    int starts_only = s->starts_only;
    uint64_t scope_tid = s->scope_tid;
    uint32_t code = fn->code;
    const struct fn_truth *f = fn->f;
    const char *fl = fn->fl;
    const char *qn = fn->qn;
    long long line = fn->line;
    uint64_t truth = fn->truth;
    json_t *pe = json_is_array(fns) && truth ? find_entry(fns, fl, line, qn) : NULL;
    int all_seen = 1;
    for (size_t i = 0; i < f->n; i++)
        if ((!scope_tid || f->gl[i].tid == scope_tid) && f->gl[i].proven > f->gl[i].calls)
            all_seen = 0;
    json_t *ce1 = pe ? code_entry(results, fl, line, qn) : NULL;
    int starts1 = starts_only && ce1 && json_is_true(json_object_get(ce1, "generator"));
    int running = 0;
    for (size_t i = 0; i < f->n; i++)
        if ((!scope_tid || f->gl[i].tid == scope_tid) && f->gl[i].open)
            running = 1;
    if (pe && (uint64_t)int_of(pe, "calls") == truth && all_seen && !starts1 && !running) {
        json_t *pj = json_object_get(pe, "primitive");
        if (json_is_integer(pj)) {
            uint64_t tp = 0;
            for (size_t i = 0; i < f->n; i++)
                if (!scope_tid || f->gl[i].tid == scope_tid)
                    tp += f->gl[i].primitive;
            s->nprimitive++;
            if ((uint64_t)json_integer_value(pj) != tp) {
                gr_sb_reset(&s->gtext);
                json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
                gr_sb_reset(&s->msg);
                gr_sb_printf(&s->msg,
                             "the profiler counts %lld primitive call%s of %s (line %lld), the recording %llu "
                             "(calls made while %s had no frame in its greenlet's stack; all %llu calls "
                             "agree): %s",
                             (long long)json_integer_value(pj), json_integer_value(pj) == 1 ? "" : "s", qn,
                             line, (unsigned long long)tp, qn, (unsigned long long)truth, gr_sb_str(&s->gtext));
                add_diff(s->differences, "primitive_calls", gr_sb_str(&s->fname), line, gl, tp,
                         json_integer_value(pj), gr_sb_str(&s->msg));
            }
        }
        json_t *callers = json_object_get(pe, "callers");
        if (json_is_array(callers))
            s->ncallers_of += compare_callers(c, t, code, scope_tid, callers, exclude, s->fname.len ? gr_sb_str(&s->fname)
                                                                                              : "",
                                           qn, line, s->differences, &s->nedges);
    }
}

/* The executed lines of a function ("lines"). */
/* The executed lines of a function compared exactly with the reference
 * run's (done: the profiler's lines of its file). */
static void cmp_lines_exact(struct cmp *s, const struct cmp_fn *fn, json_t *done)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *ref = s->ref;
    uint64_t scope_tid = s->scope_tid;
    const struct fn_truth *f = fn->f;
    const char *fl = fn->fl;
    const char *qn = fn->qn;
    long long line = fn->line;
    uint64_t truth = fn->truth;
    json_t *body = fn->body;
    json_t *rdone = json_object_get(json_object_get(ref, "lines"), fl);
    gr_sb lost, more;
    gr_sb_init(&lost);
    gr_sb_init(&more);
    size_t nlost = line_diff(body, rdone, done, &lost);
    size_t nmore = line_diff(body, done, rdone, &more);
    s->ncompared_exact++;
    if (nlost) {
        gr_sb_reset(&s->gtext);
        json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg,
                     "line%s %s of %s ran (the reference line tracer saw %s) but %s not recorded as "
                     "executed; it ran %llu time%s: %s",
                     nlost == 1 ? "" : "s", gr_sb_str(&lost), qn, nlost == 1 ? "it" : "them",
                     nlost == 1 ? "is" : "are", (unsigned long long)truth, truth == 1 ? "" : "s",
                     gr_sb_str(&s->gtext));
        add_diff(s->differences, "missing_lines", gr_sb_str(&s->fname), line, gl, truth, (long long)nlost,
                 gr_sb_str(&s->msg));
    }
    if (nmore) {
        gr_sb_reset(&s->gtext);
        json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg,
                     "line%s %s of %s %s recorded as executed, but the reference line tracer %s "
                     "run; it ran %llu time%s: %s",
                     nmore == 1 ? "" : "s", gr_sb_str(&more), qn, nmore == 1 ? "is" : "are",
                     nmore == 1 ? "never saw it" : "saw none of them", (unsigned long long)truth,
                     truth == 1 ? "" : "s", gr_sb_str(&s->gtext));
        add_diff(s->differences, "extra_lines", gr_sb_str(&s->fname), line, gl, truth, (long long)nmore,
                 gr_sb_str(&s->msg));
    }
    gr_sb_free(&lost);
    gr_sb_free(&more);
}

static void cmp_lines(struct cmp *s, const struct cmp_fn *fn)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *lines = s->lines;
    json_t *ref = s->ref;
    uint64_t scope_tid = s->scope_tid;
    const struct fn_truth *f = fn->f;
    const char *fl = fn->fl;
    const char *qn = fn->qn;
    long long line = fn->line;
    uint64_t truth = fn->truth;
    json_t *ce = fn->ce;
    json_t *body = fn->body;
    if (json_is_object(lines)) {
        json_t *done = json_object_get(lines, fl);
        json_object_set_new(ce, "compared", json_true()); /* (the second pass skips it) */
        s->checked++;
        /* Exact, where the reference run ran the function as often as
         * the recording saw it called: the same work, so the same
         * lines (docs/conform.md, "Executed lines"). */
        json_t *re = ref ? find_exact(json_object_get(ref, "functions"), fl, line, qn) : NULL;
        long long rcalls = re ? int_of(re, "calls") : 0;
        uint64_t seen = 0;
        for (size_t i = 0; i < f->n; i++)
            if (!scope_tid || f->gl[i].tid == scope_tid)
                seen += f->gl[i].calls;
        if (ref && rcalls > 0 && (uint64_t)rcalls == seen) {
            cmp_lines_exact(s, fn, done);
            return;
        }
        s->ncompared_loose++;
        if (ref) {
            gr_sb_reset(&s->gtext);
            json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg,
                         "its lines are not compared exactly: the reference run called it %lld time%s, the "
                         "recorded run %llu (the two runs differ there); only that it has an executed line "
                         "is checked: %s",
                         rcalls, rcalls == 1 ? "" : "s", (unsigned long long)seen, gr_sb_str(&s->gtext));
            add_diff(s->notes, "unverified", gr_sb_str(&s->fname), line, gl, truth, 0, gr_sb_str(&s->msg));
        }
        size_t i, j, found = 0;
        json_t *b, *x;
        json_array_foreach(body, i, b) {
            if (json_is_array(done))
                json_array_foreach(done, j, x) {
                    if (json_is_integer(x) && json_integer_value(x) == json_integer_value(b)) {
                        found++;
                        break;
                    }
                }
        }
        if (!found) {
            gr_sb_reset(&s->gtext);
            json_t *gl = where(c, t, f, scope_tid, 0, "call", "uncounted", &s->gtext);
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg, "no line of %s (body lines %lld-%lld) is recorded as executed; it ran %llu time%s: %s",
                         qn, json_integer_value(json_array_get(body, 0)),
                         json_integer_value(json_array_get(body, json_array_size(body) - 1)),
                         (unsigned long long)truth, truth == 1 ? "" : "s", gr_sb_str(&s->gtext));
            add_diff(s->differences, "missing_lines", gr_sb_str(&s->fname), line, gl, truth, 0, gr_sb_str(&s->msg));
        }
    }
}

/* The line hits of a function ("line_hits"). */
static void cmp_hits(struct cmp *s, const struct cmp_fn *fn)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *hits = s->hits;
    uint64_t scope_tid = s->scope_tid;
    const struct fn_truth *f = fn->f;
    const char *fl = fn->fl;
    const char *qn = fn->qn;
    long long line = fn->line;
    uint64_t truth = fn->truth;
    json_t *ce = fn->ce;
    json_t *body = fn->body;
    if (json_is_array(hits)) {
        json_t *e = find_entry(hits, fl, line, qn);
        json_t *h = e ? json_object_get(e, "hits") : NULL;
        if (!json_is_object(h))
            return; /* not registered with the line profiler */
        s->checked++; s->nhits++;
        long long sum = 0, first = 0;
        char key[32];
        size_t i;
        json_t *b;
        json_array_foreach(body, i, b) {
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(b));
            long long v = int_of(h, key);
            sum += v;
            if (i == 0)
                first = v;
        }
        int generator = json_is_true(json_object_get(ce, "generator"));
        if (!sum || (!generator && (uint64_t)first < truth)) {
            gr_sb_reset(&s->gtext);
            json_t *gl = where(c, t, f, scope_tid, sum ? truth - (uint64_t)first : 0, "run", "without a hit",
                               &s->gtext);
            gr_sb_reset(&s->msg);
            if (!sum)
                gr_sb_printf(&s->msg, "no hit on any line of %s (body lines %lld-%lld); it ran %llu time%s: %s", qn,
                             json_integer_value(json_array_get(body, 0)),
                             json_integer_value(json_array_get(body, json_array_size(body) - 1)),
                             (unsigned long long)truth, truth == 1 ? "" : "s", gr_sb_str(&s->gtext));
            else
                gr_sb_printf(&s->msg, "%lld hit%s of the first body line %lld of %s, which ran %llu times: %s", first,
                             first == 1 ? "" : "s", (long long)json_integer_value(json_array_get(body, 0)), qn,
                             (unsigned long long)truth, gr_sb_str(&s->gtext));
            add_diff(s->differences, sum ? "blind_spot" : "missing_lines", gr_sb_str(&s->fname), line, gl, truth,
                     sum ? first : 0, gr_sb_str(&s->msg));
        }
    }
}

/* The program's Python functions, one by one. */
static void cmp_py_functions(struct cmp *s)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *results = s->results;
    json_t *lines = s->lines;
    json_t *hits = s->hits;
    json_t *exclude = s->exclude;
    uint64_t scope_tid = s->scope_tid;
    for (uint32_t code = 1; code < c->nfn && code <= t->ncodes; code++) {
        const struct fn_truth *f = &c->fn[code];
        const gr_code *cd = gr_trace_code(t, code);
        if (!f->n || !cd || cd->kind != GR_CODE_PY || code == c->module_code || !cd->file)
            continue;
        const char *fl = gr_conform_str(t, cd->file, &s->file);
        if (!*fl || fl[0] == '<' || fl[0] == '/' || (exclude && in_list(exclude, fl)))
            continue;
        uint64_t truth = 0;
        for (size_t i = 0; i < f->n; i++)
            if (!scope_tid || f->gl[i].tid == scope_tid)
                truth += gl_truth(&f->gl[i]);
        const char *qn = gr_conform_str(t, cd->qualname, &s->qual);
        gr_sb_reset(&s->fname);
        gr_sb_printf(&s->fname, "%s:%s", fl, qn);
        long long line = (long long)cd->line;
        struct cmp_fn fn = {code, f, fl, qn, line, truth, NULL, NULL};

        if (cmp_unmeasured(s, &fn))
            continue;
        cmp_calls(s, &fn);
        cmp_primitive_callers(s, &fn);
        if (!truth)
            continue;
        json_t *ce = (json_is_object(lines) || json_is_array(hits)) ? code_entry(results, fl, line, qn) : NULL;
        json_t *body = ce ? json_object_get(ce, "body") : NULL;
        if (!json_is_array(body) || json_array_size(body) == 0)
            continue; /* no body line of its own to look for */
        fn.ce = ce;
        fn.body = body;
        cmp_lines(s, &fn);
        cmp_hits(s, &fn);
    }
}

/* C functions called by the program's functions: the profiler counts
 * every call of them, from anywhere, so only a shortfall is sure. */
static void cmp_c_functions(struct cmp *s)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *cfns = s->cfns;
    uint64_t scope_tid = s->scope_tid;
    for (uint32_t code = 1; json_is_array(cfns) && code < c->nfn && code <= t->ncodes; code++) {
        const struct fn_truth *f = &c->fn[code];
        const gr_code *cd = gr_trace_code(t, code);
        if (!f->n || !cd || cd->kind != GR_CODE_C)
            continue;
        const char *qn = gr_conform_str(t, cd->qualname, &s->qual);
        if (strncmp(qn, "greenreplay.", 12) == 0 || strncmp(qn, "_greenreplay.", 13) == 0)
            continue; /* the recorder's own (mark) */
        uint64_t truth = 0;
        for (size_t i = 0; i < f->n; i++)
            if (!scope_tid || f->gl[i].tid == scope_tid)
                truth += f->gl[i].calls;
        if (!truth)
            continue;
        long long prof = 0;
        size_t i;
        json_t *v;
        json_array_foreach(cfns, i, v) {
            const char *nm = json_string_value(json_object_get(v, "name"));
            if (nm && strcmp(nm, qn) == 0)
                prof += int_of(v, "calls");
        }
        s->checked++; s->ncfn++;
        if ((uint64_t)prof >= truth)
            continue;
        gr_sb_reset(&s->gtext);
        json_t *gl = where(c, t, f, scope_tid, truth - (uint64_t)prof, "call", "uncounted", &s->gtext);
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg,
                     "the profiler counts %lld call%s of the C function %s in all, the program's functions "
                     "alone made %llu: %s",
                     prof, prof == 1 ? "" : "s", qn, (unsigned long long)truth, gr_sb_str(&s->gtext));
        add_diff(s->differences, "blind_spot", qn, 0, gl, truth, prof, gr_sb_str(&s->msg));
    }
}

/* Functions the profiler counts that the recording never saw run in
 * the threads compared. */
static void cmp_unseen_functions(struct cmp *s)
{
    const gr_conform *c = s->c;
    const gr_trace *t = s->t;
    json_t *fns = s->fns;
    json_t *exclude = s->exclude;
    json_t *unmeasured = s->unmeasured;
    uint64_t scope_tid = s->scope_tid;
    unsigned char *matched = s->matched;
    if (json_is_array(fns)) {
        size_t i;
        json_t *v;
        json_array_foreach(fns, i, v) {
            const char *fl = json_string_value(json_object_get(v, "file"));
            const char *nm = json_string_value(json_object_get(v, "name"));
            long long calls = int_of(v, "calls");
            if (matched[i] || !fl || !nm || calls <= 0 || (exclude && in_list(exclude, fl)))
                continue;
            long long line = int_of(v, "line");
            if (find_exact(unmeasured, fl, line, nm))
                continue; /* not measured apart: not checked */
            if (c->module_code) {
                const gr_code *m = gr_trace_code(t, c->module_code);
                if (m && (long long)m->line == line && strcmp(gr_conform_str(t, m->file, &s->file), fl) == 0)
                    continue;
            }
            s->checked++; s->ntotal++;
            gr_sb_reset(&s->fname);
            gr_sb_printf(&s->fname, "%s:%s", fl, nm);
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg, "the profiler counts %lld call%s of %s (line %lld), which the recording never saw run",
                         calls, calls == 1 ? "" : "s", nm, line);
            excess(c, scope_tid, &s->msg);
            add_diff(blind_threads(c, scope_tid) ? s->notes : s->differences,
                     blind_threads(c, scope_tid) ? "unverified" : "miscount", gr_sb_str(&s->fname), line, NULL, 0, calls,
                     gr_sb_str(&s->msg));
        }
    }
}

/* Executed lines, of functions the recording never saw run (in the
 * threads compared), and line numbers the file does not have. */
static void cmp_unseen_lines(struct cmp *s)
{
    const gr_conform *c = s->c;
    json_t *results = s->results;
    json_t *lines = s->lines;
    json_t *exclude = s->exclude;
    json_t *unmeasured = s->unmeasured;
    uint64_t scope_tid = s->scope_tid;
    if (json_is_object(lines)) {
        json_t *code = json_object_get(results, "code");
        json_t *sizes = json_object_get(results, "file_lines");
        const char *fl;
        json_t *done;
        json_object_foreach(lines, fl, done) {
            if (exclude && in_list(exclude, fl))
                continue;
            json_t *arr = json_object_get(code, fl), *ce;
            size_t i;
            /* (manual start: a frame called before the window may run on
             * inside it, seen by the profiler, not counted by the truth) */
            json_array_foreach(json_is_array(arr) && !c->windowed ? arr : NULL, i, ce) {
                json_t *body = json_object_get(ce, "body");
                if (json_is_true(json_object_get(ce, "compared")) || !json_is_array(body))
                    continue;
                const char *nm = json_string_value(json_object_get(ce, "name"));
                long long l0 = int_of(ce, "line");
                if (!nm || find_exact(unmeasured, fl, l0, nm))
                    continue;
                gr_sb lost;
                gr_sb_init(&lost);
                size_t k = line_diff(body, done, NULL, &lost);
                if (k) {
                    gr_sb_reset(&s->fname);
                    gr_sb_printf(&s->fname, "%s:%s", fl, nm);
                    gr_sb_reset(&s->msg);
                    gr_sb_printf(&s->msg, "line%s %s of %s %s recorded as executed, but the recording never saw %s run",
                                 k == 1 ? "" : "s", gr_sb_str(&lost), nm, k == 1 ? "is" : "are", nm);
                    excess(c, scope_tid, &s->msg);
                    int note = blind_threads(c, scope_tid) != 0;
                    add_diff(note ? s->notes : s->differences, note ? "unverified" : "extra_lines", gr_sb_str(&s->fname),
                             l0, NULL, 0, (long long)k, gr_sb_str(&s->msg));
                }
                s->nnever++;
                gr_sb_free(&lost);
            }
            /* Line numbers past the end of the file (or below 1). */
            json_t *size = json_object_get(sizes, fl);
            if (!json_is_integer(size))
                continue;
            long long nlines = json_integer_value(size), bad = 0, first_bad = 0;
            json_t *x;
            gr_sb_reset(&s->gtext);
            json_array_foreach(done, i, x) {
                long long v = json_integer_value(x);
                if (v >= 1 && v <= nlines)
                    continue;
                if (!bad++)
                    first_bad = v;
                if (bad <= 10)
                    gr_sb_printf(&s->gtext, "%s%lld", bad > 1 ? ", " : "", v);
            }
            s->nno_line++;
            if (bad) {
                gr_sb_reset(&s->msg);
                gr_sb_printf(&s->msg, "line%s %s%s recorded as executed in %s, which has %lld line%s", bad == 1 ? "" : "s",
                             gr_sb_str(&s->gtext), bad > 10 ? ", ..." : "", fl, nlines, nlines == 1 ? "" : "s");
                add_diff(s->differences, "no_such_line", fl, first_bad, NULL, 0, bad, gr_sb_str(&s->msg));
            }
        }
    }
}

/* What was compared, and what not: printed with the verdict. */
static void cmp_summary(struct cmp *s)
{
    json_t *results = s->results;
    json_t *fns = s->fns;
    json_t *lines = s->lines;
    json_t *hits = s->hits;
    json_t *cfns = s->cfns;
    int starts_only = s->starts_only;
    json_t *yes = json_array(), *no = json_array();
    gr_sb_reset(&s->msg);
    if (json_is_array(fns)) {
        int has_prim = 0, has_callers = 0;
        size_t i;
        json_t *v;
        json_array_foreach(fns, i, v) {
            has_prim |= json_object_get(v, "primitive") != NULL;
            has_callers |= json_object_get(v, "callers") != NULL;
        }
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg, "total calls of %zu function%s", s->ntotal, s->ntotal == 1 ? "" : "s");
        json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
        if (has_prim) {
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg, "primitive calls of %zu function%s", s->nprimitive, s->nprimitive == 1 ? "" : "s");
            json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
        } else {
            json_array_append_new(no, json_string("primitive calls (the adapter reports none)"));
        }
        if (has_callers) {
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg, "%zu caller edge%s (into %zu function%s)", s->nedges, s->nedges == 1 ? "" : "s",
                         s->ncallers_of, s->ncallers_of == 1 ? "" : "s");
            json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
            json_array_append_new(no, json_string("calls from <module> and from C functions"));
        } else {
            json_array_append_new(no, json_string("caller edges (the adapter reports none)"));
        }
        if (has_prim || has_callers)
            json_array_append_new(no, json_string("primitive calls and callers of a function whose total differs, "
                                                  "that real stacks alone show ran, or still running at the end"));
        if (starts_only)
            json_array_append_new(no, json_string("resumptions of generators and coroutines (counted once)"));
        json_array_append_new(no, json_string("times"));
    }
    if (json_is_array(cfns)) {
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg, "calls of %zu C function%s (at least the program's own)", s->ncfn, s->ncfn == 1 ? "" : "s");
        json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
    }
    if (json_is_object(lines)) {
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg, "exact executed lines of %zu function%s", s->ncompared_exact, s->ncompared_exact == 1 ? "" : "s");
        json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
        if (s->ncompared_loose) {
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg, "an executed line of %zu function%s", s->ncompared_loose, s->ncompared_loose == 1 ? "" : "s");
            json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
        }
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg, "lines of %zu function%s the recording never saw run, line numbers of %zu file%s", s->nnever,
                     s->nnever == 1 ? "" : "s", s->nno_line, s->nno_line == 1 ? "" : "s");
        json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
        const char *why = json_string_value(json_object_get(results, "reference_missing"));
        if (why) {
            gr_sb_reset(&s->msg);
            gr_sb_printf(&s->msg, "exact lines (no reference run: %s)", why);
            json_array_append_new(no, json_string(gr_sb_str(&s->msg)));
        }
        json_array_append_new(no, json_string("lines of <module>"));
    }
    if (json_is_array(hits)) {
        gr_sb_reset(&s->msg);
        gr_sb_printf(&s->msg, "line hits of %zu function%s (every line hit, the first body line as often as it ran)",
                     s->nhits, s->nhits == 1 ? "" : "s");
        json_array_append_new(yes, json_string(gr_sb_str(&s->msg)));
        json_array_append_new(no, json_string("hits of other lines than the first, times"));
    }
    json_object_set_new(results, "compared", yes);
    json_object_set_new(results, "not_compared", no);
}

int gr_conform_compare(const gr_conform *c, const gr_trace *t, json_t *results, json_t **differences,
                       json_t **notes, size_t *checked, char *reason, size_t n)
{
    *differences = json_array();
    *notes = json_array();
    *checked = 0;
    reason[0] = '\0';
    struct cmp st = {0}, *s = &st;
    int rc = cmp_setup(s, c, t, results, reason, n);
    if (rc == CMP_PROGRAMS) {
        char where_[1024];
        snprintf(where_, sizeof where_, "%s", reason);
        reason[0] = '\0';
        return gr_conform_compare_programs(c, t, results, where_, *differences, *notes, checked, reason, n);
    }
    if (rc)
        return rc;
    if (s->stacks_only)
        return compare_stacks(c, t, results, s->stacks, *differences, checked, reason, n);
    s->c = c;
    s->t = t;
    s->results = results;
    s->differences = *differences;
    s->notes = *notes;
    s->cfns = json_object_get(results, "c_functions");

    gr_sb_init(&s->file);
    gr_sb_init(&s->qual);
    gr_sb_init(&s->msg);
    gr_sb_init(&s->gtext);
    gr_sb_init(&s->fname);
    /* Functions of the profiler matched to a truth entry (by index). */
    size_t nprof = json_is_array(s->fns) ? json_array_size(s->fns) : 0;
    s->matched = calloc(nprof ? nprof : 1, 1);
    if (!s->matched) {
        fputs("greenreplay: out of memory\n", stderr);
        exit(2);
    }

    cmp_py_functions(s);
    cmp_c_functions(s);
    cmp_unseen_functions(s);
    cmp_unseen_lines(s);
    cmp_summary(s);
    free(s->matched);
    gr_sb_free(&s->file);
    gr_sb_free(&s->qual);
    gr_sb_free(&s->msg);
    gr_sb_free(&s->gtext);
    gr_sb_free(&s->fname);
    *checked = s->checked;
    if (*checked == 0) {
        snprintf(reason, n, "nothing to compare: no function under the root ran in the threads compared");
        return GR_CONFORM_ERROR;
    }
    return json_array_size(*differences) ? GR_CONFORM_FAIL : GR_CONFORM_PASS;
}
