/* conform_time.c - time per function of a sampling profiler against the
 * recording's clock (conform_time.h). */
#include "conform_time.h"

#include "conform.h"
#include "text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One (thread, greenlet) shadow stack of Python code ids. */
struct tshadow {
    uint64_t tid, gid;
    uint32_t *code;
    size_t n, cap;
};

/* One thread: the greenlet it runs. */
struct tthread {
    uint64_t tid, gid;
};

struct tstate {
    const gr_trace *t;
    uint32_t *canon;     /* [ncodes + 1]: one code id per function, 0 not compared */
    uint8_t *own;        /* [ncodes + 1]: code of the profiler's own files */
    double *ns;          /* [ncodes + 1]: ns on a running stack, by canon id */
    uint64_t *stamp;     /* [ncodes + 1]: dedupe of a stack's functions */
    uint64_t gen;
    double total;        /* ns with some compared function on a running stack */
    struct tshadow *sh;
    size_t nsh;
    struct tthread *th;
    size_t nth;
    uint64_t only_tid;   /* "threads": "starting": that thread only (0 all) */
};

double gr_binom_two_sided(long long k, long long n, double p)
{
    if (n <= 0)
        return 1.0;
    if (p <= 0.0)
        return k == 0 ? 1.0 : 0.0;
    if (p >= 1.0)
        return k == n ? 1.0 : 0.0;
    double lp = log(p), lq = log1p(-p), ln1 = lgamma((double)n + 1.0);
    double lk = ln1 - lgamma((double)k + 1.0) - lgamma((double)(n - k) + 1.0) + k * lp + (n - k) * lq;
    double sum = 0.0;
    for (long long j = 0; j <= n; j++) {
        double lj = ln1 - lgamma((double)j + 1.0) - lgamma((double)(n - j) + 1.0) + j * lp + (n - j) * lq;
        if (lj <= lk + 1e-7)
            sum += exp(lj);
    }
    return sum > 1.0 ? 1.0 : sum;
}

static int excluded(json_t *exclude, const char *file)
{
    size_t i;
    json_t *v;
    json_array_foreach(exclude, i, v) if (json_is_string(v) && strcmp(json_string_value(v), file) == 0) return 1;
    return 0;
}

/* canon[code]: the first code id of the same function (file, first line,
 * qualname) when its file is under the root and not excluded, else 0. */
static void canon_codes(struct tstate *s, json_t *exclude)
{
    const gr_trace *t = s->t;
    gr_sb a;
    gr_sb_init(&a);
    for (uint32_t k = 1; k <= t->ncodes; k++) {
        const gr_code *cd = gr_trace_code(t, k);
        if (!cd || cd->kind != GR_CODE_PY || !cd->file)
            continue;
        const char *f = gr_conform_str(t, cd->file, &a);
        if (!*f || f[0] == '<' || f[0] == '/' || excluded(exclude, f))
            continue;
        s->canon[k] = k;
        for (uint32_t j = 1; j < k; j++) {
            const gr_code *o = gr_trace_code(t, j);
            if (s->canon[j] == j && o && o->file == cd->file && o->line == cd->line && o->qualname == cd->qualname) {
                s->canon[k] = j;
                break;
            }
        }
    }
    gr_sb_free(&a);
}

/* own[code]: its file names one of the profiler's own (results
 * "profiler_files": parts of file names, "<site>/pyinstrument/"). */
static void own_codes(struct tstate *s, json_t *files)
{
    const gr_trace *t = s->t;
    gr_sb a;
    gr_sb_init(&a);
    for (uint32_t k = 1; k <= t->ncodes; k++) {
        const gr_code *cd = gr_trace_code(t, k);
        if (!cd || !cd->file)
            continue;
        const char *f = gr_conform_str(t, cd->file, &a);
        size_t i;
        json_t *v;
        json_array_foreach(files, i, v) if (json_is_string(v) && *json_string_value(v) &&
                                            strstr(f, json_string_value(v))) s->own[k] = 1;
    }
    gr_sb_free(&a);
}

static struct tshadow *shadow(struct tstate *s, uint64_t tid, uint64_t gid)
{
    for (size_t i = 0; i < s->nsh; i++)
        if (s->sh[i].tid == tid && s->sh[i].gid == gid)
            return &s->sh[i];
    s->sh = gr_xrealloc(s->sh, (s->nsh + 1) * sizeof *s->sh);
    memset(&s->sh[s->nsh], 0, sizeof *s->sh);
    s->sh[s->nsh].tid = tid;
    s->sh[s->nsh].gid = gid;
    return &s->sh[s->nsh++];
}

static void push(struct tshadow *h, uint32_t code)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->code = gr_xrealloc(h->code, h->cap * sizeof *h->code);
    }
    h->code[h->n++] = code;
}

static void pop(struct tshadow *h, uint32_t code)
{
    for (size_t i = h->n; i > 0; i--)
        if (h->code[i - 1] == code) {
            h->n = i - 1;
            return;
        }
}

static struct tthread *thread(struct tstate *s, uint64_t tid)
{
    for (size_t i = 0; i < s->nth; i++)
        if (s->th[i].tid == tid)
            return &s->th[i];
    s->th = gr_xrealloc(s->th, (s->nth + 1) * sizeof *s->th);
    s->th[s->nth].tid = tid;
    s->th[s->nth].gid = 0;
    return &s->th[s->nth++];
}

/* dt ns pass with every thread compared running its greenlet's stack. */
static void account(struct tstate *s, double dt)
{
    for (size_t i = 0; i < s->nth; i++) {
        if (s->only_tid && s->th[i].tid != s->only_tid)
            continue;
        struct tshadow *h = shadow(s, s->th[i].tid, s->th[i].gid);
        int any = 0;
        /* the profiler's own work on top of the program's frames (its
         * sampling): not the program's time; below them it is the launcher */
        size_t top = h->n;
        while (top > 0 && !s->canon[h->code[top - 1]])
            top--;
        for (size_t j = top; j < h->n; j++)
            if (s->own[h->code[j]])
                goto next;
        s->gen++;
        for (size_t j = 0; j < h->n; j++) {
            uint32_t c = s->canon[h->code[j]];
            if (c && s->stamp[c] != s->gen) {
                s->stamp[c] = s->gen;
                s->ns[c] += dt;
                any = 1;
            }
        }
        if (any)
            s->total += dt;
    next:;
    }
}

/* The last record index of the window: the last CALL or RETURN of a
 * compared function (on a compared thread) before the finish MARK. */
static size_t window_end(struct tstate *s, size_t *first)
{
    const gr_trace *t = s->t;
    size_t last = 0, fin = t->nrecs;
    gr_sb a;
    gr_sb_init(&a);
    for (size_t i = 0; i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        if (r->tag == GR_MARK && strcmp(gr_conform_str(t, r->label, &a), GR_CONFORM_MARK_FINISH) == 0) {
            fin = i;
            break;
        }
    }
    *first = fin;
    int events = 0;
    for (size_t i = 0; i < fin; i++) {
        const gr_record *r = &t->recs[i];
        if (r->tag == GR_HOOK && events == 1)
            *first = i; /* the profiler's start inside the program's first frame */
        if ((r->tag != GR_CALL && r->tag != GR_RETURN) || r->code > t->ncodes || !s->canon[r->code] ||
            (s->only_tid && r->tid != s->only_tid))
            continue;
        if (*first == fin)
            *first = i;
        events++;
        last = i;
    }
    gr_sb_free(&a);
    return last;
}

/* The recording's side: s->ns[canon] and s->total over the window. */
static void truth(struct tstate *s, const gr_times *tm)
{
    const gr_trace *t = s->t;
    size_t first, last = window_end(s, &first);
    for (size_t i = 0; i < t->nrecs && i <= last; i++) {
        const gr_record *r = &t->recs[i];
        if (i > first && r->index < tm->n)
            account(s, (double)tm->dt[r->index]);
        struct tthread *th = thread(s, r->tid);
        if (r->tag == GR_THREAD)
            continue;
        th->gid = r->gid;
        struct tshadow *h = shadow(s, r->tid, r->gid);
        if (r->tag == GR_GREENLET && h->n == 0) {
            for (uint32_t k = 0; k < r->depth; k++)
                push(h, t->stacks[r->stack + k]);
        } else if (r->tag == GR_CALL && r->code <= t->ncodes) {
            push(h, r->code);
        } else if (r->tag == GR_RETURN) {
            pop(h, r->code);
        } else if (r->tag == GR_SWITCH || r->tag == GR_THROW) {
            th->gid = r->target;
        }
    }
}

/* The profiler's side: samples showing each function (canon id), and
 * the samples that show some compared function. */
static long long sampled(struct tstate *s, json_t *stacks, long long *k)
{
    long long n = 0;
    size_t i;
    json_t *st;
    json_array_foreach(stacks, i, st) {
        json_t *frames = json_object_get(st, "frames");
        json_t *cnt = json_object_get(st, "count");
        long long count = json_is_integer(cnt) ? json_integer_value(cnt) : 1;
        size_t j;
        json_t *fr;
        int any = 0;
        s->gen++;
        json_array_foreach(frames, j, fr) {
            const char *file = json_string_value(json_object_get(fr, "file"));
            const char *name = json_string_value(json_object_get(fr, "name"));
            if (!file || !name)
                continue;
            json_t *l = json_object_get(fr, "line"), *f1 = json_object_get(fr, "first");
            uint32_t code = gr_conform_frame_code(s->t, file, name, json_is_integer(l) ? json_integer_value(l) : 0,
                                                  json_is_integer(f1) ? json_integer_value(f1) : 0);
            uint32_t c = code ? s->canon[code] : 0;
            if (c && s->stamp[c] != s->gen) {
                s->stamp[c] = s->gen;
                k[c] += count;
                any = 1;
            }
        }
        if (any)
            n += count;
    }
    return n;
}

static void code_label(const gr_trace *t, uint32_t c, gr_sb *out, gr_sb *tmp)
{
    const gr_code *cd = gr_trace_code(t, c);
    gr_sb_reset(out);
    gr_sb_puts(out, gr_conform_str(t, cd->file, tmp));
    gr_sb_putc(out, ':');
    gr_sb_puts(out, gr_conform_str(t, cd->qualname, tmp));
}

static void add(json_t *diffs, const char *kind, const char *fn, long long line, double truth, long long prof,
                const char *msg)
{
    json_t *d = json_object();
    json_object_set_new(d, "kind", json_string(kind));
    json_object_set_new(d, "function", json_string(fn));
    json_object_set_new(d, "line", json_integer(line));
    json_object_set_new(d, "greenlet", json_null());
    json_object_set_new(d, "truth", json_real(truth));
    json_object_set_new(d, "profiler", json_integer(prof));
    json_object_set_new(d, "message", json_string(msg));
    json_array_append_new(diffs, d);
}

/* The test of each function: m tested, each at GR_TIME_ALPHA / m. */
static size_t judge(struct tstate *s, const long long *k, long long n, json_t *diffs, size_t *tested)
{
    const gr_trace *t = s->t;
    size_t m = 0, nd = 0;
    for (uint32_t c = 1; c <= t->ncodes; c++)
        if (s->canon[c] == c && (s->ns[c] > 0 || k[c] > 0))
            m++;
    *tested = m;
    double level = m ? GR_TIME_ALPHA / (double)m : GR_TIME_ALPHA;
    gr_sb name, tmp, msg;
    gr_sb_init(&name);
    gr_sb_init(&tmp);
    gr_sb_init(&msg);
    for (uint32_t c = 1; c <= t->ncodes; c++) {
        if (s->canon[c] != c || (s->ns[c] <= 0 && k[c] == 0))
            continue;
        double p = s->total > 0 ? s->ns[c] / s->total : 0.0;
        double pv = gr_binom_two_sided(k[c], n, p);
        if (pv >= level)
            continue;
        code_label(t, c, &name, &tmp);
        gr_sb_reset(&msg);
        const char *kind = "time_share";
        if (s->ns[c] <= 0) {
            kind = "time_not_running";
            gr_sb_printf(&msg, "%lld of %lld samples show it, but the recording never had it on a running stack in "
                               "the window: time charged to a stack that was not running",
                         k[c], n);
        } else if (k[c] == 0) {
            kind = "time_unsampled";
            gr_sb_printf(&msg, "on a running stack %.1f ms of %.1f ms (%.1f%%), about %.1f of %lld samples "
                               "expected, none shows it (binomial p = %.2g < %.2g)",
                         s->ns[c] / 1e6, s->total / 1e6, 100 * p, p * (double)n, n, pv, level);
        } else {
            gr_sb_printf(&msg, "%lld of %lld samples (%.1f%%) show it; the recording had it on a running stack "
                               "%.1f%% of the time (%.1f ms of %.1f ms), about %.1f samples expected "
                               "(binomial p = %.2g < %.2g)",
                         k[c], n, 100.0 * (double)k[c] / (double)n, 100 * p, s->ns[c] / 1e6, s->total / 1e6,
                         p * (double)n, pv, level);
        }
        add(diffs, kind, gr_sb_str(&name), (long long)gr_trace_code(t, c)->line, s->ns[c] / 1e6, k[c],
            gr_sb_str(&msg));
        nd++;
    }
    gr_sb_free(&name);
    gr_sb_free(&tmp);
    gr_sb_free(&msg);
    return nd;
}

size_t gr_conform_time(const gr_trace *t, const gr_times *tm, json_t *results, json_t *diffs, json_t *compared,
                       json_t *not_compared)
{
    struct tstate s;
    memset(&s, 0, sizeof s);
    s.t = t;
    size_t nc = t->ncodes + 1;
    s.canon = calloc(nc, sizeof *s.canon);
    s.ns = calloc(nc, sizeof *s.ns);
    s.stamp = calloc(nc, sizeof *s.stamp);
    s.own = calloc(nc, sizeof *s.own);
    long long *k = calloc(nc, sizeof *k);
    if (!s.canon || !s.ns || !s.stamp || !s.own || !k) {
        fputs("greenreplay: out of memory\n", stderr);
        exit(2);
    }
    const char *threads = json_string_value(json_object_get(results, "threads"));
    if ((!threads || strcmp(threads, "all") != 0) && t->nrecs)
        s.only_tid = t->recs[0].tid;
    canon_codes(&s, json_object_get(results, "exclude_files"));
    own_codes(&s, json_object_get(results, "profiler_files"));
    truth(&s, tm);
    long long n = sampled(&s, json_object_get(results, "stacks"), k);
    size_t nd = 0, tested = 0;
    gr_sb msg;
    gr_sb_init(&msg);
    if (n > 0 && s.total > 0) {
        nd = judge(&s, k, n, diffs, &tested);
        gr_sb_printf(&msg, "time per function (%zu function%s, %lld samples against %.1f ms on a running stack: "
                           "exact binomial test, family-wise false-alarm rate %g)",
                     tested, tested == 1 ? "" : "s", n, s.total / 1e6, GR_TIME_ALPHA);
        json_array_append_new(compared, json_string(gr_sb_str(&msg)));
    } else {
        json_array_append_new(not_compared, json_string("time per function (no sample or no recorded time of code "
                                                        "under the root)"));
    }
    gr_sb_free(&msg);
    for (size_t i = 0; i < s.nsh; i++)
        free(s.sh[i].code);
    free(s.sh);
    free(s.th);
    free(s.canon);
    free(s.ns);
    free(s.stamp);
    free(s.own);
    free(k);
    return nd;
}
