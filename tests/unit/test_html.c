/* test_html.c - replay/report/html.c (check --html), gr_checker_shadow, and
 * replay/report/color.c (--color parsing, NO_COLOR and TERM=dumb on a terminal, line
 * colours, --quiet summary and unusable line). */
#define _GNU_SOURCE /* posix_openpt, ptsname */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "check.h"
#include "color.h"
#include "html.h"
#include "trace_builder.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* t1: g1 (main, seed <module>) calls f and switches to the new g2; g2's
 * profiler missed the call of h: C_CALL mark, MARK with real stack h
 * (blind_spot at record 7). */
static void build_cap(tb *b, size_t chunk_cap)
{
    tb_open(b, chunk_cap);
    uint32_t mod = tb_py(b, "<module>", "m.py", 1), f = tb_py(b, "f", "m.py", 3),
             h = tb_py(b, "h<&>", "m.py", 7), mark = tb_c(b, "greenreplay._greenreplay.mark");
    uint32_t label = tb_str(b, "in h");
    tb_thread(b, 1);                              /* 0 */
    tb_greenlet(b, 1, 1, 0, GR_GL_MAIN, 1, mod);  /* 1 */
    tb_ev(b, GR_CALL, 1, 1, f);                   /* 2 */
    tb_greenlet(b, 1, 2, 1, 0, 0);                /* 3 */
    tb_switch(b, GR_SWITCH, 1, 1, 2, 1, 1, 0, 0); /* 4 */
    tb_ev(b, GR_C_CALL, 1, 2, mark);              /* 5 */
    tb_ev(b, GR_CALL, 1, 2, mark);                /* 6: not a match for anything */
    tb_mark(b, 1, 2, label, mark, 2, 1, h);       /* 7 */
    tb_finish(b);
}

static void build(tb *b)
{
    build_cap(b, 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void test_shadow(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result res;
    gr_checker *c = gr_checker_new(&t, &res);
    size_t n;
    int unknown;
    assert_null(gr_checker_shadow(c, 1, &n, &unknown)); /* nothing replayed yet */
    assert_int_equal(n, 0);
    gr_checker_advance(c, 7);
    const uint32_t *ids = gr_checker_shadow(c, 1, &n, &unknown);
    assert_int_equal(n, 2); /* <module> (seed), f */
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_int_equal(unknown, 0);
    ids = gr_checker_shadow(c, 2, &n, &unknown);
    assert_int_equal(n, 2); /* mark (C), mark as a Python call */
    assert_int_equal(ids[0], 4);
    assert_null(gr_checker_shadow(c, 9, &n, &unknown));
    gr_checker_finish(c);
    gr_check_result_free(&res);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

static void test_html(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result res;
    assert_true(gr_check_run(&t, &res) >= 1);
    gr_html h;
    gr_html_init(&h);
    gr_html_add_trace(&h, &t, &res);
    gr_html_add_unusable(&h, "bad<1>.grt", "bad<1>.grt: offset 0: bad magic");
    char path[] = "/tmp/gr-html-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gr_html_write(&h, path), 0);
    char *s = slurp(path);
    unlink(path);
    /* The blind spot, linked to its record and greenlet. */
    assert_non_null(strstr(s, "<span class=\"rule\">blind_spot</span> at event "
                              "<a href=\"#f0-r7\">7</a> (thread 1, <a href=\"#f0-g2\">g2 (run "));
    assert_non_null(strstr(s, "id=\"f0-r7\""));
    assert_non_null(strstr(s, "<tr id=\"f0-g2\">"));
    assert_non_null(strstr(s, "<tr id=\"f0-g1\"><td>g1 (main)</td>"));
    /* g2's row first: shadow (C entry in italics), real stack of the MARK;
     * names escaped. */
    const char *row = strstr(s, "<tr class=\"own\">");
    assert_non_null(row);
    assert_non_null(strstr(row, "<li class=\"c\">greenreplay._greenreplay.mark</li>"));
    assert_non_null(strstr(row, "MARK at record <a href=\"#f0-r7\">7</a>"));
    assert_non_null(strstr(row, "<li>h&lt;&amp;&gt; (m.py:7)</li>"));
    /* g1: shadow <module> > f, real stack its seed. */
    assert_non_null(strstr(s, "<li>&lt;module&gt; (m.py:1)</li><li>f (m.py:3)</li>"));
    assert_non_null(strstr(s, "GREENLET seed at record <a href=\"#f0-r1\">1</a>"));
    /* The unusable file, escaped; self-contained page. */
    assert_non_null(strstr(s, "bad&lt;1&gt;.grt: offset 0: bad magic"));
    assert_null(strstr(s, "<script"));
    assert_null(strstr(s, "http"));
    free(s);
    gr_html_free(&h);
    gr_check_result_free(&res);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* The page of one trace and its result. */
static char *page(const gr_trace *t, const gr_check_result *res)
{
    gr_html h;
    gr_html_init(&h);
    gr_html_add_trace(&h, t, res);
    char path[] = "/tmp/gr-html-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gr_html_write(&h, path), 0);
    gr_html_free(&h);
    char *s = slurp(path);
    unlink(path);
    return s;
}

/* check --html streams the trace (gr_check_stream, then the file read again
 * chunk by chunk): the page is the one of the loaded trace. */
static void test_html_streamed(void **state)
{
    (void)state;
    tb b;
    build_cap(&b, 48); /* a few records per chunk */
    gr_trace t, st;
    gr_check_result res, sres;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    assert_true(gr_check_run(&t, &res) >= 1);
    assert_int_equal(gr_trace_open(&st, b.path), GR_READ_OK);
    assert_int_equal(gr_check_stream(&st, &sres), res.nv);
    char *want = page(&t, &res), *got = page(&st, &sres);
    assert_non_null(strstr(got, "<span class=\"rule\">blind_spot</span> at event "));
    assert_non_null(strstr(got, "MARK at record <a href=\"#f0-r7\">7</a>"));
    assert_string_equal(got, want);
    free(want);
    free(got);
    gr_check_result_free(&res);
    gr_check_result_free(&sres);
    gr_trace_free(&t);
    gr_trace_free(&st);
    tb_cleanup(&b);
}

static char *colored(const char *text, enum gr_color_kind kind)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    assert_int_equal(gr_color_write(f, text, strlen(text), kind), 0);
    fclose(f);
    return buf;
}

static void test_color(void **state)
{
    (void)state;
    enum gr_color_mode m;
    assert_int_equal(gr_color_parse("never", &m), 0);
    assert_int_equal(m, GR_COLOR_NEVER);
    assert_int_equal(gr_color_parse(NULL, &m), 0);
    assert_int_equal(m, GR_COLOR_ALWAYS);
    assert_int_equal(gr_color_parse("auto", &m), 0);
    assert_int_equal(m, GR_COLOR_AUTO);
    assert_int_equal(gr_color_parse("sometimes", &m), -1);
    assert_true(gr_color_enabled(GR_COLOR_ALWAYS, stdout));
    assert_false(gr_color_enabled(GR_COLOR_NEVER, stdout));
    FILE *f = tmpfile(); /* not a terminal */
    assert_false(gr_color_enabled(GR_COLOR_AUTO, f));
    fclose(f);

    char *s = colored("  imbalance            0\nblind_spot at event 7 (t1 g2): x\n"
                      "  >      7 MARK\nresult: 1 violation\nresult: clean\nwarning: w",
                      GR_COLOR_CHECK);
    assert_string_equal(s, "  imbalance            0\n"
                           "\033[31mblind_spot at event 7 (t1 g2): x\033[0m\n"
                           "\033[1m  >      7 MARK\033[0m\n"
                           "\033[31mresult: 1 violation\033[0m\n"
                           "\033[32mresult: clean\033[0m\n"
                           "\033[33mwarning: w\033[0m");
    free(s);
    s = colored("--- a\n+++ b\n# c\n@@ -1 +1 @@\n-    1 X\n+    1 Y\n     2 Z\n", GR_COLOR_DIFF);
    assert_string_equal(s, "\033[1m--- a\033[0m\n\033[1m+++ b\033[0m\n# c\n"
                           "\033[36m@@ -1 +1 @@\033[0m\n\033[31m-    1 X\033[0m\n"
                           "\033[32m+    1 Y\033[0m\n     2 Z\n");
    free(s);
}

/* On a terminal, auto colour is off when NO_COLOR is set and not empty or
 * TERM is "dumb", on otherwise; always/never win over both (the contract
 * of color.h and `greenreplay --help`). */
static void test_color_env(void **state)
{
    (void)state;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
        skip(); /* no pseudo-terminals here */
    FILE *tty = fopen(ptsname(master), "w");
    assert_non_null(tty);
    assert_true(isatty(fileno(tty)));
    char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    char *saved_no = no ? strdup(no) : NULL, *saved_term = term ? strdup(term) : NULL;
    unsetenv("NO_COLOR");
    setenv("TERM", "xterm", 1);
    assert_true(gr_color_enabled(GR_COLOR_AUTO, tty));
    setenv("NO_COLOR", "", 1); /* empty: as if unset */
    assert_true(gr_color_enabled(GR_COLOR_AUTO, tty));
    setenv("NO_COLOR", "1", 1);
    assert_false(gr_color_enabled(GR_COLOR_AUTO, tty));
    assert_true(gr_color_enabled(GR_COLOR_ALWAYS, tty));
    unsetenv("NO_COLOR");
    setenv("TERM", "dumb", 1);
    assert_false(gr_color_enabled(GR_COLOR_AUTO, tty));
    assert_true(gr_color_enabled(GR_COLOR_ALWAYS, tty));
    unsetenv("TERM");
    assert_true(gr_color_enabled(GR_COLOR_AUTO, tty));
    assert_false(gr_color_enabled(GR_COLOR_NEVER, tty));
    if (saved_no)
        setenv("NO_COLOR", saved_no, 1);
    if (saved_term)
        setenv("TERM", saved_term, 1);
    free(saved_no);
    free(saved_term);
    fclose(tty);
    close(master);
}

/* check -q's line for a file it cannot check: "FILE: unusable: CAUSE", the
 * reader's "FILE: " prefix said once; red when coloured. */
static void test_quiet_unusable(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    gr_color_check_unusable(f, "x.grt", "x.grt: offset 0: bad magic (not a greenreplay trace)", 0);
    gr_color_check_unusable(f, "y.grt", "y.grt.times: no sampler data", 0);
    gr_color_check_unusable(f, "x.grt", "No such file or directory", 1);
    fclose(f);
    assert_string_equal(buf, "x.grt: unusable: offset 0: bad magic (not a greenreplay trace)\n"
                             "y.grt: unusable: y.grt.times: no sampler data\n"
                             "x.grt: \033[31munusable\033[0m: No such file or directory\n");
    free(buf);
}

static void test_quiet(void **state)
{
    (void)state;
    tb b;
    build(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result res;
    gr_check_run(&t, &res);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    gr_color_check_summary(f, &t, &res, 0);
    fclose(f);
    char want[256];
    snprintf(want, sizeof want, "%s: %zu violation%s (", t.name, res.nv, res.nv == 1 ? "" : "s");
    assert_memory_equal(buf, want, strlen(want));
    snprintf(want, sizeof want, "(blind_spot %zu)", res.counts[GR_RULE_BLIND_SPOT]);
    assert_true(res.counts[GR_RULE_BLIND_SPOT] >= 1);
    if (!strstr(buf, want))
        fail_msg("%s lacks %s", buf, want);
    assert_non_null(strstr(buf, ", 8 records\n"));
    assert_null(strchr(buf, '\033'));
    free(buf);
    gr_check_result_free(&res);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

/* A trace with nothing to check (header only) is "nothing checked" in the
 * quiet line and in the HTML page, never clean; the page has the coverage. */
static void test_nothing_checked(void **state)
{
    (void)state;
    tb b;
    tb_open(&b, 0);
    tb_abandon(&b);
    gr_trace t;
    assert_int_equal(tb_load(&b, &t), GR_READ_OK);
    gr_check_result res;
    assert_int_equal(gr_check_run(&t, &res), 0);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    gr_color_check_summary(f, &t, &res, 0);
    fclose(f);
    char want[256];
    snprintf(want, sizeof want, "%s: nothing checked (the file holds only its header", t.name);
    assert_memory_equal(buf, want, strlen(want));
    assert_non_null(strstr(buf, ", 0 records [truncated]\n"));
    free(buf);
    gr_html h;
    gr_html_init(&h);
    gr_html_add_trace(&h, &t, &res);
    char path[] = "/tmp/gr-html-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gr_html_write(&h, path), 0);
    char *s = slurp(path);
    unlink(path);
    assert_non_null(strstr(s, "<span class=\"bad\">nothing checked</span>"));
    assert_non_null(strstr(s, "<pre class=\"coverage\">nothing checked: the file holds only"));
    assert_non_null(strstr(s, "  blind spots          not checkable"));
    assert_null(strstr(s, ">clean<"));
    /* no thread at all: said in words, not "in 0 of 0 threads" */
    assert_non_null(strstr(s, "  seen                 no threads recorded\n"));
    assert_null(strstr(s, " 0 of 0 "));
    free(s);
    gr_html_free(&h);
    gr_check_result_free(&res);
    gr_trace_free(&t);
    tb_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shadow),
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_html_streamed),
        cmocka_unit_test(test_color),
        cmocka_unit_test(test_color_env),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_quiet_unusable),
        cmocka_unit_test(test_nothing_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
