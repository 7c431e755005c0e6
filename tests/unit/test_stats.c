/* test_stats.c - replay/report/stats.c: counts per kind, thread and greenlet, and
 * the JSON form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "stats.h"
#include "trace_builder.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define K(tag) ((tag) - GR_FIRST_INDEXED)

static void build(tb *b)
{
    tb_open(b, 0);
    uint32_t x = tb_py(b, "x", "a.py", 1), sw = tb_c(b, "greenlet.switch");
    tb_thread(b, 2);
    tb_greenlet(b, 2, 7, 0, GR_GL_MAIN, 0);
    tb_ev(b, GR_CALL, 2, 7, x);
    tb_ev(b, GR_C_CALL, 2, 7, sw);
    tb_switch(b, GR_SWITCH, 2, 7, 3, 7, 0, 0, 0); /* counts for g3 */
    tb_ev(b, GR_CALL, 2, 3, x);
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 0);
    tb_ev(b, GR_CALL, 1, 1, x);
    tb_finish(b);
}

static void test_counts(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_stats s;
    gr_stats_compute(&t, &s);
    assert_int_equal(s.total, 9);
    assert_int_equal(s.kinds[K(GR_CALL)], 3);
    assert_int_equal(s.kinds[K(GR_THREAD)], 2);
    assert_int_equal(s.kinds[K(GR_SWITCH)], 1);
    assert_int_equal(s.kinds[K(GR_STACK)], 0);
    assert_int_equal(s.nthreads, 2);
    assert_int_equal(s.threads[0].id, 1); /* sorted */
    assert_int_equal(s.threads[0].total, 3);
    assert_int_equal(s.threads[1].id, 2);
    assert_int_equal(s.threads[1].total, 6);
    assert_int_equal(s.ngreenlets, 3);
    assert_int_equal(s.greenlets[0].id, 1);
    assert_int_equal(s.greenlets[1].id, 3);
    assert_int_equal(s.greenlets[1].total, 2); /* SWITCH into it + its CALL */
    assert_int_equal(s.greenlets[1].kinds[K(GR_SWITCH)], 1);
    assert_int_equal(s.greenlets[1].tid, 2);
    assert_int_equal(s.greenlets[2].id, 7);
    assert_int_equal(s.greenlets[2].total, 3);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(gr_stats_print_json(f, &t, &s), 0);
    fclose(f);
    json_error_t err;
    json_t *o = json_loads(buf, 0, &err);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "records")), 9);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(o, "kinds"), "CALL")), 3);
    json_t *g = json_array_get(json_object_get(o, "greenlets"), 1);
    assert_int_equal(json_integer_value(json_object_get(g, "gid")), 3);
    assert_int_equal(json_integer_value(json_object_get(g, "records")), 2);
    json_decref(o);
    free(buf);

    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(gr_stats_print_text(f, &t, &s), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\nCALL                  3\n"));
    assert_non_null(strstr(buf, "\ntotal                 9\n"));
    assert_non_null(strstr(buf, "\ng3         t2              2          1          0          1"));
    free(buf);
    gr_stats_free(&s);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_empty(void **state)
{
    (void)state;
    gr_trace t;
    memset(&t, 0, sizeof t);
    gr_stats s;
    gr_stats_compute(&t, &s);
    assert_int_equal(s.total, 0);
    assert_int_equal(s.nthreads, 0);
    gr_stats_free(&s);
}

/* text (json 0) or JSON of s, owned */
static char *printed(const gr_trace *t, const gr_stats *s, int json)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(json ? gr_stats_print_json(f, t, s) : gr_stats_print_text(f, t, s), 0);
    fclose(f);
    return buf;
}

/* More greenlets die than a run holds (GR_STATS_RUN), in no gid order:
 * streamed, their rows go to the spill in sorted runs, which the printers
 * merge back in gid order; g5 is counted again after its DEAD, on another
 * thread, in a later run.  The same text and JSON as the trace loaded
 * (rows in memory), every greenlet once, g5's rows added up under the
 * thread of its first record. */
static void test_spilled_greenlets(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 4096);
    uint32_t x = tb_py(&b, "x", "a.py", 1);
    const uint64_t n = 2 * GR_STATS_RUN + 100;
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t gid = 2 + (i * 7919) % n; /* every gid 2..n+1 once */
        tb_greenlet(&b, 1, gid, 1, 0, 0);
        tb_switch(&b, GR_SWITCH, 1, 1, gid, 1, 0, 0, 0);
        tb_ev(&b, GR_CALL, 1, gid, x);
        tb_switch(&b, GR_SWITCH, 1, gid, 1, 1, 0, 0, 0);
        tb_simple(&b, GR_DEAD, 1, gid);
        if (i == n - 1) { /* g5 died long ago */
            tb_thread(&b, 2);
            tb_ev(&b, GR_CALL, 2, 5, x);
        }
    }
    tb_finish(&b);
    gr_trace lt, st;
    assert_int_equal(tb_load(&b, &lt), GR_READ_OK);
    assert_int_equal(gr_trace_open(&st, b.path), GR_READ_OK);
    gr_stats ls, ss;
    gr_stats_compute(&lt, &ls);
    assert_int_equal(gr_stats_stream(&st, &ss), 0);
    assert_non_null(ss.spill);
    assert_null(ls.spill);
    assert_int_equal(ls.ngreenlets, n + 1);
    assert_true(ss.ngreenlets < GR_STATS_RUN); /* the others in the spill */
    const gr_stats_row *g5 = &ls.greenlets[4];
    assert_int_equal(g5->id, 5);
    assert_int_equal(g5->tid, 1);
    assert_int_equal(g5->total, 5); /* GREENLET, the SWITCH into it, 2 CALLs, DEAD */
    assert_int_equal(g5->kinds[K(GR_CALL)], 2);
    ls.chunks = ss.chunks; /* (counted when streamed only) */
    for (int json = 0; json < 2; json++) {
        char *a = printed(&lt, &ls, json), *c = printed(&st, &ss, json);
        assert_string_equal(a, c);
        free(a);
        free(c);
    }
    char *j = printed(&st, &ss, 1);
    json_error_t err;
    json_t *o = json_loads(j, 0, &err);
    assert_non_null(o);
    json_t *gl = json_object_get(o, "greenlets");
    assert_int_equal(json_array_size(gl), n + 1);
    for (size_t i = 0; i < json_array_size(gl); i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(gl, i), "gid")),
                         (json_int_t)i + 1);
    json_t *j5 = json_array_get(gl, 4);
    assert_int_equal(json_integer_value(json_object_get(j5, "records")), 5);
    assert_int_equal(json_integer_value(json_object_get(j5, "tid")), 1);
    json_decref(o);
    free(j);
    gr_stats_free(&ls);
    gr_stats_free(&ss);
    gr_trace_free(&lt);
    gr_trace_free(&st);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_spilled_greenlets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
