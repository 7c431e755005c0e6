/* diff_stream.h - `greenreplay diff A B` in bounded memory: both traces
 * read one batch of records at a time (reader.h streaming), the report
 * the same as gr_diff's (diff.h).
 *
 * Pass 0 (gr_diff_scan) reads each trace once for what the comparison
 * depends on before its first record (INSTR records, use_tracing known,
 * continued switches, a `python -m` launch and the records returning from
 * its frames: launch.h, gr_launch_scan) and its record count.  Pass 1
 * turns the records of both into tokens and compares them in lockstep;
 * at a mismatch it takes a window of up to GR_DIFF_WINDOW tokens of each
 * and aligns them with diff_align.h: all of it when both traces end in it,
 * else growing prefixes of it (GR_DIFF_FIRST tokens, doubling) until one
 * has a run of GR_DIFF_RESYNC equal tokens; it keeps the alignment before
 * that run and goes on in lockstep from it.  When what is left of both traces at
 * a mismatch fits in the window, which is every trace under
 * GR_DIFF_WINDOW records, this is exactly gr_diff's global alignment, and
 * the report is the same byte for byte (past it, a difference among
 * identical records may be placed at another of them).  Pass 2 reads the traces again
 * for the records the report shows (only when they differ).
 *
 * Memory: one batch of each trace and their definitions, the token
 * shapes (one per kind of record, code and thread), per greenlet seen its
 * order of first sight and, with continued switches, a shadow stack per
 * (thread, greenlet); the two queues (up to GR_DIFF_WINDOW tokens each)
 * and the aligner's arrays: about 100 MB at most; the edit runs (32 bytes
 * per difference).  Not streamed (gr_diff_streamable 0): --ignore and
 * --c-names script, whose normalizations look ahead in the trace; those
 * are loaded whole.
 */
#ifndef GR_DIFF_STREAM_H
#define GR_DIFF_STREAM_H

#include "diff.h"
#include "launch.h"

#include <stdint.h>
#include <stdio.h>

/* Window (tokens per side) and resynchronization run (equal tokens). */
#define GR_DIFF_WINDOW (1u << 19)
#define GR_DIFF_RESYNC 64
/* Tokens of each window aligned first (doubled until a resync run). */
#define GR_DIFF_FIRST 256

/* What pass 0 learns of a trace.  t stays open (definitions, metas,
 * truncation and trailer, for the report's header). */
typedef struct gr_diff_info {
    gr_trace t;
    uint64_t nrecs;
    int has_instr, knows_ut, has_continued;
    gr_launch launch;     /* a `python -m` launch (launch.h) */
} gr_diff_info;

/* Read the trace at path through to its end into *d (need not be
 * initialised).  Returns GR_READ_OK or an error status with d->t.err set.
 * gr_diff_info_free(d) in every case. */
int gr_diff_scan(gr_diff_info *d, const char *path);
void gr_diff_info_free(gr_diff_info *d);

/* Whether gr_diff_stream compares traces with options o (else load both
 * and use gr_diff): not with --ignore or --c-names script. */
int gr_diff_streamable(const gr_diff_opts *o);

/* gr_diff of the traces at path_a and path_b, scanned into a and b.
 * Returns 0 same structure, 1 different, 2 a trace that could not be read
 * again (message on stderr). */
int gr_diff_stream(FILE *out, const gr_diff_info *a, const char *path_a, const char *name_a,
                   const gr_diff_info *b, const char *path_b, const char *name_b,
                   const gr_diff_opts *o);

#endif
