/* diff.h - `greenreplay diff A B`: align two traces by structure and print
 * where they diverge, in a unified-diff style with greenlet and stack
 * context.
 *
 * Each record becomes a token: its kind, its thread and greenlet mapped by
 * order of first sight (t1, g1, ... as they first appear in the trace, so
 * that a greenlet created earlier or later on one side does not shift the
 * comparison), the code it names (Python code by qualname, optionally with
 * file and first line; C functions per --c-names) and the fields that
 * describe structure (parents, seed and real stacks, mark labels and flags,
 * switch state: prof, tracing, use_tracing where both traces know it,
 * origin_dead; INSTR frames/stale where both traces have INSTR).  Values
 * that change between runs or interpreters without changing structure
 * (use_tracing's exact nonzero value, INSTR versions) are left out.  The
 * two token sequences are aligned with diff_align.h; normalizations of
 * diff_ignore.h may remove records first.
 *
 * "Same canonical structure" (docs/WORKFLOW.md) is equality of these token
 * sequences; `--c-names script` is the mode a recording of a script made
 * by `greenreplay script` is compared in.
 */
#ifndef GR_DIFF_H
#define GR_DIFF_H

#include "reader.h"

#include <stdint.h>
#include <stdio.h>

/* How C function names are compared (gr_diff_opts.c_names). */
enum gr_cnames {
    GR_CNAMES_EXACT = 0, /* by qualname */
    GR_CNAMES_SCRIPT,    /* by the name a script reproduces (script_shape.h:
                            kept names compare by name, every other C call
                            is "a C call"); with rename, as in an anonymized
                            script */
    GR_CNAMES_ANY,       /* every C call is "a C call" */
};

typedef struct gr_diff_opts {
    int context;     /* records of context around a divergence (default 3) */
    int max_hunks;   /* hunks printed, 0 all (default 3) */
    int c_names;     /* enum gr_cnames */
    int files;       /* compare Python code by qualname, file and first line */
    int rename;      /* compare qualnames and labels up to a consistent
                        renaming (each name replaced by the order of its first
                        appearance): for anonymized scripts */
    unsigned ignore; /* diff_ignore.h bits */
    uint64_t budget; /* alignment work limit (diff_align.h), 0: default */
    size_t window;   /* streamed diff (diff_stream.h): tokens per side
                        aligned at a mismatch, 0: GR_DIFF_WINDOW (tests
                        set it small) */
} gr_diff_opts;

/* Set *o to the defaults. */
void gr_diff_defaults(gr_diff_opts *o);

/* Compare traces a and b (read successfully; complete or truncated) and
 * write the report to out: a header (`--- A`, `+++ B`, what was compared
 * and ignored), then up to o->max_hunks hunks
 *     @@ -I,N +J,M @@ tT gG in A|B: STACK
 *      DUMP LINE   (context, from a)
 *     -DUMP LINE   (only in a)
 *     +DUMP LINE   (only in b)
 * where I and J are the record indices of the hunk's first lines and N, M
 * their counts, tT gG the thread and greenlet of the hunk's first
 * divergent record, in the trace that has it, and STACK that greenlet's
 * stack there just before it (from its calls and returns, innermost six
 * entries); then a summary line.
 * Records that only one trace has because the other is truncated (no
 * trailer) at its end are reported in a note, not as a divergence.
 * name_a, name_b: labels for the header.  Returns 0 when the structures
 * are the same, 1 when they differ.  Exits(2) on out of memory. */
int gr_diff(FILE *out, const gr_trace *a, const char *name_a, const gr_trace *b,
            const char *name_b, const gr_diff_opts *o);

#endif
