/* test_report.c - replay/report.c: text, JSON and JUnit XML output of
 * checker results, including XML escaping and unusable files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report.h"
#include "trace_builder.h"

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
    assert_non_null(strstr(s, "  imbalance            1\n"));
    assert_non_null(strstr(s, "  blind_spot           0\n"));
    assert_non_null(strstr(s, "warning: trailer reports 1 dropped record:"));
    assert_non_null(strstr(s, "\nimbalance at event 5 (t1 g1): C_RETURN of builtins.len"));
    /* context: 3 earlier records of t1, then the record marked with '>' */
    assert_non_null(strstr(s, "\n         2 START       t1 g1\n"
                              "         3 CALL        t1 g1 <lambda> (a&b.py:2)\n"
                              "         4 CALL        t1 g1 <lambda> (a&b.py:2)\n"
                              "  >      5 C_RETURN    t1 g1 builtins.len\n"));
    assert_non_null(strstr(s, "open at end of trace (no STOP record) (informational, not "
                              "violations):\n  t1 g1: <module> (a&b.py:1) > <lambda> (a&b.py:2)"));
    assert_non_null(strstr(s, "\nresult: 1 violation\n"));
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
    char want[160];
    snprintf(want, sizeof want, "trace ends at byte %zu without a trailer (recording cut "
                                "short); checked records 0..5\n", t.size);
    assert_non_null(strstr(s, want));
    assert_non_null(strstr(s, "open at end of truncated trace"));
    free(s);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
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
    assert_non_null(strstr(x, "<testsuites name=\"greenreplay check\" tests=\"5\" failures=\"1\" "
                              "errors=\"1\">"));
    assert_non_null(strstr(x, "<testcase classname=\"/tmp/gr-unit-"));
    assert_non_null(strstr(x, "name=\"blind_spot\"/>"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_text_truncated),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_junit),
        cmocka_unit_test(test_xml_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
