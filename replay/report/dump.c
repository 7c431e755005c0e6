/* dump.c - the text form of a trace (dump.h, docs/FORMAT.md §6). */
#include "dump.h"

#include "idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void put_string(gr_sb *sb, const gr_trace *t, uint64_t id, int quote)
{
    size_t n;
    const uint8_t *s = gr_trace_string(t, id, &n);
    if (!s) {
        gr_sb_printf(sb, "?string=%" PRIu64, id);
        return;
    }
    if (quote)
        gr_sb_putc(sb, '"');
    gr_sb_escape(sb, s, n, quote);
    if (quote)
        gr_sb_putc(sb, '"');
}

void gr_dump_code(gr_sb *sb, const gr_trace *t, uint64_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    if (!c) {
        gr_sb_printf(sb, "?code=%" PRIu64, code);
        return;
    }
    put_string(sb, t, c->qualname, 0);
    if (c->kind == GR_CODE_C)
        return;
    gr_sb_puts(sb, " (");
    if (c->file)
        put_string(sb, t, c->file, 0);
    else
        gr_sb_putc(sb, '?');
    gr_sb_printf(sb, ":%" PRIu64 ")", c->line);
}

void gr_dump_stack(gr_sb *sb, const gr_trace *t, const uint32_t *ids, size_t n)
{
    if (n == 0) {
        gr_sb_putc(sb, '-');
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            gr_sb_puts(sb, " > ");
        gr_dump_code(sb, t, ids[i]);
    }
}

/* "flags=a,b,0xNN" with the names of known bits, "-" when 0. */
static void put_flags(gr_sb *sb, uint64_t flags, const char *const names[], int nnames)
{
    gr_sb_puts(sb, " flags=");
    if (flags == 0) {
        gr_sb_putc(sb, '-');
        return;
    }
    int first = 1;
    for (int i = 0; i < nnames; i++) {
        if (flags & (UINT64_C(1) << i)) {
            gr_sb_printf(sb, "%s%s", first ? "" : ",", names[i]);
            first = 0;
        }
    }
    uint64_t rest = flags & ~((UINT64_C(1) << nnames) - 1);
    if (rest)
        gr_sb_printf(sb, "%s0x%" PRIx64, first ? "" : ",", rest);
}

static void put_gid(gr_sb *sb, const char *key, uint64_t gid)
{
    if (gid)
        gr_sb_printf(sb, " %s=g%" PRIu64, key, gid);
    else
        gr_sb_printf(sb, " %s=none", key);
}

static void put_stack(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids)
{
    gr_sb_printf(sb, " depth=%" PRIu32 " stack=", r->depth);
    gr_dump_stack(sb, t, ids, r->depth);
}

static const char *const greenlet_flags[] = {"main", "suspended", "cut"};
static const char *const mark_flags[] = {"cut", "ours", "state_known", "tracing_off", "in_callback"};
static const char *const stack_flags[] = {"running", "cut", "thread_ended"};

void gr_dump_record(gr_sb *sb, const gr_trace *t, const gr_record *r)
{
    gr_dump_record_ids(sb, t, r, r->depth ? gr_record_stack(t, r) : NULL);
}

void gr_dump_record_ids(gr_sb *sb, const gr_trace *t, const gr_record *r, const uint32_t *ids)
{
    const char *kind = gr_tag_name(r->tag);
    gr_sb_printf(sb, "%6" PRIu64 " %-11s t%" PRIu64, r->index, kind ? kind : "?", r->tid);
    switch (r->tag) {
    case GR_THREAD:
        break;
    case GR_GREENLET:
        gr_sb_printf(sb, " g%" PRIu64, r->gid);
        put_gid(sb, "parent", r->parent);
        put_flags(sb, r->flags, greenlet_flags, 3);
        put_stack(sb, t, r, ids);
        break;
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        gr_sb_printf(sb, " g%" PRIu64 " ", r->gid);
        gr_dump_code(sb, t, r->code);
        break;
    case GR_SWITCH:
    case GR_THROW: {
        gr_sb_printf(sb, " g%" PRIu64 "->g%" PRIu64, r->gid, r->target);
        put_gid(sb, "parent", r->parent);
        const char *prof = (r->flags & GR_SW_PROFILE_OURS)  ? "ours"
                           : (r->flags & GR_SW_PROFILE_SET) ? "other"
                                                            : "none";
        gr_sb_printf(sb, " prof=%s tracing=%" PRIu64, prof, r->tracing);
        if (r->flags & GR_SW_USE_TRACING_KNOWN)
            gr_sb_printf(sb, " use_tracing=%" PRIu64, r->use_tracing);
        else
            gr_sb_puts(sb, " use_tracing=n/a");
        if (r->flags & GR_SW_ORIGIN_DEAD)
            gr_sb_puts(sb, " origin_dead");
        if (r->flags & GR_SW_INFERRED)
            gr_sb_puts(sb, " inferred");
        if (r->flags & GR_SW_AT_MARK)
            gr_sb_puts(sb, " at_mark");
        if (r->flags & GR_SW_NEW)
            gr_sb_puts(sb, " new");
        if (r->flags & GR_SW_CUT)
            gr_sb_puts(sb, " cut");
        uint64_t rest = r->flags & ~UINT64_C(0x1ff);
        if (rest)
            gr_sb_printf(sb, " flags=0x%" PRIx64, rest);
        if (r->flags & GR_SW_REAL_STACK)
            put_stack(sb, t, r, ids);
        break;
    }
    case GR_HOOK: {
        static const char *const slots[] = {"?", "profile", "trace", "greenlet"};
        static const char *const actions[] = {"?", "set", "cleared", "restored"};
        if (r->flags == GR_HOOK_GREENLET) {
            /* the program's greenlet trace callback, and its code */
            gr_sb_printf(sb, " g%" PRIu64 " greenlet %s%s", r->gid,
                         actions[r->tracing < 4 ? r->tracing : 0],
                         (r->parent & GR_HOOK_CHAINED) ? " chained" : "");
            if (r->code) {
                gr_sb_puts(sb, " callback=");
                gr_dump_code(sb, t, r->code);
            }
            break;
        }
        gr_sb_printf(sb, " g%" PRIu64 " %s %s subject=%s%s%s", r->gid,
                     slots[r->flags < 4 ? r->flags : 0], actions[r->tracing < 4 ? r->tracing : 0],
                     (r->parent & GR_HOOK_SUBJECT_ON) ? "on" : "off",
                     (r->parent & GR_HOOK_CHAINED) ? " chained" : "",
                     (r->parent & GR_HOOK_UNANNOUNCED) ? " unannounced" : "");
        if (r->code) {
            gr_sb_puts(sb, " during=");
            gr_dump_code(sb, t, r->code);
        }
        break;
    }
    case GR_MARK:
        gr_sb_printf(sb, " g%" PRIu64 " ", r->gid);
        put_string(sb, t, r->label, 1);
        put_flags(sb, r->flags, mark_flags, 5);
        put_stack(sb, t, r, ids);
        break;
    case GR_DEAD:
    case GR_START:
    case GR_STOP:
        gr_sb_printf(sb, " g%" PRIu64, r->gid);
        break;
    case GR_STACK:
        gr_sb_printf(sb, " g%" PRIu64, r->gid);
        put_flags(sb, r->flags, stack_flags, 3);
        put_stack(sb, t, r, ids);
        break;
    case GR_INSTR:
        gr_sb_printf(sb, " g%" PRIu64 " version=%" PRIu64 " frames=%" PRIu64 " stale=%" PRIu64,
                     r->gid, r->tracing, r->parent, r->use_tracing);
        break;
    default:
        break;
    }
}

const char *gr_reason_name(uint64_t reason)
{
    switch (reason) {
    case GR_STOP_CALLED: return "stop";
    case GR_STOP_EXIT: return "exit";
    case GR_STOP_WRITE_ERROR: return "write-error";
    case GR_STOP_SIZE_CAP: return "size-cap";
    case GR_STOP_SNAPSHOT: return "snapshot";
    default: return NULL;
    }
}

/* Decimal digits of v into the end of buf[20]; returns the first. */
static char *digits(char *end, uint64_t v)
{
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

/* Rendered code names by code id (gr_dump_code), for dump's event lines. */
typedef struct names {
    gr_sb text;           /* every name rendered so far, back to back */
    size_t *at;           /* by code id: 1 + offset of its name, 0 not yet */
    uint32_t *len;
    size_t cap;
} names;

/* The line of an event record (CALL..C_EXCEPTION), as gr_dump_record
 * writes it, with the code's name from the cache. */
static void event_line(gr_sb *sb, const gr_trace *t, const gr_record *r, names *nm)
{
    char num[20], *end = num + sizeof num, *p;
    char line[128];
    size_t n = 0;
    const char *kind = gr_tag_name(r->tag);
    size_t kl = strlen(kind);
    p = digits(end, r->index);
    for (size_t k = (size_t)(end - p); k < 6; k++)
        line[n++] = ' ';
    memcpy(line + n, p, (size_t)(end - p));
    n += (size_t)(end - p);
    line[n++] = ' ';
    memcpy(line + n, kind, kl);
    n += kl;
    for (size_t k = kl; k < 11; k++)
        line[n++] = ' ';
    line[n++] = ' ';
    line[n++] = 't';
    p = digits(end, r->tid);
    memcpy(line + n, p, (size_t)(end - p));
    n += (size_t)(end - p);
    line[n++] = ' ';
    line[n++] = 'g';
    p = digits(end, r->gid);
    memcpy(line + n, p, (size_t)(end - p));
    n += (size_t)(end - p);
    line[n++] = ' ';
    gr_sb_put(sb, line, n);
    uint32_t code = r->code;
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
    }
    gr_sb_put(sb, nm->text.s + nm->at[code] - 1, nm->len[code]);
}

int gr_dump(FILE *out, const gr_trace *t, const gr_times *times)
{
    /* A loaded trace is only read (gr_dump_stream decodes no chunk of a
     * trace that is not streamed). */
    return gr_dump_stream(out, (gr_trace *)t, times);
}

int gr_dump_stream(FILE *out, gr_trace *t, const gr_times *times)
{
    /* Streamed: the header lines need the definitions before the first
     * record, so the first chunk that holds records is decoded first. */
    while (t->streaming && !t->nrecs && gr_trace_next_chunk(t) > 0)
        ;
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t i = 0; i < t->nmetas; i++) {
        gr_sb_puts(&sb, "# ");
        put_string(&sb, t, t->metas[i].key, 0);
        gr_sb_puts(&sb, ": ");
        put_string(&sb, t, t->metas[i].value, 0);
        gr_sb_putc(&sb, '\n');
    }
    if (t->gap)
        gr_sb_printf(&sb, "# ring: %" PRIu64 " earlier records dropped\n", t->gap);
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
    gr_sb_reset(&sb);
    for (;;) {
        for (size_t j = 0; j < t->nrecs; j++) {
            const gr_record *r = &t->recs[j];
            uint64_t i = r->index;
            if (r->tag >= GR_CALL && r->tag <= GR_C_EXCEPTION)
                event_line(&sb, t, r, &nm);
            else
                gr_dump_record(&sb, t, r);
            if (times) {
                if (i < times->n)
                    gr_sb_printf(&sb, " dt=%" PRIu64 "ns", times->dt[i]);
                else
                    gr_sb_puts(&sb, " dt=?");
                size_t k;
                if ((r->tag == GR_SWITCH || r->tag == GR_THROW) &&
                    gr_idmap_get(&waits, i, 0, &k)) {
                    const gr_switch_wait *w = &times->waits[k];
                    gr_sb_printf(&sb, " wait=%" PRIu64 "ns cb=%" PRIu64 "ns%s", w->wait_ns,
                                 w->callback_ns, w->contended ? " contended" : "");
                }
            }
            gr_sb_putc(&sb, '\n');
            if (sb.len >= 65536) { /* written in blocks */
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
    if (t->has_trailer) {
        const char *why = gr_reason_name(t->trailer.reason);
        gr_sb_printf(&sb, "# trailer: events=%" PRIu64 " dropped=%" PRIu64 " errors=%" PRIu64,
                     t->trailer.events, t->trailer.dropped, t->trailer.errors);
        if (why)
            gr_sb_printf(&sb, " reason=%s\n", why);
        else
            gr_sb_printf(&sb, " reason=%" PRIu64 "\n", t->trailer.reason);
    } else {
        gr_sb_printf(&sb, "# truncated at byte %" PRIu64 "\n", t->truncated_at);
    }
    fwrite(sb.s, 1, sb.len, out);
    gr_sb_free(&sb);
    gr_idmap_free(&waits);
    fflush(out);
    return ferror(out) ? -1 : 0;
}
