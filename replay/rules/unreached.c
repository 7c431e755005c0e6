/* unreached.c - the unreached rule: threads no profiler reached.
 *
 * The recorder follows the threads a profiler installed with
 * threading.setprofile would: those threading.Thread.start starts.  A
 * thread started with _thread.start_new_thread directly (gevent's thread
 * pool before 20.12, eventlet's tpool through its private copy of
 * threading) runs Python code that no such profiler sees, and the trace
 * has no event of it at all.  The recorder counts those starts per call
 * site and writes them at stop (META threads_unreached = "COUNT CODE LINE
 * VIA", docs/FORMAT.md section 3).  Each site is one unreached violation:
 *   2 threads ran Python code no profiler saw: started by
 *   start_pool (app.py:10) at line 14 via _thread.start_new_thread
 * A mark() inside such a thread is flagged by blind_spot.c as well; this
 * rule needs no mark.
 */
#include "rule.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void finish(ck *c)
{
    const gr_trace *t = c->t;
    static const char key[] = "threads_unreached";
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t kl, vl;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &kl);
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &vl);
        if (!k || !v || kl != sizeof key - 1 || memcmp(k, key, kl) != 0)
            continue;
        char buf[256], via[128];
        if (vl >= sizeof buf)
            vl = sizeof buf - 1;
        memcpy(buf, v, vl);
        buf[vl] = '\0';
        uint64_t count = 0;
        uint32_t code = 0, line = 0;
        if (sscanf(buf, "%" SCNu64 " %" SCNu32 " %" SCNu32 " %127s", &count, &code, &line, via) != 4 || !count)
            continue; /* untrusted input: a value that does not parse says nothing */
        gr_sb_printf(&c->msg, "%" PRIu64 " thread%s ran Python code no profiler saw: started by ", count,
                     count == 1 ? "" : "s");
        if (code && gr_trace_code(t, code))
            ck_code_name(c, code);
        else
            gr_sb_puts(&c->msg, "code not named in the trace");
        gr_sb_printf(&c->msg, " at line %" PRIu32 " via %s (a profiler installed with threading.setprofile never "
                     "reaches a thread not started by threading.Thread.start%s)", line, via,
                     strcmp(via, "threading.Thread.start(copy)") == 0
                         ? "; this Thread.start is a copy of the threading module's, not sys.modules[\"threading\"]'s"
                         : "");
        ck_violate_lines(c, GR_RULE_UNREACHED, c->stop.stopped ? c->stop.stop_index : 0, 0, 0, NULL, 0, NULL, NULL);
        /* known only from the METAs written at stop (split.h) */
        c->res->v[c->res->nv - 1].of_whole = 1;
    }
}

const gr_rule_ops gr_rule_unreached = {
    .id = GR_RULE_UNREACHED,
    .kinds = GR_KIND(GR_STOP),
    .finish = finish,
};
