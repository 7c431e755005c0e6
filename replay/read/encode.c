/* encode.c - encode definitions and indexed records into a writer (encode.h). */
#include "encode.h"

#include <string.h>

size_t gr_encode_record(uint8_t *out, const gr_record *r, const uint32_t *stack)
{
    return gr_encode_record_ctx(out, r, stack, NULL);
}

size_t gr_encode_record_ctx(uint8_t *out, const gr_record *r, const uint32_t *stack,
                            gr_chunk_ctx *ctx)
{
    uint8_t *p = out;
    int has_stack = 0;
    if (r->depth > GR_STACK_CAP)
        return 0;
    if (ctx && r->tid != 0) {
        if (r->tag >= GR_CALL && r->tag <= GR_C_EXCEPTION)
            return (size_t)(gr_enc_event(ctx, p, r->tag, r->tid, r->gid, r->code) - out);
        if (r->tag == GR_SWITCH || r->tag == GR_THROW) {
            uint64_t f[7] = {r->tid, r->gid, r->target, r->parent, r->flags, r->tracing,
                             r->use_tracing};
            p = gr_enc_switch_head(ctx, p, r->tag, f);
            p = gr_put_varint(p, r->depth);
            for (uint32_t i = 0; i < r->depth; i++)
                p = gr_put_varint(p, stack[i]);
            return (size_t)(p - out);
        }
    }
    /* A HOOK naming the program's profiler is the 1.3 form (§4.2). */
    int hook_prof = r->tag == GR_HOOK && (r->target || r->use_tracing);
    *p++ = hook_prof ? (uint8_t)GR_HOOK_PROF : r->tag;
    p = gr_put_varint(p, r->tid);
    switch (r->tag) {
    case GR_THREAD:
        break;
    case GR_GREENLET:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->parent);
        p = gr_put_varint(p, r->flags);
        has_stack = 1;
        break;
    case GR_CALL:
    case GR_RETURN:
    case GR_C_CALL:
    case GR_C_RETURN:
    case GR_C_EXCEPTION:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->code);
        break;
    case GR_SWITCH:
    case GR_THROW:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->target);
        p = gr_put_varint(p, r->parent);
        p = gr_put_varint(p, r->flags);
        p = gr_put_varint(p, r->tracing);
        p = gr_put_varint(p, r->use_tracing);
        has_stack = 1; /* format 1.1 */
        break;
    case GR_HOOK:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->flags);
        p = gr_put_varint(p, r->tracing);
        p = gr_put_varint(p, r->parent);
        p = gr_put_varint(p, r->code);
        if (hook_prof) {
            p = gr_put_varint(p, r->target);
            p = gr_put_varint(p, r->use_tracing);
        }
        break;
    case GR_MARK:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->label);
        p = gr_put_varint(p, r->code);
        p = gr_put_varint(p, r->flags);
        has_stack = 1;
        break;
    case GR_DEAD:
    case GR_START:
    case GR_STOP:
        p = gr_put_varint(p, r->gid);
        break;
    case GR_STACK:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->flags);
        has_stack = 1;
        break;
    case GR_INSTR:
        p = gr_put_varint(p, r->gid);
        p = gr_put_varint(p, r->tracing);
        p = gr_put_varint(p, r->parent);
        p = gr_put_varint(p, r->use_tracing);
        break;
    default:
        return 0;
    }
    if (has_stack) {
        p = gr_put_varint(p, r->depth);
        for (uint32_t i = 0; i < r->depth; i++)
            p = gr_put_varint(p, stack[i]);
    }
    return (size_t)(p - out);
}

int gr_emit_string(gr_writer *w, const void *s, size_t n)
{
    if (n > SIZE_MAX - 1 - GR_VARINT_MAX) {
        gr_writer_drop(w);
        return -1;
    }
    uint8_t *p = gr_writer_reserve(w, 1 + GR_VARINT_MAX + n);
    if (!p) {
        gr_writer_drop(w);
        return -1;
    }
    uint8_t *q = p;
    *q++ = GR_STRING;
    q = gr_put_varint(q, n);
    if (n)
        memcpy(q, s, n);
    gr_writer_commit(w, q + n);
    return 0;
}

int gr_emit_code(gr_writer *w, const gr_code *c)
{
    uint8_t buf[1 + 4 * GR_VARINT_MAX], *p = buf;
    *p++ = GR_CODE;
    p = gr_put_varint(p, c->kind);
    p = gr_put_varint(p, c->qualname);
    p = gr_put_varint(p, c->file);
    p = gr_put_varint(p, c->line);
    return gr_writer_append(w, buf, (size_t)(p - buf));
}

int gr_emit_profiler(gr_writer *w, const gr_profdef *pd)
{
    uint8_t buf[1 + 3 * GR_VARINT_MAX], *p = buf;
    *p++ = GR_PROFILER;
    p = gr_put_varint(p, pd->kind);
    p = gr_put_varint(p, pd->type);
    p = gr_put_varint(p, pd->code);
    return gr_writer_append(w, buf, (size_t)(p - buf));
}

int gr_emit_meta(gr_writer *w, uint32_t key, uint32_t value)
{
    uint8_t buf[1 + 2 * GR_VARINT_MAX], *p = buf;
    *p++ = GR_META;
    p = gr_put_varint(p, key);
    p = gr_put_varint(p, value);
    return gr_writer_append(w, buf, (size_t)(p - buf));
}

int gr_emit_gap(gr_writer *w, uint64_t n)
{
    uint8_t buf[1 + GR_VARINT_MAX], *p = buf;
    *p++ = GR_GAP;
    p = gr_put_varint(p, n);
    return gr_writer_append(w, buf, (size_t)(p - buf));
}

int gr_emit_record(gr_writer *w, const gr_record *r, const uint32_t *stack)
{
    /* The full form's size bounds the compact one's; reserve it first (a
     * flush starts a new chunk with a fresh context), then encode in place
     * against the chunk's context. */
    uint8_t buf[GR_RECORD_MAX];
    size_t n = gr_encode_record(buf, r, stack);
    if (n == 0) {
        gr_writer_drop(w);
        return -1;
    }
    uint8_t *p = gr_writer_reserve(w, n);
    if (!p) {
        gr_writer_drop(w);
        return -1;
    }
    gr_writer_commit(w, p + gr_encode_record_ctx(p, r, stack, &w->ctx));
    return 0;
}
