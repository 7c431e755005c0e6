/* test_script_reduce.c - replay/repro/reduce.c without Python: the units of a
 * tagged script (parse, render, cleanup of what nothing refers to) and
 * ddmin on synthetic failures (the exact failure-inducing units found, no
 * configuration tested twice, 1-minimal results, the limit on tests). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reduce.h"

#include <stdlib.h>
#include <string.h>

static const char script[] =
    "#!/usr/bin/env python3\n"
    "# header comment\n"
    "\n"
    "import os  #@1\n"
    "import greenreplay\n"
    "_X = 1  #@2\n"
    "def _helper(a):  #@3\n"
    "    return a  #@3\n"
    "def _v0():  # f  #@d0\n"
    "    _helper(0)  #@4\n"
    "    return\n"
    "_fn(_v0, 'f', 9)  #@d0\n"
    "def _v1():  # g  #@d1\n"
    "    _v0()  #@5\n"
    "    try:  #@6\n"
    "        os.getpid()  #@6\n"
    "    except BaseException:  #@6\n"
    "        pass  #@6\n"
    "    return\n"
    "_fn(_v1, 'g', 13)  #@d1\n"
    "_v1()  #@7\n";

static void test_units_parse_render(void **state)
{
    (void)state;
    gr_units u;
    assert_int_equal(gr_units_parse(&u, script, strlen(script)), 7);
    assert_int_equal(u.ndefs, 2);
    assert_string_equal(u.def_names[0], "_v0");
    assert_string_equal(u.def_names[1], "_v1");
    assert_int_equal(u.header, 2);
    size_t len;
    char *all = gr_units_render(&u, NULL, NULL, 0, &len);
    assert_string_equal(all, script);
    free(all);
    /* drop unit 5 (the try block, tag #@6) and the header */
    uint8_t keep[7] = {1, 1, 1, 1, 1, 0, 1};
    char *t = gr_units_render(&u, keep, NULL, 1, &len);
    assert_null(strstr(t, "header comment"));
    assert_null(strstr(t, "try:"));
    assert_null(strstr(t, "pass"));
    assert_non_null(strstr(t, "    _v0()  #@5\n    return\n"));
    free(t);
    /* drop def 0: its def line, body and _fn line go */
    uint8_t defs[2] = {0, 1};
    t = gr_units_render(&u, NULL, defs, 0, &len);
    assert_null(strstr(t, "def _v0"));
    assert_null(strstr(t, "_helper(0)"));
    assert_null(strstr(t, "_fn(_v0"));
    assert_non_null(strstr(t, "_fn(_v1"));
    free(t);
    gr_units_free(&u);
    /* no tags: not a script of greenreplay */
    assert_int_equal(gr_units_parse(&u, "print(1)\n", 9), 0);
    gr_units_free(&u);
}

static void test_units_cleanup(void **state)
{
    (void)state;
    gr_units u;
    gr_units_parse(&u, script, strlen(script));
    /* with the call of _v0 gone (unit index 4, tag #@5), _v0 is dropped,
     * then _helper (only _v0 used it); os stays (the try block uses it),
     * _X goes (nothing uses it) */
    uint8_t keep[7] = {1, 1, 1, 1, 0, 1, 1}, defs[2] = {1, 1};
    size_t n = gr_units_cleanup(&u, keep, defs);
    assert_int_equal(n, 3);
    assert_int_equal(defs[0], 0);
    assert_int_equal(defs[1], 1);
    assert_int_equal(keep[0], 1); /* import os */
    assert_int_equal(keep[1], 0); /* _X */
    assert_int_equal(keep[2], 0); /* _helper */
    /* the twin: everything referenced, nothing dropped */
    uint8_t keep2[7] = {1, 1, 1, 1, 1, 1, 1}, defs2[2] = {1, 1};
    assert_int_equal(gr_units_cleanup(&u, keep2, defs2), 1); /* only _X */
    assert_int_equal(keep2[1], 0);
    assert_int_equal(defs2[0], 1);
    gr_units_free(&u);
}

/* Fails while units a and b are both kept; counts tests and repeats. */
typedef struct pred {
    size_t a, b;
    size_t tests;
    uint64_t seen[4096];
    size_t nseen;
    int repeated;
} pred;

static int fails_ab(void *ctx, const uint8_t *keep, size_t n)
{
    pred *p = ctx;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= keep[i] ? i + 1 : 0;
        h *= 1099511628211ull;
    }
    for (size_t i = 0; i < p->nseen; i++)
        if (p->seen[i] == h)
            p->repeated = 1;
    if (p->nseen < 4096)
        p->seen[p->nseen++] = h;
    p->tests++;
    return keep[p->a] && keep[p->b];
}

/* The reduced script's definitions claim their own lines: two variants of
 * one function (claiming line 937, the first's) both move to the line of
 * the first kept def; a _gen claim of that line follows; a claim whose
 * definition is gone, and a name with ')' and a quote in it, are handled. */
static void test_units_renumber(void **state)
{
    (void)state;
    const char *text =
        "import sys  #@3\n"                                   /* 1 */
        "def _v130():  # trigger  #@d130\n"                   /* 2 */
        "    return\n"                                        /* 3 */
        "_fn(_v130, 'trig)ger\\'s', 937)  #@d130\n"           /* 4 */
        "def _v131():  # trigger  #@d131\n"                   /* 5 */
        "    _v130()  #@500\n"                                /* 6 */
        "    return\n"                                        /* 7 */
        "_fn(_v131, 'trig)ger\\'s', 937)  #@d131\n"           /* 8 */
        "_fn(_v9, 'gone', 12)  #@d9\n"                        /* 9 */
        "_GZ = [_gen('trig)ger\\'s', 937), _gen('_g', 0)]  #@7\n"; /* 10 */
    const char *want =
        "import sys  #@3\n"
        "def _v130():  # trigger  #@d130\n"
        "    return\n"
        "_fn(_v130, 'trig)ger\\'s', 2)  #@d130\n"
        "def _v131():  # trigger  #@d131\n"
        "    _v130()  #@500\n"
        "    return\n"
        "_fn(_v131, 'trig)ger\\'s', 2)  #@d131\n"
        "_fn(_v9, 'gone', 12)  #@d9\n"
        "_GZ = [_gen('trig)ger\\'s', 2), _gen('_g', 0)]  #@7\n";
    size_t len;
    char *t = gr_units_renumber(text, strlen(text), &len);
    assert_int_equal(len, strlen(t));
    assert_string_equal(t, want);
    free(t);
    /* without a final newline, and with nothing to renumber */
    t = gr_units_renumber("print(1)", 8, &len);
    assert_string_equal(t, "print(1)");
    free(t);
}

static void test_ddmin_finds_pair(void **state)
{
    (void)state;
    enum { N = 200 };
    uint8_t keep[N];
    memset(keep, 1, N);
    pred p = {.a = 17, .b = 151};
    size_t runs = gr_ddmin(N, keep, fails_ab, NULL, &p, 0);
    assert_int_equal(runs, p.tests);
    assert_false(p.repeated);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(keep[i], i == 17 || i == 151);
    assert_true(runs < 200); /* far from trying every subset */
    /* a limit on tests: stops early with a configuration that fails */
    memset(keep, 1, N);
    pred q = {.a = 3, .b = 4};
    gr_ddmin(N, keep, fails_ab, NULL, &q, 5);
    assert_true(q.tests <= 5);
    assert_true(keep[3] && keep[4]);
}

/* Fails when any of units 2 or 9 is kept: 1-minimal means one of them. */
static int fails_either(void *ctx, const uint8_t *keep, size_t n)
{
    (void)ctx;
    (void)n;
    return keep[2] || keep[9];
}

/* Fails only with every unit: nothing can go. */
static int fails_all(void *ctx, const uint8_t *keep, size_t n)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        if (!keep[i])
            return 0;
    return 1;
}

static void test_ddmin_minimal(void **state)
{
    (void)state;
    uint8_t keep[12];
    memset(keep, 1, sizeof keep);
    gr_ddmin(12, keep, fails_either, NULL, NULL, 0);
    size_t k = 0;
    for (size_t i = 0; i < 12; i++)
        k += keep[i];
    assert_int_equal(k, 1);
    assert_true(keep[2] || keep[9]);
    memset(keep, 1, sizeof keep);
    gr_ddmin(12, keep, fails_all, NULL, NULL, 0);
    for (size_t i = 0; i < 12; i++)
        assert_int_equal(keep[i], 1);
    /* starting from a subset: only those units are considered */
    memset(keep, 0, sizeof keep);
    keep[1] = keep[2] = keep[3] = 1;
    gr_ddmin(12, keep, fails_either, NULL, NULL, 0);
    assert_int_equal(keep[2], 1);
    assert_int_equal(keep[1] + keep[3] + keep[9], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_parse_render),
        cmocka_unit_test(test_units_cleanup),
        cmocka_unit_test(test_units_renumber),
        cmocka_unit_test(test_ddmin_finds_pair),
        cmocka_unit_test(test_ddmin_minimal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
