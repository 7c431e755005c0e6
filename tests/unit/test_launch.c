/* test_launch.c - replay/repro/launch.c (runpy's launch frames of a
 * program run with -m: the rule on one stack, the returns of a trace) and
 * its use by script_shape.c/script.c and diff.c: a trace of `python -m`
 * gives the script of the same program run as a file (with a header line
 * saying -m), and diff compares the two as the same and shows the stack
 * at a divergence without them.  Every equality has a twin that must
 * differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diff.h"
#include "launch.h"
#include "script.h"
#include "tb_run.h"
#include "trace_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How the program was launched. */
enum how {
    AS_FILE,      /* python prog.py: empty seed */
    M_FROZEN,     /* python -m on 3.11-3.13: "<frozen runpy>" */
    M_STDLIB,     /* python -m on 3.9/3.10: "<stdlib>/runpy.py" */
    M_PROGRAM,    /* runpy's frames, but above a frame of the program (the
                     program called runpy itself): not a launch */
};

/* Codes every built trace defines, in the same order. */
typedef struct codes {
    uint32_t rmam, rc, exec_, mod, f, mk, sw, other;
} codes;

static void define(tb *b, enum how how, codes *c)
{
    const char *rf = how == M_STDLIB ? "<stdlib>/runpy.py" : "<frozen runpy>";
    c->rmam = tb_py(b, "_run_module_as_main", rf, how == M_STDLIB ? 172 : 173);
    c->rc = tb_py(b, "_run_code", rf, how == M_STDLIB ? 64 : 65);
    c->exec_ = tb_c(b, "builtins.exec");
    c->mod = tb_py(b, "<module>", "pkg/mod.py", 1);
    c->f = tb_py(b, "f", "pkg/mod.py", 5);
    c->mk = tb_c(b, "greenreplay._greenreplay.mark");
    c->sw = tb_c(b, "greenlet.greenlet.switch");
    c->other = tb_py(b, "caller", "pkg/mod.py", 9);
}

/* When `on`: build() records as CPython 3.12+ does, an INSTR after each
 * SWITCH; the one into the main greenlet with these frames and stale
 * counts (the one into g2: 0 and 0). */
static struct {
    int on;
    uint64_t frames, stale;
} instr;

/* A whole-program recording (START before the <module>'s CALL): the
 * module calls exec itself, then switches into a greenlet running f that
 * marks, and returns; then the launch frames return.  extra_call: one
 * more call of f in the module (a twin that differs).  Returns the
 * indices of the three launch returns in ret[] (GR_LAUNCH_NONE for
 * AS_FILE). */
static void build(tb *b, enum how how, int extra_call, size_t ret[3])
{
    codes c;
    tb_open(b, 0);
    tb_meta(b, "python", instr.on ? "3.13.5" : "3.11.2");
    tb_meta(b, "greenlet", "2.0.2");
    define(b, how, &c);
    uint32_t lab = tb_str(b, "in f");
    int m = how == M_FROZEN || how == M_STDLIB;
    tb_thread(b, 1);
    if (m)
        tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 3, c.rmam, c.rc, c.exec_);
    else if (how == M_PROGRAM)
        tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 4, c.other, c.rmam, c.rc, c.exec_);
    else
        tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 0);
    tb_simple(b, GR_START, 1, 1);
    tb_ev(b, GR_CALL, 1, 1, c.mod);
    tb_ev(b, GR_C_CALL, 1, 1, c.exec_); /* the program's own exec: not a launch frame */
    tb_ev(b, GR_C_RETURN, 1, 1, c.exec_);
    if (extra_call) {
        tb_ev(b, GR_CALL, 1, 1, c.f);
        tb_ev(b, GR_RETURN, 1, 1, c.f);
    }
    tb_ev(b, GR_C_CALL, 1, 1, c.sw);
    tb_greenlet(b, 1, 2, 1, 0, 0);
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_NEW, 0, 255);
    if (instr.on)
        tb_instr(b, 1, 2, 1, 0, 0);
    tb_ev(b, GR_CALL, 1, 2, c.f);
    tb_ev(b, GR_C_CALL, 1, 2, c.mk);
    tb_mark(b, 1, 2, lab, c.mk, GR_MARK_PROFILE_OURS, 1, c.f);
    tb_ev(b, GR_C_RETURN, 1, 2, c.mk);
    tb_ev(b, GR_RETURN, 1, 2, c.f);
    /* back into the main greenlet: its real stack, with runpy's frames */
    if (m)
        tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0,
                        GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_ORIGIN_DEAD, 0, 255, 3, c.rmam,
                        c.rc, c.mod);
    else if (how == M_PROGRAM)
        tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0,
                        GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_ORIGIN_DEAD, 0, 255, 4, c.other,
                        c.rmam, c.rc, c.mod);
    else
        tb_switch_stack(b, GR_SWITCH, 1, 2, 1, 0,
                        GR_SW_PROFILE_OURS | GR_SW_INFERRED | GR_SW_ORIGIN_DEAD, 0, 255, 1, c.mod);
    if (instr.on)
        tb_instr(b, 1, 1, 1, instr.frames, instr.stale);
    tb_simple(b, GR_DEAD, 1, 2);
    tb_ev(b, GR_C_RETURN, 1, 1, c.sw);
    tb_ev(b, GR_RETURN, 1, 1, c.mod);
    ret[0] = ret[1] = ret[2] = GR_LAUNCH_NONE;
    if (m || how == M_PROGRAM) {
        ret[2] = tb_ev(b, GR_C_RETURN, 1, 1, c.exec_);
        ret[1] = tb_ev(b, GR_RETURN, 1, 1, c.rc);
        ret[0] = tb_ev(b, GR_RETURN, 1, 1, c.rmam);
    }
    if (how == M_PROGRAM)
        tb_ev(b, GR_RETURN, 1, 1, c.other);
    tb_finish_with(b, b->nrec, 0, 0, GR_STOP_EXIT);
}

/* ---- the rule on one stack ---------------------------------------------- */

static void test_prefix_rule(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    codes c, s;
    define(&b, M_FROZEN, &c); /* ids 1-8 */
    define(&b, M_STDLIB, &s); /* ids 9-16: runpy.py of 3.9/3.10 */
    uint32_t abs_rmam = tb_py(&b, "_run_module_as_main", "/usr/lib/python3.9/runpy.py", 172);
    uint32_t abs_rc = tb_py(&b, "_run_code", "/usr/lib/python3.9/runpy.py", 64);
    uint32_t my_rmam = tb_py(&b, "_run_module_as_main", "pkg/myrunpy.py", 1);
    uint32_t c_rmam = tb_c(&b, "_run_module_as_main");
    uint32_t py_exec = tb_py(&b, "builtins.exec", "pkg/mod.py", 3);
    tb_finish(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    struct {
        size_t n;
        uint32_t ids[5];
        size_t want;
    } cases[] = {
        {3, {c.rmam, c.rc, c.exec_}, 3},          /* 3.11-3.13, a seed */
        {3, {c.rmam, c.rc, c.mod}, 2},            /* a real (Python) stack */
        {2, {c.rmam, c.rc}, 2},
        {4, {s.rmam, s.rc, s.exec_, s.mod}, 3},   /* 3.9, 3.10 */
        {3, {abs_rmam, abs_rc, c.mod}, 2},        /* a stdlib path not made relative */
        {1, {c.rmam}, 0},                         /* only one of the two */
        {3, {c.rc, c.rmam, c.exec_}, 0},          /* the wrong order */
        {4, {c.other, c.rmam, c.rc, c.mod}, 0},   /* not at the bottom */
        {3, {my_rmam, c.rc, c.mod}, 0},           /* another file */
        {3, {c_rmam, c.rc, c.mod}, 0},            /* a C function of that name */
        {3, {c.rmam, c.rc, py_exec}, 2},          /* exec must be the C one */
        {3, {c.mod, c.f, c.mk}, 0},
        {0, {0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t got = gr_launch_prefix(&t, cases[i].n ? cases[i].ids : NULL, cases[i].n);
        if (got != cases[i].want)
            fail_msg("case %zu: prefix %zu, want %zu", i, got, cases[i].want);
    }
    /* A record's stack: none when cut (its bottom frames are unknown). */
    uint32_t st[3] = {c.rmam, c.rc, c.exec_};
    gr_record g = {.tag = GR_GREENLET, .depth = 3};
    uint32_t *saved = t.stacks; /* the records below use st as the pool */
    t.stacks = st;
    g.stack = 0;
    assert_int_equal(gr_launch_record_prefix(&t, &g), 3);
    g.flags = GR_GL_CUT;
    assert_int_equal(gr_launch_record_prefix(&t, &g), 0);
    gr_record m = {.tag = GR_MARK, .depth = 3};
    assert_int_equal(gr_launch_record_prefix(&t, &m), 3);
    m.flags = GR_MARK_CUT;
    assert_int_equal(gr_launch_record_prefix(&t, &m), 0);
    gr_record sw = {.tag = GR_SWITCH, .depth = 3, .flags = GR_SW_REAL_STACK};
    assert_int_equal(gr_launch_record_prefix(&t, &sw), 3);
    sw.flags |= GR_SW_CUT;
    assert_int_equal(gr_launch_record_prefix(&t, &sw), 0);
    gr_record call = {.tag = GR_CALL, .depth = 3};
    assert_int_equal(gr_launch_record_prefix(&t, &call), 0);
    t.stacks = saved;
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* ---- the launch of a trace ----------------------------------------------- */

static void test_find_returns(void **state)
{
    (void)state;
    for (enum how how = AS_FILE; how <= M_PROGRAM; how++) {
        tb b;
        size_t ret[3];
        build(&b, how, 0, ret);
        gr_trace t;
        assert_int_equal(tb_load(&b, &t), GR_READ_OK);
        gr_launch l;
        gr_launch_find(&t, &l);
        if (how == M_FROZEN || how == M_STDLIB) {
            assert_int_equal(l.found, 1);
            assert_int_equal(l.nframes, 3);
            assert_int_equal(l.seed_rec, 1);
            assert_int_equal(l.tid, 1);
            assert_int_equal(l.gid, 1);
            for (int k = 0; k < 3; k++) {
                assert_int_equal(l.ret_rec[k], ret[k]);
                assert_true(gr_launch_is_return(&l, ret[k]));
            }
            /* the program's own exec (records 4 and 5) is not the launch's */
            assert_false(gr_launch_is_return(&l, 4));
            assert_false(gr_launch_is_return(&l, 5));
        } else {
            assert_int_equal(l.found, 0);
            assert_int_equal(l.nframes, 0);
            for (size_t i = 0; i < t.nrecs; i++)
                assert_false(gr_launch_is_return(&l, i));
        }
        gr_trace_free(&t);
        tb_cleanup(&b);
    }
}

/* A trace cut before the launch frames return: none found, no record taken. */
static void test_find_truncated(void **state)
{
    (void)state;
    tb b;
    codes c;
    tb_open(&b, 0);
    define(&b, M_FROZEN, &c);
    tb_thread(&b, 1);
    tb_greenlet(&b, 1, 0, 0, GR_GL_MAIN, 2, c.rmam, c.rc); /* no exec: 2 frames */
    tb_simple(&b, GR_START, 1, 0);
    tb_ev(&b, GR_CALL, 1, 0, c.mod);
    tb_ev(&b, GR_RETURN, 1, 0, c.mod);
    size_t r = tb_ev(&b, GR_RETURN, 1, 0, c.rc);
    tb_abandon(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_launch l;
    gr_launch_find(&t, &l);
    assert_int_equal(l.found, 1);
    assert_int_equal(l.nframes, 2);
    assert_int_equal(l.ret_rec[1], r);
    assert_int_equal(l.ret_rec[0], GR_LAUNCH_NONE);
    assert_int_equal(l.ret_rec[2], GR_LAUNCH_NONE);
    assert_false(gr_launch_is_return(&l, r - 1)); /* the <module>'s return */
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* ---- script -------------------------------------------------------------- */

static size_t script_of(enum how how, int anonymize, char **prog, char **notes)
{
    tb b;
    size_t ret[3];
    build(&b, how, 0, ret);
    size_t k = tb_script(&b, anonymize, NULL, prog, notes);
    tb_cleanup(&b);
    return k;
}

/* A script without the line that counts the trace's records, and with
 * the line numbers the script gives its functions (their lines in the
 * script itself, which the -m paragraph moves) removed: `_fn(_v0, 'f',
 * 36)` becomes `_fn(_v0, 'f')`.  Returns a new string. */
static char *normalized(const char *prog)
{
    gr_sb sb;
    gr_sb_init(&sb);
    for (const char *p = prog; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (strncmp(p, "# Made by ", 10) == 0) {
            /* dropped */
        } else if (strncmp(p, "_fn(", 4) == 0) {
            size_t k = n;
            while (k > 0 && p[k - 1] != ',')
                k--;
            assert_true(k > 0);
            gr_sb_put(&sb, p, k - 1);
            gr_sb_puts(&sb, ")");
        } else {
            gr_sb_put(&sb, p, n);
        }
        gr_sb_putc(&sb, '\n');
        p += n + (e != NULL);
    }
    return gr_sb_take(&sb);
}

/* The script of a -m trace is the script of the file trace plus the
 * header's -m paragraph, with no note (3.9/3.10 and 3.11+ alike); runpy's
 * frames above a program frame are the program's and stay. */
static void test_script_as_file(void **state)
{
    (void)state;
    static const char para[] = "#\n# The program was launched with -m (python -m MODULE)";
    for (int anon = 0; anon <= 1; anon++) {
        char *pf, *nf;
        assert_int_equal(script_of(AS_FILE, anon, &pf, &nf), 0);
        assert_null(strstr(pf, para));
        char *want = normalized(pf);
        for (enum how how = M_FROZEN; how <= M_STDLIB; how++) {
            char *pm, *nm;
            size_t k = script_of(how, anon, &pm, &nm);
            if (k)
                fail_msg("-m script: notes: %s", nm);
            char *at = strstr(pm, para);
            assert_non_null(at);
            /* the frames named, but not in an anonymized script (no string
             * of the trace) */
            if (anon)
                assert_null(strstr(pm, "_run_"));
            else
                assert_non_null(strstr(pm, "(_run_module_as_main > _run_code > exec)"));
            /* remove the paragraph ("#" and 3 lines): the rest is the file's script */
            char *end = at;
            for (int i = 0; i < 4 && end; i++)
                end = strchr(i ? end + 1 : end, '\n');
            assert_non_null(end);
            memmove(at, end + 1, strlen(end + 1) + 1);
            char *got = normalized(pm);
            assert_string_equal(got, want);
            assert_null(strstr(pm, "_run_code"));
            assert_null(strstr(pm, "_run_module_as_main"));
            free(got);
            free(pm);
            free(nm);
        }
        char *pp, *np;
        script_of(M_PROGRAM, anon, &pp, &np);
        assert_null(strstr(pp, para));
        if (!anon)
            assert_non_null(strstr(pp, "'_run_code'"));
        free(pp);
        free(np);
        free(want);
        free(pf);
        free(nf);
    }
}

/* ---- diff ---------------------------------------------------------------- */

static int diff_of(enum how ha, int extra_a, enum how hb, int extra_b, int c_names, char **out)
{
    tb a, b;
    size_t ret[3];
    build(&a, ha, extra_a, ret);
    build(&b, hb, extra_b, ret);
    gr_diff_opts o;
    gr_diff_defaults(&o);
    o.c_names = c_names;
    return tb_diff(&a, &b, &o, out);
}

/* The first hunk header's text after "@@ -a,b +c,d @@ " (the greenlet
 * and its stack at the divergence) into buf; "" when there is none. */
static void hunk_stack(const char *out, char *buf, size_t n)
{
    buf[0] = '\0';
    const char *h = strstr(out, "@@ -");
    if (!h)
        return;
    h = strstr(h + 4, " @@ ");
    if (!h)
        return;
    h += 4;
    size_t len = strcspn(h, "\n");
    snprintf(buf, n, "%.*s", (int)len, h);
}

static void test_diff_as_file(void **state)
{
    (void)state;
    static const int modes[] = {GR_CNAMES_EXACT, GR_CNAMES_SCRIPT};
    char hs[256];
    for (size_t i = 0; i < 2; i++) {
        char *out;
        for (enum how how = M_FROZEN; how <= M_STDLIB; how++) {
            int rc = diff_of(how, 0, AS_FILE, 0, modes[i], &out);
            if (rc != 0)
                fail_msg("-m against file, c_names %d: rc %d\n%s", modes[i], rc, out);
            assert_non_null(strstr(out, "3 records of A and 0 of B returning from runpy's launch "
                                        "frames"));
            free(out);
            /* twin: one more call in the -m trace is still a difference;
             * the stack at the divergence is the program's, without
             * runpy's launch frames, as diff compares it */
            assert_int_equal(diff_of(how, 1, AS_FILE, 0, modes[i], &out), 1);
            assert_non_null(strstr(out, "CALL"));
            hunk_stack(out, hs, sizeof hs);
            assert_string_equal(hs, "t1 g1 in A: <module>");
            free(out);
            /* and with the -m trace as B */
            assert_int_equal(diff_of(AS_FILE, 0, how, 1, modes[i], &out), 1);
            hunk_stack(out, hs, sizeof hs);
            assert_string_equal(hs, "t1 g1 in B: <module>");
            free(out);
        }
        /* 3.9's runpy.py against 3.11's frozen runpy: the same */
        assert_int_equal(diff_of(M_STDLIB, 0, M_FROZEN, 0, modes[i], &out), 0);
        free(out);
        /* runpy's frames above a frame of the program stay: different */
        assert_int_equal(diff_of(M_PROGRAM, 0, AS_FILE, 0, modes[i], &out), 1);
        assert_null(strstr(out, "launch frames"));
        free(out);
        /* and the stack at a divergence shows them there */
        assert_int_equal(diff_of(M_PROGRAM, 1, M_PROGRAM, 0, modes[i], &out), 1);
        hunk_stack(out, hs, sizeof hs);
        assert_string_equal(hs, "t1 g1 in A: caller > _run_module_as_main > _run_code > builtins.exec > <module>");
        free(out);
    }
}

/* diff of A (launched as ha) and B (hb), recorded by a 3.12+ interpreter:
 * the INSTR into the main greenlet with frames fa, stale sa in A and fb,
 * sb in B. */
static int diff_instr(enum how ha, uint64_t fa, uint64_t sa, enum how hb, uint64_t fb,
                      uint64_t sb, int c_names, char **out)
{
    tb a, b;
    size_t ret[3];
    instr.on = 1;
    instr.frames = fa;
    instr.stale = sa;
    build(&a, ha, 0, ret);
    instr.frames = fb;
    instr.stale = sb;
    build(&b, hb, 0, ret);
    instr.on = 0;
    gr_diff_opts o;
    gr_diff_defaults(&o);
    o.c_names = c_names;
    return tb_diff(&a, &b, &o, out);
}

/* 3.12+: an INSTR's frame counts (the target's frames, the stale ones) of
 * the main greenlet of a -m program hold runpy's two Python launch frames
 * (exec is C: no frame): diff leaves them out, so the INSTR compares with
 * the program's run as a file; stale ones too (they lag with the
 * <module>).  Twins: one more frame, or one stale frame fewer, differs; a
 * walk cut at the cap (128 frames) is compared as it is. */
static void test_diff_instr_as_file(void **state)
{
    (void)state;
    static const int modes[] = {GR_CNAMES_EXACT, GR_CNAMES_SCRIPT};
    for (size_t i = 0; i < 2; i++)
        for (enum how how = M_FROZEN; how <= M_STDLIB; how++) {
            char *out;
            int rc = diff_instr(how, 3, 0, AS_FILE, 1, 0, modes[i], &out);
            if (rc != 0)
                fail_msg("INSTR, -m against file, c_names %d: rc %d\n%s", modes[i], rc, out);
            free(out);
            assert_int_equal(diff_instr(AS_FILE, 1, 0, how, 3, 0, modes[i], &out), 0);
            free(out);
            assert_int_equal(diff_instr(how, 3, 3, AS_FILE, 1, 1, modes[i], &out), 0);
            free(out);
            assert_int_equal(diff_instr(how, 4, 0, AS_FILE, 1, 0, modes[i], &out), 1);
            assert_non_null(strstr(out, "INSTR"));
            free(out);
            assert_int_equal(diff_instr(how, 3, 2, AS_FILE, 1, 1, modes[i], &out), 1);
            assert_non_null(strstr(out, "INSTR"));
            free(out);
            assert_int_equal(diff_instr(how, 128, 0, AS_FILE, 128, 0, modes[i], &out), 0);
            free(out);
            assert_int_equal(diff_instr(how, 128, 0, AS_FILE, 126, 0, modes[i], &out), 1);
            free(out);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_rule),
        cmocka_unit_test(test_find_returns),
        cmocka_unit_test(test_find_truncated),
        cmocka_unit_test(test_script_as_file),
        cmocka_unit_test(test_diff_as_file),
        cmocka_unit_test(test_diff_instr_as_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
