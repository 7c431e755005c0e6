/* outfile.h - can a report file be written: asked before the work whose
 * result goes there (check --junit/--html), so that a path that cannot be
 * written is refused up front instead of after the whole report.
 */
#ifndef GR_OUTFILE_H
#define GR_OUTFILE_H

/* Whether a later fopen(path, "w") would succeed, found without changing
 * anything the caller can see: an existing regular file is opened for
 * writing without truncation and closed; a missing one is created
 * exclusively and removed again; an existing directory fails with EISDIR;
 * another existing file (device, FIFO) is asked with access(W_OK).
 * path: borrowed, not kept.
 * Returns 0 when writable, else the errno value that says why (ENOENT: a
 * directory of the path is missing; EACCES, EROFS, EISDIR, ENOTDIR, ...;
 * EINVAL for a NULL or empty path).  errno itself is left unchanged. */
int gr_outfile_check(const char *path);

#include <stdio.h>

/* A temporary file open for reading and writing, already unlinked (gone
 * once closed or when the process ends): in $TMPDIR when it is set and
 * can hold one, else where tmpfile() puts it.  NULL when neither can be
 * made. */
FILE *gr_tmpfile(void);

#endif
