/* unwind.c - GIL-free reader of suspended greenlets' stacks (see unwind.h). */
#define GR_COMPAT_FRAMES 1
#define _GNU_SOURCE 1
#include "compat.h"
#include "unwind.h"

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Elements per process_vm_readv call (Linux's UIO_MAXIOV). */
#define BATCH 1024
/* Bytes read per region: enough for the frame layouts and an object head. */
#define REGION 128

static gr_frame_layout layout;
static uintptr_t frame_type, code_type;
static pid_t self_pid;

void gr_unwind_init(void)
{
    gr_frame_layout_get(&layout);
    frame_type = (uintptr_t)&PyFrame_Type;
    code_type = (uintptr_t)&PyCode_Type;
    self_pid = getpid();
}

int gr_safe_read(void *dst, uintptr_t addr, size_t n)
{
    if (!addr)
        return -1;
    struct iovec local = {dst, n}, remote = {(void *)addr, n};
    ssize_t k = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
    return k == (ssize_t)n ? 0 : -1;
}

static uintptr_t field(const unsigned char *buf, size_t off)
{
    uintptr_t v;
    memcpy(&v, buf + off, sizeof v);
    return v;
}

/* Read regions remote[i] (len[i] bytes each) into bufs[i]; ok[i] tells
 * which were read.  process_vm_readv stops at the first element it cannot
 * read (partial transfers are whole elements), so the rest is retried. */
static void read_batch(struct iovec *local, struct iovec *remote, size_t n, unsigned char *ok,
                       gr_unwind_stats *st)
{
    size_t i = 0;
    while (i < n) {
        size_t m = n - i < BATCH ? n - i : BATCH;
        st->reads++;
        ssize_t got = process_vm_readv(self_pid, local + i, m, remote + i, m, 0);
        size_t done = 0, acc = 0;
        while (got > 0 && done < m && acc + local[i + done].iov_len <= (size_t)got) {
            acc += local[i + done].iov_len;
            ok[i + done] = 1;
            done++;
        }
        if (done < m)
            ok[i + done++] = 0; /* the element that failed */
        i += done;
    }
}

/* Scratch for one round, static: only the sampler thread unwinds. */
static struct iovec loc[BATCH * 4], rem[BATCH * 4];
static unsigned char buf[BATCH * 4][REGION];
static unsigned char ok[BATCH * 4];
static size_t who[BATCH * 4];

static void end_job(gr_unwind_job *j, gr_unwind_stats *st, int failed)
{
    if (failed) {
        st->failed++;
        if (j->depth == 0 && j->stage == 0)
            j->depth = -1;
    }
    j->stage = 2;
}

uint64_t gr_unwind_many(gr_unwind_job *jobs, size_t n, gr_unwind_stats *st)
{
    uint64_t frames = 0;
    size_t fo_len = layout.fo_size < REGION ? layout.fo_size : REGION;
    size_t if_len = layout.if_size < REGION ? layout.if_size : REGION;
    for (size_t i = 0; i < n; i++) {
        jobs[i].depth = 0;
        jobs[i].next = jobs[i].frame;
        jobs[i].stage = jobs[i].frame ? 0 : 2;
        if (!jobs[i].frame)
            jobs[i].depth = -1;
    }
    for (size_t base = 0; base < n; base += BATCH) {
        size_t end = base + BATCH < n ? base + BATCH : n;
        for (;;) {
            /* Round, part 1: the next frame (object or interpreter frame)
             * of every stack still going. */
            size_t k = 0;
            for (size_t i = base; i < end; i++) {
                gr_unwind_job *j = &jobs[i];
                if (j->stage == 2)
                    continue;
                if (j->depth >= j->max || !j->next) {
                    end_job(j, st, 0);
                    continue;
                }
                size_t len = j->stage == 0 ? fo_len : if_len;
                loc[k] = (struct iovec){buf[k], len};
                rem[k] = (struct iovec){(void *)j->next, len};
                who[k++] = i;
            }
            if (!k)
                break;
            read_batch(loc, rem, k, ok, st);
            /* Part 2: decode; collect the code objects to type-check. */
            size_t c = 0;
            for (size_t x = 0; x < k; x++) {
                gr_unwind_job *j = &jobs[who[x]];
                j->code = 0;
                if (!ok[x]) {
                    end_job(j, st, 1);
                    continue;
                }
                const unsigned char *b = buf[x];
                if (j->stage == 0) {
                    if (field(b, offsetof(PyObject, ob_type)) != frame_type) {
                        end_job(j, st, 1);
                        continue;
                    }
                    if (layout.interp_frames) {
                        /* 3.11+: continue in the interpreter frame. */
                        j->next = field(b, layout.fo_frame);
                        j->stage = 1;
                        continue;
                    }
                    j->code = field(b, layout.fo_code);
                    j->next = field(b, layout.fo_back);
                } else {
                    unsigned char owner = b[layout.if_owner];
                    j->next = field(b, layout.if_previous);
                    if (layout.shim_owner && owner >= layout.shim_owner)
                        continue; /* a C-stack entry frame, not Python */
                    j->code = field(b, layout.if_code) & layout.code_mask;
                }
                loc[BATCH * 2 + c] = (struct iovec){buf[BATCH * 2 + c], sizeof(PyObject)};
                rem[BATCH * 2 + c] = (struct iovec){(void *)j->code, sizeof(PyObject)};
                who[BATCH * 2 + c++] = who[x];
            }
            if (!c)
                continue;
            /* Part 3: the code objects must be code objects. */
            read_batch(loc + BATCH * 2, rem + BATCH * 2, c, ok + BATCH * 2, st);
            for (size_t x = 0; x < c; x++) {
                gr_unwind_job *j = &jobs[who[BATCH * 2 + x]];
                if (!ok[BATCH * 2 + x] ||
                    field(buf[BATCH * 2 + x], offsetof(PyObject, ob_type)) != code_type) {
                    end_job(j, st, 1);
                    continue;
                }
                if (j->codes)
                    j->codes[j->depth] = j->code;
                j->depth++;
                frames++;
            }
        }
    }
    return frames;
}
