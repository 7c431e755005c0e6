/* report.h - output of checker results (`greenreplay check`): text, JSON
 * (jansson) and JUnit XML.  The formats are described in docs/RULES.md.
 */
#ifndef GR_REPORT_H
#define GR_REPORT_H

#include "check.h"
#include "reader.h"
#include "text.h"

#include <jansson.h>
#include <stdio.h>

/* Status of one checked file.  Its contribution to the exit code is
 * gr_check_exit_code(status). */
enum gr_check_status {
    GR_CHECK_CLEAN = 0,      /* no violation (truncation alone is fine) */
    GR_CHECK_VIOLATIONS = 1, /* at least one violation */
    GR_CHECK_UNUSABLE = 2,   /* missing, unreadable or corrupt file */
    GR_CHECK_NOTHING = 3,    /* read, but nothing checked: no complete
                                record, or no event of the program
                                (gr_coverage.nothing); exit status 2 */
};

/* Status of a checked trace: VIOLATIONS when it has any, else NOTHING
 * when r->coverage.nothing is set, else CLEAN. */
enum gr_check_status gr_check_status_of(const gr_check_result *r);

/* Exit status for a file of status s: 0 clean, 1 violations, 2 unusable or
 * nothing checked (a verdict that checked nothing must fail a CI job, like
 * a file that cannot be read; the reports say which of the two it was). */
int gr_check_exit_code(enum gr_check_status s);

/* "clean", "violations", "unusable" or "nothing_checked" (JSON status). */
const char *gr_check_status_name(enum gr_check_status s);

/* The tally of r's findings, in the same words in every report (the -q
 * line, the text report's result line, JUnit, HTML, and JSON's `tally`).
 * A violation is a finding that fails the check; the findings of rules
 * that do not fail by default (displaced, attribution) and the allowed
 * ones are counted apart, so each count is the sum of its parts.
 * gr_report_tally_head appends "clean", "N violation(s) (RULE N, ...)"
 * (violations only) or "nothing checked (WHY)"; gr_report_tally_rest
 * appends "; allowed by SOURCE: RULE N, ..." per source of allows
 * (gr_violation.allowed_by: "--allow" or a pyproject.toml) and "; not
 * failing: RULE N, ...", or nothing.  No newline. */
void gr_report_tally_head(gr_sb *sb, const gr_check_result *r);
void gr_report_tally_rest(gr_sb *sb, const gr_check_result *r);

/* Findings of rule in r that fail the check (neither allowed nor
 * advisory). */
size_t gr_report_failing_of(const gr_check_result *r, int rule);

/* on 1 (`check -v`): the text, JUnit and HTML reports list the refuted
 * predicted blind spots (gr_report_refuted), each on a "detail: " line;
 * 0, the default: they only count them, on one line of "what was
 * checked".  A refuted prediction limits nothing and finds nothing: it is
 * no warning.  JSON always lists them (`warnings`, `folded_warnings`). */
void gr_report_verbose(int on);
int gr_report_verbose_on(void);

/* Whether warning line w (gr_check_result.warnings) is a refuted
 * predicted blind spot: propagation.c's only warning, "predicted blind
 * spot: ...; refuted by ..." (its confirmed ones are violations, its
 * undecided ones a note). */
int gr_report_refuted(const char *w);

/* Refuted predicted blind spots of r: the listed ones and those counted
 * (gr_check_result.folded). */
uint64_t gr_report_nrefuted(const gr_check_result *r);

/* The line of "what was checked" that counts r's refuted predictions
 * ("  refuted predictions  N predicted blind spots (3.12+) disproved by
 * ...", newline included); nothing when there are none. */
void gr_report_refuted_line(gr_sb *sb, const gr_check_result *r);

/* Append the line (no "warning: ", no newline) of warnings counted, not
 * listed (gr_check_result.folded): "propagation: N more refuted predicted
 * blind spots of gG (tT) not listed (...)", or for the trace's count past
 * the caps (f->whole) "propagation: N more refuted predicted blind spots
 * of the trace not listed (...)". */
void gr_report_folded(gr_sb *sb, const gr_folded *f);

/* Append the coverage section of the text report (docs/RULES.md):
 * "coverage:" and one line each for records, threads and greenlets seen,
 * ground truth, blind spots, records lost and what ended the recording. */
void gr_report_coverage(gr_sb *sb, const gr_trace *t, const gr_coverage *cv);

/* The program's profilers of r (rule attribution, docs/RULES.md): a title
 * line and one line per profiler with its counts, the first `max` of them
 * (0: all) and a line saying how many more; nothing when the program
 * installed none. */
void gr_report_profilers(gr_sb *sb, const gr_trace *t, const gr_check_result *r, size_t max);

/* The same as a JSON array: every profiler with its counts and functions. */
json_t *gr_report_profilers_json(const gr_trace *t, const gr_check_result *r);

/* "checkable", "partly" (ground truth in some greenlets only) or
 * "not_checkable": whether the blind_spot rule could compare the profile
 * events with real stacks (gr_coverage.truth_points). */
const char *gr_coverage_blind_spots(const gr_coverage *cv);

/* Append to sb where a truncated trace (t->truncated) is cut, in the
 * words every command uses (check's `truncated:` line, check --html, dump's
 * last line, stats, diff): the file's size in bytes (t->size; for a
 * streamed trace the bytes read, which at the end is the file's size) and
 * where the valid part ends (t->truncated_at, a byte offset), e.g.
 * "500 bytes, the chunk at byte 16 is incomplete (no complete chunk)",
 * "N bytes, the complete chunks end at byte N, the end of the file",
 * "N bytes, only its header (no chunk)", "N bytes, inside its 16-byte
 * header".  No newline.  sb stays owned by the caller. */
void gr_report_cut_where(gr_sb *sb, const gr_trace *t);

/* Write the text report of one checked trace to out: the truncation line,
 * warnings, r->summary (if any), a count per rule checked (r->nrules),
 * each violation with its context dump lines, the informational notes,
 * and a result line.  The JSON and JUnit forms below also cover
 * r->nrules rules; JUnit puts r->summary into system-out. */
void gr_report_text(FILE *out, const gr_trace *t, const gr_check_result *r);

/* The JSON object describing one checked trace (new reference). */
json_t *gr_report_json_trace(const gr_trace *t, const gr_check_result *r);

/* The JSON object for a file that could not be used; error is the reader's
 * one-line message (new reference). */
json_t *gr_report_json_unusable(const char *file, const char *error);

/* JUnit XML being built: testsuite elements and totals. */
typedef struct gr_junit {
    gr_sb body;          /* the <testsuite> elements */
    size_t tests, failures, errors;
} gr_junit;

/* Start an empty report (*j need not be initialised). */
void gr_junit_init(gr_junit *j);

/* Add a testsuite for a checked trace: one testcase per rule, with a
 * failure element listing that rule's violations; warnings and notes go to
 * system-out. */
void gr_junit_add_trace(gr_junit *j, const gr_trace *t, const gr_check_result *r);

/* Add a testsuite for an unusable file: one testcase "read" with an error
 * element holding the message. */
void gr_junit_add_unusable(gr_junit *j, const char *file, const char *error);

/* Write the complete document to path.  Returns 0, or -1 with errno set if
 * the file could not be written. */
int gr_junit_write(const gr_junit *j, const char *path);

/* Release the report's memory. */
void gr_junit_free(gr_junit *j);

/* Append s to sb escaped for XML text or attribute values: & < > " ' become
 * entities, valid UTF-8 is kept, and bytes that XML 1.0 cannot hold
 * (control characters other than tab and newline, invalid UTF-8) become
 * the text "\xHH". */
void gr_xml_escape(gr_sb *sb, const char *s);

/* json_string that never fails on bad UTF-8: such input is escaped as in
 * gr_sb_escape (new reference). */
json_t *gr_json_str(const char *s);

/* uint64 as a JSON integer, or as a decimal string above LLONG_MAX (json_int_t is long long). */
json_t *gr_json_u64(uint64_t v);

#endif
