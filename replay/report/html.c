/* html.c - the HTML report of `check --html` (html.h). */
#include "html.h"

#include "dump.h"
#include "idmap.h"
#include "report.h"
#include "version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void gr_html_init(gr_html *h)
{
    memset(h, 0, sizeof *h);
}

void gr_html_free(gr_html *h)
{
    gr_sb_free(&h->body);
    gr_sb_free(&h->toc);
    memset(h, 0, sizeof *h);
}

/* Escaped text (display-escaped first when raw bytes). */
static void esc(gr_sb *sb, const char *s)
{
    gr_xml_escape(sb, s);
}

static void esc_code(gr_sb *sb, const gr_trace *t, uint32_t code)
{
    gr_sb tmp;
    gr_sb_init(&tmp);
    gr_dump_code(&tmp, t, code);
    esc(sb, gr_sb_str(&tmp));
    gr_sb_free(&tmp);
}

/* One greenlet of a trace, in order of first sight. */
typedef struct hg {
    uint64_t tid, gid;
    int main;
    uint32_t run;          /* outermost seed frame or first CALL; 0 none */
    size_t first;          /* record of first sight */
    size_t last_real;      /* latest GREENLET/MARK/STACK record so far */
    int has_real;
    gr_record real;        /* streamed: a copy of it, and of its stack */
    uint32_t *real_ids;
    size_t cap_real;
    int real_kept;         /* the copy is there (dropped at the greenlet's DEAD) */
    size_t *vs;            /* violations concerning it (indices into r->v) */
    size_t nvs, cap_vs;
} hg;

typedef struct hctx {
    const gr_trace *t;     /* the trace walked: t itself when loaded, else `own` */
    gr_trace own;          /* a streamed trace: the file opened again for each pass */
    const char *path;
    int streamed;
    uint64_t nrecs;        /* records in the trace */
    const gr_check_result *r;
    size_t file;           /* trace number (anchor prefix) */
    hg *g;
    size_t ng, cap_g;
    gr_idmap map;          /* (gid, 0) -> index in g */
    size_t *cited;         /* records linked to from somewhere (repeats allowed) */
    size_t ncited, cap_cited;
} hctx;

/* Start a pass over the trace: a streamed one is opened again (it was
 * read to its end by the check).  Returns 0, or -1 when it cannot be. */
static int walk_start(hctx *c)
{
    if (!c->streamed)
        return 0;
    gr_trace_free(&c->own);
    if (gr_trace_open(&c->own, c->path) != GR_READ_OK)
        return -1;
    c->t = &c->own;
    return 0;
}

/* Record i of the pass, decoding the chunks up to it (a streamed trace
 * goes forward only; ck, when given, replays each chunk before it goes).
 * NULL past the end. */
static const gr_record *walk(hctx *c, gr_checker *ck, uint64_t i)
{
    gr_trace *t = c->streamed ? &c->own : NULL;
    while (t && i >= gr_trace_count(t) && !t->done) {
        if (ck) {
            gr_checker_advance(ck, (size_t)gr_trace_count(t));
            gr_checker_detach(ck);
        }
        if (gr_trace_next_chunk(t) <= 0)
            break;
    }
    return gr_trace_record(c->t, i);
}

static hg *greenlet(hctx *c, uint64_t tid, uint64_t gid, size_t rec)
{
    size_t i;
    if (gr_idmap_get(&c->map, gid, 0, &i))
        return &c->g[i];
    c->g = gr_xgrow(c->g, &c->cap_g, c->ng + 1, sizeof *c->g);
    i = c->ng++;
    hg *g = &c->g[i];
    memset(g, 0, sizeof *g);
    g->tid = tid;
    g->gid = gid;
    g->first = rec;
    gr_idmap_put(&c->map, gid, 0, i);
    return g;
}

/* Greenlets seen in record r; keep the latest real stack of each. */
static void see(hctx *c, const gr_record *r)
{
    if (r->tag == GR_THREAD)
        return;
    hg *g = greenlet(c, r->tid, r->gid, r->index);
    switch (r->tag) {
    case GR_GREENLET:
        if (r->flags & GR_GL_MAIN)
            g->main = 1;
        if (r->depth && !g->run)
            g->run = gr_record_stack(c->t, r)[0];
        /* fall through */
    case GR_MARK:
    case GR_STACK:
        g->last_real = r->index;
        g->has_real = 1;
        if (c->streamed) { /* the record goes with its chunk */
            g->real = *r;
            g->real_ids = gr_xgrow(g->real_ids, &g->cap_real, r->depth + 1, sizeof *g->real_ids);
            if (r->depth)
                memcpy(g->real_ids, gr_record_stack(c->t, r), r->depth * sizeof *g->real_ids);
            g->real_kept = 1;
        }
        break;
    case GR_DEAD: /* its real stack is not shown any more: bounded memory */
        free(g->real_ids);
        g->real_ids = NULL;
        g->cap_real = 0;
        g->real_kept = 0;
        break;
    case GR_CALL:
        if (!g->run)
            g->run = r->code;
        break;
    case GR_SWITCH:
    case GR_THROW:
        greenlet(c, r->tid, r->target, r->index);
        break;
    default:
        break;
    }
}

static void greenlet_label(gr_sb *sb, const hctx *c, const hg *g)
{
    gr_sb_printf(sb, "g%" PRIu64 " ", g->gid);
    if (g->main) {
        gr_sb_puts(sb, "(main)");
        return;
    }
    gr_sb_puts(sb, "(run ");
    if (g->run) {
        const gr_code *code = gr_trace_code(c->t, g->run);
        size_t n = 0;
        const uint8_t *s = code ? gr_trace_string(c->t, code->qualname, &n) : NULL;
        gr_sb tmp;
        gr_sb_init(&tmp);
        gr_sb_escape(&tmp, s, n, 0);
        esc(sb, gr_sb_str(&tmp));
        gr_sb_free(&tmp);
    } else {
        gr_sb_putc(sb, '?');
    }
    gr_sb_putc(sb, ')');
}

static void link_greenlet(gr_sb *sb, const hctx *c, uint64_t gid)
{
    size_t i;
    if (!gr_idmap_get(&c->map, gid, 0, &i)) {
        gr_sb_printf(sb, "g%" PRIu64, gid);
        return;
    }
    gr_sb_printf(sb, "<a href=\"#f%zu-g%" PRIu64 "\">", c->file, gid);
    greenlet_label(sb, c, &c->g[i]);
    gr_sb_puts(sb, "</a>");
}

static void link_record(gr_sb *sb, hctx *c, size_t rec)
{
    if (rec >= c->nrecs) {
        gr_sb_printf(sb, "%zu", rec);
        return;
    }
    c->cited = gr_xgrow(c->cited, &c->cap_cited, c->ncited + 1, sizeof *c->cited);
    c->cited[c->ncited++] = rec;
    gr_sb_printf(sb, "<a href=\"#f%zu-r%zu\">%zu</a>", c->file, rec, rec);
}

/* A stack as an ordered list, outermost first. */
static void stack_list(gr_sb *sb, const gr_trace *t, const uint32_t *ids, size_t n, int unknown)
{
    if (n == 0 && !unknown) {
        gr_sb_puts(sb, "<span class=\"none\">empty</span>");
        return;
    }
    gr_sb_puts(sb, "<ol class=\"stack\">");
    if (unknown)
        gr_sb_puts(sb, "<li class=\"none\">&#8230; (frames below unknown)</li>");
    for (size_t k = 0; k < n; k++) {
        const gr_code *code = gr_trace_code(t, ids[k]);
        gr_sb_printf(sb, "<li%s>", code && code->kind == GR_CODE_C ? " class=\"c\"" : "");
        esc_code(sb, t, ids[k]);
        gr_sb_puts(sb, "</li>");
    }
    gr_sb_puts(sb, "</ol>");
}

static const char *state_name(enum gr_shadow_state s)
{
    switch (s) {
    case GR_SHADOW_RUNNING: return "running";
    case GR_SHADOW_IDLE: return "suspended";
    case GR_SHADOW_DEAD: return "dead";
    default: return "not seen yet";
    }
}

static const char *kind_of(const gr_record *r)
{
    switch (r->tag) {
    case GR_GREENLET: return "GREENLET seed";
    case GR_MARK: return "MARK";
    case GR_STACK: return "STACK at stop";
    default: return "record";
    }
}

/* One row of a violation's greenlet table. */
static void greenlet_row(gr_sb *sb, hctx *c, gr_checker *ck, const hg *g, int own)
{
    uint64_t tid;
    enum gr_shadow_state st = gr_checker_greenlet(ck, g->gid, &tid);
    gr_sb_printf(sb, "<tr%s><td>", own ? " class=\"own\"" : "");
    link_greenlet(sb, c, g->gid);
    gr_sb_printf(sb, "<br><span class=\"state\">%s</span></td><td>", state_name(st));
    size_t n;
    int unknown;
    const uint32_t *ids = gr_checker_shadow(ck, g->gid, &n, &unknown);
    if (st == GR_SHADOW_UNSEEN)
        gr_sb_puts(sb, "<span class=\"none\">-</span>");
    else
        stack_list(sb, c->t, ids, n, unknown);
    gr_sb_puts(sb, "</td><td>");
    const gr_record *r = !g->has_real ? NULL
                         : c->streamed ? (g->real_kept ? &g->real : NULL)
                                       : &c->t->recs[g->last_real];
    if (g->has_real && !r) {
        gr_sb_puts(sb, "<div class=\"src\">record ");
        link_record(sb, c, g->last_real);
        gr_sb_puts(sb, "</div><span class=\"none\">not kept after its DEAD</span>");
    } else if (g->has_real) {
        const uint32_t *real = c->streamed ? g->real_ids : gr_record_stack(c->t, r);
        gr_sb_printf(sb, "<div class=\"src\">%s at record ", kind_of(r));
        link_record(sb, c, g->last_real);
        gr_sb_puts(sb, "</div>");
        stack_list(sb, c->t, real, r->depth,
                   r->tag == GR_MARK ? (r->flags & 1) != 0
                                     : r->tag == GR_GREENLET ? (r->flags & 4) != 0
                                                             : (r->flags & 2) != 0);
    } else {
        gr_sb_puts(sb, "<span class=\"none\">none recorded yet</span>");
    }
    gr_sb_puts(sb, "</td></tr>");
}

static void violation(gr_sb *sb, hctx *c, gr_checker *ck, size_t vi)
{
    const gr_violation *v = &c->r->v[vi];
    gr_sb_printf(sb, "<section class=\"viol\" id=\"f%zu-v%zu\"><h4>%s<span class=\"rule\">%s</span> at "
                     "event ",
                 c->file, vi, v->allowed ? "(allowed) " : v->advisory ? "(not failing) " : "",
                 gr_rule_name(v->rule));
    link_record(sb, c, v->index);
    if (v->tid) {
        gr_sb_printf(sb, " (thread %" PRIu64 ", ", v->tid);
        link_greenlet(sb, c, v->gid);
        gr_sb_putc(sb, ')');
    }
    gr_sb_puts(sb, "</h4><p class=\"msg\">");
    esc(sb, v->message);
    gr_sb_puts(sb, "</p><pre class=\"ctx\">");
    for (int k = 0; k < v->nctx; k++) {
        size_t rec = v->ctx[k];
        gr_sb_puts(sb, rec == v->index ? "<b>&gt; " : "  ");
        const gr_record *cr = v->ctx_line[k] ? NULL : gr_trace_record(c->t, rec);
        if (v->ctx_line[k] || cr) {
            gr_sb line;
            gr_sb_init(&line);
            if (v->ctx_line[k])
                gr_sb_puts(&line, v->ctx_line[k]);
            else
                gr_dump_record(&line, c->t, cr);
            const char *s = gr_sb_str(&line);
            while (*s == ' ')
                gr_sb_putc(sb, *s++);
            size_t d = strspn(s, "0123456789");
            link_record(sb, c, rec);
            esc(sb, s + d);
            gr_sb_free(&line);
        }
        gr_sb_puts(sb, rec == v->index ? "</b>\n" : "\n");
    }
    gr_sb_puts(sb, "</pre>");
    /* Greenlets of the violation's thread (all when it has none). */
    size_t shown = 0, total = 0;
    gr_sb rows;
    gr_sb_init(&rows);
    size_t own;
    int has_own = v->tid && gr_idmap_get(&c->map, v->gid, 0, &own);
    if (has_own) {
        greenlet_row(&rows, c, ck, &c->g[own], 1);
        shown++;
    }
    for (size_t k = 0; k < c->ng; k++) {
        const hg *g = &c->g[k];
        if ((v->tid && g->tid != v->tid) || (has_own && k == own) || g->first > v->index)
            continue;
        total++;
        if (shown < GR_HTML_MAX_GREENLETS) {
            greenlet_row(&rows, c, ck, g, 0);
            shown++;
        }
    }
    total += has_own;
    gr_sb_printf(sb, "<table class=\"gl\"><caption>Greenlets");
    if (v->tid)
        gr_sb_printf(sb, " of thread %" PRIu64, v->tid);
    gr_sb_printf(sb, " at event %" PRIu64 ": shadow stack before the record, last real stack "
                     "up to it (outermost first)</caption><tr><th>greenlet</th><th>shadow stack "
                     "(profile events)</th><th>real stack (ground truth)</th></tr>",
                 v->index);
    gr_sb_put(sb, rows.s ? rows.s : "", rows.len);
    gr_sb_puts(sb, "</table>");
    if (total > shown)
        gr_sb_printf(sb, "<p class=\"none\">%zu more greenlets not shown.</p>", total - shown);
    gr_sb_puts(sb, "</section>\n");
    gr_sb_free(&rows);
}

static int by_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

static const char *note_title(enum gr_note_kind k)
{
    switch (k) {
    case GR_NOTE_OPEN_AT_STOP: return "open at stop";
    case GR_NOTE_OPEN_AT_TRUNCATION: return "open at end of truncated trace";
    case GR_NOTE_ABANDONED: return "abandoned (suspended on a thread that ended before stop)";
    case GR_NOTE_UNOBSERVED: return "unobserved (a thread without the profile function)";
    default: return "open at end of trace (no STOP record)";
    }
}

/* First pass: every greenlet, in order of first sight, for names; the
 * violations shown, by greenlet. */
static void html_first_pass(hctx *c)
{
    const gr_check_result *r = c->r;
    int readable = walk_start(c) == 0;
    for (uint64_t i = 0; readable; i++) {
        const gr_record *rec = walk(c, NULL, i);
        if (!rec)
            break;
        see(c, rec);
    }
    for (size_t k = 0; k < c->ng; k++) {
        c->g[k].has_real = 0;
        c->g[k].real_kept = 0;
    }
    for (size_t i = 0; i < r->nv && i < GR_HTML_MAX_VIOLATIONS; i++) {
        size_t k;
        if (r->v[i].tid && gr_idmap_get(&c->map, r->v[i].gid, 0, &k)) {
            hg *g = &c->g[k];
            g->vs = gr_xgrow(g->vs, &g->cap_vs, g->nvs + 1, sizeof *g->vs);
            g->vs[g->nvs++] = i;
        }
    }
}

/* The trace's heading, trailer, warnings, summary, coverage and counts
 * per rule. */
static void html_head(gr_sb *sb, hctx *c, const gr_trace *t, enum gr_check_status status, const char *word)
{
    const gr_check_result *r = c->r;
    gr_sb_printf(sb, "<section class=\"trace\" id=\"f%zu\"><h2>", c->file);
    esc(sb, t->name);
    gr_sb_printf(sb, " <span class=\"%s\">%s</span></h2>\n<p>%zu records",
                 status == GR_CHECK_CLEAN ? "ok" : "bad", word, (size_t)c->nrecs);
    if (t->has_trailer) {
        const char *why = gr_reason_name(t->trailer.reason);
        gr_sb_printf(sb, "; trailer events=%" PRIu64 " dropped=%" PRIu64 " errors=%" PRIu64
                         " reason=%s",
                     t->trailer.events, t->trailer.dropped, t->trailer.errors, why ? why : "?");
    } else {
        gr_sb_puts(sb, "; no trailer: truncated: ");
        gr_report_cut_where(sb, t);
    }
    gr_sb_puts(sb, "</p>\n<p class=\"tally\">result: ");
    {
        gr_sb tally; /* the words of the text report's result line */
        gr_sb_init(&tally);
        gr_report_tally_head(&tally, r);
        gr_report_tally_rest(&tally, r);
        esc(sb, gr_sb_str(&tally));
        gr_sb_free(&tally);
    }
    gr_sb_puts(sb, "</p>\n");
    int verbose = gr_report_verbose_on(); /* refuted predictions: no warnings */
    for (size_t i = 0; i < r->nwarnings; i++) {
        int refuted = gr_report_refuted(r->warnings[i]);
        if (refuted && !verbose)
            continue;
        gr_sb_puts(sb, refuted ? "<p>detail: " : "<p class=\"warn\">warning: ");
        esc(sb, r->warnings[i]);
        gr_sb_puts(sb, "</p>\n");
    }
    gr_sb fline;
    gr_sb_init(&fline);
    for (size_t i = 0; verbose && i < r->nfolded; i++) {
        gr_sb_reset(&fline);
        gr_report_folded(&fline, &r->folded[i]);
        gr_sb_puts(sb, "<p>detail: ");
        esc(sb, gr_sb_str(&fline));
        gr_sb_puts(sb, "</p>\n");
    }
    gr_sb_free(&fline);
    if (r->summary) {
        gr_sb_puts(sb, "<pre>");
        esc(sb, r->summary);
        gr_sb_puts(sb, "</pre>\n");
    }
    {
        gr_sb cov;
        gr_sb_init(&cov);
        if (status == GR_CHECK_NOTHING)
            gr_sb_printf(&cov, "nothing checked: %s\n", r->coverage.nothing);
        gr_report_coverage(&cov, t, &r->coverage);
        gr_report_refuted_line(&cov, r);
        gr_report_profilers(&cov, t, r, 1000); /* JSON lists every one */
        gr_sb_printf(sb, "<pre class=\"coverage\">");
        esc(sb, gr_sb_str(&cov));
        gr_sb_puts(sb, "</pre>\n");
        gr_sb_free(&cov);
    }
    int nrules = r->nrules ? r->nrules : GR_NRULES_CHECK;
    gr_sb_puts(sb, "<table class=\"counts\"><tr><th>rule</th><th>findings</th></tr>");
    for (int k = 0; k < nrules; k++)
        gr_sb_printf(sb, "<tr><td>%s</td><td class=\"%s\">%zu</td></tr>",
                     gr_rule_name((enum gr_rule)k), r->counts[k] ? "bad" : "ok", r->counts[k]);
    gr_sb_puts(sb, "</table>\n");
}

/* Violations, replaying the trace alongside for the shadow stacks. */
static void html_violations(gr_sb *sb, hctx *c)
{
    const gr_check_result *r = c->r;
    gr_sb_printf(sb, "<h3>Findings (%zu)</h3>\n", r->nv);
    gr_check_result scratch;
    int readable = walk_start(c) == 0;
    gr_checker *ck = gr_checker_new(c->t, &scratch);
    size_t pos = 0;
    size_t nshow = r->nv < GR_HTML_MAX_VIOLATIONS ? r->nv : GR_HTML_MAX_VIOLATIONS;
    for (size_t i = 0; i < nshow; i++) {
        uint64_t idx = r->v[i].index;
        const gr_record *rec;
        for (; readable && pos <= idx && (rec = walk(c, ck, pos)); pos++)
            see(c, rec);
        gr_checker_advance(ck, idx < c->nrecs ? (size_t)idx : (size_t)c->nrecs);
        violation(sb, c, ck, i);
    }
    if (r->nv > nshow)
        gr_sb_printf(sb, "<p class=\"none\">%zu more violations not shown (see the text "
                         "report).</p>\n",
                     r->nv - nshow);
    gr_checker_finish(ck);
    gr_check_result_free(&scratch);
}

/* The notes (informational, not violations). */
static void html_notes(gr_sb *sb, hctx *c)
{
    const gr_check_result *r = c->r;
    gr_sb_puts(sb, "<h3>Notes (informational, not violations)</h3><ul>");
    for (size_t i = 0; i < r->nnotes; i++) {
        const gr_note *n = &r->notes[i];
        gr_sb_printf(sb, "<li>%s: thread %" PRIu64 ", ", note_title(n->kind), n->tid);
        link_greenlet(sb, c, n->gid);
        gr_sb_puts(sb, ": ");
        esc(sb, n->frames);
        gr_sb_puts(sb, "</li>");
    }
    gr_sb_puts(sb, "</ul>\n");
}

/* Greenlets: the table, a row each (up to GR_HTML_MAX_GREENLET_ROWS and
 * every one a shown violation concerns). */
static void html_greenlets(gr_sb *sb, hctx *c)
{
    const gr_check_result *r = c->r;
    gr_sb_printf(sb, "<h3>Greenlets (%zu)</h3>\n<table class=\"gls\"><tr><th>greenlet</th>"
                     "<th>thread</th><th>first seen</th><th>violations</th></tr>",
                 c->ng);
    size_t rows = 0;
    for (size_t k = 0; k < c->ng; k++) {
        /* The first GR_HTML_MAX_GREENLET_ROWS, and every one a shown
         * violation concerns. */
        if (rows >= GR_HTML_MAX_GREENLET_ROWS && !c->g[k].nvs)
            continue;
        rows++;
        hg *g = &c->g[k];
        gr_sb_printf(sb, "<tr id=\"f%zu-g%" PRIu64 "\"><td>", c->file, g->gid);
        greenlet_label(sb, c, g);
        gr_sb_printf(sb, "</td><td>%" PRIu64 "</td><td>record ", g->tid);
        link_record(sb, c, g->first);
        gr_sb_puts(sb, "</td><td>");
        for (size_t j = 0; j < g->nvs && j < GR_HTML_MAX_VIOLATIONS; j++) {
            size_t vi = g->vs[j];
            if (vi >= GR_HTML_MAX_VIOLATIONS)
                break;
            gr_sb_printf(sb, "%s<a href=\"#f%zu-v%zu\">%s at %" PRIu64 "</a>", j ? ", " : "",
                         c->file, vi, gr_rule_name(r->v[vi].rule), r->v[vi].index);
        }
        if (g->nvs == 0)
            gr_sb_puts(sb, "<span class=\"none\">none</span>");
        gr_sb_puts(sb, "</td></tr>");
    }
    gr_sb_puts(sb, "</table>\n");
    if (c->ng > rows)
        gr_sb_printf(sb, "<p class=\"none\">%zu more greenlets not shown.</p>\n", c->ng - rows);
}

/* The records linked to, in order, each once (one more pass when
 * streamed). */
static void html_cited(gr_sb *sb, hctx *c)
{
    gr_sb_puts(sb, "<h3>Records cited</h3>\n<pre class=\"recs\">");
    if (c->ncited > 1)
        qsort(c->cited, c->ncited, sizeof *c->cited, by_size);
    size_t ncited = 0;
    int readable = walk_start(c) == 0;
    for (size_t k = 0; k < c->ncited; k++) {
        size_t i = c->cited[k];
        if (k && c->cited[k - 1] == i)
            continue;
        const gr_record *rec = readable ? walk(c, NULL, i) : NULL;
        if (!rec)
            continue;
        ncited++;
        gr_sb line;
        gr_sb_init(&line);
        gr_dump_record(&line, c->t, rec);
        gr_sb_printf(sb, "<span id=\"f%zu-r%zu\">", c->file, i);
        esc(sb, gr_sb_str(&line));
        gr_sb_puts(sb, "</span>\n");
        gr_sb_free(&line);
    }
    if (!ncited)
        gr_sb_puts(sb, "(none)\n");
    gr_sb_puts(sb, "</pre></section>\n");
}

void gr_html_add_trace(gr_html *h, const gr_trace *t, const gr_check_result *r)
{
    hctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.path = t->name;
    c.streamed = t->streaming;
    c.nrecs = c.streamed ? r->coverage.records : t->nrecs;
    c.r = r;
    c.file = h->ntraces++;
    h->nviolations += r->nv;
    for (size_t i = 0; i < r->nv; i++)
        h->nfailing += !r->v[i].allowed && !r->v[i].advisory;
    html_first_pass(&c);

    gr_sb *sb = &h->body;
    enum gr_check_status status = gr_check_status_of(r);
    const char *word = status == GR_CHECK_NOTHING ? "nothing checked"
                       : status == GR_CHECK_VIOLATIONS ? "violations"
                                                  : "clean";
    html_head(sb, &c, t, status, word);

    /* Violations, replaying the trace alongside for the shadow stacks. */
    if (r->nv)
        html_violations(sb, &c);
    if (r->nnotes)
        html_notes(sb, &c);
    html_greenlets(sb, &c);
    html_cited(sb, &c);

    gr_sb_printf(&h->toc, "<tr><td><a href=\"#f%zu\">", c.file);
    esc(&h->toc, t->name);
    gr_sb_printf(&h->toc, "</a></td><td>%zu</td><td class=\"%s\">%s</td><td>%zu</td></tr>",
                 (size_t)c.nrecs, status == GR_CHECK_CLEAN ? "ok" : "bad", word, r->nv);

    for (size_t k = 0; k < c.ng; k++) {
        free(c.g[k].vs);
        free(c.g[k].real_ids);
    }
    free(c.g);
    free(c.cited);
    gr_idmap_free(&c.map);
    gr_trace_free(&c.own);
}

void gr_html_add_unusable(gr_html *h, const char *file, const char *error)
{
    size_t f = h->ntraces++;
    h->nunusable++;
    gr_sb_printf(&h->body, "<section class=\"trace\" id=\"f%zu\"><h2>", f);
    esc(&h->body, file);
    gr_sb_puts(&h->body, " <span class=\"bad\">unusable</span></h2><p class=\"warn\">");
    esc(&h->body, error);
    gr_sb_puts(&h->body, "</p></section>\n");
    gr_sb_printf(&h->toc, "<tr><td><a href=\"#f%zu\">", f);
    esc(&h->toc, file);
    gr_sb_puts(&h->toc, "</a></td><td>-</td><td class=\"bad\">unusable</td><td>-</td></tr>");
}

static const char css[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:110em}"
    "h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc}h3{font-size:1.05em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;"
    "vertical-align:top;text-align:left}caption{text-align:left;font-style:italic;padding:.2em 0}"
    ".ok{color:#1a7f37;font-weight:bold}.bad{color:#b42318;font-weight:bold}"
    ".warn{color:#8a6d00}.none{color:#777}.rule{color:#b42318}"
    "pre{background:#f6f8fa;padding:.5em;overflow-x:auto}"
    ".viol{border-left:4px solid #b42318;padding-left:.8em;margin:1.2em 0}"
    ".msg{font-family:monospace;white-space:pre-wrap}"
    "ol.stack{margin:0;padding-left:1.6em;font-family:monospace;font-size:.9em}"
    "ol.stack li.c{color:#555;font-style:italic}tr.own{background:#fff4f2}"
    ".state,.src{font-size:.85em;color:#555}:target{background:#fff3b0}";

int gr_html_write(const gr_html *h, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<title>greenreplay check: %zu finding%s, %zu failing</title><style>%s</style>"
               "</head>\n<body><h1>greenreplay check</h1>\n<p>%zu trace%s, %zu finding%s "
               "(%zu failing), %zu unusable. Rules: docs/RULES.md. Generated by greenreplay "
               GR_TOOL_VERSION ".</p>\n<table class=\"toc\"><tr><th>trace</th><th>records</th>"
               "<th>result</th><th>findings</th></tr>",
            h->nviolations, h->nviolations == 1 ? "" : "s", h->nfailing, css, h->ntraces,
            h->ntraces == 1 ? "" : "s", h->nviolations, h->nviolations == 1 ? "" : "s",
            h->nfailing, h->nunusable);
    fwrite(h->toc.s ? h->toc.s : "", 1, h->toc.len, f);
    fputs("</table>\n", f);
    fwrite(h->body.s ? h->body.s : "", 1, h->body.len, f);
    fputs("</body></html>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}
