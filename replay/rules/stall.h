/* stall.h - the sampler stall check (`greenreplay check --stall`): does a
 * greenlet sampler stall greenlet switches, and are its samples right?
 *
 * Input: a trace and its side channel with the reference sampler's data
 * (docs/FORMAT.md §5: 'W' per switch, 'P' per sample).  On top of the
 * checker's rules (check.h, whose shadow stacks it reuses) it checks three
 * rules (docs/RULES.md):
 *   - stall_wait: the longest wait of a switch for the sampler's registry
 *     lock exceeds a threshold (default GR_STALL_MAX_WAIT_NS);
 *   - stall_depth: a sample read frames while holding the lock
 *     (frames_under_lock > 0), so its hold time is O(greenlets x depth);
 *   - sample: a sampled stack of a suspended greenlet differs from its
 *     shadow stack after the records before the sample, and no switch of
 *     that greenlet happened while the sample was taken.
 * and gathers the figures of the report (gr_stall).  Pure: no I/O.
 */
#ifndef GR_STALL_H
#define GR_STALL_H

#include "check.h"
#include "reader.h"
#include "text.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Default stall_wait threshold: 1 ms (docs/RULES.md, stall_wait, says why). */
#define GR_STALL_MAX_WAIT_NS 1000000u

/* The reference sampler's depth cap (tracer/sampler.h GR_SAMPLE_DEPTH): a
 * sampled stack this deep may have lost its outermost frames. */
#define GR_STALL_SAMPLE_CAP 256

/* Rows of the hold-time table: samples ordered by frames read, cut into
 * at most this many groups of (nearly) equal size. */
#define GR_STALL_BUCKETS 4

/* One row of the hold-time table. */
typedef struct gr_stall_bucket {
    size_t samples;
    uint64_t frames_min, frames_max;
    uint64_t greenlets_min, greenlets_max;
    uint64_t hold_min, hold_median, hold_max; /* ns */
    uint64_t hold_sum, frames_sum, greenlets_sum; /* saturating */
} gr_stall_bucket;

/* Figures of one trace.  Sums saturate at UINT64_MAX.  Sample numbers are
 * 0-based positions in the side channel. */
typedef struct gr_stall {
    char *mode;               /* META `sampler`, escaped (owned), or NULL */
    char *interval_us;        /* META `sampler_interval_us`, escaped (owned), or NULL */
    uint64_t threshold_ns;    /* stall_wait threshold used */

    /* switches ('W') */
    size_t switches;
    uint64_t wait_max_ns, wait_max_index;   /* longest wait, its SWITCH index */
    uint64_t wait_sum_ns;
    size_t contended;                       /* acquisitions that found the lock busy */
    size_t over_threshold;                  /* waits above threshold_ns */
    uint64_t callback_max_ns, callback_max_index;

    /* samples ('P') */
    size_t samples;
    uint64_t hold_min_ns, hold_median_ns, hold_max_ns, hold_sum_ns;
    uint64_t greenlets_sum, frames_sum;
    uint64_t frames_under_lock_sum;
    size_t samples_under_lock;              /* samples with frames_under_lock > 0 */
    uint64_t failed_sum;                    /* failed reads (stale pointers) */
    uint64_t torn_sum;                      /* torn seqlock copies (retried) */
    int has_correlation;                    /* enough samples with varying values */
    double hold_frames_r;                   /* Pearson r of hold_ns and frames */
    gr_stall_bucket buckets[GR_STALL_BUCKETS];
    size_t nbuckets;

    /* sampled stacks */
    size_t stacks;            /* in all samples */
    size_t stacks_equal;      /* equal to the shadow's Python frames */
    size_t stacks_partial;    /* innermost part of the shadow, sample cut
                                 (failed read in that sample, or depth cap) */
    size_t stacks_torn;       /* differ, but the greenlet switched during the sample */
    size_t stacks_unknown;    /* hold code id 0: not compared */
    size_t stacks_mismatched; /* `sample` violations */
    size_t stacks_unusable;   /* refer to code ids or records the trace lacks */
    size_t stacks_not_compared; /* none was compared: all of them (stacks),
                                   for the reason below */
    const char *stacks_reason;  /* why the sampled stacks were not compared
                                   (static text: GR_STALL_NO_PROFILE), or
                                   NULL when they were */
} gr_stall;

/* stacks_reason of a trace recorded with start(profile=False) (META
 * profile: off): no profile events, so no shadow stacks to compare with. */
#define GR_STALL_NO_PROFILE "recorded without the profile function, profile=False"

/* Check trace t against its side channel tm, which must hold sampler
 * data (gr_times_has_sampler).  max_wait_ns is the stall_wait threshold.
 * Fills *st and *res (neither need be initialised): res gets the
 * checker's rules and the stall rules (res->nrules = GR_NRULES), warnings
 * when the side channel does not fit the trace, and res->summary (the
 * text of gr_stall_summary).  Exits(2) on out of memory.  Returns the
 * number of violations.  Free with gr_stall_free and
 * gr_check_result_free. */
size_t gr_stall_run(const gr_trace *t, const gr_times *tm, uint64_t max_wait_ns, gr_stall *st,
                    gr_check_result *res);

/* The one-line reason (owned) why side channel tm, read from path, cannot
 * serve check --stall: its read error (with a hint when it could not be
 * opened), or no sampler data; NULL when it can. */
char *gr_stall_side_error(const gr_times *tm, const char *path);

/* Outcome of gr_stall_stream. */
enum gr_stall_stream_status {
    GR_STALL_DONE = 0,       /* checked: *res, *st, *nv */
    GR_STALL_SIDE_UNUSABLE,  /* the side channel: *err (owned), one line */
    GR_STALL_TRACE_CORRUPT,  /* the trace turned out corrupt part way: t->err */
    GR_STALL_UNORDERED,      /* 'W' entries or samples out of index order: check
                                with gr_times_load + gr_stall_run instead */
};

/* gr_stall_run on a trace read one chunk at a time: t opened with
 * gr_trace_open (no chunk read yet), side the path of its side channel.
 * Same verdicts, figures, warnings and violation order as gr_stall_run,
 * with the context lines kept in the violations (gr_violation.ctx_line).
 * Two passes over the side channel: the first keeps the figures and the
 * samples' headers (about 100 bytes per sample), the second reads the
 * 'W' entries (matched with the SWITCH/THROW records) and the samples'
 * stacks one chunk at a time alongside the trace.  Peak memory: the
 * checker's (gr_check_stream), one trace chunk, two side-channel chunks,
 * the sample headers, and the stacks of samples whose window
 * [idx_begin - 1, idx_end] is still open (one sample's, normally).  A
 * sampled code id is checked against the codes defined up to the chunk of
 * the sample's idx_begin.  Returns an enum gr_stall_stream_status; on
 * anything but GR_STALL_DONE, *st and *res are released and zeroed.
 * Exits(2) on out of memory. */
int gr_stall_stream(gr_trace *t, const char *side, uint64_t max_wait_ns, gr_stall *st,
                    gr_check_result *res, size_t *nv, char **err);

/* Append the figures of *st as text lines (each ending in a newline):
 * sampler mode and interval, waits per switch, holds per sample with a
 * table of hold against greenlets and frames, frames read under the lock,
 * failed reads, torn copies, and the outcome of the sampled stacks
 * ("sampled stacks: N: N equal, ...", or "sampled stacks: N, not compared
 * (REASON)" when st->stacks_reason is set). */
void gr_stall_summary(gr_sb *sb, const gr_stall *st);

/* The figures as a JSON object (new reference): see docs/RULES.md, "Stall check". */
json_t *gr_stall_json(const gr_stall *st);

/* Release what *st owns and zero it. */
void gr_stall_free(gr_stall *st);

#endif
