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
#include "stall.h"
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
        /* profilers 1..3, which a HOOK's `target` (0..3) names */
        tb_profiler(&b, GR_PROF_CPROFILE, label, 0);
        tb_profiler(&b, rnd(GR_PROF_KINDS + 2), 0, codes[0]);
        tb_profiler(&b, GR_PROF_FUNCTION, label, codes[1]);
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
            if (r.tag == GR_INSTR && r.use_tracing > r.parent)
                r.use_tracing = r.parent; /* stale frames <= frames, or corrupt */
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

/* Run the stall check and everything that prints its results on trace t
 * and side channel tm; check result invariants. */
static void consume_stall(const gr_trace *t, const gr_times *tm)
{
    gr_stall st;
    gr_check_result r;
    size_t nv = gr_stall_run(t, tm, 1 + rnd(3000000), &st, &r);
    size_t sum = 0;
    for (int k = 0; k < GR_NRULES; k++)
        sum += r.counts[k];
    assert_int_equal(sum, nv);
    assert_true(r.counts[GR_RULE_STALL_WAIT] <= 1 && r.counts[GR_RULE_STALL_DEPTH] <= 1);
    assert_int_equal(st.stacks, st.stacks_equal + st.stacks_partial + st.stacks_torn +
                                    st.stacks_unknown + st.stacks_mismatched +
                                    st.stacks_unusable);
    assert_int_equal(st.stacks_mismatched, r.counts[GR_RULE_SAMPLE]);
    for (size_t i = 0; i < r.nv; i++) {
        assert_true(r.v[i].nctx >= 0 && r.v[i].nctx <= GR_CONTEXT_MAX);
        for (int k = 0; k < r.v[i].nctx; k++)
            assert_true(r.v[i].ctx[k] < t->nrecs);
        if (i)
            assert_true(r.v[i - 1].index <= r.v[i].index);
    }
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    gr_report_text(null, t, &r);
    assert_int_equal(gr_dump(null, t, tm), 0);
    fclose(null);
    json_t *j = gr_report_json_trace(t, &r);
    json_object_set_new(j, "stall", gr_stall_json(&st));
    char *text = json_dumps(j, 0);
    assert_non_null(text);
    free(text);
    json_decref(j);
    gr_junit ju;
    gr_junit_init(&ju);
    gr_junit_add_trace(&ju, t, &r);
    gr_junit_free(&ju);
    gr_check_result_free(&r);
    gr_stall_free(&st);
}

/* A small trace with switches among g1..g3 on two threads, and random
 * side channels for it: indices, gids and code ids in and out of range. */
static void test_random_side_channels(void **state)
{
    (void)state;
    for (int iter = 0; iter < 300; iter++) {
        tb b;
        tb_open(&b, 0);
        if (rnd(4))
            tb_meta(&b, "sampler", rnd(2) ? "hold-lock" : "s\xff");
        if (rnd(4))
            tb_meta(&b, "sampler_interval_us", rnd(2) ? "5000" : "99999999999999999999");
        uint32_t codes[4];
        codes[0] = tb_py(&b, "a", "f.py", 1);
        codes[1] = tb_py(&b, "b", "f.py", 2);
        codes[2] = tb_c(&b, "greenlet.switch");
        codes[3] = tb_py(&b, "c", "f.py", 3);
        for (int k = 0; k < 3; k++) /* profilers a HOOK's `target` names */
            tb_profiler(&b, (uint64_t)k, 0, codes[k]);
        int n = 1 + (int)rnd(60);
        for (int k = 0; k < n; k++) {
            uint32_t st[4];
            uint32_t depth = (uint32_t)rnd(4);
            for (uint32_t d = 0; d < depth; d++)
                st[d] = codes[rnd(4)];
            uint8_t tag = rnd(3) == 0 ? GR_SWITCH
                                      : (uint8_t)(GR_FIRST_INDEXED +
                                                  rnd(GR_LAST_INDEXED - GR_FIRST_INDEXED + 1));
            gr_record r = {.tag = tag, .tid = 1 + rnd(2), .gid = rnd(4), .target = rnd(4),
                           .parent = rnd(3), .flags = rnd(16), .code = codes[rnd(4)],
                           .label = 1, .depth = depth};
            tb_rec(&b, &r, st);
        }
        if (rnd(4))
            tb_finish(&b);
        else
            tb_abandon(&b);
        tside sd;
        ts_open(&sd, &b, 100 + (size_t)rnd(200)); /* a header of ten 10-byte varints fits */
        ts_deltas(&sd, rnd((uint64_t)n + 2));
        int nw = (int)rnd(12);
        for (int k = 0; k < nw; k++)
            ts_wait(&sd, rnd((uint64_t)n + 3), rnd(4) ? rnd(1000) : rnd(UINT64_MAX),
                    rnd(5000000), rnd(2));
        int ns = (int)rnd(8);
        for (int k = 0; k < ns; k++) {
            uint64_t begin = rnd((uint64_t)n + 3), stacks = rnd(4);
            uint64_t frames = rnd(rnd(10) ? 100 : UINT64_MAX);
            ts_sample(&sd, begin, begin + rnd(5), rnd(10) ? rnd(100000) : UINT64_MAX,
                      stacks + rnd(3), frames, rnd(3) ? 0 : rnd(frames + 1), rnd(3) ? 0 : 1,
                      rnd(2), stacks);
            for (uint64_t j = 0; j < stacks; j++) {
                uint32_t c[4];
                for (int d = 0; d < 4; d++)
                    c[d] = rnd(10) ? codes[rnd(4)] : (uint32_t)rnd(9);
                ts_stack(&sd, 1 + rnd(rnd(10) ? 4 : UINT64_MAX - 1), (int)rnd(5), c[0], c[1],
                         c[2], c[3]);
            }
        }
        if (rnd(5))
            ts_finish(&sd);
        else
            ts_abandon(&sd);
        gr_trace t;
        gr_times tm;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        assert_int_equal(gr_times_load(&tm, sd.path), GR_READ_OK);
        consume_stall(&t, &tm);
        gr_times_free(&tm);
        gr_trace_free(&t);
        ts_cleanup(&sd);
        tb_cleanup(&b);
    }
}

/* A realistic side channel with its bytes mutated (CRCs recomputed half
 * of the time): the reader says OK or corrupt, and what it accepts goes
 * through the stall check. */
static void test_mutated_side_channel(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_meta(&b, "sampler", "two-phase");
    uint32_t mod = tb_py(&b, "<module>", "s.py", 1), f = tb_py(&b, "f", "s.py", 5);
    uint32_t sw = tb_c(&b, "greenlet.switch");
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_ev(&b, GR_C_CALL, 1, 1, sw);
    tb_greenlet(&b, 1, 2, 1, 0, 0);
    tb_switch(&b, GR_SWITCH, 1, 1, 2, 1, 5, 0, 1);
    tb_ev(&b, GR_CALL, 1, 2, f);
    tb_ev(&b, GR_C_CALL, 1, 2, sw);
    tb_switch(&b, GR_SWITCH, 1, 2, 1, 0, 5, 0, 1);
    tb_ev(&b, GR_C_RETURN, 1, 1, sw);
    tb_finish(&b);
    tside sd;
    ts_open(&sd, &b, 40);
    ts_deltas(&sd, 8);
    ts_wait(&sd, 3, 0, 400, 0);
    ts_wait(&sd, 6, 2000000, 2100000, 1);
    ts_sample(&sd, 7, 8, 1500, 2, 2, 0, 0, 0, 2);
    ts_stack(&sd, 2, 1, f);
    ts_stack(&sd, 1, 1, mod);
    ts_sample(&sd, 8, 8, 900000, 2, 2, 2, 1, 1, 1);
    ts_stack(&sd, 2, 2, mod, f);
    ts_finish(&sd);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    FILE *fp = fopen(sd.path, "rb");
    assert_non_null(fp);
    uint8_t orig[4096];
    size_t n = fread(orig, 1, sizeof orig, fp);
    fclose(fp);
    assert_true(n > GR_HEADER_LEN && n < sizeof orig);
    gr_times tm;
    assert_int_equal(gr_times_parse(&tm, "s.times", orig, n), GR_READ_OK);
    consume_stall(&t, &tm);
    gr_times_free(&tm);
    uint8_t d[4096];
    int ok = 0;
    for (int iter = 0; iter < 3000; iter++) {
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
        int rc = gr_times_parse(&tm, "m.times", d, n - rnd(4));
        assert_true(rc == GR_READ_OK || rc == GR_READ_CORRUPT);
        if (rc == GR_READ_OK) {
            ok++;
            for (size_t k = 0; k < tm.nsamples; k++)
                assert_true(tm.samples[k].got <= tm.samples[k].nstacks &&
                            tm.samples[k].stack + tm.samples[k].got <= tm.nstacks);
            consume_stall(&t, &tm);
        }
        gr_times_free(&tm);
    }
    assert_true(ok > 100);
    gr_trace_free(&t);
    ts_cleanup(&sd);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_records),
        cmocka_unit_test(test_mutated_bytes),
        cmocka_unit_test(test_long_stacks_are_elided),
        cmocka_unit_test(test_random_side_channels),
        cmocka_unit_test(test_mutated_side_channel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
