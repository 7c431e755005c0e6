/* color.c - colour and one-line summaries for text reports (color.h). */
#define _GNU_SOURCE /* fopencookie */
#include "color.h"

#include "report.h"
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define CYAN "\033[36m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

int gr_color_parse(const char *s, enum gr_color_mode *mode)
{
    if (!s)
        *mode = GR_COLOR_ALWAYS;
    else if (strcmp(s, "auto") == 0)
        *mode = GR_COLOR_AUTO;
    else if (strcmp(s, "always") == 0 || strcmp(s, "yes") == 0)
        *mode = GR_COLOR_ALWAYS;
    else if (strcmp(s, "never") == 0 || strcmp(s, "no") == 0)
        *mode = GR_COLOR_NEVER;
    else
        return -1;
    return 0;
}

int gr_color_enabled(enum gr_color_mode mode, FILE *out)
{
    if (mode != GR_COLOR_AUTO)
        return mode == GR_COLOR_ALWAYS;
    const char *no = getenv("NO_COLOR");
    if (no && *no)
        return 0;
    const char *term = getenv("TERM");
    if (term && strcmp(term, "dumb") == 0)
        return 0;
    return isatty(fileno(out));
}

static int starts(const char *s, size_t n, const char *p)
{
    size_t k = strlen(p);
    return n >= k && memcmp(s, p, k) == 0;
}

/* Colour of one line (NULL: none). */
static const char *line_color(const char *s, size_t n, enum gr_color_kind kind)
{
    if (kind == GR_COLOR_DIFF) {
        if (starts(s, n, "---") || starts(s, n, "+++"))
            return BOLD;
        if (starts(s, n, "@@"))
            return CYAN;
        if (starts(s, n, "-"))
            return RED;
        if (starts(s, n, "+"))
            return GREEN;
        if (starts(s, n, "same structure"))
            return GREEN;
        if (n > 0 && s[0] >= '1' && s[0] <= '9')
            return RED; /* "N differences: ..." */
        return NULL;
    }
    if (starts(s, n, "== "))
        return BOLD;
    if (starts(s, n, "warning:"))
        return YELLOW;
    if (starts(s, n, "result: clean"))
        return GREEN;
    if (starts(s, n, "result: "))
        return RED;
    if (starts(s, n, "  > "))
        return BOLD;
    for (int k = 0; k < GR_NRULES; k++) {
        const char *rule = gr_rule_name((enum gr_rule)k);
        size_t rl = strlen(rule);
        if (n > rl + 4 && memcmp(s, rule, rl) == 0 && memcmp(s + rl, " at ", 4) == 0)
            return RED;
    }
    return NULL;
}

int gr_color_write(FILE *out, const char *text, size_t n, enum gr_color_kind kind)
{
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(text + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (text + i)) : n - i;
        const char *col = line_color(text + i, len, kind);
        if (col)
            fputs(col, out);
        fwrite(text + i, 1, len, out);
        if (col)
            fputs(RESET, out);
        if (nl)
            fputc('\n', out);
        i += len + (nl ? 1 : 0);
    }
    return ferror(out) ? -1 : 0;
}

void gr_color_check_summary(FILE *out, const gr_trace *t, const gr_check_result *r, int color)
{
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_escape(&sb, t->name, strlen(t->name), 0); /* a file name reaches the terminal */
    gr_sb_puts(&sb, ": ");
    const char *nothing = r->nv ? NULL : r->coverage.nothing;
    size_t failing = gr_check_failing(r);
    if (color)
        gr_sb_puts(&sb, failing || nothing ? RED : GREEN);
    gr_report_tally_head(&sb, r); /* the words of the text report's result line */
    if (color)
        gr_sb_puts(&sb, RESET);
    gr_sb_printf(&sb, ", %" PRIu64 " records", gr_trace_count(t));
    gr_report_tally_rest(&sb, r);
    if (t->truncated)
        gr_sb_puts(&sb, " [truncated]");
    size_t nw = 0; /* a refuted prediction is no warning (gr_report_refuted) */
    for (size_t i = 0; i < r->nwarnings; i++)
        nw += !gr_report_refuted(r->warnings[i]);
    if (nw)
        gr_sb_printf(&sb, " [%zu warning%s]", nw, nw == 1 ? "" : "s");
    gr_sb_putc(&sb, '\n');
    fwrite(sb.s, 1, sb.len, out);
    gr_sb_free(&sb);
}

void gr_color_check_unusable(FILE *out, const char *file, const char *error, int color)
{
    gr_sb shown; /* a file name reaches the terminal: escaped, as the reader's message has it */
    gr_sb_init(&shown);
    gr_sb_escape(&shown, file, strlen(file), 0);
    size_t n = shown.len;
    if (strncmp(error, gr_sb_str(&shown), n) == 0 && error[n] == ':' && error[n + 1] == ' ')
        error += n + 2;
    fprintf(out, "%s: %sunusable%s: %s\n", gr_sb_str(&shown), color ? RED : "", color ? RESET : "",
            error);
    gr_sb_free(&shown);
}

void gr_color_report(FILE *out, const gr_trace *t, const gr_check_result *r, int color)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *mem = color ? open_memstream(&buf, &n) : NULL;
    if (!mem) {
        gr_report_text(out, t, r);
        return;
    }
    gr_report_text(mem, t, r);
    fclose(mem);
    gr_color_write(out, buf, n, GR_COLOR_CHECK);
    free(buf);
}

/* The report as it is written, a line at a time: coloured and passed on,
 * or (quiet) only its last line that is not empty kept, so that a report
 * of millions of lines is not held. */
typedef struct linef {
    FILE *out;
    int quiet, color;
    gr_sb part, last;
} linef;

static void linef_line(linef *l)
{
    if (!l->quiet) {
        if (l->color)
            gr_color_write(l->out, l->part.s, l->part.len, GR_COLOR_DIFF);
        else
            fwrite(l->part.s, 1, l->part.len, l->out);
    } else {
        size_t n = l->part.len;
        while (n > 0 && l->part.s[n - 1] == '\n')
            n--;
        if (n) {
            gr_sb_reset(&l->last);
            gr_sb_put(&l->last, l->part.s, n);
        }
    }
    gr_sb_reset(&l->part);
}

static ssize_t linef_write(void *cookie, const char *buf, size_t n)
{
    linef *l = cookie;
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(buf + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (buf + i)) + 1 : n - i;
        gr_sb_put(&l->part, buf + i, len);
        if (nl)
            linef_line(l);
        i += len;
    }
    return (ssize_t)n;
}

/* Write the report that run writes, as gr_color_diff says. */
static int color_run(FILE *out, int (*run)(FILE *, void *), void *arg, const char *na,
                     const char *nb, int quiet, int color)
{
    if (!quiet && !color)
        return run(out, arg);
    linef l = {out, quiet, color, {NULL, 0, 0}, {NULL, 0, 0}};
    cookie_io_functions_t io = {NULL, linef_write, NULL, NULL};
    FILE *f = fopencookie(&l, "w", io);
    if (!f) {
        perror("greenreplay: diff");
        return 2;
    }
    int rc = run(f, arg);
    fclose(f);
    if (l.part.len)
        linef_line(&l);
    if (quiet) {
        fprintf(out, "%s %s: ", na, nb);
        if (color)
            gr_color_write(out, l.last.s ? l.last.s : "", l.last.len, GR_COLOR_DIFF);
        else
            fwrite(l.last.s ? l.last.s : "", 1, l.last.len, out);
        fputc('\n', out);
    }
    gr_sb_free(&l.part);
    gr_sb_free(&l.last);
    return rc;
}

typedef struct diff_args {
    const gr_trace *a, *b;
    const gr_diff_info *da, *db;
    const char *na, *nb;
    const gr_diff_opts *o;
} diff_args;

static int run_loaded(FILE *out, void *arg)
{
    const diff_args *d = arg;
    return gr_diff(out, d->a, d->na, d->b, d->nb, d->o);
}

static int run_streamed(FILE *out, void *arg)
{
    const diff_args *d = arg;
    return gr_diff_stream(out, d->da, d->na, d->na, d->db, d->nb, d->nb, d->o);
}

int gr_color_diff(FILE *out, const gr_trace *a, const char *na, const gr_trace *b,
                  const char *nb, const gr_diff_opts *o, int quiet, int color)
{
    diff_args d = {a, b, NULL, NULL, na, nb, o};
    return color_run(out, run_loaded, &d, na, nb, quiet, color);
}

int gr_color_diff_stream(FILE *out, const gr_diff_info *a, const char *na, const gr_diff_info *b,
                         const char *nb, const gr_diff_opts *o, int quiet, int color)
{
    diff_args d = {NULL, NULL, a, b, na, nb, o};
    return color_run(out, run_streamed, &d, na, nb, quiet, color);
}
