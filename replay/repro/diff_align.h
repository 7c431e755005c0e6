/* diff_align.h - align two sequences of tokens (small integers) with a
 * minimal edit script: Myers' O(ND) difference algorithm in its
 * linear-space form (E. W. Myers, "An O(ND) Difference Algorithm and Its
 * Variations", Algorithmica 1986, section 4b: the middle snake), after
 * stripping the common prefix and suffix.
 *
 * `greenreplay diff` turns each record of a trace into a token (diff.h)
 * and aligns the two token sequences with this.
 */
#ifndef GR_DIFF_ALIGN_H
#define GR_DIFF_ALIGN_H

#include <stddef.h>
#include <stdint.h>

/* One run of the edit script. */
typedef struct gr_edit {
    char op;     /* '=' equal in both, '-' only in a, '+' only in b */
    size_t a, b; /* first index of the run in a and in b (for '+', the
                    position in a before which it goes; for '-', likewise in b) */
    size_t n;    /* length of the run */
} gr_edit;

/* Align a[0..na) with b[0..nb).  *out receives an owned array of runs (free
 * it with free()), in order, covering both sequences: concatenating the '='
 * and '-' runs gives a, the '=' and '+' runs give b; adjacent runs have
 * different ops.  The script is minimal (fewest '-' plus '+' elements)
 * unless the work exceeds `budget` steps of the search (0: no limit), in
 * which case the remaining differing middle part is reported as deleted
 * from a and inserted from b, and *exhausted (if not NULL) is set to 1.
 * Returns the number of runs.  Exits(2) on out of memory. */
size_t gr_align(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint64_t budget,
                gr_edit **out, int *exhausted);

#endif
