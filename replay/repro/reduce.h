/* reduce.h - `greenreplay reduce`: shrink a failing script made by
 * `greenreplay script` for as long as its failure persists.
 *
 * The script's removable parts are its units (script.h): lines tagged
 * `#@N` (all lines with one tag form one unit: a call, a C call, a mark, a
 * switch with its try/except, a greenlet's creation, a helper...) and
 * function definitions tagged `#@dN` (the `def` line, its indented body,
 * and every other line with the same tag).  Reduction is delta debugging
 * (A. Zeller, R. Hildebrandt, "Simplifying and Isolating Failure-Inducing
 * Input", IEEE TSE 2002: ddmin) over the units: remove chunks of units,
 * keep a removal when the reduced script still fails the same way, refine
 * the chunks until no single unit can go.  Then definitions and helpers
 * that nothing refers to any more are dropped (and the result checked once
 * more).
 *
 * "Fails the same way": recording the script (`greenreplay record
 * --manual` with the given interpreter) exits with the same status as the
 * original script's recording, and `check` of its trace reports at least
 * one violation of the given rule.
 */
#ifndef GR_REDUCE_H
#define GR_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- units of a script --------------------------------------------------- */

/* One line of a script. */
typedef struct gr_uline {
    const char *text;  /* into gr_units.text (not NUL-terminated) */
    size_t len;        /* without the newline */
    size_t unit;       /* unit index, or GR_UNIT_NONE */
    size_t def;        /* def block index, or GR_UNIT_NONE */
} gr_uline;

#define GR_UNIT_NONE SIZE_MAX

/* A script split into lines, units and def blocks. */
typedef struct gr_units {
    char *text;        /* owned copy of the script */
    gr_uline *lines;
    size_t nlines;
    size_t nunits;     /* units 0..nunits-1, in order of first line */
    size_t ndefs;      /* def blocks 0..ndefs-1 */
    char **def_names;  /* owned: the name each def block defines */
    size_t header;     /* lines of the leading comment block (dropped on output) */
} gr_units;

/* Split script text (n bytes) into *u (need not be initialised).  Returns
 * the number of units; 0 means the text has no tags (not a script of
 * `greenreplay script`).  Exits(2) on out of memory. */
size_t gr_units_parse(gr_units *u, const char *text, size_t n);

/* Release what *u owns. */
void gr_units_free(gr_units *u);

/* The text of the script with only the units where keep[unit] != 0 and the
 * def blocks where def_keep[def] != 0 (NULL: all), without the leading
 * comment block when drop_header is set.  Owned string (free()); *len its
 * length. */
char *gr_units_render(const gr_units *u, const uint8_t *keep, const uint8_t *def_keep,
                      int drop_header, size_t *len);

/* Drop what nothing refers to: def blocks whose name no other kept line
 * mentions, and units at column 0 that define a name (`NAME = ...`,
 * `def NAME(`, `class NAME(`, `import NAME`) no other kept line mentions;
 * repeated until nothing changes.  Updates keep and def_keep (def_keep:
 * ndefs entries, 1 = kept).  Returns how many units and defs it dropped. */
size_t gr_units_cleanup(const gr_units *u, uint8_t *keep, uint8_t *def_keep);

/* The script text (n bytes) with the line numbers its definitions claim
 * (`_fn(_vN, NAME, LINE)` and `_gen(NAME, LINE)` give a function's code the
 * first line of its first definition in the original script) made those of
 * the definitions in this text: every variant that claimed one line claims
 * the line of the first of them still defined here.  A claim whose
 * definition is gone, or a line that does not parse, is left as it is.
 * Owned string (free()); *len its length. */
char *gr_units_renumber(const char *text, size_t n, size_t *len);

/* ---- delta debugging ----------------------------------------------------- */

/* Test a configuration: keep[i] != 0 for the n units kept.  Returns 1 when
 * the failure persists, 0 when it does not. */
typedef int (*gr_ddmin_test)(void *ctx, const uint8_t *keep, size_t n);

/* Called after each test (may be NULL): tested configuration size, result,
 * current size. */
typedef void (*gr_ddmin_progress)(void *ctx, size_t tested, int fails, size_t current);

/* Minimise the set of kept units (keep: n entries, in: the configuration to
 * start from, which must fail; out: a 1-minimal one: removing any single
 * unit of it makes the failure go, unless max_tests ran out).  Never tests
 * the same configuration twice.  max_tests 0: no limit.  Returns the number
 * of tests run. */
size_t gr_ddmin(size_t n, uint8_t *keep, gr_ddmin_test test, gr_ddmin_progress progress,
                void *ctx, size_t max_tests);

/* ---- the command --------------------------------------------------------- */

typedef struct gr_reduce_opts {
    const char *script;   /* input script */
    const char *python;   /* interpreter command (may be a wrapper script) */
    const char *rule;     /* check rule that must keep firing */
    const char *output;   /* reduced script, NULL: stdout */
    const char *workdir;  /* scratch directory parent, NULL: $TMPDIR or /tmp */
    const char *self;     /* the greenreplay executable to record with */
    unsigned timeout_s;   /* seconds per run; 0: five times the original's
                             run, at least 5 */
    size_t max_runs;      /* 0: no limit */
    int keep;             /* keep the scratch directory (named on stderr);
                             0: it is removed on every way out, also on
                             SIGINT, SIGTERM and SIGHUP */
    FILE *log;            /* progress (stderr), NULL: quiet */
} gr_reduce_opts;

/* Run the reduction.  Returns 0 (reduced script written), 1 (the original
 * script does not fail that way: nothing written), 2 (bad input, I/O
 * error; a one-line message on stderr). */
int gr_reduce(const gr_reduce_opts *o);

#endif
