/* unwind.c - GIL-free reader of suspended greenlets' stacks (see unwind.h). */
#define GR_COMPAT_FRAMES 1
#define _GNU_SOURCE 1
#include "compat.h"
#include "unwind.h"

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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

/* Read and check the object header: ob_type must be `type`. */
static int read_object(void *buf, uintptr_t addr, size_t n, uintptr_t type, gr_unwind_stats *st)
{
    st->reads++;
    if (gr_safe_read(buf, addr, n) < 0) {
        st->failed++;
        return -1;
    }
    uintptr_t ob_type;
    memcpy(&ob_type, (char *)buf + offsetof(PyObject, ob_type), sizeof ob_type);
    if (ob_type != type) {
        st->failed++;
        return -1;
    }
    return 0;
}

/* A code object's header, to check its type. */
static int is_code(uintptr_t addr, gr_unwind_stats *st)
{
    PyObject head;
    return read_object(&head, addr, sizeof head, code_type, st) == 0;
}

static uintptr_t field(const unsigned char *buf, size_t off)
{
    uintptr_t v;
    memcpy(&v, buf + off, sizeof v);
    return v;
}

int gr_unwind(uintptr_t frame, uintptr_t *codes, int max, gr_unwind_stats *st)
{
    unsigned char fo[512], ifr[512];
    if (layout.fo_size > sizeof fo || layout.if_size > sizeof ifr)
        return -1;
    if (read_object(fo, frame, layout.fo_size, frame_type, st) < 0)
        return -1;
    int n = 0;
    if (!layout.interp_frames) {
        /* 3.9/3.10: PyFrameObject chain. */
        for (;;) {
            uintptr_t code = field(fo, layout.fo_code);
            if (!is_code(code, st))
                break;
            if (n == max)
                break;
            codes[n++] = code;
            uintptr_t back = field(fo, layout.fo_back);
            if (!back || read_object(fo, back, layout.fo_size, frame_type, st) < 0)
                break;
        }
        return n;
    }
    /* 3.11+: _PyInterpreterFrame chain from f_frame. */
    uintptr_t cur = field(fo, layout.fo_frame);
    for (int hops = 0; cur && hops < 4 * max; hops++) {
        st->reads++;
        if (gr_safe_read(ifr, cur, layout.if_size) < 0) {
            st->failed++;
            break;
        }
        unsigned char owner = ifr[layout.if_owner];
        uintptr_t code = field(ifr, layout.if_code) & layout.code_mask;
        if (!layout.shim_owner || owner < layout.shim_owner) {
            if (!is_code(code, st))
                break;
            if (n == max)
                break;
            codes[n++] = code;
        }
        cur = field(ifr, layout.if_previous);
    }
    return n;
}
