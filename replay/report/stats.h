/* stats.h - event counts of a trace (`greenreplay stats`): per record kind,
 * per thread and per greenlet, as a text table or JSON.
 */
#ifndef GR_STATS_H
#define GR_STATS_H

#include "reader.h"

#include <stdint.h>
#include <stdio.h>

#define GR_NKINDS (GR_LAST_INDEXED - GR_FIRST_INDEXED + 1)

/* Counts for one thread or greenlet. */
typedef struct gr_stats_row {
    uint64_t id;               /* tid or gid */
    uint64_t tid;              /* greenlets: thread of its first record */
    uint64_t total;            /* records attributed to it */
    uint64_t kinds[GR_NKINDS]; /* by kind, index tag - GR_FIRST_INDEXED */
    uint64_t first;            /* index of its first record (a greenlet
                                  counted again after its DEAD has a second
                                  row: the rows are added up, the first
                                  one's tid kept) */
} gr_stats_row;

/* The rows of greenlets that died, written to a temporary file by
 * gr_stats_stream (stats.c). */
typedef struct gr_stats_spill gr_stats_spill;

/* Counts of a whole trace.  A record counts for its tid's thread and its
 * gid's greenlet; SWITCH/THROW count for the target greenlet (they are
 * written in it), THREAD for no greenlet. */
typedef struct gr_stats {
    uint64_t total;
    uint64_t kinds[GR_NKINDS];
    gr_stats_row *threads;   /* owned, sorted by tid */
    size_t nthreads;
    gr_stats_row *greenlets; /* owned, sorted by gid, one per greenlet;
                                after gr_stats_stream, only those the
                                spill does not hold */
    size_t ngreenlets;
    gr_stats_spill *spill;   /* owned: gr_stats_stream's rows of greenlets
                                that died, in sorted runs of a temporary
                                file, which the printers merge with
                                `greenlets` in gid order; NULL when none */
    uint64_t chunks;         /* records chunks ('E'), counted by
                                gr_stats_stream from a trace just opened
                                (the chunk indices of `check --from/--to`
                                are 0..chunks-1); 0 when not counted */
} gr_stats;

/* Count the records of t into *s (need not be initialised).  Exits(2) on
 * out of memory.  Free with gr_stats_free. */
void gr_stats_compute(const gr_trace *t, gr_stats *s);

/* Same for a trace being streamed (gr_trace_open): the chunks not read yet
 * are read and counted; memory is one chunk, one row per thread and per
 * live greenlet, and a run of GR_STATS_RUN rows: the rows of greenlets
 * that died (their DEAD record) go to a temporary file in sorted runs of
 * that many (in memory when no temporary file can be made).  A loaded
 * trace is counted likewise.  Returns 0, or -1 when the trace turned out
 * corrupt (t->err; *s holds what was counted before). */
#define GR_STATS_RUN 16384
int gr_stats_stream(gr_trace *t, gr_stats *s);

/* Release what *s owns and zero it. */
void gr_stats_free(gr_stats *s);

/* Write the text tables.  Returns 0, or -1 if writing failed. */
int gr_stats_print_text(FILE *out, const gr_trace *t, const gr_stats *s);

/* Write the JSON form: one object with file, records, trailer,
 * truncated_at, kinds, threads and greenlets (each with its kinds).  Returns 0, or
 * -1 if writing failed. */
int gr_stats_print_json(FILE *out, const gr_trace *t, const gr_stats *s);

#endif
