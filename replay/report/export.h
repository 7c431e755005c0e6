/* export.h - timeline export of a trace (`greenreplay export`): Chrome
 * Trace Event JSON (opened by Perfetto UI and chrome://tracing) and
 * speedscope's evented JSON format.
 *
 * Both forms are built from the same walk over the records, one track per
 * (thread, greenlet):
 *   - a GREENLET record opens its seed stack (frames the greenlet already
 *     had when first seen), CALL/C_CALL open a frame, RETURN/C_RETURN/
 *     C_EXCEPTION close the matching one.  A return that matches a deeper
 *     frame closes the frames above it too (their returns were lost); a
 *     return that matches no open frame ("return without call", e.g. CPython
 *     issue 122029, or a suspended greenlet's first c_return of `switch`) is
 *     left out of the slices and counted (Chrome: an instant event).  Frames
 *     still open at a DEAD record or at the end of the trace are closed
 *     there.  So slices always nest per track.
 *   - a greenlet's frames stay open while it is switched out: its track
 *     just pauses, the frames of the greenlet switched to go on that
 *     greenlet's own track.
 * Time: the side channel FILE.times (docs/FORMAT.md §5, ns since the
 * previous record) when given, else the record order, 1 us per record.
 * Records of the same clock reading are spread 1 ns apart so that their
 * order survives a viewer's sort by time.  Records past the end of a
 * shorter side channel get 1 us each.
 *
 * The merged view ("where the time went"): per thread, the time between a
 * record and the thread's next record goes to the stack of the greenlet
 * running there (the one of the record; a SWITCH/THROW's target), summed
 * over greenlets on a call tree whose root is the thread: greenlets that
 * run the same code share its nodes.  Its size grows with the distinct
 * stacks, not with the events.  Chrome: a CPU profile per thread ("Profile"
 * and "ProfileChunk" events, as Chrome's own performance traces carry it,
 * which is what speedscope opens a *.chrome.json file as); speedscope: an
 * evented profile per thread, children in the order first seen, a node's
 * own time after its children.
 *
 * Output is written as it is produced (no document tree in memory; the
 * speedscope events are kept per profile as compact text until the end).
 */
#ifndef GR_EXPORT_H
#define GR_EXPORT_H

#include "check.h"
#include "reader.h"

#include <stdio.h>

enum gr_export_format {
    GR_EXPORT_CHROME = 0, /* Chrome Trace Event JSON (array form) */
    GR_EXPORT_SPEEDSCOPE, /* speedscope file format, evented profiles */
};

enum gr_export_view {
    GR_EXPORT_ALL = 0,     /* the merged view per thread, then a track per greenlet */
    GR_EXPORT_MERGED,      /* the merged view only (small: distinct stacks) */
    GR_EXPORT_GREENLETS,   /* a track per greenlet only */
};

/* What one export produced (for the command's summary and for tests). */
typedef struct gr_export_stats {
    size_t tracks;        /* (thread, greenlet) tracks: Chrome tracks, speedscope
                             profiles (speedscope leaves out tracks with no frame) */
    size_t slices;        /* frames opened (seed frames included) */
    size_t closed_at_end; /* frames closed at a DEAD record or at the end */
    size_t unmatched;     /* returns that matched no open frame */
    size_t switches;      /* switches and throws (Chrome: one flow arrow each) */
    size_t marks;         /* MARK records (Chrome instant events) */
    size_t violations;    /* checker violations (Chrome: an instant event each) */
    size_t failing;       /* of violations, neither allowed nor advisory */
    size_t merged;        /* merged profiles (one per thread with time) */
    size_t nodes;         /* call tree nodes of the merged view */
    int timed;            /* timestamps came from the side channel */
} gr_export_stats;

/* Write trace t to out in format fmt.
 *   times: its side channel, or NULL to time records by their order.
 *   res: the checker's result for t (gr_check_run), or NULL; Chrome gets
 *        one instant event per violation, with the rule and message
 *        (speedscope has no place for them: only counted).
 *   source: the trace's name as shown in the output (metadata, profile
 *        names); NULL: t->name.
 *   st: filled with the counts above (may be NULL).
 * Returns 0, or -1 when writing to out failed (errno as left by stdio).
 * Exits(2) on out of memory (text.h). */
int gr_export(FILE *out, enum gr_export_format fmt, const gr_trace *t, const gr_times *times,
              const gr_check_result *res, const char *source, gr_export_stats *st);

/* gr_export with a choice of view (gr_export: GR_EXPORT_ALL). */
int gr_export_view(FILE *out, enum gr_export_format fmt, enum gr_export_view view,
                   const gr_trace *t, const gr_times *times, const gr_check_result *res,
                   const char *source, gr_export_stats *st);

/* Name of a track as both formats show it: "thread T greenlet G (run Q)",
 * "thread T greenlet G (main)", "thread T" for gid 0 (greenlet not
 * importable).  Q is the qualname of the greenlet's run: its outermost
 * seed frame, else its first CALL; "?" when it has neither. */

/* `greenreplay export`: argv[0] is "export".  Usage and exit status are in
 * gr_export_usage. */
int gr_cmd_export(int argc, char **argv);

/* The command's --help text. */
extern const char gr_export_usage[];

#endif
