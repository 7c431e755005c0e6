/* script.h - `greenreplay script`: write a standalone Python program that
 * acts out a trace's structure (script_shape.h) so that recording it gives
 * a trace with the same canonical structure (docs/WORKFLOW.md).
 *
 * The program needs only greenlet (when the trace has greenlets) and the
 * recorder (`import greenreplay`).  It recreates:
 *   - the greenlets: creation order, parents (and later reassignments),
 *     the order of switches and throws (values are not reproduced), and
 *     deaths (normal or by exception);
 *   - inside each greenlet, the nesting of calls between switches, with
 *     functions whose code carries the recorded qualname (`co_name`, and
 *     `co_qualname` on 3.11+; `--anonymize`: f1, f2, ...);
 *   - C calls: the same builtin where script_builtins.h knows one, else a
 *     neutral C call (`collections.deque.extend` on a zero-length deque)
 *     that makes, from C, the calls and switches the original C function
 *     made;
 *   - marks (labels m1, m2, ... with --anonymize), start() and stop();
 *   - threads: each recorded thread is a thread of the script, and the
 *     threads hand over to each other where the trace goes from one to
 *     another;
 *   - switches made inside a trace function (a blind spot on every CPython),
 *     generator finalizations (real generators, closed or dropped).
 * What it cannot reproduce is listed in the script's header comment and
 * returned as notes (one line each).
 *
 * Every line of the program that `greenreplay reduce` may remove carries a
 * trailing tag: `#@N` (one unit: all lines with that tag go together) or
 * `#@dN` (a function definition: the `def` line, its indented body and the
 * line that renames its code); see reduce.h.
 */
#ifndef GR_SCRIPT_H
#define GR_SCRIPT_H

#include "reader.h"
#include "script_shape.h"
#include "text.h"

#include <stddef.h>
#include <stdio.h>

/* Options of gr_script_write. */
typedef struct gr_script_opts {
    int anonymize;        /* neutral names f1.., labels m1..; no file names, no
                             original strings, no C function names */
    const char *source;   /* trace file name for the header comment, or NULL
                             (never printed when anonymizing) */
    size_t cache;         /* distinct bodies kept to share defs before the
                             cache starts over; 0: about a million (tests
                             set fewer: GREENREPLAY_SCRIPT_CACHE) */
} gr_script_opts;

/* Write the Python program for trace t (read successfully; complete or
 * truncated) into out (appended).  notes (may be NULL) receives one line
 * per thing the program does not reproduce, each ending in '\n', the same
 * text as in the program's header.  Returns the number of notes.  Exits(2)
 * on out of memory; never fails otherwise. */
size_t gr_script_write(const gr_trace *t, const gr_script_opts *o, gr_sb *out, gr_sb *notes);

/* The program of shape s (gr_shape_build, or gr_shape_build_path for a
 * trace read as a stream; built with anonymize = o->anonymize) written to
 * f as it is made, a piece of about 64 KB at a time: the program is never
 * held whole.  The same notes into notes (may be NULL), their number into
 * *nnotes (may be NULL).  Returns 0; -1 when writing to f failed (what
 * was written stays in f); -2 when the temporary file that holds the
 * defs until the header before them is written could not be written or
 * read back (errno says why; f then lacks the defs).  f is flushed, not
 * closed.  Spilled greenlets
 * (gr_shape_build_path) are brought back one at a time while rendering,
 * so s changes (its contents, not what it says). */
int gr_script_write_shape(gr_shape *s, const gr_script_opts *o, FILE *f, gr_sb *notes,
                          size_t *nnotes);

/* Append s (n bytes, UTF-8 expected) as a Python string literal in single
 * quotes, ASCII only: printable ASCII as is (with \\ and \' escaped), other
 * characters as \xHH, \uHHHH or \UHHHHHHHH; bytes that are not valid UTF-8
 * become U+FFFD.  Returns the number of invalid bytes replaced. */
size_t gr_script_pystr(gr_sb *sb, const void *s, size_t n);

#endif
