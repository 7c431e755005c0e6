/* diff_ignore.h - known differences between interpreter versions that
 * `greenreplay diff --ignore` skips, as structural normalizations of a
 * trace: records removed from both traces before they are aligned.
 *
 * Each normalization answers one CPython behaviour change, named by the
 * issue ids it is selected with (on the command line, or as section ids
 * of the matrix's known-issues file, fixtures/known-issues.ini):
 *
 *   gen-finalize (cpython-113728, cpython-140373): an unfinished generator
 *     that is closed or finalized shows an extra call/return pair on
 *     CPython 3.9-3.12 and none on 3.13+.  Removed: a CALL X immediately
 *     followed by RETURN X in the same greenlet (nothing between) when it
 *     runs directly inside a C call of generator.close / coroutine.close
 *     (closed); directly inside gc.collect (finalized by the garbage
 *     collector); after the greenlet's outermost frame returned, or right
 *     after a DEAD record of its thread (finalized by a greenlet's death:
 *     the generator was held by the dead greenlet's frames); or, when X
 *     already ran as a generator (called directly by builtins.next,
 *     generator.send, generator.throw or generator.close), right after a
 *     RETURN (the frame holding it went) or directly under a Python frame
 *     (the last reference dropped: `del g`).  The last one also removes
 *     such a pair when a `for` loop resumes that generator and it yields
 *     at once: identical in both traces, so the alignment is unchanged.
 *   c-return-without-c-call (cpython-122029): CPython 3.12.0-3.12.4 report
 *     a c_return without its c_call for a bound method wrapping a C
 *     function.  Removed: every C_RETURN / C_EXCEPTION that matches no open
 *     C_CALL of its greenlet (except the one expected at the seed level of
 *     a greenlet first seen suspended, docs/RULES.md).
 */
#ifndef GR_DIFF_IGNORE_H
#define GR_DIFF_IGNORE_H

#include "reader.h"
#include "text.h"

#include <stddef.h>
#include <stdint.h>

enum gr_ignore {
    GR_IGNORE_GEN_FINALIZE = 1u << 0,
    GR_IGNORE_C_RETURN = 1u << 1,
};
#define GR_IGNORE_COUNT 2

/* Name of normalization number i (0..GR_IGNORE_COUNT-1):
 * "gen-finalize", "c-return-without-c-call". */
const char *gr_ignore_name(int i);

/* Parse one --ignore argument: the path of a known-issues file (an INI
 * file whose `[ID]` sections name issues; used when `arg` names an
 * existing file), or a comma-separated list of ids.  Adds the
 * normalizations selected to *bits.  An id selects a normalization when
 * it is one of its names above or contains its CPython issue number; in
 * a file, a section also selects one when one of its values mentions the
 * number.  File sections that select none are listed in `skipped` (one
 * "ID" per line, may be NULL): they are not structural differences.
 * Returns 0; or -1 with a one-line message in err (errlen bytes) for an
 * unreadable file, a file with no section, or an unknown id in a list. */
int gr_ignore_parse(const char *arg, unsigned *bits, gr_sb *skipped, char *err, size_t errlen);

/* Clear keep[i] (t->nrecs entries, set to 1 by the caller) for the records
 * of t the normalizations in `bits` remove; counts[j] (GR_IGNORE_COUNT
 * entries, may be NULL) receives how many records normalization j removed.
 * Exits(2) on out of memory. */
void gr_ignore_apply(const gr_trace *t, unsigned bits, uint8_t *keep, size_t *counts);

#endif
