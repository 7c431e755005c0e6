/* dump.c - the text form of a trace (dump.h, docs/FORMAT.md §6). */
#include "dump.h"

#include "idmap.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- appending without printf ------------------------------------------
 * Every line is built with these: room for n more bytes is made once, the
 * bytes are stored, and the buffer stays NUL-terminated (text.h). */

/* Room for n more bytes (and the NUL) at the end of sb. */
static inline char *room(gr_sb *sb, size_t n)
{
    if (sb->cap - sb->len <= n) {
        /* an impossible size: gr_xgrow exits (out of memory) */
        size_t need = n > SIZE_MAX / 2 - sb->len ? SIZE_MAX : sb->len + n + 1;
        sb->s = gr_xgrow(sb->s, &sb->cap, need, 1);
    }
    return sb->s + sb->len;
}

static inline void put_mem(gr_sb *sb, const char *s, size_t n)
{
    char *p = room(sb, n);
    memcpy(p, s, n);
    sb->len += n;
    p[n] = '\0';
}

/* A string literal. */
#define PUT_LIT(sb, lit) put_mem((sb), (lit), sizeof(lit) - 1)

static inline void put_cstr(gr_sb *sb, const char *s)
{
    put_mem(sb, s, strlen(s));
}

static inline void put_ch(gr_sb *sb, char c)
{
    char *p = room(sb, 1);
    p[0] = c;
    p[1] = '\0';
    sb->len++;
}

/* "00" "01" ... "99". */
static const char two_digits[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                 "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                 "8081828384858687888990919293949596979899";

/* Number of decimal digits of v. */
static inline size_t ndigits(uint64_t v)
{
    static const uint64_t pow10[20] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
        10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
        100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull};
    /* log10 from the bit length (1233/4096 ~ log10(2)), corrected once */
    unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);
    unsigned g = (bits * 1233u) >> 12;
    return (size_t)g + 1 - ((v | 1) < pow10[g]);
}

/* The decimal digits of v, ending just before end (two at a time). */
static inline void digits_before(char *end, uint64_t v)
{
    while (v >= 100) {
        size_t i = (size_t)(v % 100) * 2;
        v /= 100;
        *--end = two_digits[i + 1];
        *--end = two_digits[i];
    }
    if (v >= 10) {
        *--end = two_digits[v * 2 + 1];
        *--end = two_digits[v * 2];
    } else {
        *--end = (char)('0' + v);
    }
}


/* v in decimal, right-aligned in `width` columns (printf "%*" PRIu64). */
static inline void put_uw(gr_sb *sb, uint64_t v, size_t width)
{
    size_t n = ndigits(v), pad = n < width ? width - n : 0;
    char *p = room(sb, pad + n);
    for (size_t k = 0; k < pad; k++)
        p[k] = ' ';
    digits_before(p + pad + n, v);
    sb->len += pad + n;
    p[pad + n] = '\0';
}

/* v in decimal (printf "%" PRIu64). */
static inline void put_u(gr_sb *sb, uint64_t v)
{
    put_uw(sb, v, 0);
}

/* Literal `key` then v in decimal: " g" 12 -> " g12". */
static inline void put_ku(gr_sb *sb, const char *key, size_t klen, uint64_t v)
{
    size_t n = ndigits(v);
    char *p = room(sb, klen + n);
    memcpy(p, key, klen);
    digits_before(p + klen + n, v);
    sb->len += klen + n;
    p[klen + n] = '\0';
}
#define PUT_KU(sb, lit, v) put_ku((sb), (lit), sizeof(lit) - 1, (v))

/* v in lowercase hexadecimal (printf "%" PRIx64). */
static void put_hex(gr_sb *sb, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char num[16], *end = num + sizeof num, *d = end;
    do
        *--d = hex[v & 15];
    while (v >>= 4);
    put_mem(sb, d, (size_t)(end - d));
}

/* ---- record lines -------------------------------------------------------- */

static void put_string(gr_sb *sb, const gr_trace *t, uint64_t id, int quote)
{
    size_t n;
    const uint8_t *s = gr_trace_string(t, id, &n);
    if (!s) {
        PUT_KU(sb, "?string=", id);
        return;
    }
    if (quote)
        put_ch(sb, '"');
    gr_sb_escape(sb, s, n, quote);
    if (quote)
        put_ch(sb, '"');
}

void gr_dump_code(gr_sb *sb, const gr_trace *t, uint64_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    if (!c) {
        PUT_KU(sb, "?code=", code);
        return;
    }
    put_string(sb, t, c->qualname, 0);
    if (c->kind == GR_CODE_C)
        return;
    PUT_LIT(sb, " (");
    if (c->file)
        put_string(sb, t, c->file, 0);
    else
        put_ch(sb, '?');
    PUT_KU(sb, ":", c->line);
    put_ch(sb, ')');
}

#define NAME_SLACK 16 /* names are copied 16 bytes at a time */
#define KIND_COL 12

/* Rendered code names by code id (gr_dump_code), for dump's lines: each
 * name is rendered once. */
typedef struct names {
    gr_sb text;           /* every name rendered so far, back to back, with
                             NAME_SLACK bytes of room after the last */
    size_t *at;           /* by code id: 1 + offset of its name, 0 not yet */
    uint32_t *len;
    size_t cap;
    char kind[256][KIND_COL]; /* by tag: " KIND" padded to 12 columns
                                 (" %-11s" of gr_tag_name, "?" unknown) */
    uint8_t kind_long[256];   /* its name needs more columns: not in kind[] */
} names;

/* gr_dump_code of code, from nm when given. */
static void put_code(gr_sb *sb, const gr_trace *t, uint32_t code, names *nm)
{
    if (!nm) {
        gr_dump_code(sb, t, code);
        return;
    }
    if (code >= nm->cap) {
        size_t old = nm->cap, cap = old;
        nm->at = gr_xgrow(nm->at, &cap, (size_t)code + 1, sizeof *nm->at);
        nm->len = gr_xrealloc(nm->len, cap * sizeof *nm->len);
        memset(nm->at + old, 0, (cap - old) * sizeof *nm->at);
        nm->cap = cap;
    }
    if (!nm->at[code]) {
        size_t off = nm->text.len;
        gr_dump_code(&nm->text, t, code);
        nm->at[code] = off + 1;
        nm->len[code] = (uint32_t)(nm->text.len - off);
        memset(room(&nm->text, NAME_SLACK), 0, NAME_SLACK); /* readable slack */
    }
    /* Copied in blocks of 16 bytes (both buffers have the room): no
     * library call for a name of a few dozen bytes. */
    size_t n = nm->len[code];
    const char *src = nm->text.s + nm->at[code] - 1;
    char *p = room(sb, n + NAME_SLACK);
    for (size_t k = 0; k < n; k += NAME_SLACK)
        memcpy(p + k, src + k, NAME_SLACK);
    sb->len += n;
    p[n] = '\0';
}

static void put_codes(gr_sb *sb, const gr_trace *t, const uint32_t *ids, size_t n, names *nm)
{
    if (n == 0) {
        put_ch(sb, '-');
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            PUT_LIT(sb, " > ");
        put_code(sb, t, ids[i], nm);
    }
}

void gr_dump_stack(gr_sb *sb, const gr_trace *t, const uint32_t *ids, size_t n)
{
    put_codes(sb, t, ids, n, NULL);
}

/* "flags=a,b,0xNN" with the names of known bits, "-" when 0. */
static void put_flags(gr_sb *sb, uint64_t flags, const char *const bits[], int nnames)
{
    PUT_LIT(sb, " flags=");
    if (flags == 0) {
        put_ch(sb, '-');
        return;
    }
    int first = 1;
    for (int i = 0; i < nnames; i++) {
        if (flags & (UINT64_C(1) << i)) {
            if (!first)
                put_ch(sb, ',');
            put_cstr(sb, bits[i]);
            first = 0;
        }
    }
    uint64_t rest = flags & ~((UINT64_C(1) << nnames) - 1);
    if (rest) {
        if (!first)
            put_ch(sb, ',');
        PUT_LIT(sb, "0x");
        put_hex(sb, rest);
    }
}

static void put_gid(gr_sb *sb, const char *key, uint64_t gid)
{
    put_ch(sb, ' ');
    put_cstr(sb, key);
    if (gid)
        PUT_KU(sb, "=g", gid);
    else
        PUT_LIT(sb, "=none");
}

static void put_stack(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids,
                      names *nm)
{
    PUT_KU(sb, " depth=", r->depth);
    PUT_LIT(sb, " stack=");
    put_codes(sb, t, ids, r->depth, nm);
}

static const char *const greenlet_flags[] = {"main", "suspended", "cut"};
static const char *const mark_flags[] = {"cut", "ours", "state_known", "tracing_off", "in_callback"};
static const char *const stack_flags[] = {"running", "cut", "thread_ended"};

void gr_dump_record(gr_sb *sb, const gr_trace *t, const gr_record *r)
{
    gr_dump_record_ids(sb, t, r, r->depth ? gr_record_stack(t, r) : NULL);
}

/* The line of record r (stack ids at ids), code names from nm when given. */
/* A SWITCH or THROW record's fields after the thread. */
static void switch_fields(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids, names *nm)
{
    PUT_KU(sb, " g", r->gid);
    PUT_KU(sb, "->g", r->target);
    put_gid(sb, "parent", r->parent);
    if (r->flags & GR_SW_PROFILE_OURS)
        PUT_LIT(sb, " prof=ours");
    else if (r->flags & GR_SW_PROFILE_SET)
        PUT_LIT(sb, " prof=other");
    else
        PUT_LIT(sb, " prof=none");
    PUT_KU(sb, " tracing=", r->tracing);
    if (r->flags & GR_SW_USE_TRACING_KNOWN)
        PUT_KU(sb, " use_tracing=", r->use_tracing);
    else
        PUT_LIT(sb, " use_tracing=n/a");
    if (r->flags & GR_SW_ORIGIN_DEAD)
        PUT_LIT(sb, " origin_dead");
    if (r->flags & GR_SW_INFERRED)
        PUT_LIT(sb, " inferred");
    if (r->flags & GR_SW_AT_MARK)
        PUT_LIT(sb, " at_mark");
    if (r->flags & GR_SW_NEW)
        PUT_LIT(sb, " new");
    if (r->flags & GR_SW_CUT)
        PUT_LIT(sb, " cut");
    if (r->flags & GR_SW_CONTINUED)
        PUT_LIT(sb, " continued");
    if (r->flags & GR_SW_UNSEEN)
        PUT_LIT(sb, " unseen");
    uint64_t rest = r->flags & ~UINT64_C(0x7ff);
    if (rest) {
        PUT_LIT(sb, " flags=0x");
        put_hex(sb, rest);
    }
    if (r->flags & GR_SW_REAL_STACK)
        put_stack(sb, t, r, ids, nm);
}

/* A HOOK record's fields after the thread. */
static void hook_fields(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids, names *nm)
{
    (void)ids;
    static const char *const slots[] = {"?", "profile", "trace", "greenlet"};
    static const char *const actions[] = {"?", "set", "cleared", "restored"};
    if (r->flags == GR_HOOK_GREENLET) {
        /* the program's greenlet trace callback, and its code */
        PUT_KU(sb, " g", r->gid);
        PUT_LIT(sb, " greenlet ");
        put_cstr(sb, actions[r->tracing < 4 ? r->tracing : 0]);
        if (r->parent & GR_HOOK_CHAINED)
            PUT_LIT(sb, " chained");
        if (r->code) {
            PUT_LIT(sb, " callback=");
            put_code(sb, t, r->code, nm);
        }
        return;
    }
    PUT_KU(sb, " g", r->gid);
    put_ch(sb, ' ');
    put_cstr(sb, slots[r->flags < 4 ? r->flags : 0]);
    put_ch(sb, ' ');
    put_cstr(sb, actions[r->tracing < 4 ? r->tracing : 0]);
    if (r->parent & GR_HOOK_SUBJECT_ON)
        PUT_LIT(sb, " subject=on");
    else
        PUT_LIT(sb, " subject=off");
    if (r->parent & GR_HOOK_CHAINED)
        PUT_LIT(sb, " chained");
    if (r->parent & GR_HOOK_UNANNOUNCED)
        PUT_LIT(sb, " unannounced");
    if (r->parent & GR_HOOK_RAN)
        PUT_LIT(sb, " ran");
    if (r->parent & GR_HOOK_IN_TRACE)
        PUT_LIT(sb, " in-trace");
    if (r->parent & GR_HOOK_BEFORE)
        PUT_LIT(sb, " before");
    if (r->parent & GR_HOOK_BY_OTHER)
        PUT_KU(sb, " by=t", r->parent >> GR_HOOK_BY_SHIFT);
    if (r->code) {
        PUT_LIT(sb, " during=");
        put_code(sb, t, r->code, nm);
    }
    if (r->target && r->target <= t->nprofilers) {
        /* format 1.3: the program's profiler installed or removed */
        const gr_profdef *pd = &t->profilers[r->target];
        PUT_KU(sb, " profiler=P", r->target);
        put_ch(sb, ' ');
        put_cstr(sb, gr_profiler_kind_name(pd->kind));
        if (pd->type) {
            put_ch(sb, ' ');
            put_string(sb, t, pd->type, 0);
        }
        if (pd->code) {
            PUT_LIT(sb, " code=");
            put_code(sb, t, pd->code, nm);
        }
    }
    if (r->use_tracing) {
        PUT_LIT(sb, " frame=");
        put_code(sb, t, (uint32_t)r->use_tracing, nm);
    }
}

static void record_line(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids,
                        names *nm)
{
    put_uw(sb, r->index, 6); /* "%6" PRIu64 " %-11s t%" PRIu64 */
    if (nm && !nm->kind_long[r->tag]) {
        memcpy(room(sb, KIND_COL), nm->kind[r->tag], KIND_COL);
        sb->len += KIND_COL;
    } else {
        const char *kind = gr_tag_name(r->tag);
        if (!kind)
            kind = "?";
        size_t kl = strlen(kind);
        char *p = room(sb, KIND_COL + kl);
        p[0] = ' ';
        memcpy(p + 1, kind, kl);
        size_t n = 1 + kl;
        while (n < KIND_COL)
            p[n++] = ' ';
        sb->len += n;
    }
    PUT_KU(sb, " t", r->tid);
    switch (r->tag) {
    case GR_THREAD:
        break;
    case GR_GREENLET:
        PUT_KU(sb, " g", r->gid);
        put_gid(sb, "parent", r->parent);
        put_flags(sb, r->flags, greenlet_flags, 3);
        put_stack(sb, t, r, ids, nm);
        break;
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        PUT_KU(sb, " g", r->gid);
        put_ch(sb, ' ');
        put_code(sb, t, r->code, nm);
        break;
    case GR_SWITCH:
    case GR_THROW:
        switch_fields(sb, t, r, ids, nm);
        break;
    case GR_HOOK:
        hook_fields(sb, t, r, ids, nm);
        break;
    case GR_MARK:
        PUT_KU(sb, " g", r->gid);
        put_ch(sb, ' ');
        put_string(sb, t, r->label, 1);
        put_flags(sb, r->flags, mark_flags, 5);
        put_stack(sb, t, r, ids, nm);
        break;
    case GR_DEAD:
    case GR_START:
    case GR_STOP:
        PUT_KU(sb, " g", r->gid);
        break;
    case GR_STACK:
        PUT_KU(sb, " g", r->gid);
        put_flags(sb, r->flags, stack_flags, 3);
        put_stack(sb, t, r, ids, nm);
        break;
    case GR_INSTR:
        PUT_KU(sb, " g", r->gid);
        PUT_KU(sb, " version=", r->tracing);
        PUT_KU(sb, " frames=", r->parent);
        PUT_KU(sb, " stale=", r->use_tracing);
        break;
    default:
        break;
    }
}

void gr_dump_record_ids(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids)
{
    record_line(sb, t, r, ids, NULL);
}

const char *gr_reason_name(uint64_t reason)
{
    switch (reason) {
    case GR_STOP_CALLED: return "stop";
    case GR_STOP_EXIT: return "exit";
    case GR_STOP_WRITE_ERROR: return "write-error";
    case GR_STOP_SIZE_CAP: return "size-cap";
    case GR_STOP_SNAPSHOT: return "snapshot";
    case GR_STOP_SIGNAL: return "crash";
    default: return NULL;
    }
}

/* Bytes of text gathered before each write. */
#define DUMP_BLOCK (256 * 1024)
/* Records decoded per batch of a streamed trace (gr_trace_set_batch). */
#define DUMP_BATCH 4096

/* The META lines of definitions [from, to) of t, `# KEY: VALUE`. */
static void put_metas(gr_sb *sb, const gr_trace *t, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        size_t kn;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &kn);
        if (k && kn == 9 && memcmp(k, "generator", 9) == 0)
            continue; /* a fact about a code identity (FORMAT §3), not
                         about the run: not in the text form */
        gr_sb_puts(sb, "# ");
        put_string(sb, t, t->metas[i].key, 0);
        gr_sb_puts(sb, ": ");
        put_string(sb, t, t->metas[i].value, 0);
        gr_sb_putc(sb, '\n');
    }
}

int gr_dump(FILE *out, const gr_trace *t, const gr_times *times)
{
    /* A loaded trace is only read (gr_dump_stream decodes no chunk of a
     * trace that is not streamed). */
    return gr_dump_stream(out, (gr_trace *)t, times);
}

/* The side channel streamed for dump --times (gr_dump_stream_times): one
 * reader for the 'T' deltas, one for the 'W' entries (in record order). */
typedef struct side_cursor {
    gr_times td, tw;
    int tdone, wdone;
    size_t wi;            /* next entry of tw.waits */
    int bad;              /* a reader failed (the file changed meanwhile) */
} side_cursor;

/* Delta of indexed record i (i never decreases between calls): 1 and *dt,
 * or 0 when the side channel has no entry for it. */
static int side_dt(side_cursor *c, uint64_t i, uint64_t *dt)
{
    while (!c->tdone && i >= c->td.first_dt + c->td.ndt) {
        int k = gr_times_next_chunk(&c->td);
        if (k <= 0) {
            c->tdone = 1;
            c->bad |= k < 0;
        }
    }
    if (i < c->td.first_dt || i >= c->td.first_dt + c->td.ndt)
        return 0;
    *dt = c->td.dt[i - c->td.first_dt];
    return 1;
}

/* The first 'W' entry of record i (i never decreases), or NULL. */
static const gr_switch_wait *side_wait(side_cursor *c, uint64_t i)
{
    for (;;) {
        if (c->wi < c->tw.nwaits) {
            const gr_switch_wait *w = &c->tw.waits[c->wi];
            if (w->index < i) {
                c->wi++;
                continue;
            }
            return w->index == i ? w : NULL;
        }
        if (c->wdone)
            return NULL;
        int k = gr_times_next_chunk(&c->tw);
        if (k <= 0) {
            c->wdone = 1;
            c->bad |= k < 0;
        } else if (c->tw.last_tag == GR_CHUNK_SWITCHES) {
            c->wi = 0;
        } else if (c->tw.minor < GR_SIDE_MINOR && c->tw.last_tag == GR_CHUNK_SAMPLES) {
            c->wdone = 1; /* before 1.3, no 'W' chunk follows a 'P' one */
        }
    }
}

static int dump_impl(FILE *out, gr_trace *t, const gr_times *times, side_cursor *sc);

int gr_dump_stream(FILE *out, gr_trace *t, const gr_times *times)
{
    return dump_impl(out, t, times, NULL);
}

int gr_dump_stream_times(FILE *out, gr_trace *t, const char *side, char **err)
{
    *err = NULL;
    /* First pass: usable, and are the 'W' entries in record order? */
    gr_times pre;
    int rc = gr_times_open(&pre, side), ordered = 1;
    uint64_t last = 0;
    while (rc == GR_READ_OK) {
        int k = gr_times_next_chunk(&pre);
        if (k < 0)
            rc = pre.err.status;
        if (k <= 0)
            break;
        for (size_t i = 0; pre.last_tag == GR_CHUNK_SWITCHES && i < pre.nwaits; i++) {
            if (pre.waits[i].index < last)
                ordered = 0;
            last = pre.waits[i].index;
        }
    }
    if (rc != GR_READ_OK) {
        *err = strdup(pre.err.msg);
        gr_times_free(&pre);
        return -3;
    }
    gr_times_free(&pre);
    if (!ordered) {
        gr_times tm;
        if (gr_times_load(&tm, side) != GR_READ_OK) {
            *err = strdup(tm.err.msg);
            gr_times_free(&tm);
            return -3;
        }
        rc = dump_impl(out, t, &tm, NULL);
        gr_times_free(&tm);
        return rc;
    }
    side_cursor sc;
    memset(&sc, 0, sizeof sc);
    if (gr_times_open(&sc.td, side) != GR_READ_OK || gr_times_open(&sc.tw, side) != GR_READ_OK)
        sc.bad = 1;
    else
        rc = dump_impl(out, t, NULL, &sc);
    if (sc.bad && rc != -2) {
        const gr_times *b = sc.td.err.status ? &sc.td : &sc.tw;
        gr_sb sb;
        gr_sb_init(&sb);
        gr_sb_puts(&sb, b->err.status ? b->err.msg : side);
        gr_sb_puts(&sb, " (the side channel changed while it was read?)");
        *err = gr_sb_take(&sb);
        rc = -3;
    }
    gr_times_free(&sc.td);
    gr_times_free(&sc.tw);
    return rc;
}

static int dump_impl(FILE *out, gr_trace *t, const gr_times *times, side_cursor *sc)
{
    /* Streamed: the header lines need the definitions before the first
     * record, so chunks are decoded up to the first one that holds
     * records; then batches of records that stay in the cache (reader.h). */
    while (t->streaming && !t->nrecs && gr_trace_next_chunk(t) > 0)
        ;
    if (t->streaming && !t->io.batch)
        gr_trace_set_batch(t, DUMP_BATCH);
    /* The header's META lines are those defined before the first indexed
     * record (all of them are read by now); those after it (the recorder
     * writes some at stop) go before the final line, whether the trace is
     * loaded or streamed and wherever its chunks end (§6.1). */
    size_t head = 0;
    while (head < t->nmetas && t->metas[head].at == 0)
        head++;
    gr_sb sb;
    gr_sb_init(&sb);
    put_metas(&sb, t, 0, head);
    if (t->gap_defs.head)
        gr_sb_printf(&sb, "# ring: %" PRIu64 " earlier records dropped\n", t->gap_defs.head);
    fwrite(sb.s ? sb.s : "", 1, sb.len, out);
    /* Sampler switch entries by record index (first entry wins). */
    gr_idmap waits = {0};
    for (size_t k = 0; times && k < times->nwaits; k++) {
        size_t have;
        if (!gr_idmap_get(&waits, times->waits[k].index, 0, &have))
            gr_idmap_put(&waits, times->waits[k].index, 0, k);
    }
    names nm;
    memset(&nm, 0, sizeof nm);
    gr_sb_init(&nm.text);
    memset(room(&nm.text, NAME_SLACK), 0, NAME_SLACK);
    for (unsigned tag = 0; tag < 256; tag++) {
        const char *kind = gr_tag_name((int)tag);
        size_t kl = kind ? strlen(kind) : 1;
        memset(nm.kind[tag], ' ', KIND_COL);
        if (kl < KIND_COL)
            memcpy(nm.kind[tag] + 1, kind ? kind : "?", kl);
        else
            nm.kind_long[tag] = 1;
    }
    gr_sb_reset(&sb);
    for (;;) {
        for (size_t j = 0; j < t->nrecs; j++) {
            const gr_record *r = &t->recs[j];
            uint64_t i = r->index;
            record_line(&sb, t, r, r->depth ? gr_record_stack(t, r) : NULL, &nm);
            if (times || sc) {
                uint64_t dt = 0;
                int have = times ? i < times->n && (dt = times->dt[i], 1) : side_dt(sc, i, &dt);
                if (have) {
                    PUT_KU(&sb, " dt=", dt);
                    PUT_LIT(&sb, "ns");
                } else {
                    PUT_LIT(&sb, " dt=?");
                }
                size_t k;
                const gr_switch_wait *w = NULL;
                if (r->tag == GR_SWITCH || r->tag == GR_THROW)
                    w = times ? (gr_idmap_get(&waits, i, 0, &k) ? &times->waits[k] : NULL)
                              : side_wait(sc, i);
                if (w) {
                    PUT_KU(&sb, " wait=", w->wait_ns);
                    PUT_KU(&sb, "ns cb=", w->callback_ns);
                    PUT_LIT(&sb, "ns");
                    if (w->contended)
                        PUT_LIT(&sb, " contended");
                }
            }
            put_ch(&sb, '\n');
            if (sb.len >= DUMP_BLOCK) { /* written in large blocks */
                fwrite(sb.s, 1, sb.len, out);
                gr_sb_reset(&sb);
            }
        }
        if (!t->streaming || gr_trace_next_chunk(t) <= 0)
            break;
    }
    fwrite(sb.s ? sb.s : "", 1, sb.len, out);
    gr_sb_free(&nm.text);
    free(nm.at);
    free(nm.len);
    gr_sb_reset(&sb);
    if (t->err.status) { /* a streamed trace that turned out corrupt */
        gr_sb_free(&sb);
        gr_idmap_free(&waits);
        fflush(out);
        return -2;
    }
    /* META lines defined after the first indexed record (the recorder
     * writes sampler_untracked_greenlets and continued_verified at stop),
     * in file order, before the final line. */
    put_metas(&sb, t, head, t->nmetas);
    if (t->gap > t->gap_defs.head) /* GAPs after a record: not as the recorder writes them */
        gr_sb_printf(&sb, "# ring: %" PRIu64 " more records dropped after the first record\n",
                     t->gap - t->gap_defs.head);
    if (t->has_trailer) {
        const char *why = gr_reason_name(t->trailer.reason);
        gr_sb_printf(&sb, "# trailer: events=%" PRIu64 " dropped=%" PRIu64 " errors=%" PRIu64,
                     t->trailer.events, t->trailer.dropped, t->trailer.errors);
        if (t->trailer.replaced)
            gr_sb_printf(&sb, " replaced=%" PRIu64, t->trailer.replaced);
        if (why)
            gr_sb_printf(&sb, " reason=%s\n", why);
        else
            gr_sb_printf(&sb, " reason=%" PRIu64 "\n", t->trailer.reason);
    } else {
        gr_sb_puts(&sb, "# truncated: ");
        gr_report_cut_where(&sb, t);
        gr_sb_putc(&sb, '\n');
    }
    fwrite(sb.s, 1, sb.len, out);
    gr_sb_free(&sb);
    gr_idmap_free(&waits);
    fflush(out);
    return ferror(out) ? -1 : 0;
}
