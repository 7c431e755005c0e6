/* html.h - the HTML report of `greenreplay check --html FILE`: one
 * self-contained page (inline CSS, no script, no network) for all traces
 * checked.
 *
 * Per trace: the counts per rule, warnings and informational notes; each
 * violation with its rule, message and context records, and, for every
 * greenlet of its thread, the shadow stack the checker had rebuilt just
 * before the violating record and the greenlet's last known real stack (its
 * latest GREENLET seed, MARK or STACK record up to and including the
 * violating record, linked); a section per greenlet (thread, run, first
 * record, the violations that concern it); and the records cited, each
 * once, as the targets of the links.  Anchors: `fF-vN` (violation N of
 * trace F, 0-based), `fF-gG` (greenlet G), `fF-rI` (record I).
 *
 * At most GR_HTML_MAX_VIOLATIONS violations per trace are shown in detail,
 * GR_HTML_MAX_GREENLETS greenlets per violation (the violation's own
 * first), and GR_HTML_MAX_GREENLET_ROWS rows in the greenlet section (the
 * first seen, and every greenlet a shown violation concerns); the page
 * says how many were left out.
 */
#ifndef GR_HTML_H
#define GR_HTML_H

#include "check.h"
#include "reader.h"
#include "text.h"

#define GR_HTML_MAX_VIOLATIONS 200
#define GR_HTML_MAX_GREENLETS 32
#define GR_HTML_MAX_GREENLET_ROWS 1000 /* rows of the greenlet section */

/* A report being built.  Zero-initialise or gr_html_init. */
typedef struct gr_html {
    gr_sb body;        /* sections, one per trace */
    gr_sb toc;         /* the summary table's rows */
    size_t ntraces, nviolations, nunusable;
    size_t nfailing;      /* of nviolations, neither allowed nor advisory */
} gr_html;

void gr_html_init(gr_html *h);

/* Add trace t and its result r (gr_check_run or gr_stall_run on a loaded
 * t; gr_check_stream or gr_stall_stream on a streamed one, which is then
 * read again from its file t->name, one chunk at a time).  Replays t once
 * more with a gr_checker to get the shadow stacks at each violation.
 * Streamed, it reads the file three times (greenlet names; violations with
 * the checker; the records cited) and keeps, besides the checker's state
 * and one chunk, a small record per greenlet and the last real stack of
 * each greenlet not yet dead (a dead greenlet's row links its last real
 * stack's record instead of listing it). */
void gr_html_add_trace(gr_html *h, const gr_trace *t, const gr_check_result *r);

/* Add a file that could not be read; error is the one-line message. */
void gr_html_add_unusable(gr_html *h, const char *file, const char *error);

/* Write the whole page to path.  Returns 0, or -1 with errno set. */
int gr_html_write(const gr_html *h, const char *path);

/* Release h's memory. */
void gr_html_free(gr_html *h);

#endif
