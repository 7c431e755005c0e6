/* test_dump.c - replay/report/dump.c: the exact text form of every record kind,
 * META and trailer lines, truncation line, escaping, and --times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dump.h"
#include "trace_builder.h"

#include <stdio.h>
#include <string.h>

/* Dump t (with optional times) into a malloc'd string. */
static char *dump_str(const gr_trace *t, const gr_times *tm)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gr_dump(f, t, tm), 0);
    fclose(f);
    return buf;
}

static void build(tb *b)
{
    tb_open(b, 0);
    tb_meta(b, "python", "3.11.7");
    tb_meta(b, "greenlet", "3.0.3");
    uint32_t mod = tb_py(b, "<module>", "seed.py", 1);
    uint32_t x = tb_py(b, "x", "seed.py", 14);
    uint32_t sw = tb_c(b, "greenlet.switch");
    uint32_t mk = tb_c(b, "greenreplay.mark");
    uint32_t label = tb_str(b, "in \"x\"\n");
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_CALL, 1, 1, x);
    tb_ev(b, GR_C_CALL, 1, 1, sw);
    tb_greenlet(b, 1, 2, 1, GR_GL_SUSPENDED | GR_GL_CUT | 0x10, 2, mod, x);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1,
              GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET | GR_SW_USE_TRACING_KNOWN, 0, 255);
    tb_ev(b, GR_C_RETURN, 1, 2, sw);
    tb_mark(b, 1, 2, label, mk, GR_MARK_PROFILE_OURS | GR_MARK_CUT, 2, mod, x);
    tb_ev(b, GR_C_EXCEPTION, 1, 2, mk);
    tb_ev(b, GR_RETURN, 1, 2, x);
    tb_switch(b, GR_THROW, 1, 2, 1, 0, GR_SW_PROFILE_SET | GR_SW_ORIGIN_DEAD, 1, 0);
    tb_switch(b, GR_SWITCH, 1, 1, 3, 0, 0x800, 0, 0);
    tb_simple(b, GR_DEAD, 1, 2);
    tb_simple(b, GR_STOP, 1, 1);
    tb_stack(b, 1, 1, GR_STACK_RUNNING, 2, mod, x);
    tb_stack(b, 1, 3, 0, 0);
    tb_hook(b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED, sw);
    tb_switch_stack(b, GR_SWITCH, 1, 1, 3, 0,
                    GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_AT_MARK | GR_SW_NEW, 0, 0, 1, x);
}

static const char golden[] =
    "# python: 3.11.7\n"
    "# greenlet: 3.0.3\n"
    "     0 THREAD      t1\n"
    "     1 GREENLET    t1 g1 parent=none flags=main depth=1 stack=<module> (seed.py:1)\n"
    "     2 START       t1 g1\n"
    "     3 CALL        t1 g1 x (seed.py:14)\n"
    "     4 C_CALL      t1 g1 greenlet.switch\n"
    "     5 GREENLET    t1 g2 parent=g1 flags=suspended,cut,0x10 depth=2 "
    "stack=<module> (seed.py:1) > x (seed.py:14)\n"
    "     6 SWITCH      t1 g1->g2 parent=g1 prof=ours tracing=0 use_tracing=255\n"
    "     7 C_RETURN    t1 g2 greenlet.switch\n"
    "     8 MARK        t1 g2 \"in \\\"x\\\"\\x0a\" flags=cut,ours depth=2 "
    "stack=<module> (seed.py:1) > x (seed.py:14)\n"
    "     9 C_EXCEPTION t1 g2 greenreplay.mark\n"
    "    10 RETURN      t1 g2 x (seed.py:14)\n"
    "    11 THROW       t1 g2->g1 parent=none prof=other tracing=1 use_tracing=n/a origin_dead\n"
    "    12 SWITCH      t1 g1->g3 parent=none prof=none tracing=0 use_tracing=n/a flags=0x800\n"
    "    13 DEAD        t1 g2\n"
    "    14 STOP        t1 g1\n"
    "    15 STACK       t1 g1 flags=running depth=2 stack=<module> (seed.py:1) > x (seed.py:14)\n"
    "    16 STACK       t1 g3 flags=- depth=0 stack=-\n"
    "    17 HOOK        t1 g1 profile set subject=off chained during=greenlet.switch\n"
    "    18 SWITCH      t1 g1->g3 parent=none prof=ours tracing=0 use_tracing=n/a inferred at_mark new "
    "depth=1 stack=x (seed.py:14)\n";

static void test_every_kind(void **state)
{
    (void)state;
    tb b;
    build(&b);
    tb_finish_with(&b, 17, 2, 1, GR_STOP_EXIT);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    char *out = dump_str(&t, NULL);
    char want[sizeof golden + 128];
    snprintf(want, sizeof want, "%s# trailer: events=17 dropped=2 errors=1 reason=exit\n",
             golden);
    assert_string_equal(out, want);
    free(out);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_truncated_line(void **state)
{
    (void)state;
    tb b;
    build(&b);
    tb_abandon(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    char *out = dump_str(&t, NULL);
    char want[sizeof golden + 128];
    snprintf(want, sizeof want,
             "%s# truncated: %zu bytes, the complete chunks end at byte %zu, the end of the file\n",
             golden, t.size, t.size);
    assert_string_equal(out, want);
    free(out);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_reasons(void **state)
{
    (void)state;
    const char *names[] = {"reason=stop", "reason=exit", "reason=write-error", "reason=9"};
    uint64_t vals[] = {GR_STOP_CALLED, GR_STOP_EXIT, GR_STOP_WRITE_ERROR, 9};
    for (int k = 0; k < 4; k++) {
        tb b;
        tb_open(&b, 0);
        tb_thread(&b, 1);
        tb_finish_with(&b, 1, 0, 0, vals[k]);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        char *out = dump_str(&t, NULL);
        char want[128];
        snprintf(want, sizeof want, "     0 THREAD      t1\n# trailer: events=1 dropped=0 "
                                    "errors=0 %s\n", names[k]);
        assert_string_equal(out, want);
        free(out);
        gr_trace_free(&t);
        tb_cleanup(&b);
    }
}

static void test_escaping_and_odd_codes(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    /* invalid UTF-8, a backslash, valid UTF-8 (e-acute), a tab */
    uint32_t q = tb_str(&b, "caf\xc3\xa9\\\xff\t");
    gr_code c = {.kind = GR_CODE_PY, .qualname = q, .file = 0, .line = 7};
    assert_int_equal(gr_emit_code(b.w, &c), 0);
    tb_thread(&b, 1);
    tb_ev(&b, GR_CALL, 1, 0, 1);
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    char *out = dump_str(&t, NULL);
    assert_string_equal(out, "     0 THREAD      t1\n"
                             "     1 CALL        t1 g0 caf\xc3\xa9\\\\\\xff\\x09 (?:7)\n"
                             "# trailer: events=2 dropped=0 errors=0 reason=stop\n");
    free(out);
    /* ids out of range print as ?code=N */
    gr_sb sb;
    gr_sb_init(&sb);
    gr_dump_code(&sb, &t, 42);
    assert_string_equal(gr_sb_str(&sb), "?code=42");
    gr_sb_free(&sb);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_times(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_thread(&b, 1);
    tb_simple(&b, GR_START, 1, 1);
    tb_simple(&b, GR_STOP, 1, 1);
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    uint64_t dt[2] = {5, 1234567};
    gr_times tm = {.dt = dt, .n = 2};
    char *out = dump_str(&t, &tm);
    assert_string_equal(out, "     0 THREAD      t1 dt=5ns\n"
                             "     1 START       t1 g1 dt=1234567ns\n"
                             "     2 STOP        t1 g1 dt=?\n"
                             "# trailer: events=3 dropped=0 errors=0 reason=stop\n");
    free(out);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* Dump of the trace at path, streamed (gr_dump_stream; after the first
 * chunk with records, batches of `batch` records when batch > 0). */
static char *dump_streamed(const char *path, size_t batch)
{
    gr_trace t;
    assert_int_equal(gr_trace_open(&t, path), GR_READ_OK);
    if (batch)
        gr_trace_set_batch(&t, batch);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gr_dump_stream(f, &t, NULL), 0);
    fclose(f);
    gr_trace_free(&t);
    return buf;
}

/* META records after the first indexed record (the recorder writes some at
 * stop) are printed after the last record line, just before the final
 * line, in file order: loaded or streamed (whole chunks or batches),
 * whether they share a chunk with the first record (chunk_cap 0) or not
 * (48-byte chunks), and one between records goes there too (§6.1); and the
 * ring line of GAPs after the first record. */
static void test_meta_after_records(void **state)
{
    (void)state;
    static const char want[] = "# python: 3.11.7\n"
                               "# ring: 5 earlier records dropped\n"
                               "     0 THREAD      t1\n"
                               "     1 START       t1 g1\n"
                               "     2 STOP        t1 g1\n"
                               "# midway: 1\n"
                               "# continued_verified: 2\n"
                               "# continued_mismatch: 0\n"
                               "# ring: 3 more records dropped after the first record\n"
                               "# trailer: events=3 dropped=0 errors=0 reason=stop\n";
    /* GAP definitions (ring mode, §3) likewise: the recorder writes them
     * before the first record; one after it is a hand-made file's */
    static const uint8_t gap5[] = {GR_GAP, 5}, gap3[] = {GR_GAP, 3};
    size_t caps[] = {0, 48};
    for (int k = 0; k < 2; k++) {
        tb b;
        tb_open(&b, caps[k]);
        tb_meta(&b, "python", "3.11.7");
        assert_int_equal(gr_writer_append(b.w, gap5, sizeof gap5), 0);
        tb_thread(&b, 1);
        tb_simple(&b, GR_START, 1, 1);
        tb_meta(&b, "midway", "1");
        assert_int_equal(gr_writer_append(b.w, gap3, sizeof gap3), 0);
        tb_simple(&b, GR_STOP, 1, 1);
        tb_meta(&b, "continued_verified", "2");
        tb_meta(&b, "continued_mismatch", "0");
        tb_finish(&b);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        char *out = dump_str(&t, NULL);
        assert_string_equal(out, want);
        free(out);
        gr_trace_free(&t);
        for (size_t batch = 0; batch < 3; batch++) {
            out = dump_streamed(b.path, batch);
            assert_string_equal(out, want);
            free(out);
        }
        tb_cleanup(&b);
    }
}

static void test_wide_index(void **state)
{
    (void)state;
    gr_trace t;
    memset(&t, 0, sizeof t);
    gr_record r = {.tag = GR_DEAD, .index = 999999, .tid = 12, .gid = 345};
    gr_sb sb;
    gr_sb_init(&sb);
    gr_dump_record(&sb, &t, &r);
    assert_string_equal(gr_sb_str(&sb), "999999 DEAD        t12 g345");
    gr_sb_reset(&sb);
    r.index = 1000000;
    gr_dump_record(&sb, &t, &r);
    assert_string_equal(gr_sb_str(&sb), "1000000 DEAD        t12 g345");
    gr_sb_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_truncated_line),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_escaping_and_odd_codes),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_wide_index),
        cmocka_unit_test(test_meta_after_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
