/* stats.c - event counts per kind, thread and greenlet (stats.h). */
#include "stats.h"

#include "dump.h"
#include "idmap.h"
#include "report.h"
#include "text.h"

#include <inttypes.h>
#include <limits.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The rows of greenlets that died: sorted runs of rows in a temporary
 * file. */
struct gr_stats_spill {
    FILE *f;
    struct spill_run {
        long off;           /* its first row's byte offset */
        size_t n;           /* its rows */
    } *runs;
    size_t nruns, cap;
};

/* Row for id in (rows, n), created through map when new (its first
 * record: `first`). */
static gr_stats_row *row(gr_stats_row **rows, size_t *n, size_t *cap, gr_idmap *map,
                         uint64_t id, uint64_t tid, uint64_t first)
{
    size_t i;
    if (!gr_idmap_get(map, id, 0, &i)) {
        *rows = gr_xgrow(*rows, cap, *n + 1, sizeof **rows);
        i = (*n)++;
        memset(&(*rows)[i], 0, sizeof **rows);
        (*rows)[i].id = id;
        (*rows)[i].tid = tid;
        (*rows)[i].first = first;
        gr_idmap_put(map, id, 0, i);
    }
    return &(*rows)[i];
}

/* By id, then by first record. */
static int by_id(const void *a, const void *b)
{
    const gr_stats_row *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Add row b (the same id, a later first record) into a. */
static void add_row(gr_stats_row *a, const gr_stats_row *b)
{
    a->total += b->total;
    for (int k = 0; k < GR_NKINDS; k++)
        a->kinds[k] += b->kinds[k];
}

/* Sort rows[0..n) by id and add up those of the same id; returns how many
 * are left. */
static size_t sort_rows(gr_stats_row *rows, size_t n)
{
    if (n > 1)
        qsort(rows, n, sizeof *rows, by_id);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && rows[m - 1].id == rows[i].id)
            add_row(&rows[m - 1], &rows[i]);
        else
            rows[m++] = rows[i];
    }
    return m;
}

/* Count the records t holds now into s (maps and capacities carried
 * between chunks). */
struct counting {
    gr_idmap tmap, gmap;
    size_t tcap, gcap;
    size_t tlast, glast;    /* 1 + row of the last thread / greenlet (a cache) */
    gr_stats_row *dead;     /* rows of greenlets that died, not written yet */
    size_t ndead, dcap;
    int spill;              /* write them in runs (gr_stats_stream) */
};

/* Write the rows of dead greenlets as one sorted run of the spill file
 * (made now if need be).  When no file can be made or written, they stay
 * in memory. */
static void write_run(gr_stats *s, struct counting *k)
{
    if (!k->ndead)
        return;
    if (!s->spill) {
        FILE *f = tmpfile();
        if (!f) {
            k->spill = 0;
            return;
        }
        s->spill = gr_xrealloc(NULL, sizeof *s->spill);
        memset(s->spill, 0, sizeof *s->spill);
        s->spill->f = f;
    }
    gr_stats_spill *sp = s->spill;
    size_t n = sort_rows(k->dead, k->ndead);
    long off = ftell(sp->f);
    if (off < 0 || fwrite(k->dead, sizeof *k->dead, n, sp->f) != n) {
        k->spill = 0; /* what was written stays valid; the rest in memory */
        if (off >= 0)
            clearerr(sp->f), fseek(sp->f, off, SEEK_SET);
        return;
    }
    sp->runs = gr_xgrow(sp->runs, &sp->cap, sp->nruns + 1, sizeof *sp->runs);
    sp->runs[sp->nruns].off = off;
    sp->runs[sp->nruns++].n = n;
    k->ndead = 0;
}

/* Greenlet row i is final (its DEAD was counted): out of the live rows,
 * into the dead ones. */
static void retire(gr_stats *s, struct counting *k, size_t i)
{
    k->dead = gr_xgrow(k->dead, &k->dcap, k->ndead + 1, sizeof *k->dead);
    k->dead[k->ndead++] = s->greenlets[i];
    gr_idmap_del(&k->gmap, s->greenlets[i].id, 0);
    size_t last = --s->ngreenlets;
    if (i != last) {
        s->greenlets[i] = s->greenlets[last];
        gr_idmap_put(&k->gmap, s->greenlets[i].id, 0, i);
    }
    k->glast = 0;
    if (k->spill && k->ndead >= GR_STATS_RUN)
        write_run(s, k);
}

static void count_records(const gr_trace *t, gr_stats *s, struct counting *k)
{
    for (size_t i = 0; i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        int tag = r->tag - GR_FIRST_INDEXED;
        s->total++;
        s->kinds[tag]++;
        gr_stats_row *tr;
        if (k->tlast && s->threads[k->tlast - 1].id == r->tid)
            tr = &s->threads[k->tlast - 1];
        else {
            tr = row(&s->threads, &s->nthreads, &k->tcap, &k->tmap, r->tid, r->tid, r->index);
            k->tlast = (size_t)(tr - s->threads) + 1;
        }
        tr->total++;
        tr->kinds[tag]++;
        if (r->tag == GR_THREAD)
            continue;
        uint64_t gid = (r->tag == GR_SWITCH || r->tag == GR_THROW) ? r->target : r->gid;
        gr_stats_row *gr;
        if (k->glast && s->greenlets[k->glast - 1].id == gid)
            gr = &s->greenlets[k->glast - 1];
        else {
            gr = row(&s->greenlets, &s->ngreenlets, &k->gcap, &k->gmap, gid, r->tid, r->index);
            k->glast = (size_t)(gr - s->greenlets) + 1;
        }
        gr->total++;
        gr->kinds[tag]++;
        if (r->tag == GR_DEAD)
            retire(s, k, (size_t)(gr - s->greenlets));
    }
}

/* The live rows and those of dead greenlets still in memory, sorted and
 * added up; the threads sorted. */
static void end_counting(gr_stats *s, struct counting *k)
{
    gr_idmap_free(&k->tmap);
    gr_idmap_free(&k->gmap);
    if (s->spill && k->spill)
        write_run(s, k);
    if (k->ndead) {
        s->greenlets = gr_xgrow(s->greenlets, &k->gcap, s->ngreenlets + k->ndead,
                                sizeof *s->greenlets);
        memcpy(s->greenlets + s->ngreenlets, k->dead, k->ndead * sizeof *k->dead);
        s->ngreenlets += k->ndead;
    }
    free(k->dead);
    s->ngreenlets = sort_rows(s->greenlets, s->ngreenlets);
    if (s->nthreads)
        qsort(s->threads, s->nthreads, sizeof *s->threads, by_id);
}

void gr_stats_compute(const gr_trace *t, gr_stats *s)
{
    memset(s, 0, sizeof *s);
    struct counting k;
    memset(&k, 0, sizeof k);
    count_records(t, s, &k);
    end_counting(s, &k);
}

int gr_stats_stream(gr_trace *t, gr_stats *s)
{
    memset(s, 0, sizeof *s);
    struct counting k;
    memset(&k, 0, sizeof k);
    k.spill = 1;
    do
        count_records(t, s, &k);
    while (t->streaming && gr_trace_next_chunk(t) > 0 && ++s->chunks);
    end_counting(s, &k);
    return t->err.status ? -1 : 0;
}

/* ---- the greenlets in gid order: the spill's runs merged with the rows
 * in memory ---------------------------------------------------------- */

#define CURSOR_ROWS 32 /* rows read at a time from a run */

typedef struct cursor {
    gr_stats_row buf[CURSOR_ROWS];
    size_t at, len;         /* buf[at..len) not taken yet */
    long off;               /* the next rows of the run */
    size_t left;            /* rows of the run not read yet */
} cursor;

typedef struct rows_iter {
    const gr_stats *s;
    size_t mem;             /* next row of s->greenlets */
    cursor *cur;            /* one per run */
    size_t *heap, nheap;    /* runs with rows left, by head row (by_id) */
    int err;                /* the spill could not be read */
} rows_iter;

/* The head row of run j, reading its next rows when need be; NULL when
 * the run is done (or unreadable: it->err). */
static const gr_stats_row *head(rows_iter *it, size_t j)
{
    cursor *c = &it->cur[j];
    if (c->at == c->len && c->left) {
        size_t n = c->left < CURSOR_ROWS ? c->left : CURSOR_ROWS;
        FILE *f = it->s->spill->f;
        if (fseek(f, c->off, SEEK_SET) != 0 || fread(c->buf, sizeof *c->buf, n, f) != n) {
            it->err = 1;
            c->left = 0;
            return NULL;
        }
        c->at = 0;
        c->len = n;
        c->off += (long)(n * sizeof *c->buf);
        c->left -= n;
    }
    return c->at < c->len ? &c->buf[c->at] : NULL;
}

static int heap_less(rows_iter *it, size_t a, size_t b)
{
    return by_id(&it->cur[it->heap[a]].buf[it->cur[it->heap[a]].at],
                 &it->cur[it->heap[b]].buf[it->cur[it->heap[b]].at]) < 0;
}

static void sift_down(rows_iter *it, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < it->nheap && heap_less(it, l, m))
            m = l;
        if (l + 1 < it->nheap && heap_less(it, l + 1, m))
            m = l + 1;
        if (m == i)
            return;
        size_t x = it->heap[i];
        it->heap[i] = it->heap[m];
        it->heap[m] = x;
        i = m;
    }
}

static void iter_begin(rows_iter *it, const gr_stats *s)
{
    memset(it, 0, sizeof *it);
    it->s = s;
    size_t n = s->spill ? s->spill->nruns : 0;
    if (!n)
        return;
    it->cur = gr_xrealloc(NULL, n * sizeof *it->cur);
    it->heap = gr_xrealloc(NULL, n * sizeof *it->heap);
    for (size_t j = 0; j < n; j++) {
        it->cur[j].at = it->cur[j].len = 0;
        it->cur[j].off = s->spill->runs[j].off;
        it->cur[j].left = s->spill->runs[j].n;
        if (head(it, j))
            it->heap[it->nheap++] = j;
    }
    for (size_t i = it->nheap / 2; i-- > 0;)
        sift_down(it, i);
}

/* The smallest row left, taken: from the heap's top run or from memory. */
static int take(rows_iter *it, gr_stats_row *out)
{
    const gr_stats_row *m = it->mem < it->s->ngreenlets ? &it->s->greenlets[it->mem] : NULL;
    const gr_stats_row *h = it->nheap ? &it->cur[it->heap[0]].buf[it->cur[it->heap[0]].at] : NULL;
    if (!m && !h)
        return 0;
    if (m && (!h || by_id(m, h) < 0)) {
        *out = *m;
        it->mem++;
        return 1;
    }
    *out = *h;
    it->cur[it->heap[0]].at++;
    if (!head(it, it->heap[0]))
        it->heap[0] = it->heap[--it->nheap];
    sift_down(it, 0);
    return 1;
}

/* The next greenlet's row, its rows in every run and in memory added up
 * (ordered by first record: the first one's tid).  Returns 0 at the end. */
static int next_greenlet(rows_iter *it, gr_stats_row *out)
{
    if (!take(it, out))
        return 0;
    gr_stats_row more;
    for (;;) {
        const gr_stats_row *m = it->mem < it->s->ngreenlets ? &it->s->greenlets[it->mem] : NULL;
        const gr_stats_row *h = it->nheap ? &it->cur[it->heap[0]].buf[it->cur[it->heap[0]].at] : NULL;
        if (!(m && m->id == out->id) && !(h && h->id == out->id))
            return 1;
        take(it, &more);
        add_row(out, &more);
    }
}

static void iter_end(rows_iter *it)
{
    free(it->cur);
    free(it->heap);
}

void gr_stats_free(gr_stats *s)
{
    free(s->threads);
    free(s->greenlets);
    if (s->spill) {
        fclose(s->spill->f);
        free(s->spill->runs);
        free(s->spill);
    }
    memset(s, 0, sizeof *s);
}

#define K(tag) ((tag) - GR_FIRST_INDEXED)

static void print_head(FILE *out, const char *title, int show_thread)
{
    fprintf(out, "\n%-10s%s %10s %10s %10s %10s %10s\n", title, show_thread ? " thread" : "",
            "records", "calls", "c_calls", "switches", "marks");
}

static void print_row(FILE *out, char prefix, const gr_stats_row *r, int show_thread)
{
    char id[32], tid[32];
    snprintf(id, sizeof id, "%c%" PRIu64, prefix, r->id);
    snprintf(tid, sizeof tid, "t%" PRIu64, r->tid);
    fprintf(out, "%-10s", id);
    if (show_thread)
        fprintf(out, " %-6s", tid);
    fprintf(out, " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
            r->total, r->kinds[K(GR_CALL)], r->kinds[K(GR_C_CALL)],
            r->kinds[K(GR_SWITCH)] + r->kinds[K(GR_THROW)], r->kinds[K(GR_MARK)]);
}

int gr_stats_print_text(FILE *out, const gr_trace *t, const gr_stats *s)
{
    gr_sb shown; /* a file name reaches the terminal */
    gr_sb_init(&shown);
    gr_sb_escape(&shown, t->name, strlen(t->name), 0);
    fprintf(out, "trace %s: %" PRIu64 " records", gr_sb_str(&shown), s->total);
    gr_sb_free(&shown);
    if (t->has_trailer)
        fprintf(out, ", trailer events=%" PRIu64 " dropped=%" PRIu64 " errors=%" PRIu64 "\n",
                t->trailer.events, t->trailer.dropped, t->trailer.errors);
    else {
        gr_sb sb;
        gr_sb_init(&sb);
        gr_report_cut_where(&sb, t);
        fprintf(out, ", truncated: %s\n", sb.s);
        gr_sb_free(&sb);
    }
    if (s->chunks)
        fprintf(out, "chunks: %" PRIu64 " (`check --from A --to B` takes indices 0..%" PRIu64 ")\n",
                s->chunks, s->chunks - 1);
    fprintf(out, "\n%-12s %10s\n", "kind", "count");
    for (int k = 0; k < GR_NKINDS; k++)
        fprintf(out, "%-12s %10" PRIu64 "\n", gr_tag_name(k + GR_FIRST_INDEXED), s->kinds[k]);
    fprintf(out, "%-12s %10" PRIu64 "\n", "total", s->total);
    print_head(out, "thread", 0);
    for (size_t i = 0; i < s->nthreads; i++)
        print_row(out, 't', &s->threads[i], 0);
    print_head(out, "greenlet", 1);
    rows_iter it;
    gr_stats_row r;
    iter_begin(&it, s);
    while (next_greenlet(&it, &r))
        print_row(out, 'g', &r, 1);
    iter_end(&it);
    fflush(out);
    return ferror(out) || it.err ? -1 : 0;
}

/* uint64 as a JSON integer, or a decimal string above the JSON int range. */
static json_t *ju64(uint64_t v)
{
    if (v <= (uint64_t)LLONG_MAX)
        return json_integer((json_int_t)v);
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    return json_string(b);
}

static json_t *kinds_obj(const uint64_t *kinds)
{
    json_t *o = json_object();
    for (int k = 0; k < GR_NKINDS; k++)
        json_object_set_new(o, gr_tag_name(k + GR_FIRST_INDEXED), ju64(kinds[k]));
    return o;
}

static json_t *row_obj(const gr_stats_row *r, const char *key, int with_tid)
{
    json_t *o = json_object();
    json_object_set_new(o, key, ju64(r->id));
    if (with_tid)
        json_object_set_new(o, "tid", ju64(r->tid));
    json_object_set_new(o, "records", ju64(r->total));
    json_object_set_new(o, "kinds", kinds_obj(r->kinds));
    return o;
}

#define JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)

/* The "greenlets" array, one row at a time, laid out as json_dumpf lays
 * out the document's members (JSON_FLAGS): its text is the same as if the
 * array were in the document, without holding every row's JSON at once.
 * Returns -1 when a row cannot be written or the spill read. */
static int greenlets_json(FILE *out, const gr_stats *s)
{
    rows_iter it;
    gr_stats_row r;
    int rc = 0;
    size_t n = 0;
    iter_begin(&it, s);
    fputc('[', out);
    while (rc == 0 && next_greenlet(&it, &r)) {
        json_t *o = row_obj(&r, "gid", 1);
        char *text = json_dumps(o, JSON_FLAGS);
        json_decref(o);
        if (!text) {
            rc = -1;
            break;
        }
        fputs(n++ ? ",\n    " : "\n    ", out);
        for (const char *p = text; *p; p++) {
            fputc(*p, out);
            if (*p == '\n')
                fputs("    ", out);
        }
        free(text);
    }
    fputs(n ? "\n  ]" : "]", out);
    iter_end(&it);
    return rc < 0 || it.err ? -1 : 0;
}

int gr_stats_print_json(FILE *out, const gr_trace *t, const gr_stats *s)
{
    gr_sb name;
    gr_sb_init(&name);
    gr_sb_escape(&name, t->name, strlen(t->name), 0);
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(gr_sb_str(&name)));
    gr_sb_free(&name);
    json_object_set_new(o, "records", ju64(s->total));
    if (t->has_trailer) {
        json_t *tr = json_object();
        json_object_set_new(tr, "events", ju64(t->trailer.events));
        json_object_set_new(tr, "dropped", ju64(t->trailer.dropped));
        json_object_set_new(tr, "errors", ju64(t->trailer.errors));
        const char *why = gr_reason_name(t->trailer.reason);
        json_object_set_new(tr, "reason", why ? json_string(why) : ju64(t->trailer.reason));
        json_object_set_new(o, "trailer", tr);
        json_object_set_new(o, "truncated_at", json_null());
    } else {
        json_object_set_new(o, "trailer", json_null());
        json_object_set_new(o, "truncated_at", ju64(t->truncated_at));
    }
    json_object_set_new(o, "chunks", s->chunks ? ju64(s->chunks) : json_null());
    json_object_set_new(o, "kinds", kinds_obj(s->kinds));
    json_t *threads = json_array();
    for (size_t i = 0; i < s->nthreads; i++)
        json_array_append_new(threads, row_obj(&s->threads[i], "tid", 0));
    json_object_set_new(o, "threads", threads);
    /* "greenlets", the last member, written apart (greenlets_json): the
     * document is dumped with an empty array there, and the rows go
     * between its brackets */
    json_object_set_new(o, "greenlets", json_array());
    char *text = json_dumps(o, JSON_FLAGS);
    json_decref(o);
    static const char tail[] = "\"greenlets\": []\n}";
    size_t len = text ? strlen(text) : 0, tl = sizeof tail - 1;
    int rc = -1;
    if (len >= tl && strcmp(text + len - tl, tail) == 0) { /* the last member */
        size_t at = len - tl + strlen("\"greenlets\": ");
        fwrite(text, 1, at, out);
        rc = greenlets_json(out, s);
        fputs(text + at + 2, out);
        fputc('\n', out);
    }
    free(text);
    fflush(out);
    return rc < 0 || ferror(out) ? -1 : 0;
}
