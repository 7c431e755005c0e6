/* test_fuzz.c - robustness: random record sequences and byte mutations fed
 * through the whole replayer (reader, checker, dump, stats, reports).
 * Nothing may crash, read out of bounds or leak (tests/valgrind.sh runs it
 * under memcheck); results must stay consistent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"
#include "dump.h"
#include "report.h"
#include "stats.h"
#include "trace_builder.h"

#include <stdio.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? rng % n : 0;
}

/* Run every consumer of a decoded trace; check result invariants. */
static void consume(const gr_trace *t)
{
    gr_check_result r;
    size_t nv = gr_check_run(t, &r);
    size_t sum = 0;
    for (int k = 0; k < GR_NRULES; k++)
        sum += r.counts[k];
    assert_int_equal(sum, nv);
    for (size_t i = 0; i < r.nv; i++) {
        assert_true(r.v[i].nctx >= 1 && r.v[i].nctx <= GR_CONTEXT_MAX);
        assert_non_null(r.v[i].message);
        if (i)
            assert_true(r.v[i - 1].index <= r.v[i].index);
        for (int k = 0; k < r.v[i].nctx; k++)
            assert_true(r.v[i].ctx[k] < t->nrecs);
    }
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    assert_int_equal(gr_dump(null, t, NULL), 0);
    gr_report_text(null, t, &r);
    gr_stats s;
    gr_stats_compute(t, &s);
    assert_true(s.total == t->nrecs);
    gr_stats_print_text(null, t, &s);
    gr_stats_print_json(null, t, &s);
    gr_stats_free(&s);
    fclose(null);
    json_t *j = gr_report_json_trace(t, &r);
    assert_non_null(j);
    char *text = json_dumps(j, 0); /* every string must be valid UTF-8 */
    assert_non_null(text);
    free(text);
    json_decref(j);
    gr_junit ju;
    gr_junit_init(&ju);
    gr_junit_add_trace(&ju, t, &r);
    gr_junit_free(&ju);
    gr_check_result_free(&r);
}

/* Random but well-formed traces: every kind, small id domains so that
 * greenlets, threads and codes collide often. */
static void test_random_records(void **state)
{
    (void)state;
    for (int iter = 0; iter < 300; iter++) {
        tb b;
        tb_open(&b, 256 + (size_t)rnd(400)); /* a record of depth 128 fits */
        uint32_t codes[6];
        codes[0] = tb_py(&b, "a", "f.py", 1);
        codes[1] = tb_py(&b, "b\xff\x01", "f.py", 2);
        codes[2] = tb_c(&b, "greenlet.switch");
        codes[3] = tb_c(&b, "greenreplay.mark");
        codes[4] = tb_py(&b, "<c>", "g&h.py", 3);
        codes[5] = tb_c(&b, "stop");
        uint32_t label = tb_str(&b, "m\"");
        int n = 1 + (int)rnd(120);
        for (int k = 0; k < n; k++) {
            uint64_t tid = 1 + rnd(2), gid = rnd(4);
            uint32_t code = codes[rnd(6)];
            uint32_t st[GR_STACK_CAP];
            uint32_t depth = (uint32_t)rnd(rnd(8) == 0 ? GR_STACK_CAP + 1 : 5);
            for (uint32_t d = 0; d < depth; d++)
                st[d] = codes[rnd(6)];
            gr_record r = {.tag = (uint8_t)(GR_FIRST_INDEXED + rnd(GR_LAST_INDEXED -
                                                                  GR_FIRST_INDEXED + 1)),
                           .tid = tid, .gid = gid, .target = rnd(4), .parent = rnd(3),
                           .flags = rnd(32), .tracing = rnd(2), .use_tracing = rnd(2),
                           .code = code, .label = label, .depth = depth};
            if (rnd(50) == 0)
                r.gid = UINT64_MAX - rnd(2);
            tb_rec(&b, &r, st);
        }
        if (rnd(3))
            tb_finish_with(&b, rnd(200), rnd(2), rnd(2), rnd(5));
        else
            tb_abandon(&b);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        assert_int_equal(t.nrecs, (size_t)n);
        consume(&t);
        gr_trace_free(&t);
        tb_cleanup(&b);
    }
}

/* A realistic trace with its bytes mutated (CRCs recomputed half of the
 * time so that record decoding sees the damage). */
static void test_mutated_bytes(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 96);
    tb_meta(&b, "python", "3.11.7");
    uint32_t mod = tb_py(&b, "<module>", "seed.py", 1), x = tb_py(&b, "x", "seed.py", 14);
    uint32_t sw = tb_c(&b, "greenlet.switch"), mk = tb_c(&b, "greenreplay.mark");
    uint32_t label = tb_str(&b, "in x");
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(&b, GR_START, 1, 1);
    tb_ev(&b, GR_C_CALL, 1, 1, sw);
    tb_greenlet(&b, 1, 2, 1, 0, 0);
    tb_switch(&b, GR_SWITCH, 1, 1, 2, 1, 5, 0, 1);
    tb_ev(&b, GR_CALL, 1, 2, x);
    tb_ev(&b, GR_C_CALL, 1, 2, mk);
    tb_mark(&b, 1, 2, label, mk, GR_MARK_PROFILE_OURS, 1, x);
    tb_ev(&b, GR_C_RETURN, 1, 2, mk);
    tb_ev(&b, GR_RETURN, 1, 2, x);
    tb_switch(&b, GR_SWITCH, 1, 2, 1, 0, 13, 0, 1);
    tb_simple(&b, GR_DEAD, 1, 2);
    tb_ev(&b, GR_C_RETURN, 1, 1, sw);
    tb_simple(&b, GR_STOP, 1, 1);
    tb_stack(&b, 1, 1, 1, 1, mod);
    tb_finish(&b);
    size_t n;
    uint8_t *orig = tb_bytes(&b, &n);
    tb_cleanup(&b);
    uint8_t *d = malloc(n);
    int ok = 0;
    for (int iter = 0; iter < 2000; iter++) {
        memcpy(d, orig, n);
        int flips = 1 + (int)rnd(3);
        for (int k = 0; k < flips; k++)
            d[GR_HEADER_LEN + rnd(n - GR_HEADER_LEN)] = (uint8_t)rnd(256);
        if (iter % 2 == 0) {
            for (size_t off = GR_HEADER_LEN; off + GR_CHUNK_HEADER_LEN <= n;) {
                uint32_t cl = gr_get_u32le(d + off + 1);
                if (cl > n - off - GR_CHUNK_HEADER_LEN)
                    break;
                tb_fix_crc(d, off);
                off += GR_CHUNK_HEADER_LEN + cl;
            }
        }
        gr_trace t;
        int rc = gr_trace_parse(&t, "m.grt", d, n - rnd(4));
        assert_true(rc == GR_READ_OK || rc == GR_READ_CORRUPT);
        if (rc == GR_READ_OK) {
            ok++;
            consume(&t);
        }
        gr_trace_free(&t);
    }
    assert_true(ok > 50);
    free(d);
    free(orig);
}

/* Very deep shadows keep messages short. */
static void test_long_stacks_are_elided(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    uint32_t f = tb_py(&b, "f", "r.py", 1), g = tb_py(&b, "g", "r.py", 9);
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 0);
    for (int k = 0; k < 5000; k++)
        tb_ev(&b, GR_CALL, 1, 1, f);
    tb_ev(&b, GR_RETURN, 1, 1, g); /* imbalance: no CALL of g */
    tb_simple(&b, GR_DEAD, 1, 1);  /* imbalance: 5000 open entries */
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result r;
    assert_int_equal(gr_check_run(&t, &r), 2);
    assert_int_equal(r.v[1].rule, GR_RULE_IMBALANCE);
    assert_non_null(strstr(r.v[1].message, "5000 open shadow entries"));
    assert_non_null(strstr(r.v[1].message, " > ... (4988 more) ... > "));
    assert_true(strlen(r.v[1].message) < 400);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_records),
        cmocka_unit_test(test_mutated_bytes),
        cmocka_unit_test(test_long_stacks_are_elided),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
