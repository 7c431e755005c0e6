/* test_report.c - replay/report/report.c: text, JSON and JUnit XML output of
 * checker results, including XML escaping and unusable files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "color.h"
#include "report.h"
#include "trace_builder.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A trace with one imbalance (C_RETURN without C_CALL at index 5) inside a
 * function named "<lambda>" (needs XML escaping). */
static void build(tb *b, int truncated)
{
    tb_open(b, 0);
    uint32_t mod = tb_py(b, "<module>", "a&b.py", 1);
    uint32_t lam = tb_py(b, "<lambda>", "a&b.py", 2);
    uint32_t len = tb_c(b, "builtins.len");
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_CALL, 1, 1, lam);
    tb_ev(b, GR_CALL, 1, 1, lam);
    tb_ev(b, GR_C_RETURN, 1, 1, len); /* 5 */
    if (truncated)
        tb_abandon(b);
    else
        tb_finish_with(b, 6, 1, 0, GR_STOP_EXIT);
}

static char *text_of(const gr_trace *t, const gr_check_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_report_text(f, t, r);
    fclose(f);
    return buf;
}

static void test_text(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    assert_int_equal(gr_check_run(&t, &r), 1);
    char *s = text_of(&t, &r);
    /* each count with what its rule looks for, in plain words */
    assert_non_null(strstr(s, "  imbalance            1     returns whose call the profiler "
                              "never saw, and the reverse\n"));
    assert_non_null(strstr(s, "  blind_spot           0     calls running that the profiler "
                              "did not see"));
    /* the section is named for what it is, not "coverage" (of code) */
    assert_non_null(strstr(s, "\nwhat was checked:\n  records "));
    assert_null(strstr(s, "coverage:"));
    /* what the findings mean: for the rules found only */
    assert_non_null(strstr(s, "\nwhat the findings mean (docs/RULES.md has a section per rule):\n"
                              "  imbalance           the profiler saw a return without its call"));
    assert_null(strstr(s, "  blind_spot          calls ran that the profiler never saw"));
    assert_non_null(strstr(s, "warning: trailer reports 1 dropped record:"));
    assert_non_null(strstr(s, "\nimbalance at event 5 (t1 g1): C_RETURN of builtins.len"));
    /* context: 3 earlier records of t1, then the record marked with '>' */
    assert_non_null(strstr(s, "\n         2 START       t1 g1\n"
                              "         3 CALL        t1 g1 <lambda> (a&b.py:2)\n"
                              "         4 CALL        t1 g1 <lambda> (a&b.py:2)\n"
                              "  >      5 C_RETURN    t1 g1 builtins.len\n"));
    assert_non_null(strstr(s, "open at end of trace (no STOP record) (informational, not "
                              "violations):\n  t1 g1: <module> (a&b.py:1) > <lambda> (a&b.py:2)"));
    assert_non_null(strstr(s, "\nresult: 1 violation (imbalance 1)\n"));
    free(s);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_text_truncated(void **state)
{
    (void)state;
    tb b;
    build(&b, 1);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    gr_check_run(&t, &r);
    char *s = text_of(&t, &r);
    char want[200];
    snprintf(want, sizeof want, "truncated: %zu bytes, the complete chunks end at byte %zu, the "
                                "end of the file; no trailer (recording cut short); checked "
                                "records 0..5\n", t.size, t.size);
    assert_non_null(strstr(s, want));
    assert_non_null(strstr(s, "open at end of truncated trace"));
    free(s);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* Append the first 10 bytes of a records chunk announcing 100: the file
 * then ends inside a chunk. */
static void append_partial_chunk(const char *path)
{
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    uint8_t part[10] = {GR_CHUNK_RECORDS, 100, 0, 0, 0};
    assert_int_equal(fwrite(part, 1, sizeof part, f), sizeof part);
    fclose(f);
}

/* A file cut inside a chunk: the summary line gives the file's size and
 * where the complete chunks end, not only the latter. */
static void test_text_truncated_inside_chunk(void **state)
{
    (void)state;
    tb b;
    build(&b, 1);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    size_t whole = t.size;
    gr_trace_free(&t);
    append_partial_chunk(b.path);
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    assert_int_equal(t.truncated_at, whole);
    gr_check_result r;
    gr_check_run(&t, &r);
    char *s = text_of(&t, &r);
    char want[240];
    snprintf(want, sizeof want, "\ntruncated: %zu bytes, the chunk at byte %zu is incomplete (the "
                                "complete chunks end there); no trailer (recording cut short); "
                                "checked records 0..5\n", whole + 10, whole);
    if (!strstr(s, want))
        fail_msg("lacks '%s' in:\n%s", want, s);
    snprintf(want, sizeof want, "\n  ended by             cut short (no trailer): %zu bytes, the "
                                "chunk at byte %zu is incomplete", whole + 10, whole);
    assert_non_null(strstr(s, want));
    free(s);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* gr_report_cut_where, the words check, dump, stats, diff and check --html
 * share for a cut trace: each case of the file's size against where its
 * complete chunks end. */
static void cut_where_is(uint64_t size, uint64_t at, const char *want)
{
    gr_trace t;
    memset(&t, 0, sizeof t);
    t.truncated = 1;
    t.size = size;
    t.truncated_at = at;
    gr_sb sb;
    gr_sb_init(&sb);
    gr_report_cut_where(&sb, &t);
    if (!sb.s || strcmp(sb.s, want) != 0)
        fail_msg("size %llu, cut at %llu: got '%s', want '%s'", (unsigned long long)size,
                 (unsigned long long)at, sb.s ? sb.s : "(null)", want);
    gr_sb_free(&sb);
}

static void test_cut_where(void **state)
{
    (void)state;
    cut_where_is(0, 0, "0 bytes, inside its 16-byte header");
    cut_where_is(1, 0, "1 byte, inside its 16-byte header");
    cut_where_is(16, 16, "16 bytes, only its header (no chunk)");
    cut_where_is(500, 16, "500 bytes, the chunk at byte 16 is incomplete (no complete chunk)");
    cut_where_is(500, 300, "500 bytes, the chunk at byte 300 is incomplete (the complete chunks "
                           "end there)");
    cut_where_is(300, 300, "300 bytes, the complete chunks end at byte 300, the end of the file");
}

static void test_json(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    gr_check_run(&t, &r);
    json_t *o = gr_report_json_trace(&t, &r);
    /* through text and back, as a consumer would read it */
    char *s = json_dumps(o, 0);
    json_decref(o);
    json_error_t err;
    o = json_loads(s, 0, &err);
    free(s);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "violations");
    assert_int_equal(json_integer_value(json_object_get(o, "records")), 6);
    assert_true(json_is_null(json_object_get(o, "truncated_at")));
    json_t *counts = json_object_get(o, "counts");
    assert_int_equal(json_integer_value(json_object_get(counts, "imbalance")), 1);
    assert_int_equal(json_integer_value(json_object_get(counts, "propagation")), 0);
    json_t *v = json_array_get(json_object_get(o, "violations"), 0);
    assert_string_equal(json_string_value(json_object_get(v, "rule")), "imbalance");
    assert_int_equal(json_integer_value(json_object_get(v, "index")), 5);
    assert_int_equal(json_integer_value(json_object_get(v, "gid")), 1);
    json_t *ctx = json_object_get(v, "context");
    assert_int_equal(json_array_size(ctx), 4);
    assert_string_equal(json_string_value(json_array_get(ctx, 3)),
                        "     5 C_RETURN    t1 g1 builtins.len");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(o, "trailer"), "reason")), "exit");
    assert_int_equal(json_array_size(json_object_get(o, "warnings")), 1);
    json_t *n = json_array_get(json_object_get(o, "notes"), 0);
    assert_string_equal(json_string_value(json_object_get(n, "kind")), "open_at_end");
    json_decref(o);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);

    o = gr_report_json_unusable("bad\xff.grt", "bad\xff.grt: offset 0: bad magic");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "unusable");
    assert_string_equal(json_string_value(json_object_get(o, "file")), "bad\\xff.grt");
    json_decref(o);
    /* big ids stay exact */
    o = gr_json_u64(UINT64_MAX);
    assert_string_equal(json_string_value(o), "18446744073709551615");
    json_decref(o);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_junit(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    gr_check_run(&t, &r);
    gr_junit j;
    gr_junit_init(&j);
    gr_junit_add_trace(&j, &t, &r);
    gr_junit_add_unusable(&j, "x<y>.grt", "x<y>.grt: offset 16: chunk checksum mismatch");
    char path[] = "/tmp/gr-unit-junit-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_int_equal(gr_junit_write(&j, path), 0);
    gr_junit_free(&j);
    char *x = slurp(path);
    unlink(path);
    assert_non_null(strstr(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    assert_non_null(strstr(x, "<testsuites name=\"greenreplay check\" tests=\"10\" failures=\"1\" "
                              "errors=\"1\">"));
    assert_non_null(strstr(x, "name=\"coverage\"/>"));
    assert_non_null(strstr(x, "  blind spots          not checkable (no MARK and no ground-truth stack)"));
    assert_non_null(strstr(x, "<testcase classname=\"/tmp/gr-unit-"));
    assert_non_null(strstr(x, "name=\"blind_spot\"/>"));
    assert_non_null(strstr(x, "name=\"callback_guard\"/>"));
    assert_non_null(strstr(x, "name=\"displaced\"/>"));
    assert_non_null(strstr(x, "name=\"unreached\"/>"));
    assert_non_null(strstr(x, "name=\"attribution\"/>"));
    assert_non_null(strstr(x, "<failure type=\"imbalance\" message=\"1 violation\">event 5 "
                              "(t1 g1): C_RETURN of builtins.len"));
    assert_non_null(strstr(x, "&lt;lambda&gt; (a&amp;b.py:2)"));
    assert_null(strstr(x, "<lambda>"));
    assert_non_null(strstr(x, "<testsuite name=\"x&lt;y&gt;.grt\" tests=\"1\" failures=\"0\" "
                              "errors=\"1\">"));
    assert_non_null(strstr(x, "<error type=\"unusable\" message=\"x&lt;y&gt;.grt: offset 16: "
                              "chunk checksum mismatch\"/>"));
    assert_non_null(strstr(x, "<system-out>warning: trailer reports 1 dropped record"));
    free(x);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* The tally: the -q line, the text report's result line, JSON's `tally`,
 * JUnit and the API read the same counts, each the sum of its parts.
 * One imbalance (failing), one blind_spot allowed by a pyproject.toml and
 * one displaced finding (not failing by default). */
static void test_tally(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    gr_check_run(&t, &r);
    size_t ctx[1] = {5};
    gr_check_add_violation(&r, GR_RULE_BLIND_SPOT, 5, 1, 1, strdup("missed f"), ctx, 1);
    gr_check_add_violation(&r, GR_RULE_DISPLACED, 5, 1, 1, strdup("removed"), ctx, 1);
    const char *spec = "blind_spot";
    assert_int_equal(gr_check_allow(&r, &spec, 1), -1);
    for (size_t i = 0; i < r.nv; i++)
        if (r.v[i].allowed)
            r.v[i].allowed_by = "proj/pyproject.toml";
    const char *want = "1 violation (imbalance 1); allowed by proj/pyproject.toml: "
                       "blind_spot 1; not failing: displaced 1";
    /* the text report's result line */
    char *s = text_of(&t, &r);
    char line[256];
    snprintf(line, sizeof line, "\nresult: %s\n", want);
    assert_non_null(strstr(s, line));
    assert_null(strstr(s, "--allow")); /* no option that was not given */
    free(s);
    /* -q: the head, the records, the rest */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_color_check_summary(f, &t, &r, 0);
    fclose(f);
    assert_non_null(strstr(buf, ": 1 violation (imbalance 1), 6 records; allowed by "
                                "proj/pyproject.toml: blind_spot 1; not failing: displaced 1"));
    free(buf);
    /* JSON */
    json_t *o = gr_report_json_trace(&t, &r);
    json_t *jt = json_object_get(o, "tally");
    assert_int_equal(json_integer_value(json_object_get(jt, "violations")), 1);
    assert_int_equal(json_integer_value(json_object_get(jt, "allowed")), 1);
    assert_int_equal(json_integer_value(json_object_get(jt, "not_failing")), 1);
    assert_string_equal(json_string_value(json_object_get(jt, "text")), want);
    json_t *v1 = json_array_get(json_object_get(o, "violations"), 1);
    assert_string_equal(json_string_value(json_object_get(v1, "allowed_by")),
                        "proj/pyproject.toml");
    json_decref(o);
    /* JUnit: one failing rule; the allowed and the advisory ones pass */
    gr_junit j;
    gr_junit_init(&j);
    gr_junit_add_trace(&j, &t, &r);
    assert_int_equal(j.failures, 1);
    assert_non_null(strstr(j.body.s, "failures=\"1\""));
    snprintf(line, sizeof line, "result: %s\n", want);
    assert_non_null(strstr(j.body.s, line));
    gr_junit_free(&j);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* A refuted predicted blind spot is no warning: without -v the text
 * report, -q and JUnit only count it ("refuted predictions" under what was
 * checked); with -v it is a "detail:" line.  Other warnings stay. */
static void test_refuted_not_a_warning(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    gr_check_run(&t, &r); /* one warning: the trailer's dropped record */
    gr_check_add_warning(&r, strdup("predicted blind spot: profiling is on for t1 but 1 of the 2 "
                                    "frames of g1 are not instrumented; refuted by the RETURN "
                                    "at event 5, the return of the resumed frame itself"));
    char *s = text_of(&t, &r);
    assert_null(strstr(s, "predicted blind spot: profiling"));
    assert_non_null(strstr(s, "warning: trailer reports 1 dropped record"));
    assert_non_null(strstr(s, "\n  refuted predictions  1 predicted blind spot (3.12+) disproved "
                              "by the resumed frame's own events: no finding (check -v lists "
                              "them)\n"));
    free(s);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_color_check_summary(f, &t, &r, 0);
    fclose(f);
    assert_non_null(strstr(buf, " [1 warning]\n"));
    free(buf);
    gr_junit j;
    gr_junit_init(&j);
    gr_junit_add_trace(&j, &t, &r);
    assert_null(strstr(j.body.s, "predicted blind spot: profiling"));
    gr_junit_free(&j);
    json_t *o = gr_report_json_trace(&t, &r); /* JSON: listed, and counted */
    assert_int_equal(json_array_size(json_object_get(o, "warnings")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "refuted_predictions")), 1);
    json_decref(o);
    gr_report_verbose(1);
    s = text_of(&t, &r);
    gr_report_verbose(0);
    assert_non_null(strstr(s, "\ndetail: predicted blind spot: profiling is on for t1"));
    assert_null(strstr(s, "warning: predicted blind spot"));
    free(s);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_xml_escape(void **state)
{
    (void)state;
    gr_sb sb;
    gr_sb_init(&sb);
    gr_xml_escape(&sb, "a<b>&\"c'\x01\t\n\xc3\xa9\xff\x7f");
    assert_string_equal(gr_sb_str(&sb),
                        "a&lt;b&gt;&amp;&quot;c&apos;\\x01\t\n\xc3\xa9\\xff\\x7f");
    gr_sb_free(&sb);
}

/* ------------------------------------------------ nothing checked, coverage */

/* Every way a trace can hold nothing of the program; each must give status
 * nothing_checked (exit 2) in text, JSON and JUnit, never "clean". */
enum empty_kind { EMPTY_FILE, HEADER_ONLY, HALF_HEADER, ALL_DROPPED, NO_RECORD_TRAILER,
                  OWN_RECORDS_ONLY, FIRST_CHUNK_CUT, NEMPTY };

static void build_empty(tb *b, enum empty_kind k)
{
    tb_open(b, 0);
    if (k == OWN_RECORDS_ONLY) {
        /* start(); stop(): only the recorder's own code */
        uint32_t mod = tb_py(b, "<module>", "p.py", 1);
        uint32_t st = tb_py(b, "start", "<greenreplay>/__init__.py", 0);
        uint32_t sp = tb_py(b, "stop", "<greenreplay>/__init__.py", 0);
        uint32_t csp = tb_c(b, "greenreplay._greenreplay.stop");
        tb_thread(b, 1);
        tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 2, mod, st);
        tb_simple(b, GR_START, 1, 1);
        tb_ev(b, GR_RETURN, 1, 1, st);
        tb_ev(b, GR_CALL, 1, 1, sp);
        tb_ev(b, GR_C_CALL, 1, 1, csp);
        tb_simple(b, GR_STOP, 1, 1);
        tb_stack(b, 1, 1, GR_STACK_RUNNING, 3, mod, sp, csp);
    }
    switch (k) {
    case ALL_DROPPED: tb_finish_with(b, 0, 5299, 0, GR_STOP_SIZE_CAP); break;
    case NO_RECORD_TRAILER: tb_finish_with(b, 0, 0, 0, GR_STOP_EXIT); break;
    case OWN_RECORDS_ONLY: tb_finish(b); break;
    default: tb_abandon(b); break;
    }
    if (k == FIRST_CHUNK_CUT)
        append_partial_chunk(b->path);
    if (k == EMPTY_FILE || k == HALF_HEADER) {
        FILE *f = fopen(b->path, k == EMPTY_FILE ? "wb" : "r+b");
        assert_non_null(f);
        if (k == HALF_HEADER)
            assert_int_equal(ftruncate(fileno(f), 7), 0);
        fclose(f);
    }
}

static void test_nothing_checked(void **state)
{
    (void)state;
    static const char *const why[NEMPTY] = {
        "the file is empty", "the file holds only its header", "inside its 16-byte header",
        "every record was dropped", "the trace holds no record", "no event of the program",
        "the first chunk is incomplete",
    };
    for (int k = 0; k < NEMPTY; k++) {
        tb b;
        build_empty(&b, (enum empty_kind)k);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        gr_check_result r;
        assert_int_equal(gr_check_run(&t, &r), 0);
        assert_non_null(r.coverage.nothing);
        if (!strstr(r.coverage.nothing, why[k]))
            fail_msg("case %d: '%s' lacks '%s'", k, r.coverage.nothing, why[k]);
        assert_int_equal(gr_check_status_of(&r), GR_CHECK_NOTHING);
        assert_int_equal(gr_check_exit_code(gr_check_status_of(&r)), 2);
        char *s = text_of(&t, &r);
        assert_null(strstr(s, "result: clean"));
        assert_non_null(strstr(s, "\nresult: nothing checked ("));
        assert_non_null(strstr(s, "blind spots          not checkable"));
        /* No "in 0 of 0 threads": a trace without a thread says so in
         * words, one with threads keeps the counts (JSON stays numeric). */
        assert_null(strstr(s, " 0 of 0 "));
        if (k == EMPTY_FILE)
            assert_int_equal(r.coverage.threads, 0);
        if (r.coverage.threads == 0) {
            assert_non_null(strstr(s, "\n  seen                 no threads recorded\n"));
            assert_non_null(strstr(s, "\n  ground truth         0 points (0 MARK, 0 SWITCH with a "
                                      "real stack); 0 STACK records at stop\n"));
        } else {
            assert_null(strstr(s, "no threads recorded"));
            assert_non_null(strstr(s, " thread"));
        }
        free(s);
        json_t *o = gr_report_json_trace(&t, &r);
        assert_string_equal(json_string_value(json_object_get(o, "status")), "nothing_checked");
        json_t *cv = json_object_get(o, "coverage");
        assert_true(json_is_integer(json_object_get(cv, "threads")));
        assert_int_equal(json_integer_value(json_object_get(cv, "threads")), r.coverage.threads);
        assert_true(json_is_integer(json_object_get(cv, "checked_stacks")));
        assert_true(json_is_false(json_object_get(cv, "checked")));
        assert_non_null(strstr(json_string_value(json_object_get(cv, "nothing_checked")), why[k]));
        json_decref(o);
        gr_junit j;
        gr_junit_init(&j);
        gr_junit_add_trace(&j, &t, &r);
        assert_int_equal(j.errors, 1);
        assert_non_null(strstr(j.body.s, "<error type=\"nothing_checked\" message=\"nothing "
                                         "checked: "));
        gr_junit_free(&j);
        gr_check_result_free(&r);
        gr_trace_free(&t);
        tb_cleanup(&b);
    }
}

/* Coverage of a checked trace: the counts, and blind spots checkable
 * everywhere, partly, or not at all. */
static void test_coverage(void **state)
{
    (void)state;
    for (int marks = 0; marks <= 2; marks++) {
        tb b;
        tb_open(&b, 0);
        uint32_t mod = tb_py(&b, "<module>", "p.py", 1);
        uint32_t x = tb_py(&b, "x", "p.py", 3);
        uint32_t sw = tb_c(&b, "greenlet.switch");
        uint32_t mk = tb_c(&b, "greenreplay._greenreplay.mark");
        uint32_t label = tb_str(&b, "m");
        tb_thread(&b, 1);
        tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 1, mod);
        tb_simple(&b, GR_START, 1, 1);
        if (marks >= 1) { /* a mark in g1 */
            tb_ev(&b, GR_C_CALL, 1, 1, mk);
            tb_mark(&b, 1, 1, label, mk, GR_MARK_PROFILE_OURS, 1, mod);
            tb_ev(&b, GR_C_RETURN, 1, 1, mk);
        }
        tb_ev(&b, GR_C_CALL, 1, 1, sw);
        tb_greenlet(&b, 1, 2, 1, 0, 0);
        tb_switch(&b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS, 0, 0);
        tb_ev(&b, GR_CALL, 1, 2, x);
        if (marks >= 2) { /* and one in g2 */
            tb_ev(&b, GR_C_CALL, 1, 2, mk);
            tb_mark(&b, 1, 2, label, mk, GR_MARK_PROFILE_OURS, 1, x);
            tb_ev(&b, GR_C_RETURN, 1, 2, mk);
        }
        tb_ev(&b, GR_RETURN, 1, 2, x);
        tb_switch(&b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_ORIGIN_DEAD, 0, 0);
        tb_simple(&b, GR_DEAD, 1, 2);
        tb_ev(&b, GR_C_RETURN, 1, 1, sw);
        tb_finish_with(&b, b.nrec, 7, 0, GR_STOP_EXIT);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        gr_check_result r;
        assert_int_equal(gr_check_run(&t, &r), 0);
        const gr_coverage *cv = &r.coverage;
        assert_null(cv->nothing);
        assert_int_equal(gr_check_status_of(&r), GR_CHECK_CLEAN);
        assert_int_equal(cv->threads, 1);
        assert_int_equal(cv->greenlets, 2);
        assert_int_equal(cv->marks, (size_t)marks);
        assert_int_equal(cv->truth_points, (size_t)marks);
        assert_int_equal(cv->greenlets_truth, (size_t)marks);
        /* switches, x's call/return, switch's c_call/c_return, marks (the
         * mark's own c_call/c_return are the recorder's) */
        assert_int_equal(cv->program_events, 6 + (size_t)marks);
        assert_int_equal(cv->dropped, 7);
        static const char *const level[] = {"not_checkable", "partly", "checkable"};
        assert_string_equal(gr_coverage_blind_spots(cv), level[marks]);
        char *s = text_of(&t, &r);
        static const char *const line[] = {
            "  blind spots          not checkable (no MARK and no ground-truth stack)",
            "  blind spots          checkable at 1 ground-truth point, in 1 of 2 greenlets only",
            "  blind spots          checkable at 2 ground-truth points\n",
        };
        if (!strstr(s, line[marks]))
            fail_msg("marks=%d: no '%s' in:\n%s", marks, line[marks], s);
        assert_non_null(strstr(s, "  records lost         7 (trailer dropped 7, ring gap 0)\n"));
        assert_non_null(strstr(s, "  ended by             interpreter exit (reason exit)\n"));
        assert_non_null(strstr(s, "\nresult: clean\n"));
        free(s);
        json_t *o = gr_report_json_trace(&t, &r);
        json_t *jc = json_object_get(o, "coverage");
        assert_string_equal(json_string_value(json_object_get(jc, "blind_spots")), level[marks]);
        assert_int_equal(json_integer_value(json_object_get(jc, "marks")), marks);
        assert_string_equal(json_string_value(json_object_get(jc, "reason")), "exit");
        json_decref(o);
        gr_check_result_free(&r);
        gr_trace_free(&t);
        tb_cleanup(&b);
    }
}

/* Records lost: the sum of the trailer's dropped, the ring's GAPs and the
 * records the trailer counts but the file lacks saturates instead of
 * wrapping: a crafted trailer with dropped = 2^64-1 and 3 records missing
 * would otherwise read "2 records lost". */
static void test_records_lost_saturates(void **state)
{
    (void)state;
    static const uint64_t dropped[] = {UINT64_MAX, UINT64_MAX - 3, UINT64_MAX - 2};
    static const char *const want[] = {
        "  records lost         more than 2^64-1, the trailer's count is not plausible (trailer "
        "dropped 18446744073709551615, ring gap 0, 3 counted by the trailer but not in the file)\n",
        "  records lost         18446744073709551615 (trailer dropped 18446744073709551612, ring gap "
        "0, 3 counted by the trailer but not in the file)\n",
        "  records lost         more than 2^64-1, the trailer's count is not plausible (trailer "
        "dropped 18446744073709551613, ring gap 0, 3 counted by the trailer but not in the file)\n",
    };
    for (int i = 0; i < 3; i++) {
        tb b;
        build(&b, 0);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        t.trailer.events += 3; /* 3 records counted, not in the file */
        t.trailer.dropped = dropped[i];
        gr_check_result r;
        assert_int_equal(gr_check_run(&t, &r), 1); /* build()'s imbalance */
        assert_int_equal(r.coverage.missing, 3);
        char *s = text_of(&t, &r);
        if (!strstr(s, want[i]))
            fail_msg("dropped=%" PRIu64 ": no '%s' in:\n%s", dropped[i], want[i], s);
        free(s);
        gr_check_result_free(&r);
        gr_trace_free(&t);
        tb_cleanup(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_text_truncated),
        cmocka_unit_test(test_text_truncated_inside_chunk),
        cmocka_unit_test(test_cut_where),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_junit),
        cmocka_unit_test(test_tally),
        cmocka_unit_test(test_refuted_not_a_warning),
        cmocka_unit_test(test_xml_escape),
        cmocka_unit_test(test_nothing_checked),
        cmocka_unit_test(test_coverage),
        cmocka_unit_test(test_records_lost_saturates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
