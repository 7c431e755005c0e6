/* color.h - colour for the text reports of `check` and `diff`
 * (--color=auto|always|never and the NO_COLOR convention), and their
 * --quiet one-line summaries.
 *
 * Colour is added after the fact to finished report text, line by line, by
 * the line's shape, so the reports themselves (report.c, diff.c) never
 * contain escape sequences and goldens stay plain.  SGR codes used: red
 * (violations, lines only in A), green (clean, lines only in B), yellow
 * (warnings), cyan (hunk headers), bold (the violating record, file
 * headers).
 */
#ifndef GR_COLOR_H
#define GR_COLOR_H

#include "check.h"
#include "diff.h"
#include "diff_stream.h"
#include "reader.h"

#include <stddef.h>
#include <stdio.h>

enum gr_color_mode {
    GR_COLOR_AUTO = 0, /* colour when out is a terminal, NO_COLOR is unset or
                          empty and TERM is not "dumb" */
    GR_COLOR_ALWAYS,   /* always (even with NO_COLOR: the option wins) */
    GR_COLOR_NEVER,
};

/* What kind of report a text is. */
enum gr_color_kind {
    GR_COLOR_CHECK = 0, /* gr_report_text output */
    GR_COLOR_DIFF,      /* gr_diff output */
};

/* Parse the value of --color ("auto", "always", "never"; also "yes"/"no";
 * NULL, i.e. --color alone: always).  Returns 0, or -1 for anything else. */
int gr_color_parse(const char *s, enum gr_color_mode *mode);

/* Whether to colour output written to out under mode (see above). */
int gr_color_enabled(enum gr_color_mode mode, FILE *out);

/* Write text (n bytes) to out, coloured as a report of kind `kind`.
 * Returns 0, or -1 on a write error. */
int gr_color_write(FILE *out, const char *text, size_t n, enum gr_color_kind kind);

/* `check --quiet`: one line for a checked trace: "FILE: clean (N records)"
 * or "FILE: N violations (RULE N, ...)", with " [truncated]" and
 * " [N warnings]" when they apply; coloured when color is non-zero. */
void gr_color_check_summary(FILE *out, const gr_trace *t, const gr_check_result *r, int color);

/* `check --quiet`: the line of a trace that could not be checked (missing,
 * unreadable, corrupt; with --stall also its side channel):
 * "FILE: unusable: CAUSE", coloured when color is non-zero.  file: the
 * trace as named on the command line; error: the reader's one-line message
 * (a leading "FILE: " is dropped: the line names the file once).  Both
 * borrowed.  The caller still writes the stderr line. */
void gr_color_check_unusable(FILE *out, const char *file, const char *error, int color);

/* `check` text report of one trace (gr_report_text) to out, coloured when
 * color is non-zero. */
void gr_color_report(FILE *out, const gr_trace *t, const gr_check_result *r, int color);

/* `diff` of a (named na) and b (named nb) to out: gr_diff's report, or with
 * quiet only "NA NB: " and its summary line (the last one); coloured when
 * color is non-zero.  Returns gr_diff's status (0 same, 1 different, 2
 * error). */
int gr_color_diff(FILE *out, const gr_trace *a, const char *na, const gr_trace *b,
                  const char *nb, const gr_diff_opts *o, int quiet, int color);

/* Same for the traces at paths na and nb, scanned into a and b and
 * compared with gr_diff_stream (gr_diff_streamable). */
int gr_color_diff_stream(FILE *out, const gr_diff_info *a, const char *na, const gr_diff_info *b,
                         const char *nb, const gr_diff_opts *o, int quiet, int color);

#endif
