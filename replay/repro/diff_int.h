/* diff_int.h - the parts of `greenreplay diff` shared by its two drivers:
 * diff.c (both traces loaded whole, aligned globally) and diff_stream.c
 * (both traces read one batch of records at a time).  Internal to
 * replay/repro: the token of a record (diff.h), the interner that turns
 * token texts into small integers, and the report written from an edit
 * script (diff_align.h). */
#ifndef GR_DIFF_INT_H
#define GR_DIFF_INT_H

#include "diff.h"
#include "diff_align.h"
#include "diff_ignore.h"
#include "idmap.h"
#include "launch.h"
#include "script_shape.h"
#include "text.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Token texts -> ids 0, 1, ... in order of first sight. */
typedef struct gr_interner {
    gr_idmap map;   /* (hash, len) -> first id with that key; chained by next[] */
    char **str;
    size_t *len;
    uint32_t *next; /* next id with the same key + 1, 0 none */
    size_t n, cap, cap_len, cap_next;
} gr_interner;

uint32_t gr_intern(gr_interner *in, const char *s, size_t n);
void gr_interner_free(gr_interner *in);
uint64_t gr_diff_fnv(const char *p, size_t n);

struct cshadow;

#define GR_DIFF_RANKS 3

/* One trace being tokenized. */
typedef struct gr_diff_side {
    const gr_trace *t;
    uint8_t *keep;     /* [nrecs] record compared (loaded traces) */
    size_t *idx;       /* kept record indices (loaded traces) */
    uint32_t *tok;     /* their tokens (loaded traces) */
    size_t n;          /* tokens */
    size_t ignored[GR_IGNORE_COUNT];
    gr_shape shape;    /* --c-names script */
    int has_shape;
    gr_idmap granks, tranks, qranks, lranks;
    uint64_t ng, nt, nq, nl;
    int has_instr, knows_ut;
    /* Continued switches (cshadow_*): set when the trace has one; the
     * Python stack per (thread, greenlet) as its records give it, kept
     * up to the record being tokenized. */
    int has_continued;
    gr_idmap cmap;
    struct cshadow *csh;
    size_t ncsh, cap_csh;
    /* --c-names script: where recording started (top_start_of).  top_seed:
     * the GREENLET record of the greenlet that called start(), whose seed
     * is compared without greenreplay's own frames; top_skip: the record
     * not compared (the RETURN of start(), or the CALL of the program's
     * <module> that a whole-program recording starts with); top_module:
     * that <module>'s code, compared as the seed's frame.  GR_NONE: n/a. */
    size_t top_seed, top_skip, top_module;
    /* --c-names script: the RETURN of the module thread's <module> (exit_of;
     * GR_NONE: none), and how many records of that thread after it are not
     * compared (interpreter exit, which a script does not reproduce). */
    size_t exit_at, exit_skipped;
    uint64_t exit_tid;
    /* A program run with -m (launch.h): runpy's launch frames are left out
     * of every stack, and the records returning from them are not
     * compared (launch_skipped of them), so that the trace compares with
     * one of the program run as a file, or of its script. */
    gr_launch launch;
    size_t launch_skipped;
    /* Set by the streamed diff: each greenlet's order of first sight in a
     * token text is written "g#" and kept in ranks[] instead (at most
     * GR_DIFF_RANKS of them; a SWITCH names three), so that the text,
     * interned, stays one per structure and not one per greenlet. */
    int placeholders, nranks;
    uint64_t ranks[GR_DIFF_RANKS];
} gr_diff_side;

/* The order of first sight of greenlet (tid, gid) in s (made if new). */
uint64_t gr_diff_grank(gr_diff_side *s, uint64_t tid, uint64_t gid);

typedef struct gr_diff_ctx {
    const gr_diff_opts *o;
    int cmp_instr, cmp_ut;
    gr_interner in;
} gr_diff_ctx;

/* The token text of record r, number i of side s (appended to sb); 0 if
 * the record is not compared.  Records are tokenized in order; call
 * gr_diff_cshadow_apply after each record (compared or not) when
 * s->has_continued. */
int gr_diff_token(gr_diff_ctx *c, gr_diff_side *s, const gr_record *r, size_t i, gr_sb *sb);
void gr_diff_cshadow_apply(gr_diff_side *s, const gr_record *r);

/* Release what gr_diff_side owns (not its trace). */
void gr_diff_side_free(gr_diff_side *s);

/* What the report says of one side. */
typedef struct gr_diff_sum {
    const gr_trace *t;   /* metas, truncation, trailer, gap */
    const char *name;    /* label in the header */
    uint64_t nrecs;      /* records in the trace */
    const gr_diff_side *s; /* n, ignored, exit_skipped, launch_skipped,
                              has_instr, knows_ut */
} gr_diff_sum;

/* Where the report finds records by their position among the compared
 * ones (side 0: A, 1: B). */
typedef struct gr_diff_src {
    /* record index of position p (the trace's record count past the end) */
    uint64_t (*rec_at)(void *priv, int side, size_t p);
    /* write sign, the dump line of position p's record and a newline */
    void (*line)(void *priv, FILE *out, char sign, int side, size_t p);
    /* append " tT gG in A|B: STACK" for position p's record (its
     * greenlet's stack just before it), nothing past the end */
    void (*first)(void *priv, int side, size_t p, gr_sb *hdr);
    void *priv;
} gr_diff_src;

/* Write the report of diff.h from the edit script runs[0..nruns) (owned
 * by the caller, may be shortened in place) and return 0 or 1 as
 * gr_diff. */
int gr_diff_report(FILE *out, const gr_diff_ctx *c, const gr_diff_sum *a, const gr_diff_sum *b,
                   gr_edit *runs, size_t nruns, int exhausted, const gr_diff_src *src);

/* The shadow stack text of shadow_before (qualnames, " > ", innermost six
 * entries) of the n code ids at st. */
void gr_diff_stack_text(const gr_trace *t, const uint32_t *st, size_t n, gr_sb *out);

/* The default alignment work limit. */
#define GR_DIFF_DEFAULT_BUDGET 200000000ull

#endif
