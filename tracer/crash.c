/* crash.c - a program that dies by a fatal signal leaves its records.
 *
 * The recorder writes whole chunks (64 KiB by default), so a short program
 * that crashed (SIGSEGV in an extension, abort() on a failed assertion)
 * used to leave an empty trace: nothing to reproduce from.  While a
 * recording to a file runs, a handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE
 * and SIGABRT writes the buffered records and a trailer with reason
 * "crash" and the signal's number (docs/FORMAT.md section 2), then hands
 * the signal on as if the handler were not there: to the handler the
 * program had before (faulthandler's, the program's own, with the same
 * siginfo), or, for the default action, by restoring it and raising the
 * signal again, so the process still dies by that signal (exit status,
 * core dump).  Only async-signal-safe calls: write(2), fallocate(2),
 * sigaction(2), raise(3) and zlib's crc32; no allocation, no Python, no
 * compression (the last chunk is written uncompressed).
 *
 * Ring mode keeps its records in memory and writes the file through
 * allocation and rename(2), which a signal handler cannot do: it is left
 * out (its trace stays the last snapshot, as before).
 */
#include "recorder.h"
#include "writer.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NFATAL (sizeof fatal_signals / sizeof fatal_signals[0])

static struct sigaction previous[NFATAL];
static int installed;
static volatile sig_atomic_t sealing;

static void on_fatal(int sig, siginfo_t *info, void *ctx)
{
    int saved_errno = errno;
    size_t k = 0;
    while (k < NFATAL && fatal_signals[k] != sig)
        k++;
    gr_recorder *r = gr_active;
    if (r && !sealing && r->w && r->w == r->out.dw && !r->w->memory && !r->w->sealed) {
        sealing = 1;
        gr_writer *w = r->w;
        /* zstd may allocate: the records buffered now go uncompressed (a
         * chunk says which it is, docs/FORMAT.md section 2.1). */
        w->z.on = 0;
        /* The side channel's chunks in this file, then the records. */
        if (r->samp.ww)
            gr_writer_flush(r->samp.ww);
        if (r->samp.pw)
            gr_writer_flush(r->samp.pw);
        gr_writer_flush(w);
        uint64_t trailer[6] = {w->indexed_written, w->dropped, r->errors, GR_STOP_SIGNAL,
                               r->out.replaced, (uint64_t)sig};
        gr_writer_seal(w, trailer, 6);
        if (r->tw)
            gr_writer_flush(r->tw);
        sealing = 0;
    }
    if (k < NFATAL) {
        const struct sigaction *p = &previous[k];
        if (p->sa_flags & SA_SIGINFO) {
            if (p->sa_sigaction) {
                p->sa_sigaction(sig, info, ctx);
                errno = saved_errno;
                return;
            }
        } else if (p->sa_handler == SIG_IGN) {
            errno = saved_errno;
            return;
        } else if (p->sa_handler != SIG_DFL) {
            p->sa_handler(sig);
            errno = saved_errno;
            return;
        }
        /* The default action: as without this handler.  The signal stays
         * blocked until the handler returns; a fault then repeats. */
        sigaction(sig, p, NULL);
        raise(sig);
    }
    errno = saved_errno;
}

void gr_crash_install(void)
{
    if (installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* faulthandler's alternate stack, if any */
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < NFATAL; k++)
        if (sigaction(fatal_signals[k], &sa, &previous[k]) < 0)
            previous[k].sa_handler = SIG_DFL;
    installed = 1;
}

void gr_crash_remove(void)
{
    if (!installed)
        return;
    for (size_t k = 0; k < NFATAL; k++) {
        struct sigaction cur;
        /* Only where ours is still the handler: one installed over it
         * (faulthandler.enable() after start) chains to ours, which then
         * passes the signal on. */
        if (sigaction(fatal_signals[k], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_fatal)
            sigaction(fatal_signals[k], &previous[k], NULL);
    }
    installed = 0;
}
