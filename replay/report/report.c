/* report.c - text, JSON and JUnit output of checker results (report.h). */
#include "report.h"

#include "dump.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *note_title(enum gr_note_kind k)
{
    switch (k) {
    case GR_NOTE_OPEN_AT_STOP: return "open at stop";
    case GR_NOTE_OPEN_AT_TRUNCATION: return "open at end of truncated trace";
    case GR_NOTE_ABANDONED: return "abandoned (suspended on a thread that ended before stop)";
    case GR_NOTE_UNOBSERVED: return "unobserved (a thread without the profile function: its returns were never seen)";
    default: return "open at end of trace (no STOP record)";
    }
}

static const char *note_key(enum gr_note_kind k)
{
    switch (k) {
    case GR_NOTE_OPEN_AT_STOP: return "open_at_stop";
    case GR_NOTE_OPEN_AT_TRUNCATION: return "open_at_truncation";
    case GR_NOTE_ABANDONED: return "abandoned";
    case GR_NOTE_UNOBSERVED: return "unobserved";
    default: return "open_at_end";
    }
}

/* check -v (gr_report_verbose). */
static int verbose;

void gr_report_verbose(int on)
{
    verbose = on;
}

int gr_report_verbose_on(void)
{
    return verbose;
}

int gr_report_refuted(const char *w)
{
    static const char head[] = "predicted blind spot: ";
    return strncmp(w, head, sizeof head - 1) == 0;
}

uint64_t gr_report_nrefuted(const gr_check_result *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->nwarnings; i++)
        n += gr_report_refuted(r->warnings[i]) != 0;
    for (size_t i = 0; i < r->nfolded; i++) /* only propagation folds */
        n += r->folded[i].count;
    return n;
}

/* The warnings of r to out_sb, each "warning: W\n" (a refuted prediction:
 * "detail: W\n" with -v, else nothing), then the folded counts (with -v). */
static void put_warnings(gr_sb *sb, const gr_check_result *r)
{
    for (size_t i = 0; i < r->nwarnings; i++) {
        int refuted = gr_report_refuted(r->warnings[i]);
        if (!refuted || verbose)
            gr_sb_printf(sb, "%s: %s\n", refuted ? "detail" : "warning", r->warnings[i]);
    }
}

static void put_folded(gr_sb *sb, const gr_check_result *r)
{
    for (size_t i = 0; verbose && i < r->nfolded; i++) {
        gr_sb_puts(sb, "detail: ");
        gr_report_folded(sb, &r->folded[i]);
        gr_sb_putc(sb, '\n');
    }
}

/* Documented in report.h. */
void gr_report_refuted_line(gr_sb *sb, const gr_check_result *r)
{
    uint64_t n = gr_report_nrefuted(r);
    if (n)
        gr_sb_printf(sb, "  %-20s %" PRIu64 " predicted blind spot%s (3.12+) disproved by the "
                         "resumed frame's own events: no finding%s\n", "refuted predictions", n,
                     n == 1 ? "" : "s", verbose ? "" : " (check -v lists them)");
}

/* Lines of the profiler list in the text report before it is cut. */
#define PROFILERS_LISTED 20

/* Number of rules the result covers (GR_NRULES_CHECK if not set). */
static int rules_of(const gr_check_result *r)
{
    return r->nrules > 0 && r->nrules <= GR_NRULES ? r->nrules : GR_NRULES_CHECK;
}

/* " (tTID gGID)" of a violation about one thread; nothing for tid 0. */
static void where(gr_sb *sb, const gr_violation *v)
{
    if (v->tid)
        gr_sb_printf(sb, " (t%" PRIu64 " g%" PRIu64 ")", v->tid, v->gid);
}

/* Documented in report.h. */
void gr_report_cut_where(gr_sb *sb, const gr_trace *t)
{
    uint64_t size = t->size, at = t->truncated_at;
    if (size < GR_HEADER_LEN)
        gr_sb_printf(sb, "%" PRIu64 " byte%s, inside its %d-byte header", size, size == 1 ? "" : "s",
                     GR_HEADER_LEN);
    else if (size <= at && at <= GR_HEADER_LEN)
        gr_sb_printf(sb, "%" PRIu64 " bytes, only its header (no chunk)", size);
    else if (size <= at)
        gr_sb_printf(sb, "%" PRIu64 " bytes, the complete chunks end at byte %" PRIu64
                         ", the end of the file", size, at);
    else
        gr_sb_printf(sb, "%" PRIu64 " bytes, the chunk at byte %" PRIu64 " is incomplete (%s)", size,
                     at, at <= GR_HEADER_LEN ? "no complete chunk" : "the complete chunks end there");
}

/* "truncated: N bytes, ...; no trailer ..." for a truncated trace. */
static void truncation_line(gr_sb *sb, const gr_trace *t)
{
    gr_sb_puts(sb, "truncated: ");
    gr_report_cut_where(sb, t);
    gr_sb_puts(sb, "; no trailer (recording cut short); ");
    if (gr_trace_count(t))
        gr_sb_printf(sb, "checked records 0..%" PRIu64, gr_trace_count(t) - 1);
    else
        gr_sb_puts(sb, "no complete record to check");
}

enum gr_check_status gr_check_status_of(const gr_check_result *r)
{
    if (gr_check_failing(r))
        return GR_CHECK_VIOLATIONS;
    if (r->nv)
        return GR_CHECK_CLEAN; /* every violation allowed (gr_check_allow) or
                                  advisory (displaced, gr_check_fail_on) */
    if (r->coverage.nothing)
        return GR_CHECK_NOTHING;
    return GR_CHECK_CLEAN;
}

int gr_check_exit_code(enum gr_check_status s)
{
    switch (s) {
    case GR_CHECK_CLEAN: return 0;
    case GR_CHECK_VIOLATIONS: return 1;
    default: return 2;
    }
}

enum { BLIND_NOT, BLIND_PARTLY, BLIND_ALL };

static int blind_level(const gr_coverage *cv)
{
    if (cv->profile_off || (!cv->truth_points && !cv->continued))
        return BLIND_NOT;
    return cv->greenlets_truth < cv->shadows ? BLIND_PARTLY : BLIND_ALL;
}

const char *gr_coverage_blind_spots(const gr_coverage *cv)
{
    static const char *const names[] = {"not_checkable", "partly", "checkable"};
    return names[blind_level(cv)];
}

const char *gr_check_status_name(enum gr_check_status s)
{
    switch (s) {
    case GR_CHECK_CLEAN: return "clean";
    case GR_CHECK_VIOLATIONS: return "violations";
    case GR_CHECK_NOTHING: return "nothing_checked";
    default: return "unusable";
    }
}

static const char *plural(size_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Kinds of finding a tally counts apart. */
enum { TALLY_FAILING, TALLY_ALLOWED, TALLY_NOT_FAILING };

static int tally_kind(const gr_violation *v)
{
    return v->advisory ? TALLY_NOT_FAILING : v->allowed ? TALLY_ALLOWED : TALLY_FAILING;
}

/* Where an allowed finding's allow came from, as the tally names it. */
static const char *allow_source(const gr_violation *v)
{
    return v->allowed_by ? v->allowed_by : "--allow";
}

/* "RULE N, RULE N" of the findings of kind `kind` (and, for allowed ones,
 * of allow source `src`); returns how many there are. */
static size_t tally_rules(gr_sb *sb, const gr_check_result *r, int kind, const char *src)
{
    size_t total = 0;
    for (int k = 0; k < GR_NRULES; k++) {
        size_t n = 0;
        for (size_t i = 0; i < r->nv; i++) {
            const gr_violation *v = &r->v[i];
            n += (int)v->rule == k && tally_kind(v) == kind &&
                 (!src || strcmp(allow_source(v), src) == 0);
        }
        if (n)
            gr_sb_printf(sb, "%s%s %zu", total ? ", " : "", gr_rule_name((enum gr_rule)k), n);
        total += n;
    }
    return total;
}

size_t gr_report_failing_of(const gr_check_result *r, int rule)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nv; i++)
        n += (int)r->v[i].rule == rule && tally_kind(&r->v[i]) == TALLY_FAILING;
    return n;
}

void gr_report_tally_head(gr_sb *sb, const gr_check_result *r)
{
    size_t failing = gr_check_failing(r);
    if (failing) {
        gr_sb_printf(sb, "%zu violation%s (", failing, failing == 1 ? "" : "s");
        tally_rules(sb, r, TALLY_FAILING, NULL);
        gr_sb_putc(sb, ')');
    } else if (!r->nv && r->coverage.nothing) {
        gr_sb_printf(sb, "nothing checked (%s)", r->coverage.nothing);
    } else {
        gr_sb_puts(sb, "clean");
    }
}

void gr_report_tally_rest(gr_sb *sb, const gr_check_result *r)
{
    /* each source of allows once, in the order of its first finding
       (check knows two: --allow and pyproject.toml) */
    const char *srcs[4];
    size_t nsrc = 0;
    for (size_t i = 0; i < r->nv && nsrc < 4; i++) {
        if (tally_kind(&r->v[i]) != TALLY_ALLOWED)
            continue;
        const char *src = allow_source(&r->v[i]);
        size_t j = 0;
        while (j < nsrc && strcmp(srcs[j], src) != 0)
            j++;
        if (j == nsrc)
            srcs[nsrc++] = src;
    }
    for (size_t j = 0; j < nsrc; j++) {
        gr_sb_puts(sb, "; allowed by ");
        gr_sb_escape(sb, srcs[j], strlen(srcs[j]), 0);
        gr_sb_puts(sb, ": ");
        tally_rules(sb, r, TALLY_ALLOWED, srcs[j]);
    }
    if (r->nadvisory) {
        gr_sb_puts(sb, "; not failing: ");
        tally_rules(sb, r, TALLY_NOT_FAILING, NULL);
    }
}

/* The value of t's first META `key` (*len bytes, not NUL-terminated), or
 * NULL. */
static const uint8_t *meta_value(const gr_trace *t, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t n = 0;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &n);
        if (k && n == kl && memcmp(k, key, kl) == 0)
            return gr_trace_string(t, t->metas[i].value, len);
    }
    return NULL;
}

/* What ended the recording, for the coverage section. */
static void ended_by(gr_sb *sb, const gr_trace *t)
{
    if (!t->has_trailer) {
        gr_sb_puts(sb, "cut short (no trailer): ");
        gr_report_cut_where(sb, t);
        return;
    }
    size_t ul = 0;
    /* META uncaught: the recorder stopped at sys.excepthook's audit event */
    const uint8_t *uncaught = meta_value(t, "uncaught", &ul);
    if (uncaught && t->trailer.reason == GR_STOP_EXIT) {
        gr_sb_puts(sb, "the program's uncaught exception (");
        gr_sb_escape(sb, uncaught, ul, 0);
        gr_sb_puts(sb, "), then interpreter exit (reason exit)");
        return;
    }
    switch (t->trailer.reason) {
    case GR_STOP_CALLED: gr_sb_puts(sb, "stop() (reason stop)"); break;
    case GR_STOP_EXIT: gr_sb_puts(sb, "interpreter exit (reason exit)"); break;
    case GR_STOP_WRITE_ERROR: gr_sb_puts(sb, "a write error (reason write-error)"); break;
    case GR_STOP_SIZE_CAP: gr_sb_puts(sb, "the size cap (reason size-cap)"); break;
    case GR_STOP_SNAPSHOT: gr_sb_puts(sb, "a snapshot while recording went on (reason snapshot)"); break;
    case GR_STOP_SIGNAL:
        gr_sb_printf(sb, "the program crashed: fatal signal %" PRIu64 "%s%s%s (reason crash)",
                     t->trailer.signal, t->trailer.signal ? " (" : "",
                     t->trailer.signal ? strsignal((int)t->trailer.signal) : "",
                     t->trailer.signal ? ")" : "");
        break;
    default: gr_sb_printf(sb, "unknown reason %" PRIu64, t->trailer.reason); break;
    }
}

/* The blind-spot line of the coverage section. */
static void blind_line(gr_sb *sb, const gr_coverage *cv)
{
    int b = blind_level(cv);
    const char *unit = cv->greenlets ? "greenlet" : "thread";
    if (cv->profile_off) {
        gr_sb_puts(sb, "not checkable (recorded without the profile function, profile=False): "
                       "no profile events to compare the real stacks with");
        return;
    }
    if (b == BLIND_NOT) {
        gr_sb_puts(sb, "not checkable (no MARK and no ground-truth stack): a missed call or "
                       "return shows only as an imbalance, a missed pair not at all");
        return;
    }
    gr_sb_printf(sb, "checkable at %zu ground-truth point%s", cv->truth_points,
                 plural(cv->truth_points, "", "s"));
    if (cv->continued)
        gr_sb_printf(sb, " and %zu continued switch%s", cv->continued, plural(cv->continued, "", "es"));
    if (b == BLIND_PARTLY)
        gr_sb_printf(sb, ", in %zu of %zu %ss only (the others have none)", cv->greenlets_truth,
                     cv->shadows, unit);
}

void gr_report_folded(gr_sb *sb, const gr_folded *f)
{
    if (f->whole) {
        gr_sb_printf(sb, "%s: %" PRIu64 " more refuted predicted blind spot%s of the trace not "
                         "listed (a trace lists the refutations of its first %d predictions that "
                         "are among their greenlet's first %d, and counts the later ones per "
                         "greenlet for its first %d greenlets with more)",
                     gr_rule_name(f->rule), f->count, plural(f->count, "", "s"),
                     GR_PROP_TRACE_LISTED, GR_PROP_LISTED, GR_PROP_FOLDED_LINES);
        return;
    }
    gr_sb_printf(sb, "%s: %" PRIu64 " more refuted predicted blind spot%s of g%" PRIu64 " (t%" PRIu64
                     ") not listed (a greenlet's refuted predictions are listed for its first %d "
                     "predictions only)",
                 gr_rule_name(f->rule), f->count, plural(f->count, "", "s"), f->gid, f->tid,
                 GR_PROP_LISTED);
}

void gr_report_coverage(gr_sb *sb, const gr_trace *t, const gr_coverage *cv)
{
    gr_sb_puts(sb, "what was checked:\n");
    gr_sb_printf(sb, "  %-20s %zu, %zu of them events of the program\n", "records", cv->records,
                 cv->program_events);
    if (cv->threads)
        gr_sb_printf(sb, "  %-20s %zu thread%s, %zu greenlet%s\n", "seen", cv->threads,
                     plural(cv->threads, "", "s"), cv->greenlets, plural(cv->greenlets, "", "s"));
    else /* an empty trace: "0 threads" would read as a count of something seen */
        gr_sb_printf(sb, "  %-20s no threads recorded\n", "seen");
    gr_sb_printf(sb, "  %-20s %zu point%s (%zu MARK, %zu SWITCH with a real stack)", "ground truth",
                 cv->truth_points, plural(cv->truth_points, "", "s"),
                 cv->truth_points - cv->switch_truth, cv->switch_truth);
    if (cv->continued)
        gr_sb_printf(sb, " and %zu continued switch%s (nothing ran unseen since the target's last"
                         " stack)", cv->continued, plural(cv->continued, "", "es"));
    if (cv->shadows) /* nothing to say "in 0 of 0" of when no stack was checked */
        gr_sb_printf(sb, ", in %zu of %zu %s%s", cv->greenlets_truth, cv->shadows,
                     cv->greenlets ? "greenlet" : "thread", plural(cv->shadows, "", "s"));
    gr_sb_printf(sb, "; %zu STACK record%s at stop\n", cv->stacks, plural(cv->stacks, "", "s"));
    gr_sb_printf(sb, "  %-20s ", "blind spots");
    blind_line(sb, cv);
    gr_sb_putc(sb, '\n');
    gr_sb_printf(sb, "  %-20s ", "records lost");
    int some = cv->dropped || cv->gap || cv->missing;
    if (!t->has_trailer)
        gr_sb_printf(sb, "unknown: the recording was cut short%s", some ? "; " : "");
    else if (!some)
        gr_sb_puts(sb, "none");
    if (some) {
        /* The three are counts read from the file: a crafted trailer's
         * dropped near 2^64 would wrap their sum to a small number, so the
         * sum saturates and says it did (the parts are printed as read). */
        uint64_t lost = cv->dropped, add[2] = {cv->gap, cv->missing};
        int over = 0;
        for (int i = 0; i < 2; i++) {
            if (add[i] > UINT64_MAX - lost) {
                lost = UINT64_MAX;
                over = 1;
            }
            else
                lost += add[i];
        }
        if (over) /* no recording loses 2^64 records: say the file lies */
            gr_sb_puts(sb, "more than 2^64-1, the trailer's count is not plausible");
        else
            gr_sb_printf(sb, "%" PRIu64, lost);
        gr_sb_printf(sb, " (trailer dropped %" PRIu64 ", ring gap %" PRIu64, cv->dropped, cv->gap);
        if (cv->missing)
            gr_sb_printf(sb, ", %" PRIu64 " counted by the trailer but not in the file",
                         cv->missing);
        gr_sb_putc(sb, ')');
    }
    gr_sb_putc(sb, '\n');
    gr_sb_printf(sb, "  %-20s ", "ended by");
    ended_by(sb, t);
    gr_sb_putc(sb, '\n');
}

static json_t *coverage_json(const gr_trace *t, const gr_coverage *cv)
{
    json_t *o = json_object();
    json_object_set_new(o, "checked", json_boolean(cv->nothing == NULL));
    json_object_set_new(o, "nothing_checked", cv->nothing ? json_string(cv->nothing) : json_null());
    json_object_set_new(o, "records", gr_json_u64(cv->records));
    json_object_set_new(o, "program_events", gr_json_u64(cv->program_events));
    json_object_set_new(o, "threads", gr_json_u64(cv->threads));
    json_object_set_new(o, "greenlets", gr_json_u64(cv->greenlets));
    json_object_set_new(o, "marks", gr_json_u64(cv->marks));
    json_object_set_new(o, "ground_truth_points", gr_json_u64(cv->truth_points));
    json_object_set_new(o, "switch_stacks", gr_json_u64(cv->switch_truth));
    json_object_set_new(o, "continued_switches", gr_json_u64(cv->continued));
    json_object_set_new(o, "with_ground_truth", gr_json_u64(cv->greenlets_truth));
    json_object_set_new(o, "checked_stacks", gr_json_u64(cv->shadows));
    json_object_set_new(o, "stacks_at_stop", gr_json_u64(cv->stacks));
    json_object_set_new(o, "blind_spots", json_string(gr_coverage_blind_spots(cv)));
    json_object_set_new(o, "dropped", gr_json_u64(cv->dropped));
    json_object_set_new(o, "gap", gr_json_u64(cv->gap));
    json_object_set_new(o, "missing", gr_json_u64(cv->missing));
    json_object_set_new(o, "lost_unknown", json_boolean(!t->has_trailer));
    const char *why = t->has_trailer ? gr_reason_name(t->trailer.reason) : NULL;
    if (!t->has_trailer)
        json_object_set_new(o, "reason", json_null());
    else
        json_object_set_new(o, "reason", why ? json_string(why) : gr_json_u64(t->trailer.reason));
    size_t ul = 0;
    const uint8_t *uncaught = meta_value(t, "uncaught", &ul);
    gr_sb sb;
    gr_sb_init(&sb);
    if (uncaught)
        gr_sb_escape(&sb, uncaught, ul, 0);
    json_object_set_new(o, "uncaught", uncaught ? gr_json_str(gr_sb_str(&sb)) : json_null());
    gr_sb_free(&sb);
    return o;
}

/* What each rule looks for, in a user's words, beside its count. */
static const char *rule_gist(int rule)
{
    switch (rule) {
    case GR_RULE_IMBALANCE: return "returns whose call the profiler never saw, and the reverse";
    case GR_RULE_BLIND_SPOT: return "calls running that the profiler did not see (real stack vs events)";
    case GR_RULE_SWITCH_CONSISTENCY: return "events of a greenlet that was not the one running";
    case GR_RULE_PROPAGATION: return "greenlets resumed with profiling off for them";
    case GR_RULE_CALLBACK_GUARD: return "greenlet's switch callbacks that the profiler saw";
    case GR_RULE_DISPLACED: return "the program replaced or removed greenreplay's reference profiler (not failing)";
    case GR_RULE_UNREACHED: return "threads the profiler was never installed in";
    case GR_RULE_ATTRIBUTION: return "times the program's own profilers missed their greenlet's calls or counted "
                                     "another's (not failing)";
    case GR_RULE_STALL_WAIT: return "switches that waited too long for the sampler's lock";
    case GR_RULE_STALL_DEPTH: return "samples that read frames while holding the lock";
    case GR_RULE_SAMPLE: return "sampled stacks that differ from the shadow stack";
    default: return "";
    }
}

/* What a finding of each rule means for a profiler's user, and where to
 * read more (NULL: nothing beyond the finding itself). */
static const char *rule_meaning(int rule)
{
    switch (rule) {
    case GR_RULE_IMBALANCE:
        return "the profiler saw a return without its call, or a call that never returned: "
               "its counts and times of those functions are off";
    case GR_RULE_BLIND_SPOT:
        return "calls ran that the profiler never saw, so it under-counts them; usual causes: a "
               "greenlet resumed with profiling off (greenlet issue 256), a switch made inside "
               "a trace or profile function";
    case GR_RULE_SWITCH_CONSISTENCY:
        return "events went to a greenlet that was not running: per-greenlet profiles mix "
               "the greenlets' calls";
    case GR_RULE_PROPAGATION:
        return "a greenlet ran with profiling off: no profiler sees its calls until it is on "
               "again (greenlet issue 256)";
    case GR_RULE_CALLBACK_GUARD:
        return "greenlet's switch callback ran with profiling on: profilers count its calls "
               "as the program's";
    case GR_RULE_DISPLACED:
        return "the program replaced or removed greenreplay's reference profiler (the profile "
               "function it installs as a standard tool would, whose view the rules check); what "
               "ran after went unseen by that reference profiler, not necessarily by the "
               "program's own profiler, which rule attribution judges (not failing: --fail-on "
               "displaced)";
    case GR_RULE_UNREACHED:
        return "threads ran with no profile function at all: their calls are in no profile";
    case GR_RULE_ATTRIBUTION:
        return "a thread has one profile function: a profiler enabled per greenlet (per request) "
               "is replaced by the next greenlet's, counts that greenlet's calls as its owner's "
               "and misses its owner's own; the list of the program's profilers at the end "
               "gives each one's counts (not failing: --fail-on attribution)";
    default: return NULL;
    }
}

/* The words of the dump lines a report quotes, each with what it means,
 * printed under the findings for the words that appear in them. */
static const struct {
    const char *word, *meaning;
} legend[] = {
    {"prof=ours", "at that switch the thread's profile function was the recorder's "
                  "(greenreplay's reference profiler)"},
    {"prof=other", "at that switch the program's own profile function had replaced it"},
    {"prof=none", "at that switch the thread had no profile function"},
    {"use_tracing=0", "CPython had profiling off for the greenlet switched to: no profiler "
                      "sees its calls (greenlet issue 256)"},
    {"use_tracing=", "non-zero (1, 255): CPython calls the profiler in that greenlet; n/a: "
                     "Python 3.12+, which has no such flag"},
    {"tracing=", "non-zero: the greenlet was inside a profile or trace function, where "
                 "CPython calls no profiler"},
    {"inferred", "the switch was found by the recorder itself at the next event or mark(), "
                 "not announced by greenlet"},
    {"at_mark", "found at a mark() call"},
    {" new", "the first time that greenlet ran"},
    {"unseen", "that greenlet ran without a single profile event; found when the call that "
               "switched to it returned"},
    {"continued", "the greenlet resumed exactly where it was last seen, so its stack is the "
                  "one the records before give (none written)"},
    {"origin_dead", "the greenlet switched away from had finished"},
    {"HOOK     ", "the program changed a profile or trace function of the thread (set, cleared, "
             "restored)"},
    {"subject=off", "after this change by the program, greenreplay's reference profiler was "
                    "no longer called on that thread"},
    {"subject=on", "after this change greenreplay's reference profiler was still called"},
    {"chained", "the program's own profile function runs behind the recorder's"},
    {"in_callback", "mark() ran inside a trace or greenlet callback"},
    {"during=", "the C call running when the program made the change"},
    {"profiler=", "which of the program's profilers (P1, P2, ...: the list at the end) was "
                  "installed or removed, its kind and type"},
    {"frame=", "the Python function that made the change"},
    {"parent=", "the parent of the greenlet (at a switch: of the one switched to)"},
    {"flags=", "the record's flags, named in docs/FORMAT.md (- is none); for a MARK, ours: "
               "the recorder's profile function was installed"},
    {"state_known", "mark() could read CPython's use_tracing for the greenlet (3.9 to 3.11)"},
    {"tracing_off", "at that mark() the greenlet ran with use_tracing 0 while its thread had a "
                    "profile function (greenlet issue 256)"},
    {"GREENLET", "the first sight of a greenlet; its stack= is the stack it had then (the "
                 "\"seed\" of what the checker rebuilds)"},
    {"shadow:", "the stack the checker rebuilt from the profiler's events: what the "
                "profiler believed was running"},
    {"stack=", "the real Python stack at that record, outermost first (- is empty)"},
    {"depth=", "how many frames that stack has"},
};

/* Lines "  WORD  MEANING" for the legend words that occur in text. */
static void put_legend(gr_sb *sb, const char *text)
{
    int shown = 0;
    for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++) {
        if (!strstr(text, legend[i].word))
            continue;
        if (strcmp(legend[i].word, "use_tracing=") == 0 && !strstr(text, "use_tracing=1") &&
            !strstr(text, "use_tracing=255") && !strstr(text, "use_tracing=n/a"))
            continue;
        if (!shown)
            gr_sb_puts(sb, "\nhow to read the records above (> marks each finding's record; "
                           "`greenreplay dump` lists them all):\n");
        shown = 1;
        const char *w = legend[i].word;
        while (*w == ' ')
            w++;
        gr_sb_printf(sb, "  %-14s %s\n", w, legend[i].meaning);
    }
}

/* Is frame text p[0..n) ("NAME (FILE:LINE)" or a C function's name) one
 * of greenreplay's own (its package, its extension)? */
static int own_frame(const char *p, size_t n)
{
    static const char *const marks[] = {"(<greenreplay>/", "greenreplay._greenreplay."};
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(marks[i]);
        for (size_t j = 0; j + k <= n; j++)
            if (memcmp(p + j, marks[i], k) == 0)
                return 1;
    }
    return 0;
}

/* frames ("A > B > C") without greenreplay's own; *left how many went. */
static void program_frames(gr_sb *sb, const char *frames, size_t *left)
{
    const char *p = frames;
    int first = 1;
    for (;;) {
        const char *e = strstr(p, " > ");
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (own_frame(p, n)) {
            (*left)++;
        } else {
            if (!first)
                gr_sb_puts(sb, " > ");
            gr_sb_put(sb, p, n);
            first = 0;
        }
        if (!e)
            break;
        p = e + 3;
    }
}

/* Dump line of context record k of v: the line the checker kept (a
 * streamed trace no longer holds the record), or the record's. */
static void context_line(gr_sb *sb, const gr_trace *t, const gr_violation *v, int k)
{
    if (v->ctx_line[k]) {
        gr_sb_puts(sb, v->ctx_line[k]);
        return;
    }
    size_t i = v->ctx[k];
    const gr_record *r = gr_trace_record(t, i);
    if (r)
        gr_dump_record(sb, t, r);
    else
        gr_sb_printf(sb, "%6zu ?", i);
}

void gr_report_text(FILE *out, const gr_trace *t, const gr_check_result *r)
{
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_puts(&sb, "== ");
    gr_sb_escape(&sb, t->name, strlen(t->name), 0); /* a file name reaches the terminal */
    gr_sb_printf(&sb, ": %" PRIu64 " records", gr_trace_count(t));
    if (t->has_trailer) {
        const char *why = gr_reason_name(t->trailer.reason);
        gr_sb_printf(&sb, ", trailer events=%" PRIu64 " dropped=%" PRIu64 " errors=%" PRIu64,
                     t->trailer.events, t->trailer.dropped, t->trailer.errors);
        if (t->trailer.replaced)
            gr_sb_printf(&sb, " replaced=%" PRIu64, t->trailer.replaced);
        if (why)
            gr_sb_printf(&sb, " reason=%s\n", why);
        else
            gr_sb_printf(&sb, " reason=%" PRIu64 "\n", t->trailer.reason);
    } else {
        gr_sb_putc(&sb, '\n');
        truncation_line(&sb, t);
        gr_sb_putc(&sb, '\n');
    }
    put_warnings(&sb, r);
    for (size_t i = 0; i < r->ninfos; i++)
        gr_sb_printf(&sb, "note: %s\n", r->infos[i]);
    put_folded(&sb, r);
    if (r->summary)
        gr_sb_puts(&sb, r->summary);
    for (int k = 0; k < rules_of(r); k++)
        gr_sb_printf(&sb, "  %-20s %-5zu %s\n", gr_rule_name((enum gr_rule)k), r->counts[k],
                     rule_gist(k));
    size_t quoted = sb.len; /* the findings with their records start here */
    for (size_t i = 0; i < r->nv; i++) {
        const gr_violation *v = &r->v[i];
        gr_sb_printf(&sb, "\n%s%s at event %" PRIu64,
                     v->allowed ? "(allowed) " : v->advisory ? "(not failing) " : "",
                     gr_rule_name(v->rule), v->index);
        where(&sb, v);
        gr_sb_printf(&sb, ": %s\n", v->message);
        for (int k = 0; k < v->nctx; k++) {
            gr_sb_puts(&sb, v->ctx[k] == v->index ? "  > " : "    ");
            context_line(&sb, t, v, k);
            gr_sb_putc(&sb, '\n');
        }
    }
    if (r->nv) {
        /* the quoted records' words, before anything else is added */
        char *text = gr_xrealloc(NULL, sb.len - quoted + 1);
        memcpy(text, sb.s + quoted, sb.len - quoted);
        text[sb.len - quoted] = 0;
        int seen[GR_NRULES] = {0}, any = 0;
        for (size_t i = 0; i < r->nv; i++)
            if ((int)r->v[i].rule >= 0 && r->v[i].rule < GR_NRULES)
                seen[r->v[i].rule] = 1;
        for (int k = 0; k < GR_NRULES; k++) {
            const char *m = seen[k] ? rule_meaning(k) : NULL;
            if (!m)
                continue;
            if (!any)
                gr_sb_puts(&sb, "\nwhat the findings mean (docs/RULES.md has a section per rule):\n");
            any = 1;
            gr_sb_printf(&sb, "  %-19s %s\n", gr_rule_name((enum gr_rule)k), m);
        }
        put_legend(&sb, text);
        free(text);
    }
    size_t own = 0; /* greenreplay's frames left out of the notes */
    int any_note = 0;
    for (int kind = GR_NOTE_OPEN_AT_STOP; kind <= GR_NOTE_UNOBSERVED; kind++) {
        int shown = 0;
        for (size_t i = 0; i < r->nnotes; i++) {
            const gr_note *n = &r->notes[i];
            if ((int)n->kind != kind)
                continue;
            gr_sb fr;
            gr_sb_init(&fr);
            program_frames(&fr, n->frames, &own);
            if (fr.len) {
                if (!shown)
                    gr_sb_printf(&sb, "\n%s (informational, not violations):\n",
                                 note_title((enum gr_note_kind)kind));
                shown = any_note = 1;
                gr_sb_printf(&sb, "  t%" PRIu64 " g%" PRIu64 ": %s\n", n->tid, n->gid, gr_sb_str(&fr));
            }
            gr_sb_free(&fr);
        }
    }
    if (own && any_note)
        gr_sb_printf(&sb, "  (%zu frame%s of greenreplay's own left out)\n", own, plural(own, "", "s"));
    gr_sb_putc(&sb, '\n');
    gr_report_coverage(&sb, t, &r->coverage);
    gr_report_refuted_line(&sb, r);
    if (r->nprof) {
        gr_sb_putc(&sb, '\n');
        gr_report_profilers(&sb, t, r, PROFILERS_LISTED);
    }
    size_t displaced = r->counts[GR_RULE_DISPLACED];
    if (displaced)
        gr_sb_printf(&sb, "\nprogram changes to the profiler: %zu (displaced%s)\n", displaced,
                     gr_check_rule_fails(GR_RULE_DISPLACED)
                         ? ", failing: --fail-on displaced"
                         : "; not failing, `check --fail-on displaced` makes them violations");
    /* the same tally as -q, JUnit and HTML (gr_report_tally_head) */
    gr_sb_puts(&sb, "\nresult: ");
    gr_report_tally_head(&sb, r);
    gr_report_tally_rest(&sb, r);
    gr_sb_putc(&sb, '\n');
    fwrite(sb.s, 1, sb.len, out);
    gr_sb_free(&sb);
}


/* "cprofile (cProfile.Profile)" of profiler attribution a. */
static void prof_what(gr_sb *sb, const gr_trace *t, const gr_prof_attr *a)
{
    gr_sb_puts(sb, gr_profiler_kind_name(a->kind));
    size_t len = 0;
    const uint8_t *ty = a->type ? gr_trace_string(t, a->type, &len) : NULL;
    if (ty) {
        gr_sb_puts(sb, " (");
        gr_sb_escape(sb, ty, len, 0);
        gr_sb_putc(sb, ')');
    } else if (a->code) {
        gr_sb_puts(sb, " (");
        gr_dump_code(sb, t, a->code);
        gr_sb_putc(sb, ')');
    }
}

void gr_report_profilers(gr_sb *sb, const gr_trace *t, const gr_check_result *r, size_t max)
{
    if (!r->nprof)
        return;
    size_t missed = 0, foreign = 0;
    for (size_t i = 0; i < r->nprof; i++) {
        missed += r->prof[i].missed != 0 || r->prof[i].inside != 0;
        foreign += r->prof[i].foreign != 0;
    }
    gr_sb_printf(sb, "program profilers (attribution): %zu; %zu missed calls of their owner, "
                     "%zu counted other greenlets' calls\n", r->nprof, missed, foreign);
    for (size_t i = 0; i < r->nprof && (!max || i < max); i++) {
        const gr_prof_attr *a = &r->prof[i];
        gr_sb_printf(sb, "  P%" PRIu32 " ", a->id);
        prof_what(sb, t, a);
        if (a->thread_wide)
            gr_sb_printf(sb, " owner t%" PRIu64 " (thread-wide)", a->tid);
        else
            gr_sb_printf(sb, " owner t%" PRIu64 " g%" PRIu64, a->tid, a->gid);
        if (a->frame) {
            gr_sb_puts(sb, " enabled in ");
            gr_dump_code(sb, t, a->frame);
        }
        if (a->chains)
            gr_sb_printf(sb, " chains P%" PRIu32, a->chains);
        gr_sb_printf(sb, ": installed %" PRIu64 "x, seen %" PRIu64 " (own %" PRIu64
                         ", foreign %" PRIu64 "), missed %" PRIu64,
                     a->intervals, a->seen, a->own, a->foreign, a->missed);
        if (a->inside) /* greenlets ran inside its own function: not counted */
            gr_sb_printf(sb, " and more not known (greenlets ran inside its own function in "
                             "%" PRIu64 " of its calls)",
                         a->inside);
        gr_sb_puts(sb, a->missed || a->foreign || a->inside ? "\n" : ": clean\n");
    }
    if (max && r->nprof > max)
        gr_sb_printf(sb, "  ... %zu more (--format json lists every one)\n", r->nprof - max);
}

static json_t *prof_fns_json(const gr_trace *t, const gr_prof_fn *v, size_t n, const char *other)
{
    json_t *a = json_array();
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        gr_sb_reset(&sb);
        if (v[i].code)
            gr_dump_code(&sb, t, v[i].code);
        json_object_set_new(o, "function", v[i].code ? gr_json_str(gr_sb_str(&sb)) : json_null());
        json_object_set_new(o, "count", gr_json_u64(v[i].count));
        if (other)
            json_object_set_new(o, other, v[i].other ? gr_json_u64(v[i].other) : json_null());
        json_array_append_new(a, o);
    }
    gr_sb_free(&sb);
    return a;
}

json_t *gr_report_profilers_json(const gr_trace *t, const gr_check_result *r)
{
    json_t *arr = json_array();
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t i = 0; i < r->nprof; i++) {
        const gr_prof_attr *a = &r->prof[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", gr_json_u64(a->id));
        json_object_set_new(o, "kind", json_string(gr_profiler_kind_name(a->kind)));
        size_t len = 0;
        const uint8_t *ty = a->type ? gr_trace_string(t, a->type, &len) : NULL;
        gr_sb_reset(&sb);
        if (ty)
            gr_sb_escape(&sb, ty, len, 0);
        json_object_set_new(o, "type", ty ? gr_json_str(gr_sb_str(&sb)) : json_null());
        gr_sb_reset(&sb);
        if (a->code)
            gr_dump_code(&sb, t, a->code);
        json_object_set_new(o, "function", a->code ? gr_json_str(gr_sb_str(&sb)) : json_null());
        json_object_set_new(o, "tid", gr_json_u64(a->tid));
        json_object_set_new(o, "gid", gr_json_u64(a->gid));
        json_object_set_new(o, "thread_wide", json_boolean(a->thread_wide));
        gr_sb_reset(&sb);
        if (a->frame)
            gr_dump_code(&sb, t, a->frame);
        json_object_set_new(o, "enabled_in", a->frame ? gr_json_str(gr_sb_str(&sb)) : json_null());
        json_object_set_new(o, "first_index", gr_json_u64(a->first_index));
        json_object_set_new(o, "chains", a->chains ? gr_json_u64(a->chains) : json_null());
        json_object_set_new(o, "installed", gr_json_u64(a->intervals));
        json_object_set_new(o, "seen", gr_json_u64(a->seen));
        json_object_set_new(o, "own", gr_json_u64(a->own));
        json_object_set_new(o, "foreign", gr_json_u64(a->foreign));
        json_object_set_new(o, "missed", gr_json_u64(a->missed));
        json_object_set_new(o, "missed_uninstalled", gr_json_u64(a->missed_by_none));
        json_object_set_new(o, "ran_greenlets_inside", gr_json_u64(a->inside));
        json_object_set_new(o, "own_functions", prof_fns_json(t, a->own_fn, a->nown_fn, NULL));
        json_object_set_new(o, "missed_functions",
                            prof_fns_json(t, a->missed_fn, a->nmissed_fn, "got_by"));
        json_object_set_new(o, "foreign_functions",
                            prof_fns_json(t, a->foreign_fn, a->nforeign_fn, "gid"));
        json_array_append_new(arr, o);
    }
    gr_sb_free(&sb);
    return arr;
}

json_t *gr_json_u64(uint64_t v)
{
    if (v <= (uint64_t)LLONG_MAX)
        return json_integer((json_int_t)v);
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    return json_string(b);
}

json_t *gr_json_str(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_escape(&sb, s, strlen(s), 0);
    j = json_string(gr_sb_str(&sb));
    gr_sb_free(&sb);
    return j;
}

static json_t *trailer_json(const gr_trace *t)
{
    if (!t->has_trailer)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "events", gr_json_u64(t->trailer.events));
    json_object_set_new(o, "dropped", gr_json_u64(t->trailer.dropped));
    json_object_set_new(o, "errors", gr_json_u64(t->trailer.errors));
    json_object_set_new(o, "replaced", gr_json_u64(t->trailer.replaced));
    const char *why = gr_reason_name(t->trailer.reason);
    json_object_set_new(o, "reason", why ? json_string(why) : gr_json_u64(t->trailer.reason));
    return o;
}

json_t *gr_report_json_trace(const gr_trace *t, const gr_check_result *r)
{
    gr_sb sb;
    gr_sb_init(&sb);
    json_t *o = json_object();
    json_object_set_new(o, "file", gr_json_str(t->name));
    json_object_set_new(o, "status", json_string(gr_check_status_name(gr_check_status_of(r))));
    json_object_set_new(o, "records", gr_json_u64(gr_trace_count(t)));
    json_object_set_new(o, "trailer", trailer_json(t));
    json_object_set_new(o, "truncated_at", t->has_trailer ? json_null()
                                                          : gr_json_u64(t->truncated_at));
    json_t *w = json_array();
    if (!t->has_trailer) {
        truncation_line(&sb, t);
        json_array_append_new(w, gr_json_str(gr_sb_str(&sb)));
        gr_sb_reset(&sb);
    }
    for (size_t i = 0; i < r->nwarnings; i++)
        json_array_append_new(w, gr_json_str(r->warnings[i]));
    json_object_set_new(o, "warnings", w);
    json_t *ji = json_array(); /* no violation, no warning */
    for (size_t i = 0; i < r->ninfos; i++)
        json_array_append_new(ji, gr_json_str(r->infos[i]));
    json_object_set_new(o, "remarks", ji);
    json_t *fw = json_array(); /* counted per greenlet, not in `warnings` */
    for (size_t i = 0; i < r->nfolded; i++) {
        const gr_folded *f = &r->folded[i];
        json_t *jf = json_object();
        json_object_set_new(jf, "rule", json_string(gr_rule_name(f->rule)));
        /* null: the trace's count past the cap (gr_folded.whole) */
        json_object_set_new(jf, "tid", f->whole ? json_null() : gr_json_u64(f->tid));
        json_object_set_new(jf, "gid", f->whole ? json_null() : gr_json_u64(f->gid));
        json_object_set_new(jf, "count", gr_json_u64(f->count));
        json_array_append_new(fw, jf);
    }
    json_object_set_new(o, "folded_warnings", fw);
    /* of warnings and folded_warnings: the refuted predictions (no
       warnings in the text report, gr_report_refuted) */
    json_object_set_new(o, "refuted_predictions", gr_json_u64(gr_report_nrefuted(r)));
    json_t *counts = json_object();
    for (int k = 0; k < rules_of(r); k++)
        json_object_set_new(counts, gr_rule_name((enum gr_rule)k), gr_json_u64(r->counts[k]));
    json_object_set_new(o, "counts", counts);
    {
        /* the counts of the -q line and the result line: violations
           (failing), allowed and not failing findings add up to counts */
        json_t *jt = json_object();
        size_t by[3] = {0, 0, 0};
        for (size_t i = 0; i < r->nv; i++)
            by[tally_kind(&r->v[i])]++;
        json_object_set_new(jt, "violations", gr_json_u64(by[TALLY_FAILING]));
        json_object_set_new(jt, "allowed", gr_json_u64(by[TALLY_ALLOWED]));
        json_object_set_new(jt, "not_failing", gr_json_u64(by[TALLY_NOT_FAILING]));
        gr_report_tally_head(&sb, r);
        gr_report_tally_rest(&sb, r);
        json_object_set_new(jt, "text", gr_json_str(gr_sb_str(&sb)));
        gr_sb_reset(&sb);
        json_object_set_new(o, "tally", jt);
    }
    json_object_set_new(o, "profilers", gr_report_profilers_json(t, r));
    json_t *vs = json_array();
    for (size_t i = 0; i < r->nv; i++) {
        const gr_violation *v = &r->v[i];
        json_t *jv = json_object();
        json_object_set_new(jv, "rule", json_string(gr_rule_name(v->rule)));
        json_object_set_new(jv, "index", gr_json_u64(v->index));
        json_object_set_new(jv, "tid", gr_json_u64(v->tid));
        json_object_set_new(jv, "gid", gr_json_u64(v->gid));
        json_object_set_new(jv, "message", gr_json_str(v->message));
        json_object_set_new(jv, "allowed", json_boolean(v->allowed));
        json_object_set_new(jv, "allowed_by", v->allowed && !v->advisory
                                                  ? gr_json_str(allow_source(v)) : json_null());
        /* a finding of a rule that does not fail by default (displaced) */
        json_object_set_new(jv, "advisory", json_boolean(v->advisory));
        json_t *ctx = json_array();
        for (int k = 0; k < v->nctx; k++) {
            gr_sb_reset(&sb);
            context_line(&sb, t, v, k);
            json_array_append_new(ctx, gr_json_str(gr_sb_str(&sb)));
        }
        json_object_set_new(jv, "context", ctx);
        json_array_append_new(vs, jv);
    }
    json_object_set_new(o, "violations", vs);
    json_t *notes = json_array();
    for (size_t i = 0; i < r->nnotes; i++) {
        const gr_note *n = &r->notes[i];
        json_t *jn = json_object();
        json_object_set_new(jn, "kind", json_string(note_key(n->kind)));
        json_object_set_new(jn, "tid", gr_json_u64(n->tid));
        json_object_set_new(jn, "gid", gr_json_u64(n->gid));
        json_object_set_new(jn, "frames", gr_json_str(n->frames));
        json_array_append_new(notes, jn);
    }
    json_object_set_new(o, "notes", notes);
    json_object_set_new(o, "coverage", coverage_json(t, &r->coverage));
    gr_sb_free(&sb);
    return o;
}

json_t *gr_report_json_unusable(const char *file, const char *error)
{
    json_t *o = json_object();
    json_object_set_new(o, "file", gr_json_str(file));
    json_object_set_new(o, "status", json_string("unusable"));
    json_object_set_new(o, "error", gr_json_str(error));
    return o;
}

/* ---------------------------------------------------------------- JUnit */

void gr_xml_escape(gr_sb *sb, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(s), i = 0;
    while (i < n) {
        uint8_t c = (uint8_t)s[i];
        switch (c) {
        case '&': gr_sb_puts(sb, "&amp;"); i++; continue;
        case '<': gr_sb_puts(sb, "&lt;"); i++; continue;
        case '>': gr_sb_puts(sb, "&gt;"); i++; continue;
        case '"': gr_sb_puts(sb, "&quot;"); i++; continue;
        case '\'': gr_sb_puts(sb, "&apos;"); i++; continue;
        case '\n': case '\t': gr_sb_putc(sb, (char)c); i++; continue;
        default: break;
        }
        size_t k = (c < 0x20 || c == 0x7f) ? 0 : gr_utf8_len((const uint8_t *)s + i, n - i);
        if (k == 0) {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            gr_sb_put(sb, e, 4);
            i++;
        } else {
            gr_sb_put(sb, s + i, k);
            i += k;
        }
    }
}

void gr_junit_init(gr_junit *j)
{
    memset(j, 0, sizeof *j);
    gr_sb_init(&j->body);
}

static void attr(gr_sb *sb, const char *key, const char *value)
{
    gr_sb_printf(sb, " %s=\"", key);
    gr_xml_escape(sb, value);
    gr_sb_putc(sb, '"');
}

void gr_junit_add_trace(gr_junit *j, const gr_trace *t, const gr_check_result *r)
{
    gr_sb *b = &j->body, tmp;
    gr_sb_init(&tmp);
    size_t failing = 0;
    int nrules = rules_of(r);
    for (int k = 0; k < nrules; k++)
        failing += gr_report_failing_of(r, k) != 0;
    const char *nothing = r->nv ? NULL : r->coverage.nothing;
    gr_sb_puts(b, "  <testsuite");
    attr(b, "name", t->name);
    gr_sb_printf(b, " tests=\"%d\" failures=\"%zu\" errors=\"%d\">\n", nrules + 1, failing,
                 nothing != NULL);
    /* First testcase: whether anything was checked at all. */
    gr_sb_puts(b, "    <testcase");
    attr(b, "classname", t->name);
    attr(b, "name", "coverage");
    if (nothing) {
        gr_sb_puts(b, ">\n      <error type=\"nothing_checked\"");
        gr_sb_reset(&tmp);
        gr_sb_printf(&tmp, "nothing checked: %s", nothing);
        attr(b, "message", gr_sb_str(&tmp));
        gr_sb_puts(b, "/>\n    </testcase>\n");
    } else {
        gr_sb_puts(b, "/>\n");
    }
    for (int k = 0; k < nrules; k++) {
        const char *rule = gr_rule_name((enum gr_rule)k);
        gr_sb_puts(b, "    <testcase");
        attr(b, "classname", t->name);
        attr(b, "name", rule);
        size_t allowed = 0;
        for (size_t i = 0; i < r->nv; i++)
            allowed += (int)r->v[i].rule == k && (r->v[i].allowed || r->v[i].advisory);
        if (r->counts[k] && allowed == r->counts[k]) {
            /* every one allowed or advisory (displaced): listed, not a
               failure */
            gr_sb_puts(b, ">\n      <system-out>");
            for (size_t i = 0; i < r->nv; i++) {
                const gr_violation *v = &r->v[i];
                if ((int)v->rule != k)
                    continue;
                gr_sb_reset(&tmp);
                gr_sb_printf(&tmp, "%s: event %" PRIu64, v->allowed ? "allowed" : "not failing",
                             v->index);
                where(&tmp, v);
                gr_sb_printf(&tmp, ": %s\n", v->message);
                gr_xml_escape(b, gr_sb_str(&tmp));
            }
            gr_sb_puts(b, "</system-out>\n    </testcase>\n");
            continue;
        }
        if (!r->counts[k]) {
            gr_sb_puts(b, "/>\n");
            continue;
        }
        size_t nfail = r->counts[k] - allowed;
        gr_sb_printf(b, ">\n      <failure type=\"%s\" message=\"%zu violation%s", rule, nfail,
                     nfail == 1 ? "" : "s");
        if (allowed)
            gr_sb_printf(b, ", %zu allowed", allowed);
        gr_sb_puts(b, "\">");
        for (size_t i = 0; i < r->nv; i++) {
            const gr_violation *v = &r->v[i];
            if ((int)v->rule != k)
                continue;
            gr_sb_reset(&tmp);
            if (v->allowed || v->advisory)
                gr_sb_printf(&tmp, "%s: ", v->allowed ? "allowed" : "not failing");
            gr_sb_printf(&tmp, "event %" PRIu64, v->index);
            where(&tmp, v);
            gr_sb_printf(&tmp, ": %s\n", v->message);
            for (int c = 0; c < v->nctx; c++) {
                gr_sb_puts(&tmp, v->ctx[c] == v->index ? "  > " : "    ");
                context_line(&tmp, t, v, c);
                gr_sb_putc(&tmp, '\n');
            }
            gr_xml_escape(b, gr_sb_str(&tmp));
        }
        gr_sb_puts(b, "</failure>\n    </testcase>\n");
    }
    gr_sb_reset(&tmp);
    if (!t->has_trailer) {
        truncation_line(&tmp, t);
        gr_sb_putc(&tmp, '\n');
    }
    if (r->summary)
        gr_sb_puts(&tmp, r->summary);
    put_warnings(&tmp, r);
    for (size_t i = 0; i < r->ninfos; i++)
        gr_sb_printf(&tmp, "note: %s\n", r->infos[i]);
    put_folded(&tmp, r);
    for (size_t i = 0; i < r->nnotes; i++)
        gr_sb_printf(&tmp, "%s: t%" PRIu64 " g%" PRIu64 ": %s\n", note_title(r->notes[i].kind),
                     r->notes[i].tid, r->notes[i].gid, r->notes[i].frames);
    gr_report_coverage(&tmp, t, &r->coverage);
    gr_report_refuted_line(&tmp, r);
    gr_report_profilers(&tmp, t, r, 1000); /* JSON lists every one */
    gr_sb_puts(&tmp, "result: ");
    gr_report_tally_head(&tmp, r);
    gr_report_tally_rest(&tmp, r);
    gr_sb_putc(&tmp, '\n');
    if (tmp.len) {
        gr_sb_puts(b, "    <system-out>");
        gr_xml_escape(b, gr_sb_str(&tmp));
        gr_sb_puts(b, "</system-out>\n");
    }
    gr_sb_puts(b, "  </testsuite>\n");
    gr_sb_free(&tmp);
    j->tests += (size_t)nrules + 1;
    j->failures += failing;
    j->errors += nothing != NULL;
}

void gr_junit_add_unusable(gr_junit *j, const char *file, const char *error)
{
    gr_sb *b = &j->body;
    gr_sb_puts(b, "  <testsuite");
    attr(b, "name", file);
    gr_sb_puts(b, " tests=\"1\" failures=\"0\" errors=\"1\">\n    <testcase");
    attr(b, "classname", file);
    gr_sb_puts(b, " name=\"read\">\n      <error type=\"unusable\"");
    attr(b, "message", error);
    gr_sb_puts(b, "/>\n    </testcase>\n  </testsuite>\n");
    j->tests++;
    j->errors++;
}

int gr_junit_write(const gr_junit *j, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"greenreplay check\" tests=\"%zu\" failures=\"%zu\" "
               "errors=\"%zu\">\n",
            j->tests, j->failures, j->errors);
    fwrite(gr_sb_str(&j->body), 1, j->body.len, f);
    fprintf(f, "</testsuites>\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

void gr_junit_free(gr_junit *j)
{
    gr_sb_free(&j->body);
}
