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
    size_t nopen, cap_open;
    size_t frames;        /* frames opened on this track */
    uint64_t first_at, last_at; /* speedscope: first and last event time */
    gr_sb ev;             /* speedscope: this profile's events, comma-separated */
} ex_track;

typedef struct ex {
    FILE *out;
    enum gr_export_format fmt;
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
    tr->open = gr_xgrow(tr->open, &tr->cap_open, tr->nopen + 1, sizeof *tr->open);
    tr->open[tr->nopen++] = code;
    tr->frames++;
    e->st.slices++;
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
    if (e->fmt != GR_EXPORT_CHROME)
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
        if (e->fmt == GR_EXPORT_CHROME) {
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
    if (e->fmt != GR_EXPORT_CHROME)
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
            break;
        case GR_RETURN:
        case GR_C_RETURN:
        case GR_C_EXCEPTION:
            return_frame(e, track(e, r->tid, r->gid), r, ns);
            break;
        case GR_SWITCH:
        case GR_THROW:
            do_switch(e, r, ns);
            break;
        case GR_MARK: {
            tr = track(e, r->tid, r->gid);
            e->st.marks++;
            if (e->fmt != GR_EXPORT_CHROME)
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

static void chrome_finish(ex *e, const char *source)
{
    gr_sb *l;
    for (size_t k = 0; k < e->ntracks; k++) {
        ex_track *tr = &e->tracks[k];
        l = chrome_begin(e, "M", tr, 0);
        gr_sb_puts(l, ",\"name\":\"thread_name\",\"args\":{\"name\":");
        gr_sb_reset(&e->tmp);
        track_name(&e->tmp, e, tr);
        json_put_disp(l, gr_sb_str(&e->tmp));
        gr_sb_puts(l, "}");
        chrome_end(e);
        l = chrome_begin(e, "M", tr, 0);
        gr_sb_printf(l, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%zu}", tr->id);
        chrome_end(e);
    }
    l = chrome_begin(e, "M", NULL, 0);
    gr_sb_puts(l, ",\"name\":\"process_name\",\"args\":{\"name\":");
    gr_sb_reset(&e->tmp);
    gr_sb_puts(&e->tmp, "greenreplay ");
    gr_sb_puts(&e->tmp, source);
    json_put_cstr(l, gr_sb_str(&e->tmp));
    gr_sb_puts(l, "}");
    chrome_end(e);

    l = &e->line;
    gr_sb_reset(l);
    gr_sb_printf(l, "\n],\n\"displayTimeUnit\":\"%s\",\n\"otherData\":{\"exporter\":\"greenreplay "
                    GR_TOOL_VERSION "\",\"source\":",
                 e->st.timed ? "ns" : "ms");
    json_put_cstr(l, source);
    gr_sb_puts(l, ",\"clock\":");
    gr_sb_reset(&e->tmp);
    clock_text(&e->tmp, e);
    json_put_disp(l, gr_sb_str(&e->tmp));
    gr_sb_printf(l, ",\"records\":%zu,\"tracks\":%zu,\"violations\":%zu,\"returns_without_call\":"
                    "%zu,\"closed_at_end\":%zu}}\n",
                 e->t->nrecs, e->ntracks, e->st.violations, e->st.unmatched,
                 e->st.closed_at_end);
    fwrite(l->s, 1, l->len, e->out);
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
    for (size_t k = 0; k < e->ntracks; k++) {
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
    ex e;
    memset(&e, 0, sizeof e);
    e.out = out;
    e.fmt = fmt;
    e.t = t;
    e.first = 1;
    e.st.timed = times != NULL;
    if (!source)
        source = t->name ? t->name : "trace";
    compute_times(&e, times);
    if (fmt == GR_EXPORT_CHROME)
        fputs("{\"traceEvents\":[", out);
    walk(&e);
    if (fmt == GR_EXPORT_CHROME) {
        chrome_violations(&e, res);
        e.st.tracks = e.ntracks;
        chrome_finish(&e, source);
    } else {
        speedscope_write(&e, source);
    }
    if (st)
        *st = e.st;
    for (size_t k = 0; k < e.ntracks; k++) {
        free(e.tracks[k].open);
        gr_sb_free(&e.tracks[k].ev);
    }
    free(e.tracks);
    free(e.ns);
    gr_idmap_free(&e.map);
    gr_sb_free(&e.line);
    gr_sb_free(&e.tmp);
    return (fflush(out) != 0 || ferror(out)) ? -1 : 0;
}

/* ---- the command -------------------------------------------------------- */

const char gr_export_usage[] =
    "usage: greenreplay export --format chrome|speedscope TRACE [-o OUT]\n"
    "                          [--times FILE | --no-times] [--no-check]\n"
    "\n"
    "Write trace TRACE as a timeline that trace viewers open, with one track per\n"
    "(thread, greenlet), named \"thread T greenlet G (run QUALNAME)\":\n"
    "  chrome      Chrome Trace Event JSON, for Perfetto UI (ui.perfetto.dev, or\n"
    "              its offline build) and chrome://tracing: calls as slices\n"
    "              (B/E events, nested per track; a greenlet's frames stay open\n"
    "              while it is switched out), switches and throws as flow arrows\n"
    "              from the origin's open slice to the target's (and an instant\n"
    "              event on each side), marks and the checker's violations\n"
    "              (rule and message) as instant events\n"
    "  speedscope  speedscope's file format: one evented profile per greenlet,\n"
    "              frames shared; open it with speedscope (`Browse` or drag and\n"
    "              drop)\n"
    "Timestamps come from the side channel TRACE.times (record --times) when it\n"
    "exists, else from the record order, 1 us per record (the output says which).\n"
    "A return that matches no open frame is left out (Chrome: an instant event\n"
    "\"return without call\"); frames open at a greenlet's death or at the end of\n"
    "the trace are closed there.\n"
    "\n"
    "options:\n"
    "  --format F     chrome or speedscope (required)\n"
    "  -o, --output OUT  file to write (default: stdout, also for -); one that\n"
    "                 cannot be written is refused before TRACE is read\n"
    "                 (\"greenreplay: export: -o OUT: cannot write it: CAUSE\")\n"
    "  --times FILE   side channel to take the times from (default TRACE.times\n"
    "                 when it exists)\n"
    "  --no-times     time by record order even when TRACE.times exists\n"
    "  --no-check     do not run the checker (no violation events)\n"
    "  -h, --help     show this help\n"
    "\n"
    "A summary goes to stderr: tracks (speedscope: profiles), slices, switches\n"
    "(switches and throws), marks, violations, returns without call, frames\n"
    "closed at end, and where the times came from.\n"
    "exit status: 0 written (violations do not change it), 2 missing or\n"
    "corrupt trace or side channel, write error or bad usage.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("greenreplay: export: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (`greenreplay export --help` shows the usage)\n", stderr);
    return 2;
}

int gr_cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"times", required_argument, NULL, 't'},
        {"no-times", no_argument, NULL, 'T'},
        {"no-check", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format = NULL, *output = NULL, *times_path = NULL;
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
        case 'h': fputs(gr_export_usage, stdout); return 0;
        case ':': return usage_error("option %s needs an argument", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    enum gr_export_format fmt;
    if (!format)
        return usage_error("%s", "--format chrome|speedscope is required");
    if (strcmp(format, "chrome") == 0)
        fmt = GR_EXPORT_CHROME;
    else if (strcmp(format, "speedscope") == 0)
        fmt = GR_EXPORT_SPEEDSCOPE;
    else
        return usage_error("unknown format '%s' (chrome or speedscope)", format);
    if (argc - optind != 1)
        return usage_error("%s", "export needs exactly one TRACE");
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
    int wrc = gr_export(f, fmt, &t, have_times ? &tm : NULL, no_check ? NULL : &res, path, &st);
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
    fprintf(stderr,
            "greenreplay: export: %s: %zu %s, %zu slice%s, %zu switch%s, %zu mark%s, %zu "
            "violation%s, %zu return%s without call, %zu frame%s closed at end; time: %s\n",
            out_name ? out_name : "stdout", st.tracks,
            fmt == GR_EXPORT_CHROME ? (st.tracks == 1 ? "track" : "tracks")
                                    : (st.tracks == 1 ? "profile" : "profiles"),
            st.slices, st.slices == 1 ? "" : "s", st.switches, st.switches == 1 ? "" : "es",
            st.marks, st.marks == 1 ? "" : "s", st.violations, st.violations == 1 ? "" : "s",
            st.unmatched, st.unmatched == 1 ? "" : "s", st.closed_at_end,
            st.closed_at_end == 1 ? "" : "s",
            have_times ? gr_sb_str(&side) : "record order (1 us per record)");
    rc = 0;
done:
    gr_sb_free(&side);
    gr_check_result_free(&res);
    gr_times_free(&tm);
    gr_trace_free(&t);
    return rc;
}
