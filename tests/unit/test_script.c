/* test_script.c - replay/repro/script_builtins.c (table sorted, lookup),
 * replay/repro/script.c (Python string literals; the program written for small
 * built traces: switches, marks, throws, start/stop, C calls by name or
 * neutral, anonymized names, notes) and replay/repro/script_shape.c (which C
 * calls are kept by name; calls rebuilt from a mark's real stack).  Every
 * check of what a script holds has a twin that must not hold it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "script.h"
#include "script_builtins.h"
#include "script_shape.h"
#include "tb_run.h"
#include "trace_builder.h"

#include <stdio.h>
#include <string.h>

static void test_builtins_table(void **state)
{
    (void)state;
    for (size_t i = 1; gr_builtin_at(i); i++)
        assert_true(strcmp(gr_builtin_at(i - 1)->name, gr_builtin_at(i)->name) < 0);
    const gr_builtin *b = gr_builtin_find("builtins.len", 12);
    assert_non_null(b);
    assert_string_equal(b->expr, "len(())");
    assert_null(gr_builtin_find("builtins.le", 11));
    assert_null(gr_builtin_find("builtins.lenx", 13));
    /* the neutral C call is never one the script reproduces by name */
    assert_null(gr_builtin_find("collections.deque.extend", 24));
    assert_non_null(gr_builtin_find("builtins.lenXYZ", 12)); /* n bytes only */
    b = gr_builtin_find("sys.settrace", 12);
    assert_int_equal(b->kind, GR_BUILTIN_SETTRACE);
    assert_true(gr_builtin_keep_anonymized(b));
    assert_false(gr_builtin_keep_anonymized(gr_builtin_find("builtins.len", 12)));
}

static void test_pystr(void **state)
{
    (void)state;
    gr_sb sb;
    gr_sb_init(&sb);
    assert_int_equal(gr_script_pystr(&sb, "a'b\\c\n", 6), 0);
    assert_string_equal(gr_sb_str(&sb), "'a\\'b\\\\c\\x0a'");
    gr_sb_reset(&sb);
    /* é (2 bytes), € (3 bytes), an emoji (4 bytes), then an invalid byte */
    assert_int_equal(gr_script_pystr(&sb, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff", 10), 1);
    assert_string_equal(gr_sb_str(&sb), "'\\xe9\\u20ac\\U0001f600\\ufffd'");
    gr_sb_free(&sb);
}

/* The seed scenario (fixtures/seed.py) as a trace: main calls x, then
 * switches into a new greenlet running x; `switch` names the C call of
 * the switch, `label` the mark. */
static void build_seed_meta(tb *b, const char *switch_name, const char *label, int metas)
{
    tb_open(b, 0);
    if (metas) {
        tb_meta(b, "python", "3.11.2");
        tb_meta(b, "greenlet", "2.0.2");
    }
    uint32_t mod = tb_py(b, "<module>", "fixtures/seed.py", 1);
    uint32_t mainf = tb_py(b, "main", "fixtures/seed.py", 18);
    uint32_t start = tb_py(b, "start", "<greenreplay>/__init__.py", 0);
    uint32_t stop = tb_py(b, "stop", "<greenreplay>/__init__.py", 0);
    uint32_t x = tb_py(b, "Outer.x.<locals>.inner", "fixtures/seed.py", 14);
    uint32_t mk = tb_c(b, "greenreplay._greenreplay.mark");
    uint32_t sw = tb_c(b, switch_name), cstop = tb_c(b, "greenreplay._greenreplay.stop");
    uint32_t len = tb_c(b, "builtins.len"), other = tb_c(b, "mymodule.secret_c_function");
    uint32_t lab = tb_str(b, label);
    tb_thread(b, 1);                                        /* 0 */
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 3, mod, mainf, start);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_RETURN, 1, 1, start);
    tb_ev(b, GR_CALL, 1, 1, x);                             /* 4 */
    tb_ev(b, GR_C_CALL, 1, 1, mk);
    tb_mark(b, 1, 1, lab, mk, 2, 3, mod, mainf, x);
    tb_ev(b, GR_C_RETURN, 1, 1, mk);
    tb_ev(b, GR_RETURN, 1, 1, x);
    tb_ev(b, GR_C_CALL, 1, 1, len);                         /* 9 */
    tb_ev(b, GR_C_RETURN, 1, 1, len);
    tb_ev(b, GR_C_CALL, 1, 1, other);                       /* 11 */
    tb_ev(b, GR_C_RETURN, 1, 1, other);
    tb_ev(b, GR_C_CALL, 1, 1, sw);                          /* 13 */
    tb_greenlet(b, 1, 2, 1, 0, 0);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, 5, 0, 255);
    tb_ev(b, GR_CALL, 1, 2, x);
    tb_ev(b, GR_C_CALL, 1, 2, mk);
    tb_mark(b, 1, 2, lab, mk, 2, 1, x);
    tb_ev(b, GR_C_RETURN, 1, 2, mk);
    tb_ev(b, GR_RETURN, 1, 2, x);
    tb_switch(b, GR_SWITCH, 1, 2, 1, 0, 5 | GR_SW_ORIGIN_DEAD, 0, 255);
    tb_simple(b, GR_DEAD, 1, 2);
    tb_ev(b, GR_C_RETURN, 1, 1, sw);                        /* 23 */
    tb_ev(b, GR_CALL, 1, 1, stop);
    tb_ev(b, GR_C_CALL, 1, 1, cstop);
    tb_simple(b, GR_STOP, 1, 1);
    tb_stack(b, 1, 1, GR_STACK_RUNNING, 4, mod, mainf, stop, cstop);
    tb_finish(b);
}

static void build_seed(tb *b, const char *switch_name, const char *label)
{
    build_seed_meta(b, switch_name, label, 1);
}

/* Write the script of the trace at b; program and notes owned by caller. */
static size_t script_of(tb *b, int anonymize, char **prog, char **notes)
{
    return tb_script(b, anonymize, "seed.grt", prog, notes);
}

/* The header's "Record it" line names no `python3` (on PATH it may be an
 * interpreter without greenlet) but PYTHON, the one that ran the original,
 * with its version from META `python` when the trace has it (not with
 * --anonymize, which keeps no string of the trace); the same bytes twice. */
static void test_script_header_python(void **state)
{
    (void)state;
    static const char rec[] = "\n# Record it:  greenreplay record --manual -o repro.grt -- PYTHON "
                              "THIS_FILE\n#   PYTHON: the Python that ran the original";
    for (int metas = 0; metas <= 1; metas++) {
        for (int anon = 0; anon <= 1; anon++) {
            tb b;
            build_seed_meta(&b, "greenlet.greenlet.switch", "in x", metas);
            char *prog, *notes, *prog2, *notes2;
            script_of(&b, anon, &prog, &notes);
            script_of(&b, anon, &prog2, &notes2);
            assert_string_equal(prog, prog2);
            char want[400];
            snprintf(want, sizeof want, "%s%s, with greenlet\n", rec,
                     metas && !anon ? " (3.11.2)" : "");
            if (!strstr(prog, want))
                fail_msg("metas %d anonymize %d: lacks '%s' in:\n%.900s", metas, anon, want, prog);
            assert_null(strstr(prog, "python3 THIS_FILE"));
            assert_int_equal(strstr(prog, "3.11.2") != NULL, metas && !anon);
            free(prog);
            free(notes);
            free(prog2);
            free(notes2);
            tb_cleanup(&b);
        }
    }
}

static void test_script_seed(void **state)
{
    (void)state;
    tb b;
    build_seed(&b, "greenlet.greenlet.switch", "in x");
    char *prog, *notes;
    assert_int_equal(script_of(&b, 0, &prog, &notes), 0);
    assert_string_equal(notes, "");
    /* the greenlet, its run function, the visible switch, marks, start/stop */
    assert_non_null(strstr(prog, "G[2] = greenlet.greenlet(_v0)  #@"));
    assert_non_null(strstr(prog, "\n    greenreplay.start()  #@"));
    assert_non_null(strstr(prog, "\n    G[2].switch()  #@"));
    assert_non_null(strstr(prog, "\n    greenreplay.mark('in x')  #@"));
    assert_non_null(strstr(prog, "\n    greenreplay.stop()  #@"));
    assert_non_null(strstr(prog, "_fn(_v0, 'Outer.x.<locals>.inner', "));
    assert_non_null(strstr(prog, "_fn(_v1, 'main', "));
    /* a known builtin by name, an unknown C function neutral */
    assert_non_null(strstr(prog, "\n    len(())  #@"));
    assert_non_null(strstr(prog, "\n    _D.extend(())  #@"));
    assert_null(strstr(prog, "secret_c_function("));
    /* identical bodies of one code share a function: both x are _v0 */
    assert_null(strstr(prog, "def _v2():  # Outer.x"));
    /* the module level calls main, the only thing after the setup */
    assert_non_null(strstr(prog, "\n_v1()  #@"));
    free(prog);
    free(notes);
    tb_cleanup(&b);
}

static void test_shape_keeps(void **state)
{
    (void)state;
    tb b;
    build_seed(&b, "greenlet.greenlet.switch", "in x");
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_shape s;
    gr_shape_build(&s, &t, 0);
    assert_int_equal(s.ckeep[5], 1);  /* C_CALL mark bracketing the MARK */
    assert_int_equal(s.ckeep[9], 1);  /* builtins.len */
    assert_int_equal(s.ckeep[11], 0); /* unknown: neutral */
    assert_int_equal(s.ckeep[12], 0);
    assert_int_equal(s.ckeep[13], 1); /* the switch */
    assert_int_equal(s.ckeep[23], 1);
    assert_int_equal(s.ngreens, 2);
    assert_int_equal(s.nthreads, 1);
    assert_true(s.has_start && s.has_stop);
    gr_shape_free(&s);
    /* anonymized: builtins are neutral too, the switch and mark stay */
    gr_shape_build(&s, &t, 1);
    assert_int_equal(s.ckeep[9], 0);
    assert_int_equal(s.ckeep[13], 1);
    assert_int_equal(s.ckeep[5], 1);
    gr_shape_free(&s);
    gr_trace_free(&t);
    tb_cleanup(&b);
    /* a switch by another type's method (a greenlet subclass): neutral */
    build_seed(&b, "Worker.switch", "in x");
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_shape_build(&s, &t, 0);
    assert_int_equal(s.ckeep[13], 0);
    gr_shape_free(&s);
    gr_trace_free(&t);
    char *prog, *notes;
    script_of(&b, 0, &prog, &notes);
    assert_null(strstr(prog, "G[2].switch()"));
    assert_non_null(strstr(prog, "_D.extend(map(_Q, (G[2].switch,)))"));
    free(prog);
    free(notes);
    tb_cleanup(&b);
}

static void test_script_anonymized(void **state)
{
    (void)state;
    tb b;
    build_seed(&b, "greenlet.greenlet.switch", "secret label");
    char *prog, *notes;
    script_of(&b, 1, &prog, &notes);
    assert_null(strstr(prog, "secret"));
    assert_null(strstr(prog, "Outer"));
    assert_null(strstr(prog, "inner"));
    assert_null(strstr(prog, "main"));
    assert_null(strstr(prog, "seed"));
    assert_null(strstr(prog, "len(())"));
    assert_non_null(strstr(prog, "greenreplay.mark('m1')"));
    assert_non_null(strstr(prog, "_fn(_v0, 'f2', "));
    assert_null(strstr(prog, "'f3'")); /* <module> keeps its name: f1, f2 only */
    free(prog);
    free(notes);
    /* the twin: not anonymized, the names are there */
    script_of(&b, 0, &prog, &notes);
    assert_non_null(strstr(prog, "secret label"));
    assert_non_null(strstr(prog, "seed.grt"));
    free(prog);
    free(notes);
    tb_cleanup(&b);
}

/* A greenlet whose events come without the SWITCH into it, and a mark
 * whose real stack holds a frame the profile events did not show. */
static void test_script_notes(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    uint32_t mod = tb_py(&b, "<module>", "a.py", 1), f = tb_py(&b, "f", "a.py", 3);
    uint32_t hidden = tb_py(&b, "hidden", "a.py", 7);
    uint32_t mk = tb_c(&b, "greenreplay._greenreplay.mark"), lab = tb_str(&b, "l");
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(&b, GR_START, 1, 1);
    tb_mark(&b, 1, 1, lab, mk, 0, 2, mod, hidden); /* the call of hidden was not seen */
    tb_greenlet(&b, 1, 2, 1, 0, 0);
    tb_ev(&b, GR_CALL, 1, 2, f);                    /* no SWITCH into g2 */
    tb_ev(&b, GR_RETURN, 1, 2, f);
    tb_finish(&b);
    char *prog, *notes;
    size_t k = script_of(&b, 0, &prog, &notes);
    assert_true(k >= 3);
    assert_non_null(strstr(notes, "not the running one"));
    assert_non_null(strstr(notes, "calls the profiler did not see"));
    assert_non_null(strstr(notes, "no STOP record"));
    assert_non_null(strstr(prog, "# Not reproduced:\n#   - "));
    /* the rebuilt call is made: <module> calls hidden, which marks */
    assert_non_null(strstr(prog, "_fn(_v0, 'hidden', "));
    assert_non_null(strstr(prog, "\n    greenreplay.mark('l')  #@"));
    free(prog);
    free(notes);
    tb_cleanup(&b);
    /* the twin: the seed trace has no notes */
    build_seed(&b, "greenlet.greenlet.switch", "in x");
    assert_int_equal(script_of(&b, 0, &prog, &notes), 0);
    free(prog);
    free(notes);
    tb_cleanup(&b);
}

/* A throw into a suspended greenlet that catches it and dies normally. */
static void test_script_throw(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    uint32_t mod = tb_py(&b, "<module>", "a.py", 1), tgt = tb_py(&b, "target", "a.py", 3);
    uint32_t sw = tb_c(&b, "greenlet.greenlet.switch"), th = tb_c(&b, "greenlet.greenlet.throw");
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 1, 0, GR_GL_MAIN, 1, mod);
    tb_simple(&b, GR_START, 1, 1);
    tb_ev(&b, GR_C_CALL, 1, 1, sw);
    tb_greenlet(&b, 1, 2, 1, 0, 0);
    tb_switch(&b, GR_SWITCH, 1, 1, 2, 1, 5, 0, 255);
    tb_ev(&b, GR_CALL, 1, 2, tgt);
    tb_ev(&b, GR_C_CALL, 1, 2, sw);
    tb_switch(&b, GR_SWITCH, 1, 2, 1, 0, 5, 0, 255);
    tb_ev(&b, GR_C_RETURN, 1, 1, sw);
    tb_ev(&b, GR_C_CALL, 1, 1, th);
    tb_switch(&b, GR_THROW, 1, 1, 2, 1, 5, 0, 255);
    tb_ev(&b, GR_C_EXCEPTION, 1, 2, sw);
    tb_ev(&b, GR_RETURN, 1, 2, tgt);
    tb_switch(&b, GR_SWITCH, 1, 2, 1, 0, 5 | GR_SW_ORIGIN_DEAD, 0, 255);
    tb_simple(&b, GR_DEAD, 1, 2);
    tb_ev(&b, GR_C_RETURN, 1, 1, th);
    tb_finish(&b);
    char *prog, *notes;
    script_of(&b, 0, &prog, &notes);
    assert_non_null(strstr(prog, "G[2].throw(_Thrown)"));
    assert_non_null(strstr(prog, "class _Thrown(Exception):"));
    /* the target catches where it resumes, and does not raise at its end */
    assert_non_null(strstr(prog, "    try:  #@"));
    assert_non_null(strstr(prog, "        G[1].switch()  #@"));
    assert_null(strstr(prog, "raise _Fail()"));
    free(prog);
    free(notes);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_table),
        cmocka_unit_test(test_pystr),
        cmocka_unit_test(test_script_seed),
        cmocka_unit_test(test_script_header_python),
        cmocka_unit_test(test_shape_keeps),
        cmocka_unit_test(test_script_anonymized),
        cmocka_unit_test(test_script_notes),
        cmocka_unit_test(test_script_throw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
