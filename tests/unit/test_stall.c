/* test_stall.c - replay/rules/stall.c (`check --stall`): for every stall rule a
 * trace with a side channel that must pass and one that must be flagged,
 * and the figures of the report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dump.h"
#include "report.h"
#include "stall.h"
#include "trace_builder.h"

#include <stdio.h>
#include <string.h>

/* The trace of every test (indices on the right):
 *
 *   0 THREAD t1                         10 C_RETURN g1 switch
 *   1 GREENLET g1 main [mod, main]      11 CALL g1 x
 *   2 START g1                          12 RETURN g1 x
 *   3 C_CALL g1 switch                  13 C_CALL g1 switch
 *   4 GREENLET g2 parent g1             14 SWITCH g1->g2        (W)
 *   5 SWITCH g1->g2            (W)      15 C_RETURN g2 switch
 *   6 CALL g2 f                         16 RETURN g2 h
 *   7 CALL g2 h                         17 C_CALL g2 switch
 *   8 C_CALL g2 switch                  18 SWITCH g2->g1        (W)
 *   9 SWITCH g2->g1            (W)      19 C_RETURN g1 switch
 *
 * From record 10 to 14, g2 is suspended with Python frames [f, h]; from
 * 19 on, with [f].  The side channel has a 'T' entry per record and a 'W'
 * entry per switch; tests add samples. */
typedef struct fx {
    tb b;
    tside s;
    uint32_t mod, main, x, f, h, sw;
    gr_trace t;
    gr_times tm;
    gr_stall st;
    gr_check_result res;
    int ran;
} fx;

#define OURS_KNOWN (GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN)

/* Set by a test before begin(): the META sampler_untracked_greenlets. */
static const char *untracked_meta;
/* Set by a test before begin(): more META records, key then value, NULL
 * after the last. */
static const char *const *extra_metas;

/* Chunk capacity of the trace and its side channel (0: 64 KiB, one chunk
 * each; the second run of every test uses tiny chunks, so that records,
 * 'W' entries and a sample's stacks straddle chunk boundaries in the
 * streamed check). */
static size_t chunk_cap;

static void begin(fx *x, const char *mode)
{
    memset(x, 0, sizeof *x);
    tb_open(&x->b, chunk_cap);
    if (mode) {
        tb_meta(&x->b, "sampler", mode);
        tb_meta(&x->b, "sampler_interval_us", "5000");
    }
    if (untracked_meta)
        tb_meta(&x->b, "sampler_untracked_greenlets", untracked_meta);
    for (size_t i = 0; extra_metas && extra_metas[i]; i += 2)
        tb_meta(&x->b, extra_metas[i], extra_metas[i + 1]);
    x->mod = tb_py(&x->b, "<module>", "s.py", 1);
    x->main = tb_py(&x->b, "main", "s.py", 10);
    x->x = tb_py(&x->b, "x", "s.py", 20);
    x->f = tb_py(&x->b, "f", "s.py", 30);
    x->h = tb_py(&x->b, "h", "s.py", 40);
    x->sw = tb_c(&x->b, "greenlet.switch");
    tb *b = &x->b;
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 2, x->mod, x->main);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_C_CALL, 1, 1, x->sw);
    tb_greenlet(b, 1, 2, 1, 0, 0);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_CALL, 1, 2, x->f);
    tb_ev(b, GR_CALL, 1, 2, x->h);
    tb_ev(b, GR_C_CALL, 1, 2, x->sw);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_C_RETURN, 1, 1, x->sw);
    tb_ev(b, GR_CALL, 1, 1, x->x);
    tb_ev(b, GR_RETURN, 1, 1, x->x);
    tb_ev(b, GR_C_CALL, 1, 1, x->sw);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_C_RETURN, 1, 2, x->sw);
    tb_ev(b, GR_RETURN, 1, 2, x->h);
    tb_ev(b, GR_C_CALL, 1, 2, x->sw);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_C_RETURN, 1, 1, x->sw);
    tb_finish(b);
    ts_open(&x->s, b, chunk_cap ? chunk_cap * 3 : 0);
    ts_deltas(&x->s, b->nrec);
}

/* The four 'W' entries, the one of `index` with wait_ns (contended). */
static void waits(fx *x, uint64_t index, uint64_t wait_ns)
{
    static const uint64_t sw[4] = {5, 9, 14, 18};
    for (int i = 0; i < 4; i++) {
        uint64_t w = sw[i] == index ? wait_ns : 0;
        ts_wait(&x->s, sw[i], w, w + 500, w != 0);
    }
}

/* The streamed check (gr_stall_stream, as `check --stall` runs it) of the
 * same files gives what the loaded one gave: verdicts, violations in the
 * same order with the same messages and context (as lines), warnings,
 * notes and figures. */
static void same_streamed(fx *x, uint64_t max_wait_ns, size_t nv)
{
    gr_trace t;
    gr_stall st;
    gr_check_result res;
    char *err = NULL;
    size_t snv = 0;
    /* Samples or 'W' entries out of index order: the CLI loads both files
     * whole instead (gr_stall_run). */
    int ordered = 1;
    for (size_t i = 1; i < x->tm.nsamples; i++)
        ordered &= x->tm.samples[i].idx_begin >= x->tm.samples[i - 1].idx_begin;
    for (size_t i = 1; i < x->tm.nwaits; i++)
        ordered &= x->tm.waits[i].index >= x->tm.waits[i - 1].index;
    assert_int_equal(gr_trace_open(&t, x->b.path), GR_READ_OK);
    int rc = gr_stall_stream(&t, x->s.path, max_wait_ns, &st, &res, &snv, &err);
    assert_null(err);
    if (!ordered) {
        assert_int_equal(rc, GR_STALL_UNORDERED);
        assert_int_equal(res.nv, 0);
        gr_trace_free(&t);
        return;
    }
    assert_int_equal(rc, GR_STALL_DONE);
    assert_int_equal(snv, nv);
    const gr_check_result *a = &x->res;
    assert_int_equal(res.nv, a->nv);
    assert_int_equal(res.nrules, a->nrules);
    for (int k = 0; k < GR_NRULES; k++)
        assert_int_equal(res.counts[k], a->counts[k]);
    for (size_t i = 0; i < a->nv; i++) {
        const gr_violation *u = &a->v[i], *v = &res.v[i];
        assert_int_equal(v->rule, u->rule);
        assert_int_equal(v->index, u->index);
        assert_int_equal(v->tid, u->tid);
        assert_int_equal(v->gid, u->gid);
        assert_string_equal(v->message, u->message);
        assert_int_equal(v->nctx, u->nctx);
        for (int k = 0; k < u->nctx; k++) {
            assert_int_equal(v->ctx[k], u->ctx[k]);
            assert_non_null(v->ctx_line[k]);
            gr_sb line;
            gr_sb_init(&line);
            gr_dump_record(&line, &x->t, &x->t.recs[u->ctx[k]]);
            assert_string_equal(v->ctx_line[k], gr_sb_str(&line));
            gr_sb_free(&line);
        }
    }
    assert_int_equal(res.nwarnings, a->nwarnings);
    for (size_t i = 0; i < a->nwarnings; i++)
        assert_string_equal(res.warnings[i], a->warnings[i]);
    assert_int_equal(res.nnotes, a->nnotes);
    assert_string_equal(res.summary, a->summary);
    assert_int_equal(res.coverage.records, a->coverage.records);
    gr_check_result_free(&res);
    gr_stall_free(&st);
    gr_trace_free(&t);
}

/* Finish the side channel, read both files, run the stall check. */
static size_t run_max(fx *x, uint64_t max_wait_ns)
{
    ts_finish(&x->s);
    assert_int_equal(tb_load(&x->b, &x->t), GR_READ_OK);
    assert_int_equal(gr_times_load(&x->tm, x->s.path), GR_READ_OK);
    assert_true(gr_times_has_sampler(&x->tm));
    x->ran = 1;
    size_t nv = gr_stall_run(&x->t, &x->tm, max_wait_ns, &x->st, &x->res);
    size_t sum = 0;
    for (int k = 0; k < GR_NRULES; k++)
        sum += x->res.counts[k];
    assert_int_equal(sum, nv);
    assert_int_equal(x->res.nrules, GR_NRULES);
    assert_non_null(x->res.summary);
    const gr_stall *st = &x->st;
    assert_int_equal(st->stacks, st->stacks_equal + st->stacks_partial + st->stacks_torn +
                                     st->stacks_unknown + st->stacks_mismatched +
                                     st->stacks_unusable + st->stacks_not_compared);
    /* all compared, or none, with the reason why */
    assert_true(st->stacks_reason ? st->stacks_not_compared == st->stacks
                                  : st->stacks_not_compared == 0);
    assert_int_equal(st->stacks_mismatched, x->res.counts[GR_RULE_SAMPLE]);
    same_streamed(x, max_wait_ns, nv);
    return nv;
}

static size_t run(fx *x)
{
    return run_max(x, GR_STALL_MAX_WAIT_NS);
}

static void end(fx *x)
{
    if (x->ran) {
        gr_check_result_free(&x->res);
        gr_stall_free(&x->st);
        gr_times_free(&x->tm);
        gr_trace_free(&x->t);
    }
    ts_cleanup(&x->s);
    tb_cleanup(&x->b);
}

static const gr_violation *only(fx *x, enum gr_rule rule)
{
    assert_int_equal(x->res.nv, 1);
    assert_int_equal(x->res.v[0].rule, rule);
    return &x->res.v[0];
}

/* ------------------------------------------------------------ stall_wait */

static void test_wait_under_threshold_passes(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 14, GR_STALL_MAX_WAIT_NS); /* exactly the threshold: not over it */
    ts_sample(&x.s, 11, 11, 800, 2, 2, 0, 0, 0, 0);
    assert_int_equal(run(&x), 0);
    assert_int_equal(x.st.switches, 4);
    assert_true(x.st.wait_max_ns == GR_STALL_MAX_WAIT_NS && x.st.wait_max_index == 14);
    assert_true(x.st.wait_sum_ns == GR_STALL_MAX_WAIT_NS);
    assert_int_equal(x.st.contended, 1);
    assert_int_equal(x.st.over_threshold, 0);
    assert_true(x.st.callback_max_ns == GR_STALL_MAX_WAIT_NS + 500);
    assert_non_null(strstr(x.res.summary, "sampler: two-phase, interval 5000 us; 4 switches, "
                                          "1 samples\n"));
    assert_non_null(strstr(x.res.summary, "lock wait per switch: max 1.0 ms (event 14), sum "
                                          "1.0 ms, contended 1, over 1.0 ms: 0\n"));
    end(&x);
}

static void test_wait_over_threshold_flagged(void **state)
{
    (void)state;
    fx x;
    begin(&x, "hold-lock");
    waits(&x, 14, 2500000);
    assert_int_equal(run(&x), 1);
    const gr_violation *v = only(&x, GR_RULE_STALL_WAIT);
    assert_int_equal(v->index, 14);
    assert_int_equal(v->tid, 1);
    assert_int_equal(v->gid, 2); /* the switch's target: the callback runs there */
    assert_non_null(strstr(v->message, "a switch waited 2.5 ms for the sampler's registry "
                                       "lock, over the threshold of 1.0 ms; 1 of 4 switches"));
    assert_int_equal(v->ctx[v->nctx - 1], 14);
    assert_int_equal(x.st.over_threshold, 1);
    end(&x);
    /* a higher threshold lets it pass */
    begin(&x, "hold-lock");
    waits(&x, 14, 2500000);
    assert_int_equal(run_max(&x, 3000000), 0);
    end(&x);
}

/* ----------------------------------------------------------- stall_depth */

static void test_no_frames_under_lock_passes(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 0, 0);
    ts_sample(&x.s, 11, 11, 900, 2, 2, 0, 0, 0, 0);
    ts_sample(&x.s, 15, 15, 1100, 2, 60, 0, 0, 0, 0);
    assert_int_equal(run(&x), 0);
    assert_int_equal(x.st.samples, 2);
    assert_true(x.st.hold_min_ns == 900 && x.st.hold_max_ns == 1100 &&
                x.st.hold_median_ns == 900 && x.st.hold_sum_ns == 2000);
    assert_true(x.st.frames_sum == 62 && x.st.frames_under_lock_sum == 0);
    assert_int_equal(x.st.nbuckets, 2);
    assert_true(x.st.buckets[0].frames_min == 2 && x.st.buckets[1].frames_max == 60);
    end(&x);
}

static void test_frames_under_lock_flagged(void **state)
{
    (void)state;
    fx x;
    begin(&x, "hold-lock");
    waits(&x, 0, 0);
    ts_sample(&x.s, 11, 11, 900, 2, 2, 0, 0, 0, 0);
    ts_sample(&x.s, 15, 15, 90000, 2, 2, 2, 0, 0, 0);
    ts_sample(&x.s, 19, 19, 95000, 2, 3, 3, 0, 0, 0);
    assert_int_equal(run(&x), 1);
    const gr_violation *v = only(&x, GR_RULE_STALL_DEPTH);
    assert_int_equal(v->index, 15);
    assert_int_equal(v->tid, 0);
    assert_non_null(strstr(v->message, "sample 1 (taken after event 14) read 2 of its 2 frames "
                                       "while holding the registry lock (hold 90.0 us)"));
    assert_non_null(strstr(v->message, "2 of 3 samples read frames under the lock (5 frames"));
    assert_true(v->nctx >= 1 && v->ctx[v->nctx - 1] == 14);
    assert_int_equal(x.st.samples_under_lock, 2);
    assert_true(x.st.has_correlation && x.st.hold_frames_r > 0.5);
    end(&x);
}

/* ---------------------------------------------------------------- sample */

static void test_sample_matches(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 0, 0);
    ts_sample(&x.s, 11, 11, 800, 2, 2, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 2, x.f, x.h);
    ts_sample(&x.s, 20, 20, 800, 2, 2, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 1, x.f);
    /* the main greenlet: SWITCH 14 may have updated the registry before
     * the sampler read 14 records; its shadow (C entry left out) matches */
    ts_sample(&x.s, 14, 14, 800, 2, 2, 0, 0, 0, 1);
    ts_stack(&x.s, 1, 2, x.mod, x.main);
    assert_int_equal(run(&x), 0);
    assert_int_equal(x.st.stacks, 3);
    assert_int_equal(x.st.stacks_equal, 3);
    end(&x);
}

static void test_sample_mismatch_flagged(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 0, 0);
    ts_sample(&x.s, 12, 12, 800, 2, 2, 0, 0, 0, 0);
    ts_sample(&x.s, 11, 12, 800, 2, 1, 0, 0, 0, 1); /* no switch of g2 in [10, 12] */
    ts_stack(&x.s, 2, 1, x.f);                       /* h is missing */
    assert_int_equal(run(&x), 1);
    const gr_violation *v = only(&x, GR_RULE_SAMPLE);
    assert_int_equal(v->index, 11);
    assert_true(v->tid == 1 && v->gid == 2);
    assert_non_null(strstr(v->message, "sample 1 (taken after event 10): sampled stack of "
                                       "suspended g2 differs from its shadow stack: "
                                       "profiler missed return of h (s.py:40)"));
    assert_non_null(strstr(v->message, "real stack: f (s.py:30); shadow: f (s.py:30) > h "
                                       "(s.py:40)"));
    assert_true(v->nctx == 3 && v->ctx[2] == 10);
    assert_int_equal(x.st.stacks_mismatched, 1);
    end(&x);
}

/* The same two verdicts with the samples in the order the reference
 * sampler writes them (idx_begin ascending): checked streamed too. */
static void test_sample_in_order(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 0, 0);
    ts_sample(&x.s, 11, 12, 800, 2, 1, 0, 0, 0, 1); /* no switch of g2 in [10, 12] */
    ts_stack(&x.s, 2, 1, x.f);                       /* h is missing */
    ts_sample(&x.s, 12, 12, 800, 2, 2, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 2, x.f, x.h);                  /* equal */
    ts_sample(&x.s, 20, 20, 800, 2, 2, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 1, x.f);                       /* equal */
    assert_int_equal(run(&x), 1);
    const gr_violation *v = only(&x, GR_RULE_SAMPLE);
    assert_int_equal(v->index, 11);
    assert_non_null(strstr(v->message, "sample 0 (taken after event 10): sampled stack of "
                                       "suspended g2 differs from its shadow stack"));
    assert_int_equal(x.st.stacks_equal, 2);
    assert_int_equal(x.st.stacks_mismatched, 1);
    end(&x);
}

static void test_sample_torn_by_switch(void **state)
{
    (void)state;
    fx x;
    begin(&x, "seqlock");
    waits(&x, 0, 0);
    /* g2 was resumed by SWITCH 14 while the sample was taken */
    ts_sample(&x.s, 12, 15, 800, 2, 1, 0, 0, 3, 1);
    ts_stack(&x.s, 2, 1, x.f);
    /* running at 15 per the trace, but SWITCH 14 is in [14, 15] */
    ts_sample(&x.s, 15, 15, 800, 2, 1, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 1, x.f);
    /* the window reaches one record back: SWITCH 18 for a sample at 19 */
    ts_sample(&x.s, 19, 19, 800, 2, 1, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 2, x.f, x.h);
    assert_int_equal(run(&x), 0);
    assert_int_equal(x.st.stacks_torn, 3);
    assert_true(x.st.torn_sum == 3); /* the sampler's own seqlock retries */
    end(&x);
}

static void test_sample_running_flagged(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 0, 0);
    ts_sample(&x.s, 7, 7, 800, 2, 1, 0, 0, 0, 1); /* g2 runs from 5 to 9 */
    ts_stack(&x.s, 2, 1, x.f);
    ts_sample(&x.s, 11, 11, 800, 3, 1, 0, 0, 0, 1); /* g3 never appears */
    ts_stack(&x.s, 3, 1, x.f);
    assert_int_equal(run(&x), 2);
    assert_int_equal(x.res.v[0].rule, GR_RULE_SAMPLE);
    assert_non_null(strstr(x.res.v[0].message, "g2 was sampled as suspended but is the running "
                                               "greenlet of its thread"));
    assert_non_null(strstr(x.res.v[1].message, "g3 was sampled as suspended but has no record "
                                               "before it"));
    assert_int_equal(x.res.v[1].tid, 0);
    end(&x);
}

static void test_sample_unknown_and_partial(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    waits(&x, 0, 0);
    ts_sample(&x.s, 11, 11, 800, 2, 2, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 3, 0u, x.f, x.h); /* a frame the profiler never saw */
    ts_sample(&x.s, 11, 11, 800, 2, 1, 0, 1, 0, 1);
    ts_stack(&x.s, 2, 1, x.h);          /* a failed read cut f off */
    ts_sample(&x.s, 11, 11, 800, 2, 1, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 1, x.h);          /* same without a failed read: mismatch */
    assert_int_equal(run(&x), 1);
    assert_int_equal(x.st.stacks_unknown, 1);
    assert_int_equal(x.st.stacks_partial, 1);
    assert_int_equal(x.st.stacks_mismatched, 1);
    assert_non_null(strstr(x.res.summary, "sampled stacks: 3: 0 equal, 1 partial, 0 torn by a "
                                          "switch, 1 with unknown code, 1 mismatched\n"));
    end(&x);
}

/* ---------------------------------------------------------- profile=False */

/* A recording as start(profile=False, sampler=mode) writes it: switches
 * (callback mode) with the target's real stack, no profile event, META
 * profile: off when `off`, and a 'W' entry per switch (the one at 7 waits
 * wait_ns).  g2 runs f -> h unseen between its switches.
 *
 *   0 THREAD t1                         6 SWITCH g1->g2 [f h]        (W)
 *   1 GREENLET g1 main [mod, main]      7 SWITCH g2->g1 [mod main]   (W)
 *   2 START g1                          8 SWITCH g1->g2 [f h]        (W)
 *   3 GREENLET g2 parent g1             9 SWITCH g2->g1 [mod main]   (W)
 *   4 SWITCH g1->g2 []         (W)     10 STOP g1
 *   5 SWITCH g2->g1 [mod main] (W)     11 STACK g1 [mod x]
 *
 * One sample at 7 reads g2's 2 frames, `under` of them under the lock. */
static void begin_off(fx *x, const char *mode, int off, uint64_t wait_ns, uint64_t under)
{
    memset(x, 0, sizeof *x);
    tb_open(&x->b, chunk_cap);
    if (off)
        tb_meta(&x->b, "profile", "off");
    tb_meta(&x->b, "switches", "callback");
    tb_meta(&x->b, "sampler", mode);
    tb_meta(&x->b, "sampler_interval_us", "1000");
    x->mod = tb_py(&x->b, "<module>", "s.py", 1);
    x->main = tb_py(&x->b, "main", "s.py", 10);
    x->x = tb_py(&x->b, "x", "s.py", 20);
    x->f = tb_py(&x->b, "f", "s.py", 30);
    x->h = tb_py(&x->b, "h", "s.py", 40);
    tb *b = &x->b;
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 2, x->mod, x->main);
    tb_simple(b, GR_START, 1, 1);
    tb_greenlet(b, 1, 2, 1, 0, 0);
    tb_switch_stack(b, GR_SWITCH, 1, 1, 2, 1, GR_SW_NEW, 0, 0, 0);
    for (int k = 0; k < 2; k++) {
        tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0, 0, 0, 0, 2, x->mod, x->main);
        tb_switch_stack(b, GR_SWITCH, 1, 1, 2, 1, 0, 0, 0, 2, x->f, x->h);
    }
    tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0, 0, 0, 0, 2, x->mod, x->main);
    tb_simple(b, GR_STOP, 1, 1);
    tb_stack(b, 1, 1, GR_STACK_RUNNING, 2, x->mod, x->x);
    tb_finish(b);
    ts_open(&x->s, b, chunk_cap ? chunk_cap * 3 : 0);
    ts_deltas(&x->s, b->nrec);
    for (uint64_t i = 4; i <= 9; i++)
        ts_wait(&x->s, i, i == 7 ? wait_ns : 0, 400 + (i == 7 ? wait_ns : 0), i == 7 && wait_ns);
    ts_sample(&x->s, 7, 7, under ? 3000000 : 900, 2, 2, under, 0, 0, 1);
    ts_stack(&x->s, 2, 2, x->f, x->h);
}

static int has_warning(const fx *x, const char *phrase)
{
    for (size_t i = 0; i < x->res.nwarnings; i++)
        if (strstr(x->res.warnings[i], phrase))
            return 1;
    return 0;
}

/* The text report of x (gr_report_text), malloc'd: the caller frees it. */
static char *text_report(fx *x)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    gr_report_text(f, &x->t, &x->res);
    fclose(f);
    return text;
}

/* start(profile=False) with the fixed sampler: clean.  The checker's
 * stack rules need profile events (blind_spot, imbalance: not compared,
 * test_check.c), and so do the sampled stacks: said in a warning, in the
 * summary ("sampled stacks: N, not compared (REASON)", not counts of 0
 * that read as a pass) and in JSON (compared false, the reason). */
static void test_profile_off_passes(void **state)
{
    (void)state;
    fx x;
    begin_off(&x, "two-phase", 1, 2000, 0);
    ts_sample(&x.s, 9, 9, 900, 2, 4, 0, 0, 0, 2); /* a second sample: 3 stacks in all */
    ts_stack(&x.s, 2, 2, x.f, x.h);
    ts_stack(&x.s, 1, 2, x.mod, x.main);
    assert_int_equal(run(&x), 0);
    assert_true(x.res.coverage.profile_off);
    assert_int_equal(x.st.switches, 6);
    assert_int_equal(x.st.samples, 2);
    assert_int_equal(x.st.stacks, 3);
    assert_int_equal(x.st.stacks_not_compared, 3);
    assert_int_equal(x.st.stacks_equal, 0);
    assert_int_equal(x.st.stacks_mismatched, 0);
    assert_string_equal(x.st.stacks_reason, GR_STALL_NO_PROFILE);
    assert_true(has_warning(&x, "recorded without the profile function (profile=False): "
                                "sampled stacks were not compared"));
    assert_non_null(strstr(x.res.summary, "\nsampled stacks: 3, not compared (recorded without "
                                          "the profile function, profile=False)\n"));
    assert_null(strstr(x.res.summary, "equal"));
    char *text = text_report(&x);
    assert_non_null(strstr(text, "sampled stacks: 3, not compared (recorded without the profile "
                                 "function, profile=False)\n"));
    free(text);
    json_t *j = gr_stall_json(&x.st);
    json_t *s = json_object_get(j, "stacks");
    assert_int_equal(json_integer_value(json_object_get(s, "total")), 3);
    assert_int_equal(json_integer_value(json_object_get(s, "not_compared")), 3);
    assert_int_equal(json_integer_value(json_object_get(s, "equal")), 0);
    assert_true(json_is_false(json_object_get(s, "compared")));
    assert_string_equal(json_string_value(json_object_get(s, "reason")),
                        "recorded without the profile function, profile=False");
    json_decref(j);
    end(&x);
}

/* the same recording with the stalling sampler: exactly the two stall
 * rules, nothing from the rules that need profile events */
static void test_profile_off_stall_flagged(void **state)
{
    (void)state;
    fx x;
    begin_off(&x, "hold-lock", 1, 2500000, 2);
    assert_int_equal(run(&x), 2);
    assert_int_equal(x.res.counts[GR_RULE_STALL_WAIT], 1);
    assert_int_equal(x.res.counts[GR_RULE_STALL_DEPTH], 1);
    assert_int_equal(x.res.v[0].rule, GR_RULE_STALL_WAIT);
    assert_int_equal(x.res.v[0].index, 7);
    assert_int_equal(x.res.v[1].rule, GR_RULE_STALL_DEPTH);
    assert_non_null(strstr(x.res.v[1].message, "read 2 of its 2 frames while holding"));
    end(&x);
}

/* the same records without META profile: off claim the profile function
 * was on: its missing events are then flagged as the checker flags them */
static void test_profile_on_same_records_flagged(void **state)
{
    (void)state;
    fx x;
    begin_off(&x, "two-phase", 0, 0, 0);
    run(&x);
    assert_true(x.res.counts[GR_RULE_BLIND_SPOT] >= 1);
    /* at STOP: g1's STACK differs; g2 has no STACK, but its open frames
     * were re-seeded from the real stack of a blind spot already
     * reported (as at a DEAD): one cause, one finding */
    assert_int_equal(x.res.counts[GR_RULE_IMBALANCE], 1);
    assert_false(x.res.coverage.profile_off);
    assert_false(has_warning(&x, "recorded without the profile function"));
    end(&x);
}

/* ---------------------------------------------------- mismatched files */

static void test_side_channel_does_not_fit(void **state)
{
    (void)state;
    fx x;
    begin(&x, NULL); /* no sampler META */
    ts_wait(&x.s, 3, 0, 100, 0); /* record 3 is a C_CALL */
    ts_sample(&x.s, 40, 41, 800, 2, 1, 0, 0, 0, 1); /* after the end */
    ts_stack(&x.s, 2, 1, x.f);
    ts_sample(&x.s, 11, 11, 800, 2, 1, 0, 0, 0, 1);
    ts_stack(&x.s, 2, 1, 99u); /* undefined code id */
    assert_int_equal(run(&x), 0);
    assert_int_equal(x.st.stacks_unusable, 2);
    int seen = 0;
    for (size_t i = 0; i < x.res.nwarnings; i++) {
        const char *w = x.res.warnings[i];
        seen |= strstr(w, "no `sampler` META") ? 1 : 0;
        seen |= strstr(w, "name no SWITCH/THROW record") ? 2 : 0;
        seen |= strstr(w, "4 SWITCH/THROW records but the side channel 1") ? 4 : 0;
        seen |= strstr(w, "1 sample was taken after the last record") ? 8 : 0;
        seen |= strstr(w, "code ids the trace does not define") ? 16 : 0;
    }
    assert_int_equal(seen, 31);
    end(&x);
}

/* greenlets past the registry's capacity: said, not silent; without the
 * META record nothing is said */
static void test_registry_overflow_warned(void **state)
{
    (void)state;
    for (int overflow = 0; overflow < 2; overflow++) {
        fx x;
        untracked_meta = overflow ? "7" : NULL;
        begin(&x, "two-phase");
        untracked_meta = NULL;
        run(&x);
        int seen = 0;
        for (size_t i = 0; i < x.res.nwarnings; i++)
            seen |= strstr(x.res.warnings[i], "7 greenlets were past the sampler registry") != NULL;
        assert_int_equal(seen, overflow);
        end(&x);
    }
}

/* The sampler's counts at stop (META), each a warning that starts with
 * the count and says what it counts; lost_full names its one cause left
 * (an own buffer too small to thin), besides a recorder that did not thin
 * yet (its traces still read). */
static void test_sampler_counts_warned(void **state)
{
    (void)state;
    static const char *const metas[] = {"sampler_samples_thinned", "11", "sampler_samples_lost_full", "12",
                                        "sampler_samples_lost_large", "13", NULL};
    static const char *const want[] = {
        "11 sampling times without a sample kept: the program recorded nothing for longer than "
        "the sampler's ring and own buffer hold, so the own buffer was thinned",
        "12 samples lost: the sampler's ring and own buffer were full while the program "
        "recorded nothing, and the own buffer could not be thinned (too small, with "
        "GREENREPLAY_SAMPLER_RING_MAX; or a recorder that did not thin yet)",
        "13 samples were larger than the sampler's ring takes",
    };
    fx x;
    extra_metas = metas;
    begin(&x, "two-phase");
    extra_metas = NULL;
    run(&x);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!has_warning(&x, want[i]))
            fail_msg("no warning '%s'", want[i]);
    end(&x);
    begin(&x, "two-phase"); /* none without the META records */
    run(&x);
    assert_false(has_warning(&x, "sampling times without a sample kept"));
    assert_false(has_warning(&x, "samples lost"));
    assert_false(has_warning(&x, "larger than the sampler's ring"));
    end(&x);
}

/* ---------------------------------------------------------------- output */

static void test_reports(void **state)
{
    (void)state;
    fx x;
    begin(&x, "hold-lock");
    waits(&x, 9, 5000000);
    ts_sample(&x.s, 11, 11, 3000000, 2, 2, 2, 0, 0, 1);
    ts_stack(&x.s, 2, 1, x.f);
    assert_int_equal(run(&x), 3);
    char *text = text_report(&x);
    assert_non_null(strstr(text, "  stall_wait           1     switches that waited too long for the "
                                 "sampler's lock\n"
                                 "  stall_depth          1     samples that read frames while holding "
                                 "the lock\n"
                                 "  sample               1     sampled stacks that differ from the "
                                 "shadow stack\n"));
    assert_non_null(strstr(text, "\nstall_depth at event 11: sample 0"));
    assert_non_null(strstr(text, "\nstall_wait at event 9 (t1 g1): "));
    assert_non_null(strstr(text, "\nsample at event 11 (t1 g2): "));
    assert_non_null(strstr(text, "lock hold per sample: min 3.0 ms"));
    free(text);

    json_t *j = gr_report_json_trace(&x.t, &x.res);
    json_object_set_new(j, "stall", gr_stall_json(&x.st));
    json_t *counts = json_object_get(j, "counts");
    assert_int_equal(json_object_size(counts), GR_NRULES);
    assert_int_equal(json_integer_value(json_object_get(counts, "stall_wait")), 1);
    json_t *st = json_object_get(j, "stall");
    assert_string_equal(json_string_value(json_object_get(st, "sampler")), "hold-lock");
    assert_int_equal(json_integer_value(json_object_get(st, "interval_us")), 5000);
    json_t *w = json_object_get(st, "wait");
    assert_int_equal(json_integer_value(json_object_get(w, "max_ns")), 5000000);
    assert_int_equal(json_integer_value(json_object_get(w, "max_index")), 9);
    assert_int_equal(json_integer_value(json_object_get(st, "frames_under_lock")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "stacks"),
                                                        "mismatched")), 1);
    assert_true(json_is_true(json_object_get(json_object_get(st, "stacks"), "compared")));
    assert_true(json_is_null(json_object_get(json_object_get(st, "stacks"), "reason")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "stacks"),
                                                        "not_compared")), 0);
    char *dump = json_dumps(j, 0);
    assert_non_null(dump);
    free(dump);
    json_decref(j);

    gr_junit ju;
    gr_junit_init(&ju);
    gr_junit_add_trace(&ju, &x.t, &x.res);
    assert_int_equal(ju.tests, GR_NRULES + 1); /* the rules and "coverage" */
    assert_int_equal(ju.failures, 3);
    assert_non_null(strstr(gr_sb_str(&ju.body), "<testcase classname"));
    assert_non_null(strstr(gr_sb_str(&ju.body), "name=\"stall_depth\">"));
    assert_non_null(strstr(gr_sb_str(&ju.body), "sampler: hold-lock, interval 5000 us"));
    gr_junit_free(&ju);
    end(&x);
}

/* Plain `check` results keep the four rules of before. */
static void test_plain_check_unchanged(void **state)
{
    (void)state;
    fx x;
    begin(&x, "two-phase");
    ts_finish(&x.s);
    assert_int_equal(tb_load(&x.b, &x.t), GR_READ_OK);
    gr_check_result r;
    assert_int_equal(gr_check_run(&x.t, &r), 0);
    assert_int_equal(r.nrules, GR_NRULES_CHECK);
    assert_null(r.summary);
    json_t *j = gr_report_json_trace(&x.t, &r);
    assert_int_equal(json_object_size(json_object_get(j, "counts")), GR_NRULES_CHECK);
    json_decref(j);
    gr_check_result_free(&r);
    gr_trace_free(&x.t);
    ts_cleanup(&x.s);
    tb_cleanup(&x.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_under_threshold_passes),
        cmocka_unit_test(test_wait_over_threshold_flagged),
        cmocka_unit_test(test_no_frames_under_lock_passes),
        cmocka_unit_test(test_frames_under_lock_flagged),
        cmocka_unit_test(test_sample_matches),
        cmocka_unit_test(test_sample_mismatch_flagged),
        cmocka_unit_test(test_sample_in_order),
        cmocka_unit_test(test_sample_torn_by_switch),
        cmocka_unit_test(test_sample_running_flagged),
        cmocka_unit_test(test_sample_unknown_and_partial),
        cmocka_unit_test(test_profile_off_passes),
        cmocka_unit_test(test_profile_off_stall_flagged),
        cmocka_unit_test(test_profile_on_same_records_flagged),
        cmocka_unit_test(test_side_channel_does_not_fit),
        cmocka_unit_test(test_registry_overflow_warned),
        cmocka_unit_test(test_sampler_counts_warned),
        cmocka_unit_test(test_reports),
        cmocka_unit_test(test_plain_check_unchanged),
    };
    int failed = cmocka_run_group_tests_name("one chunk", tests, NULL, NULL);
    chunk_cap = 48; /* a few records per chunk; a few entries or stacks per side chunk */
    failed += cmocka_run_group_tests_name("tiny chunks", tests, NULL, NULL);
    return failed;
}
