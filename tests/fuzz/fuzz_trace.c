/* fuzz_trace.c - libFuzzer harness over everything that reads a canonical
 * trace (`make fuzz`, tests/fuzz/run.sh): the reader, then on a readable
 * trace the checker with its text, JSON, JUnit, HTML and quiet reports,
 * dump, stats, export (Chrome and speedscope), script (plain and
 * anonymized) and diff (of the trace with itself, with every --ignore
 * normalization and C names compared loosely); and the streamed reader
 * and checker (gr_trace_open, gr_check_stream, dump and stats one chunk at
 * a time, check and dump also in batches of 1-3 records after the first
 * chunk with records: gr_trace_set_batch) on the same bytes, which must
 * give the same error, report, dump and counts as the trace loaded whole;
 * and two `check --from/--to` workers, whose violations must be the whole
 * check's; and the same bytes with every records chunk compressed, which
 * must read as they do.
 *
 * The input is a trace file; CRCs are recomputed first (fuzz_common.h).
 * A crash, a sanitizer report or a failed invariant (abort) is a finding.
 */
#define _GNU_SOURCE /* memfd_create */
#include "check.h"
#include "diff.h"
#include "diff_ignore.h"
#include "color.h"
#include "dump.h"
#include "export.h"
#include "fuzz_common.h"
#include "html.h"
#include "reader.h"
#include "report.h"
#include "script.h"
#include "split.h"
#include "stats.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static FILE *devnull;

/* Abort (a finding) unless cond holds. */
#define MUST(cond)                                                                          \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "fuzz_trace: invariant failed: %s (%s:%d)\n", #cond, __FILE__,  \
                    __LINE__);                                                              \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

static void script_is_safe(const gr_sb *out);

static void consume(const gr_trace *t, uint8_t knob)
{
    gr_check_result r;
    size_t nv = gr_check_run(t, &r);
    size_t sum = 0;
    for (int k = 0; k < GR_NRULES; k++)
        sum += r.counts[k];
    MUST(sum == nv);
    for (size_t i = 0; i < r.nv; i++) {
        MUST(r.v[i].message != NULL);
        MUST(i == 0 || r.v[i - 1].index <= r.v[i].index);
        for (int k = 0; k < r.v[i].nctx; k++)
            MUST(r.v[i].ctx[k] < t->nrecs);
    }
    /* nothing checked is never clean */
    MUST(gr_check_status_of(&r) != GR_CHECK_CLEAN || r.coverage.nothing == NULL);
    MUST(t->nrecs > 0 || r.coverage.nothing != NULL);
    gr_report_text(devnull, t, &r);
    json_t *j = gr_report_json_trace(t, &r);
    MUST(j != NULL);
    char *text = json_dumps(j, 0); /* every string must be valid UTF-8 */
    MUST(text != NULL);
    free(text);
    json_decref(j);
    gr_junit ju;
    gr_junit_init(&ju);
    gr_junit_add_trace(&ju, t, &r);
    gr_junit_free(&ju);
    gr_html h;
    gr_html_init(&h);
    gr_html_add_trace(&h, t, &r);
    gr_html_free(&h);
    gr_color_check_summary(devnull, t, &r, knob & 1);
    gr_color_report(devnull, t, &r, (knob >> 1) & 1);
    MUST(gr_export(devnull, (knob >> 4) & 1 ? GR_EXPORT_SPEEDSCOPE : GR_EXPORT_CHROME, t, NULL, &r,
                   NULL, NULL) == 0);
    gr_check_result_free(&r);

    MUST(gr_dump(devnull, t, NULL) == 0);
    gr_stats s;
    gr_stats_compute(t, &s);
    MUST(s.total == t->nrecs);
    gr_stats_print_text(devnull, t, &s);
    gr_stats_print_json(devnull, t, &s);
    gr_stats_free(&s);

    gr_script_opts so = {.anonymize = knob & 1, .source = "fuzz.grt"};
    gr_sb out, notes;
    gr_sb_init(&out);
    gr_sb_init(&notes);
    gr_script_write(t, &so, &out, &notes);
    script_is_safe(&out);
    gr_sb_free(&out);
    gr_sb_free(&notes);

    gr_diff_opts o;
    gr_diff_defaults(&o);
    o.ignore = GR_IGNORE_GEN_FINALIZE | GR_IGNORE_C_RETURN;
    o.c_names = (knob >> 1) % 3;
    o.rename = (knob >> 3) & 1;
    o.budget = 200000; /* keep one execution short */
    MUST(gr_diff(devnull, t, "A", t, "B", &o) == 0); /* a trace equals itself */
}

/* What a generated script must be whatever the trace holds (docs/SECURITY.md):
 * line 1 the shebang and line 2 the UTF-8 declaration, so no recorded
 * string sits where Python reads an encoding; no byte that ends a line or
 * acts on a terminal (CR, NUL, other controls, DEL, bytes that are not
 * UTF-8) and none of the characters gr_utf8_hidden names (bidi overrides,
 * separators); outside comments, ASCII only (every recorded string inside
 * code is an escaped literal). */
static void script_is_safe(const gr_sb *out)
{
    static const char head[] = "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n";
    const uint8_t *p = (const uint8_t *)gr_sb_str(out);
    size_t n = out->len;
    MUST(n >= sizeof head - 1 && memcmp(p, head, sizeof head - 1) == 0);
    int comment = 0, quote = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c == '\n') {
            comment = quote = 0;
            i++;
            continue;
        }
        MUST(c >= 0x20 && c != 0x7f);
        if (c < 0x80) {
            if (!comment && !quote && c == '#')
                comment = 1;
            else if (!comment && c == '\'') {
                size_t b = 0; /* backslashes before it: odd, it is escaped */
                while (b < i && p[i - 1 - b] == '\\')
                    b++;
                if (!quote || b % 2 == 0)
                    quote = !quote;
            }
            i++;
            continue;
        }
        MUST(comment);
        size_t k = gr_utf8_len(p + i, n - i);
        MUST(k > 0 && !gr_utf8_hidden(p + i, n - i));
        i += k;
    }
}

/* Text of a report, a dump, or stats of t (malloc'd). */
static char *text_of(const gr_trace *t, const gr_check_result *r, int what)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    MUST(m != NULL);
    if (what == 0)
        gr_report_text(m, t, r);
    else if (what == 1)
        MUST(gr_dump(m, t, NULL) == 0);
    fclose(m);
    return buf;
}

/* check --from/--to (split.h) on a readable trace: two workers cut at
 * chunk 1 report the violations of the whole check (lr) between them,
 * merged as docs/ARCHITECTURE.md does (in range order, then sorted by
 * index, stably), and the first one, which stops early, finds the same end
 * of the trace by chunk headers (seek.h) as the reader. */
/* lt checked again by a checker set up otherwise (keep_dead: dead
 * greenlets' shadows kept; plain: plain records replayed apart) gives
 * the report lr. */
static void same_report_checked_as(const gr_trace *lt, const gr_check_result *lr, int keep_dead, int plain)
{
    gr_check_result kr;
    gr_checker *kc = gr_checker_new(lt, &kr);
    gr_checker_keep_dead(kc, keep_dead);
    gr_checker_plain(kc, plain);
    gr_checker_finish(kc);
    char *a = text_of(lt, lr, 0), *b = text_of(lt, &kr, 0);
    MUST(strcmp(a, b) == 0);
    free(a);
    free(b);
    gr_check_result_free(&kr);
}

static void split_two(const char *path, const gr_trace *lt, const gr_check_result *lr)
{
    gr_check_result m;
    memset(&m, 0, sizeof m);
    for (int w = 0; w < 2; w++) {
        gr_trace t;
        gr_check_result r;
        gr_split sp = {.from = (uint64_t)w, .to = w ? UINT64_MAX : 1};
        MUST(gr_trace_open(&t, path) == GR_READ_OK);
        int rc = gr_check_split(&t, &sp, &r);
        if (rc == GR_SPLIT_PAST_END) { /* fewer than w + 1 chunks */
            MUST(sp.chunks <= (uint64_t)w);
            gr_trace_free(&t);
            break;
        }
        MUST(rc == GR_SPLIT_OK);
        MUST(t.has_trailer == lt->has_trailer && t.truncated == lt->truncated);
        MUST(!lt->truncated || t.truncated_at == lt->truncated_at);
        MUST(!lt->has_trailer || memcmp(&t.trailer, &lt->trailer, sizeof t.trailer) == 0);
        for (size_t i = 0; i < r.nv; i++) {
            m.v = gr_xgrow(m.v, &m.cap_v, m.nv + 1, sizeof *m.v);
            m.v[m.nv++] = r.v[i]; /* takes over message and lines */
        }
        r.nv = 0;
        gr_check_result_free(&r);
        gr_trace_free(&t);
    }
    for (size_t i = 1; i < m.nv; i++) { /* insertion sort: stable */
        gr_violation v = m.v[i];
        size_t j = i;
        for (; j > 0 && m.v[j - 1].index > v.index; j--)
            m.v[j] = m.v[j - 1];
        m.v[j] = v;
    }
    MUST(m.nv == lr->nv);
    for (size_t k = 0; k < m.nv; k++) {
        MUST(m.v[k].index == lr->v[k].index && m.v[k].rule == lr->v[k].rule);
        MUST(strcmp(m.v[k].message, lr->v[k].message) == 0);
    }
    gr_check_result_free(&m);
}

/* After the first chunk with records, batches of `batch` records (reader.h,
 * gr_trace_set_batch; 0: what check and dump choose themselves). */
static void batches(gr_trace *t, size_t batch)
{
    if (!batch)
        return;
    while (!t->nrecs && gr_trace_next_chunk(t) > 0)
        ;
    gr_trace_set_batch(t, batch);
}

/* The same bytes streamed from a file (path) give what the loaded trace
 * (lt, read with status lrc) gave, in whole chunks or in batches of
 * `batch` records. */
static void streamed(const char *path, const gr_trace *lt, int lrc, size_t batch)
{
    gr_trace t;
    int rc = gr_trace_open(&t, path);
    if (rc != GR_READ_OK) {
        MUST(lrc != GR_READ_OK && strcmp(t.err.msg, lt->err.msg) == 0);
        gr_trace_free(&t);
        return;
    }
    gr_check_result r;
    batches(&t, batch);
    size_t nv = gr_check_stream(&t, &r);
    if (lrc != GR_READ_OK) {
        MUST(nv == SIZE_MAX && strcmp(t.err.msg, lt->err.msg) == 0);
        gr_trace_free(&t);
        return;
    }
    MUST(nv != SIZE_MAX);
    MUST(gr_trace_count(&t) == lt->nrecs);
    gr_check_result lr;
    gr_check_run(lt, &lr);
    char *a = text_of(lt, &lr, 0), *b = text_of(&t, &r, 0);
    MUST(strcmp(a, b) == 0);
    free(a);
    free(b);
    /* dead greenlets' shadows kept for the whole run: the same report as
     * with them freed at their DEAD (tomb.h) */
    same_report_checked_as(lt, &lr, 1, 1);
    /* every record through the rules of its kind (no plain replay,
     * rule.h): the same report */
    same_report_checked_as(lt, &lr, 0, 0);
    split_two(path, lt, &lr);
    gr_check_result_free(&lr);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    /* dump and stats, streamed again */
    MUST(gr_trace_open(&t, path) == GR_READ_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    MUST(m != NULL);
    batches(&t, batch);
    MUST(gr_dump_stream(m, &t, NULL) == 0);
    fclose(m);
    a = text_of(lt, NULL, 1);
    /* byte for byte: a META after the first record is placed by its
     * position among the records, not by chunk (docs/FORMAT.md §6.1) */
    MUST(strcmp(a, buf) == 0);
    free(a);
    free(buf);
    gr_trace_free(&t);
    MUST(gr_trace_open(&t, path) == GR_READ_OK);
    gr_stats s;
    MUST(gr_stats_stream(&t, &s) == 0);
    MUST(s.total == lt->nrecs);
    gr_stats_free(&s);
    gr_trace_free(&t);
}

/* The same bytes with every records chunk compressed (FORMAT §2.1) read
 * as the uncompressed ones did (lt, status lrc): the same status, error
 * kind, records, trailer and end. */
static void compressed_same(const uint8_t *d, size_t size, const gr_trace *lt, int lrc)
{
    size_t zn;
    uint8_t *z = gr_fuzz_compress_chunks(d, size, &zn);
    if (!z)
        return;
    gr_trace t;
    int rc = gr_trace_parse(&t, "z.grt", z, zn);
    MUST(rc == lrc);
    if (rc != GR_READ_OK) {
        MUST(t.err.kind == lt->err.kind);
    } else {
        MUST(t.nrecs == lt->nrecs && t.has_trailer == lt->has_trailer &&
             t.truncated == lt->truncated && t.nstrings == lt->nstrings &&
             t.ncodes == lt->ncodes && t.nmetas == lt->nmetas);
        MUST(!t.has_trailer || memcmp(&t.trailer, &lt->trailer, sizeof t.trailer) == 0);
        for (size_t i = 0; i < t.nrecs; i++) {
            const gr_record *a = &t.recs[i], *b = &lt->recs[i];
            MUST(a->tag == b->tag && a->index == b->index && a->tid == b->tid &&
                 a->gid == b->gid && a->code == b->code && a->target == b->target &&
                 a->parent == b->parent && a->flags == b->flags && a->label == b->label &&
                 a->len == b->len && a->depth == b->depth);
            for (uint32_t j = 0; j < a->depth; j++)
                MUST(gr_record_stack(&t, a)[j] == gr_record_stack(lt, b)[j]);
        }
        for (uint64_t k = 1; k <= t.nstrings; k++) {
            size_t la, lb;
            const uint8_t *sa = gr_trace_string(&t, k, &la), *sb = gr_trace_string(lt, k, &lb);
            MUST(la == lb && (la == 0 || memcmp(sa, sb, la) == 0));
        }
    }
    gr_trace_free(&t);
    free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        if (!devnull)
            abort();
    }
    uint8_t *d = gr_fuzz_fix_crcs(data, size);
    if (!d)
        return 0;
    /* The bytes in a memory file, for the streamed reader: its path is
     * the name of both reads, so that messages and reports compare. */
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.grt", 0);
        MUST(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    MUST(ftruncate(fd, 0) == 0 && pwrite(fd, d, size, 0) == (ssize_t)size);
    gr_trace t;
    int rc = gr_trace_parse(&t, path, d, size);
    if (rc == GR_READ_OK)
        consume(&t, size ? data[size - 1] : 0);
    else
        MUST(t.err.msg[0] != 0); /* a failed read always says why */
    streamed(path, &t, rc, size ? (size_t)(data[size - 1] >> 5) % 4 : 0); /* whole chunks, or 1-3 records */
    compressed_same(d, size, &t, rc);
    gr_trace_free(&t);
    free(d);
    return 0;
}
