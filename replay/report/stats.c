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

/* Row for id in (rows, n), created through map when new. */
static gr_stats_row *row(gr_stats_row **rows, size_t *n, size_t *cap, gr_idmap *map,
                         uint64_t id, uint64_t tid)
{
    size_t i;
    if (!gr_idmap_get(map, id, 0, &i)) {
        *rows = gr_xgrow(*rows, cap, *n + 1, sizeof **rows);
        i = (*n)++;
        memset(&(*rows)[i], 0, sizeof **rows);
        (*rows)[i].id = id;
        (*rows)[i].tid = tid;
        gr_idmap_put(map, id, 0, i);
    }
    return &(*rows)[i];
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const gr_stats_row *)a)->id, y = ((const gr_stats_row *)b)->id;
    return x < y ? -1 : x > y;
}

/* Count the records t holds now into s (maps and capacities carried
 * between chunks). */
struct counting {
    gr_idmap tmap, gmap;
    size_t tcap, gcap;
    size_t tlast, glast;    /* 1 + row of the last thread / greenlet (a cache) */
};

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
            tr = row(&s->threads, &s->nthreads, &k->tcap, &k->tmap, r->tid, r->tid);
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
            gr = row(&s->greenlets, &s->ngreenlets, &k->gcap, &k->gmap, gid, r->tid);
            k->glast = (size_t)(gr - s->greenlets) + 1;
        }
        gr->total++;
        gr->kinds[tag]++;
    }
}

static void end_counting(gr_stats *s, struct counting *k)
{
    gr_idmap_free(&k->tmap);
    gr_idmap_free(&k->gmap);
    if (s->nthreads)
        qsort(s->threads, s->nthreads, sizeof *s->threads, by_id);
    if (s->ngreenlets)
        qsort(s->greenlets, s->ngreenlets, sizeof *s->greenlets, by_id);
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
    do
        count_records(t, s, &k);
    while (t->streaming && gr_trace_next_chunk(t) > 0 && ++s->chunks);
    end_counting(s, &k);
    return t->err.status ? -1 : 0;
}

void gr_stats_free(gr_stats *s)
{
    free(s->threads);
    free(s->greenlets);
    memset(s, 0, sizeof *s);
}

#define K(tag) ((tag) - GR_FIRST_INDEXED)

static void print_rows(FILE *out, const char *title, char prefix, const gr_stats_row *rows,
                       size_t n, int show_thread)
{
    fprintf(out, "\n%-10s%s %10s %10s %10s %10s %10s\n", title, show_thread ? " thread" : "",
            "records", "calls", "c_calls", "switches", "marks");
    for (size_t i = 0; i < n; i++) {
        const gr_stats_row *r = &rows[i];
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
    print_rows(out, "thread", 't', s->threads, s->nthreads, 0);
    print_rows(out, "greenlet", 'g', s->greenlets, s->ngreenlets, 1);
    fflush(out);
    return ferror(out) ? -1 : 0;
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

static json_t *rows_arr(const gr_stats_row *rows, size_t n, const char *key, int with_tid)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, key, ju64(rows[i].id));
        if (with_tid)
            json_object_set_new(o, "tid", ju64(rows[i].tid));
        json_object_set_new(o, "records", ju64(rows[i].total));
        json_object_set_new(o, "kinds", kinds_obj(rows[i].kinds));
        json_array_append_new(a, o);
    }
    return a;
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
    json_object_set_new(o, "threads", rows_arr(s->threads, s->nthreads, "tid", 0));
    json_object_set_new(o, "greenlets", rows_arr(s->greenlets, s->ngreenlets, "gid", 1));
    int rc = json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    fputc('\n', out);
    json_decref(o);
    fflush(out);
    return rc < 0 || ferror(out) ? -1 : 0;
}
