/* test_check.c - replay/rules/ (the engine and every rule): for every rule, traces that must pass and
 * traces that must be flagged, asserting the rule name and event index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"
#include "dump.h"
#include "edit.h"
#include "report.h"
#include "trace_builder.h"
#include "split_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A trace under construction with the usual code identities, thread 1
 * started in g1 whose shadow is [mod, main] after record 3. */
typedef struct fx {
    tb b;
    uint32_t mod, main, x, y, sw, mk, start, stop, len, label;
    gr_trace t;
    gr_check_result res;
    int loaded;
} fx;

#define OURS_KNOWN (GR_SW_PROFILE_OURS | GR_SW_USE_TRACING_KNOWN)

static void begin_open(fx *f)
{
    memset(f, 0, sizeof *f);
    tb_open(&f->b, 48); /* small chunks: streamed checks cross chunk boundaries */
}

/* begin() after begin_open() (and META records of the test's own). */
static void begin_records(fx *f)
{
    f->mod = tb_py(&f->b, "<module>", "seed.py", 1);
    f->main = tb_py(&f->b, "main", "seed.py", 18);
    f->x = tb_py(&f->b, "x", "seed.py", 14);
    f->y = tb_py(&f->b, "y", "seed.py", 30);
    f->sw = tb_c(&f->b, "greenlet.switch");
    f->mk = tb_c(&f->b, "greenreplay.mark");
    f->start = tb_c(&f->b, "greenreplay.start");
    f->stop = tb_c(&f->b, "greenreplay.stop");
    f->len = tb_c(&f->b, "builtins.len");
    f->label = tb_str(&f->b, "in x");
    tb_thread(&f->b, 1);                                                  /* 0 */
    tb_greenlet(&f->b, 1, 1, 0, GR_GL_MAIN, 3, f->mod, f->main, f->start); /* 1 */
    tb_simple(&f->b, GR_START, 1, 1);                                     /* 2 */
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->start);                            /* 3 */
}

static void begin(fx *f)
{
    begin_open(f);
    begin_records(f);
}

/* MARK bracketed by c_call/c_return of mark, with the given stack. */
static uint64_t mark_in(fx *f, uint64_t gid, int n, uint32_t a, uint32_t b, uint32_t c)
{
    tb_ev(&f->b, GR_C_CALL, 1, gid, f->mk);
    uint64_t i;
    if (n == 1)
        i = tb_mark(&f->b, 1, gid, f->label, f->mk, GR_MARK_PROFILE_OURS, 1, a);
    else if (n == 2)
        i = tb_mark(&f->b, 1, gid, f->label, f->mk, GR_MARK_PROFILE_OURS, 2, a, b);
    else
        i = tb_mark(&f->b, 1, gid, f->label, f->mk, GR_MARK_PROFILE_OURS, 3, a, b, c);
    tb_ev(&f->b, GR_C_RETURN, 1, gid, f->mk);
    return i;
}

/* g1 calls stop: C_CALL stop, STOP, STACK of g1 [mod main stop]. */
static uint64_t stop_g1(fx *f)
{
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->stop);
    uint64_t i = tb_simple(&f->b, GR_STOP, 1, 1);
    tb_stack(&f->b, 1, 1, GR_STACK_RUNNING, 3, f->mod, f->main, f->stop);
    return i;
}

/* Text report of res on t. */
static char *report_of(const gr_trace *t, const gr_check_result *res)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    gr_report_text(m, t, res);
    fclose(m);
    return buf;
}

/* Opens f's file streamed into *st: one chunk at a time, or, batch > 0,
 * the first chunk with records whole (as check and dump read it), then
 * batches of `batch` records. */
static void open_streamed(const fx *f, gr_trace *st, size_t batch)
{
    assert_int_equal(gr_trace_open(st, f->b.path), GR_READ_OK);
    if (batch) {
        while (!st->nrecs && gr_trace_next_chunk(st) > 0)
            ;
        gr_trace_set_batch(st, batch);
    }
}

/* The same file checked streamed (one 48-byte chunk at a time, or after
 * the first chunk batches of `batch` records, 0 the default; context lines
 * kept by the checker) gives the same report as loaded whole. */
static void same_streamed_batch(fx *f, size_t batch)
{
    gr_trace st;
    gr_check_result sr;
    open_streamed(f, &st, batch);
    assert_int_not_equal(gr_check_stream(&st, &sr), SIZE_MAX);
    assert_true(st.streaming);
    assert_true(gr_trace_count(&st) == f->t.nrecs);
    char *a = report_of(&f->t, &f->res), *b = report_of(&st, &sr);
    assert_string_equal(a, b);
    free(a);
    free(b);
    gr_check_result_free(&sr);
    gr_trace_free(&st);
    /* dump, streamed, writes what it writes from the loaded trace */
    open_streamed(f, &st, batch);
    char *da = NULL, *db = NULL;
    size_t la = 0, lb = 0;
    FILE *ma = open_memstream(&da, &la), *mb = open_memstream(&db, &lb);
    assert_int_equal(gr_dump(ma, &f->t, NULL), 0);
    assert_int_equal(gr_dump_stream(mb, &st, NULL), 0);
    fclose(ma);
    fclose(mb);
    assert_string_equal(da, db);
    free(da);
    free(db);
    gr_trace_free(&st);
    /* checked in pieces at every chunk boundary: the same violations */
    split_same_as_whole(f->b.path);
}

/* Whole chunks, and batches of 1 and 2 records: the checker's context
 * rings and pending MARKs cross a batch boundary at every record. */
static void same_streamed(fx *f)
{
    same_streamed_batch(f, 0);
    same_streamed_batch(f, 1);
    same_streamed_batch(f, 2);
}

/* Checked with every dead greenlet's shadow kept for the whole run
 * (gr_checker_keep_dead): the same report (verdicts, messages, notes,
 * coverage) as with the shadows freed at their DEAD (tomb.h). */
static void same_kept(fx *f)
{
    gr_check_result kr;
    gr_checker *c = gr_checker_new(&f->t, &kr);
    gr_checker_keep_dead(c, 1);
    gr_checker_finish(c);
    char *a = report_of(&f->t, &f->res), *b = report_of(&f->t, &kr);
    assert_string_equal(a, b);
    assert_memory_equal(&f->res.coverage, &kr.coverage, sizeof kr.coverage);
    free(a);
    free(b);
    gr_check_result_free(&kr);
}

/* Checked with every record through the rules of its kind, one by one
 * (gr_checker_plain off): the same report as with the plain records
 * replayed without them (rule.h, skips_plain). */
static void same_one_by_one(fx *f)
{
    gr_check_result pr;
    gr_checker *c = gr_checker_new(&f->t, &pr);
    gr_checker_plain(c, 0);
    gr_checker_finish(c);
    char *a = report_of(&f->t, &f->res), *b = report_of(&f->t, &pr);
    assert_string_equal(a, b);
    assert_memory_equal(&f->res.coverage, &pr.coverage, sizeof pr.coverage);
    free(a);
    free(b);
    gr_check_result_free(&pr);
}

static void load_check(fx *f, int finish)
{
    if (finish)
        tb_finish(&f->b);
    else
        tb_abandon(&f->b);
    assert_int_equal(tb_load(&f->b, &f->t), GR_READ_OK);
    gr_check_run(&f->t, &f->res);
    f->loaded = 1;
    same_kept(f);
    same_one_by_one(f);
    same_streamed(f);
}

static void end(fx *f)
{
    if (f->loaded) {
        gr_check_result_free(&f->res);
        gr_trace_free(&f->t);
    }
    tb_cleanup(&f->b);
}

static size_t count(const fx *f, enum gr_rule rule)
{
    size_t n = 0;
    for (size_t i = 0; i < f->res.nv; i++)
        n += f->res.v[i].rule == rule;
    assert_int_equal(n, f->res.counts[rule]);
    return n;
}

/* The violation of `rule` at `index`; fails the test if absent. */
static const gr_violation *expect(const fx *f, enum gr_rule rule, uint64_t index,
                                  const char *phrase)
{
    for (size_t i = 0; i < f->res.nv; i++) {
        const gr_violation *v = &f->res.v[i];
        if (v->rule == rule && v->index == index) {
            if (phrase && !strstr(v->message, phrase))
                fail_msg("%s at %llu: message '%s' lacks '%s'", gr_rule_name(rule),
                         (unsigned long long)index, v->message, phrase);
            return v;
        }
    }
    for (size_t i = 0; i < f->res.nv; i++)
        print_message("  have %s at %llu: %s\n", gr_rule_name(f->res.v[i].rule),
                      (unsigned long long)f->res.v[i].index, f->res.v[i].message);
    fail_msg("no %s violation at event %llu", gr_rule_name(rule), (unsigned long long)index);
    return NULL;
}

static void expect_clean(const fx *f)
{
    for (size_t i = 0; i < f->res.nv; i++)
        print_message("  unexpected %s at %llu: %s\n", gr_rule_name(f->res.v[i].rule),
                      (unsigned long long)f->res.v[i].index, f->res.v[i].message);
    assert_int_equal(f->res.nv, 0);
}

/* The seed scenario: x() in g1, then greenlet(x).switch(). */
struct seed_idx {
    uint64_t mark1, greenlet2, switch_in, call_x2, mark2, ret_x2, switch_out, dead, stop;
};

static void seed_scenario(fx *f, struct seed_idx *s, uint64_t switch_flags, uint64_t use_tracing)
{
    begin(f);
    tb_ev(&f->b, GR_CALL, 1, 1, f->x);                                   /* 4 */
    s->mark1 = mark_in(f, 1, 3, f->mod, f->main, f->x);                  /* 5 6 7 */
    tb_ev(&f->b, GR_RETURN, 1, 1, f->x);                                 /* 8 */
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);                                /* 9 */
    s->greenlet2 = tb_greenlet(&f->b, 1, 2, 1, 0, 0);                    /* 10 */
    s->switch_in = tb_switch(&f->b, GR_SWITCH, 1, 1, 2, 1, switch_flags, 0, use_tracing);
    s->call_x2 = tb_ev(&f->b, GR_CALL, 1, 2, f->x);                      /* 12 */
    s->mark2 = mark_in(f, 2, 1, f->x, 0, 0);                             /* 13 14 15 */
    s->ret_x2 = tb_ev(&f->b, GR_RETURN, 1, 2, f->x);                     /* 16 */
    s->switch_out = tb_switch(&f->b, GR_SWITCH, 1, 2, 1, 0,
                              switch_flags | GR_SW_ORIGIN_DEAD, 0, use_tracing);
    s->dead = tb_simple(&f->b, GR_DEAD, 1, 2);                           /* 18 */
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);                              /* 19 */
    s->stop = stop_g1(f);                                                /* 20 21 22 */
}

/* ------------------------------------------------------------ clean */

static void test_seed_clean(void **state)
{
    (void)state;
    fx f;
    struct seed_idx s;
    seed_scenario(&f, &s, OURS_KNOWN, 1);
    load_check(&f, 1);
    expect_clean(&f);
    assert_int_equal(s.mark2, 14);
    /* g1 is open at stop: informational, not a violation */
    assert_int_equal(f.res.nnotes, 1);
    assert_int_equal(f.res.notes[0].kind, GR_NOTE_OPEN_AT_STOP);
    assert_int_equal(f.res.notes[0].gid, 1);
    assert_string_equal(f.res.notes[0].frames,
                        "<module> (seed.py:1) > main (seed.py:18) > greenreplay.stop");
    assert_int_equal(f.res.nwarnings, 0);
    end(&f);
}

/* The "Done when" case: edit out the CALL inside the new greenlet. */
static void test_dropped_call_in_new_greenlet_is_blind_spot(void **state)
{
    (void)state;
    fx f;
    struct seed_idx s;
    seed_scenario(&f, &s, OURS_KNOWN, 1);
    tb_finish(&f.b);
    gr_trace orig;
    assert_int_equal(tb_load(&f.b, &orig), GR_READ_OK);
    char out[] = "/tmp/gr-unit-edit-XXXXXX";
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    uint64_t drop = s.call_x2;
    assert_int_equal(gr_edit_drop(&orig, &drop, 1, out, err, sizeof err), 0);
    gr_trace_free(&orig);
    assert_int_equal(gr_trace_load(&f.t, out), GR_READ_OK);
    assert_int_equal(f.t.nrecs, 22);
    gr_check_run(&f.t, &f.res);
    f.loaded = 1;
    /* the MARK moved from 14 to 13 */
    const gr_violation *v =
        expect(&f, GR_RULE_BLIND_SPOT, s.mark2 - 1, "profiler missed call of x (seed.py:14)");
    assert_int_equal(v->tid, 1);
    assert_int_equal(v->gid, 2);
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 1);
    /* context: up to 3 earlier records of t1, then the MARK itself */
    assert_int_equal(v->nctx, 4);
    assert_int_equal(v->ctx[3], s.mark2 - 1);
    assert_int_equal(v->ctx[0], s.mark2 - 4);
    /* the unmatched RETURN of x that follows is the only other finding */
    expect(&f, GR_RULE_IMBALANCE, s.ret_x2 - 1, "RETURN of x (seed.py:14) without");
    assert_int_equal(f.res.nv, 2);
    unlink(out);
    end(&f);
}

static void test_blind_spot_missed_return(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                 /* 4 */
    /* y returned but the profiler never saw its RETURN: shadow [mod main x y] */
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);                 /* 5 */
    uint64_t m = mark_in(&f, 1, 3, f.mod, f.main, f.x); /* 6 7 8 */
    load_check(&f, 0);
    expect(&f, GR_RULE_BLIND_SPOT, m, "profiler missed return of y (seed.py:30)");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_blind_spot_cut_mark(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x); /* 4; shadow [mod main x] */
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);
    /* cut: only the innermost frames are listed; they match */
    tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS | GR_MARK_CUT, 2, f.main, f.x); /* 6 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);
    /* cut, innermost differ */
    uint64_t bad = tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS | GR_MARK_CUT, 2,
                           f.main, f.y); /* 9 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk);
    load_check(&f, 0);
    expect(&f, GR_RULE_BLIND_SPOT, bad, "missed return of x");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

/* throw() into a generator suspended in `yield from` / `await`: CPython
 * hands it to the inner one without running the outer frame (no event),
 * yet the outer frame is on the real stack (CPython issue 73776).
 * outer_gen / inner_gen: whether each code is said to be a generator's
 * (META generator).  Returns the MARK's index. */
static uint64_t delegated_throw(fx *f, int outer_gen, int inner_gen, int chain_cut)
{
    begin_open(f);
    begin_records(f);
    uint32_t outer = tb_py(&f->b, "outer", "gen.py", 3);
    uint32_t inner = tb_py(&f->b, "inner", "gen.py", 8);
    char id[16];
    if (outer_gen) {
        snprintf(id, sizeof id, "%u", outer);
        tb_meta(&f->b, "generator", id);
    }
    if (inner_gen) {
        snprintf(id, sizeof id, "%u", inner);
        tb_meta(&f->b, "generator", id);
    }
    tb_ev(&f->b, GR_CALL, 1, 1, outer);   /* next(g): outer runs ... */
    tb_ev(&f->b, GR_CALL, 1, 1, inner);   /* ... into yield from inner() */
    tb_ev(&f->b, GR_RETURN, 1, 1, inner); /* both suspend at the yield */
    tb_ev(&f->b, GR_RETURN, 1, 1, outer);
    tb_ev(&f->b, GR_CALL, 1, 1, inner);   /* g.throw(E): inner resumes only */
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->mk);
    /* 3.9: the chain starts at the outermost delegating frame */
    uint64_t m = chain_cut ? tb_mark(&f->b, 1, 1, f->label, f->mk, GR_MARK_PROFILE_OURS, 2, outer,
                                     inner)
                           : tb_mark(&f->b, 1, 1, f->label, f->mk, GR_MARK_PROFILE_OURS, 4, f->mod,
                                     f->main, outer, inner);
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->mk);
    tb_ev(&f->b, GR_RETURN, 1, 1, inner); /* E leaves inner ... */
    tb_ev(&f->b, GR_CALL, 1, 1, outer);   /* ... and resumes outer */
    tb_ev(&f->b, GR_RETURN, 1, 1, outer);
    stop_g1(f);
    load_check(f, 0);
    return m;
}

static void test_throw_delegated_through_generator_clean(void **state)
{
    (void)state;
    fx f;
    uint64_t m = delegated_throw(&f, 1, 1, 0);
    expect_clean(&f);
    assert_int_equal(f.res.ninfos, 1);
    assert_non_null(strstr(f.res.infos[0], "CPython issue 73776"));
    char at[32];
    snprintf(at, sizeof at, "at event %" PRIu64, m);
    assert_non_null(strstr(f.res.infos[0], at));
    end(&f);
}

/* CPython 3.9 form: the real stack holds only the delegating chain. */
static void test_throw_delegated_chain_only_clean(void **state)
{
    (void)state;
    fx f;
    delegated_throw(&f, 1, 1, 1);
    expect_clean(&f);
    assert_int_equal(f.res.ninfos, 1);
    end(&f);
}

/* The same chain-only stack with a plain outer frame: flagged. */
static void test_chain_only_plain_outer_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t m = delegated_throw(&f, 0, 1, 1);
    expect(&f, GR_RULE_BLIND_SPOT, m, "profiler missed call of outer (gen.py:3)");
    end(&f);
}

/* The same stacks where the outer frame is a plain function's: it ran
 * unseen, a true blind spot. */
static void test_missed_plain_frame_outside_generator_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t m = delegated_throw(&f, 0, 1, 0);
    expect(&f, GR_RULE_BLIND_SPOT, m, "profiler missed call of outer (gen.py:3)");
    assert_int_equal(f.res.ninfos, 0);
    end(&f);
}

/* A generator frame whose inner frame is a plain function's is running,
 * not delegating: missing it is a blind spot. */
static void test_missed_generator_around_plain_frame_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t m = delegated_throw(&f, 1, 0, 0);
    expect(&f, GR_RULE_BLIND_SPOT, m, "profiler missed call of outer (gen.py:3)");
    assert_int_equal(f.res.ninfos, 0);
    end(&f);
}

/* --------------------------------------------------------- imbalance */

static void test_return_mismatch_resyncs(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                  /* 4 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);                  /* 5 */
    uint64_t r = tb_ev(&f.b, GR_RETURN, 1, 1, f.x);   /* 6: RETURN of y lost */
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                  /* 7 */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);                /* 8 */
    mark_in(&f, 1, 2, f.mod, f.main, 0);              /* 9 10 11: in sync again */
    load_check(&f, 0);
    expect(&f, GR_RULE_IMBALANCE, r, "profiler missed the return of y (seed.py:30)");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_c_return_without_c_call(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                        /* 4 */
    uint64_t r = tb_ev(&f.b, GR_C_RETURN, 1, 1, f.len);     /* 5: no C_CALL of len */
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.len);                    /* 6 */
    uint64_t e = tb_ev(&f.b, GR_C_EXCEPTION, 1, 1, f.sw);   /* 7: wrong code */
    tb_ev(&f.b, GR_C_EXCEPTION, 1, 1, f.len);               /* 8: ok */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);                      /* 9 */
    load_check(&f, 0);
    expect(&f, GR_RULE_IMBALANCE, r, "122029");
    expect(&f, GR_RULE_IMBALANCE, r, "C_RETURN of builtins.len without a matching C_CALL");
    expect(&f, GR_RULE_IMBALANCE, e, "C_EXCEPTION of greenlet.switch");
    assert_int_equal(f.res.nv, 2);
    end(&f);
}

static void test_balanced_c_calls_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.len);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x); /* a Python callback inside the C call */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.len);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.len);
    tb_ev(&f.b, GR_C_EXCEPTION, 1, 1, f.len);
    /* main returns, then the module: leaving the seed is fine */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.main);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.mod);
    load_check(&f, 1);
    expect_clean(&f);
    assert_int_equal(f.res.nnotes, 0);
    end(&f);
}

static void test_suspended_seed_tolerates_one_c_return(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);                                         /* 4 */
    tb_greenlet(&f.b, 1, 3, 1, GR_GL_SUSPENDED, 2, f.main, f.x);                /* 5 */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 3, 1, OURS_KNOWN, 0, 1);                   /* 6 */
    tb_ev(&f.b, GR_C_RETURN, 1, 3, f.sw);   /* 7: the switch it was inside: ok */
    uint64_t second = tb_ev(&f.b, GR_C_RETURN, 1, 3, f.sw); /* 8: one too many */
    tb_ev(&f.b, GR_RETURN, 1, 3, f.x);                                          /* 9 */
    load_check(&f, 0);
    expect(&f, GR_RULE_IMBALANCE, second, "C_RETURN of greenlet.switch without");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_unsuspended_seed_flags_c_return(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    tb_greenlet(&f.b, 1, 3, 1, 0, 2, f.main, f.x); /* not suspended */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 3, 1, OURS_KNOWN, 0, 1);
    uint64_t r = tb_ev(&f.b, GR_C_RETURN, 1, 3, f.sw); /* 7 */
    load_check(&f, 0);
    expect(&f, GR_RULE_IMBALANCE, r, "without a matching C_CALL");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_dead_with_open_frames(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);                                 /* 4 */
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                                   /* 5 */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);           /* 6 */
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);                                    /* 7 */
    tb_ev(&f.b, GR_CALL, 1, 2, f.y);                                    /* 8 */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.y);                                  /* 9: x's RETURN lost */
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1); /* 10 */
    uint64_t d = tb_simple(&f.b, GR_DEAD, 1, 2);                        /* 11 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    load_check(&f, 0);
    expect(&f, GR_RULE_IMBALANCE, d, "g2 died with 1 open shadow entry: x (seed.py:14)");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

/* The mut256 class (greenlet issue 256): a new greenlet starts running x
 * with tracing off, so the profiler sees neither the call of x nor its
 * return, and the greenlet dies.  The switch's real stack gives the
 * blind spot (the shadow is re-seeded from it) and propagation; x, left
 * in the re-seeded shadow at DEAD, is the same loss and no imbalance.
 * With events_after, tracing is on again inside x: the profiler sees the
 * call of y, whose return is then lost; y is an imbalance at DEAD, x is
 * still not one. */
static void dead_after_blind_spot(fx *f, int events_after, uint64_t *sw_in, uint64_t *dead)
{
    begin(f);
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);                                  /* 4 */
    tb_greenlet(&f->b, 1, 2, 1, 0, 0);                                     /* 5 */
    *sw_in = tb_switch_stack(&f->b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_NEW, 0, 0, 1,
                             f->x);                                        /* 6 */
    if (events_after)
        tb_ev(&f->b, GR_CALL, 1, 2, f->y);                                 /* 7 */
    tb_switch(&f->b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    *dead = tb_simple(&f->b, GR_DEAD, 1, 2);
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);
    load_check(f, 0);
}

static void test_dead_after_blind_spot_one_finding(void **state)
{
    (void)state;
    fx f;
    uint64_t sw_in, dead;
    dead_after_blind_spot(&f, 0, &sw_in, &dead);
    expect(&f, GR_RULE_BLIND_SPOT, sw_in, "profiler missed call of x (seed.py:14)");
    expect(&f, GR_RULE_PROPAGATION, sw_in, "use_tracing=0");
    assert_int_equal(count(&f, GR_RULE_IMBALANCE), 0);
    end(&f);
}

static void test_dead_after_blind_spot_later_loss_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t sw_in, dead;
    dead_after_blind_spot(&f, 1, &sw_in, &dead);
    expect(&f, GR_RULE_BLIND_SPOT, sw_in, "profiler missed call of x (seed.py:14)");
    expect(&f, GR_RULE_IMBALANCE, dead, "g2 died with 1 open shadow entry: y (seed.py:30)");
    assert_int_equal(count(&f, GR_RULE_IMBALANCE), 1);
    end(&f);
}

/* The mut256 class where g2 delivers no event at all: g1's C_RETURN of
 * switch() finds g2 (never seen) suspended in x.  The recorder writes a
 * SWITCH into g2 flagged unseen with its real stack, then the SWITCH back
 * to g1.  With python_frames, g2 ran x unseen: propagation, once (no
 * blind_spot of the same loss).  Without, g2 is suspended in C code only
 * (greenlet.greenlet(run=a C function)): nothing of Python ran, clean. */
static void unseen_run_records(fx *f, int python_frames, uint64_t *sw_in)
{
    begin(f);
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);                                  /* 4 */
    tb_greenlet(&f->b, 1, 2, 1, 0, 0);                                     /* 5 */
    const uint64_t fl = GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET | GR_SW_INFERRED | GR_SW_NEW | GR_SW_UNSEEN;
    if (python_frames)
        *sw_in = tb_switch_stack(&f->b, GR_SWITCH, 1, 1, 2, 1, fl, 0, 0, 1, f->x); /* 6 */
    else
        *sw_in = tb_switch_stack(&f->b, GR_SWITCH, 1, 1, 2, 1, fl, 0, 0, 0);
    tb_switch_stack(&f->b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_INFERRED, 0, 1, 2, f->mod, f->main);
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);
}

static void unseen_run(fx *f, int python_frames, uint64_t *sw_in)
{
    unseen_run_records(f, python_frames, sw_in);
    load_check(f, 0);
}

/* After the unseen run, g2 ends unseen and is freed: STOP has no STACK
 * record for it.  x, re-seeded from the unseen switch, is that
 * propagation finding's loss, no imbalance.  With later_call, g2 ran
 * again with events: the call of y is open at STOP, an imbalance. */
static uint64_t unseen_run_stop(fx *f, int later_call)
{
    uint64_t sw_in;
    unseen_run_records(f, 1, &sw_in);
    if (later_call) {
        tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);
        tb_switch_stack(&f->b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED, 0, 1, 1, f->x);
        tb_ev(&f->b, GR_C_RETURN, 1, 2, f->sw);
        tb_ev(&f->b, GR_CALL, 1, 2, f->y);
        tb_ev(&f->b, GR_C_CALL, 1, 2, f->sw);
        tb_switch_stack(&f->b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_INFERRED, 0, 1, 2, f->mod, f->main);
        tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);
    }
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->stop);
    uint64_t stop = tb_simple(&f->b, GR_STOP, 1, 1);
    tb_stack(&f->b, 1, 1, GR_STACK_RUNNING, 2, f->mod, f->main);
    load_check(f, 1);
    return stop;
}

static void test_unseen_run_ended_unseen_one_finding(void **state)
{
    (void)state;
    fx f;
    unseen_run_stop(&f, 0);
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 1);
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_unseen_run_later_call_open_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t stop = unseen_run_stop(&f, 1);
    expect(&f, GR_RULE_IMBALANCE, stop, "g2 on t1 has 2 open shadow entries at STOP but no STACK record: y (seed.py:30) > greenlet.switch");
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 1);
    end(&f);
}

static void test_unseen_run_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t sw_in;
    unseen_run(&f, 1, &sw_in);
    expect(&f, GR_RULE_PROPAGATION, sw_in, "g2 ran Python code with no profile event at all");
    expect(&f, GR_RULE_PROPAGATION, sw_in, "suspended in x (seed.py:14)");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_unseen_run_in_c_only_clean(void **state)
{
    (void)state;
    fx f;
    uint64_t sw_in;
    unseen_run(&f, 0, &sw_in);
    expect_clean(&f);
    end(&f);
}

/* A C call of g2 (yappi 1.0's start, which writes the thread state
 * directly) takes the profile slot over without the audit event; g2 runs
 * on unseen and dies.  The recorder finds the switch back to g1 at the
 * next mark, the slot not its own there (no PROFILE_OURS), then the
 * change: HOOK unannounced.  g2's open frames are the recorder's own
 * loss, which the HOOK's displaced finding names: no imbalance at DEAD.
 * With ours_at_switch the recorder was still in the slot at that switch,
 * so the open frames of g2 at its DEAD are an imbalance again. */
static void dead_in_unseen_takeover(fx *f, int ours_at_switch, uint64_t *dead, uint64_t *hook)
{
    begin(f);
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);                                  /* 4 */
    tb_greenlet(&f->b, 1, 2, 1, 0, 0);                                     /* 5 */
    tb_switch(&f->b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_NEW | GR_SW_INFERRED, 0, 1);
    tb_ev(&f->b, GR_CALL, 1, 2, f->x);                                     /* 7 */
    tb_ev(&f->b, GR_C_CALL, 1, 2, f->len);                                 /* 8: takes the slot */
    uint64_t prof = ours_at_switch ? OURS_KNOWN : GR_SW_USE_TRACING_KNOWN;
    tb_switch_stack(&f->b, GR_SWITCH, 1, 2, 1, 0,
                    prof | GR_SW_INFERRED | GR_SW_AT_MARK | GR_SW_ORIGIN_DEAD, 0, !ours_at_switch ? 0 : 1,
                    2, f->mod, f->main);                                   /* 9 */
    *dead = tb_simple(&f->b, GR_DEAD, 1, 2);                               /* 10 */
    *hook = ours_at_switch ? 0
                           : tb_hook(&f->b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_CLEARED,
                                     GR_HOOK_UNANNOUNCED, 0);              /* 11 */
    stop_g1(f);
    load_check(f, 1);
}

static void test_dead_in_unseen_takeover_is_displaced(void **state)
{
    (void)state;
    fx f;
    uint64_t dead, hook;
    dead_in_unseen_takeover(&f, 0, &dead, &hook);
    expect(&f, GR_RULE_DISPLACED, hook, "before that HOOK were unseen by the reference profiler (how many is not known)");
    assert_int_equal(count(&f, GR_RULE_IMBALANCE), 0);
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 0);
    end(&f);
}

static void test_dead_before_takeover_flagged(void **state)
{
    (void)state;
    fx f;
    uint64_t dead, hook;
    dead_in_unseen_takeover(&f, 1, &dead, &hook);
    expect(&f, GR_RULE_IMBALANCE, dead, "g2 died with 2 open shadow entries: x (seed.py:14)");
    end(&f);
}

static void test_dead_clean(void **state)
{
    (void)state;
    fx f;
    struct seed_idx s;
    seed_scenario(&f, &s, OURS_KNOWN, 1);
    load_check(&f, 1);
    expect_clean(&f); /* g2 died with an empty shadow */
    end(&f);
}

static void test_open_at_stop_matches(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);  /* 4: x still open at stop */
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.stop);
    tb_simple(&f.b, GR_STOP, 1, 1);
    tb_stack(&f.b, 1, 1, GR_STACK_RUNNING, 4, f.mod, f.main, f.x, f.stop);
    load_check(&f, 1);
    expect_clean(&f);
    assert_int_equal(f.res.nnotes, 1);
    assert_int_equal(f.res.notes[0].kind, GR_NOTE_OPEN_AT_STOP);
    assert_non_null(strstr(f.res.notes[0].frames, "x (seed.py:14) > greenreplay.stop"));
    end(&f);
}

static void test_open_at_stop_differs(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);  /* 4 */
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.stop);
    tb_simple(&f.b, GR_STOP, 1, 1);
    /* real stack has no x: its RETURN was lost */
    uint64_t st = tb_stack(&f.b, 1, 1, GR_STACK_RUNNING, 3, f.mod, f.main, f.stop); /* 7 */
    load_check(&f, 1);
    expect(&f, GR_RULE_IMBALANCE, st, "profiler missed return of x (seed.py:14)");
    assert_int_equal(f.res.nv, 1);
    assert_int_equal(f.res.nnotes, 0);
    end(&f);
}

static void test_open_frames_without_stack_record(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);                       /* 4 */
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                         /* 5 */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1); /* 6 */
    tb_ev(&f.b, GR_CALL, 1, 2, f.y);                          /* 7 */
    tb_ev(&f.b, GR_C_CALL, 1, 2, f.sw);                       /* 8 */
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN, 0, 1); /* 9 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);                     /* 10 */
    uint64_t stop = stop_g1(&f);                              /* 11 12 13: no STACK of g2 */
    load_check(&f, 1);
    const gr_violation *v =
        expect(&f, GR_RULE_IMBALANCE, stop, "g2 on t1 has 2 open shadow entries at STOP but no "
                                            "STACK record: y (seed.py:30) > greenlet.switch");
    assert_int_equal(v->gid, 2);
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_truncated_open_frames_informational(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);
    load_check(&f, 0); /* no trailer, no STOP */
    expect_clean(&f);
    assert_int_equal(f.res.nnotes, 1);
    assert_int_equal(f.res.notes[0].kind, GR_NOTE_OPEN_AT_TRUNCATION);
    assert_true(f.t.truncated);
    end(&f);
}

static void test_exit_without_stop_informational(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_finish_with(&f.b, 5, 0, 0, GR_STOP_EXIT);
    assert_int_equal(tb_load(&f.b, &f.t), GR_READ_OK);
    gr_check_run(&f.t, &f.res);
    f.loaded = 1;
    expect_clean(&f);
    assert_int_equal(f.res.nnotes, 1);
    assert_int_equal(f.res.notes[0].kind, GR_NOTE_OPEN_AT_END);
    end(&f);
}

/* ------------------------------------------------ switch_consistency */

static void test_switch_from_wrong_origin(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                                    /* 4 */
    tb_greenlet(&f.b, 1, 3, 1, 0, 0);                                    /* 5 */
    /* g1 is running, but the switch claims to come from g3 */
    uint64_t s = tb_switch(&f.b, GR_SWITCH, 1, 3, 2, 1, OURS_KNOWN, 0, 1); /* 6 */
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);                                     /* 7: g2 runs: ok */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);
    load_check(&f, 0);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s, "SWITCH from g3 but g1 is running on t1");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

/* continued switches (FORMAT §4, bit 9): each target resumes in the C call
 * it was suspended in; no stack to compare; coverage counts them */
static void test_continued_switch_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    const uint64_t cont = OURS_KNOWN | GR_SW_INFERRED | GR_SW_CONTINUED;
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED | GR_SW_NEW, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);
    tb_ev(&f.b, GR_C_CALL, 1, 2, f.sw);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, cont, 0, 1);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    tb_switch(&f.b, GR_THROW, 1, 1, 2, 1, cont, 0, 1);
    tb_ev(&f.b, GR_C_EXCEPTION, 1, 2, f.sw);
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_INFERRED | GR_SW_ORIGIN_DEAD, 0, 1);
    tb_simple(&f.b, GR_DEAD, 1, 2);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    load_check(&f, 0);
    expect_clean(&f);
    assert_int_equal(f.res.coverage.continued, 2);
    end(&f);
}

/* a continued switch into a greenlet whose last event was no C call: the
 * recorder's claim cannot hold */
static void test_continued_switch_not_suspended(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    const uint64_t cont = OURS_KNOWN | GR_SW_INFERRED | GR_SW_CONTINUED;
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED | GR_SW_NEW, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, cont, 0, 1);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    uint64_t s = tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, cont, 0, 1);
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);
    load_check(&f, 0);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s,
           "continued SWITCH to g2, which was not suspended in a C call (its shadow top: x");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_throw_from_right_origin_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_switch(&f.b, GR_THROW, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    tb_simple(&f.b, GR_DEAD, 1, 2);
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

static void test_event_of_not_running_greenlet(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                    /* 4 */
    uint64_t c = tb_ev(&f.b, GR_CALL, 1, 2, f.x);        /* 5: no switch to g2 */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);                   /* 6: adopted, no repeat */
    load_check(&f, 0);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, c, "CALL in g2 but g1 is running on t1");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_event_in_dead_greenlet(void **state)
{
    (void)state;
    fx f;
    struct seed_idx s;
    seed_scenario(&f, &s, OURS_KNOWN, 1);
    /* after stop's STACK: a record of g2, dead at 18 */
    uint64_t late = tb_simple(&f.b, GR_START, 1, 2); /* 23 */
    load_check(&f, 1);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, late, "START record for g2 after its DEAD at event 18");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_switch_to_dead_greenlet(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                                          /* 4 */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);                  /* 5 */
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1); /* 6 */
    tb_simple(&f.b, GR_DEAD, 1, 2);                                            /* 7 */
    uint64_t s = tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);     /* 8 */
    load_check(&f, 0);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s, "SWITCH to g2 after its DEAD at event 7");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}


/* ------------------------------------------- dead greenlets (tomb.h) */

/* n greenlets g2..g(n+1), each switched to from g1, running x (a MARK in
 * every third), dying; returns the index of g2's DEAD. */
static uint64_t many_dead(fx *f, uint64_t n)
{
    uint64_t dead2 = 0;
    for (uint64_t g = 2; g < n + 2; g++) {
        tb_greenlet(&f->b, 1, g, 1, 0, 0);
        tb_switch(&f->b, GR_SWITCH, 1, 1, g, 1, OURS_KNOWN, 0, 1);
        tb_ev(&f->b, GR_CALL, 1, g, f->x);
        if (g % 3 == 0)
            mark_in(f, g, 1, f->x, 0, 0);
        tb_ev(&f->b, GR_RETURN, 1, g, f->x);
        tb_switch(&f->b, GR_SWITCH, 1, g, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
        uint64_t d = tb_simple(&f->b, GR_DEAD, 1, g);
        if (g == 2)
            dead2 = d;
    }
    return dead2;
}

/* Greenlet gid (GREENLET flags gl_flags, no frames) switched to from g1
 * and dying at once; returns the index of its DEAD. */
static uint64_t dies(fx *f, uint64_t gid, uint64_t gl_flags)
{
    tb_greenlet(&f->b, 1, gid, 1, gl_flags, 0);
    tb_switch(&f->b, GR_SWITCH, 1, 1, gid, 1, OURS_KNOWN, 0, 1);
    tb_switch(&f->b, GR_SWITCH, 1, gid, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    return tb_simple(&f->b, GR_DEAD, 1, gid);
}

/* Must pass: 300 greenlets live and die (more deaths than one segment of
 * the tomb's log); coverage still counts every one. */
static void test_many_dead_greenlets_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    many_dead(&f, 300);
    stop_g1(&f);
    load_check(&f, 1);
    expect_clean(&f);
    assert_int_equal(f.res.coverage.greenlets, 301);
    assert_int_equal(f.res.coverage.shadows, 301);
    assert_int_equal(f.res.coverage.greenlets_truth, 100); /* g3, g6, ... g300 */
    end(&f);
}

/* Must be flagged: records naming g2 long after its DEAD (its shadow was
 * freed, its slot reused): the switch to it, with the DEAD's index; its
 * shadow comes back as it was (base known: a RETURN without a CALL is an
 * imbalance); it dies again, and the next switch names the second DEAD. */
static void test_record_long_after_dead_flagged(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t dead2 = many_dead(&f, 300);
    uint64_t s1 = tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    uint64_t ret = tb_ev(&f.b, GR_RETURN, 1, 2, f.y);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    uint64_t dead2b = tb_simple(&f.b, GR_DEAD, 1, 2);
    dies(&f, 400, 0); /* another death after it */
    uint64_t s2 = tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN, 0, 1);
    stop_g1(&f);
    load_check(&f, 1);
    char want[80];
    snprintf(want, sizeof want, "SWITCH to g2 after its DEAD at event %llu",
             (unsigned long long)dead2);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s1, want);
    snprintf(want, sizeof want, "SWITCH to g2 after its DEAD at event %llu",
             (unsigned long long)dead2b);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s2, want);
    assert_int_equal(count(&f, GR_RULE_SWITCH_CONSISTENCY), 2);
    expect(&f, GR_RULE_IMBALANCE, ret, NULL);
    assert_int_equal(f.res.coverage.greenlets, 302);
    end(&f);
}

/* Must be flagged: a GREENLET record reusing a dead greenlet's id (the
 * recorder never reuses one, FORMAT §4; the format does not forbid the
 * bytes); must pass: a new id after the DEAD. */
static void test_gid_reused_after_dead_flagged(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t dead2 = many_dead(&f, 1);                                   /* g2 */
    tb_greenlet(&f.b, 1, 3, 1, 0, 0);                                    /* new: clean */
    uint64_t again = tb_greenlet(&f.b, 1, 2, 1, 0, 0);                   /* reused */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    tb_simple(&f.b, GR_DEAD, 1, 2);
    stop_g1(&f);
    load_check(&f, 1);
    char want[80];
    snprintf(want, sizeof want, "GREENLET record for g2 after its DEAD at event %llu",
             (unsigned long long)dead2);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, again, want);
    assert_int_equal(f.res.nv, 1);
    assert_int_equal(f.res.coverage.greenlets, 3);
    end(&f);
}

/* Must pass: a dead greenlet's id seen later on another thread is another
 * shadow there (not "after its DEAD"), counted once as a greenlet; its
 * first shadow stays dead (check --stall and --html ask by id). */
static void test_dead_gid_on_other_thread(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    many_dead(&f, 2);                                                    /* g2, g3 */
    tb_thread(&f.b, 2);
    tb_greenlet(&f.b, 2, 2, 0, GR_GL_MAIN, 0);
    tb_ev(&f.b, GR_CALL, 2, 2, f.x);
    tb_ev(&f.b, GR_RETURN, 2, 2, f.x);
    tb_simple(&f.b, GR_DEAD, 2, 2);                                      /* kept: two threads */
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.y);
    load_check(&f, 0);
    expect_clean(&f);
    assert_int_equal(f.res.coverage.greenlets, 3);
    assert_int_equal(f.res.coverage.shadows, 3);
    end(&f);
}

/* Must be flagged, in creation order: g3 and g4 open at STOP without a
 * STACK record, where g4's shadow reused the index of g2's (freed at its
 * DEAD), below g3's. */
static void test_open_at_stop_in_creation_order(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_greenlet(&f.b, 1, 3, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 3, 1, OURS_KNOWN, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 3, f.x);
    tb_switch(&f.b, GR_SWITCH, 1, 3, 1, 0, OURS_KNOWN, 0, 1);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    tb_simple(&f.b, GR_DEAD, 1, 2); /* g2's index goes to g4 */
    tb_greenlet(&f.b, 1, 4, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 4, 1, OURS_KNOWN, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 4, f.y);
    tb_switch(&f.b, GR_SWITCH, 1, 4, 1, 0, OURS_KNOWN, 0, 1);
    uint64_t stop = stop_g1(&f);
    load_check(&f, 1);
    assert_int_equal(count(&f, GR_RULE_IMBALANCE), 2);
    assert_int_equal(f.res.v[0].index, stop);
    assert_int_equal(f.res.v[0].gid, 3);
    assert_int_equal(f.res.v[1].gid, 4);
    end(&f);
}

/* A freed greenlet's base: seeded cut (base unknown), it comes back with
 * its base unknown, so a RETURN below its known frames after its DEAD is
 * only the record after DEAD (must pass as to imbalance); seeded whole, the
 * same RETURN is an imbalance too (test_record_long_after_dead_flagged). */
static void test_revived_base_unknown_no_imbalance(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t dead = dies(&f, 2, GR_GL_CUT);
    many_dead(&f, 3); /* g2 again (its GREENLET flagged), then g3, g4 */
    load_check(&f, 0);
    char want[80];
    snprintf(want, sizeof want, "GREENLET record for g2 after its DEAD at event %llu",
             (unsigned long long)dead);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, dead + 1, want);
    assert_int_equal(f.res.nv, 1);
    end(&f);
    /* the same with the RETURN: no imbalance below an unknown base */
    begin(&f);
    dies(&f, 2, GR_GL_CUT);
    tb_greenlet(&f.b, 1, 3, 1, 0, 0);
    uint64_t s1 = tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN, 0, 1);
    tb_ev(&f.b, GR_RETURN, 1, 2, f.y);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN, 0, 1);
    load_check(&f, 0);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s1, "SWITCH to g2 after its DEAD");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

/* Coverage of a greenlet brought back after its DEAD: counted once, with
 * its ground truth from before and after. */
static void test_revived_coverage_counted_once(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    many_dead(&f, 2);                                          /* g2, g3 (MARK) */
    uint64_t s1 = tb_switch(&f.b, GR_SWITCH, 1, 1, 3, 1, OURS_KNOWN, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 3, f.x);
    mark_in(&f, 3, 1, f.x, 0, 0);
    tb_ev(&f.b, GR_RETURN, 1, 3, f.x);
    tb_switch(&f.b, GR_SWITCH, 1, 3, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
    tb_simple(&f.b, GR_DEAD, 1, 3);
    stop_g1(&f);
    load_check(&f, 1);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, s1, "SWITCH to g3 after its DEAD");
    assert_int_equal(f.res.nv, 1);
    assert_int_equal(f.res.coverage.greenlets, 3);
    assert_int_equal(f.res.coverage.shadows, 3);
    assert_int_equal(f.res.coverage.greenlets_truth, 1);
    assert_int_equal(f.res.coverage.truth_points, 2);
    end(&f);
}

/* The step-by-step API (check --stall, --html) about a freed greenlet:
 * dead, on its thread, with its empty shadow and unknown base, as when
 * every shadow was kept. */
static void test_checker_api_on_freed_greenlet(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    dies(&f, 2, GR_GL_CUT);
    tb_greenlet(&f.b, 1, 3, 1, 0, 0); /* reuses g2's shadow slot */
    load_check(&f, 0);
    gr_check_result r[2];
    gr_checker *c[2];
    for (int k = 0; k < 2; k++) {
        c[k] = gr_checker_new(&f.t, &r[k]);
        gr_checker_keep_dead(c[k], k);
        gr_checker_advance(c[k], f.t.nrecs);
    }
    for (uint64_t gid = 1; gid <= 4; gid++) {
        uint64_t tid[2];
        size_t n[2];
        int unknown[2];
        for (int k = 0; k < 2; k++) {
            assert_int_equal(gr_checker_greenlet(c[k], gid, &tid[k]),
                             gid == 2 ? GR_SHADOW_DEAD : gid == 4 ? GR_SHADOW_UNSEEN
                             : gid == 1 ? GR_SHADOW_RUNNING : GR_SHADOW_IDLE);
            gr_checker_shadow(c[k], gid, &n[k], &unknown[k]);
        }
        assert_int_equal(tid[0], tid[1]);
        assert_int_equal(n[0], n[1]);
        assert_int_equal(unknown[0], unknown[1]);
        if (gid == 2) {
            assert_int_equal(tid[0], 1);
            assert_int_equal(n[0], 0);
            assert_int_equal(unknown[0], 1);
        }
        uint32_t ids[2] = {f.main, f.x};
        for (size_t len = 0; len <= 2; len++) {
            char *diff[2] = {NULL, NULL};
            int differs[2];
            for (int k = 0; k < 2; k++)
                differs[k] = gr_checker_compare(c[k], gid, ids, len, 0, &diff[k]);
            assert_int_equal(differs[0], differs[1]);
            if (differs[0])
                assert_string_equal(diff[0], diff[1]);
            free(diff[0]);
            free(diff[1]);
        }
    }
    for (int k = 0; k < 2; k++) {
        gr_checker_finish(c[k]);
        gr_check_result_free(&r[k]);
    }
    end(&f);
}

/* ------------------------------------------------------- propagation */

static void test_propagation_flagged(void **state)
{
    (void)state;
    fx f;
    struct seed_idx s;
    seed_scenario(&f, &s, OURS_KNOWN, 0); /* use_tracing 0 in the target */
    load_check(&f, 1);
    const gr_violation *v = expect(&f, GR_RULE_PROPAGATION, s.switch_in, "greenlet issue 256");
    assert_int_equal(v->gid, 2);
    expect(&f, GR_RULE_PROPAGATION, s.switch_out, "CPython PR 25276");
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 2);
    end(&f);
}

static void test_propagation_not_flagged(void **state)
{
    (void)state;
    /* use_tracing not known (3.12+), profile not ours, or tracing set */
    uint64_t flags[3] = {GR_SW_PROFILE_OURS, GR_SW_PROFILE_SET | GR_SW_USE_TRACING_KNOWN,
                         OURS_KNOWN};
    uint64_t tracing[3] = {0, 0, 1};
    for (int k = 0; k < 3; k++) {
        fx f;
        begin(&f);
        tb_greenlet(&f.b, 1, 2, 1, 0, 0);
        tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, flags[k], tracing[k], 0);
        load_check(&f, 0);
        assert_int_equal(count(&f, GR_RULE_PROPAGATION), 0);
        end(&f);
    }
}

/* ------------------------------------- predicted blind spots (3.12+) */

/* g2, first seen suspended inside switch() with frame x, is switched to
 * with our profile function on; INSTR says its frames are `stale` of 1. */
static uint64_t switch_to_stale(fx *f, uint64_t stale, uint64_t flags)
{
    tb_greenlet(&f->b, 1, 2, 1, GR_GL_SUSPENDED, 1, f->x);                     /* 4 */
    uint64_t sw = tb_switch(&f->b, GR_SWITCH, 1, 1, 2, 1, flags, 0, 0);       /* 5 */
    tb_instr(&f->b, 1, 2, 3, 1, stale);                                       /* 6 */
    return sw;
}

static void test_predicted_blind_spot_confirmed(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t sw = switch_to_stale(&f, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET);
    /* The stale frame x calls mark: no C_CALL of mark is reported. */
    uint64_t m = tb_mark(&f.b, 1, 2, f.label, f.mk, GR_MARK_PROFILE_OURS, 1, f.x);
    load_check(&f, 0);
    /* one cause, one finding: the MARK's own blind spot (not bracketed)
     * is the prediction's */
    (void)m;
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 0);
    const gr_violation *v = expect(&f, GR_RULE_PROPAGATION, sw, "confirmed by the blind spot at MARK");
    assert_int_equal(v->gid, 2);
    assert_non_null(strstr(v->message, "1 of the 1 frames of g2 are not instrumented at monitoring version 3"));
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 1);
    end(&f);
}

static void test_predicted_blind_spot_refuted(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    switch_to_stale(&f, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET);
    /* The resumed frame x reports the C_CALL of mark itself (at event 7):
     * it is instrumented after all, and the prediction was wrong. */
    mark_in(&f, 2, 1, f.x, 0, 0);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 0);
    assert_int_equal(f.res.nwarnings, 1);
    assert_non_null(strstr(f.res.warnings[0], "refuted by the C_CALL at event 7, an event of a "
                                              "C call of the resumed frame itself"));
    end(&f);
}

/* Refuted by the MARK itself: a MARK whose innermost frame is the resumed
 * frame, matching, taken where no bracket is expected (inside a callback:
 * no C_CALL of mark is recorded). */
static void test_predicted_blind_spot_refuted_by_mark_in_resumed_frame(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    switch_to_stale(&f, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET);
    uint64_t m = tb_mark(&f.b, 1, 2, f.label, f.mk, GR_MARK_IN_CALLBACK, 1, f.x);
    load_check(&f, 0);
    expect_clean(&f);
    assert_int_equal(f.res.nwarnings, 1);
    char want[96];
    snprintf(want, sizeof want, "refuted by the MARK at event %llu, which matched",
             (unsigned long long)m);
    assert_non_null(strstr(f.res.warnings[0], want));
    end(&f);
}

/* Refuted by the resumed frame's own RETURN. */
static void test_predicted_blind_spot_refuted_by_own_return(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    /* g2 seeded [y x] (not suspended: no C call open), x is resumed */
    tb_greenlet(&f.b, 1, 2, 1, 0, 2, f.y, f.x);                                  /* 4 */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET, 0, 0);
    tb_instr(&f.b, 1, 2, 3, 2, 2);                                               /* 6 */
    uint64_t ret = tb_ev(&f.b, GR_RETURN, 1, 2, f.x);                            /* 7 */
    load_check(&f, 0);
    expect_clean(&f);
    assert_int_equal(f.res.nwarnings, 1);
    char want[96];
    snprintf(want, sizeof want, "refuted by the RETURN at event %llu, the return of the resumed "
             "frame itself", (unsigned long long)ret);
    assert_non_null(strstr(f.res.warnings[0], want));
    end(&f);
}

/* Confirmed by a MARK at the resumed frame's depth that is a blind spot:
 * x called y afresh (seen: no evidence), y returned; then x returned unseen
 * (stale) and its caller called y again unseen... the MARK finds the real
 * stack [y] where the shadow has [x]: x's return was lost. */
static void test_predicted_blind_spot_confirmed_by_blind_mark(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t sw = switch_to_stale(&f, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET);
    tb_ev(&f.b, GR_CALL, 1, 2, f.y);    /* fresh callee: seen, no evidence */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.y);
    uint64_t m = tb_mark(&f.b, 1, 2, f.label, f.mk, GR_MARK_IN_CALLBACK, 1, f.y);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 0); /* folded into the prediction */
    char want[64];
    snprintf(want, sizeof want, "confirmed by the blind spot at MARK %llu", (unsigned long long)m);
    expect(&f, GR_RULE_PROPAGATION, sw, want);
    assert_int_equal(f.res.nwarnings, 0);
    end(&f);
}

/* The 3.12+ case that used to pass: the resumed frame x is stale (its own
 * C calls and return are lost), but it calls y afresh, which is
 * instrumented, and y takes a MARK.  The MARK matches and is bracketed, yet
 * it says nothing about x: the prediction must stay unconfirmed (a
 * violation), not be refuted. */
static void test_predicted_blind_spot_not_refuted_by_mark_in_callee(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t sw = switch_to_stale(&f, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET);
    tb_ev(&f.b, GR_CALL, 1, 2, f.y);                                   /* 7 */
    uint64_t m = mark_in(&f, 2, 2, f.x, f.y, 0);                       /* 8 9 10 */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.y);                                 /* 11 */
    /* x's own c_call of switch is lost; g2 switches back to g1 */
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET, 0, 0);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 0);
    (void)m;
    /* the MARK in the callee is no evidence; x switching away with its
     * C_CALL of switch lost is: confirmed by that SWITCH (12) */
    expect(&f, GR_RULE_PROPAGATION, sw, "confirmed by the SWITCH at event 12: the resumed frame "
                                        "switched away with no C_CALL of its own seen");
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 1);
    for (size_t i = 0; i < f.res.nwarnings; i++)
        assert_null(strstr(f.res.warnings[i], "refuted"));
    end(&f);
}

static void test_predicted_blind_spot_unconfirmed(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t sw = switch_to_stale(&f, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET);
    /* x calls y afresh (instrumented: no evidence about x), y switches */
    tb_ev(&f.b, GR_CALL, 1, 2, f.y);
    tb_ev(&f.b, GR_C_CALL, 1, 2, f.sw);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET, 0, 0);
    /* Back into g2, still stale at the same version: not predicted again. */
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET, 0, 0);
    tb_instr(&f.b, 1, 2, 3, 1, 1);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET, 0, 0);
    load_check(&f, 0);
    /* neither confirmed nor refuted: a note, not a violation */
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 0);
    assert_int_equal(f.res.ninfos, 1);
    char want[96];
    snprintf(want, sizeof want, "1 predicted blind spot (3.12+");
    assert_non_null(strstr(f.res.infos[0], want));
    snprintf(want, sizeof want, "the switch at event %llu) neither confirmed nor refuted",
             (unsigned long long)sw);
    assert_non_null(strstr(f.res.infos[0], want));
    end(&f);
}

/* 64 greenlets g10..g73, each first seen suspended inside switch() in x,
 * switched to by g1 with our profile function on; INSTR says x is stale at
 * version 3.  Greenlet k (its bit in `confirmed`, k 0..63) takes a MARK in x
 * that no C_CALL brackets (the blind spot: confirmed), else x reports the
 * C_RETURN of switch itself (refuted).  Then a second round at version 3
 * (no new prediction) and a third at version 4 (one each again, all
 * refuted).  Many predictions open and closed across the 48-byte chunks:
 * the split checks (load_check) cut between them.  sw[k] gets the first
 * round's switch into greenlet k. */
/* One switch of g1 into greenlet g (seeded suspended in x) and back, with
 * an INSTR saying x is stale at `version`; with `blind`, x's events are
 * lost and a MARK in x shows it, else x reports the C_RETURN of switch().
 * Returns the index of the switch into g. */
static uint64_t predict_round(fx *f, uint64_t g, uint64_t version, int blind)
{
    uint64_t flags = GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET;
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);
    uint64_t i = tb_switch(&f->b, GR_SWITCH, 1, 1, g, 1, flags, 0, 0);
    tb_instr(&f->b, 1, g, version, 1, 1);
    if (blind) { /* x's own C calls are lost: its c_call of switch too */
        tb_mark(&f->b, 1, g, f->label, f->mk, GR_MARK_PROFILE_OURS, 1, f->x);
    } else {
        tb_ev(&f->b, GR_C_RETURN, 1, g, f->sw);
        tb_ev(&f->b, GR_C_CALL, 1, g, f->sw);
    }
    tb_switch(&f->b, GR_SWITCH, 1, g, 1, 0, flags, 0, 0);
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);
    return i;
}

static void many_predictions(fx *f, uint64_t confirmed, uint64_t *sw)
{
    begin(f);
    for (uint64_t k = 0; k < 64; k++)
        tb_greenlet(&f->b, 1, 10 + k, 1, GR_GL_SUSPENDED, 1, f->x);
    for (int round = 0; round < 3; round++)
        for (uint64_t k = 0; k < 64; k++) {
            uint64_t i = predict_round(f, 10 + k, round < 2 ? 3 : 4,
                                       round == 0 && ((confirmed >> k) & 1));
            if (round == 0)
                sw[k] = i;
        }
}

/* Every prediction refuted by the resumed frame's own C_RETURN: no
 * violation, one warning per greenlet and version (64 at 3, 64 at 4). */
static void test_predicted_many_greenlets_refuted(void **state)
{
    (void)state;
    fx f;
    uint64_t sw[64];
    many_predictions(&f, 0, sw);
    load_check(&f, 0);
    expect_clean(&f);
    assert_int_equal(f.res.nwarnings, 128);
    for (size_t i = 0; i < f.res.nwarnings; i++)
        assert_non_null(strstr(f.res.warnings[i], "an event of a C call of the resumed frame itself"));
    end(&f);
}

/* Every 4th greenlet's prediction confirmed by its blind MARK (reported at
 * its switch), the others refuted. */
static void test_predicted_many_greenlets_confirmed(void **state)
{
    (void)state;
    fx f;
    uint64_t sw[64], confirmed = UINT64_C(0x1111111111111111);
    many_predictions(&f, confirmed, sw);
    load_check(&f, 0);
    for (int k = 0; k < 64; k++)
        if ((confirmed >> k) & 1) {
            const gr_violation *v = expect(&f, GR_RULE_PROPAGATION, sw[k],
                                           "confirmed by the blind spot at MARK");
            assert_int_equal(v->gid, 10 + (uint64_t)k);
        }
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 16);
    assert_int_equal(f.res.nwarnings, 48 + 64);
    end(&f);
}

/* A prediction stays open on t2 (its greenlet g101 keeps running) while
 * t1 makes and settles 192 others (63 before it): the decided ones are
 * dropped from memory meanwhile (t2's moves to the front), and t2's is
 * still found by its evidence, a blind MARK in the resumed frame
 * (confirmed, at t2's switch, with its context lines). */
static void test_predicted_open_while_many_settle(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    for (uint64_t k = 0; k < 64; k++)
        tb_greenlet(&f.b, 1, 10 + k, 1, GR_GL_SUSPENDED, 1, f.x);
    for (uint64_t k = 0; k < 63; k++) /* decided before t2's is made (t2's
                                         is then moved: compact) */
        predict_round(&f, 10 + k, 2, 0);
    tb_thread(&f.b, 2);
    tb_greenlet(&f.b, 2, 100, 0, GR_GL_MAIN, 1, f.mod);
    tb_greenlet(&f.b, 2, 101, 100, GR_GL_SUSPENDED, 1, f.x);
    tb_ev(&f.b, GR_C_CALL, 2, 100, f.sw);
    uint64_t sw2 = tb_switch(&f.b, GR_SWITCH, 2, 100, 101, 1,
                             GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET, 0, 0);
    tb_instr(&f.b, 2, 101, 3, 1, 1);
    for (int round = 0; round < 3; round++)
        for (uint64_t k = 0; k < 64; k++)
            predict_round(&f, 10 + k, 3 + (uint64_t)round, 0);
    uint64_t m = tb_mark(&f.b, 2, 101, f.label, f.mk, GR_MARK_PROFILE_OURS, 1, f.x);
    load_check(&f, 0);
    char want[64];
    snprintf(want, sizeof want, "confirmed by the blind spot at MARK %llu", (unsigned long long)m);
    const gr_violation *v = expect(&f, GR_RULE_PROPAGATION, sw2, want);
    assert_true(v->tid == 2 && v->gid == 101);
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 1);
    /* g10..g72: 4 predictions each (versions 2..5), g73 3: the first 3 of
     * each greenlet listed, the 4th counted */
    assert_int_equal(f.res.nwarnings, 63 * 3 + 3);
    assert_int_equal(f.res.nfolded, 63);
    for (size_t i = 0; i < f.res.nfolded; i++)
        assert_true(f.res.folded[i].gid == 10 + i && f.res.folded[i].count == 1);
    end(&f);
}

/* g10 predicted blind at 8 versions in a row (one prediction each), every
 * one refuted by x's own C_RETURN but the 6th, confirmed by a blind MARK.
 * The refutations of its first GR_PROP_LISTED predictions are listed in
 * full; the later ones (4th, 5th, 7th, 8th) are counted in one line, and
 * the confirmed 6th is a violation all the same.  Checked in two ranges at
 * every chunk boundary: the same warnings listed, and the counts add up to
 * the whole check's. */
static void test_predicted_refutations_folded(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_greenlet(&f.b, 1, 10, 1, GR_GL_SUSPENDED, 1, f.x);
    uint64_t sw6 = 0;
    for (uint64_t v = 1; v <= 8; v++) {
        uint64_t i = predict_round(&f, 10, v, v == 6);
        if (v == 6)
            sw6 = i;
    }
    load_check(&f, 0);
    expect(&f, GR_RULE_PROPAGATION, sw6, "confirmed by the blind spot at MARK");
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 1);
    assert_int_equal(f.res.nwarnings, GR_PROP_LISTED);
    for (size_t i = 0; i < f.res.nwarnings; i++) {
        char want[48];
        snprintf(want, sizeof want, "monitoring version %zu", i + 1);
        assert_non_null(strstr(f.res.warnings[i], want));
        assert_non_null(strstr(f.res.warnings[i], "refuted by the C_RETURN"));
    }
    assert_int_equal(f.res.nfolded, 1);
    assert_true(f.res.folded[0].rule == GR_RULE_PROPAGATION && f.res.folded[0].tid == 1 &&
                f.res.folded[0].gid == 10);
    assert_int_equal(f.res.folded[0].count, 4);
    gr_report_verbose(1); /* check -v: the refuted ones are listed */
    char *s = report_of(&f.t, &f.res);
    gr_report_verbose(0);
    assert_non_null(strstr(s, "\ndetail: propagation: 4 more refuted predicted blind spots of g10 (t1) "
                              "not listed (a greenlet's refuted predictions are listed for its first 3 "
                              "predictions only)\n"));
    free(s);
    json_t *o = gr_report_json_trace(&f.t, &f.res);
    json_t *fw = json_object_get(o, "folded_warnings");
    assert_int_equal(json_array_size(fw), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(fw, 0), "count")), 4);
    /* and the line of the truncation (no trailer: load_check(&f, 0)) */
    assert_int_equal(json_array_size(json_object_get(o, "warnings")), GR_PROP_LISTED + 1);
    json_decref(o);
    uint64_t nchunks = split_same_as_whole(f.b.path);
    assert_true(nchunks > 3);
    for (uint64_t cut = 1; cut < nchunks; cut++) {
        uint64_t folded = 0;
        size_t listed = 0;
        for (int k = 0; k < 2; k++) {
            gr_split sp = {.from = k ? cut : 0, .to = k ? UINT64_MAX : cut};
            gr_trace t;
            gr_check_result r;
            assert_int_equal(gr_trace_open(&t, f.b.path), GR_READ_OK);
            assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
            for (size_t i = 0; i < r.nfolded; i++)
                folded += r.folded[i].count;
            /* each listed warning is the whole check's (the merge keeps
             * each once) */
            for (size_t i = 0; i < r.nwarnings; i++) {
                size_t j = 0;
                while (j < f.res.nwarnings && strcmp(f.res.warnings[j], r.warnings[i]) != 0)
                    j++;
                if (j == f.res.nwarnings)
                    fail_msg("cut %llu: warning not in the whole check: %s", (unsigned long long)cut,
                             r.warnings[i]);
                listed++;
            }
            gr_check_result_free(&r);
            gr_trace_free(&t);
        }
        if (folded != 4 || listed < GR_PROP_LISTED)
            fail_msg("cut %llu: %llu counted (want 4), %zu listed", (unsigned long long)cut,
                     (unsigned long long)folded, listed);
    }
    end(&f);
}

/* The refutations counted of res (its folded entries) and those of the
 * two-range split of path at chunk `cut`, merged as docs/ARCHITECTURE.md
 * merges them (summed per greenlet, and the trace's lines summed), are the
 * same; every warning a range lists is one of the whole check's, and each
 * of the whole check's is listed by a range. */
static void split_warnings_same(const char *path, const gr_check_result *whole, uint64_t cut)
{
    uint64_t *sum = calloc(whole->nfolded + 1, sizeof *sum);
    unsigned char *seen = calloc(whole->nwarnings + 1, 1);
    assert_true(sum && seen);
    for (int k = 0; k < 2; k++) {
        gr_split sp = {.from = k ? cut : 0, .to = k ? UINT64_MAX : cut};
        gr_trace t;
        gr_check_result r;
        assert_int_equal(gr_trace_open(&t, path), GR_READ_OK);
        assert_int_equal(gr_check_split(&t, &sp, &r), GR_SPLIT_OK);
        for (size_t i = 0; i < r.nfolded; i++) {
            const gr_folded *a = &r.folded[i];
            size_t j = 0;
            while (j < whole->nfolded &&
                   !(whole->folded[j].whole == a->whole && whole->folded[j].tid == a->tid &&
                     whole->folded[j].gid == a->gid))
                j++;
            if (j == whole->nfolded)
                fail_msg("cut %llu: a count of g%llu not in the whole check", (unsigned long long)cut,
                         (unsigned long long)a->gid);
            sum[j] += a->count;
        }
        for (size_t i = 0; i < r.nwarnings; i++) {
            size_t j = 0;
            while (j < whole->nwarnings && strcmp(whole->warnings[j], r.warnings[i]) != 0)
                j++;
            if (j == whole->nwarnings)
                fail_msg("cut %llu: warning not in the whole check: %s", (unsigned long long)cut,
                         r.warnings[i]);
            seen[j] = 1;
        }
        gr_check_result_free(&r);
        gr_trace_free(&t);
    }
    for (size_t j = 0; j < whole->nfolded; j++)
        if (sum[j] != whole->folded[j].count)
            fail_msg("cut %llu: %llu counted for g%llu (whole %d), the whole check %llu",
                     (unsigned long long)cut, (unsigned long long)sum[j],
                     (unsigned long long)whole->folded[j].gid, whole->folded[j].whole,
                     (unsigned long long)whole->folded[j].count);
    for (size_t j = 0; j < whole->nwarnings; j++)
        if (!seen[j])
            fail_msg("cut %llu: no range lists %s", (unsigned long long)cut, whole->warnings[j]);
    free(sum);
    free(seen);
}

/* GR_PROP_FOLDED_LINES + 2 greenlets, each predicted at versions 1 to 4
 * in rounds (every prediction refuted by x's own C_RETURN).  Listed: the
 * refutations of the trace's first GR_PROP_TRACE_LISTED predictions among
 * their greenlet's first GR_PROP_LISTED (round 1's first 1000 greenlets);
 * counted per greenlet: the 4th predictions of the first
 * GR_PROP_FOLDED_LINES greenlets; the rest (2 of round 1, rounds 2 and 3,
 * 2 of round 4) in the trace's one line, JSON tid and gid null.  The same
 * in two ranges at every chunk boundary. */
static void test_predicted_refutations_capped(void **state)
{
    (void)state;
    fx f;
    memset(&f, 0, sizeof f);
    tb_open(&f.b, 16384); /* a few chunks: checked in pieces at each */
    begin_records(&f);
    const uint64_t n = GR_PROP_FOLDED_LINES + 2;
    for (uint64_t k = 0; k < n; k++)
        tb_greenlet(&f.b, 1, 10 + k, 1, GR_GL_SUSPENDED, 1, f.x);
    for (uint64_t v = 1; v <= 4; v++)
        for (uint64_t k = 0; k < n; k++)
            predict_round(&f, 10 + k, v, 0);
    load_check(&f, 1);
    expect_clean(&f);
    assert_int_equal(f.res.nwarnings, GR_PROP_TRACE_LISTED);
    for (size_t i = 0; i < f.res.nwarnings; i++) {
        char want[96];
        snprintf(want, sizeof want, "frames of g%zu are not instrumented at monitoring version 1 ",
                 10 + i);
        assert_non_null(strstr(f.res.warnings[i], want));
    }
    uint64_t whole = (n - GR_PROP_TRACE_LISTED) + 2 * n + (n - GR_PROP_FOLDED_LINES);
    assert_int_equal(f.res.nfolded, GR_PROP_FOLDED_LINES + 1);
    size_t nwhole = 0;
    for (size_t i = 0, k = 0; i < f.res.nfolded; i++) {
        const gr_folded *g = &f.res.folded[i];
        assert_int_equal(g->rule, GR_RULE_PROPAGATION);
        if (g->whole) {
            nwhole++;
            assert_int_equal(g->count, whole);
            continue;
        }
        assert_true(g->tid == 1 && g->gid == 10 + k && g->count == 1);
        k++;
    }
    assert_int_equal(nwhole, 1);
    gr_report_verbose(1); /* check -v: the refuted ones are listed */
    char *s = report_of(&f.t, &f.res), want[512];
    gr_report_verbose(0);
    snprintf(want, sizeof want,
             "\ndetail: propagation: %llu more refuted predicted blind spots of the trace not "
             "listed (a trace lists the refutations of its first %d predictions that are among "
             "their greenlet's first %d, and counts the later ones per greenlet for its first %d "
             "greenlets with more)\n",
             (unsigned long long)whole, GR_PROP_TRACE_LISTED, GR_PROP_LISTED, GR_PROP_FOLDED_LINES);
    assert_non_null(strstr(s, want));
    assert_non_null(strstr(s, "\ndetail: propagation: 1 more refuted predicted blind spot of g10 (t1) "
                              "not listed"));
    assert_null(strstr(s, "blind spot of g1011 (t1)"));
    free(s);
    json_t *o = gr_report_json_trace(&f.t, &f.res);
    json_t *fw = json_object_get(o, "folded_warnings");
    assert_int_equal(json_array_size(fw), GR_PROP_FOLDED_LINES + 1);
    size_t nnull = 0;
    for (size_t i = 0; i < json_array_size(fw); i++) {
        json_t *e = json_array_get(fw, i);
        if (json_is_null(json_object_get(e, "tid"))) {
            nnull++;
            assert_true(json_is_null(json_object_get(e, "gid")));
            assert_int_equal(json_integer_value(json_object_get(e, "count")), whole);
        }
    }
    assert_int_equal(nnull, 1);
    json_decref(o);
    uint64_t nchunks = split_same_as_whole(f.b.path);
    assert_true(nchunks > 3);
    for (uint64_t cut = 1; cut < nchunks; cut++)
        split_warnings_same(f.b.path, &f.res, cut);
    end(&f);
}

/* The (gid, version) pairs predicted are forgotten at the greenlet's DEAD:
 * g10, predicted at versions 1 and 2, dies; records after its DEAD (a
 * GREENLET seeding it in x again, a switch into it: switch_consistency's)
 * start it afresh, and it is predicted at version 2 again, as its first
 * prediction (refuted by x's C_RETURN, listed).  g11 dies with
 * its prediction open (then switches away: not confirmed, a violation);
 * its entry is freed then and taken by g12, whose 4th prediction is
 * counted under g12.  The same whole, streamed, with the dead shadows
 * kept, and in two ranges at every chunk boundary (load_check). */
static void test_predicted_forgotten_at_dead(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    for (uint64_t k = 0; k < 3; k++)
        tb_greenlet(&f.b, 1, 10 + k, 1, GR_GL_SUSPENDED, 1, f.x);
    predict_round(&f, 10, 1, 0);
    predict_round(&f, 10, 2, 0);
    tb_simple(&f.b, GR_DEAD, 1, 10);
    tb_greenlet(&f.b, 1, 10, 1, GR_GL_SUSPENDED, 1, f.x); /* back, in x */
    uint64_t again = predict_round(&f, 10, 2, 0);
    uint64_t flags = GR_SW_PROFILE_OURS | GR_SW_PROFILE_SET;
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    uint64_t sw11 = tb_switch(&f.b, GR_SWITCH, 1, 1, 11, 1, flags, 0, 0);
    gr_record in = {.tag = GR_INSTR, .tid = 1, .gid = 11, .tracing = 2, .parent = 1,
                    .use_tracing = 1};
    tb_rec(&f.b, &in, NULL);
    tb_simple(&f.b, GR_DEAD, 1, 11);
    tb_switch(&f.b, GR_SWITCH, 1, 11, 1, 0, flags, 0, 0);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    for (uint64_t v = 1; v <= 4; v++)
        predict_round(&f, 12, v, 0);
    load_check(&f, 1);
    (void)sw11; /* g11 died with no evidence: a note */
    assert_int_equal(count(&f, GR_RULE_PROPAGATION), 0);
    assert_int_equal(f.res.ninfos, 1);
    assert_true(count(&f, GR_RULE_SWITCH_CONSISTENCY) >= 1); /* g10 after its DEAD */
    /* g10 at 1, 2 and 2 again; g12 at 1, 2, 3 */
    assert_int_equal(f.res.nwarnings, 6);
    size_t at2 = 0;
    for (size_t i = 0; i < f.res.nwarnings; i++)
        at2 += strstr(f.res.warnings[i], "of g10 are not instrumented at monitoring version 2 ") !=
               NULL;
    assert_int_equal(at2, 2);
    char want[64];
    snprintf(want, sizeof want, "refuted by the C_RETURN at event %llu",
             (unsigned long long)again + 2);
    assert_non_null(strstr(f.res.warnings[2], want));
    assert_int_equal(f.res.nfolded, 1);
    assert_true(!f.res.folded[0].whole && f.res.folded[0].gid == 12 && f.res.folded[0].count == 1);
    end(&f);
}

static void test_no_prediction(void **state)
{
    (void)state;
    /* nothing stale; or the profile function is not ours */
    uint64_t stale[2] = {0, 1}, flags[2] = {GR_SW_PROFILE_OURS, GR_SW_PROFILE_SET};
    for (int k = 0; k < 2; k++) {
        fx f;
        begin(&f);
        switch_to_stale(&f, stale[k], flags[k]);
        tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, flags[k], 0, 0);
        load_check(&f, 0);
        assert_int_equal(count(&f, GR_RULE_PROPAGATION), 0);
        assert_int_equal(f.res.nwarnings, 0);
        end(&f);
    }
}

/* ------------------------------------------------------------ marks */

static void test_mark_not_bracketed_no_c_call(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                                                /* 4 */
    uint64_t m = tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS, 3, f.mod, f.main,
                         f.x);                                                      /* 5 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk); /* 6: not reported a second time */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 0);
    expect(&f, GR_RULE_BLIND_SPOT, m, "mark not bracketed by c_call/c_return of mark");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_mark_not_bracketed_no_c_return(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                                                /* 4 */
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);                                             /* 5 */
    uint64_t m = tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS, 3, f.mod, f.main,
                         f.x);                                                      /* 6 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);       /* 7: not the C_RETURN of mark */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.y);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk);
    load_check(&f, 0);
    const gr_violation *v =
        expect(&f, GR_RULE_BLIND_SPOT, m, "mark not bracketed by c_call/c_return of mark");
    assert_non_null(strstr(v->message, "the next record of t1 is CALL at event 7"));
    assert_int_equal(v->ctx[v->nctx - 1], m);
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_mark_bracket_at_end_of_trace(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);
    uint64_t m = tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS, 2, f.mod, f.main);
    load_check(&f, 1); /* complete trace ends after the MARK */
    expect(&f, GR_RULE_BLIND_SPOT, m, "the trace ends before the C_RETURN");
    end(&f);
    /* a truncated one may have lost the C_RETURN: not flagged */
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);
    tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS, 2, f.mod, f.main);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

static void test_mark_without_our_profile_needs_no_bracket(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    /* inside a callback (tracing > 0): no profile event can bracket it */
    tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_IN_CALLBACK, 2, f.mod, f.main);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 1);
    expect_clean(&f);
    end(&f);
}

/* a MARK on a thread without the profile function: its code ran unseen
 * (a thread started with _thread.start_new_thread) */
static void test_mark_on_unprofiled_thread(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_thread(&f.b, 2);                                            /* 4 */
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 1, f.x);                /* 5 */
    tb_mark(&f.b, 2, 5, f.label, f.mk, 0, 1, f.x);                 /* 6 */
    tb_mark(&f.b, 2, 5, f.label, f.mk, 0, 1, f.x);                 /* 7: once */
    load_check(&f, 1);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_BLIND_SPOT, 6, "no profile function on t2");
    end(&f);
}

/* that thread ended before STOP (no STACK record for it): its frames,
 * whose returns the profile function never saw, are a note ("unobserved"),
 * not a second violation beside the blind spot at its MARK */
static void test_unprofiled_thread_open_at_stop_is_note(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_thread(&f.b, 2);                                            /* 4 */
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 1, f.x);                /* 5 */
    tb_mark(&f.b, 2, 5, f.label, f.mk, 0, 1, f.x);                 /* 6 */
    stop_g1(&f);                                                   /* no STACK of g5 */
    load_check(&f, 1);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_BLIND_SPOT, 6, "no profile function on t2");
    int unobserved = 0;
    for (size_t i = 0; i < f.res.nnotes; i++)
        if (f.res.notes[i].kind == GR_NOTE_UNOBSERVED && f.res.notes[i].gid == 5)
            unobserved = 1;
    assert_true(unobserved);
    end(&f);
}

/* a thread whose profile events were seen before its MARK is observed:
 * its frames open at STOP without a STACK record stay an imbalance */
static void test_observed_thread_open_at_stop_is_imbalance(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_thread(&f.b, 2);                                            /* 4 */
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 0);                     /* 5 */
    tb_ev(&f.b, GR_CALL, 2, 5, f.x);                               /* 6 */
    tb_mark(&f.b, 2, 5, f.label, f.mk, 0, 1, f.x);                 /* 7 */
    uint64_t stop = stop_g1(&f);
    load_check(&f, 1);
    expect(&f, GR_RULE_IMBALANCE, stop, "g5 on t2 has 1 open shadow entry at STOP but no STACK");
    end(&f);
}

/* the same trace recorded with profile=False is not a blind spot */
static void test_mark_unprofiled_with_profile_off(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_meta(&f.b, "profile", "off");
    tb_thread(&f.b, 2);
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 1, f.x);
    tb_mark(&f.b, 2, 5, f.label, f.mk, 0, 1, f.x);
    load_check(&f, 1);
    expect_clean(&f);
    end(&f);
}

/* A recording as start(profile=False) writes it (callback mode, no
 * profile event at all), with META profile: off when `off`; returns the
 * indices of the records the profile-based rules would judge.  g2 ran
 * f -> x -> y unseen before its MARK; g1 left start() unseen; g2 dies
 * with frames only the real stacks showed; g1 is inside stop() at STOP. */
struct off_idx {
    uint64_t mark, back_to_g1, into_g2, dead, stop, stack;
};

static void profile_off_trace(fx *f, int off, struct off_idx *o)
{
    begin_open(f);
    if (off)
        tb_meta(&f->b, "profile", "off");
    tb_meta(&f->b, "switches", "callback");
    f->mod = tb_py(&f->b, "<module>", "off.py", 1);
    f->main = tb_py(&f->b, "main", "off.py", 18);
    f->x = tb_py(&f->b, "x", "off.py", 14);
    f->y = tb_py(&f->b, "y", "off.py", 30);
    f->start = tb_py(&f->b, "start", "<greenreplay>/__init__.py", 0);
    f->stop = tb_py(&f->b, "stop", "<greenreplay>/__init__.py", 0);
    f->mk = tb_c(&f->b, "greenreplay.mark");
    f->label = tb_str(&f->b, "in y");
    tb *b = &f->b;
    tb_thread(b, 1);                                                     /* 0 */
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 3, f->mod, f->main, f->start);   /* 1 */
    tb_simple(b, GR_START, 1, 1);                                        /* 2 */
    tb_greenlet(b, 1, 2, 1, 0, 0);                                       /* 3 */
    tb_switch_stack(b, GR_SWITCH, 1, 1, 2, 1, GR_SW_NEW, 0, 0, 0);       /* 4 */
    o->mark = tb_mark(b, 1, 2, f->label, f->mk, 0, 2, f->x, f->y);       /* 5 */
    o->back_to_g1 = tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0, 0, 0, 0, 2, f->mod, f->main);
    o->into_g2 = tb_switch_stack(b, GR_SWITCH, 1, 1, 2, 1, 0, 0, 0, 2, f->x, f->y); /* 7 */
    tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0, GR_SW_ORIGIN_DEAD, 0, 0, 2, f->mod, f->main);
    o->dead = tb_simple(b, GR_DEAD, 1, 2);                               /* 9 */
    o->stop = tb_simple(b, GR_STOP, 1, 1);                               /* 10 */
    o->stack = tb_stack(b, 1, 1, GR_STACK_RUNNING, 3, f->mod, f->main, f->stop); /* 11 */
}

/* start(profile=False): no profile events, so no shadow built from them.
 * The real stacks (MARK, SWITCH, STACK at stop) and the deaths are not
 * compared with one; the coverage says blind spots were not checkable and
 * why.  (Was: a blind_spot per greenlet and an imbalance per DEAD and at
 * STOP, on every such recording.) */
static void test_profile_off_stacks_not_compared(void **state)
{
    (void)state;
    fx f;
    struct off_idx o;
    profile_off_trace(&f, 1, &o);
    load_check(&f, 1);
    expect_clean(&f);
    assert_true(f.res.coverage.profile_off);
    assert_int_equal(f.res.coverage.switch_truth, 4);
    assert_string_equal(gr_coverage_blind_spots(&f.res.coverage), "not_checkable");
    char *text = report_of(&f.t, &f.res);
    assert_non_null(strstr(text, "blind spots          not checkable (recorded without the "
                                 "profile function, profile=False)"));
    free(text);
    end(&f);
}

/* the same records without META profile: off (a recording that had the
 * profile function and lost every event) are flagged by both rules */
static void test_profile_on_same_records_flagged(void **state)
{
    (void)state;
    fx f;
    struct off_idx o;
    profile_off_trace(&f, 0, &o);
    load_check(&f, 1);
    expect(&f, GR_RULE_BLIND_SPOT, o.mark, "no profile function on t1 at this MARK");
    expect(&f, GR_RULE_BLIND_SPOT, o.back_to_g1, "real stack of g1 at SWITCH differs");
    expect(&f, GR_RULE_IMBALANCE, o.stack, "g1 at stop: open frames differ from its real stack");
    /* g2's frames, re-seeded at the blind spot of SWITCH 7, are that loss:
     * its DEAD is no second finding */
    assert_int_equal(count(&f, GR_RULE_IMBALANCE), 1);
    assert_false(f.res.coverage.profile_off);
    assert_string_equal(gr_coverage_blind_spots(&f.res.coverage), "checkable");
    end(&f);
}

/* profile=False leaves the rules that need no profile events on: a
 * switch from a greenlet that is not running is still flagged */
static void test_profile_off_switch_consistency_flagged(void **state)
{
    (void)state;
    fx f;
    struct off_idx o;
    profile_off_trace(&f, 1, &o);
    /* g2 is dead; g3 never ran: a switch from g3 is a lost switch */
    tb_greenlet(&f.b, 1, 3, 1, 0, 0);                                    /* 12 */
    uint64_t bad = tb_switch_stack(&f.b, GR_SWITCH, 1, 3, 1, 0, 0, 0, 0, 2, f.mod, f.main);
    load_check(&f, 1);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, bad, NULL);
    end(&f);
}

/* a switch seen passively carries the target's real stack: it must
 * agree with the profile events (a ground-truth point without a mark) */
static void test_switch_real_stack_agrees(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);                                  /* 4 */
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                                    /* 5 */
    tb_switch_stack(&f.b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS | GR_SW_INFERRED, 0, 0, 0);
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);                                     /* 7 */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);                                   /* 8 */
    tb_switch_stack(&f.b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_INFERRED, 0, 0, 2,
                    f.mod, f.main);                                      /* 9 */
    tb_simple(&f.b, GR_DEAD, 1, 2);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

/* GREENREPLAY_VERIFY_CONTINUED=1: the recorder's self-check found that
 * greenlet disagreed with a continued switch: one switch_consistency
 * violation at the first such switch, with the counts; with no
 * disagreement (continued_mismatch 0) the trace is clean */
static void continued_trace(fx *f, const char *mismatch, const char *first)
{
    begin_open(f);
    begin_records(f);
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);                                 /* 4 */
    tb_greenlet(&f->b, 1, 2, 1, 0, 0);                                    /* 5 */
    tb_switch_stack(&f->b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS | GR_SW_INFERRED, 0, 0, 0);
    tb_ev(&f->b, GR_CALL, 1, 2, f->x);                                    /* 7 */
    tb_ev(&f->b, GR_C_CALL, 1, 2, f->sw);                                 /* 8 */
    tb_switch(&f->b, GR_SWITCH, 1, 2, 1, 0,
              GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_CONTINUED, 0, 0); /* 9 */
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);                               /* 10 */
    /* after the last record, as the recorder writes them at stop */
    tb_meta(&f->b, "continued_verified", "1");
    tb_meta(&f->b, "continued_mismatch", mismatch);
    if (first)
        tb_meta(&f->b, "continued_mismatch_first", first);
    load_check(f, 1);
}

static void test_continued_verified_clean(void **state)
{
    (void)state;
    fx f;
    continued_trace(&f, "0", NULL);
    expect_clean(&f);
    end(&f);
}

static void test_continued_mismatch_flagged(void **state)
{
    (void)state;
    fx f;
    continued_trace(&f, "1", "9 1 1 2");
    expect(&f, GR_RULE_SWITCH_CONSISTENCY, 9,
           "continued SWITCH to g1 but greenlet says g2 is running (0: one not seen) (self-check "
           "GREENREPLAY_VERIFY_CONTINUED: 1 of 1 continued switches contradicted; the first is here)");
    end(&f);
}

/* passive mode: greenlets ran inside the program's own profile function
 * (META switches_in_profile_function, written at stop): a warning naming
 * the count and the first call, not a violation; without the META none */
static void profile_switch_trace(fx *f, int with_meta)
{
    begin_open(f);
    begin_records(f);
    tb_ev(&f->b, GR_CALL, 1, 1, f->x);                                    /* 4 */
    tb_ev(&f->b, GR_RETURN, 1, 1, f->x);                                  /* 5 */
    if (with_meta) {
        tb_meta(&f->b, "switches_in_profile_function", "2");
        tb_meta(&f->b, "switches_in_profile_function_first", "4 1 1");
    }
    load_check(f, 1);
}

static size_t profile_switch_warnings(const fx *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->res.nwarnings; i++)
        if (strstr(f->res.warnings[i], "greenlets ran inside the program's own profile function, unseen, "
                                       "in 2 of its calls (the first at event 4 on t1 g1)"))
            n++;
    return n;
}

static void test_switches_in_profile_function_warned(void **state)
{
    (void)state;
    fx f;
    profile_switch_trace(&f, 1);
    assert_int_equal(f.res.nv, 0);
    assert_int_equal(profile_switch_warnings(&f), 1);
    end(&f);
    profile_switch_trace(&f, 0);
    assert_int_equal(f.res.nv, 0);
    assert_int_equal(profile_switch_warnings(&f), 0);
    end(&f);
}

/* a new greenlet first seen with a frame whose call was never reported
 * (greenlet issue 256 in passive mode): blind spot at the SWITCH, once;
 * the shadow is re-seeded from the real stack, so x's return matches */
static void test_switch_real_stack_blind_spot(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);                                  /* 4 */
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);                                    /* 5 */
    tb_switch_stack(&f.b, GR_SWITCH, 1, 1, 2, 1,
                    GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_NEW, 0, 0, 1, f.x); /* 6 */
    tb_ev(&f.b, GR_RETURN, 1, 2, f.x);                                   /* 7 */
    tb_switch_stack(&f.b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_INFERRED, 0, 0, 2,
                    f.mod, f.main);
    tb_simple(&f.b, GR_DEAD, 1, 2);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_BLIND_SPOT, 6, "profiler missed call of x");
    end(&f);
}

/* a MARK reads the real tracing state: off while the thread has a
 * profile function is the propagation rule (3.9-3.11), once per switch */
static void test_mark_tracing_off_is_propagation(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                                     /* 4 */
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);                                  /* 5 */
    tb_mark(&f.b, 1, 1, f.label, f.mk,
            GR_MARK_PROFILE_OURS | GR_MARK_STATE_KNOWN | GR_MARK_TRACING_OFF, 3, f.mod,
            f.main, f.x);                                                /* 6 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);
    tb_mark(&f.b, 1, 1, f.label, f.mk,
            GR_MARK_PROFILE_OURS | GR_MARK_STATE_KNOWN | GR_MARK_TRACING_OFF, 3, f.mod,
            f.main, f.x);                                                /* 9: not again */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_PROPAGATION, 6, "runs with use_tracing=0 at this MARK");
    end(&f);
}

/* the state known and on: nothing to report */
static void test_mark_tracing_on_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.mk);
    tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_PROFILE_OURS | GR_MARK_STATE_KNOWN, 3, f.mod,
            f.main, f.x);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.mk);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

/* the program replaced the profile function (the observer chained on):
 * the calls made meanwhile were unseen by the subject profiler; one
 * violation naming the cause, and the c_call of sys.setprofile whose
 * c_return went to the program's function is no imbalance */
static void test_hook_replaced_profiler_named_once(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t setp = tb_c(&f.b, "sys.setprofile");
    tb_ev(&f.b, GR_C_CALL, 1, 1, setp);                                  /* 4 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED, setp); /* 5 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.y);
    tb_ev(&f.b, GR_C_CALL, 1, 1, setp);
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, setp);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_DISPLACED, 5, "greenreplay's reference profiler on t1 was replaced by the "
                                      "program's own profile function");
    expect(&f, GR_RULE_DISPLACED, 5, "2 Python calls ran unseen by the reference profiler until "
                                      "event 11");
    /* the program's profiler saw them: the finding says it is judged apart */
    expect(&f, GR_RULE_DISPLACED, 5, "; what the program's own profiler saw is judged apart, by "
                                      "rule attribution");
    end(&f);
}

/* a profile function the program set before start(), kept: its HOOK
 * (GR_HOOK_BEFORE) right after START, and the c_return of start(), which
 * that function saw begin, pops the seed's top (no imbalance); the episode
 * is named as set before start(), in no frame of the recording; another
 * thread's, after its first records, is counted as one more thread */
static void test_hook_before_start_named(void **state)
{
    (void)state;
    fx f;
    begin_open(&f);
    f.mod = tb_py(&f.b, "<module>", "seed.py", 1);
    f.main = tb_py(&f.b, "main", "seed.py", 18);
    f.x = tb_py(&f.b, "x", "seed.py", 14);
    f.start = tb_c(&f.b, "greenreplay.start");
    f.stop = tb_c(&f.b, "greenreplay.stop");
    tb_thread(&f.b, 1);                                                    /* 0 */
    tb_greenlet(&f.b, 1, 1, 0, GR_GL_MAIN, 3, f.mod, f.main, f.start);     /* 1 */
    tb_simple(&f.b, GR_START, 1, 1);                                       /* 2 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED | GR_HOOK_BEFORE, 0); /* 3 */
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.start);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    /* t2, first seen at the end of the wait its function saw begin */
    uint32_t lock = tb_c(&f.b, "_thread.lock.acquire");
    tb_thread(&f.b, 2);                                                    /* 7 */
    tb_greenlet(&f.b, 2, 2, 0, GR_GL_MAIN, 2, f.mod, lock);                /* 8 */
    tb_hook(&f.b, 2, 2, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED | GR_HOOK_BEFORE, 0); /* 9 */
    tb_ev(&f.b, GR_C_RETURN, 2, 2, lock);
    tb_ev(&f.b, GR_CALL, 2, 2, f.x);
    tb_ev(&f.b, GR_RETURN, 2, 2, f.x);
    stop_g1(&f);
    tb_stack(&f.b, 2, 2, GR_STACK_RUNNING, 1, f.mod);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_IMBALANCE), 0);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_DISPLACED, 3,
           "greenreplay's reference profiler on t1 was displaced by the program's own profile function, set before start() "
           "(HOOK at event 3): 1 Python call ran unseen by the reference profiler until STOP (first: x (seed.py:14))");
    assert_int_equal(f.res.nwarnings, 1);
    assert_non_null(strstr(f.res.warnings[0], "displaced: greenreplay's reference profiler of 1 more "
                                              "thread was displaced by the program's own profile "
                                              "function, set before start(), "
                                              "as reported at event 3, the last at event 9"));
    end(&f);
}

/* the program replaced the profile function of every thread from t1
 * (threading.setprofile_all_threads, 3.12+): t2's HOOK names t1 and its C
 * call (GR_HOOK_BY_OTHER), which is not t2's own: t2's C call in progress
 * (a lock) keeps its shadow entry, so its c_return is no imbalance; the
 * verdict on t2 names the thread and the call that made the change */
static void test_hook_replaced_from_other_thread(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t allp = tb_c(&f.b, "sys._setprofileallthreads");
    uint32_t lock = tb_c(&f.b, "_thread.lock.acquire");
    uint64_t by1 = GR_HOOK_BY_OTHER | (1u << GR_HOOK_BY_SHIFT);
    tb_thread(&f.b, 2);                                                      /* 4 */
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 1, f.y);                          /* 5 */
    tb_ev(&f.b, GR_C_CALL, 2, 5, lock);                                      /* 6 */
    tb_ev(&f.b, GR_C_CALL, 1, 1, allp);                                      /* 7 */
    tb_hook(&f.b, 2, 5, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED | by1, allp); /* 8 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED, allp); /* 9 */
    tb_ev(&f.b, GR_C_RETURN, 2, 5, lock);
    tb_ev(&f.b, GR_CALL, 2, 5, f.x);
    tb_ev(&f.b, GR_RETURN, 2, 5, f.x);
    tb_ev(&f.b, GR_C_CALL, 1, 1, allp);
    tb_hook(&f.b, 2, 5, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON | by1, allp);
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, allp);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_DISPLACED, 8,
           "(HOOK at event 8, made by t1, during sys._setprofileallthreads; t2 was in y (seed.py:30)): "
           "1 Python call ran unseen by the reference profiler until event 14");
    end(&f);
}

/* 3.9/3.10: the program's trace function toggled the profile slot while it
 * handled an event the interpreter does not name (HOOK GR_HOOK_IN_TRACE):
 * the missed call of x (its RETURN without CALL) and, at a second such
 * HOOK, the missed return of y (found at main's return) name that HOOK;
 * a missed return after y returned does not */
static void test_hook_in_trace_names_lost_events(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint64_t it = GR_HOOK_IN_TRACE;
    tb_ev(&f.b, GR_CALL, 1, 1, f.main);                                           /* 4 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED, 0);        /* 5 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON | it, 0); /* 6 */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);                                            /* 7 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);                                              /* 8 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED, 0);        /* 9 */
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON | it, 0); /* 10 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.main);                                         /* 13 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.main);
    tb_ev(&f.b, GR_CALL, 1, 1, f.y);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.main);                                         /* 16 */
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 3);
    expect(&f, GR_RULE_IMBALANCE, 7, "without a matching CALL (shadow top: main (seed.py:18)); ignored; "
                                     "cause: the program's trace function changed the profile slot (HOOK at event 6)");
    expect(&f, GR_RULE_IMBALANCE, 13, "profiler missed the return of y (seed.py:30); resynced by popping 2 entries; "
                                      "cause: the program's trace function changed the profile slot (HOOK at event 10)");
    for (size_t i = 0; i < f.res.nv; i++)
        if (f.res.v[i].index == 16)
            assert_null(strstr(f.res.v[i].message, "cause:"));
    end(&f);
}

/* one episode of the subject removed by the program: the calls ran
 * meanwhile, appended to the builder (remove during the C call setp,
 * CALL/RETURN of x `calls` times, put back: the c_return of each setp goes
 * to no profiler, as CPython reports it); returns the HOOK's index */
static uint64_t removed_episode(fx *f, uint32_t setp, int calls)
{
    tb_ev(&f->b, GR_C_CALL, 1, 1, setp);
    uint64_t h = tb_hook(&f->b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_CLEARED, 0, setp);
    for (int i = 0; i < calls; i++) {
        tb_ev(&f->b, GR_CALL, 1, 1, f->x);
        tb_ev(&f->b, GR_RETURN, 1, 1, f->x);
    }
    tb_ev(&f->b, GR_C_CALL, 1, 1, setp);
    tb_hook(&f->b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, setp);
    return h;
}

/* the same cause again and again (gevent's thread pool removes the
 * profiler after every task): reported once, the later episodes counted
 * in one warning; a different cause is reported on its own */
static void test_hook_repeated_cause_reported_once(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t setp = tb_c(&f.b, "sys.setprofile");
    uint32_t other = tb_c(&f.b, "threading.setprofile");
    uint64_t first = removed_episode(&f, setp, 2);
    removed_episode(&f, setp, 0); /* nothing unseen: not counted */
    removed_episode(&f, setp, 3);
    uint64_t last = removed_episode(&f, setp, 1);
    uint64_t diff = removed_episode(&f, other, 1);
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 2);
    expect(&f, GR_RULE_DISPLACED, first, "2 Python calls ran unseen by the reference profiler");
    expect(&f, GR_RULE_DISPLACED, diff, "during threading.setprofile");
    assert_int_equal(f.res.nwarnings, 1);
    char want[160];
    snprintf(want, sizeof want, "removed by the program 2 more times for the cause reported at "
                                "event %" PRIu64, first);
    assert_non_null(strstr(f.res.warnings[0], want));
    snprintf(want, sizeof want, "the last at event %" PRIu64 ": 4 more Python calls", last);
    assert_non_null(strstr(f.res.warnings[0], want));
    end(&f);
}

/* gevent's thread pool on two threads: both remove the profiler the same
 * way (the same C call in the same frame: one cause).  t2's episode begins
 * first and lasts to the end of the trace; t3's begins later and ends
 * first, with one call unseen, before t2 has run any (t2 runs `t2_calls`
 * only after it).  Sets the two HOOKs' indices and t3's end. */
static void overlapping_episodes(fx *f, int t2_calls, uint64_t *h2, uint64_t *h3, uint64_t *end3)
{
    begin(f);
    uint32_t setp = tb_c(&f->b, "sys.setprofile");
    tb_thread(&f->b, 2);
    tb_greenlet(&f->b, 2, 2, 0, GR_GL_MAIN, 1, f->main);
    tb_ev(&f->b, GR_C_CALL, 2, 2, setp);
    *h2 = tb_hook(&f->b, 2, 2, GR_HOOK_PROFILE, GR_HOOK_CLEARED, 0, setp);
    tb_thread(&f->b, 3);
    tb_greenlet(&f->b, 3, 3, 0, GR_GL_MAIN, 1, f->main);
    tb_ev(&f->b, GR_C_CALL, 3, 3, setp);
    *h3 = tb_hook(&f->b, 3, 3, GR_HOOK_PROFILE, GR_HOOK_CLEARED, 0, setp);
    tb_ev(&f->b, GR_CALL, 3, 3, f->x);
    tb_ev(&f->b, GR_RETURN, 3, 3, f->x);
    tb_ev(&f->b, GR_C_CALL, 3, 3, setp);
    *end3 = tb_hook(&f->b, 3, 3, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, setp);
    for (int i = 0; i < t2_calls; i++) {
        tb_ev(&f->b, GR_CALL, 2, 2, f->y);
        tb_ev(&f->b, GR_RETURN, 2, 2, f->y);
    }
    tb_ev(&f->b, GR_CALL, 1, 1, f->x);
    tb_ev(&f->b, GR_RETURN, 1, 1, f->x);
    load_check(f, 0);
}

/* the cause is named at the episode that began first (t2's), though t3's
 * ended first; t3's is counted in the warning, in every mode (load_check:
 * loaded, streamed, batched, split at every chunk boundary) */
static void test_hook_overlapping_names_first_begun(void **state)
{
    (void)state;
    fx f;
    uint64_t h2, h3, end3;
    overlapping_episodes(&f, 2, &h2, &h3, &end3);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_DISPLACED, h2,
           "greenreplay's reference profiler on t2 was removed by the program (HOOK at event");
    expect(&f, GR_RULE_DISPLACED, h2, "2 Python calls ran unseen by the reference profiler until "
                                       "the end of the trace (first: y (seed.py:30), y (seed.py:30))");
    /* removed, not replaced: no program profiler to judge */
    assert_null(strstr(f.res.v[0].message, "rule attribution"));
    assert_int_equal(f.res.v[0].tid, 2);
    assert_int_equal(f.res.nwarnings, 1);
    char want[160];
    snprintf(want, sizeof want, "removed by the program 1 more time for the cause reported at "
                                "event %" PRIu64 " (during sys.setprofile in main (seed.py:18))",
             h2);
    assert_non_null(strstr(f.res.warnings[0], want));
    snprintf(want, sizeof want, "the last at event %" PRIu64 ": 1 more Python call ran", h3);
    assert_non_null(strstr(f.res.warnings[0], want));
    end(&f);
}

/* the same, but t2's earlier episode runs nothing unseen: it is not
 * reported, and t3's (which waited for it to end) is, alone */
static void test_hook_overlapping_first_without_calls(void **state)
{
    (void)state;
    fx f;
    uint64_t h2, h3, end3;
    overlapping_episodes(&f, 0, &h2, &h3, &end3);
    assert_int_equal(f.res.nv, 1);
    char want[96];
    snprintf(want, sizeof want, "1 Python call ran unseen by the reference profiler until event %" PRIu64, end3);
    expect(&f, GR_RULE_DISPLACED, h3, want);
    assert_int_equal(f.res.v[0].tid, 3);
    assert_int_equal(f.res.nwarnings, 0);
    end(&f);
}

/* The JUnit XML of f's result (owned). */
static char *junit_of(const fx *f)
{
    gr_junit j;
    gr_junit_init(&j);
    gr_junit_add_trace(&j, &f->t, &f->res);
    char path[] = "/tmp/gr-unit-junit-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gr_junit_write(&j, path), 0);
    gr_junit_free(&j);
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, in);
    buf[n] = 0;
    fclose(in);
    unlink(path);
    return buf;
}

/* ---- attribution: the program's own profilers ---------------------------- */

/* n request greenlets g2..g(n+1), each enabling its own profiler P1..Pn
 * (enabled in main, the frame of the HOOK) and calling x.  interleave 0:
 * each disables before the next runs (every profile right).  interleave
 * 1: all enable first, then each resumes, calls x and disables: Pn, the
 * last enabled, gets g2..gn's calls (they miss them; it counts them as
 * foreign), and g2's disable removes it, so every later call goes to no
 * profiler of the program.  Returns the index of the first CALL x. */
static uint64_t requests(fx *f, int n, int interleave, uint32_t *prof)
{
    uint32_t en = tb_c(&f->b, "_lsprof.Profiler.enable");
    uint32_t dis = tb_c(&f->b, "_lsprof.Profiler.disable");
    uint32_t ty = tb_str(&f->b, "cProfile.Profile");
    for (int k = 0; k < n; k++)
        prof[k] = tb_profiler(&f->b, GR_PROF_CPROFILE, ty, 0);
    for (int k = 0; k < n; k++)
        tb_greenlet(&f->b, 1, 2 + (uint64_t)k, 1, 0, 0);
    uint64_t first = 0, cur = 1;
    for (int k = 0; k < n; k++) {
        uint64_t g = 2 + (uint64_t)k;
        tb_switch(&f->b, GR_SWITCH, 1, cur, g, 1, OURS_KNOWN, 0, 1);
        cur = g;
        tb_ev(&f->b, GR_CALL, 1, g, f->main);
        tb_ev(&f->b, GR_C_CALL, 1, g, en);
        tb_hook_prof(&f->b, 1, g, GR_HOOK_SET, GR_HOOK_CHAINED, en, prof[k], f->main);
        tb_ev(&f->b, GR_C_RETURN, 1, g, en);
        if (!interleave) {
            uint64_t i = tb_ev(&f->b, GR_CALL, 1, g, f->x);
            first = first ? first : i;
            tb_ev(&f->b, GR_RETURN, 1, g, f->x);
            tb_ev(&f->b, GR_C_CALL, 1, g, dis);
            tb_hook_prof(&f->b, 1, g, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, dis, prof[k], f->main);
            tb_ev(&f->b, GR_C_RETURN, 1, g, dis);
        }
    }
    if (interleave) {
        for (int k = 0; k < n; k++) {
            uint64_t g = 2 + (uint64_t)k;
            tb_switch(&f->b, GR_SWITCH, 1, cur, g, 1, OURS_KNOWN, 0, 1);
            cur = g;
            uint64_t i = tb_ev(&f->b, GR_CALL, 1, g, f->x);
            first = first ? first : i;
            tb_ev(&f->b, GR_RETURN, 1, g, f->x);
            tb_ev(&f->b, GR_C_CALL, 1, g, dis);
            tb_hook_prof(&f->b, 1, g, k ? GR_HOOK_CLEARED : GR_HOOK_RESTORED,
                         k ? 0 : GR_HOOK_SUBJECT_ON, dis, k ? 0 : prof[n - 1], f->main);
            tb_ev(&f->b, GR_C_RETURN, 1, g, dis);
        }
    }
    tb_switch(&f->b, GR_SWITCH, 1, cur, 1, 0, OURS_KNOWN, 0, 1);
    return first;
}

/* An APM-style profile function P1 (thread-wide: installed in g1) that
 * switches to greenlet g2 from inside its own call at the CALL of x.
 * how 0: the switch is an ordinary one, after P1's call (tracing 0): P1
 * sees g2's call of y.  how 1: callback mode wrote the switches made
 * inside P1's function (tracing 1).  how 2: passive mode saw none of them
 * and wrote META switches_in_profile_function at stop.  Returns the CALL
 * of x. */
static uint64_t apm_switch(fx *f, int how)
{
    uint32_t sp = tb_c(&f->b, "sys.setprofile");
    uint32_t pf = tb_py(&f->b, "apm", "seed.py", 40);
    uint32_t p1 = tb_profiler(&f->b, GR_PROF_FUNCTION, 0, pf);
    tb_ev(&f->b, GR_C_CALL, 1, 1, sp);
    tb_hook_prof(&f->b, 1, 1, GR_HOOK_SET, GR_HOOK_CHAINED, sp, p1, f->main);
    tb_ev(&f->b, GR_C_RETURN, 1, 1, sp);
    tb_greenlet(&f->b, 1, 2, 1, 0, 0);
    uint64_t call = tb_ev(&f->b, GR_CALL, 1, 1, f->x);
    if (how == 1) {
        tb_switch(&f->b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_NEW, 1, 1);
        tb_switch(&f->b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 1, 1);
        tb_simple(&f->b, GR_DEAD, 1, 2);
    }
    tb_ev(&f->b, GR_RETURN, 1, 1, f->x);
    if (how == 0) {
        tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);
        tb_switch(&f->b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_NEW, 0, 1);
        tb_ev(&f->b, GR_CALL, 1, 2, f->y);
        tb_ev(&f->b, GR_RETURN, 1, 2, f->y);
        tb_switch(&f->b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_ORIGIN_DEAD, 0, 1);
        tb_simple(&f->b, GR_DEAD, 1, 2);
        tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);
    }
    if (how == 2) {
        char first[64];
        snprintf(first, sizeof first, "%llu 1 1", (unsigned long long)call);
        tb_meta(&f->b, "switches_in_profile_function", "1");
        tb_meta(&f->b, "switches_in_profile_function_first", first);
    }
    load_check(f, 0);
    return call;
}

static void test_attribution_switch_after_call_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    apm_switch(&f, 0);
    assert_int_equal(count(&f, GR_RULE_ATTRIBUTION), 0);
    assert_int_equal(f.res.nprof, 1);
    assert_int_equal(f.res.prof[0].inside, 0);
    assert_int_equal(f.res.prof[0].missed, 0);
    end(&f);
}

static void test_attribution_switch_inside_flagged(void **state)
{
    (void)state;
    for (int how = 1; how <= 2; how++) {
        fx f;
        begin(&f);
        uint64_t call = apm_switch(&f, how);
        assert_int_equal(count(&f, GR_RULE_ATTRIBUTION), 1);
        expect(&f, GR_RULE_ATTRIBUTION, how == 1 ? call + 1 : call,
               "ran greenlets inside its own function in 1 of its calls");
        assert_int_equal(f.res.nprof, 1);
        assert_int_equal(f.res.prof[0].inside, 1);
        end(&f);
    }
}

/* 200 threads, each installing and removing its own profile function
 * around a call: every profiler listed, each with its call, no finding.
 * (The rule's per-thread table once took its capacity for the next
 * thread's index and doubled at each new thread: this ran out of
 * memory.) */
static void test_attribution_many_threads(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t sp = tb_c(&f.b, "sys.setprofile");
    uint32_t pf = tb_py(&f.b, "prof", "seed.py", 40);
    uint32_t p[200];
    for (int k = 0; k < 200; k++)
        p[k] = tb_profiler(&f.b, GR_PROF_FUNCTION, 0, pf);
    for (int k = 0; k < 200; k++) {
        uint64_t tid = 2 + (uint64_t)k, gid = 2 + (uint64_t)k;
        tb_thread(&f.b, tid);
        tb_greenlet(&f.b, tid, gid, 0, GR_GL_MAIN, 0);
        tb_ev(&f.b, GR_C_CALL, tid, gid, sp);
        tb_hook_prof(&f.b, tid, gid, GR_HOOK_SET, GR_HOOK_CHAINED, sp, p[k], f.main);
        tb_ev(&f.b, GR_C_RETURN, tid, gid, sp);
        tb_ev(&f.b, GR_CALL, tid, gid, f.x);
        tb_ev(&f.b, GR_RETURN, tid, gid, f.x);
        tb_ev(&f.b, GR_C_CALL, tid, gid, sp);
        tb_hook_prof(&f.b, tid, gid, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, sp, p[k], f.main);
        tb_ev(&f.b, GR_C_RETURN, tid, gid, sp);
    }
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_ATTRIBUTION), 0);
    assert_int_equal(f.res.nprof, 200);
    for (int k = 0; k < 200; k++)
        assert_int_equal(f.res.prof[k].own, 1);
    end(&f);
}

/* passing: each request's profiler enabled and disabled around its own
 * work, nothing switching in between: no finding, and every profiler is
 * listed with what it saw */
static void test_attribution_sequential_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t prof[3];
    requests(&f, 3, 0, prof);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_ATTRIBUTION), 0);
    assert_int_equal(f.res.nprof, 3);
    for (int k = 0; k < 3; k++) {
        const gr_prof_attr *a = &f.res.prof[k];
        assert_int_equal(a->id, prof[k]);
        assert_int_equal(a->gid, 2 + k);
        assert_false(a->thread_wide);
        assert_int_equal(a->frame, f.main);
        assert_int_equal(a->seen, 1);
        assert_int_equal(a->own, 1);
        assert_int_equal(a->foreign, 0);
        assert_int_equal(a->missed, 0);
        assert_int_equal(a->nown_fn, 1);
        assert_int_equal(a->own_fn[0].code, f.x);
    }
    end(&f);
}

/* flagged: two requests interleaved: P1 counts g3's call of main (made
 * before g3 enabled P2); P2, enabled last, counts g2's call of x (g2's P1
 * misses it, "P2 got 1"); g2's disable removes P2, so g3's own call goes
 * to no profiler.  One finding per profiler and kind, not folded (2
 * alike); advisory unless --fail-on attribution */
static void test_attribution_interleaved_flagged(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t prof[2];
    uint64_t first = requests(&f, 2, 1, prof);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_ATTRIBUTION), 4);
    expect(&f, GR_RULE_ATTRIBUTION, first,
           "P1, a cprofile profiler (cProfile.Profile) enabled in main (seed.py:18), missed 1 "
           "Python call of its owner g2 while enabled but not installed (x (seed.py:14) 1); "
           "P2 got 1");
    const gr_violation *v = NULL;
    for (size_t i = 0; i < f.res.nv; i++)
        if (f.res.v[i].rule == GR_RULE_ATTRIBUTION && strstr(f.res.v[i].message, "P2, a") &&
            strstr(f.res.v[i].message, "other greenlets"))
            v = &f.res.v[i];
    assert_non_null(v);
    assert_int_equal(v->index, first);
    assert_non_null(strstr(v->message, "P2, a cprofile profiler (cProfile.Profile) enabled in main "
                                       "(seed.py:18), counted 1 Python call of other greenlets "
                                       "as its own (first g2: x (seed.py:14) 1)"));
    assert_true(v->advisory);
    assert_int_equal(f.res.nprof, 2);
    assert_int_equal(f.res.prof[0].foreign, 1);
    assert_int_equal(f.res.prof[0].foreign_fn[0].code, f.main);
    assert_int_equal(f.res.prof[0].missed, 1);
    assert_int_equal(f.res.prof[0].missed_fn[0].other, prof[1]);
    assert_int_equal(f.res.prof[1].foreign, 1);
    assert_int_equal(f.res.prof[1].foreign_fn[0].other, 2);
    assert_int_equal(f.res.prof[1].missed, 1);
    assert_int_equal(f.res.prof[1].missed_by_none, 1);
    end(&f);
}

/* flagged, folded: five requests alike make one finding ("5 of 5") for
 * the missed calls and one for the foreign ones */
static void test_attribution_folded(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t prof[5];
    uint64_t first = requests(&f, 5, 1, prof);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_ATTRIBUTION), 2);
    expect(&f, GR_RULE_ATTRIBUTION, first,
           "5 of 5 cprofile profilers (cProfile.Profile) enabled in main (seed.py:18) missed "
           "Python calls of their owner (5 in all); first: P1 missed 1");
    assert_int_equal(f.res.prof[4].foreign, 1);
    assert_int_equal(f.res.prof[4].missed, 1);
    int folded_foreign = 0;
    for (size_t i = 0; i < f.res.nv; i++)
        folded_foreign |= strstr(f.res.v[i].message, "5 of 5 cprofile profilers (cProfile.Profile) "
                                 "enabled in main (seed.py:18) counted Python calls of other "
                                 "greenlets as their own (5 in all)") != NULL;
    assert_true(folded_foreign);
    end(&f);
}

/* displaced does not fail by default: the finding is listed and counted,
 * marked advisory, and the status is clean; with `--fail-on displaced`
 * (gr_check_fail_on) the same trace is flagged */
static void test_displaced_fails_only_on_demand(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t setp = tb_c(&f.b, "sys.setprofile");
    uint64_t h = removed_episode(&f, setp, 2);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_DISPLACED), 1);
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 0);
    expect(&f, GR_RULE_DISPLACED, h, "removed by the program");
    assert_true(f.res.v[0].advisory);
    assert_int_equal(f.res.nadvisory, 1);
    assert_int_equal(gr_check_failing(&f.res), 0);
    assert_int_equal(gr_check_status_of(&f.res), GR_CHECK_CLEAN);
    assert_int_equal(gr_check_exit_code(gr_check_status_of(&f.res)), 0);
    /* JUnit: listed in the displaced testcase, not a failure */
    char *x = junit_of(&f);
    assert_non_null(strstr(x, "tests=\"9\" failures=\"0\" errors=\"0\""));
    assert_non_null(strstr(x, "name=\"displaced\">\n      <system-out>not failing: event"));
    assert_null(strstr(x, "<failure"));
    free(x);
    gr_check_result_free(&f.res);

    const char *on[] = {"displaced"};
    assert_int_equal(gr_check_fail_on(on, 1), -1);
    gr_check_run(&f.t, &f.res);
    assert_int_equal(gr_check_fail_on(NULL, 0), -1); /* back to the default */
    assert_int_equal(count(&f, GR_RULE_DISPLACED), 1);
    assert_false(f.res.v[0].advisory);
    assert_int_equal(f.res.nadvisory, 0);
    assert_int_equal(gr_check_failing(&f.res), 1);
    assert_int_equal(gr_check_exit_code(gr_check_status_of(&f.res)), 1);
    end(&f);
}

/* gevent's thread pool removes the profiler by design (a known cause):
 * one note naming it, no finding; --strict-known makes it a displaced
 * finding (not failing), which --allow displaced:FUNCTION allows */
static void test_displaced_known_cause(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t setp = tb_c(&f.b, "sys.setprofile");
    uint32_t after = tb_py(&f.b, "ThreadPool._after_run_task", "/site/gevent/threadpool.py", 200);
    tb_ev(&f.b, GR_CALL, 1, 1, after);
    uint64_t h = removed_episode(&f, setp, 2);
    tb_ev(&f.b, GR_RETURN, 1, 1, after);
    load_check(&f, 0);
    expect_clean(&f);
    assert_int_equal(f.res.ninfos, 1);
    assert_non_null(strstr(f.res.infos[0], "displaced: greenreplay's reference profiler was removed by "
                                           "gevent's thread pool"));
    /* --strict-known alone gives a finding that does not fail: the note
     * names both options that make it fail */
    assert_non_null(strstr(f.res.infos[0], "(`check --strict-known --fail-on displaced` makes "
                                           "it one)"));
    gr_check_result_free(&f.res);

    gr_check_known_causes(1);
    gr_check_run(&f.t, &f.res);
    gr_check_known_causes(0);
    assert_int_equal(count(&f, GR_RULE_DISPLACED), 1);
    expect(&f, GR_RULE_DISPLACED, h, "in ThreadPool._after_run_task");
    assert_true(f.res.v[0].advisory);
    const char *other[] = {"displaced:Other.func"}, *named[] = {"displaced:ThreadPool._after_run_task"};
    assert_int_equal(gr_check_allow(&f.res, other, 1), -1);
    assert_int_equal(f.res.nallowed, 0);
    assert_int_equal(gr_check_allow(&f.res, named, 1), -1);
    assert_int_equal(f.res.nallowed, 1);
    end(&f);
}

/* a name that is no rule is refused, and changes nothing */
static void test_fail_on_unknown_rule(void **state)
{
    (void)state;
    const char *names[] = {"displaced", "displace"};
    assert_int_equal(gr_check_fail_on(names, 2), 1);
    assert_false(gr_check_rule_fails(GR_RULE_DISPLACED));
    assert_true(gr_check_rule_fails(GR_RULE_BLIND_SPOT));
    assert_true(gr_check_rule_fails(GR_RULE_UNREACHED));
}

/* META threads_unreached: one unreached violation per call site, failing
 * (a miss); a value that does not parse says nothing */
static void test_unreached_threads(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    char v[64];
    snprintf(v, sizeof v, "2 %u 14 _thread.start_new_thread", (unsigned)f.x);
    tb_meta(&f.b, "threads_unreached", v);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 1);
    assert_int_equal(count(&f, GR_RULE_UNREACHED), 1);
    assert_int_equal(count(&f, GR_RULE_BLIND_SPOT), 0);
    assert_non_null(strstr(f.res.v[0].message, "2 threads ran Python code no profiler saw: "
                                               "started by x (seed.py:"));
    assert_false(f.res.v[0].advisory);
    assert_int_equal(gr_check_exit_code(gr_check_status_of(&f.res)), 1);
    end(&f);

    begin(&f);
    tb_meta(&f.b, "threads_unreached", "0 1 14 _thread.start_new_thread");
    tb_meta(&f.b, "threads_unreached", "two threads");
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 1);
    expect_clean(&f);
    end(&f);
}

/* a profiler displaced and put back with nothing run in between */
static void test_hook_restored_without_calls_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t setp = tb_c(&f.b, "sys.setprofile");
    tb_ev(&f.b, GR_C_CALL, 1, 1, setp);
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_SET, GR_HOOK_CHAINED, setp);
    tb_ev(&f.b, GR_C_CALL, 1, 1, setp);
    tb_hook(&f.b, 1, 1, GR_HOOK_PROFILE, GR_HOOK_RESTORED, GR_HOOK_SUBJECT_ON, setp);
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

/* a greenlet suspended on a thread that ended before stop: listed as
 * abandoned, not an imbalance, even when its frames are gone */
static void test_abandoned_greenlet_is_a_note(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_thread(&f.b, 2);                                                  /* 4 */
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 0);                           /* 5 */
    tb_ev(&f.b, GR_C_CALL, 2, 5, f.sw);
    tb_greenlet(&f.b, 2, 6, 5, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 2, 5, 6, 5, GR_SW_PROFILE_OURS, 0, 1);
    tb_ev(&f.b, GR_CALL, 2, 6, f.y);
    tb_ev(&f.b, GR_C_CALL, 2, 6, f.sw);
    tb_switch(&f.b, GR_SWITCH, 2, 6, 5, 0, GR_SW_PROFILE_OURS, 0, 1);
    tb_ev(&f.b, GR_C_RETURN, 2, 5, f.sw);
    tb_simple(&f.b, GR_STOP, 1, 1);
    tb_stack(&f.b, 1, 1, GR_STACK_RUNNING, 2, f.mod, f.main);
    tb_stack(&f.b, 2, 6, GR_STACK_THREAD_ENDED, 0);
    load_check(&f, 1);
    expect_clean(&f);
    assert_int_equal(f.res.nnotes, 2); /* g1 open at stop, g6 abandoned */
    assert_int_equal(f.res.notes[0].kind, GR_NOTE_OPEN_AT_STOP);
    assert_int_equal(f.res.notes[1].kind, GR_NOTE_ABANDONED);
    assert_int_equal(f.res.notes[1].gid, 6);
    end(&f);
}

/* interleaved threads: each has its own shadows and context */
static void test_two_threads(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_thread(&f.b, 2);                                      /* 4 */
    tb_greenlet(&f.b, 2, 5, 0, GR_GL_MAIN, 1, f.mod);        /* 5 */
    tb_ev(&f.b, GR_CALL, 1, 1, f.x);                         /* 6 */
    tb_ev(&f.b, GR_CALL, 2, 5, f.y);                         /* 7 */
    tb_ev(&f.b, GR_RETURN, 1, 1, f.x);                       /* 8 */
    uint64_t bad = tb_ev(&f.b, GR_RETURN, 2, 5, f.x);        /* 9: t2 never called x */
    load_check(&f, 0);
    const gr_violation *v = expect(&f, GR_RULE_IMBALANCE, bad, "RETURN of x");
    assert_int_equal(v->tid, 2);
    assert_int_equal(v->nctx, 4);
    assert_int_equal(v->ctx[0], 4); /* records of t2 only */
    assert_int_equal(v->ctx[1], 5);
    assert_int_equal(v->ctx[2], 7);
    assert_int_equal(v->ctx[3], 9);
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

/* greenlet not importable: gid 0 everywhere, one shadow per thread */
static void test_gid_zero(void **state)
{
    (void)state;
    fx f;
    memset(&f, 0, sizeof f);
    tb_open(&f.b, 0);
    uint32_t mod = tb_py(&f.b, "<module>", "a.py", 1), x = tb_py(&f.b, "x", "a.py", 3);
    uint32_t mk = tb_c(&f.b, "greenreplay.mark"), label = tb_str(&f.b, "m");
    tb_thread(&f.b, 1);
    tb_greenlet(&f.b, 1, 0, 0, GR_GL_MAIN, 1, mod);
    tb_ev(&f.b, GR_CALL, 1, 0, x);
    tb_ev(&f.b, GR_C_CALL, 1, 0, mk);
    tb_mark(&f.b, 1, 0, label, mk, GR_MARK_PROFILE_OURS, 2, mod, x);
    tb_ev(&f.b, GR_C_RETURN, 1, 0, mk);
    tb_ev(&f.b, GR_RETURN, 1, 0, x);
    tb_thread(&f.b, 2);
    tb_greenlet(&f.b, 2, 0, 0, GR_GL_MAIN, 0);
    tb_ev(&f.b, GR_CALL, 2, 0, x);
    tb_ev(&f.b, GR_RETURN, 2, 0, x);
    load_check(&f, 1);
    expect_clean(&f);
    end(&f);
}

static void test_cut_seed_base_unknown(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    /* seed cut at the cap: only [x] known; returns below it are fine */
    tb_greenlet(&f.b, 1, 4, 1, GR_GL_SUSPENDED | GR_GL_CUT, 1, f.x);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 4, 1, OURS_KNOWN, 0, 1);
    tb_ev(&f.b, GR_C_RETURN, 1, 4, f.sw);
    tb_ev(&f.b, GR_C_CALL, 1, 4, f.mk);
    tb_mark(&f.b, 1, 4, f.label, f.mk, GR_MARK_PROFILE_OURS, 3, f.mod, f.main, f.x);
    tb_ev(&f.b, GR_C_RETURN, 1, 4, f.mk);
    tb_ev(&f.b, GR_RETURN, 1, 4, f.x);
    tb_ev(&f.b, GR_RETURN, 1, 4, f.main);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

static void test_trailer_warnings(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    tb_finish_with(&f.b, 4, 3, 1, GR_STOP_CALLED);
    assert_int_equal(tb_load(&f.b, &f.t), GR_READ_OK);
    gr_check_run(&f.t, &f.res);
    f.loaded = 1;
    expect_clean(&f);
    assert_int_equal(f.res.nwarnings, 2);
    assert_non_null(strstr(f.res.warnings[0], "3 dropped records"));
    assert_non_null(strstr(f.res.warnings[1], "1 internal recorder error"));
    end(&f);
}

/* callback_guard: the program's greenlet trace callback (HOOK slot 3)
 * whose CALL is the first event of the target after each switch: greenlet
 * ran it with tracing on (no TracingGuard, greenlet PR 268).  One
 * violation per callback and thread, at the first such CALL, with the
 * count of switches. */
static uint64_t guard_switches(fx *f, uint32_t cb, int guarded)
{
    tb_hook(&f->b, 1, 1, GR_HOOK_GREENLET, GR_HOOK_SET, 0, cb);          /* 4 */
    tb_ev(&f->b, GR_C_CALL, 1, 1, f->sw);                                /* 5 */
    tb_greenlet(&f->b, 1, 2, 1, 0, 0);                                   /* 6 */
    tb_switch(&f->b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED, 0, 1); /* 7 */
    uint64_t first = 0;
    if (!guarded) {
        first = tb_ev(&f->b, GR_CALL, 1, 2, cb);                         /* 8 */
        tb_ev(&f->b, GR_RETURN, 1, 2, cb);
    }
    tb_ev(&f->b, GR_CALL, 1, 2, f->x);
    tb_ev(&f->b, GR_C_CALL, 1, 2, f->sw);
    tb_switch(&f->b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_INFERRED, 0, 1);
    if (!guarded) {
        tb_ev(&f->b, GR_CALL, 1, 1, cb);
        tb_ev(&f->b, GR_RETURN, 1, 1, cb);
    }
    tb_ev(&f->b, GR_C_RETURN, 1, 1, f->sw);
    /* the program calls its callback itself: never flagged */
    tb_ev(&f->b, GR_CALL, 1, 1, cb);
    tb_ev(&f->b, GR_RETURN, 1, 1, cb);
    return first;
}

static void test_callback_guard_missing_flagged_once(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t cb = tb_py(&f.b, "callback", "seed.py", 40);
    uint64_t first = guard_switches(&f, cb, 0);
    load_check(&f, 0);
    assert_int_equal(count(&f, GR_RULE_CALLBACK_GUARD), 1);
    expect(&f, GR_RULE_CALLBACK_GUARD, first,
           "greenlet ran its trace callback callback (seed.py:40) with tracing on");
    expect(&f, GR_RULE_CALLBACK_GUARD, first, "after SWITCH g1->g2 at event 7, and after 2 switches");
    expect(&f, GR_RULE_CALLBACK_GUARD, first, "greenlet PR 268");
    assert_int_equal(f.res.nv, 1);
    end(&f);
}

static void test_callback_guard_guarded_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t cb = tb_py(&f.b, "callback", "seed.py", 40);
    guard_switches(&f, cb, 1);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

/* the same code after a switch, but not (or no longer) the callback */
static void test_callback_guard_other_code_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t cb = tb_py(&f.b, "callback", "seed.py", 40);
    tb_hook(&f.b, 1, 1, GR_HOOK_GREENLET, GR_HOOK_CLEARED, 0, 0);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED, 0, 1);
    tb_ev(&f.b, GR_CALL, 1, 2, cb);
    tb_ev(&f.b, GR_RETURN, 1, 2, cb);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

/* a MARK inside a guarded callback (MARK bit 4): the callback's frames are
 * on the real stack, rightly unseen by the profiler; the shadow is the
 * outer part of the real stack: clean */
static void test_mark_in_callback_outer_clean(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t cb = tb_py(&f.b, "callback", "seed.py", 40);
    tb_hook(&f.b, 1, 1, GR_HOOK_GREENLET, GR_HOOK_SET, 0, cb);
    tb_ev(&f.b, GR_C_CALL, 1, 1, f.sw);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED | GR_SW_AT_MARK, 0, 1);
    tb_mark(&f.b, 1, 2, f.label, f.mk, GR_MARK_IN_CALLBACK, 1, cb);      /* new greenlet */
    tb_ev(&f.b, GR_CALL, 1, 2, f.x);
    tb_ev(&f.b, GR_C_CALL, 1, 2, f.sw);
    tb_switch(&f.b, GR_SWITCH, 1, 2, 1, 0, OURS_KNOWN | GR_SW_INFERRED | GR_SW_AT_MARK, 0, 1);
    tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_IN_CALLBACK, 3, f.mod, f.main, cb);
    tb_ev(&f.b, GR_C_RETURN, 1, 1, f.sw);
    load_check(&f, 0);
    expect_clean(&f);
    end(&f);
}

/* ... but its outer frames must still be the shadow's */
static void test_mark_in_callback_outer_differs(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t cb = tb_py(&f.b, "callback", "seed.py", 40);
    uint64_t m = tb_mark(&f.b, 1, 1, f.label, f.mk, GR_MARK_IN_CALLBACK, 3, f.mod, f.y, cb); /* 4 */
    load_check(&f, 0);
    assert_int_equal(f.res.nv, 1);
    expect(&f, GR_RULE_BLIND_SPOT, m, "profiler missed return of main");
    end(&f);
}

/* ... and frames above the shadow that are not the greenlet callback's (a
 * greenlet switched to from inside a trace function runs with tracing
 * suspended: fixtures/switch_in_tracefunc.py) are a blind spot */
static void test_mark_in_callback_not_greenlet_callback(void **state)
{
    (void)state;
    fx f;
    begin(&f);
    uint32_t cb = tb_py(&f.b, "callback", "seed.py", 40);
    tb_hook(&f.b, 1, 1, GR_HOOK_GREENLET, GR_HOOK_SET, 0, cb);
    tb_greenlet(&f.b, 1, 2, 1, 0, 0);
    tb_switch(&f.b, GR_SWITCH, 1, 1, 2, 1, OURS_KNOWN | GR_SW_INFERRED | GR_SW_AT_MARK, 1, 0);
    uint64_t m = tb_mark(&f.b, 1, 2, f.label, f.mk, GR_MARK_IN_CALLBACK, 1, f.x);
    load_check(&f, 0);
    expect(&f, GR_RULE_BLIND_SPOT, m, "profiler missed call of x");
    end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_clean),
        cmocka_unit_test(test_dropped_call_in_new_greenlet_is_blind_spot),
        cmocka_unit_test(test_blind_spot_missed_return),
        cmocka_unit_test(test_blind_spot_cut_mark),
        cmocka_unit_test(test_throw_delegated_through_generator_clean),
        cmocka_unit_test(test_missed_plain_frame_outside_generator_flagged),
        cmocka_unit_test(test_throw_delegated_chain_only_clean),
        cmocka_unit_test(test_chain_only_plain_outer_flagged),
        cmocka_unit_test(test_missed_generator_around_plain_frame_flagged),
        cmocka_unit_test(test_return_mismatch_resyncs),
        cmocka_unit_test(test_c_return_without_c_call),
        cmocka_unit_test(test_balanced_c_calls_clean),
        cmocka_unit_test(test_suspended_seed_tolerates_one_c_return),
        cmocka_unit_test(test_unsuspended_seed_flags_c_return),
        cmocka_unit_test(test_dead_with_open_frames),
        cmocka_unit_test(test_dead_clean),
        cmocka_unit_test(test_dead_in_unseen_takeover_is_displaced),
        cmocka_unit_test(test_dead_before_takeover_flagged),
        cmocka_unit_test(test_dead_after_blind_spot_one_finding),
        cmocka_unit_test(test_unseen_run_flagged),
        cmocka_unit_test(test_unseen_run_in_c_only_clean),
        cmocka_unit_test(test_attribution_switch_after_call_clean),
        cmocka_unit_test(test_attribution_switch_inside_flagged),
        cmocka_unit_test(test_attribution_many_threads),
        cmocka_unit_test(test_unseen_run_ended_unseen_one_finding),
        cmocka_unit_test(test_unseen_run_later_call_open_flagged),
        cmocka_unit_test(test_dead_after_blind_spot_later_loss_flagged),
        cmocka_unit_test(test_open_at_stop_matches),
        cmocka_unit_test(test_open_at_stop_differs),
        cmocka_unit_test(test_open_frames_without_stack_record),
        cmocka_unit_test(test_truncated_open_frames_informational),
        cmocka_unit_test(test_exit_without_stop_informational),
        cmocka_unit_test(test_switch_from_wrong_origin),
        cmocka_unit_test(test_throw_from_right_origin_clean),
        cmocka_unit_test(test_event_of_not_running_greenlet),
        cmocka_unit_test(test_event_in_dead_greenlet),
        cmocka_unit_test(test_switch_to_dead_greenlet),
        cmocka_unit_test(test_propagation_flagged),
        cmocka_unit_test(test_propagation_not_flagged),
        cmocka_unit_test(test_predicted_blind_spot_confirmed),
        cmocka_unit_test(test_predicted_blind_spot_refuted),
        cmocka_unit_test(test_predicted_blind_spot_refuted_by_mark_in_resumed_frame),
        cmocka_unit_test(test_predicted_blind_spot_refuted_by_own_return),
        cmocka_unit_test(test_predicted_blind_spot_confirmed_by_blind_mark),
        cmocka_unit_test(test_predicted_blind_spot_not_refuted_by_mark_in_callee),
        cmocka_unit_test(test_predicted_blind_spot_unconfirmed),
        cmocka_unit_test(test_predicted_many_greenlets_refuted),
        cmocka_unit_test(test_predicted_many_greenlets_confirmed),
        cmocka_unit_test(test_predicted_open_while_many_settle),
        cmocka_unit_test(test_predicted_refutations_folded),
        cmocka_unit_test(test_predicted_refutations_capped),
        cmocka_unit_test(test_predicted_forgotten_at_dead),
        cmocka_unit_test(test_no_prediction),
        cmocka_unit_test(test_mark_not_bracketed_no_c_call),
        cmocka_unit_test(test_mark_not_bracketed_no_c_return),
        cmocka_unit_test(test_mark_bracket_at_end_of_trace),
        cmocka_unit_test(test_mark_without_our_profile_needs_no_bracket),
        cmocka_unit_test(test_mark_on_unprofiled_thread),
        cmocka_unit_test(test_mark_unprofiled_with_profile_off),
        cmocka_unit_test(test_profile_off_stacks_not_compared),
        cmocka_unit_test(test_profile_on_same_records_flagged),
        cmocka_unit_test(test_profile_off_switch_consistency_flagged),
        cmocka_unit_test(test_unprofiled_thread_open_at_stop_is_note),
        cmocka_unit_test(test_observed_thread_open_at_stop_is_imbalance),
        cmocka_unit_test(test_switch_real_stack_agrees),
        cmocka_unit_test(test_continued_switch_clean),
        cmocka_unit_test(test_hook_repeated_cause_reported_once),
        cmocka_unit_test(test_hook_overlapping_names_first_begun),
        cmocka_unit_test(test_hook_overlapping_first_without_calls),
        cmocka_unit_test(test_continued_switch_not_suspended),
        cmocka_unit_test(test_switch_real_stack_blind_spot),
        cmocka_unit_test(test_mark_tracing_off_is_propagation),
        cmocka_unit_test(test_mark_tracing_on_clean),
        cmocka_unit_test(test_hook_replaced_profiler_named_once),
        cmocka_unit_test(test_hook_before_start_named),
        cmocka_unit_test(test_hook_replaced_from_other_thread),
        cmocka_unit_test(test_hook_in_trace_names_lost_events),
        cmocka_unit_test(test_hook_restored_without_calls_clean),
        cmocka_unit_test(test_displaced_fails_only_on_demand),
        cmocka_unit_test(test_attribution_sequential_clean),
        cmocka_unit_test(test_attribution_interleaved_flagged),
        cmocka_unit_test(test_attribution_folded),
        cmocka_unit_test(test_fail_on_unknown_rule),
        cmocka_unit_test(test_displaced_known_cause),
        cmocka_unit_test(test_unreached_threads),
        cmocka_unit_test(test_abandoned_greenlet_is_a_note),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_gid_zero),
        cmocka_unit_test(test_cut_seed_base_unknown),
        cmocka_unit_test(test_trailer_warnings),
        cmocka_unit_test(test_callback_guard_missing_flagged_once),
        cmocka_unit_test(test_callback_guard_guarded_clean),
        cmocka_unit_test(test_callback_guard_other_code_clean),
        cmocka_unit_test(test_mark_in_callback_outer_clean),
        cmocka_unit_test(test_mark_in_callback_outer_differs),
        cmocka_unit_test(test_mark_in_callback_not_greenlet_callback),
        cmocka_unit_test(test_continued_verified_clean),
        cmocka_unit_test(test_continued_mismatch_flagged),
        cmocka_unit_test(test_switches_in_profile_function_warned),
        cmocka_unit_test(test_many_dead_greenlets_clean),
        cmocka_unit_test(test_record_long_after_dead_flagged),
        cmocka_unit_test(test_gid_reused_after_dead_flagged),
        cmocka_unit_test(test_dead_gid_on_other_thread),
        cmocka_unit_test(test_open_at_stop_in_creation_order),
        cmocka_unit_test(test_revived_base_unknown_no_imbalance),
        cmocka_unit_test(test_revived_coverage_counted_once),
        cmocka_unit_test(test_checker_api_on_freed_greenlet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
