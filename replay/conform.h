/* conform.h - compare a profiler's own results with the ground truth of the
 * recording it ran under (`greenreplay conform`, docs/conform.md).
 *
 * Ground truth, per Python function and per greenlet, comes from the trace:
 *   - the CALL records the recorder wrote (calls it saw);
 *   - real stacks, where the recorder may have been blind: MARK stacks,
 *     SWITCH/THROW records carrying the target's real stack (state bit 8,
 *     docs/FORMAT.md section 4) and STACK records at stop.  A function that
 *     occurs k times in one such stack, above the greenlet's seed (frames it
 *     had when first seen), ran at least k times in that greenlet: the
 *     truth for the greenlet is max(calls seen, largest such k).
 * C functions (results "c_functions"): the C_CALL records whose caller (the
 * top Python frame of the greenlet's shadow, rebuilt from CALL/RETURN) is
 * a function under the root; the profiler must count at least as many.
 * Only Python code under the recording root is compared (file names that
 * are relative in the trace), minus the program's `<module>` (its call
 * precedes the profiler's start), the files the results exclude (the
 * adapter's own) and, when the results say "threads": "starting", every
 * thread but the one that started recording (which also started the
 * profiler).  The recorder's own frames are under `<greenreplay>/` and so
 * never compared.
 *
 * When the program starts the profiler itself (`# conform-start: manual`,
 * greenreplay.conform.start_profiler()), the harness writes a MARK labelled
 * GR_CONFORM_MARK_START before it starts and GR_CONFORM_MARK_STOP after it
 * stops: only CALL records between the two count, and real stacks are not
 * used (their frames may have been called before the profiler started).
 * The MARK GR_CONFORM_MARK_FINISH, written at exit before the profiler
 * stops, ends the program: after it only GREENLET, HOOK and STACK (at stop)
 * records are read: the program's code may still run during the harness's
 * work then (a finaliser, another thread), unseen by the stopped profiler;
 * calls until GR_CONFORM_MARK_STOPPED are kept apart (the profiler may
 * have seen them); on the other threads, the calls in progress at the
 * finish MARK and the one their last RETURN ended may have been missed by
 * the stopping profiler (a note when they cover a shortfall).  A HOOK there
 * that shows the profile function changed unannounced on the finish MARK's
 * own thread, when the MARK showed the recorder in place, is the
 * profiler's stop, not a displaced recorder.
 *
 * A HOOK "set" of the starting thread's profile function at the adapter's
 * start (before the program ran, or under the harness's frames) shows the
 * profiler under test is that profile function; a later one during the
 * program's call of sys.setprofile, cProfile's enable() or
 * sys._setprofileallthreads displaced it: the comparison is then an error
 * ("unsupported: the program installs its own profiler at ...").
 *
 * Per-record logic is in gr_conform_feed, which takes one decoded record:
 * it works the same over a streaming reader.
 */
#ifndef GR_CONFORM_H
#define GR_CONFORM_H

#include "reader.h"
#include "text.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define GR_CONFORM_MARK_START "greenreplay-conform: start"
#define GR_CONFORM_MARK_STOP "greenreplay-conform: stop"
/* Written at exit before the profiler stops: without GR_MARK_PROFILE_OURS
 * the profiler displaced the recorder unseen on that thread. */
#define GR_CONFORM_MARK_FINISH "greenreplay-conform: finish"
/* Written at exit right after the harness stopped the profiler.  CALL
 * records between the finish MARK and this one may or may not have been
 * counted by the profiler (it was stopping: a finaliser, an audit hook its
 * stop raises, another thread): an excess up to them is a note, not a
 * difference.  Without this MARK the window runs to the end. */
#define GR_CONFORM_MARK_STOPPED "greenreplay-conform: profiler stopped"

/* Ground truth accumulated from the records fed so far (opaque). */
typedef struct gr_conform gr_conform;

/* A new, empty accumulator (never NULL: exits(2) on out of memory).
 * Free with gr_conform_free. */
gr_conform *gr_conform_new(void);

/* Release c and everything it owns.  NULL is accepted. */
void gr_conform_free(gr_conform *c);

/* Account for one decoded indexed record r of trace t (records in index
 * order; t is used only to read r's stack).  Never fails. */
void gr_conform_feed(gr_conform *c, const gr_trace *t, const gr_record *r);

/* Outcome of a comparison. */
enum gr_conform_verdict {
    GR_CONFORM_PASS = 0,  /* the profiler agrees with the truth */
    GR_CONFORM_FAIL = 1,  /* at least one difference */
    GR_CONFORM_ERROR = 2, /* results unusable, or nothing to compare */
};

/* Compare the adapter's normalised results (the results file of
 * greenreplay/conform.py, schema 1: "functions", "lines", "line_hits",
 * "code", "threads", "generator_calls", "exclude_files") with the truth in
 * c, whose code and string ids are those of trace t ("unmeasured" too).
 *
 * Returns the verdict.  *differences receives a new JSON array (owned by
 * the caller, json_decref) of objects {kind, function ("file:qualname"),
 * line, greenlet (a string when the calls ran in one greenlet, else a
 * list), truth, profiler, message}; kinds: "blind_spot" (the profiler
 * counts fewer calls than ran, or fewer hits of a function's first line),
 * "miscount" (more calls than ran; a C function named by its qualname,
 * line 0, only ever as a blind_spot), "primitive_calls" (the totals
 * agree, the calls made while the function had no frame in its greenlet's
 * stack do not: results "primitive"), "caller_calls" (the calls on one
 * caller->callee edge differ: results "callers"), "missing_lines" (a
 * function that ran has no executed line of its body; with results
 * "reference", the reference line tracer's run, a body line it ran that
 * the profiler lacks), "extra_lines" (a body line reported that the
 * reference never ran, or of a function the recording never saw run),
 * "no_such_line" (a line number outside its file: results "file_lines").
 * What was compared and what not goes into results as "compared" and
 * "not_compared" (arrays of strings).  *notes receives a new array of the
 * same objects, kind "unverified": an excess count while, on a thread
 * compared other than the starting one, the program installed its own
 * profile function (HOOK action 1): a profiler that writes another thread's
 * state directly (yappi) raises no audit event and may displace the
 * recorder there unseen; an excess no larger than the calls made while the
 * harness was stopping the profiler (between the finish MARK and
 * GR_CONFORM_MARK_STOPPED), also "unverified"; and kind "limitation" (truth: its calls,
 * profiler: 0): a function that ran and that the results list in
 * "unmeasured" ([{file, line, name, reason}]: the profiler cannot measure
 * it apart, e.g. line_profiler's twins of identical bytecode); such a
 * function is not checked.  Notes do not change the verdict.
 * Generators and coroutines, when the results say "generator_calls":
 * "starts" (the profiler counts a call once, the recording each
 * resumption), are only checked for 0 calls and for excess.
 * *checked: the functions compared.  On GR_CONFORM_ERROR, reason (n bytes)
 * holds one line naming the cause; otherwise it is set to "".  It is an
 * error too when the MARK GR_CONFORM_MARK_FINISH shows that the recorder
 * was no longer the profile function of its thread (a profiler that writes
 * the thread state directly, without the audit event, displaced it): the
 * recording then holds no ground truth for what followed; and when the
 * program installed its own profile function where the profiler under
 * test was the starting thread's (reason "unsupported: ..."). */
int gr_conform_compare(const gr_conform *c, const gr_trace *t, json_t *results, json_t **differences,
                       json_t **notes, size_t *checked, char *reason, size_t n);

/* Whether a call of code id was in progress in a greenlet when it switched
 * out (its frame on that greenlet's stack). */
int gr_conform_spans(const gr_conform *c, uint32_t code);

/* The program installs profilers of its own on the thread of the profiler
 * under test (which it displaces), and the adapter read back each of
 * them (results "program_profilers": [{id, functions}], "adapter_profiler":
 * the id of the adapter's own): compare each profiler's counts per
 * function under the root with what the rule attribution says the
 * recording delivered to it (its owner's calls and other greenlets') and
 * what its owner made (docs/conform.md).  displaced: where the program
 * installs its first profiler (text).  Differences (appended) are
 * "blind_spot"/"miscount" (cause "profiler": it counted other than it was
 * given) or "misattributed" (cause "program": it counted what it was
 * given, which is not its owner's calls).  Sets results "profilers" (one
 * object per profiler compared, with its status right, misattributed or
 * wrong), "profiler_groups" (the report, folded: {text, status, count,
 * of, profiler, enabled_in, ids}), "cause",
 * "compared", "not_compared".  Returns the verdict. */
int gr_conform_compare_programs(const gr_conform *c, const gr_trace *t, json_t *results, const char *displaced, json_t *diffs,
                                json_t *notes, size_t *checked, char *reason, size_t n);

/* The trace's code id of a sampled frame under the root (file relative
 * as in the trace, name the qualname or its last component, line the
 * running line, first the function's first line or 0): 0 when the trace
 * has none. */
uint32_t gr_conform_frame_code(const gr_trace *t, const char *file, const char *name, long long line,
                               long long first);

/* String id of trace t as a NUL-terminated copy in sb (reset first; ""
 * for an id without a string). */
const char *gr_conform_str(const gr_trace *t, uint64_t id, gr_sb *sb);

#endif
