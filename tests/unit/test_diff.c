/* test_diff.c - replay/repro/diff_align.c (Myers alignment: covers both
 * sequences, minimal against a brute-force LCS, budget), replay/repro/diff.c
 * (structural tokens: greenlet renumbering, files, C names, renaming,
 * truncation, INSTR) and replay/repro/diff_ignore.c (gen-finalize and
 * c-return-without-c-call normalizations, --ignore parsing).  Each
 * equality test has a twin that must differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diff.h"
#include "diff_align.h"
#include "diff_ignore.h"
#include "diff_stream.h"
#include "tb_run.h"
#include "trace_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- alignment ----------------------------------------------------------- */

/* Check that runs cover a and b, and return the number of edits. */
static size_t check_runs(const uint32_t *a, size_t na, const uint32_t *b, size_t nb,
                         const gr_edit *r, size_t n)
{
    size_t ia = 0, ib = 0, edits = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            assert_true(r[i].op != r[i - 1].op);
        assert_true(r[i].n > 0);
        switch (r[i].op) {
        case '=':
            assert_int_equal(r[i].a, ia);
            assert_int_equal(r[i].b, ib);
            for (size_t k = 0; k < r[i].n; k++)
                assert_int_equal(a[ia + k], b[ib + k]);
            ia += r[i].n;
            ib += r[i].n;
            break;
        case '-':
            assert_int_equal(r[i].a, ia);
            ia += r[i].n;
            edits += r[i].n;
            break;
        case '+':
            assert_int_equal(r[i].b, ib);
            ib += r[i].n;
            edits += r[i].n;
            break;
        default: fail();
        }
    }
    assert_int_equal(ia, na);
    assert_int_equal(ib, nb);
    return edits;
}

/* Edit distance (insertions + deletions) by dynamic programming. */
static size_t lcs_distance(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    size_t *d = calloc((na + 1) * (nb + 1), sizeof *d);
    for (size_t i = 0; i <= na; i++)
        for (size_t j = 0; j <= nb; j++) {
            size_t *c = &d[i * (nb + 1) + j];
            if (i == 0 || j == 0)
                *c = 0;
            else if (a[i - 1] == b[j - 1])
                *c = d[(i - 1) * (nb + 1) + j - 1] + 1;
            else {
                size_t x = d[(i - 1) * (nb + 1) + j], y = d[i * (nb + 1) + j - 1];
                *c = x > y ? x : y;
            }
        }
    size_t l = d[na * (nb + 1) + nb];
    free(d);
    return na + nb - 2 * l;
}

static void test_align_basic(void **state)
{
    (void)state;
    uint32_t a[] = {1, 2, 3, 4, 5}, b[] = {1, 2, 4, 5}, c[] = {1, 2, 9, 3, 4, 5};
    gr_edit *r;
    size_t n = gr_align(a, 5, a, 5, 0, &r, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].op, '=');
    assert_int_equal(check_runs(a, 5, a, 5, r, n), 0);
    free(r);
    /* one deletion, at index 2 of a */
    n = gr_align(a, 5, b, 4, 0, &r, NULL);
    assert_int_equal(check_runs(a, 5, b, 4, r, n), 1);
    assert_int_equal(n, 3);
    assert_int_equal(r[1].op, '-');
    assert_int_equal(r[1].a, 2);
    free(r);
    /* one insertion, at index 2 of c */
    n = gr_align(a, 5, c, 6, 0, &r, NULL);
    assert_int_equal(check_runs(a, 5, c, 6, r, n), 1);
    assert_int_equal(r[1].op, '+');
    assert_int_equal(r[1].b, 2);
    free(r);
    /* empty sides */
    n = gr_align(NULL, 0, b, 4, 0, &r, NULL);
    assert_int_equal(check_runs(NULL, 0, b, 4, r, n), 4);
    free(r);
    n = gr_align(a, 5, NULL, 0, 0, &r, NULL);
    assert_int_equal(check_runs(a, 5, NULL, 0, r, n), 5);
    free(r);
    n = gr_align(NULL, 0, NULL, 0, 0, &r, NULL);
    assert_int_equal(n, 0);
    free(r);
}

static void test_align_minimal_random(void **state)
{
    (void)state;
    uint32_t a[40], b[40];
    srand(12345);
    for (int round = 0; round < 300; round++) {
        size_t na = (size_t)(rand() % 40), nb = (size_t)(rand() % 40);
        int alphabet = 2 + rand() % 4;
        for (size_t i = 0; i < na; i++)
            a[i] = (uint32_t)(rand() % alphabet);
        for (size_t i = 0; i < nb; i++)
            b[i] = (uint32_t)(rand() % alphabet);
        gr_edit *r;
        int ex = -1;
        size_t n = gr_align(a, na, b, nb, 0, &r, &ex);
        assert_int_equal(ex, 0);
        assert_int_equal(check_runs(a, na, b, nb, r, n), lcs_distance(a, na, b, nb));
        free(r);
    }
}

static void test_align_budget(void **state)
{
    (void)state;
    enum { N = 2000 };
    uint32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    for (size_t i = 0; i < N; i++) {
        a[i] = (uint32_t)(i * 7 % 13);
        b[i] = (uint32_t)(i * 11 % 17) + 100;
    }
    a[0] = b[0] = 5; /* a common prefix of one */
    gr_edit *r;
    int ex = 0;
    size_t n = gr_align(a, N, b, N, 1000, &r, &ex);
    assert_int_equal(ex, 1); /* gave up, and said so */
    check_runs(a, N, b, N, r, n);
    free(r);
    n = gr_align(a, N, b, N, 0, &r, &ex);
    assert_int_equal(ex, 0);
    assert_int_equal(check_runs(a, N, b, N, r, n), 2 * (N - 1));
    free(r);
    free(a);
    free(b);
}

/* ---- structural diff of built traces ------------------------------------ */

typedef struct spec {
    uint64_t g2;          /* gid of the second greenlet */
    const char *file;     /* file of x */
    const char *cname;    /* name of the C call */
    const char *qual;     /* qualname of x */
    const char *label;    /* mark label */
    int drop_call;        /* leave out the CALL/RETURN of y */
    int truncate;         /* no trailer, last records missing */
    int instr;            /* INSTR after each switch */
    int back;             /* the new greenlet switches back instead of dying:
                             1 continued, 2 with g1's real stack, 3 with a
                             stack that is not g1's */
} spec;

static void spec_default(spec *s)
{
    memset(s, 0, sizeof *s);
    s->g2 = 2;
    s->file = "a.py";
    s->cname = "builtins.len";
    s->qual = "x";
    s->label = "here";
}

/* A small trace: main calls x, which calls y and a C function, switches
 * to a new greenlet that marks and dies. */
static void build(tb *b, const spec *s)
{
    tb_open(b, 0);
    tb_meta(b, "python", "3.11.2");
    uint32_t mod = tb_py(b, "<module>", "a.py", 1), x = tb_py(b, s->qual, s->file, 5);
    uint32_t y = tb_py(b, "y", "a.py", 9), c = tb_c(b, s->cname);
    uint32_t sw = tb_c(b, "greenlet.greenlet.switch"), mk = tb_c(b, "greenreplay._greenreplay.mark");
    uint32_t lab = tb_str(b, s->label);
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_CALL, 1, 1, x);
    if (!s->drop_call) {
        tb_ev(b, GR_CALL, 1, 1, y);
        tb_ev(b, GR_RETURN, 1, 1, y);
    }
    tb_ev(b, GR_C_CALL, 1, 1, c);
    tb_ev(b, GR_C_RETURN, 1, 1, c);
    tb_ev(b, GR_C_CALL, 1, 1, sw);
    tb_greenlet(b, 1, s->g2, 1, 0, 0);
    tb_switch(b, GR_SWITCH, 1, 1, s->g2, 1, 5, 0, 255);
    if (s->instr)
        tb_instr(b, 1, s->g2, 1, 0, 0);
    tb_ev(b, GR_CALL, 1, s->g2, x);
    tb_ev(b, GR_C_CALL, 1, s->g2, mk);
    tb_mark(b, 1, s->g2, lab, mk, 2, 1, x);
    tb_ev(b, GR_C_RETURN, 1, s->g2, mk);
    if (s->back) {
        tb_ev(b, GR_C_CALL, 1, s->g2, sw);
        if (s->back == 1)
            tb_switch(b, GR_SWITCH, 1, s->g2, 1, 0, 5 | GR_SW_CONTINUED, 0, 255);
        else if (s->back == 2)
            tb_switch_stack(b, GR_SWITCH, 1, s->g2, 1, 0, 5 | GR_SW_REAL_STACK, 0, 255, 2, mod, x);
        else
            tb_switch_stack(b, GR_SWITCH, 1, s->g2, 1, 0, 5 | GR_SW_REAL_STACK, 0, 255, 1, mod);
        tb_ev(b, GR_C_RETURN, 1, 1, sw);
        tb_ev(b, GR_RETURN, 1, 1, x);
        tb_simple(b, GR_STOP, 1, 1);
        tb_finish(b);
        return;
    }
    tb_ev(b, GR_RETURN, 1, s->g2, x);
    tb_switch(b, GR_SWITCH, 1, s->g2, 1, 0, 5 | GR_SW_ORIGIN_DEAD, 0, 255);
    if (s->instr)
        tb_instr(b, 1, 1, 1, 2, 0);
    tb_simple(b, GR_DEAD, 1, s->g2);
    if (s->truncate) {
        tb_abandon(b);
        return;
    }
    tb_ev(b, GR_C_RETURN, 1, 1, sw);
    tb_ev(b, GR_RETURN, 1, 1, x);
    tb_simple(b, GR_STOP, 1, 1);
    tb_finish(b);
}

/* Run gr_diff on two specs; returns its status, output in *out (owned). */
static int run_diff(const spec *sa, const spec *sb, const gr_diff_opts *o, char **out)
{
    tb a, b;
    build(&a, sa);
    build(&b, sb);
    return tb_diff(&a, &b, o, out);
}

/* a continued switch (no stack: its records give it) against the same
 * switch with the target's real stack (switch_stacks "every"): the same
 * structure; against a real stack that is not the target's: different */
static void test_diff_continued_switch(void **state)
{
    (void)state;
    spec a, b;
    spec_default(&a);
    spec_default(&b);
    a.back = 1;
    b.back = 2;
    gr_diff_opts o;
    gr_diff_defaults(&o);
    char *out;
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    assert_non_null(strstr(out, "same structure"));
    free(out);
    assert_int_equal(run_diff(&b, &a, &o, &out), 0);
    free(out);
    assert_int_equal(run_diff(&a, &a, &o, &out), 0);
    free(out);
    b.back = 3;
    assert_int_equal(run_diff(&a, &b, &o, &out), 1);
    assert_non_null(strstr(out, "continued"));
    free(out);
}

static void test_diff_same_and_dropped_call(void **state)
{
    (void)state;
    spec a, b;
    spec_default(&a);
    spec_default(&b);
    gr_diff_opts o;
    gr_diff_defaults(&o);
    char *out;
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    assert_non_null(strstr(out, "same structure"));
    free(out);
    /* must differ: B lacks the call of y (records 4-5 of A) */
    b.drop_call = 1;
    assert_int_equal(run_diff(&a, &b, &o, &out), 1);
    assert_non_null(strstr(out, "@@ -1,8 +1,6 @@ t1 g1 in A: <module> > x"));
    assert_non_null(strstr(out, "\n-     4 CALL        t1 g1 y (a.py:9)\n"));
    assert_non_null(strstr(out, "\n-     5 RETURN      t1 g1 y (a.py:9)\n"));
    assert_non_null(strstr(out, "1 difference: 2 records only in A, 0 only in B"));
    free(out);
}

static void test_diff_greenlets_by_first_sight(void **state)
{
    (void)state;
    spec a, b;
    spec_default(&a);
    spec_default(&b);
    b.g2 = 57; /* another gid, same order of first sight */
    gr_diff_opts o;
    gr_diff_defaults(&o);
    char *out;
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    free(out);
}

static void test_diff_files_names_labels(void **state)
{
    (void)state;
    spec a, b;
    gr_diff_opts o;
    char *out;
    /* file: equal by default, different with --files */
    spec_default(&a);
    spec_default(&b);
    b.file = "other.py";
    gr_diff_defaults(&o);
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    free(out);
    o.files = 1;
    assert_int_equal(run_diff(&a, &b, &o, &out), 1);
    free(out);
    /* C name: differs exactly, same with --c-names any */
    spec_default(&b);
    b.cname = "builtins.id";
    gr_diff_defaults(&o);
    assert_int_equal(run_diff(&a, &b, &o, &out), 1);
    assert_non_null(strstr(out, "C_CALL      t1 g1 builtins.id"));
    free(out);
    o.c_names = GR_CNAMES_ANY;
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    free(out);
    /* --c-names script: both are leaf builtins the script keeps: differ */
    o.c_names = GR_CNAMES_SCRIPT;
    assert_int_equal(run_diff(&a, &b, &o, &out), 1);
    free(out);
    /* ... unknown C functions are all "a C call" there */
    spec_default(&a);
    a.cname = "mod.thing";
    b.cname = "mod.other";
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    free(out);
    /* qualname and label renamed consistently: same with --rename only */
    spec_default(&a);
    spec_default(&b);
    b.qual = "f1";
    b.label = "m1";
    gr_diff_defaults(&o);
    assert_int_equal(run_diff(&a, &b, &o, &out), 1);
    free(out);
    o.rename = 1;
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    assert_non_null(strstr(out, "up to renaming"));
    free(out);
}

static void test_diff_truncated_and_instr(void **state)
{
    (void)state;
    spec a, b;
    gr_diff_opts o;
    gr_diff_defaults(&o);
    char *out;
    spec_default(&a);
    spec_default(&b);
    a.truncate = 1;
    /* the same as far as A goes, and the summary says so */
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    assert_non_null(strstr(out, "A ends early"));
    assert_non_null(strstr(out, "same structure as far as A goes"));
    free(out);
    /* B truncated and A complete: likewise */
    assert_int_equal(run_diff(&b, &a, &o, &out), 0);
    assert_non_null(strstr(out, "B ends early"));
    free(out);
    /* INSTR only in B: not compared */
    spec_default(&a);
    b.truncate = 0;
    b.instr = 1;
    assert_int_equal(run_diff(&a, &b, &o, &out), 0);
    assert_non_null(strstr(out, "not compared: INSTR records (only B has them"));
    free(out);
}

/* ---- normalizations ------------------------------------------------------ */

/* A trace with a generator closed: generator.close around CALL g/RETURN g
 * (pair = 1) or not; and a c_return without c_call (stray = 1). */
static void build_gen(tb *b, int pair, int stray)
{
    tb_open(b, 0);
    uint32_t mod = tb_py(b, "<module>", "a.py", 1), g = tb_py(b, "gen", "a.py", 3);
    uint32_t close = tb_c(b, "generator.close"), len = tb_c(b, "builtins.len");
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_ev(b, GR_C_CALL, 1, 1, close);
    if (pair) {
        tb_ev(b, GR_CALL, 1, 1, g);
        tb_ev(b, GR_RETURN, 1, 1, g);
    }
    tb_ev(b, GR_C_RETURN, 1, 1, close);
    if (stray)
        tb_ev(b, GR_C_RETURN, 1, 1, len);
    tb_finish(b);
}

static int diff_gen(int pair_a, int stray_a, unsigned ignore)
{
    tb a, b;
    build_gen(&a, pair_a, stray_a);
    build_gen(&b, 0, 0);
    gr_diff_opts o;
    gr_diff_defaults(&o);
    o.ignore = ignore;
    return tb_diff(&a, &b, &o, NULL);
}

static void test_ignore_normalizations(void **state)
{
    (void)state;
    assert_int_equal(diff_gen(1, 0, 0), 1);
    assert_int_equal(diff_gen(1, 0, GR_IGNORE_GEN_FINALIZE), 0);
    assert_int_equal(diff_gen(1, 0, GR_IGNORE_C_RETURN), 1); /* the wrong one */
    assert_int_equal(diff_gen(0, 1, 0), 1);
    assert_int_equal(diff_gen(0, 1, GR_IGNORE_C_RETURN), 0);
    assert_int_equal(diff_gen(1, 1, GR_IGNORE_C_RETURN | GR_IGNORE_GEN_FINALIZE), 0);
    /* counts */
    tb a;
    build_gen(&a, 1, 1);
    gr_trace t;
    assert_int_equal(tb_load(&a, &t), GR_READ_OK);
    uint8_t keep[16];
    size_t counts[GR_IGNORE_COUNT];
    memset(keep, 1, sizeof keep);
    gr_ignore_apply(&t, GR_IGNORE_GEN_FINALIZE | GR_IGNORE_C_RETURN, keep, counts);
    assert_int_equal(counts[0], 2);
    assert_int_equal(counts[1], 1);
    assert_int_equal(keep[3], 0); /* CALL gen */
    assert_int_equal(keep[4], 0); /* RETURN gen */
    assert_int_equal(keep[6], 0); /* C_RETURN len */
    assert_int_equal(keep[5], 1); /* C_RETURN generator.close */
    gr_trace_free(&t);
    tb_cleanup(&a);
}

/* Generators finalized other than by close(), as CPython 3.9-3.12 record
 * them (fin = 1: an extra CALL gen / RETURN gen pair at each finalization)
 * and 3.13+ (fin = 0), after the shape of a recording on 3.11:
 *   del g           the last reference dropped in the middle of a frame
 *   gc.collect()    a cycle freed by the collector
 *   a greenlet dies while a frame of it holds a generator: the pair comes
 *                   after its DEAD, in the parent
 * and, in both, a trivial call right after a return (kept: not a generator). */
static void build_gen_gc(tb *b, int fin)
{
    tb_open(b, 0);
    uint32_t mod = tb_py(b, "<module>", "a.py", 1), g = tb_py(b, "gen", "a.py", 3);
    uint32_t f1 = tb_py(b, "f1", "a.py", 9), f2 = tb_py(b, "f2", "a.py", 12);
    uint32_t run = tb_py(b, "run", "a.py", 20);
    uint32_t next = tb_c(b, "builtins.next"), gcc = tb_c(b, "gc.collect");
    uint32_t sw = tb_c(b, "greenlet.greenlet.switch");
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    /* f1: next(gen) then `del g` */
    tb_ev(b, GR_CALL, 1, 1, f1);
    tb_ev(b, GR_C_CALL, 1, 1, next);
    tb_ev(b, GR_CALL, 1, 1, g);
    tb_ev(b, GR_RETURN, 1, 1, g);
    tb_ev(b, GR_C_RETURN, 1, 1, next);
    if (fin) {
        tb_ev(b, GR_CALL, 1, 1, g);
        tb_ev(b, GR_RETURN, 1, 1, g);
    }
    /* a cycle freed by gc.collect() */
    tb_ev(b, GR_C_CALL, 1, 1, gcc);
    if (fin) {
        tb_ev(b, GR_CALL, 1, 1, g);
        tb_ev(b, GR_RETURN, 1, 1, g);
    }
    tb_ev(b, GR_C_RETURN, 1, 1, gcc);
    tb_ev(b, GR_RETURN, 1, 1, f1);
    /* f2() right after: an ordinary trivial call, kept */
    tb_ev(b, GR_CALL, 1, 1, f2);
    tb_ev(b, GR_RETURN, 1, 1, f2);
    /* a greenlet whose run holds a generator and returns: it dies */
    tb_ev(b, GR_C_CALL, 1, 1, sw);
    tb_greenlet(b, 1, 2, 1, 0, 0);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS, 0, 0);
    tb_ev(b, GR_CALL, 1, 2, run);
    tb_ev(b, GR_C_CALL, 1, 2, next);
    tb_ev(b, GR_CALL, 1, 2, g);
    tb_ev(b, GR_RETURN, 1, 2, g);
    tb_ev(b, GR_C_RETURN, 1, 2, next);
    tb_ev(b, GR_RETURN, 1, 2, run);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 0, GR_SW_PROFILE_OURS | GR_SW_ORIGIN_DEAD, 0, 0);
    tb_simple(b, GR_DEAD, 1, 2);
    if (fin) {
        tb_ev(b, GR_CALL, 1, 1, g);
        tb_ev(b, GR_RETURN, 1, 1, g);
    }
    tb_ev(b, GR_C_RETURN, 1, 1, sw);
    tb_finish(b);
}

static void test_ignore_gen_finalized_by_gc_and_greenlet_death(void **state)
{
    (void)state;
    tb a, b;
    build_gen_gc(&a, 1);
    build_gen_gc(&b, 0);
    gr_trace ta, tb_;
    assert_int_equal(tb_load(&a, &ta), GR_READ_OK);
    assert_int_equal(tb_load(&b, &tb_), GR_READ_OK);
    gr_diff_opts o;
    gr_diff_defaults(&o);
    FILE *f = fopen("/dev/null", "w");
    assert_int_equal(gr_diff(f, &ta, "A", &tb_, "B", &o), 1);
    o.ignore = GR_IGNORE_GEN_FINALIZE;
    assert_int_equal(gr_diff(f, &ta, "A", &tb_, "B", &o), 0);
    fclose(f);
    /* exactly the three pairs go; the trivial call of f2 stays */
    uint8_t keep[64];
    size_t counts[GR_IGNORE_COUNT];
    assert_true(ta.nrecs <= sizeof keep);
    memset(keep, 1, sizeof keep);
    gr_ignore_apply(&ta, GR_IGNORE_GEN_FINALIZE, keep, counts);
    assert_int_equal(counts[0], 6);
    size_t removed = 0;
    for (size_t i = 0; i < ta.nrecs; i++) {
        if (keep[i])
            continue;
        removed++;
        const gr_code *c = gr_trace_code(&ta, ta.recs[i].code);
        size_t n;
        const uint8_t *q = gr_trace_string(&ta, c->qualname, &n);
        assert_int_equal(n, 3);
        assert_memory_equal(q, "gen", 3);
    }
    assert_int_equal(removed, 6);
    /* the 3.13 shape loses nothing */
    memset(keep, 1, sizeof keep);
    gr_ignore_apply(&tb_, GR_IGNORE_GEN_FINALIZE, keep, counts);
    assert_int_equal(counts[0], 0);
    gr_trace_free(&ta);
    gr_trace_free(&tb_);
    tb_cleanup(&a);
    tb_cleanup(&b);
}

static void test_ignore_parse(void **state)
{
    (void)state;
    unsigned bits = 0;
    char err[256];
    gr_sb skipped;
    gr_sb_init(&skipped);
    assert_int_equal(gr_ignore_parse("cpython-122029", &bits, &skipped, err, sizeof err), 0);
    assert_int_equal(bits, GR_IGNORE_C_RETURN);
    assert_int_equal(gr_ignore_parse("gen-finalize,cpython-140373", &bits, &skipped, err, sizeof err), 0);
    assert_int_equal(bits, GR_IGNORE_C_RETURN | GR_IGNORE_GEN_FINALIZE);
    bits = 0;
    assert_int_equal(gr_ignore_parse("cpython-1220290", &bits, &skipped, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown issue id 'cpython-1220290'"));
    assert_int_equal(bits, 0);
    /* a known-issues file */
    char path[] = "/tmp/gr-unit-known-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("# comment\n[cpython-122029]\ntitle = c_return\n\n[greenlet-256]\ntitle = other\n"
          "[some-gen]\nevidence = CPython issue 113728, seen here\n",
          f);
    fclose(f);
    assert_int_equal(gr_ignore_parse(path, &bits, &skipped, err, sizeof err), 0);
    assert_int_equal(bits, GR_IGNORE_C_RETURN | GR_IGNORE_GEN_FINALIZE);
    assert_string_equal(gr_sb_str(&skipped), "greenlet-256\n");
    f = fopen(path, "w");
    fputs("nothing here\n", f);
    fclose(f);
    assert_int_equal(gr_ignore_parse(path, &bits, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "no [ID] section"));
    unlink(path);
    gr_sb_free(&skipped);
}

/* A long trace: n calls of f0..f6 in turn; B leaves out the calls at
 * `drop` and `drop2` and makes an extra C call after call `extra`. */
static void build_long(tb *b, size_t n, size_t drop, size_t drop2, size_t extra)
{
    tb_open(b, 0);
    tb_meta(b, "python", "3.11.2");
    uint32_t mod = tb_py(b, "<module>", "a.py", 1), f[7], c = tb_c(b, "builtins.len");
    char name[8];
    for (int k = 0; k < 7; k++) {
        snprintf(name, sizeof name, "f%d", k);
        f[k] = tb_py(b, name, "a.py", 10 + (uint64_t)k);
    }
    tb_thread(b, 1);
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(b, GR_START, 1, 1);
    for (size_t i = 0; i < n; i++) {
        if (i != drop && i != drop2) {
            tb_ev(b, GR_CALL, 1, 1, f[i % 7]);
            tb_ev(b, GR_RETURN, 1, 1, f[i % 7]);
        }
        if (i == extra) {
            tb_ev(b, GR_C_CALL, 1, 1, c);
            tb_ev(b, GR_C_RETURN, 1, 1, c);
        }
    }
    tb_simple(b, GR_STOP, 1, 1);
    tb_finish(b);
}

/* The streamed diff with windows much shorter than the traces (resync
 * after window / 8 + 1 equal tokens) finds the same three differences as
 * the global alignment, hunks, headers and lines alike; and traces that
 * differ nowhere stay the same structure. */
static void test_diff_stream_windows(void **state)
{
    (void)state;
    size_t n = 3000;
    for (int same = 0; same < 2; same++) {
        tb a, b;
        build_long(&a, n, SIZE_MAX, SIZE_MAX, SIZE_MAX);
        if (same)
            build_long(&b, n, SIZE_MAX, SIZE_MAX, SIZE_MAX);
        else
            build_long(&b, n, 100, 2500, 1200);
        gr_trace ta, tb_;
        assert_int_equal(tb_load(&a, &ta), GR_READ_OK);
        assert_int_equal(tb_load(&b, &tb_), GR_READ_OK);
        gr_diff_opts o;
        gr_diff_defaults(&o);
        o.max_hunks = 0;
        char *g = NULL, *s = NULL;
        size_t gl, sl;
        FILE *f = open_memstream(&g, &gl);
        int rc = gr_diff(f, &ta, "A", &tb_, "B", &o);
        fclose(f);
        assert_int_equal(rc, !same);
        if (!same)
            assert_non_null(strstr(g, "3 differences: 4 records only in A, 2 only in B"));
        gr_diff_info da, db;
        assert_int_equal(gr_diff_scan(&da, a.path), GR_READ_OK);
        assert_int_equal(gr_diff_scan(&db, b.path), GR_READ_OK);
        assert_true(gr_diff_streamable(&o));
        for (size_t w = 16; w <= 4096; w *= 4) {
            o.window = w;
            f = open_memstream(&s, &sl);
            assert_int_equal(gr_diff_stream(f, &da, a.path, "A", &db, b.path, "B", &o), !same);
            fclose(f);
            assert_string_equal(s, g);
            free(s);
        }
        free(g);
        gr_diff_info_free(&da);
        gr_diff_info_free(&db);
        gr_trace_free(&ta);
        gr_trace_free(&tb_);
        tb_cleanup(&a);
        tb_cleanup(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_align_basic),
        cmocka_unit_test(test_align_minimal_random),
        cmocka_unit_test(test_align_budget),
        cmocka_unit_test(test_diff_same_and_dropped_call),
        cmocka_unit_test(test_diff_greenlets_by_first_sight),
        cmocka_unit_test(test_diff_files_names_labels),
        cmocka_unit_test(test_diff_truncated_and_instr),
        cmocka_unit_test(test_ignore_normalizations),
        cmocka_unit_test(test_ignore_gen_finalized_by_gc_and_greenlet_death),
        cmocka_unit_test(test_ignore_parse),
        cmocka_unit_test(test_diff_continued_switch),
        cmocka_unit_test(test_diff_stream_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
