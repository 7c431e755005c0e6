/* conform_prof.c - `greenreplay conform` on a program that installs its own
 * profilers (docs/conform.md, "A program with profilers of its own").
 *
 * The adapter read back the counts of each of the program's profiler
 * objects ("program_profilers", keyed by the trace's PROFILER id).  The
 * rule attribution (replay/rules/attribution.c) works out, per profiler,
 * the Python calls the recording delivered to it (own: its owner's;
 * foreign: other greenlets') and the calls of its owner it missed.  Per
 * function under the root:
 *
 *   counted != own + foreign   the profiler counted other than it was
 *                              given: its own fault (blind_spot/miscount);
 *   counted == own + foreign,  it counted what it was given, and that is
 *   but foreign or missed      not its owner's calls: the program's design
 *                              (misattributed).
 *
 * A profiler is "right" when it counted what it was given and the
 * attribution found no missed or foreign call of any Python function (the
 * same test as check's), "misattributed" when it counted what it was given
 * but that is not its owner's work, "wrong" when its counts differ from
 * what it was given.  Profilers alike (kind, type, enabling frame, status)
 * are folded in the text when more than FOLD_AT.
 */
#include "conform.h"

#include "dump.h"
#include "rules/check.h"
#include "text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_AT 3 /* more profilers alike than this: one line */

enum { ST_RIGHT, ST_MISATTRIBUTED, ST_WRONG };
static const char *const status_name[] = {"right", "misattributed", "wrong"};

/* One function of one profiler: what it counted, what it was given. */
struct pfn {
    char *file, *qual;       /* owned: the trace's (or the results') names */
    long long line;
    uint64_t counted, own, foreign, missed;
    uint64_t got_by, from_gid; /* the first missed call's taker, the first
                                  foreign call's greenlet */
    int spans;                 /* its calls spanned greenlet switches */
};

struct ptab {
    struct pfn *v;
    size_t n, cap;
    int over;  /* the attribution tracked this profiler's first 4096
                  functions only (a list entry of code 0): a function it
                  has no count of may be among the rest */
    size_t nuncertain; /* functions not compared for that */
};

static const char *base_name(const char *q)
{
    const char *dot = strrchr(q, '.');
    return dot && dot[1] ? dot + 1 : q;
}

/* String id of t as a new NUL-terminated copy ("" none). */
static char *tstr(const gr_trace *t, uint32_t id)
{
    size_t n = 0;
    const uint8_t *p = id ? gr_trace_string(t, id, &n) : NULL;
    char *s = gr_xrealloc(NULL, n + 1);
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static char *tstr_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = gr_xrealloc(NULL, n + 1);
    memcpy(d, s, n + 1);
    return d;
}

static void table_clear(struct ptab *tb)
{
    for (size_t i = 0; i < tb->n; i++) {
        free(tb->v[i].file);
        free(tb->v[i].qual);
    }
    tb->n = 0;
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

/* The entry for file:line:name (name matched on its last component),
 * added (with copies of file and qual) when absent. */
static struct pfn *slot(struct ptab *tb, const char *file, long long line, const char *qual)
{
    for (size_t i = 0; i < tb->n; i++)
        if (tb->v[i].line == line && strcmp(tb->v[i].file, file) == 0 &&
            strcmp(base_name(tb->v[i].qual), base_name(qual)) == 0)
            return &tb->v[i];
    tb->v = gr_xgrow(tb->v, &tb->cap, tb->n + 1, sizeof *tb->v);
    struct pfn *f = &tb->v[tb->n++];
    memset(f, 0, sizeof *f);
    f->file = tstr_dup(file);
    f->qual = tstr_dup(qual);
    f->line = line;
    return f;
}

/* Add the attribution list v (which: 0 own, 1 missed, 2 foreign) of the
 * functions under the root, not <module>, not in the excluded files. */
static void add_attr(struct ptab *tb, const gr_conform *c, const gr_trace *t, const gr_prof_fn *v, size_t n,
                     int which, json_t *exclude)
{
    for (size_t i = 0; i < n; i++) {
        if (!v[i].code && v[i].count)
            tb->over = 1;
        const gr_code *cd = v[i].code ? gr_trace_code(t, v[i].code) : NULL;
        if (!cd || cd->kind != GR_CODE_PY || !cd->file)
            continue;
        char *file = tstr(t, cd->file), *qual = tstr(t, cd->qualname);
        int skip = !file[0] || file[0] == '<' || file[0] == '/' || strcmp(qual, "<module>") == 0 ||
                   in_list(exclude, file);
        struct pfn *f = skip ? NULL : slot(tb, file, (long long)cd->line, qual);
        free(file);
        free(qual);
        if (!f)
            continue;
        f->spans |= gr_conform_spans(c, v[i].code);
        if (which == 0)
            f->own += v[i].count;
        else if (which == 1) {
            f->missed += v[i].count;
            if (!f->got_by)
                f->got_by = v[i].other;
        } else {
            f->foreign += v[i].count;
            if (!f->from_gid)
                f->from_gid = v[i].other;
        }
    }
}

/* The results' entry of profiler id (program_profilers), NULL none. */
static json_t *read_back(json_t *progs, uint32_t id)
{
    size_t i;
    json_t *p;
    json_array_foreach(progs, i, p) {
        json_t *v = json_object_get(p, "id");
        if (json_is_integer(v) && json_integer_value(v) == (json_int_t)id)
            return p;
    }
    return NULL;
}

/* Whether a code of t named as f spanned a switch (f came from the
 * results only: the recording delivered none of its calls to it). */
static int spans_by_name(const gr_conform *c, const gr_trace *t, const struct pfn *f)
{
    for (uint32_t code = 1; code <= t->ncodes; code++) {
        const gr_code *cd = gr_trace_code(t, code);
        if (!cd || cd->kind != GR_CODE_PY || (long long)cd->line != f->line || !gr_conform_spans(c, code))
            continue;
        char *file = tstr(t, cd->file), *qual = tstr(t, cd->qualname);
        int same = strcmp(file, f->file) == 0 && strcmp(base_name(qual), base_name(f->qual)) == 0;
        free(file);
        free(qual);
        if (same)
            return 1;
    }
    return 0;
}

/* Whether f's count is the profiler's own fault: it differs from what the
 * profiler was given, and cannot come from the one stack of calls cProfile
 * keeps per thread being given other greenlets' events while f's calls
 * were suspended (a call counted at its return: another greenlet's
 * returns end it, or keep it open). */
static int is_fault(const gr_prof_attr *a, const struct pfn *f)
{
    return f->counted != f->own + f->foreign && !(f->spans && a->foreign);
}

/* Fill tb with the functions of profiler a and its read-back counts. */
static void table_of(struct ptab *tb, const gr_conform *c, const gr_trace *t, const gr_prof_attr *a, json_t *back,
                     json_t *exclude)
{
    table_clear(tb);
    tb->over = 0;
    add_attr(tb, c, t, a->own_fn, a->nown_fn, 0, exclude);
    add_attr(tb, c, t, a->missed_fn, a->nmissed_fn, 1, exclude);
    add_attr(tb, c, t, a->foreign_fn, a->nforeign_fn, 2, exclude);
    size_t i;
    json_t *fn;
    json_array_foreach(json_object_get(back, "functions"), i, fn) {
        const char *file = json_string_value(json_object_get(fn, "file"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        json_t *line = json_object_get(fn, "line"), *calls = json_object_get(fn, "calls");
        if (!file || !name || !json_is_integer(line) || !json_is_integer(calls) || strcmp(name, "<module>") == 0 ||
            in_list(exclude, file))
            continue;
        struct pfn *f = slot(tb, file, json_integer_value(line), name);
        f->counted += (uint64_t)json_integer_value(calls);
        if (!f->own && !f->foreign && !f->missed)
            f->spans |= spans_by_name(c, t, f);
    }
}

/* "cprofile (cProfile.Profile)" of a. */
static void what(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a)
{
    gr_sb_puts(sb, gr_profiler_kind_name(a->kind));
    if (a->type) {
        char *ty = tstr(t, a->type);
        gr_sb_puts(sb, " (");
        gr_sb_escape(sb, ty, strlen(ty), 0);
        gr_sb_putc(sb, ')');
        free(ty);
    }
}

static void owner(gr_sb *sb, const gr_prof_attr *a)
{
    if (a->thread_wide)
        gr_sb_printf(sb, "thread %" PRIu64 " (thread-wide)", a->tid);
    else
        gr_sb_printf(sb, "thread %" PRIu64 " greenlet %" PRIu64, a->tid, a->gid);
}

/* "P5 cprofile (cProfile.Profile) of thread 1 greenlet 7, enabled in
 * profiled (app.py:40)" */
static void who_rest(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a);

static void who(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a)
{
    gr_sb_printf(sb, "P%" PRIu32 " ", a->id);
    who_rest(sb, t, a);
}

/* who() without the id. */
static void who_rest(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a)
{
    what(sb, t, a);
    gr_sb_puts(sb, " of ");
    owner(sb, a);
    if (a->frame) {
        gr_sb_puts(sb, ", enabled in ");
        gr_dump_code(sb, t, a->frame);
    }
}

static void fname(gr_sb *sb, const struct pfn *f)
{
    gr_sb_escape(sb, f->file, strlen(f->file), 0);
    gr_sb_putc(sb, ':');
    gr_sb_escape(sb, f->qual, strlen(f->qual), 0);
}

/* One difference of function f of profiler a (cause: "profiler" when it
 * counted other than it was given, else "program"). */
static void add_diff(json_t *diffs, const gr_trace *t, const gr_prof_attr *a, const struct pfn *f, gr_sb *sb)
{
    uint64_t given = f->own + f->foreign, owners = f->own + f->missed;
    int fault = is_fault(a, f), mixed = !fault && f->counted != given;
    const char *kind = fault ? (f->counted < given ? "blind_spot" : "miscount")
                             : mixed ? "mixed_stack" : "misattributed";
    gr_sb_reset(sb);
    who(sb, t, a);
    if (mixed)
        gr_sb_printf(sb, " counted %" PRIu64 " call%s; the recording delivered %" PRIu64 " to it (%" PRIu64
                         " of its owner, %" PRIu64 " of other greenlets), its owner made %" PRIu64
                         ": calls of it were suspended across greenlet switches while other greenlets' events "
                         "reached this profiler, whose one stack per thread counts a call at its return",
                     f->counted, f->counted == 1 ? "" : "s", given, f->own, f->foreign, owners);
    else if (fault)
        gr_sb_printf(sb, " counted %" PRIu64 " call%s; the recording delivered %" PRIu64 " to it (%" PRIu64
                         " of its owner, %" PRIu64 " of other greenlets)",
                     f->counted, f->counted == 1 ? "" : "s", given, f->own, f->foreign);
    else
        gr_sb_printf(sb, " counted the %" PRIu64 " call%s it was given; its owner made %" PRIu64 " (%" PRIu64
                         " counted, %" PRIu64 " missed), %" PRIu64 " counted were other greenlets'",
                     f->counted, f->counted == 1 ? "" : "s", owners, f->own, f->missed, f->foreign);
    if (f->missed && f->got_by)
        gr_sb_printf(sb, "; P%" PRIu64 " got the first it missed", f->got_by);
    if (f->foreign && f->from_gid)
        gr_sb_printf(sb, "; the first other greenlet's: greenlet %" PRIu64, f->from_gid);
    json_t *d = json_object();
    json_object_set_new(d, "kind", json_string(kind));
    json_object_set_new(d, "cause", json_string(fault ? "profiler" : "program"));
    json_object_set_new(d, "profiler_id", json_integer(a->id));
    gr_sb b;
    gr_sb_init(&b);
    fname(&b, f);
    json_object_set_new(d, "function", json_string(gr_sb_str(&b)));
    gr_sb_free(&b);
    json_object_set_new(d, "line", json_integer(f->line));
    json_object_set_new(d, "truth", json_integer((json_int_t)(fault ? given : owners)));
    json_object_set_new(d, "profiler", json_integer((json_int_t)f->counted));
    json_object_set_new(d, "own", json_integer((json_int_t)f->own));
    json_object_set_new(d, "foreign", json_integer((json_int_t)f->foreign));
    json_object_set_new(d, "missed", json_integer((json_int_t)f->missed));
    json_object_set_new(d, "message", json_string(gr_sb_str(sb)));
    json_array_append_new(diffs, d);
}

/* The JSON of profiler a with its functions and status. */
static json_t *prof_json(const gr_trace *t, const gr_prof_attr *a, const struct ptab *tb, int status, gr_sb *sb)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(a->id));
    json_object_set_new(o, "kind", json_string(gr_profiler_kind_name(a->kind)));
    gr_sb_reset(sb);
    what(sb, t, a);
    json_object_set_new(o, "type", json_string(gr_sb_str(sb)));
    gr_sb_reset(sb);
    owner(sb, a);
    json_object_set_new(o, "owner", json_string(gr_sb_str(sb)));
    gr_sb_reset(sb);
    if (a->frame)
        gr_dump_code(sb, t, a->frame);
    json_object_set_new(o, "enabled_in", a->frame ? json_string(gr_sb_str(sb)) : json_null());
    json_object_set_new(o, "status", json_string(status_name[status]));
    json_object_set_new(o, "seen", json_integer((json_int_t)a->seen));
    json_object_set_new(o, "own", json_integer((json_int_t)a->own));
    json_object_set_new(o, "foreign", json_integer((json_int_t)a->foreign));
    json_object_set_new(o, "missed", json_integer((json_int_t)a->missed));
    json_t *fns = json_array();
    for (size_t i = 0; i < tb->n; i++) {
        const struct pfn *f = &tb->v[i];
        json_t *e = json_object();
        gr_sb_reset(sb);
        fname(sb, f);
        json_object_set_new(e, "function", json_string(gr_sb_str(sb)));
        json_object_set_new(e, "line", json_integer(f->line));
        json_object_set_new(e, "counted", json_integer((json_int_t)f->counted));
        json_object_set_new(e, "given", json_integer((json_int_t)(f->own + f->foreign)));
        json_object_set_new(e, "owner_calls", json_integer((json_int_t)(f->own + f->missed)));
        json_object_set_new(e, "own", json_integer((json_int_t)f->own));
        json_object_set_new(e, "foreign", json_integer((json_int_t)f->foreign));
        json_object_set_new(e, "missed", json_integer((json_int_t)f->missed));
        json_array_append_new(fns, e);
    }
    json_object_set_new(o, "functions", fns);
    return o;
}

/* Compare profiler a with its read-back counts: its status; differences
 * appended; *nfn the functions compared. */
static int compare_one(const gr_trace *t, const gr_prof_attr *a, struct ptab *tb, json_t *diffs, size_t *nfn,
                       gr_sb *sb)
{
    int wrong = 0;
    for (size_t i = 0; i < tb->n; i++) {
        const struct pfn *f = &tb->v[i];
        if (tb->over && !f->own && !f->foreign && !f->missed) {
            tb->nuncertain++; /* past the attribution's functions */
            continue;
        }
        (*nfn)++;
        if (is_fault(a, f))
            wrong = 1;
        if (f->counted != f->own + f->foreign || f->foreign || f->missed)
            add_diff(diffs, t, a, f, sb);
    }
    return wrong ? ST_WRONG : a->missed || a->foreign ? ST_MISATTRIBUTED : ST_RIGHT;
}

/* Whether profilers a and b are alike for folding. */
static int alike(const gr_prof_attr *a, int sa, const gr_prof_attr *b, int sb_)
{
    return a->kind == b->kind && a->type == b->type && a->frame == b->frame && sa == sb_;
}

/* The text line of one profiler (status st). */
static void line_one(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a, int st)
{
    gr_sb_printf(sb, "%s ", status_name[st]);
    who(sb, t, a);
    if (st == ST_WRONG)
        gr_sb_puts(sb, ": counted other than the recording delivered to it");
    else
        gr_sb_printf(sb, ": counted what it was given: %" PRIu64 " Python call%s of its owner, %" PRIu64
                         " of other greenlets; missed %" PRIu64 " of its owner's",
                     a->own, a->own == 1 ? "" : "s", a->foreign, a->missed);
}

/* The folded line of the n profilers alike to a (status st) among `of`
 * of the same kind, type and frame; first: the first of them. */
static void line_group(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a, int st, size_t n, size_t of,
                       size_t nforeign, size_t nmissed)
{
    gr_sb_printf(sb, "%s: %zu of %zu ", status_name[st], n, of);
    what(sb, t, a);
    gr_sb_puts(sb, " profilers");
    if (a->frame) {
        gr_sb_puts(sb, " enabled in ");
        gr_dump_code(sb, t, a->frame);
    }
    if (st == ST_RIGHT)
        gr_sb_puts(sb, " counted their owner's calls, and only those");
    else if (st == ST_MISATTRIBUTED)
        gr_sb_printf(sb, " counted what they were given, which is not their owner's work: %zu counted other "
                         "greenlets' calls, %zu missed calls of their owner",
                     nforeign, nmissed);
    else
        gr_sb_puts(sb, " counted other than the recording delivered to them");
    gr_sb_printf(sb, " (first P%" PRIu32 ")", a->id);
}

/* "; first: KIND FUNCTION: counted N, given M" of profiler id's first
 * fault among diffs. */
static void first_fault(gr_sb *sb, json_t *diffs, uint32_t id)
{
    size_t i;
    json_t *d;
    json_array_foreach(diffs, i, d) {
        if (json_integer_value(json_object_get(d, "profiler_id")) != (json_int_t)id ||
            strcmp(json_string_value(json_object_get(d, "cause")), "profiler") != 0)
            continue;
        gr_sb_printf(sb, "; first: %s %s (P%" PRIu32 "): counted %lld, given %lld (%lld of its owner, %lld of "
                         "other greenlets)",
                     json_string_value(json_object_get(d, "kind")), json_string_value(json_object_get(d, "function")),
                     id, (long long)json_integer_value(json_object_get(d, "profiler")),
                     (long long)json_integer_value(json_object_get(d, "truth")),
                     (long long)json_integer_value(json_object_get(d, "own")),
                     (long long)json_integer_value(json_object_get(d, "foreign")));
        return;
    }
}

/* A group of profilers as JSON: status, count, of, kind, type,
 * enabled_in, ids, text (its line). */
static json_t *group_json(const gr_trace *t, const gr_prof_attr **pa, const int *st, size_t np, size_t i,
                          int fold, size_t of, json_t *diffs, gr_sb *sb)
{
    json_t *g = json_object(), *ids = json_array();
    size_t n = 0, nf = 0, nm = 0;
    for (size_t j = i; j < np; j++)
        if (j == i || (fold && alike(pa[i], st[i], pa[j], st[j]))) {
            n++;
            nf += pa[j]->foreign != 0;
            nm += pa[j]->missed != 0;
            json_array_append_new(ids, json_integer(pa[j]->id));
        }
    gr_sb_reset(sb);
    if (fold)
        line_group(sb, t, pa[i], st[i], n, of, nf, nm);
    else
        line_one(sb, t, pa[i], st[i]);
    if (st[i] == ST_WRONG)
        first_fault(sb, diffs, pa[i]->id);
    json_object_set_new(g, "text", json_string(gr_sb_str(sb)));
    json_object_set_new(g, "status", json_string(status_name[st[i]]));
    json_object_set_new(g, "count", json_integer((json_int_t)n));
    json_object_set_new(g, "of", json_integer((json_int_t)of));
    gr_sb_reset(sb);
    what(sb, t, pa[i]);
    json_object_set_new(g, "profiler", json_string(gr_sb_str(sb)));
    gr_sb_reset(sb);
    if (pa[i]->frame)
        gr_dump_code(sb, t, pa[i]->frame);
    json_object_set_new(g, "enabled_in", pa[i]->frame ? json_string(gr_sb_str(sb)) : json_null());
    json_object_set_new(g, "ids", ids);
    return g;
}

/* The report (results "profiler_groups"): one entry per profiler, or one
 * per group of more than FOLD_AT alike (kind, type, enabling frame,
 * status), in order of the first of each. */
static json_t *groups(const gr_trace *t, const gr_prof_attr **pa, const int *st, size_t np, json_t *diffs)
{
    json_t *out = json_array();
    unsigned char *done = calloc(np ? np : 1, 1);
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t i = 0; i < np; i++) {
        if (done[i])
            continue;
        size_t n = 0, of = 0;
        for (size_t j = 0; j < np; j++) {
            of += pa[j]->kind == pa[i]->kind && pa[j]->type == pa[i]->type && pa[j]->frame == pa[i]->frame;
            n += j >= i && alike(pa[i], st[i], pa[j], st[j]);
        }
        int fold = n > FOLD_AT;
        json_array_append_new(out, group_json(t, pa, st, np, i, fold, of, diffs, &sb));
        for (size_t j = i; j < np; j++)
            if (j == i || (fold && alike(pa[i], st[i], pa[j], st[j])))
                done[j] = 1;
    }
    gr_sb_free(&sb);
    free(done);
    return out;
}

/* The verdict from the statuses, its reason in reason. */
static int verdict(const int *st, size_t np, char *reason, size_t n, const char **cause)
{
    size_t k[3] = {0};
    for (size_t i = 0; i < np; i++)
        k[st[i]]++;
    if (k[ST_WRONG]) {
        snprintf(reason, n,
                 "%zu of %zu profilers of the program counted other than the recording delivered to them "
                 "(the profiler's fault); %zu more counted what they were given, which is not their owner's "
                 "work (the program's design)",
                 k[ST_WRONG], np, k[ST_MISATTRIBUTED]);
        *cause = "profiler";
        return GR_CONFORM_FAIL;
    }
    if (k[ST_MISATTRIBUTED]) {
        snprintf(reason, n,
                 "%zu of %zu profilers of the program are not their owner's numbers: each counted what it was "
                 "given, but a thread has one profile function: a profiler enabled while another is takes the "
                 "thread's events from it, and a greenlet switch does not change it, so a profiler enabled per "
                 "greenlet counts whatever greenlet runs while it is installed and misses its own while another "
                 "is (the program's design, not the profiler's fault: switch profilers with the greenlet, "
                 "greenlet.settrace, or profile the whole thread once)",
                 k[ST_MISATTRIBUTED], np);
        *cause = "program";
        return GR_CONFORM_FAIL;
    }
    return GR_CONFORM_PASS;
}

/* The profilers not compared: the adapter's own (displaced) and those not
 * read back (another kind, or not kept): notes. */
static void note_skipped(json_t *notes, const gr_trace *t, const gr_prof_attr *a, int adapters,
                         const char *displaced, gr_sb *sb)
{
    gr_sb_reset(sb);
    if (adapters)
        gr_sb_puts(sb, "the profiler conform started, ");
    who_rest(sb, t, a);
    if (adapters)
        gr_sb_printf(sb, ", displaced by the program's own %s: not compared", displaced);
    else
        gr_sb_puts(sb, ": not read back by the adapter (another kind of profiler): not compared");
    json_t *d = json_object();
    json_object_set_new(d, "kind", json_string("not_compared"));
    json_object_set_new(d, "profiler_id", json_integer(a->id));
    char id[24];
    snprintf(id, sizeof id, "P%" PRIu32, a->id);
    json_object_set_new(d, "function", json_string(id));
    json_object_set_new(d, "message", json_string(gr_sb_str(sb)));
    json_array_append_new(notes, d);
}

int gr_conform_compare_programs(const gr_conform *c, const gr_trace *t, json_t *results, const char *displaced, json_t *diffs,
                                json_t *notes, size_t *checked, char *reason, size_t n)
{
    gr_check_result cr;
    gr_checker *ck = gr_checker_new(t, &cr);
    cr.prof_fn_max = (size_t)-1; /* every function */
    gr_checker_finish(ck);
    json_t *progs = json_object_get(results, "program_profilers");
    json_t *exclude = json_object_get(results, "exclude_files");
    json_int_t own = json_integer_value(json_object_get(results, "adapter_profiler"));
    const gr_prof_attr **pa = calloc(cr.nprof ? cr.nprof : 1, sizeof *pa);
    int *st = calloc(cr.nprof ? cr.nprof : 1, sizeof *st);
    json_t *profs = json_array();
    struct ptab tb = {0};
    gr_sb sb;
    gr_sb_init(&sb);
    size_t np = 0, nfn = 0;
    for (size_t i = 0; i < cr.nprof; i++) {
        const gr_prof_attr *a = &cr.prof[i];
        json_t *back = read_back(progs, a->id);
        if (!back || a->id == own) {
            note_skipped(notes, t, a, a->id == own, displaced, &sb);
            continue;
        }
        table_of(&tb, c, t, a, back, exclude);
        pa[np] = a;
        st[np] = compare_one(t, a, &tb, diffs, &nfn, &sb);
        json_array_append_new(profs, prof_json(t, a, &tb, st[np], &sb));
        np++;
    }
    json_object_set_new(results, "profiler_groups", groups(t, pa, st, np, diffs));
    json_object_set_new(results, "profilers", profs);
    json_t *yes = json_array(), *no = json_array();
    gr_sb_reset(&sb);
    gr_sb_printf(&sb, "per profiler of the program (%zu), the calls of each function under the root it counted, "
                      "with what the recording delivered to it and what its owner made (%zu in all)",
                 np, nfn);
    json_array_append_new(yes, json_string(gr_sb_str(&sb)));
    json_array_append_new(no, json_string("the profiler conform started (displaced by the program's)"));
    if (tb.nuncertain) {
        gr_sb_reset(&sb);
        gr_sb_printf(&sb, "%zu counts of functions past the first 4096 a profiler was given (rule attribution "
                          "tracks no more per profiler)",
                     tb.nuncertain);
        json_array_append_new(no, json_string(gr_sb_str(&sb)));
    }
    json_array_append_new(no, json_string("calls of <module> and of functions outside the root, C functions, "
                                          "primitive calls, callers, times"));
    json_object_set_new(results, "compared", yes);
    json_object_set_new(results, "not_compared", no);
    int v = GR_CONFORM_ERROR;
    const char *cause = NULL;
    if (!np)
        snprintf(reason, n, "nothing to compare: the adapter read back none of the program's profilers "
                            "(they install %s)", displaced);
    else
        v = verdict(st, np, reason, n, &cause);
    json_object_set_new(results, "cause", cause ? json_string(cause) : json_null());
    *checked = nfn;
    gr_sb_free(&sb);
    table_clear(&tb);
    free(tb.v);
    free(pa);
    free(st);
    gr_check_result_free(&cr);
    return v;
}
