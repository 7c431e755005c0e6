/* export.c - Chrome Trace Event and speedscope export of a trace (export.h). */
#include "export.h"

#include "dump.h"
#include "idmap.h"
#include "outfile.h"
#include "text.h"
#include "version.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* One (thread, greenlet) track. */
typedef struct ex_track {
    uint64_t tid, gid;
    size_t id;            /* 1-based, in order of first sight (Chrome tid) */
    int main;             /* main greenlet of its thread */
    uint32_t run;         /* code naming the greenlet's run; 0 unknown */
    uint32_t *open;       /* open frames (code ids), outermost first */
    size_t *open_node;    /* the merged view's node of each open frame */
    size_t nopen, cap_open, cap_node;
    size_t frames;        /* frames opened on this track */
    uint64_t first_at, last_at; /* speedscope: first and last event time */
    gr_sb ev;             /* speedscope: this profile's events, comma-separated */
} ex_track;

#define NO_NODE SIZE_MAX

/* A node of the merged view's call tree: a frame under its parent, summed
 * over the greenlets of a thread. */
typedef struct ex_node {
    uint32_t code;        /* 0: the thread's root */
    size_t parent;        /* NO_NODE for a root */
    size_t first_child, last_child, next_sibling;
    uint64_t self, total; /* ns */
} ex_node;

/* A thread, for the merged view. */
typedef struct ex_thr {
    uint64_t tid;
    size_t root;          /* its root node */
    size_t cur;           /* track of its running greenlet, or NO_NODE */
    uint64_t last_ns;     /* time of its last record */
    int seen;
} ex_thr;

typedef struct ex {
    FILE *out;
    enum gr_export_format fmt;
    int tracks_out;       /* the per-greenlet tracks are written */
    int merged_out;       /* the merged view is written */
    ex_node *nodes;
    size_t nnodes, cap_nodes;
    gr_idmap node_map;    /* (parent, code) -> node; roots (NO_NODE, tid) */
    ex_thr *thr;
    size_t nthr, cap_thr;
    gr_idmap thr_map;     /* (tid, 0) -> thread */
    const gr_trace *t;
    uint64_t *ns;         /* [nrecs] time of each record, ns */
    uint64_t end_ns;      /* time of the end of the trace */
    ex_track *tracks;
    size_t ntracks, cap_tracks;
    gr_idmap map;
    size_t nflow;
    int first;            /* Chrome: no event written yet */
    gr_export_stats st;
    gr_sb line, tmp;
} ex;

/* ---- JSON text ---------------------------------------------------------- */

/* Append s (n bytes) as a JSON string: first the display escaping of dump
 * (valid UTF-8, no control characters, "\xHH" for bad bytes), then JSON's. */
static void json_put_str(gr_sb *sb, const void *s, size_t n)
{
    gr_sb disp;
    gr_sb_init(&disp);
    gr_sb_escape(&disp, s, n, 0);
    gr_sb_putc(sb, '"');
    for (size_t i = 0; i < disp.len; i++) {
        char c = disp.s[i];
        if (c == '"' || c == '\\')
            gr_sb_putc(sb, '\\');
        gr_sb_putc(sb, c);
    }
    gr_sb_putc(sb, '"');
    gr_sb_free(&disp);
}

static void json_put_cstr(gr_sb *sb, const char *s)
{
    json_put_str(sb, s, strlen(s));
}

/* Append text already escaped for display (dump lines, checker messages:
 * valid UTF-8 without control characters) as a JSON string. */
static void json_put_disp(gr_sb *sb, const char *s)
{
    gr_sb_putc(sb, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            gr_sb_putc(sb, '\\');
        gr_sb_putc(sb, *s);
    }
    gr_sb_putc(sb, '"');
}

/* Chrome's ts is in microseconds: ns as "U.FFF". */
static void put_us(gr_sb *sb, uint64_t ns)
{
    if (ns % 1000 == 0)
        gr_sb_printf(sb, "%" PRIu64, ns / 1000);
    else
        gr_sb_printf(sb, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void qualname(gr_sb *sb, const gr_trace *t, uint32_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    size_t n = 0;
    const uint8_t *s = c ? gr_trace_string(t, c->qualname, &n) : NULL;
    if (s)
        gr_sb_escape(sb, s, n, 0);
    else
        gr_sb_printf(sb, "?code=%" PRIu32, code);
}

/* ---- tracks ------------------------------------------------------------- */

static ex_track *track(ex *e, uint64_t tid, uint64_t gid)
{
    size_t i;
    if (gr_idmap_get(&e->map, tid, gid, &i))
        return &e->tracks[i];
    e->tracks = gr_xgrow(e->tracks, &e->cap_tracks, e->ntracks + 1, sizeof *e->tracks);
    i = e->ntracks++;
    ex_track *tr = &e->tracks[i];
    memset(tr, 0, sizeof *tr);
    tr->tid = tid;
    tr->gid = gid;
    tr->id = i + 1;
    gr_idmap_put(&e->map, tid, gid, i);
    return tr;
}

static void track_name(gr_sb *sb, const ex *e, const ex_track *tr)
{
    gr_sb_printf(sb, "thread %" PRIu64, tr->tid);
    if (tr->gid == 0)
        return;
    gr_sb_printf(sb, " greenlet %" PRIu64, tr->gid);
    if (tr->main) {
        gr_sb_puts(sb, " (main)");
        return;
    }
    gr_sb_puts(sb, " (run ");
    if (tr->run)
        qualname(sb, e->t, tr->run);
    else
        gr_sb_putc(sb, '?');
    gr_sb_putc(sb, ')');
}

/* ---- the merged view ---------------------------------------------------- */

static size_t new_node(ex *e, size_t parent, uint32_t code)
{
    e->nodes = gr_xgrow(e->nodes, &e->cap_nodes, e->nnodes + 1, sizeof *e->nodes);
    size_t i = e->nnodes++;
    ex_node *n = &e->nodes[i];
    memset(n, 0, sizeof *n);
    n->code = code;
    n->parent = parent;
    n->first_child = n->last_child = n->next_sibling = NO_NODE;
    if (parent != NO_NODE) {
        ex_node *p = &e->nodes[parent];
        if (p->last_child == NO_NODE)
            p->first_child = i;
        else
            e->nodes[p->last_child].next_sibling = i;
        p->last_child = i;
    }
    return i;
}

static ex_thr *thread_of(ex *e, uint64_t tid)
{
    size_t i;
    if (gr_idmap_get(&e->thr_map, tid, 0, &i))
        return &e->thr[i];
    e->thr = gr_xgrow(e->thr, &e->cap_thr, e->nthr + 1, sizeof *e->thr);
    i = e->nthr++;
    ex_thr *th = &e->thr[i];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->cur = NO_NODE;
    th->root = new_node(e, NO_NODE, 0);
    gr_idmap_put(&e->thr_map, tid, 0, i);
    return &e->thr[i];
}

/* The node of frame `code` under `parent`, made when new. */
static size_t child_node(ex *e, size_t parent, uint32_t code)
{
    size_t i;
    if (gr_idmap_get(&e->node_map, parent, code, &i))
        return i;
    i = new_node(e, parent, code);
    gr_idmap_put(&e->node_map, parent, code, i);
    return i;
}

/* Record at ns on thread tid: the time since the thread's last record
 * goes to the stack of the greenlet that ran there. */
static void merged_tick(ex *e, uint64_t tid, uint64_t ns)
{
    ex_thr *th = thread_of(e, tid);
    if (th->seen && th->cur != NO_NODE) {
        const ex_track *tr = &e->tracks[th->cur];
        size_t node = tr->nopen ? tr->open_node[tr->nopen - 1] : th->root;
        e->nodes[node].self += ns - th->last_ns;
    }
    th->seen = 1;
    th->last_ns = ns;
}

/* After a record: the greenlet running on tid is (tid, gid). */
static void merged_running(ex *e, uint64_t tid, uint64_t gid)
{
    ex_track *tr = track(e, tid, gid);
    thread_of(e, tid)->cur = tr->id - 1;
}

/* Each node's total: its own time and its children's (children come
 * after their parent). */
static void merged_totals(ex *e)
{
    for (size_t i = e->nnodes; i-- > 0;) {
        ex_node *n = &e->nodes[i];
        n->total += n->self;
        if (n->parent != NO_NODE)
            e->nodes[n->parent].total += n->total;
    }
}

/* The nodes of root's tree with time, depth first, parents first, into
 * *order (owned; *n of them). */
static size_t *merged_order(const ex *e, size_t root, size_t *n)
{
    size_t cap = 16, k = 0, depth = 0, cap_stack = 16;
    size_t *order = gr_xrealloc(NULL, cap * sizeof *order);
    size_t *stack = gr_xrealloc(NULL, cap_stack * sizeof *stack);
    stack[depth++] = root;
    while (depth) {
        size_t i = stack[--depth];
        const ex_node *nd = &e->nodes[i];
        if (!nd->total)
            continue;
        order = gr_xgrow(order, &cap, k + 1, sizeof *order);
        order[k++] = i;
        /* children pushed last first, so that they come out in order */
        size_t nch = 0;
        for (size_t c = nd->first_child; c != NO_NODE; c = e->nodes[c].next_sibling)
            nch++;
        stack = gr_xgrow(stack, &cap_stack, depth + nch, sizeof *stack);
        size_t at = depth + nch;
        for (size_t c = nd->first_child; c != NO_NODE; c = e->nodes[c].next_sibling)
            stack[--at] = c;
        depth += nch;
    }
    free(stack);
    *n = k;
    return order;
}

/* ---- output ------------------------------------------------------------- */

/* Chrome: start an event object with the common fields. */
static gr_sb *chrome_begin(ex *e, const char *ph, const ex_track *tr, uint64_t ns)
{
    gr_sb *l = &e->line;
    gr_sb_reset(l);
    gr_sb_puts(l, e->first ? "\n" : ",\n");
    e->first = 0;
    gr_sb_printf(l, "{\"ph\":\"%s\",\"pid\":1,\"tid\":%zu,\"ts\":", ph, tr ? tr->id : (size_t)0);
    put_us(l, ns);
    return l;
}

static void chrome_end(ex *e)
{
    gr_sb_putc(&e->line, '}');
    fwrite(e->line.s, 1, e->line.len, e->out);
}

/* speedscope: add an O or C event to tr's profile. */
static void scope_event(ex_track *tr, char type, uint32_t code, uint64_t ns, int timed)
{
    uint64_t at = timed ? ns : ns / 1000;
    if (tr->ev.len == 0)
        tr->first_at = at;
    else
        gr_sb_putc(&tr->ev, ',');
    tr->last_at = at;
    gr_sb_printf(&tr->ev, "\n{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}", type,
                 code - 1, at);
}

static void open_frame(ex *e, ex_track *tr, uint32_t code, uint64_t ns)
{
    size_t tid = tr->tid, ti = tr->id - 1;
    size_t parent = tr->nopen ? tr->open_node[tr->nopen - 1] : thread_of(e, tid)->root;
    size_t node = child_node(e, parent, code);
    tr = &e->tracks[ti];
    tr->open = gr_xgrow(tr->open, &tr->cap_open, tr->nopen + 1, sizeof *tr->open);
    tr->open_node = gr_xgrow(tr->open_node, &tr->cap_node, tr->nopen + 1, sizeof *tr->open_node);
    tr->open_node[tr->nopen] = node;
    tr->open[tr->nopen++] = code;
    tr->frames++;
    e->st.slices++;
    if (!e->tracks_out)
        return;
    if (e->fmt == GR_EXPORT_SPEEDSCOPE) {
        scope_event(tr, 'O', code, ns, e->st.timed);
        return;
    }
    gr_sb *l = chrome_begin(e, "B", tr, ns);
    const gr_code *c = gr_trace_code(e->t, code);
    gr_sb_puts(l, ",\"cat\":");
    gr_sb_puts(l, c && c->kind == GR_CODE_C ? "\"c\"" : "\"python\"");
    gr_sb_reset(&e->tmp);
    qualname(&e->tmp, e->t, code);
    gr_sb_puts(l, ",\"name\":");
    json_put_disp(l, gr_sb_str(&e->tmp));
    if (c && c->kind == GR_CODE_PY) {
        size_t n = 0;
        const uint8_t *f = gr_trace_string(e->t, c->file, &n);
        gr_sb_puts(l, ",\"args\":{\"file\":");
        if (f)
            json_put_str(l, f, n);
        else
            gr_sb_puts(l, "\"?\"");
        gr_sb_printf(l, ",\"line\":%" PRIu64 "}", c->line);
    }
    chrome_end(e);
}

/* Close tr's innermost frame at ns. */
static void close_top(ex *e, ex_track *tr, uint64_t ns)
{
    uint32_t code = tr->open[--tr->nopen];
    if (!e->tracks_out)
        return;
    if (e->fmt == GR_EXPORT_SPEEDSCOPE) {
        scope_event(tr, 'C', code, ns, e->st.timed);
        return;
    }
    gr_sb *l = chrome_begin(e, "E", tr, ns);
    gr_sb_reset(&e->tmp);
    qualname(&e->tmp, e->t, code);
    gr_sb_puts(l, ",\"name\":");
    json_put_disp(l, gr_sb_str(&e->tmp));
    chrome_end(e);
}

/* Chrome instant event on tr (NULL: global), name and optional args. */
static void instant(ex *e, ex_track *tr, uint64_t ns, const char *cat, const char *name,
                    const char *args_json)
{
    if (e->fmt != GR_EXPORT_CHROME || !e->tracks_out)
        return;
    gr_sb *l = chrome_begin(e, "i", tr, ns);
    gr_sb_printf(l, ",\"s\":\"%s\",\"cat\":\"%s\",\"name\":", tr ? "t" : "g", cat);
    json_put_disp(l, name);
    if (args_json)
        gr_sb_printf(l, ",\"args\":%s", args_json);
    chrome_end(e);
}

/* A return of `code` on tr at record r. */
static void return_frame(ex *e, ex_track *tr, const gr_record *r, uint64_t ns)
{
    size_t k = tr->nopen;
    while (k > 0 && tr->open[k - 1] != r->code)
        k--;
    if (k == 0) {
        e->st.unmatched++;
        if (e->fmt == GR_EXPORT_CHROME && e->tracks_out) {
            gr_sb name, args;
            gr_sb_init(&name);
            gr_sb_init(&args);
            gr_sb_puts(&name, r->tag == GR_RETURN ? "return without call: "
                                                  : "c_return without c_call: ");
            qualname(&name, e->t, r->code);
            gr_sb_printf(&args, "{\"index\":%" PRIu64 "}", r->index);
            instant(e, tr, ns, "unbalanced", gr_sb_str(&name), gr_sb_str(&args));
            gr_sb_free(&name);
            gr_sb_free(&args);
        }
        return;
    }
    while (tr->nopen >= k)
        close_top(e, tr, ns);
}

static void close_all(ex *e, ex_track *tr, uint64_t ns)
{
    e->st.closed_at_end += tr->nopen;
    while (tr->nopen)
        close_top(e, tr, ns);
}

/* {"index":N,"record":"dump line"} of record r into e->tmp. */
static const char *record_args(ex *e, const gr_record *r)
{
    gr_sb line;
    gr_sb_init(&line);
    gr_dump_record(&line, e->t, r);
    gr_sb_reset(&e->tmp);
    gr_sb_printf(&e->tmp, "{\"index\":%" PRIu64 ",\"record\":", r->index);
    json_put_disp(&e->tmp, gr_sb_str(&line));
    gr_sb_putc(&e->tmp, '}');
    gr_sb_free(&line);
    return gr_sb_str(&e->tmp);
}

static void do_switch(ex *e, const gr_record *r, uint64_t ns)
{
    ex_track *o = track(e, r->tid, r->gid);
    size_t oi = o->id - 1;
    ex_track *g = track(e, r->tid, r->target);
    o = &e->tracks[oi]; /* track() may have moved the table */
    e->st.switches++;
    if (e->fmt != GR_EXPORT_CHROME || !e->tracks_out)
        return;
    const char *verb = r->tag == GR_THROW ? "throw" : "switch";
    size_t id = ++e->nflow;
    char name[96];
    /* An instant event on each side carries the record; the flow's start
     * binds to the origin's innermost open slice, its end to the target's
     * innermost open slice (bp "e"), or, when the target has none yet (a
     * new greenlet), to its next slice.  No zero-length slices: viewers
     * disagree on how those nest among B/E slices of the same time. */
    snprintf(name, sizeof name, "%s to g%" PRIu64, verb, r->target);
    instant(e, o, ns, "switch", name, record_args(e, r));
    gr_sb *l = chrome_begin(e, "s", o, ns);
    gr_sb_printf(l, ",\"cat\":\"switch\",\"name\":\"%s\",\"id\":%zu", verb, id);
    chrome_end(e);
    snprintf(name, sizeof name, "resumed by %s from g%" PRIu64, verb, r->gid);
    instant(e, g, ns, "switch", name, record_args(e, r));
    l = chrome_begin(e, "f", g, ns);
    gr_sb_printf(l, "%s,\"cat\":\"switch\",\"name\":\"%s\",\"id\":%zu",
                 g->nopen ? ",\"bp\":\"e\"" : "", verb, id);
    chrome_end(e);
}

static void walk(ex *e)
{
    const gr_trace *t = e->t;
    for (size_t i = 0; i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        uint64_t ns = e->ns[i];
        ex_track *tr;
        merged_tick(e, r->tid, ns);
        switch (r->tag) {
        case GR_GREENLET:
            tr = track(e, r->tid, r->gid);
            if (r->flags & 1)
                tr->main = 1;
            if (r->depth && tr->nopen == 0 && tr->frames == 0) {
                const uint32_t *ids = gr_record_stack(t, r);
                tr->run = ids[0];
                for (uint32_t k = 0; k < r->depth; k++)
                    open_frame(e, tr, ids[k], ns);
            }
            break;
        case GR_CALL:
        case GR_C_CALL:
            tr = track(e, r->tid, r->gid);
            if (!tr->run && r->tag == GR_CALL)
                tr->run = r->code;
            open_frame(e, tr, r->code, ns);
            merged_running(e, r->tid, r->gid);
            break;
        case GR_RETURN:
        case GR_C_RETURN:
        case GR_C_EXCEPTION:
            return_frame(e, track(e, r->tid, r->gid), r, ns);
            merged_running(e, r->tid, r->gid);
            break;
        case GR_SWITCH:
        case GR_THROW:
            do_switch(e, r, ns);
            merged_running(e, r->tid, r->target);
            break;
        case GR_MARK: {
            tr = track(e, r->tid, r->gid);
            merged_running(e, r->tid, r->gid);
            e->st.marks++;
            if (e->fmt != GR_EXPORT_CHROME || !e->tracks_out)
                break;
            size_t n = 0;
            const uint8_t *s = gr_trace_string(t, r->label, &n);
            gr_sb name;
            gr_sb_init(&name);
            gr_sb_puts(&name, "mark: ");
            gr_sb_escape(&name, s, n, 0);
            instant(e, tr, ns, "mark", gr_sb_str(&name), record_args(e, r));
            gr_sb_free(&name);
            break;
        }
        case GR_DEAD:
            tr = track(e, r->tid, r->gid);
            close_all(e, tr, ns);
            instant(e, tr, ns, "greenlet", "dead", NULL);
            break;
        case GR_START:
            instant(e, track(e, r->tid, r->gid), ns, "recording", "start", NULL);
            merged_running(e, r->tid, r->gid);
            break;
        case GR_STOP:
            instant(e, track(e, r->tid, r->gid), ns, "recording", "stop", NULL);
            break;
        default: /* THREAD, STACK, INSTR: no timeline event */
            break;
        }
    }
    for (size_t k = 0; k < e->ntracks; k++)
        close_all(e, &e->tracks[k], e->end_ns);
}

/* Times of the records (see export.h). */
static void compute_times(ex *e, const gr_times *tm)
{
    const gr_trace *t = e->t;
    e->ns = gr_xrealloc(NULL, (t->nrecs ? t->nrecs : 1) * sizeof *e->ns);
    uint64_t cur = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        uint64_t v;
        if (tm && i < tm->n)
            v = cur + tm->dt[i];
        else
            v = i == 0 ? 0 : cur + 1000; /* record order: record i at i us */
        if (i > 0 && v <= cur)
            v = cur + 1;
        if (v < cur) /* overflow: keep the order */
            v = cur + 1;
        e->ns[i] = cur = v;
    }
    e->end_ns = t->nrecs ? e->ns[t->nrecs - 1] : 0;
}

static void chrome_violations(ex *e, const gr_check_result *res)
{
    for (size_t i = 0; res && i < res->nv; i++) {
        const gr_violation *v = &res->v[i];
        size_t k;
        ex_track *tr = NULL;
        if (v->tid && gr_idmap_get(&e->map, v->tid, v->gid, &k))
            tr = &e->tracks[k];
        uint64_t ns = v->index < e->t->nrecs ? e->ns[v->index] : e->end_ns;
        gr_sb name, args;
        gr_sb_init(&name);
        gr_sb_init(&args);
        gr_sb_printf(&name, "violation: %s", gr_rule_name(v->rule));
        gr_sb_printf(&args, "{\"rule\":\"%s\",\"index\":%" PRIu64 ",\"tid\":%" PRIu64
                            ",\"gid\":%" PRIu64 ",\"message\":",
                     gr_rule_name(v->rule), v->index, v->tid, v->gid);
        json_put_disp(&args, v->message);
        gr_sb_putc(&args, '}');
        instant(e, tr, ns, "violation", gr_sb_str(&name), gr_sb_str(&args));
        gr_sb_free(&name);
        gr_sb_free(&args);
        e->st.violations++;
    }
}

static void clock_text(gr_sb *sb, const ex *e)
{
    if (e->st.timed)
        gr_sb_puts(sb, "side channel (CLOCK_MONOTONIC ns between records; equal readings spread "
                       "1 ns apart)");
    else
        gr_sb_puts(sb, "event order: 1 us per record (no side channel; record with --times "
                       "for real time)");
}

/* The merged profile's name for thread th. */
static void merged_name(gr_sb *sb, const ex_thr *th)
{
    gr_sb_printf(sb, "thread %" PRIu64 ": all greenlets merged", th->tid);
}

/* Chrome: thread th's merged view as a CPU profile on track id `tid`: a
 * "Profile" and a "ProfileChunk" event (the form of Chrome's own
 * performance traces), one sample per node with time of its own, each
 * lasting that time. */
static void chrome_merged(ex *e, const ex_thr *th, size_t tid, size_t id)
{
    size_t n;
    size_t *order = merged_order(e, th->root, &n);
    if (!n) {
        free(order);
        return;
    }
    e->st.merged++;
    e->st.nodes += n - 1;
    gr_sb *l = &e->line;
    ex_track fake;
    memset(&fake, 0, sizeof fake);
    fake.id = tid;
    l = chrome_begin(e, "M", &fake, 0);
    gr_sb_puts(l, ",\"cat\":\"__metadata\",\"name\":\"thread_name\",\"args\":{\"name\":");
    gr_sb_reset(&e->tmp);
    merged_name(&e->tmp, th);
    json_put_disp(l, gr_sb_str(&e->tmp));
    gr_sb_putc(l, '}');
    chrome_end(e);
    l = chrome_begin(e, "P", &fake, 0);
    gr_sb_printf(l, ",\"cat\":\"disabled-by-default-v8.cpu_profiler\",\"name\":\"Profile\","
                    "\"id\":\"0x%zx\",\"args\":{\"data\":{\"startTime\":0}}", id);
    chrome_end(e);
    l = chrome_begin(e, "P", &fake, 0);
    gr_sb_printf(l, ",\"cat\":\"disabled-by-default-v8.cpu_profiler\",\"name\":\"ProfileChunk\","
                    "\"id\":\"0x%zx\",\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":[", id);
    fwrite(l->s, 1, l->len, e->out);
    for (size_t k = 0; k < n; k++) {
        const ex_node *nd = &e->nodes[order[k]];
        gr_sb_reset(l);
        gr_sb_printf(l, "%s\n{\"id\":%zu,", k ? "," : "", order[k] + 1);
        if (nd->parent != NO_NODE)
            gr_sb_printf(l, "\"parent\":%zu,", nd->parent + 1);
        gr_sb_puts(l, "\"callFrame\":{\"functionName\":");
        const gr_code *c = nd->code ? gr_trace_code(e->t, nd->code) : NULL;
        gr_sb_reset(&e->tmp);
        if (nd->code)
            qualname(&e->tmp, e->t, nd->code);
        else
            gr_sb_puts(&e->tmp, "(root)");
        json_put_disp(l, gr_sb_str(&e->tmp));
        gr_sb_puts(l, ",\"url\":");
        size_t fn = 0;
        const uint8_t *f = c && c->kind == GR_CODE_PY ? gr_trace_string(e->t, c->file, &fn) : NULL;
        if (f)
            json_put_str(l, f, fn);
        else
            gr_sb_puts(l, "\"\"");
        /* Chrome's lines count from 0 */
        gr_sb_printf(l, ",\"lineNumber\":%" PRId64 ",\"columnNumber\":-1,\"scriptId\":\"0\"}}",
                     c && c->kind == GR_CODE_PY && c->line ? (int64_t)c->line - 1 : (int64_t)-1);
        fwrite(l->s, 1, l->len, e->out);
    }
    /* samples: each node with time of its own, lasting it; then the root
     * twice, which ends the last one */
    gr_sb_reset(l);
    gr_sb_puts(l, "\n],\"samples\":[");
    int first = 1;
    for (size_t k = 0; k < n; k++)
        if (e->nodes[order[k]].self) {
            gr_sb_printf(l, "%s%zu", first ? "" : ",", order[k] + 1);
            first = 0;
        }
    gr_sb_printf(l, "%s%zu,%zu]},\"timeDeltas\":[0", first ? "" : ",", th->root + 1, th->root + 1);
    for (size_t k = 0; k < n; k++)
        if (e->nodes[order[k]].self) {
            gr_sb_putc(l, ',');
            put_us(l, e->nodes[order[k]].self);
        }
    gr_sb_puts(l, ",0],\"endTime\":");
    put_us(l, e->nodes[th->root].total);
    gr_sb_puts(l, "}}}");
    fwrite(l->s, 1, l->len, e->out);
    free(order);
}

static void chrome_finish(ex *e, const char *source)
{
    gr_sb *l;
    for (size_t k = 0; e->merged_out && k < e->nthr; k++)
        chrome_merged(e, &e->thr[k], e->ntracks + 1 + k, k + 1);
    for (size_t k = 0; e->tracks_out && k < e->ntracks; k++) {
        ex_track *tr = &e->tracks[k];
        l = chrome_begin(e, "M", tr, 0);
        gr_sb_puts(l, ",\"cat\":\"__metadata\",\"name\":\"thread_name\",\"args\":{\"name\":");
        gr_sb_reset(&e->tmp);
        track_name(&e->tmp, e, tr);
        json_put_disp(l, gr_sb_str(&e->tmp));
        gr_sb_puts(l, "}");
        chrome_end(e);
        l = chrome_begin(e, "M", tr, 0);
        gr_sb_printf(l, ",\"cat\":\"__metadata\",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%zu}", tr->id);
        chrome_end(e);
    }
    /* The process's name, and what the object form's otherData held, in
     * its args (viewers read "name" and leave the rest). */
    l = chrome_begin(e, "M", NULL, 0);
    gr_sb_puts(l, ",\"cat\":\"__metadata\",\"name\":\"process_name\",\"args\":{\"name\":");
    gr_sb_reset(&e->tmp);
    gr_sb_puts(&e->tmp, "greenreplay ");
    gr_sb_puts(&e->tmp, source);
    json_put_cstr(l, gr_sb_str(&e->tmp));
    gr_sb_printf(l, ",\"greenreplay\":{\"exporter\":\"greenreplay " GR_TOOL_VERSION "\",\"source\":");
    json_put_cstr(l, source);
    gr_sb_puts(l, ",\"clock\":");
    gr_sb_reset(&e->tmp);
    clock_text(&e->tmp, e);
    json_put_disp(l, gr_sb_str(&e->tmp));
    gr_sb_printf(l, ",\"time_unit\":\"%s\",\"records\":%zu,\"tracks\":%zu,\"merged_profiles\":%zu,"
                    "\"violations\":%zu,\"returns_without_call\":%zu,\"closed_at_end\":%zu}}",
                 e->st.timed ? "ns" : "us", e->t->nrecs, e->tracks_out ? e->ntracks : 0,
                 e->st.merged, e->st.violations, e->st.unmatched, e->st.closed_at_end);
    chrome_end(e);
    fputs("\n]\n", e->out);
}

/* speedscope: the evented profile of a merged tree (order: merged_order):
 * a node opens where its parent's earlier children end, its children
 * follow one another, its own time comes last. */
static void merged_events(ex *e, const ex_thr *th, const size_t *order, size_t n)
{
    /* start time of each node in order; a stack of the open ones */
    size_t *open = gr_xrealloc(NULL, (n ? n : 1) * sizeof *open);
    uint64_t *end = gr_xrealloc(NULL, (n ? n : 1) * sizeof *end);
    size_t depth = 0;
    uint64_t t = 0; /* ns: where the next node opens */
    int firstev = 1;
    gr_sb *l = &e->line;
    for (size_t k = 0; k < n; k++) {
        const ex_node *nd = &e->nodes[order[k]];
        /* close the open nodes that are not its ancestors */
        while (depth && open[depth - 1] != nd->parent) {
            depth--;
            if (open[depth] != th->root) {
                gr_sb_reset(l);
                gr_sb_printf(l, "%s\n{\"type\":\"C\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
                             firstev ? "" : ",", e->nodes[open[depth]].code - 1,
                             e->st.timed ? end[depth] : end[depth] / 1000);
                firstev = 0;
                fwrite(l->s, 1, l->len, e->out);
            }
            t = end[depth];
        }
        open[depth] = order[k];
        end[depth] = t + nd->total;
        if (order[k] != th->root) {
            gr_sb_reset(l);
            gr_sb_printf(l, "%s\n{\"type\":\"O\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
                         firstev ? "" : ",", nd->code - 1, e->st.timed ? t : t / 1000);
            firstev = 0;
            fwrite(l->s, 1, l->len, e->out);
        }
        depth++;
    }
    while (depth) {
        depth--;
        if (open[depth] != th->root) {
            gr_sb_reset(l);
            gr_sb_printf(l, "%s\n{\"type\":\"C\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
                         firstev ? "" : ",", e->nodes[open[depth]].code - 1,
                         e->st.timed ? end[depth] : end[depth] / 1000);
            firstev = 0;
            fwrite(l->s, 1, l->len, e->out);
        }
    }
    free(open);
    free(end);
}

static void speedscope_write(ex *e, const char *source)
{
    const gr_trace *t = e->t;
    gr_sb *l = &e->line;
    gr_sb_reset(l);
    gr_sb_puts(l, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
                  "\"exporter\":\"greenreplay " GR_TOOL_VERSION "\",\n\"name\":");
    gr_sb_reset(&e->tmp);
    gr_sb_puts(&e->tmp, source);
    gr_sb_puts(&e->tmp, " (");
    clock_text(&e->tmp, e);
    gr_sb_putc(&e->tmp, ')');
    json_put_disp(l, gr_sb_str(&e->tmp));
    gr_sb_puts(l, ",\n\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[");
    fwrite(l->s, 1, l->len, e->out);
    for (size_t c = 1; c <= t->ncodes; c++) {
        const gr_code *code = &t->codes[c];
        gr_sb_reset(l);
        gr_sb_puts(l, c > 1 ? ",\n{\"name\":" : "\n{\"name\":");
        gr_sb_reset(&e->tmp);
        qualname(&e->tmp, t, (uint32_t)c);
        json_put_disp(l, gr_sb_str(&e->tmp));
        if (code->kind == GR_CODE_PY) {
            size_t n = 0;
            const uint8_t *f = gr_trace_string(t, code->file, &n);
            if (f) {
                gr_sb_puts(l, ",\"file\":");
                json_put_str(l, f, n);
            }
            gr_sb_printf(l, ",\"line\":%" PRIu64, code->line);
        }
        gr_sb_putc(l, '}');
        fwrite(l->s, 1, l->len, e->out);
    }
    fputs("\n]},\n\"profiles\":[", e->out);
    int first = 1;
    for (size_t k = 0; e->merged_out && k < e->nthr; k++) {
        const ex_thr *th = &e->thr[k];
        size_t n;
        size_t *order = merged_order(e, th->root, &n);
        if (n) {
            e->st.merged++;
            e->st.nodes += n - 1;
            gr_sb_reset(l);
            gr_sb_puts(l, first ? "\n{\"type\":\"evented\",\"name\":" : ",\n{\"type\":\"evented\",\"name\":");
            first = 0;
            gr_sb_reset(&e->tmp);
            merged_name(&e->tmp, th);
            json_put_disp(l, gr_sb_str(&e->tmp));
            uint64_t end = e->nodes[th->root].total;
            gr_sb_printf(l, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"events\":[",
                         e->st.timed ? "nanoseconds" : "microseconds", e->st.timed ? end : end / 1000);
            fwrite(l->s, 1, l->len, e->out);
            merged_events(e, th, order, n);
            fputs("\n]}", e->out);
        }
        free(order);
    }
    for (size_t k = 0; e->tracks_out && k < e->ntracks; k++) {
        ex_track *tr = &e->tracks[k];
        if (tr->ev.len == 0)
            continue;
        gr_sb_reset(l);
        gr_sb_puts(l, first ? "\n{\"type\":\"evented\",\"name\":" : ",\n{\"type\":\"evented\",\"name\":");
        first = 0;
        gr_sb_reset(&e->tmp);
        track_name(&e->tmp, e, tr);
        json_put_disp(l, gr_sb_str(&e->tmp));
        gr_sb_printf(l, ",\"unit\":\"%s\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64
                        ",\"events\":[",
                     e->st.timed ? "nanoseconds" : "microseconds", tr->first_at, tr->last_at);
        fwrite(l->s, 1, l->len, e->out);
        fwrite(tr->ev.s, 1, tr->ev.len, e->out);
        fputs("\n]}", e->out);
        e->st.tracks++;
    }
    fputs("\n]}\n", e->out);
}

int gr_export(FILE *out, enum gr_export_format fmt, const gr_trace *t, const gr_times *times,
              const gr_check_result *res, const char *source, gr_export_stats *st)
{
    return gr_export_view(out, fmt, GR_EXPORT_ALL, t, times, res, source, st);
}

int gr_export_view(FILE *out, enum gr_export_format fmt, enum gr_export_view view,
                   const gr_trace *t, const gr_times *times, const gr_check_result *res,
                   const char *source, gr_export_stats *st)
{
    ex e;
    memset(&e, 0, sizeof e);
    e.out = out;
    e.fmt = fmt;
    e.tracks_out = view != GR_EXPORT_MERGED;
    e.merged_out = view != GR_EXPORT_GREENLETS;
    e.t = t;
    e.first = 1;
    e.st.timed = times != NULL;
    if (!source)
        source = t->name ? t->name : "trace";
    compute_times(&e, times);
    /* Chrome: the JSON array form, which speedscope also opens under a
     * *.chrome.json name (it reads such a file as an array of events) */
    if (fmt == GR_EXPORT_CHROME)
        fputs("[", out);
    walk(&e);
    merged_totals(&e);
    if (fmt == GR_EXPORT_CHROME) {
        chrome_violations(&e, res);
        e.st.tracks = e.tracks_out ? e.ntracks : 0;
        chrome_finish(&e, source);
    } else {
        e.st.violations = res ? res->nv : 0; /* the same count as Chrome's */
        speedscope_write(&e, source);
    }
    for (size_t i = 0; res && i < res->nv; i++)
        e.st.failing += !res->v[i].allowed && !res->v[i].advisory;
    if (st)
        *st = e.st;
    for (size_t k = 0; k < e.ntracks; k++) {
        free(e.tracks[k].open);
        free(e.tracks[k].open_node);
        gr_sb_free(&e.tracks[k].ev);
    }
    free(e.tracks);
    free(e.nodes);
    free(e.thr);
    gr_idmap_free(&e.node_map);
    gr_idmap_free(&e.thr_map);
    free(e.ns);
    gr_idmap_free(&e.map);
    gr_sb_free(&e.line);
    gr_sb_free(&e.tmp);
    return (fflush(out) != 0 || ferror(out)) ? -1 : 0;
}

/* ---- the command -------------------------------------------------------- */

const char gr_export_usage[] =
    "usage: greenreplay export --format chrome|speedscope TRACE [-o OUT]\n"
    "                          [--view all|merged|greenlets]\n"
    "                          [--times FILE | --no-times] [--no-check]\n"
    "\n"
    "Write trace TRACE as profiles and a timeline that viewers open: first, per\n"
    "thread, the merged view, where the time went summed over its greenlets\n"
    "(\"thread T: all greenlets merged\"; its size grows with the distinct\n"
    "stacks), then one track per (thread, greenlet), named \"thread T greenlet G\n"
    "(run QUALNAME)\":\n"
    "  chrome      Chrome Trace Event JSON, for Perfetto UI (ui.perfetto.dev, or\n"
    "              its offline build) and chrome://tracing: calls as slices\n"
    "              (B/E events, nested per track; a greenlet's frames stay open\n"
    "              while it is switched out), switches and throws as flow arrows\n"
    "              from the origin's open slice to the target's (and an instant\n"
    "              event on each side), marks and the checker's violations\n"
    "              (rule and message) as instant events\n"
    "              and the merged view as a CPU profile per thread (what\n"
    "              speedscope shows of this file, under any name)\n"
    "  speedscope  speedscope's file format: evented profiles, the merged ones\n"
    "              first, frames shared; open it with speedscope (`Browse` or\n"
    "              drag and drop) as NAME.json or NAME.speedscope.json\n"
    "Timestamps come from the side channel TRACE.times (record --times) when it\n"
    "exists, else from the record order, 1 us per record (the output says which).\n"
    "A return that matches no open frame is left out (Chrome: an instant event\n"
    "\"return without call\"); frames open at a greenlet's death or at the end of\n"
    "the trace are closed there.\n"
    "\n"
    "options:\n"
    "  --format F     chrome or speedscope (required, unless OUT ends in\n"
    "                 .chrome.json or .speedscope.json, the names speedscope\n"
    "                 reads each by; the other name is refused)\n"
    "  --view V       all (default), merged (only the merged view: small),\n"
    "                 greenlets (only the tracks per greenlet)\n"
    "  -o, --output OUT  file to write (default: stdout, also for -); one that\n"
    "                 cannot be written is refused before TRACE is read\n"
    "                 (\"greenreplay: export: -o OUT: cannot write it: CAUSE\")\n"
    "  --times FILE   side channel to take the times from (default TRACE.times\n"
    "                 when it exists)\n"
    "  --no-times     time by record order even when TRACE.times exists\n"
    "  --no-check     do not run the checker (no violation events)\n"
    "  -h, --help     show this help\n"
    "\n"
    "A summary goes to stderr: merged profiles and their stack nodes, tracks\n"
    "(speedscope: profiles), slices, switches (switches and throws), marks,\n"
    "the checker's findings (and how many are failing), returns without call,\n"
    "frames closed at end, and where the times came from; and a note when OUT\n"
    "is too big for a browser.\n"

    "exit status: 0 written (violations do not change it), 2 missing or\n"
    "corrupt trace or side channel, write error or bad usage.\n"
    "\n"
    "EXAMPLES\n"
    "  greenreplay export -o run.speedscope.json run.grt\n"
    "  greenreplay export --view merged -o run.chrome.json run.grt   # small\n"
    "  greenreplay export --format chrome -o run.json run.grt        # Perfetto\n";

/* Past this size a browser viewer (speedscope, Perfetto UI's JSON import)
 * usually fails to open a file. */
#define GR_EXPORT_BROWSER_MAX ((uint64_t)512 << 20)

static int name_ends(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && strcmp(name + n - k, suffix) == 0;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("greenreplay: export: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (`greenreplay export --help` shows the usage)\n", stderr);
    return 2;
}

/* export's closing line on stderr, and a note when the file is too big
 * for a browser. */
static void export_summary(const char *out_name, enum gr_export_format fmt, enum gr_export_view view,
                           const gr_export_stats *sp, const char *times_name)
{
    const gr_export_stats st = *sp;
    int have_times = times_name != NULL;
    fprintf(stderr,
            "greenreplay: export: %s: %zu merged profile%s (%zu stack node%s), %zu %s, %zu "
            "slice%s, %zu switch%s, %zu mark%s, %zu finding%s (%zu failing), %zu return%s without "
            "call, %zu "
            "frame%s closed at end; time: %s\n",
            out_name ? out_name : "stdout", st.merged, st.merged == 1 ? "" : "s", st.nodes,
            st.nodes == 1 ? "" : "s", st.tracks,
            fmt == GR_EXPORT_CHROME ? (st.tracks == 1 ? "track" : "tracks")
                                    : (st.tracks == 1 ? "profile" : "profiles"),
            st.slices, st.slices == 1 ? "" : "s", st.switches, st.switches == 1 ? "" : "es",
            st.marks, st.marks == 1 ? "" : "s", st.violations, st.violations == 1 ? "" : "s",
            st.failing, st.unmatched, st.unmatched == 1 ? "" : "s", st.closed_at_end,
            st.closed_at_end == 1 ? "" : "s",
            have_times ? times_name : "record order (1 us per record)");
    /* A timeline a browser cannot open: say so, and what to do. */
    struct stat big;
    if (out_name && view != GR_EXPORT_MERGED && stat(out_name, &big) == 0 &&
        (uint64_t)big.st_size > GR_EXPORT_BROWSER_MAX)
        fprintf(stderr, "greenreplay: export: note: %s is %" PRIu64 " MiB, more than a browser "
                        "opens (about %d MiB); `--view merged` writes only the merged view, "
                        "whose size grows with the distinct stacks\n",
                out_name, (uint64_t)big.st_size >> 20, (int)(GR_EXPORT_BROWSER_MAX >> 20));
}

int gr_cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"times", required_argument, NULL, 't'},
        {"no-times", no_argument, NULL, 'T'},
        {"no-check", no_argument, NULL, 'n'},
        {"view", required_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format = NULL, *output = NULL, *times_path = NULL, *view_name = "all";
    int no_times = 0, no_check = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': output = optarg; break;
        case 't': times_path = optarg; break;
        case 'T': no_times = 1; break;
        case 'n': no_check = 1; break;
        case 'v': view_name = optarg; break;
        case 'h': fputs(gr_export_usage, stdout); return 0;
        case ':': return usage_error("option %s needs an argument", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    enum gr_export_format fmt;
    enum gr_export_view view;
    if (strcmp(view_name, "all") == 0)
        view = GR_EXPORT_ALL;
    else if (strcmp(view_name, "merged") == 0)
        view = GR_EXPORT_MERGED;
    else if (strcmp(view_name, "greenlets") == 0)
        view = GR_EXPORT_GREENLETS;
    else
        return usage_error("unknown view '%s' (all, merged or greenlets)", view_name);
    /* The name speedscope reads a file by gives the format when none is
     * named. */
    int named_chrome = output && name_ends(output, ".chrome.json");
    int named_scope = output && name_ends(output, ".speedscope.json");
    if (!format && (named_chrome || named_scope))
        format = named_chrome ? "chrome" : "speedscope";
    if (!format)
        return usage_error("%s", "--format chrome|speedscope is required (or -o NAME.chrome.json "
                                 "or NAME.speedscope.json)");
    if (strcmp(format, "chrome") == 0)
        fmt = GR_EXPORT_CHROME;
    else if (strcmp(format, "speedscope") == 0)
        fmt = GR_EXPORT_SPEEDSCOPE;
    else
        return usage_error("unknown format '%s' (chrome or speedscope)", format);
    if (argc - optind != 1)
        return usage_error("%s", "export needs exactly one TRACE");
    if ((fmt == GR_EXPORT_CHROME && named_scope) || (fmt == GR_EXPORT_SPEEDSCOPE && named_chrome))
        return usage_error("-o %s: speedscope reads a file by that name as the other format "
                           "(name it *.json, or drop --format)", output);
    if (times_path && no_times)
        return usage_error("%s", "--times and --no-times exclude each other");
    const char *path = argv[optind];
    const char *out_name = output && strcmp(output, "-") != 0 ? output : NULL;
    int oe = out_name ? gr_outfile_check(out_name) : 0;
    if (oe) { /* refused before the trace is read, like check --junit/--html */
        fprintf(stderr, "greenreplay: export: -o %s: cannot write it: %s\n", out_name, strerror(oe));
        return 2;
    }

    int rc = 2;
    gr_trace t;
    gr_times tm;
    memset(&tm, 0, sizeof tm);
    gr_check_result res;
    memset(&res, 0, sizeof res);
    int have_times = 0;
    gr_sb side;
    gr_sb_init(&side);
    FILE *f = NULL;
    if (gr_trace_load(&t, path) != GR_READ_OK) {
        fprintf(stderr, "greenreplay: %s\n", t.err.msg);
        goto done;
    }
    if (!no_times) {
        struct stat sbuf;
        if (times_path)
            gr_sb_puts(&side, times_path);
        else
            gr_sb_printf(&side, "%s.times", path);
        if (times_path || stat(gr_sb_str(&side), &sbuf) == 0) {
            if (gr_times_load(&tm, gr_sb_str(&side)) != GR_READ_OK) {
                fprintf(stderr, "greenreplay: %s (export --no-times ignores it)\n", tm.err.msg);
                goto done;
            }
            have_times = 1;
        }
    }
    if (have_times && tm.n != t.nrecs)
        fprintf(stderr, "greenreplay: export: warning: %s has %zu times for %zu records; %s\n",
                gr_sb_str(&side), tm.n, t.nrecs,
                tm.n < t.nrecs ? "the records past its end get 1 us each"
                               : "the extra times are ignored");
    if (!no_check)
        gr_check_run(&t, &res);
    f = out_name ? fopen(out_name, "w") : stdout;
    if (!f) {
        fprintf(stderr, "greenreplay: export: -o %s: cannot write it: %s\n", out_name,
                strerror(errno));
        goto done;
    }
    gr_export_stats st;
    int wrc = gr_export_view(f, fmt, view, &t, have_times ? &tm : NULL, no_check ? NULL : &res,
                             path, &st);
    if (f != stdout && fclose(f) != 0)
        wrc = -1;
    f = NULL;
    if (wrc < 0) {
        if (out_name)
            fprintf(stderr, "greenreplay: export: -o %s: writing the export failed\n", out_name);
        else
            fputs("greenreplay: export: stdout: writing the export failed\n", stderr);
        goto done;
    }
    export_summary(out_name, fmt, view, &st, have_times ? gr_sb_str(&side) : NULL);
    rc = 0;
done:
    gr_sb_free(&side);
    gr_check_result_free(&res);
    gr_times_free(&tm);
    gr_trace_free(&t);
    return rc;
}
