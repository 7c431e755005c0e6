/* test_split.c - replay/rules/split.c (`check --from A --to B`): traces whose
 * checker state crosses chunk boundaries, checked in pieces at every
 * boundary, give exactly the whole check's violations (split_check.h):
 * state the rules keep of their own before the range (a thread's MARK
 * without the profile function reported once, propagation reported once
 * per switch, the subject profiler off, one prediction per greenlet and
 * version), and verdicts that wait for records after the range (a MARK
 * waiting for its C_RETURN, an episode of the subject profiler off, a
 * prediction, open frames at STOP without a STACK).  Also: ranges and
 * their record indices, the chunk count and the trace's end seen by a
 * worker that stops early, a range past the end, a truncated trace; a
 * verdict from the METAs written at stop (split.h, of_whole). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"
#include "seek.h"
#include "split.h"
#include "trace_builder.h"
#include "split_check.h"

#include <stdio.h>
#include <string.h>

typedef struct codes {
    uint32_t mod, f, w, mk, sw, label;
} codes;

#define OURS_KNOWN (GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN)

/* The trace of every scenario, a chunk boundary (tb_flush) inside each;
 * with a trailer, or cut short (finish 0). */
static void build(tb *b, int finish)
{
    codes c;
    tb_open(b, 1 << 16);
    c.mod = tb_py(b, "<module>", "s.py", 1);
    c.f = tb_py(b, "f", "s.py", 5);
    c.w = tb_py(b, "work", "s.py", 9);
    c.mk = tb_c(b, "greenreplay.mark");
    c.sw = tb_c(b, "greenlet.switch");
    c.label = tb_str(b, "here");
    tb_flush(b); /* chunk 0: definitions only */
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, c.mod);
    tb_simple(b, GR_START, 1, 1);
    tb_greenlet(b, 1, 2, 1, 0, 0);
    /* A: a bracketed MARK whose next record (another chunk) is not the
     * C_RETURN of mark: blind_spot at the MARK, decided after the boundary. */
    tb_ev(b, GR_C_CALL, 1, 1, c.mk);
    tb_mark(b, 1, 1, c.label, c.mk, GR_MARK_PROFILE_OURS | GR_MARK_STATE_KNOWN, 1, c.mod);
    tb_flush(b);
    tb_ev(b, GR_CALL, 1, 1, c.f);
    tb_ev(b, GR_RETURN, 1, 1, c.f);
    tb_ev(b, GR_C_RETURN, 1, 1, c.mk);
    /* B: a switch into g2 with use_tracing 0 (propagation), then in the
     * next chunk a MARK of g2 with tracing off: reported once, at the
     * switch. */
    tb_ev(b, GR_C_CALL, 1, 1, c.sw);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 0);
    tb_flush(b);
    tb_ev(b, GR_CALL, 1, 2, c.f);
    tb_ev(b, GR_C_CALL, 1, 2, c.mk);
    tb_mark(b, 1, 2, c.label, c.mk,
            GR_MARK_PROFILE_OURS | GR_MARK_STATE_KNOWN | GR_MARK_TRACING_OFF, 1, c.f);
    tb_ev(b, GR_C_RETURN, 1, 2, c.mk);
    tb_ev(b, GR_C_CALL, 1, 2, c.sw);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 1, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_C_RETURN, 1, 1, c.sw);
    /* C: the program removes the subject profiler; Python calls run unseen
     * over two chunks, and a MARK without it (not an unprofiled thread:
     * the episode names the cause), until it is back. */
    tb_hook(b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_CLEARED, 0, 0);
    tb_flush(b);
    tb_ev(b, GR_CALL, 1, 1, c.f);
    tb_ev(b, GR_RETURN, 1, 1, c.f);
    tb_flush(b);
    tb_mark(b, 1, 1, c.label, c.mk, GR_MARK_STATE_KNOWN, 1, c.mod);
    tb_ev(b, GR_CALL, 1, 1, c.w);
    tb_ev(b, GR_RETURN, 1, 1, c.w);
    tb_hook(b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, 0);
    /* D: a thread without the profile function: its first MARK is
     * reported, the one in the next chunk is not. */
    tb_thread(b, 2);
    tb_greenlet(b, 2, 3, 0, GR_GL_MAIN, 1, c.w);
    tb_mark(b, 2, 3, c.label, c.mk, GR_MARK_STATE_KNOWN, 1, c.w);
    tb_flush(b);
    tb_mark(b, 2, 3, c.label, c.mk, GR_MARK_STATE_KNOWN, 1, c.w);
    /* E: 3.12 predictions: a profiled switch into g2 at the end of a chunk,
     * its INSTR (stale frames) at the start of the next one; g2 switches
     * away without evidence: unconfirmed prediction at the switch.  A
     * second switch into g2 with the same version makes no new one. */
    tb_ev(b, GR_C_CALL, 1, 1, c.sw);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_flush(b);
    tb_instr(b, 1, 2, 7, 2, 1);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 1, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_C_RETURN, 1, 1, c.sw);
    tb_flush(b);
    tb_ev(b, GR_C_CALL, 1, 1, c.sw);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_instr(b, 1, 2, 7, 2, 1);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 1, OURS_KNOWN, 0, 1);
    tb_ev(b, GR_C_RETURN, 1, 1, c.sw);
    /* F: STOP with g2 still open in f (B), STACK records only for g1 and
     * t2 in the next chunk: imbalance at the STOP. */
    tb_simple(b, GR_STOP, 1, 1);
    tb_flush(b);
    tb_stack(b, 1, 1, GR_STACK_RUNNING, 1, c.mod);
    tb_stack(b, 2, 3, GR_STACK_RUNNING, 1, c.w);
    if (finish)
        tb_finish(b);
    else
        tb_abandon(b);
}

/* Rules and record indices of the whole check's violations. */
static size_t whole(const char *path, gr_check_result *res)
{
    gr_trace t;
    assert_int_equal(gr_trace_open(&t, path), GR_READ_OK);
    size_t nv = gr_check_stream(&t, res);
    gr_trace_free(&t);
    return nv;
}

static int has(const gr_check_result *r, enum gr_rule rule, const char *text)
{
    for (size_t i = 0; i < r->nv; i++)
        if (r->v[i].rule == rule && strstr(r->v[i].message, text))
            return 1;
    return 0;
}

static void test_state_across_boundaries(void **state)
{
    (void)state;
    tb b;
    build(&b, 1);
    gr_check_result r;
    whole(b.path, &r);
    /* the scenarios are what they claim to be */
    assert_true(has(&r, GR_RULE_BLIND_SPOT, "mark not bracketed"));
    assert_true(has(&r, GR_RULE_PROPAGATION, "resumes with use_tracing=0"));
    assert_false(has(&r, GR_RULE_PROPAGATION, "runs with use_tracing=0 at this MARK"));
    assert_true(has(&r, GR_RULE_DISPLACED, "removed by the program"));
    assert_true(has(&r, GR_RULE_DISPLACED, "2 Python calls ran unseen"));
    assert_true(has(&r, GR_RULE_BLIND_SPOT, "no profile function on t2"));
    assert_int_equal(r.counts[GR_RULE_BLIND_SPOT], 2); /* A, and t2's of D */
    assert_int_equal(r.counts[GR_RULE_DISPLACED], 1);  /* t1's of D */
    /* E: no evidence before g2 switched away: a note, not a violation */
    assert_false(has(&r, GR_RULE_PROPAGATION, "predicted blind spot"));
    assert_true(r.ninfos == 1 && strstr(r.infos[0], "neither confirmed nor refuted"));
    assert_true(has(&r, GR_RULE_IMBALANCE, "no STACK record"));
    size_t nv = r.nv;
    gr_check_result_free(&r);
    uint64_t n = split_same_as_whole(b.path);
    assert_true(n >= 10);
    assert_true(nv >= 5);
    tb_cleanup(&b);
}

static void test_truncated(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    split_same_as_whole(b.path);
    tb_cleanup(&b);
}

/* Record indices of a range; a worker that stops early still knows the
 * chunk count and the trailer (seek.h), and reports no verdict about the
 * end of the trace; a range that ends at the last chunk does. */
static void test_range_and_end(void **state)
{
    (void)state;
    tb b;
    build(&b, 1);
    gr_trace t;
    gr_check_result r;
    gr_split sp = {.from = 1, .to = 2};
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
    assert_true(sp.lo == 0 && sp.hi == 6); /* chunk 0: definitions, chunk 1: 6 records */
    assert_false(sp.ended);
    assert_true(sp.read_on > 0); /* the MARK of A waits for the next record */
    assert_true(t.has_trailer);
    assert_true(t.trailer.events == b.nrec);
    assert_int_equal(r.nv, 1);
    assert_true(r.v[0].index == 5 && r.v[0].rule == GR_RULE_BLIND_SPOT);
    assert_null(r.coverage.nothing);
    assert_int_equal(r.nnotes, 0);
    uint64_t chunks = sp.chunks;
    gr_check_result_free(&r);
    gr_trace_free(&t);
    /* the last chunk reads to the end */
    sp = (gr_split){.from = chunks - 1, .to = UINT64_MAX};
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
    assert_true(sp.ended && sp.chunks == chunks && sp.hi == UINT64_MAX);
    assert_int_equal(r.nv, 0);
    gr_check_result_free(&r);
    gr_trace_free(&t);
    /* --to the number of chunks is the last range too: it runs the
     * end-of-trace verdicts (open frames at STOP), as --to omitted does */
    gr_check_result r2;
    sp = (gr_split){.from = 1, .to = UINT64_MAX};
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_check_split(&t, &sp, &r2), GR_SPLIT_OK);
    gr_trace_free(&t);
    sp = (gr_split){.from = 1, .to = chunks};
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
    assert_true(sp.ended && sp.chunks == chunks);
    assert_int_equal(r.nv, r2.nv);
    for (size_t i = 0; i < r.nv; i++)
        assert_string_equal(r.v[i].message, r2.v[i].message);
    assert_int_equal(r.nnotes, r2.nnotes);
    assert_int_equal(r.nwarnings, r2.nwarnings);
    gr_check_result_free(&r);
    gr_check_result_free(&r2);
    gr_trace_free(&t);
    /* past the end */
    sp = (gr_split){.from = chunks, .to = UINT64_MAX};
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_PAST_END);
    assert_true(sp.chunks == chunks);
    assert_int_equal(r.nv, 0);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* The continued switches' self-check (METAs written at stop, after the
 * last record) names a switch in an earlier chunk: the worker whose range
 * holds it stops before the METAs, so the last range's worker keeps the
 * violation (split.h), also when its --to is the number of chunks (nothing
 * pending there: it runs the end-of-trace verdicts because no chunk is
 * left). */
static void test_verdict_from_metas_at_stop(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 1 << 16);
    uint32_t mod = tb_py(&b, "<module>", "s.py", 1), f = tb_py(&b, "f", "s.py", 5);
    uint32_t sw = tb_c(&b, "greenlet.switch");
    tb_flush(&b); /* chunk 0: definitions only */
    tb_thread(&b, 1);                                              /* 0 */
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 1, mod);                  /* 1 */
    tb_greenlet(&b, 1, 2, 1, GR_GL_SUSPENDED, 1, f);               /* 2 */
    tb_ev(&b, GR_C_CALL, 1, 1, sw);                                /* 3 */
    tb_switch(&b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_CONTINUED, 0, 255); /* 4 */
    tb_ev(&b, GR_CALL, 1, 2, f);                                   /* 5 */
    tb_ev(&b, GR_RETURN, 1, 2, f);                                 /* 6 */
    tb_flush(&b); /* chunk 1 */
    tb_meta(&b, "continued_verified", "1");
    tb_meta(&b, "continued_mismatch", "1");
    tb_meta(&b, "continued_mismatch_first", "4 1 2 1");
    tb_finish(&b); /* chunk 2 */
    gr_check_result r;
    whole(b.path, &r);
    assert_true(has(&r, GR_RULE_SWITCH_CONSISTENCY, "self-check GREENREPLAY_VERIFY_CONTINUED"));
    gr_check_result_free(&r);
    assert_int_equal(split_same_as_whole(b.path), 3);
    gr_trace t;
    for (int k = 0; k < 2; k++) {
        gr_split sp = {.from = 1, .to = k ? 3 : UINT64_MAX};
        assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
        assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
        assert_true(sp.ended);
        assert_true(has(&r, GR_RULE_SWITCH_CONSISTENCY, "self-check"));
        gr_check_result_free(&r);
        gr_trace_free(&t);
    }
    /* a range that holds the switch but not the end: not there */
    gr_split sp = {.from = 0, .to = 2};
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
    assert_false(sp.ended);
    assert_false(has(&r, GR_RULE_SWITCH_CONSISTENCY, "self-check"));
    gr_check_result_free(&r);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* seek.h on a truncated trace and on a corrupt chunk header after the
 * range. */
static void test_skip_rest(void **state)
{
    (void)state;
    tb b;
    build(&b, 0);
    gr_trace t;
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_trace_next_chunk(&t), 1);
    uint64_t more = 0;
    assert_int_equal(gr_trace_skip_rest(&t, &more), 0);
    assert_true(more >= 9);
    assert_true(t.truncated && !t.has_trailer && t.done);
    uint64_t at = t.truncated_at;
    gr_trace_free(&t);
    gr_trace full;
    assert_int_equal(gr_trace_load(&full, b.path), GR_READ_OK);
    assert_true(full.truncated_at == at);
    gr_trace_free(&full);
    /* a bad chunk tag after the first chunk */
    size_t n;
    uint8_t *d = tb_bytes(&b, &n);
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_trace_next_chunk(&t), 1);
    size_t bad_at = t.io.pos;
    gr_trace_free(&t);
    d[bad_at] = 'Q';
    FILE *f = fopen(b.path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
    free(d);
    assert_int_equal(gr_trace_open(&t, b.path), GR_READ_OK);
    assert_int_equal(gr_trace_next_chunk(&t), 1);
    assert_int_equal(gr_trace_skip_rest(&t, &more), -1);
    assert_int_equal(t.err.kind, GR_E_CHUNK_TAG);
    assert_true(t.err.offset == bad_at);
    assert_non_null(strstr(t.err.msg, "unknown chunk tag"));
    gr_trace_free(&t);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_across_boundaries),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_range_and_end),
        cmocka_unit_test(test_skip_rest),
        cmocka_unit_test(test_verdict_from_metas_at_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
