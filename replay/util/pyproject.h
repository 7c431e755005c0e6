/* pyproject.h - the [tool.greenreplay] table of the nearest pyproject.toml
 * (from the current directory up), for `check`:
 *
 *   [tool.greenreplay]
 *   allow = ["displaced:Pool._after_run_task", "propagation"]
 *   fail_on = ["displaced"]
 *   strict_known = false
 *
 * A small subset of TOML: the table header, string arrays (one or several
 * lines, basic or literal strings without escapes), booleans, comments.
 * Anything else in the table is ignored; other tables are skipped. */
#ifndef GR_PYPROJECT_H
#define GR_PYPROJECT_H

#include <stddef.h>

typedef struct gr_pyproject {
    char *path;         /* the file read (owned), NULL when none found */
    char **allow;       /* owned strings */
    size_t nallow;
    char **fail_on;     /* owned rule names (gr_check_fail_on) */
    size_t nfail_on;
    int strict_known;   /* -1 not set, 0, 1 */
} gr_pyproject;

/* Find and read the nearest pyproject.toml.  Returns 0 (found or not:
 * p->path says), -1 when it could not be read or its [tool.greenreplay]
 * table is malformed (err holds one line). */
int gr_pyproject_read(gr_pyproject *p, char *err, size_t errlen);

void gr_pyproject_free(gr_pyproject *p);

#endif
