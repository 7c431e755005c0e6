/* main.c - the `greenreplay` command line: dispatch to its eleven
 * commands, record (runs the recorder) and conform (runs a profiler under
 * test), and check, dump, stats, edit, script, diff, reduce, export and
 * help (replayer, pure C).  usage_main below lists them. */
#include "check.h"
#include "color.h"
#include "diff.h"
#include "diff_ignore.h"
#include "diff_stream.h"
#include "dump.h"
#include "edit.h"
#include "export.h"
#include "html.h"
#include "outfile.h"
#include "pyproject.h"
#include "reader.h"
#include "record.h"
#include "conform_cmd.h"
#include "stall_cmd.h"
#include "reduce.h"
#include "report.h"
#include "script.h"
#include "split.h"
#include "stall.h"
#include "stats.h"
#include "text.h"
#include "version.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_main[] =
    "usage: greenreplay COMMAND [ARGS...]\n"
    "       greenreplay --help | --version\n"
    "\n"
    "Deterministic trace-and-replay tests for greenlets and Python profilers.\n"
    "\n"
    "commands:\n"
    "  record ...     run a Python program under the recorder, writing a trace\n"
    "  check FILE...  replay traces against shadow stacks and report violations\n"
    "                 (--stall: also the greenlet sampler's lock waits and samples)\n"
    "  dump FILE      print a trace in its text form (one line per record)\n"
    "  stats FILE     event counts per kind, thread and greenlet\n"
    "  edit           rewrite a trace without some records\n"
    "  script TRACE   write a Python program that acts out the trace's greenlets,\n"
    "                 calls, switches and marks (a bug reproduction)\n"
    "  diff A B       align two traces by structure and show where they diverge\n"
    "  reduce SCRIPT  shrink a failing script of `script` while the failure persists\n"
    "  export TRACE   write a trace as a timeline for Perfetto / chrome://tracing or\n"
    "                 speedscope (one track per greenlet)\n"
    "  conform ...    run a program recorded with a profiler under test inside it and\n"
    "                 compare the profiler's results with the recording\n"
    "  stall ...      does a sampler stall greenlet switches? switch times at N=0 and\n"
    "                 N idle greenlets, without and with the sampler attached\n"
    "  help [COMMAND] show this help, or a command's\n"
    "\n"
    "`greenreplay COMMAND --help` describes a command.  A usage error is one\n"
    "line on stderr, `greenreplay[: COMMAND]: what is wrong (... --help shows\n"
    "the usage)`, with exit status 2, for every command.\n"
    "\n"
    "Colour (text reports and -q lines of check and diff): on when stdout is a\n"
    "terminal; off when it is not, when NO_COLOR is set to a non-empty value or\n"
    "when TERM=dumb.  --color=always or --color=never overrides all three.\n"
    "JSON, JUnit and HTML never get colour.\n"
    "\n"
    "options:\n"
    "  -h, --help     show this help\n"
    "  --version      print the version of greenreplay and of the trace format\n"
    "\n"
    "exit status: 0 success (check: clean; diff: same structure), 1 check found\n"
    "violations, diff found differences or reduce found no failure, 2 unusable\n"
    "input (check: also a trace with nothing to check) or bad usage; record:\n"
    "the program's own (see `record --help`); conform: 0 pass, 1 differences,\n"
    "2 error, 3 skip (see `conform --help`).\n"
    "\n"
    "EXAMPLES\n"
    "  greenreplay record -o run.grt -- python3 app.py   # record a program\n"
    "  greenreplay check run.grt                          # check the trace\n"
    "  greenreplay export -o run.speedscope.json run.grt  # open it in speedscope\n"
    "  python3 -m greenreplay --help                      # the same tool\n";

static const char usage_check[] =
    "usage: greenreplay check FILE... [--format text|json] [-q|-v] [--allow RULE]\n"
    "                         [--fail-on RULE] [--strict-known] [--junit OUT.xml]\n"
    "                         [--html OUT.html] [--color[=WHEN]] [--in-memory]\n"
    "                         [--stall [--max-wait-us N]] [--from A [--to B]]\n"
    "\n"
    "Check each trace FILE (*.grt, from `greenreplay record`): replay the\n"
    "profiler's events into a stack per greenlet and compare it with the real\n"
    "Python stack the recorder wrote at each mark() and switch.  Each finding\n"
    "names the rule, the record, the thread (t1) and greenlet (g2), and says\n"
    "what the profiler missed; the records behind it follow, then a key to\n"
    "their words.  docs/RULES.md explains every rule, docs/USAGE.md every\n"
    "option in full.\n"
    "\n"
    "rules (the count of each comes first in the report):\n"
    "  imbalance           a return whose call the profiler never saw, or the\n"
    "                      reverse\n"
    "  blind_spot          the real stack has calls the profiler did not see\n"
    "  switch_consistency  events of a greenlet that was not the one running\n"
    "  propagation         a greenlet resumed with profiling off for it\n"
    "  callback_guard      greenlet's switch callback was seen by the profiler\n"
    "  displaced           the program replaced or removed greenreplay's reference\n"
    "                      profiler: what that one missed (the program's own:\n"
    "                      attribution); not failing unless --fail-on displaced\n"
    "  unreached           a thread the profiler was never installed in\n"
    "  attribution         the program's own profilers (a cProfile.Profile per\n"
    "                      request) missed their greenlet's calls or counted\n"
    "                      another's; each listed; not failing unless --fail-on\n"
    "\n"
    "words of the report:\n"
    "  trailer             the trace's last chunk (first line): events written,\n"
    "                      records dropped, write errors, why recording ended\n"
    "  shadow stack        the stack rebuilt from the profiler's events\n"
    "  ground truth        the real stack: ground-truth points (MARK records, and\n"
    "                      SWITCH/THROW records that carry the target's real stack,\n"
    "                      seen outside a callback)\n"
    "  seed                the frames a greenlet already had when first seen\n"
    "  continued switch    a switch back to where the greenlet was last seen, so\n"
    "                      its stack is known without being written\n"
    "  open at stop        frames still running when recording stopped (not a\n"
    "                      finding); greenreplay's own frames are left out\n"
    "  what was checked    the last section: records, threads and greenlets,\n"
    "                      ground-truth points, records lost, what ended it\n"
    "\n"
    "options:\n"
    "  --format text|json  the report (default text; json: one document)\n"
    "  -q, --quiet         one line per trace: \"FILE: clean, N records\", \"FILE: N\n"
    "                      violations (RULE N, ...), N records; not failing: ...\",\n"
    "                      \"FILE: nothing checked (WHY)\" or \"FILE: unusable: CAUSE\"\n"
    "  --allow RULE[:FUNCTION]  listed and counted, marked allowed, not failing\n"
    "                      (also `allow = [...]` under [tool.greenreplay] in the\n"
    "                      nearest pyproject.toml); repeatable\n"
    "  --fail-on RULE      findings of RULE fail (displaced, attribution; also\n"
    "                      `fail_on`)\n"
    "  --strict-known      a known-benign cause (gevent's thread pool removing\n"
    "                      the profiler) is a displaced finding, not a note\n"
    "  -v, --verbose       list each refuted predicted blind spot (3.12+) on a\n"
    "                      \"detail:\" line; without it they are only counted\n"
    "  --junit OUT         also write JUnit XML: a testsuite per trace\n"
    "  --html OUT          also write a self-contained HTML report\n"
    "  --color[=WHEN]      auto (default: a terminal, NO_COLOR unset or empty,\n"
    "                      TERM not dumb), always, never\n"
    "  --in-memory         read each trace whole (the same report)\n"
    "  --stall             also check the sampler data of FILE.times: rules\n"
    "                      stall_wait, stall_depth, sample (docs/RULES.md)\n"
    "  --max-wait-us N     stall_wait's threshold (default 1000; with --stall)\n"
    "  --from A, --to B    only the records of chunks A..B-1 (for workers that\n"
    "                      split a long trace; docs/ARCHITECTURE.md)\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit status: 0 every trace clean, 1 violations found, 2 a file missing or\n"
    "corrupt (one line with the byte offset on stderr), a trace with nothing to\n"
    "check, an OUT that cannot be written (refused before reading), or bad\n"
    "usage.  With several files the highest status wins.\n"
    "\n"
    "EXAMPLES\n"
    "  greenreplay check run.grt                     # the report; exit 0 clean\n"
    "  greenreplay check -q traces/*.grt             # one line per trace\n"
    "  greenreplay check --fail-on displaced run.grt # the program's own changes fail\n"
    "  greenreplay check --format json run.grt | jq '.traces[0].counts'\n"
    "  greenreplay check --html report.html run.grt  # open it in a browser\n";

static const char usage_dump[] =
    "usage: greenreplay dump FILE [--times] [--in-memory]\n"
    "\n"
    "Print the text form of trace FILE on stdout: `# key: value` META lines,\n"
    "one line per indexed record (`INDEX KIND tTID gGID ...`, docs/FORMAT.md\n"
    "section 6), the META lines written after the first record (some at\n"
    "stop), then `# trailer: ...` or `# truncated: SIZE bytes, WHERE` (as check\n"
    "says it).  The trace is\n"
    "read one chunk at a time: a corrupt chunk ends the output there, with\n"
    "the error on stderr (exit 2).\n"
    "\n"
    "options:\n"
    "  --times     append ` dt=Nns` to each line, from the side channel\n"
    "              FILE.times (nanoseconds since the previous record)\n"
    "  --in-memory\n"
    "              read the trace (and FILE.times) whole into memory first:\n"
    "              the same bytes out (for comparisons); a corrupt trace\n"
    "              prints nothing but the error\n"
    "  -h, --help  show this help\n"
    "\n"
    "exit status: 0 ok, 2 missing or corrupt file, or bad usage.\n";

static const char usage_stats[] =
    "usage: greenreplay stats FILE [--format text|json]\n"
    "\n"
    "Count the records of trace FILE per kind, per thread and per greenlet\n"
    "(SWITCH/THROW count for their target greenlet).\n"
    "\n"
    "options:\n"
    "  --format text|json  output form (default text)\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit status: 0 ok, 2 missing or corrupt file, or bad usage.\n";

static const char usage_edit[] =
    "usage: greenreplay edit [--drop N[,N...]] [--chunk BYTES] -o OUT IN\n"
    "\n"
    "Write trace IN to OUT without the indexed records N (indices as printed\n"
    "by `dump`; --drop may be repeated).  Definitions are kept; later records\n"
    "are renumbered.  GAP records (the records a --ring recording dropped) are\n"
    "kept, each before the first kept record that followed it: OUT counts the\n"
    "same loss as IN.  OUT's records chunks are compressed if IN has any\n"
    "compressed one (record's default), plain if not (record --no-compress).\n"
    "Use it to build test cases, e.g. drop a CALL to check that `check`\n"
    "reports the blind spot.\n"
    "\n"
    "options:\n"
    "  --drop N[,N...]  indices to leave out\n"
    "  --chunk BYTES    chunk payload size of OUT (default 65536, as the recorder\n"
    "                   writes; raised to what the longest string or record\n"
    "                   needs): small chunks make traces to try `check --from\n"
    "                   --to` on\n"
    "  -o, --output OUT output file (required)\n"
    "  -h, --help       show this help\n"
    "\n"
    "exit status: 0 ok, 2 missing or corrupt input, bad index, write error or\n"
    "bad usage.\n";

static const char usage_script[] =
    "usage: greenreplay script TRACE [--anonymize] [-q] [-o OUT.py]\n"
    "\n"
    "Write a standalone Python program (needs greenlet and `import greenreplay`)\n"
    "that acts out the structure of trace TRACE: its greenlets (creation order,\n"
    "parents and their changes, the order of switches and throws, deaths), the\n"
    "nesting of calls inside each greenlet between switches, with functions of\n"
    "the recorded qualnames, C calls (the same builtin where one is known, else\n"
    "a neutral C call), marks, and start()/stop() where the trace has them.\n"
    "Values passed by switches, files and line numbers are not reproduced.\n"
    "Record it with the Python that ran the original (it needs greenlet; the\n"
    "header names the version, the trace holds no interpreter path):\n"
    "  greenreplay record --manual -o repro.grt -- PYTHON OUT.py\n"
    "and compare with the original (docs/WORKFLOW.md):\n"
    "  greenreplay diff --c-names script TRACE repro.grt\n"
    "\n"
    "What the program cannot reproduce (events of several threads inside one\n"
    "blocking call, C code the profiler does not see, frames that existed before\n"
    "start() below a greenlet's seed, ...) is listed in its header comment and\n"
    "on stderr (`greenreplay: script: note: ...`); the rest is produced.\n"
    "A trace of greenlets run inside the program's own profile function (no\n"
    "record says what they ran) is refused: exit 2, the reason, nothing written.\n"
    "A program recorded as `python -m MODULE`: runpy's launch frames below its\n"
    "<module> are left out (diff leaves them out too), the program runs as a\n"
    "file, and its header says the original was run with -m.\n"
    "\n"
    "options:\n"
    "  --anonymize     neutral names: functions f1, f2, ..., mark labels m1, m2,\n"
    "                  ...; no file names, no strings of the trace, no names of C\n"
    "                  functions (C calls neutral, except sys.settrace and\n"
    "                  sys.setprofile, whose effect the reproduction needs)\n"
    "  -o, --output OUT  write the program to OUT (default: stdout); one that\n"
    "                  cannot be written is refused before TRACE is read\n"
    "                  (\"greenreplay: script: -o OUT: cannot write it: CAUSE\")\n"
    "  -q, --quiet     no notes on stderr\n"
    "  -h, --help      show this help\n"
    "\n"
    "Memory: the trace is read as a stream, twice (read whole from a pipe), and\n"
    "the program is written as it is made.  A greenlet's frames and actions are\n"
    "held while it lives: once it is dead and no later record names it, they\n"
    "wait in a temporary file until the program is written.  A frame that never\n"
    "returns (a hub's loop) holds what it did: about 36 bytes per switch() it\n"
    "made; each greenlet ever seen keeps about 250 bytes.  Identical function\n"
    "bodies share a def among the last million distinct ones (32 MB of text) at\n"
    "most; past that a long trace gets a longer program that does the same.  The\n"
    "temporary files (in $TMPDIR, else /tmp: the program's defs, the dead\n"
    "greenlets, together about half the program's size; unlinked at once) go\n"
    "when script ends (docs/ARCHITECTURE.md, docs/PERFORMANCE.md); one that\n"
    "cannot be written is named in the error.\n"
    "\n"
    "exit status: 0 written (notes or not), 2 missing or corrupt trace, write\n"
    "error or bad usage.\n";

static const char usage_diff[] =
    "usage: greenreplay diff A B [--ignore KNOWN_ISSUES_FILE|ID,...] [--context N]\n"
    "                            [--max N] [--c-names exact|script|any] [--files]\n"
    "                            [--rename] [-q] [--color[=WHEN]] [--in-memory]\n"
    "\n"
    "Align traces A and B by structure and print the first divergences in a\n"
    "unified-diff style: `-` records only in A, `+` only in B, with up to N\n"
    "records of context and, per hunk, the greenlet and its stack just before\n"
    "the first divergent record.  Records are compared, not by index, but as\n"
    "tokens: kind, thread and greenlet by order of first sight, code by qualname\n"
    "(not file and line), C functions by name, mark labels and flags, seed and\n"
    "real stacks (a continued switch, written without one, with the stack its\n"
    "trace's records give: traces recorded with switch_stacks needed and every\n"
    "compare alike), switch state (prof, tracing, use_tracing when both traces\n"
    "know it); INSTR records only when both traces have them.  A program run\n"
    "with `python -m`: runpy's launch frames below its <module> are left out of\n"
    "the stacks and of INSTR's frame counts, and their returns are not compared,\n"
    "as `script` leaves them out.\n"
    "\n"
    "options:\n"
    "  --ignore ARG     skip known version differences: ARG is a known-issues file\n"
    "                   (fixtures/known-issues.ini: sections [ID]) or ids:\n"
    "                   gen-finalize (cpython-113728, cpython-140373): call/return\n"
    "                   pairs of generators finalized unfinished (3.9-3.12 only);\n"
    "                   c-return-without-c-call (cpython-122029): c_return with no\n"
    "                   c_call (3.12.0-3.12.4).  May be repeated.\n"
    "  --context N      records of context around a divergence (default 3)\n"
    "  --max N          hunks printed (default 3; 0: all)\n"
    "  --c-names MODE   exact (default): C functions by name; script: as a script\n"
    "                   of `greenreplay script` reproduces them (names it calls\n"
    "                   by name, every other C call is just a C call): compare\n"
    "                   a recording of a script with its original trace (where\n"
    "                   recording starts, the seed of the greenlet that called\n"
    "                   start() is compared without greenreplay's own frames\n"
    "                   and the return from start() is not: a whole-program\n"
    "                   recording's first call of <module> matches the\n"
    "                   script's start() at its top level; and the records of\n"
    "                   the module thread after its <module> returned, but\n"
    "                   STOP and STACK, are not compared: interpreter exit,\n"
    "                   which a script does not reproduce, counted on a\n"
    "                   `# not compared:` line); any: not by name\n"
    "  --files          also compare code files and first lines\n"
    "  --rename         compare qualnames and mark labels up to a consistent\n"
    "                   renaming (for scripts made with --anonymize)\n"
    "  --in-memory      read both traces whole and align them globally (the same\n"
    "                   report where the streamed one is exact, see Memory)\n"
    "  -q, --quiet      print only \"A B: \" and the summary line (same structure, or\n"
    "                   the number of differences)\n"
    "  --color[=WHEN]   colour the report: auto (default: when stdout is a terminal,\n"
    "                   NO_COLOR is unset or empty and TERM is not dumb), always,\n"
    "                   never\n"
    "  -h, --help       show this help\n"
    "\n"
    "Memory: bounded, not growing with the length of the traces: each is read\n"
    "one batch of records at a time (three times: a scan, the comparison, the\n"
    "records shown) and compared in lockstep; at a divergence up to 524,288\n"
    "records of each are queued and aligned (about 100 MB at most).  Beyond\n"
    "that it grows with the program's structure (distinct kinds of record per\n"
    "code and thread, about 100 bytes each), with the greenlets seen (about 50\n"
    "bytes each: their order of first sight) and with the differences (32\n"
    "bytes per run): under 100 MB on a 100 M-record trace of 385,000\n"
    "greenlets.  When the rest of both traces at the first divergence fits in\n"
    "those 524,288 records, the alignment is the global minimal one; past it,\n"
    "each divergence is aligned locally (from 256 records of each, doubling)\n"
    "and the comparison resumes after 64 equal records: a difference among\n"
    "identical records may be placed at another one of them.\n"
    "With --ignore or --c-names script (their normalizations look ahead), or\n"
    "a trace that is not a regular file (a pipe), both are read whole\n"
    "instead: about 120 bytes per record of each.\n"
    "\n"
    "exit status: 0 same structure (or the same as far as a trace cut short\n"
    "goes: the summary says so), 1 different, 2 a trace missing or corrupt\n"
    "(one line with file and byte offset), a trace without a record (empty,\n"
    "cut before its first record), traces of different format versions, or bad\n"
    "usage.\n";

static const char usage_reduce[] =
    "usage: greenreplay reduce SCRIPT --python PY --rule RULE [-o OUT.py]\n"
    "                          [--timeout S] [--max-runs N] [--workdir DIR]\n"
    "                          [--keep] [-q]\n"
    "\n"
    "Shrink SCRIPT, a program written by `greenreplay script` that fails, for as\n"
    "long as the failure persists: delta debugging (ddmin) over its units (the\n"
    "lines tagged #@N: calls, C calls, marks, switches, greenlet creations,\n"
    "helpers), then dropping the definitions nothing calls any more.  Each\n"
    "candidate is recorded with `greenreplay record --manual -- PY CANDIDATE`\n"
    "and checked: it still fails when the recording exits with the same status\n"
    "as the original's and `check` reports at least one violation of RULE\n"
    "(imbalance, blind_spot, switch_consistency, propagation or callback_guard).\n"
    "Progress goes\n"
    "to stderr, one line per run.\n"
    "\n"
    "options:\n"
    "  --python PY      interpreter to record with (e.g. `ci/envs.sh python ENV`)\n"
    "  --rule RULE      the rule that must keep firing\n"
    "  -o, --output OUT write the reduced script to OUT (default: stdout)\n"
    "  --timeout S      seconds per run before it counts as not failing\n"
    "                   (default: five times the original's run, at least 5)\n"
    "  --max-runs N     stop after N runs with the smallest script so far (0: none)\n"
    "  --workdir DIR    where the scratch directory goes ($TMPDIR or /tmp)\n"
    "  --keep           keep the scratch directory (greenreplay-reduce.XXXXXX: the\n"
    "                   last candidate, its trace and record's output) and name it;\n"
    "                   without it, it is removed however reduce ends (also on\n"
    "                   SIGINT, SIGTERM, SIGHUP)\n"
    "  -q, --quiet      no progress\n"
    "  -h, --help       show this help\n"
    "\n"
    "exit status: 0 reduced script written, 1 SCRIPT does not fail that way\n"
    "(nothing written), 2 bad input or usage (also PY missing, or not running as\n"
    "a Python interpreter with the recorder: checked first, as record does),\n"
    "I/O error.\n";

/* The usage error of every command: one line on stderr, "greenreplay:
 * COMMAND: MESSAGE (`greenreplay COMMAND --help` shows the usage)" (the
 * same as record.c's), exit status 2.  COMMAND comes from the usage text's
 * first line; none for the top level. */
static int bad_usage(const char *usage, const char *fmt, const char *arg)
{
    const char *p = strstr(usage, "greenreplay ");
    char cmd[32] = "";
    if (p && p < strchr(usage, '\n')) {
        size_t n = strcspn(p + 12, " \n");
        if (p[12] >= 'a' && p[12] <= 'z' && n < sizeof cmd) {
            memcpy(cmd, p + 12, n);
            cmd[n] = '\0';
        }
    }
    fprintf(stderr, "greenreplay: %s%s", cmd, *cmd ? ": " : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (`greenreplay %s%s--help` shows the usage)\n", cmd, *cmd ? " " : "");
    return 2;
}

/* getopt_long error for argv's current option. */
static int option_error(const char *usage, int c, char **argv)
{
    const char *opt = argv[optind - 1];
    if (c == ':')
        return bad_usage(usage, "option %s needs an argument", opt);
    return bad_usage(usage, "unknown option %s", opt);
}

/* 0 when `path`, the argument of option `opt` of command `cmd`, can be
 * written (gr_outfile_check: nothing is changed), else one line
 * "greenreplay: CMD: OPT PATH: cannot write it: CAUSE" on stderr and 2 (the
 * exit status of unusable input and bad usage). */
static int refuse_output(const char *cmd, const char *opt, const char *path)
{
    /* `check --html a.grt b.grt` would write the report over trace a.grt,
     * and `check --html -o r.html` to a file named "-o": both refused. */
    char head[GR_MAGIC_LEN];
    FILE *f = fopen(path, "rb");
    int trace = f && fread(head, 1, sizeof head, f) == sizeof head &&
                memcmp(head, GR_MAGIC, GR_MAGIC_LEN) == 0;
    if (f)
        fclose(f);
    if (trace || (path[0] == '-' && path[1])) {
        fprintf(stderr, "greenreplay: %s: %s %s: %s (%s takes the output file's name)\n", cmd,
                opt, path, trace ? "is a trace, not overwritten" : "looks like an option", opt);
        return 2;
    }
    int e = gr_outfile_check(path);
    if (!e)
        return 0;
    fprintf(stderr, "greenreplay: %s: %s %s: cannot write it: %s\n", cmd, opt, path, strerror(e));
    return 2;
}

/* Open a trace for streaming (check, stats, dump: memory is one chunk,
 * docs/ARCHITECTURE.md); on failure print the one-line error and return
 * non-zero. */
static int open_stream(gr_trace *t, const char *path)
{
    if (gr_trace_open(t, path) == GR_READ_OK)
        return 0;
    fprintf(stderr, "greenreplay: %s\n", t->err.msg);
    return 1;
}

/* Load a trace; on failure print the one-line error and return non-zero. */
static int load(gr_trace *t, const char *path)
{
    if (gr_trace_load(t, path) == GR_READ_OK)
        return 0;
    fprintf(stderr, "greenreplay: %s\n", t->err.msg);
    return 1;
}

/* Whether path names a regular file (one that can be read again). */
static int regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* gr_diff_scan with load's message on failure. */
static int scan(gr_diff_info *d, const char *path)
{
    if (gr_diff_scan(d, path) == GR_READ_OK)
        return 0;
    fprintf(stderr, "greenreplay: %s\n", d->t.err.msg);
    return 1;
}

static int parse_format(const char *s, int *json)
{
    if (strcmp(s, "text") == 0)
        *json = 0;
    else if (strcmp(s, "json") == 0)
        *json = 1;
    else
        return -1;
    return 0;
}

/* Load FILE.times for --stall.  Returns 0, or non-zero after putting the
 * one-line reason in *err (owned). */
static int load_side(gr_times *tm, const char *trace, char **err)
{
    gr_sb path;
    gr_sb_init(&path);
    gr_sb_printf(&path, "%s.times", trace);
    gr_times_load(tm, gr_sb_str(&path));
    *err = gr_stall_side_error(tm, gr_sb_str(&path));
    gr_sb_free(&path);
    return *err != NULL;
}

/* check --stall of one trace: streamed (t opened with gr_trace_open,
 * gr_stall_stream), or loaded whole when t was loaded (--html) or the side
 * channel is not in index order.  Returns an enum gr_stall_stream_status
 * (GR_STALL_SIDE_UNUSABLE: *err owned; GR_STALL_TRACE_CORRUPT: t->err). */
static int stall_one(gr_trace *t, const char *path, uint64_t max_wait, gr_times *tm,
                     gr_stall *st, gr_check_result *res, size_t *nv, char **err)
{
    if (t->streaming) {
        gr_sb side;
        gr_sb_init(&side);
        gr_sb_printf(&side, "%s.times", path);
        int k = gr_stall_stream(t, gr_sb_str(&side), max_wait, st, res, nv, err);
        gr_sb_free(&side);
        if (k != GR_STALL_UNORDERED)
            return k;
        gr_trace_free(t);
        if (gr_trace_load(t, path) != GR_READ_OK)
            return GR_STALL_TRACE_CORRUPT;
    }
    if (load_side(tm, path, err))
        return GR_STALL_SIDE_UNUSABLE;
    *nv = gr_stall_run(t, tm, max_wait, st, res);
    return GR_STALL_DONE;
}

/* Parse a decimal number (digits only, below 2^64-1): --from, --to,
 * --chunk, --max-wait-us. */
static int parse_u64(const char *s, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end || x >= UINT64_MAX)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

/* The range line of a split check's text report (split.h). */
static void print_range(FILE *out, const gr_split *sp)
{
    fprintf(out, "range: chunks [%" PRIu64 ", ", sp->from);
    if (sp->to == UINT64_MAX)
        fputs("end)", out);
    else
        fprintf(out, "%" PRIu64 ")", sp->to);
    fprintf(out, " = records [%" PRIu64 ", ", sp->lo);
    if (sp->hi == UINT64_MAX)
        fputs("end)", out);
    else
        fprintf(out, "%" PRIu64 ")", sp->hi);
    if (sp->read_on)
        fprintf(out, "; read on %" PRIu64 " records past it", sp->read_on);
    fprintf(out, "; the trace has %" PRIu64 " chunks", sp->chunks);
    fputc('\n', out);
}

/* The "range" member of a split check's JSON trace (split.h). */
static json_t *range_json(const gr_split *sp)
{
    json_t *o = json_object();
    json_object_set_new(o, "from", gr_json_u64(sp->from));
    json_object_set_new(o, "to", sp->to == UINT64_MAX ? json_null() : gr_json_u64(sp->to));
    json_object_set_new(o, "first_record", gr_json_u64(sp->lo));
    json_object_set_new(o, "end_record", sp->hi == UINT64_MAX ? json_null() : gr_json_u64(sp->hi));
    json_object_set_new(o, "read_on", gr_json_u64(sp->read_on));
    json_object_set_new(o, "chunks", gr_json_u64(sp->chunks));
    json_object_set_new(o, "read_to_end", json_boolean(sp->ended));
    return o;
}

/* Parse --max-wait-us N (decimal microseconds) into ns. */
static int parse_wait(const char *s, uint64_t *ns)
{
    uint64_t v;
    if (parse_u64(s, &v) < 0 || v > UINT64_MAX / 1000)
        return -1;
    *ns = v * 1000;
    return 0;
}

/* check's options and what it has found over its files. */
struct check_run {
    const char **allow, **fail_on;
    size_t nallow, nfail_on;
    int strict_known;
    int json, stall, wait_set, quiet, in_memory, split;
    gr_split range;
    enum gr_color_mode color_mode;
    uint64_t max_wait;
    const char *junit, *html;
    int status; /* exit status: the highest of the files' */
    size_t total;    /* violations: findings that fail (gr_check_failing) */
    size_t findings; /* every finding, failing or not */
    json_t *jtraces;
    gr_junit ju;
    gr_html hr;
    int color;
    int streamed;
    gr_pyproject pp; /* [tool.greenreplay]: allow and fail_on borrow its strings */
};

/* What a step of cmd_check returns to let the next one run (else the exit
 * status). */
enum { CHECK_GO_ON = -1 };

/* check's options, into ck; --help printed. */
static int check_options(struct check_run *ck, int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"junit", required_argument, NULL, 'j'},
        {"stall", no_argument, NULL, 's'},
        {"max-wait-us", required_argument, NULL, 'w'},
        {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},
        {"html", required_argument, NULL, 'H'},
        {"quiet", no_argument, NULL, 'q'},
        {"in-memory", no_argument, NULL, 'M'},
        {"color", optional_argument, NULL, 'C'},
        {"colour", optional_argument, NULL, 'C'},
        {"allow", required_argument, NULL, 'a'},
        {"strict-known", no_argument, NULL, 'k'},
        {"fail-on", required_argument, NULL, 'O'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, ":hqv", opts, NULL)) != -1) {
        switch (c) {
        case 'v': gr_report_verbose(1); break;
        case 'H': ck->html = optarg; break;
        case 'q': ck->quiet = 1; break;
        case 'M': ck->in_memory = 1; break;
        case 'C':
            if (gr_color_parse(optarg, &ck->color_mode) < 0)
                return bad_usage(usage_check, "bad --color '%s' (auto, always or never)", optarg);
            break;
        case 'f':
            if (parse_format(optarg, &ck->json) < 0)
                return bad_usage(usage_check, "unknown format '%s' (text or json)", optarg);
            break;
        case 'j': ck->junit = optarg; break;
        case 'a':
            ck->allow = gr_xgrow(ck->allow, &(size_t){ck->nallow}, ck->nallow + 1, sizeof *ck->allow);
            ck->allow[ck->nallow++] = optarg;
            break;
        case 'k': ck->strict_known = 1; break;
        case 'O':
            ck->fail_on = gr_xgrow(ck->fail_on, &(size_t){ck->nfail_on}, ck->nfail_on + 1, sizeof *ck->fail_on);
            ck->fail_on[ck->nfail_on++] = optarg;
            break;
        case 's': ck->stall = 1; break;
        case 'F':
        case 'T':
            if (parse_u64(optarg, c == 'F' ? &ck->range.from : &ck->range.to) < 0)
                return bad_usage(usage_check, c == 'F' ? "bad --from '%s' (a chunk index: 0, 1, ...)"
                                                       : "bad --to '%s' (a chunk index: 1, 2, ...)",
                                 optarg);
            ck->split = 1;
            break;
        case 'w':
            if (parse_wait(optarg, &ck->max_wait) < 0)
                return bad_usage(usage_check, "bad --max-wait-us '%s' (microseconds)", optarg);
            ck->wait_set = 1;
            break;
        case 'h': fputs(usage_check, stdout); return 0;
        default: return option_error(usage_check, c, argv);
        }
    }
    return CHECK_GO_ON;
}

/* [tool.greenreplay] of the nearest pyproject.toml, the rule names and the
 * options that do not go together; the report files writable. */
static int check_config(struct check_run *ck)
{
    /* [tool.greenreplay] of the nearest pyproject.toml, then the options */
    const gr_pyproject *pp = &ck->pp;
    char pperr[512];
    if (gr_pyproject_read(&ck->pp, pperr, sizeof pperr) < 0) {
        fprintf(stderr, "greenreplay: check: %s\n", pperr);
        return 2;
    }
    for (size_t k = 0; k < pp->nfail_on; k++) {
        ck->fail_on = gr_xgrow(ck->fail_on, &(size_t){ck->nfail_on}, ck->nfail_on + 1, sizeof *ck->fail_on);
        ck->fail_on[ck->nfail_on++] = pp->fail_on[k];
    }
    for (size_t k = 0; k < pp->nallow; k++) {
        ck->allow = gr_xgrow(ck->allow, &(size_t){ck->nallow}, ck->nallow + 1, sizeof *ck->allow);
        ck->allow[ck->nallow++] = pp->allow[k];
    }
    if (ck->strict_known < 0)
        ck->strict_known = pp->strict_known > 0;
    gr_check_known_causes(ck->strict_known);
    {
        /* a name that is no rule, on the command line or in the file */
        gr_check_result probe;
        memset(&probe, 0, sizeof probe);
        long bad = gr_check_fail_on(ck->fail_on, ck->nfail_on);
        const char *opt = "--fail-on", *spec = bad >= 0 ? ck->fail_on[bad] : NULL;
        int in_file = bad >= 0 && (size_t)bad >= ck->nfail_on - pp->nfail_on;
        if (bad < 0 && (bad = gr_check_allow(&probe, ck->allow, ck->nallow)) >= 0) {
            opt = "--allow";
            spec = ck->allow[bad];
            in_file = (size_t)bad >= ck->nallow - pp->nallow;
        }
        if (spec) {
            fprintf(stderr, "greenreplay: check: %s '%s': no such rule%s%s%s\n", opt, spec,
                    in_file ? " (in " : "", in_file ? pp->path : "", in_file ? ")" : "");
            return 2;
        }
    }
    if (ck->wait_set && !ck->stall)
        return bad_usage(usage_check, "%s", "--max-wait-us needs --stall");
    if (ck->quiet && ck->json)
        return bad_usage(usage_check, "%s", "-q does not go with --format json");
    if (ck->split && (ck->stall || ck->html || ck->in_memory))
        return bad_usage(usage_check, "%s", "--from/--to do not go with --stall, --html or --in-memory");
    if (ck->split && ck->range.from >= ck->range.to) {
        char b[64];
        snprintf(b, sizeof b, "%" PRIu64 " >= %" PRIu64, ck->range.from, ck->range.to);
        return bad_usage(usage_check, "empty range: --from must be below --to (%s)", b);
    }
    /* Report files are known writable before any trace is read: else one
     * line and exit 2, with nothing checked and nothing written. */
    if ((ck->junit && refuse_output("check", "--junit", ck->junit)) ||
        (ck->html && refuse_output("check", "--html", ck->html)))
        return 2;
    return CHECK_GO_ON;
}

/* A trace that cannot be checked: in every report asked for; t freed. */
static void check_unusable(struct check_run *ck, gr_trace *t, const char *path)
{
    if (ck->jtraces)
        json_array_append_new(ck->jtraces, gr_report_json_unusable(path, t->err.msg));
    if (ck->junit)
        gr_junit_add_unusable(&ck->ju, path, t->err.msg);
    gr_html_add_unusable(&ck->hr, path, t->err.msg);
    if (ck->quiet)
        gr_color_check_unusable(stdout, path, t->err.msg, ck->color);
    gr_trace_free(t);
    ck->status = gr_check_exit_code(GR_CHECK_UNUSABLE);
}

/* Findings of res allowed and not yet attributed: allowed by `by`. */
static void mark_allowed_by(gr_check_result *res, const char *by)
{
    for (size_t i = 0; i < res->nv; i++)
        if (res->v[i].allowed && !res->v[i].allowed_by)
            res->v[i].allowed_by = by;
}

/* One trace's result: the exit status, and its part of each report. */
static void check_report(struct check_run *ck, const gr_trace *t, gr_check_result *res, const gr_stall *st,
                         size_t nv, const char *path, int first)
{
    /* the command line's allows, then pyproject.toml's (check_config put
       them last), each finding marked with where its allow came from */
    size_t ncli = ck->nallow - ck->pp.nallow;
    gr_check_allow(res, ck->allow, ncli);
    mark_allowed_by(res, "--allow");
    gr_check_allow(res, ck->allow + ncli, ck->pp.nallow);
    mark_allowed_by(res, ck->pp.path);
    ck->total += gr_check_failing(res);
    ck->findings += nv;
    int code = gr_check_exit_code(gr_check_status_of(res));
    if (code > ck->status)
        ck->status = code;
    if (!nv && res->coverage.nothing)
        fprintf(stderr, "greenreplay: %s: nothing checked: %s\n", path,
                res->coverage.nothing);
    if (ck->jtraces) {
        json_t *jt = gr_report_json_trace(t, res);
        if (ck->stall)
            json_object_set_new(jt, "stall", gr_stall_json(st));
        if (ck->split)
            json_object_set_new(jt, "range", range_json(&ck->range));
        json_array_append_new(ck->jtraces, jt);
    } else if (ck->quiet) {
        gr_color_check_summary(stdout, t, res, ck->color);
    } else {
        if (!first)
            fputc('\n', stdout);
        if (ck->split)
            print_range(stdout, &ck->range);
        gr_color_report(stdout, t, res, ck->color);
    }
    if (ck->junit) /* built only when asked for (its memory grows with the
                      violations and warnings of every trace) */
        gr_junit_add_trace(&ck->ju, t, res);
    if (ck->html)
        gr_html_add_trace(&ck->hr, t, res);
}

/* One trace FILE: checked (streamed, loaded, a range of chunks, or with
 * --stall) and reported. */
static void check_one(struct check_run *ck, const char *path, int first)
{
    gr_trace t;
    if (ck->streamed ? open_stream(&t, path) : load(&t, path)) {
        check_unusable(ck, &t, path);
        return;
    }
    gr_times tm;
    gr_stall st;
    memset(&tm, 0, sizeof tm);
    memset(&st, 0, sizeof st);
    gr_check_result res;
    size_t nv = 0;
    if (ck->stall) {
        char *err = NULL;
        int k = stall_one(&t, path, ck->max_wait, &tm, &st, &res, &nv, &err);
        if (k == GR_STALL_TRACE_CORRUPT) {
            fprintf(stderr, "greenreplay: %s\n", t.err.msg);
            gr_times_free(&tm);
            check_unusable(ck, &t, path);
            return;
        }
        if (k == GR_STALL_SIDE_UNUSABLE) {
            fprintf(stderr, "greenreplay: %s\n", err);
            if (ck->jtraces)
                json_array_append_new(ck->jtraces, gr_report_json_unusable(path, err));
            if (ck->junit)
                gr_junit_add_unusable(&ck->ju, path, err);
            gr_html_add_unusable(&ck->hr, path, err);
            if (ck->quiet)
                gr_color_check_unusable(stdout, path, err, ck->color);
            free(err);
            gr_times_free(&tm);
            gr_trace_free(&t);
            ck->status = gr_check_exit_code(GR_CHECK_UNUSABLE);
            return;
        }
    }
    if (ck->split) {
        int rc = gr_check_split(&t, &ck->range, &res);
        nv = rc == GR_SPLIT_OK ? res.nv : SIZE_MAX;
        if (rc == GR_SPLIT_PAST_END) {
            snprintf(t.err.msg, sizeof t.err.msg,
                     "%s: --from %" PRIu64 " is past the last chunk: the trace has %" PRIu64
                     " chunk%s",
                     path, ck->range.from, ck->range.chunks, ck->range.chunks == 1 ? "" : "s");
            fprintf(stderr, "greenreplay: %s\n", t.err.msg);
            check_unusable(ck, &t, path);
            return;
        }
    } else if (!ck->stall) {
        nv = ck->streamed ? gr_check_stream(&t, &res) : gr_check_run(&t, &res);
    }
    if (nv == SIZE_MAX) { /* a streamed trace turned out corrupt part way */
        fprintf(stderr, "greenreplay: %s\n", t.err.msg);
        check_unusable(ck, &t, path);
        return;
    }
    check_report(ck, &t, &res, &st, nv, path, first);
    gr_check_result_free(&res);
    gr_stall_free(&st);
    gr_times_free(&tm);
    gr_trace_free(&t);
}

/* The options' arrays and [tool.greenreplay], whatever step stopped. */
static void check_release(struct check_run *ck)
{
    free(ck->allow);
    free(ck->fail_on);
    gr_pyproject_free(&ck->pp);
}

/* The reports written once every trace is checked; the exit status. */
static int check_finish(struct check_run *ck)
{
    if (ck->jtraces) {
        json_t *doc = json_object();
        json_object_set_new(doc, "traces", ck->jtraces);
        json_object_set_new(doc, "violations", gr_json_u64(ck->total));
        json_object_set_new(doc, "findings", gr_json_u64(ck->findings));
        json_object_set_new(doc, "exit_code", json_integer(ck->status));
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        fputc('\n', stdout);
        json_decref(doc);
    }
    if (ck->junit && gr_junit_write(&ck->ju, ck->junit) < 0) {
        fprintf(stderr, "greenreplay: check: --junit %s: cannot write it: %s\n", ck->junit,
                strerror(errno));
        ck->status = gr_check_exit_code(GR_CHECK_UNUSABLE);
    }
    gr_junit_free(&ck->ju);
    if (ck->html && gr_html_write(&ck->hr, ck->html) < 0) {
        fprintf(stderr, "greenreplay: check: --html %s: cannot write it: %s\n", ck->html,
                strerror(errno));
        ck->status = gr_check_exit_code(GR_CHECK_UNUSABLE);
    }
    gr_html_free(&ck->hr);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "greenreplay: writing the report failed\n");
        return 2;
    }
    return ck->status;
}

static int cmd_check(int argc, char **argv)
{
    struct check_run run = {
        .strict_known = -1,
        .range = {.from = 0, .to = UINT64_MAX},
        .color_mode = GR_COLOR_AUTO,
        .max_wait = GR_STALL_MAX_WAIT_NS,
    };
    struct check_run *ck = &run;
    int rc = check_options(ck, argc, argv);
    if (rc == CHECK_GO_ON && optind >= argc)
        rc = bad_usage(usage_check, "%s", "check needs at least one trace FILE");
    if (rc == CHECK_GO_ON)
        rc = check_config(ck);
    if (rc != CHECK_GO_ON) {
        check_release(ck);
        return rc;
    }
    ck->jtraces = ck->json ? json_array() : NULL;
    gr_junit_init(&ck->ju);
    gr_html_init(&ck->hr);
    ck->color = !ck->json && gr_color_enabled(ck->color_mode, stdout);
    /* check, --junit, --stall and --html stream the trace (memory: one
     * chunk and the checker's state, docs/ARCHITECTURE.md; --html reads
     * the file again); --in-memory loads it whole. */
    ck->streamed = !ck->in_memory;
    for (int i = optind; i < argc; i++)
        check_one(ck, argv[i], i == optind);
    rc = check_finish(ck);
    check_release(ck);
    return rc;
}

static int cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"times", no_argument, NULL, 't'},
        {"in-memory", no_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int times = 0, in_memory = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 't': times = 1; break;
        case 'M': in_memory = 1; break;
        case 'h': fputs(usage_dump, stdout); return 0;
        default: return option_error(usage_dump, c, argv);
        }
    }
    if (argc - optind != 1)
        return bad_usage(usage_dump, "%s", "dump needs exactly one trace FILE");
    const char *path = argv[optind];
    gr_trace t;
    if (in_memory ? load(&t, path) : open_stream(&t, path)) {
        gr_trace_free(&t);
        return 2;
    }
    int rc;
    if (in_memory) { /* gr_dump of the loaded trace (and side channel) */
        gr_times tm;
        memset(&tm, 0, sizeof tm);
        if (times) {
            gr_sb side;
            gr_sb_init(&side);
            gr_sb_printf(&side, "%s.times", path);
            int bad = gr_times_load(&tm, gr_sb_str(&side)) != GR_READ_OK;
            gr_sb_free(&side);
            if (bad) {
                fprintf(stderr, "greenreplay: %s\n", tm.err.msg);
                gr_times_free(&tm);
                gr_trace_free(&t);
                return 2;
            }
        }
        rc = gr_dump(stdout, &t, times ? &tm : NULL);
        gr_times_free(&tm);
    } else if (times) { /* the side channel streamed alongside (gr_dump_stream_times) */
        gr_sb side;
        gr_sb_init(&side);
        gr_sb_printf(&side, "%s.times", path);
        char *err = NULL;
        rc = gr_dump_stream_times(stdout, &t, gr_sb_str(&side), &err);
        gr_sb_free(&side);
        if (rc == -3) {
            fflush(stdout);
            fprintf(stderr, "greenreplay: %s\n", err);
            free(err);
            gr_trace_free(&t);
            return 2;
        }
    } else {
        rc = gr_dump_stream(stdout, &t, NULL);
    }
    if (rc == -2) {
        fflush(stdout);
        fprintf(stderr, "greenreplay: %s\n", t.err.msg);
        gr_trace_free(&t);
        return 2;
    }
    gr_trace_free(&t);
    if (rc < 0) {
        fprintf(stderr, "greenreplay: writing the dump failed\n");
        return 2;
    }
    return 0;
}

static int cmd_stats(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (parse_format(optarg, &json) < 0)
                return bad_usage(usage_stats, "unknown format '%s' (text or json)", optarg);
            break;
        case 'h': fputs(usage_stats, stdout); return 0;
        default: return option_error(usage_stats, c, argv);
        }
    }
    if (argc - optind != 1)
        return bad_usage(usage_stats, "%s", "stats needs exactly one trace FILE");
    gr_trace t;
    gr_stats s;
    if (open_stream(&t, argv[optind])) {
        gr_trace_free(&t);
        return 2;
    }
    if (gr_stats_stream(&t, &s) < 0) {
        fprintf(stderr, "greenreplay: %s\n", t.err.msg);
        gr_stats_free(&s);
        gr_trace_free(&t);
        return 2;
    }
    int rc = json ? gr_stats_print_json(stdout, &t, &s) : gr_stats_print_text(stdout, &t, &s);
    gr_stats_free(&s);
    gr_trace_free(&t);
    if (rc < 0) {
        fprintf(stderr, "greenreplay: writing the statistics failed\n");
        return 2;
    }
    return 0;
}

/* Parse "N[,N...]" into *drop (grown as needed).  Returns 0 or -1. */
static int parse_drop(const char *s, uint64_t **drop, size_t *n, size_t *cap)
{
    const char *p = s;
    for (;;) {
        if (*p < '0' || *p > '9')
            return -1;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno)
            return -1;
        *drop = gr_xgrow(*drop, cap, *n + 1, sizeof **drop);
        (*drop)[(*n)++] = v;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

static int cmd_edit(int argc, char **argv)
{
    static const struct option opts[] = {
        {"drop", required_argument, NULL, 'd'},
        {"chunk", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t *drop = NULL;
    size_t ndrop = 0, cap = 0;
    const char *out = NULL;
    size_t chunk = 0;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (parse_drop(optarg, &drop, &ndrop, &cap) < 0) {
                free(drop);
                return bad_usage(usage_edit, "bad --drop list '%s' (want N[,N...])", optarg);
            }
            break;
        case 'o': out = optarg; break;
        case 'c': {
            uint64_t v;
            if (parse_u64(optarg, &v) < 0 || v == 0 || v > GR_CHUNK_MAX) {
                free(drop);
                return bad_usage(usage_edit, "bad --chunk '%s' (bytes, 1 to 16777216)", optarg);
            }
            chunk = (size_t)v;
            break;
        }
        case 'h': free(drop); fputs(usage_edit, stdout); return 0;
        default: free(drop); return option_error(usage_edit, c, argv);
        }
    }
    if (!out || argc - optind != 1) {
        free(drop);
        return bad_usage(usage_edit, "%s", "edit needs -o OUT and exactly one input trace IN");
    }
    gr_trace t;
    if (load(&t, argv[optind])) {
        gr_trace_free(&t);
        free(drop);
        return 2;
    }
    char err[512];
    int rc = gr_edit_write(&t, drop, ndrop, chunk, out, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "greenreplay: edit: %s\n", err);
    gr_trace_free(&t);
    free(drop);
    return rc < 0 ? 2 : 0;
}

/* A trace whose greenlets ran inside the program's own profile function:
 * CPython runs that function with tracing on, so what they ran there is
 * in no record (passive mode: META switches_in_profile_function; callback
 * mode: the SWITCH/THROW records made there, with no stack).  A script
 * cannot act it out and would not reproduce the trace: refused with the
 * reason on stderr (1), before anything is written. */
static int script_refused(const gr_trace *t, const gr_shape *shape, const char *path)
{
    char count[32], first[128];
    if (gr_trace_meta(t, "switches_in_profile_function", count, sizeof count)) {
        uint64_t index = 0, tid = 0, gid = 0;
        if (!gr_trace_meta(t, "switches_in_profile_function_first", first, sizeof first) ||
            sscanf(first, "%" SCNu64 " %" SCNu64 " %" SCNu64, &index, &tid, &gid) != 3)
            index = tid = gid = 0;
        fprintf(stderr,
                "greenreplay: script: %s: greenlets ran inside the program's own profile "
                "function, in %s of its calls (META switches_in_profile_function; the first at "
                "event %" PRIu64 " on t%" PRIu64 " g%" PRIu64 "): CPython runs that function with "
                "tracing on, so no record says which greenlets ran there or what they called, and "
                "a script cannot act it out; nothing written\n",
                path, count, index, tid, gid);
        return 1;
    }
    if (shape->in_profile) {
        fprintf(stderr,
                "greenreplay: script: %s: a greenlet switch was made inside the program's own "
                "profile function (record %" PRIu64 ", tracing above 0): CPython runs that function "
                "with tracing on, so what the greenlets ran there is in no record, and a script "
                "cannot act it out; nothing written\n",
                path, shape->in_profile - 1);
        return 1;
    }
    return 0;
}

static int cmd_script(int argc, char **argv)
{
    static const struct option opts[] = {
        {"anonymize", no_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    gr_script_opts o = {0};
    const char *out = NULL;
    int quiet = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:q", opts, NULL)) != -1) {
        switch (c) {
        case 'a': o.anonymize = 1; break;
        case 'o': out = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage_script, stdout); return 0;
        default: return option_error(usage_script, c, argv);
        }
    }
    if (argc - optind != 1)
        return bad_usage(usage_script, "%s", "script needs exactly one TRACE");
    if (out && refuse_output("script", "-o", out))
        return 2;
    const char *cache = getenv("GREENREPLAY_SCRIPT_CACHE"); /* tests: fewer bodies shared */
    if (cache && *cache >= '0' && *cache <= '9')
        o.cache = (size_t)strtoull(cache, NULL, 10);
    /* A regular file is read as a stream, twice (gr_shape_build_path): its
     * records are never all in memory; anything else (a pipe) is read
     * whole.  The program goes to OUT as it is made: it is never held
     * whole either. */
    gr_trace t;
    gr_shape shape;
    if (regular_file(argv[optind])) {
        if (gr_shape_build_path(&shape, &t, argv[optind], o.anonymize) != GR_READ_OK) {
            fprintf(stderr, "greenreplay: %s\n", t.err.msg);
            gr_trace_free(&t);
            return 2;
        }
    } else {
        if (load(&t, argv[optind])) {
            gr_trace_free(&t);
            return 2;
        }
        gr_shape_build(&shape, &t, o.anonymize);
    }
    o.source = argv[optind];
    if (script_refused(&t, &shape, argv[optind])) {
        gr_shape_free(&shape);
        gr_trace_free(&t);
        return 2;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "greenreplay: script: -o %s: cannot write it: %s\n", out, strerror(errno));
        gr_shape_free(&shape);
        gr_trace_free(&t);
        return 2;
    }
    gr_sb notes;
    gr_sb_init(&notes);
    int wr = gr_script_write_shape(&shape, &o, f, &notes, NULL), terr = errno;
    int rc = wr < 0 ? 2 : 0;
    gr_shape_free(&shape);
    gr_trace_free(&t);
    if (out && fclose(f) != 0)
        rc = 2;
    if (!quiet && notes.len) {
        const char *p = notes.s;
        while (*p) {
            const char *e = strchr(p, '\n');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            fprintf(stderr, "greenreplay: script: note: %.*s\n", (int)n, p);
            p += n + (e ? 1 : 0);
        }
    }
    if (wr == -2) /* not the output's fault: say where */
        fprintf(stderr,
                "greenreplay: script: writing a temporary file ($TMPDIR, else /tmp) failed: "
                "%s; the program written lacks its defs\n",
                strerror(terr));
    else if (rc && out)
        fprintf(stderr, "greenreplay: script: -o %s: writing the script failed\n", out);
    else if (rc)
        fputs("greenreplay: script: stdout: writing the script failed\n", stderr);
    gr_sb_free(&notes);
    return rc;
}

/* Parse a non-negative decimal int option. */
static int parse_count(const char *s, int *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

static int cmd_diff(int argc, char **argv)
{
    static const struct option opts[] = {
        {"ignore", required_argument, NULL, 'i'},
        {"context", required_argument, NULL, 'C'},
        {"max", required_argument, NULL, 'm'},
        {"c-names", required_argument, NULL, 'n'},
        {"files", no_argument, NULL, 'f'},
        {"rename", no_argument, NULL, 'r'},
        {"in-memory", no_argument, NULL, 'M'},
        {"quiet", no_argument, NULL, 'q'},
        {"color", optional_argument, NULL, 'L'},
        {"colour", optional_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int quiet = 0, in_memory = 0;
    enum gr_color_mode color_mode = GR_COLOR_AUTO;
    gr_diff_opts o;
    gr_diff_defaults(&o);
    gr_sb skipped;
    gr_sb_init(&skipped);
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
        char err[512];
        switch (c) {
        case 'q': quiet = 1; break;
        case 'L':
            if (gr_color_parse(optarg, &color_mode) < 0)
                return bad_usage(usage_diff, "bad --color '%s' (auto, always or never)", optarg);
            break;
        case 'i':
            if (gr_ignore_parse(optarg, &o.ignore, &skipped, err, sizeof err) < 0) {
                gr_sb_free(&skipped);
                fprintf(stderr, "greenreplay: diff: --ignore: %s\n", err);
                return 2;
            }
            break;
        case 'C':
            if (parse_count(optarg, &o.context) < 0)
                return bad_usage(usage_diff, "bad --context '%s' (a number)", optarg);
            break;
        case 'm':
            if (parse_count(optarg, &o.max_hunks) < 0)
                return bad_usage(usage_diff, "bad --max '%s' (a number)", optarg);
            break;
        case 'n':
            if (strcmp(optarg, "exact") == 0)
                o.c_names = GR_CNAMES_EXACT;
            else if (strcmp(optarg, "script") == 0)
                o.c_names = GR_CNAMES_SCRIPT;
            else if (strcmp(optarg, "any") == 0)
                o.c_names = GR_CNAMES_ANY;
            else
                return bad_usage(usage_diff, "unknown --c-names '%s' (exact, script or any)",
                                 optarg);
            break;
        case 'f': o.files = 1; break;
        case 'r': o.rename = 1; break;
        case 'M': in_memory = 1; break;
        case 'h': gr_sb_free(&skipped); fputs(usage_diff, stdout); return 0;
        default: gr_sb_free(&skipped); return option_error(usage_diff, c, argv);
        }
    }
    if (argc - optind != 2) {
        gr_sb_free(&skipped);
        return bad_usage(usage_diff, "%s", "diff needs exactly two traces A and B");
    }
    gr_trace a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    gr_diff_info da, db;
    memset(&da, 0, sizeof da);
    memset(&db, 0, sizeof db);
    int rc = 2;
    /* Streamed (diff_stream.h): each trace is read through once first
     * (errors, record counts, what the comparison depends on), then again;
     * a pipe cannot be, and --ignore and --c-names script look ahead: those
     * load both whole. */
    int stream = !in_memory && gr_diff_streamable(&o) && regular_file(argv[optind]) &&
                 regular_file(argv[optind + 1]);
    if (stream ? scan(&da, argv[optind]) || scan(&db, argv[optind + 1])
               : load(&a, argv[optind]) || load(&b, argv[optind + 1]))
        goto done;
    const gr_trace *ta = stream ? &da.t : &a, *tb = stream ? &db.t : &b;
    /* A trace without a record (an empty file, a header only, every record
     * dropped) has no structure to compare: not "the same structure". */
    for (int k = 0; k < 2; k++) {
        const gr_trace *x = k ? tb : ta;
        if ((stream ? (k ? db.nrecs : da.nrecs) : x->nrecs) == 0) {
            gr_sb why;
            gr_sb_init(&why);
            if (x->truncated) {
                gr_sb_puts(&why, "truncated: "); /* check's words for a cut trace */
                gr_report_cut_where(&why, x);
            } else {
                gr_sb_puts(&why, "every record was dropped");
            }
            fprintf(stderr, "greenreplay: diff: %s: no record to compare (%s)\n", argv[optind + k],
                    why.s);
            gr_sb_free(&why);
            goto done;
        }
    }
    /* 1.1 to 1.4 differ in encoding (compact records, FORMAT §4.1, and
     * their relative switch targets; compressed chunks, §2.1) and in what
     * a HOOK says of the program's profiler (§4.2), which diff does not
     * compare: their decoded records compare. */
    uint16_t ma = ta->minor, mb = tb->minor;
    if (ma != mb && !(ma >= 1 && ma <= 4 && mb >= 1 && mb <= 4)) {
        fprintf(stderr, "greenreplay: diff: %s is trace format %d.%u and %s is %d.%u: traces of "
                        "different format versions are not compared (record both with the same "
                        "greenreplay)\n",
                argv[optind], GR_VERSION_MAJOR, ma, argv[optind + 1], GR_VERSION_MAJOR, mb);
        goto done;
    }
    if (skipped.len && !quiet) {
        const char *p = skipped.s;
        while (*p) {
            const char *e = strchr(p, '\n');
            printf("# --ignore: %.*s is not a structural difference (no normalization)\n",
                   (int)(e - p), p);
            p = e + 1;
        }
    }
    if (stream) {
        rc = gr_color_diff_stream(stdout, &da, argv[optind], &db, argv[optind + 1], &o, quiet,
                                  gr_color_enabled(color_mode, stdout));
    } else {
        rc = gr_color_diff(stdout, &a, argv[optind], &b, argv[optind + 1], &o, quiet,
                           gr_color_enabled(color_mode, stdout));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "greenreplay: writing the report failed\n");
        rc = 2;
    }
done:
    gr_diff_info_free(&da);
    gr_diff_info_free(&db);
    gr_trace_free(&a);
    gr_trace_free(&b);
    gr_sb_free(&skipped);
    return rc;
}

static int cmd_reduce(int argc, char **argv)
{
    static const struct option opts[] = {
        {"python", required_argument, NULL, 'p'},
        {"rule", required_argument, NULL, 'r'},
        {"output", required_argument, NULL, 'o'},
        {"timeout", required_argument, NULL, 't'},
        {"max-runs", required_argument, NULL, 'm'},
        {"workdir", required_argument, NULL, 'w'},
        {"keep", no_argument, NULL, 'k'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    gr_reduce_opts o;
    memset(&o, 0, sizeof o);
    o.log = stderr;
    int c, v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:q", opts, NULL)) != -1) {
        switch (c) {
        case 'p': o.python = optarg; break;
        case 'r': o.rule = optarg; break;
        case 'o': o.output = optarg; break;
        case 't':
            if (parse_count(optarg, &v) < 0 || v == 0)
                return bad_usage(usage_reduce, "bad --timeout '%s' (seconds)", optarg);
            o.timeout_s = (unsigned)v;
            break;
        case 'm':
            if (parse_count(optarg, &v) < 0)
                return bad_usage(usage_reduce, "bad --max-runs '%s' (a number)", optarg);
            o.max_runs = (size_t)v;
            break;
        case 'w': o.workdir = optarg; break;
        case 'k': o.keep = 1; break;
        case 'q': o.log = NULL; break;
        case 'h': fputs(usage_reduce, stdout); return 0;
        default: return option_error(usage_reduce, c, argv);
        }
    }
    if (argc - optind != 1)
        return bad_usage(usage_reduce, "%s", "reduce needs exactly one SCRIPT");
    if (!o.python || !o.rule)
        return bad_usage(usage_reduce, "%s", "reduce needs --python PY and --rule RULE");
    o.script = argv[optind];
    static char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "greenreplay: reduce: cannot find the greenreplay executable "
                        "(/proc/self/exe): %s\n",
                strerror(errno));
        return 2;
    }
    self[n] = '\0';
    o.self = self;
    return gr_reduce(&o);
}

static const char *command_usage(const char *cmd)
{
    if (strcmp(cmd, "check") == 0) return usage_check;
    if (strcmp(cmd, "dump") == 0) return usage_dump;
    if (strcmp(cmd, "stats") == 0) return usage_stats;
    if (strcmp(cmd, "edit") == 0) return usage_edit;
    if (strcmp(cmd, "script") == 0) return usage_script;
    if (strcmp(cmd, "diff") == 0) return usage_diff;
    if (strcmp(cmd, "reduce") == 0) return usage_reduce;
    if (strcmp(cmd, "export") == 0) return gr_export_usage;
    if (strcmp(cmd, "conform") == 0) return gr_conform_usage;
    if (strcmp(cmd, "stall") == 0) return gr_stall_usage;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return bad_usage(usage_main, "%s", "missing COMMAND");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        return gr_version_print(stdout) < 0 ? 2 : 0;
    }
    if (strcmp(cmd, "help") == 0) {
        /* `help`, `help --help` (as every command takes) and `help help`:
         * the overview. */
        if (argc == 2 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0 ||
            strcmp(argv[2], "help") == 0) {
            fputs(usage_main, stdout);
            return 0;
        }
        if (strcmp(argv[2], "record") == 0) {
            char *args[] = {argv[2], (char *)"--help", NULL};
            return gr_cmd_record(2, args);
        }
        const char *u = command_usage(argv[2]);
        if (!u)
            return bad_usage(usage_main, "unknown command '%s'", argv[2]);
        fputs(u, stdout);
        return 0;
    }
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (strcmp(cmd, "record") == 0)
        return gr_cmd_record(sub_argc, sub_argv);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(sub_argc, sub_argv);
    if (strcmp(cmd, "dump") == 0)
        return cmd_dump(sub_argc, sub_argv);
    if (strcmp(cmd, "stats") == 0)
        return cmd_stats(sub_argc, sub_argv);
    if (strcmp(cmd, "edit") == 0)
        return cmd_edit(sub_argc, sub_argv);
    if (strcmp(cmd, "script") == 0)
        return cmd_script(sub_argc, sub_argv);
    if (strcmp(cmd, "diff") == 0)
        return cmd_diff(sub_argc, sub_argv);
    if (strcmp(cmd, "reduce") == 0)
        return cmd_reduce(sub_argc, sub_argv);
    if (strcmp(cmd, "export") == 0)
        return gr_cmd_export(sub_argc, sub_argv);
    if (strcmp(cmd, "conform") == 0)
        return gr_cmd_conform(sub_argc, sub_argv);
    if (strcmp(cmd, "stall") == 0)
        return gr_cmd_stall(sub_argc, sub_argv);
    return bad_usage(usage_main, "unknown command '%s'", cmd);
}
