/* conform_cmd.c - `greenreplay conform`: a profiler under test, run inside a
 * recorded program and checked against the recording (conform_cmd.h).
 *
 * Steps: probe the adapter with the interpreter (`python -m
 * greenreplay.conform --probe SPEC`: loads it, checks its interface, asks
 * available()); record the program with `record` (whole-program mode) while
 * GREENREPLAY_CONFORM tells the boot to start the adapter right after the
 * recorder (tracer/greenreplay/conform.py); read the results the adapter
 * left and the trace; compare (conform.h); report.
 */
#define _GNU_SOURCE 1
#include "conform_cmd.h"

#include "conform.h"
#include "conform_time.h"
#include "outfile.h"
#include "reader.h"
#include "record.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char gr_conform_usage[] =
    "usage: greenreplay conform --profiler NAME|PATH.py [--json FILE] [-o TRACE]\n"
    "                           [--keep] [--root DIR] [--switches passive|callback]\n"
    "                           [--results FILE] [--no-record]\n"
    "                           -- PYTHON SCRIPT [ARGS...]\n"
    "       greenreplay conform --profiler NAME|PATH.py --python PY [...]\n"
    "                           -- SCRIPT [ARGS...]\n"
    "       greenreplay conform --list [--python PY | -- PY]\n"
    "\n"
    "Test a profiler against the recording: run SCRIPT recorded (as `greenreplay\n"
    "record` does) with the profiler under test enabled inside it by an adapter,\n"
    "then compare what the profiler reports (calls per function and greenlet,\n"
    "callers, executed lines) with what the recording saw, raised where real\n"
    "stacks prove more.  Compared: Python functions under the root (default: the\n"
    "script's directory) except the script's <module>, and the C functions they\n"
    "call (cprofile).  docs/conform.md has the details: kinds of difference\n"
    "(blind_spot, miscount, primitive_calls, caller_calls, missing_lines,\n"
    "extra_lines, no_such_line), how executed lines are compared, notes, and\n"
    "programs that install their own profiler (cprofile: each of the\n"
    "program's cProfile objects against what the recording gave it).\n"
    "\n"
    "options:\n"
    "  --profiler NAME|PATH.py  a built-in adapter (cprofile, profile, yappi,\n"
    "                    coverage, coverage-py, coverage-monitoring,\n"
    "                    line_profiler; sampling: pyinstrument, memray, austin,\n"
    "                    scalene) or your own adapter file\n"
    "  --list            print the built-in adapters: NAME, yes or no, and the\n"
    "                    profiler's version or why it is not available for PY\n"
    "                    (--list -- PY or --python PY; default python3 from\n"
    "                    PATH); stderr first names the interpreter asked\n"
    "  --python PY       the interpreter (--list: default python3); with it, the\n"
    "                    words after -- are SCRIPT [ARGS] without PYTHON\n"
    "  --json FILE       write the verdict as JSON (-: standard output alone):\n"
    "                    verdict (pass|fail|skip|error), reason, differences\n"
    "                    [{kind, function, greenlet, truth, profiler, message}],\n"
    "                    program_status, timing, ... (docs/conform.md)\n"
    "  -o, --output TRACE  keep the recording there (default: a temporary file)\n"
    "  --keep            keep the temporary trace and results file (paths printed)\n"
    "  --results FILE    write the adapter's results there (JSON, schema 1)\n"
    "  --no-record       run with the profiler but without the recorder; write\n"
    "                    --results (required), compare nothing\n"
    "  --root DIR        code file names relative to DIR (default: SCRIPT's\n"
    "                    directory)\n"
    "  --switches MODE   the recorder's switch detection (default passive)\n"
    "\n"
    "Paths are checked before anything runs (one line, exit 2).  Output: one\n"
    "line per difference, \"note:\" lines, a summary line, and what was compared\n"
    "and what was not.  A program that exits non-zero is still compared, but\n"
    "never passes.\n"
    "\n"
    "Exit status: 0 the profiler agrees with the recording; 1 differences;\n"
    "2 usage error, recording or adapter error, program killed by a signal,\n"
    "no results, nothing to compare, or unsupported (one line naming the\n"
    "cause); 3 the profiler is not available in this interpreter (one line\n"
    "\"skip: REASON\").\n"
    "\n"
    "EXAMPLES\n"
    "  greenreplay conform --profiler cprofile -- python3 app.py\n"
    "  greenreplay conform --profiler yappi --json verdict.json -- python3 app.py\n"
    "  greenreplay conform --profiler ./my_adapter.py --python python3 -- app.py\n"
    "  greenreplay conform --list -- /usr/bin/python3\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("greenreplay: conform: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (`greenreplay conform --help` shows the usage)\n", stderr);
    return 2;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Set PYTHONPATH to prefix (':' old) for the children that follow. */
static void set_pythonpath(const char *prefix, const char *old)
{
    gr_sb sb;
    gr_sb_init(&sb);
    gr_sb_puts(&sb, prefix);
    if (old && *old) {
        gr_sb_putc(&sb, ':');
        gr_sb_puts(&sb, old);
    }
    setenv("PYTHONPATH", gr_sb_str(&sb), 1);
    gr_sb_free(&sb);
}

/* Run argv, its stdout into *out (when out is non-NULL), stderr passed
 * through.  Returns the exit status, 128+N when killed by signal N, -1 when
 * it could not run.  *sig (when sig is non-NULL) is N when it was killed by
 * signal N, else 0: an exit status of 128+N (sys.exit(130)) is not a signal. */
static int run_child(char *const argv[], gr_sb *out, int *sig)
{
    if (sig)
        *sig = 0;
    int fd[2] = {-1, -1};
    if (out && pipe(fd) < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (out) {
            dup2(fd[1], 1);
            close(fd[0]);
            close(fd[1]);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "greenreplay: conform: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (out) {
        close(fd[1]);
        char buf[4096];
        ssize_t k;
        while ((k = read(fd[0], buf, sizeof buf)) != 0) {
            if (k < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            gr_sb_put(out, buf, (size_t)k);
        }
        close(fd[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(status)) {
        if (sig)
            *sig = WTERMSIG(status);
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

static const char probe_code[] =
    "import sys\n"
    "try:\n"
    "    from greenreplay import conform\n"
    "except ImportError as e:\n"
    "    sys.stderr.write('greenreplay: conform: the recorder is not built for %s (Python %d.%d): %s; run `make "
    "PYTHON=%s`\\n' % (sys.executable, sys.version_info[0], sys.version_info[1], e, sys.executable))\n"
    "    sys.exit(2)\n"
    "sys.exit(conform.main(sys.argv[1:]))\n";

/* Ask python about adapter spec (or list all with spec NULL).  Output lines
 * "NAME\tyes|no\tDETAIL" into *out.  Returns the child's status. */
static int probe(const char *python, const char *spec, gr_sb *out)
{
    char *argv[] = {(char *)python, (char *)"-c", (char *)probe_code, (char *)(spec ? "--probe" : "--list"),
                    (char *)spec, NULL};
    return run_child(argv, out, NULL);
}

struct run {
    const char *spec;        /* as given */
    char spec_abs[PATH_MAX]; /* built-in name or absolute path */
    const char *python;
    char **prog;   /* SCRIPT [ARGS] */
    int nprog;
    const char *json_out, *trace_out, *results_out, *root, *switches;
    int keep, no_record;
    int signal;              /* the signal that killed the program (waitpid), 0 none */
    int json_fd;             /* --json -: the real stdout (fd 1 then points to stderr); else -1 */
    int outputs_checked;     /* check_outputs passed: --json FILE may be written */
    char **args;             /* the words after the options (SCRIPT or PYTHON SCRIPT...) */
    int nargs;
    char tmpdir[PATH_MAX];
    char trace[PATH_MAX], results[PATH_MAX];
    char reference[PATH_MAX]; /* the reference line tracer's results ("" none) */
    char pkg[PATH_MAX];
    char **launch;            /* a launcher profiler's words between PYTHON and SCRIPT */
    int nlaunch;
    char launch_out[PATH_MAX]; /* the file the launcher profiler writes ("" none) */
};

static int is_builtin(const char *s)
{
    static const char *const names[] = {"cprofile", "profile", "yappi", "coverage", "coverage-py",
                                        "coverage-monitoring", "line_profiler", "pyinstrument",
                                        "memray", "austin", "scalene"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(s, names[i]) == 0)
            return 1;
    return 0;
}

/* 1 if path names an existing file. */
static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The name of signal sig ("SIGINT") into out (n bytes); "SIG" and the
 * number for one not in the table (the names are POSIX's; glibc's
 * sigabbrev_np is not in every C library the tool builds with). */
static void signal_name(int sig, char *out, size_t n)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
        {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
        {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
        {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig) {
            snprintf(out, n, "%s", names[i].name);
            return;
        }
    snprintf(out, n, "SIG%d", sig);
}

/* Write the verdict JSON (when --json) and return the exit status:
 * program_status is the program's exit status (128+N when killed by signal
 * N), -1 when it did not run; r->signal is the signal (program_signal). */
static int finish(struct run *r, const char *verdict, const char *reason, json_t *header, json_t *diffs,
                  size_t checked, int program_status, double t_run, double t_cmp, int status)
{
    if (r->json_out) {
        json_t *o = json_object();
        json_t *h = header ? header : json_object();
        json_object_set_new(o, "profiler", r->spec ? json_string(r->spec) : json_null());
        const char *keys[] = {"profiler_version", "python", "greenlet"};
        for (size_t i = 0; i < 3; i++) {
            const char *v = json_string_value(json_object_get(h, keys[i]));
            json_object_set_new(o, keys[i], json_string(v ? v : ""));
        }
        json_object_set_new(o, "verdict", json_string(verdict));
        json_object_set_new(o, "reason", json_string(reason ? reason : ""));
        json_object_set_new(o, "functions_checked", json_integer((json_int_t)checked));
        json_object_set_new(o, "differences", diffs ? json_incref(diffs) : json_array());
        json_t *nt = json_object_get(h, "notes");
        json_object_set_new(o, "notes", json_is_array(nt) ? json_incref(nt) : json_array());
        json_t *cmp = json_object_get(h, "compared"), *ncmp = json_object_get(h, "not_compared");
        json_object_set_new(o, "compared", json_is_array(cmp) ? json_incref(cmp) : json_array());
        json_object_set_new(o, "not_compared", json_is_array(ncmp) ? json_incref(ncmp) : json_array());
        /* A program with profilers of its own (docs/conform.md): each one
         * compared, and whose fault a fail is. */
        json_t *profs = json_object_get(h, "profilers"), *cause = json_object_get(h, "cause");
        if (json_is_array(profs)) {
            json_object_set_new(o, "profilers", json_incref(profs));
            json_object_set(o, "profiler_groups", json_object_get(h, "profiler_groups"));
            json_object_set_new(o, "cause", cause ? json_incref(cause) : json_null());
        }
        json_object_set_new(o, "program_status", program_status < 0 ? json_null() : json_integer(program_status));
        if (r->signal) {
            char name[32];
            signal_name(r->signal, name, sizeof name);
            json_object_set_new(o, "program_signal", json_string(name));
        } else {
            json_object_set_new(o, "program_signal", json_null());
        }
        json_t *tm = json_object();
        json_object_set_new(tm, "recorded_run_s", json_real(t_run));
        json_object_set_new(tm, "comparison_s", json_real(t_cmp));
        json_object_set_new(o, "timing", tm);
        json_object_set_new(o, "trace", r->trace[0] && (r->keep || r->trace_out) ? json_string(r->trace) : json_null());
        json_object_set_new(o, "results", r->results[0] && (r->keep || r->results_out) &&
                                                  file_exists(r->results) ? json_string(r->results)
                                                                                          : json_null());
        if (!header)
            json_decref(h);
        int bad, fd = r->json_fd >= 0 ? r->json_fd : strcmp(r->json_out, "-") == 0 ? STDOUT_FILENO : -1;
        if (fd >= 0) /* --json -: the real stdout (still fd 1 before the run redirects it) */
            bad = json_dumpfd(o, fd, JSON_INDENT(1) | JSON_SORT_KEYS) != 0 || write(fd, "\n", 1) != 1;
        else
            bad = json_dump_file(o, r->json_out, JSON_INDENT(1) | JSON_SORT_KEYS) != 0;
        if (bad) {
            fprintf(stderr, "greenreplay: conform: --json %s: cannot write it: %s\n",
                    fd >= 0 ? "- (standard output)" : r->json_out, strerror(errno));
            status = 2;
        }
        json_decref(o);
    }
    return status;
}

static void cleanup(struct run *r)
{
    if (!r->tmpdir[0])
        return;
    if (r->keep) {
        /* Name only what exists: a program that ends by os._exit (or a
         * signal) never lets the adapter write results.json, and a run
         * that never started the recorder leaves no trace. */
        int kt = !r->trace_out && file_exists(r->trace);
        int kr = !r->results_out && file_exists(r->results);
        if (kt || kr)
            fprintf(stderr, "greenreplay: conform: kept %s%s%s%s\n", kt ? r->trace : "",
                    kt && kr ? " and " : "", kr ? r->results : "",
                    !kr && !r->results_out ? " (no results.json: the program ended before "
                                             "the adapter wrote it)"
                    : !kt && !r->trace_out ? " (no trace was written)"
                                           : "");
        else if (!r->trace_out || !r->results_out)
            fprintf(stderr, "greenreplay: conform: --keep: nothing to keep in %s (no trace "
                            "and no results.json were written)\n", r->tmpdir);
        if (r->reference[0] && file_exists(r->reference))
            fprintf(stderr, "greenreplay: conform: kept %s (the reference line tracer's results)\n", r->reference);
        else if (!kt && !kr)
            rmdir(r->tmpdir);
        return;
    }
    if (r->reference[0]) {
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof tmp, "%s.tmp", r->reference);
        unlink(r->reference);
        unlink(tmp);
    }
    if (!r->trace_out) {
        char tt[PATH_MAX + 8];
        snprintf(tt, sizeof tt, "%s.times", r->trace);
        unlink(r->trace);
        unlink(tt);
    }
    if (r->launch_out[0])
        unlink(r->launch_out);
    if (!r->results_out) {
        unlink(r->results);
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof tmp, "%s.tmp", r->results);
        unlink(tmp);
    }
    rmdir(r->tmpdir);
}

/* The adapter's results file: parsed object, or NULL with reason. */
static json_t *load_results(const char *path, char *reason, size_t n)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(reason, n, "the adapter wrote no results to %s (the program ended before its first frame ran, "
                            "or left without running atexit hooks, e.g. os._exit)", path);
        return NULL;
    }
    json_error_t err;
    json_t *res = json_load_file(path, 0, &err);
    if (!res || !json_is_object(res)) {
        snprintf(reason, n, "%s: line %d: not a JSON object: %s", path, err.line, err.text);
        json_decref(res);
        return NULL;
    }
    return res;
}

/* Run the program (argv) unrecorded, the adapter's harness on its path.
 * Returns its exit status (128+N when killed by signal N; *sig is then N,
 * else 0), 2 when it could not run (one line on stderr). */
static int run_no_record(struct run *r, char **argv, gr_sb *out, int *sig)
{
    const char *old = getenv("PYTHONPATH");
    gr_sb pp;
    gr_sb_init(&pp);
    gr_sb_printf(&pp, "%s/greenreplay/boot", r->pkg); /* as record sets it */
    set_pythonpath(gr_sb_str(&pp), old);
    gr_sb_free(&pp);
    setenv("GREENREPLAY_PROGRAM", "1", 1);
    setenv("GREENREPLAY_CONFORM_NORECORD", "1", 1);
    int rc = run_child(argv, out, sig);
    if (rc < 0) {
        fprintf(stderr, "greenreplay: conform: cannot run %s\n", r->python);
        return 2;
    }
    return rc;
}

/* Run the program a second time, unrecorded, under the reference line
 * tracer (greenreplay/profilers/reference_lines.py), and put its results
 * into res as "reference"; or, when that run cannot give them (the program
 * starts the profiler itself, the run ends otherwise than the recorded
 * one, no results), "reference_missing": why.  The run's standard output
 * is dropped (the program printed it once already); its stderr passes. */
static void reference_run(struct run *r, json_t *res, int recorded_status)
{
    const char *start = json_string_value(json_object_get(res, "start"));
    if (start && strcmp(start, "manual") == 0) {
        json_object_set_new(res, "reference_missing",
                            json_string("the program starts the profiler itself (# conform-start: manual)"));
        return;
    }
    if ((size_t)snprintf(r->reference, sizeof r->reference, "%s/reference.json", r->tmpdir) >= sizeof r->reference) {
        r->reference[0] = '\0';
        json_object_set_new(res, "reference_missing", json_string("TMPDIR: path too long"));
        return;
    }
    char **child = gr_xrealloc(NULL, (size_t)(r->nprog + 2) * sizeof *child);
    int k = 0, sig = 0;
    child[k++] = (char *)r->python;
    for (int i = 0; i < r->nprog; i++)
        child[k++] = r->prog[i];
    child[k] = NULL;
    setenv("GREENREPLAY_CONFORM", "reference-lines", 1);
    setenv("GREENREPLAY_CONFORM_RESULTS", r->reference, 1);
    gr_sb out;
    gr_sb_init(&out);
    int rc = run_no_record(r, child, &out, &sig);
    gr_sb_free(&out);
    free(child);
    char why[PATH_MAX + 200];
    json_t *ref = NULL;
    if (rc != recorded_status)
        snprintf(why, sizeof why, "the reference run exited with status %d, the recorded run with %d", rc,
                 recorded_status);
    else if (!(ref = load_results(r->reference, why, sizeof why)))
        ;
    else if (json_object_get(ref, "error") || json_object_get(ref, "skip"))
        snprintf(why, sizeof why, "the reference line tracer failed: %s",
                 json_string_value(json_object_get(ref, json_object_get(ref, "error") ? "error" : "skip")));
    if (ref && !json_object_get(ref, "error") && !json_object_get(ref, "skip") && rc == recorded_status) {
        json_object_set_new(res, "reference", ref);
        return;
    }
    json_decref(ref);
    json_object_set_new(res, "reference_missing", json_string(why));
}

static int absolute_path(const char *p, char *out, size_t n)
{
    if (p[0] == '/') {
        snprintf(out, n, "%s", p);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    if ((size_t)snprintf(out, n, "%s/%s", cwd, p) >= n)
        return -1;
    return 0;
}

/* The canonical name of path, which may not exist yet: realpath of its
 * directory, then its last component.  Returns 0, or -1 when the directory
 * cannot be resolved. */
static int canonical_path(const char *path, char *out, size_t n)
{
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (!realpath(dir, real))
        return -1;
    return (size_t)snprintf(out, n, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base) < n ? 0 : -1;
}

/* Whether paths a and b name the same file (existing or to be created). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[PATH_MAX], cb[PATH_MAX];
    return canonical_path(a, ca, sizeof ca) == 0 && canonical_path(b, cb, sizeof cb) == 0 && strcmp(ca, cb) == 0;
}

/* Refuse, before anything runs, an output that conform could only fail to
 * write at the end of the run (or that would overwrite the program, the
 * adapter file of --profiler PATH.py, or another output): --json FILE (not
 * -), --results FILE, -o TRACE as record refuses it.  Returns 0, or -1
 * with the cause in why (n bytes: the option, the path and why), or -2
 * when record's line for -o is on stderr already (why: a shorter cause). */
static int check_outputs(const struct run *r, const char *script, char *why, size_t n)
{
    const char *opt[2] = {"--json", "--results"};
    const char *path[2] = {r->json_out && strcmp(r->json_out, "-") != 0 ? r->json_out : NULL, r->results_out};
    for (int i = 0; i < 2; i++) {
        if (!path[i])
            continue;
        int e = gr_outfile_check(path[i]);
        if (e) {
            snprintf(why, n, "%s %s: cannot write it: %s", opt[i], path[i], strerror(e));
            return -1;
        }
        if (same_file(path[i], script)) {
            snprintf(why, n, "%s %s: is the program's script; refusing to overwrite it", opt[i], path[i]);
            return -1;
        }
    }
    if (r->trace_out && gr_record_check_output("conform", "-o", r->trace_out, script) < 0) {
        snprintf(why, n, "-o %s: refused as the trace (not writable, or an existing file that is not a trace)",
                 r->trace_out);
        return -2;
    }
    const char *all[3] = {path[0], path[1], r->trace_out};
    const char *names[3] = {"--json", "--results", "-o"};
    /* --results is removed before the run and --json written after it: the
     * adapter file would be lost (an empty one even passes the -o check). */
    for (int i = 0; i < 3 && !is_builtin(r->spec); i++)
        if (all[i] && same_file(all[i], r->spec)) {
            snprintf(why, n, "%s %s: is the --profiler adapter; refusing to overwrite it", names[i], all[i]);
            return -1;
        }
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++) {
            if (!all[i] || !all[j])
                continue;
            if (same_file(all[i], all[j])) {
                snprintf(why, n, "%s and %s name the same file %s", names[i], names[j], all[i]);
                return -1;
            }
        }
    return 0;
}

/* The one line for an interpreter that cannot be run, into reason (n
 * bytes), with the likely mistake (a script given where the interpreter
 * goes). */
static void no_interpreter(const char *python, int from_option, char *reason, size_t n)
{
    struct stat st;
    if (!from_option && stat(python, &st) == 0 && S_ISREG(st.st_mode) && access(python, X_OK) != 0)
        snprintf(reason, n,
                 "%s is not an interpreter: the first word after -- is the interpreter, e.g. `-- python3 %s` "
                 "(or --python PY)",
                 python, python);
    else
        snprintf(reason, n, "interpreter not found or not executable: %s (%s, e.g. %s)", python,
                 from_option ? "--python names the interpreter" : "the first word after -- is the interpreter",
                 from_option ? "--python python3" : "`-- python3 SCRIPT`");
}

/* Whether the error verdict may be written to --json: always to stdout
 * (-); to a FILE once check_outputs passed, or before (a usage error) when
 * FILE can be written and is none of the words after the options (the
 * script, wherever it is), the adapter file, -o or --results. */
static int json_may_write(const struct run *r)
{
    if (!r->json_out)
        return 0;
    if (strcmp(r->json_out, "-") == 0 || r->outputs_checked)
        return 1;
    if (gr_outfile_check(r->json_out) != 0)
        return 0;
    for (int i = 0; i < r->nargs; i++)
        if (same_file(r->json_out, r->args[i]))
            return 0;
    const char *other[3] = {r->spec && !is_builtin(r->spec) ? r->spec : NULL, r->trace_out, r->results_out};
    for (int i = 0; i < 3; i++)
        if (other[i] && same_file(r->json_out, other[i]))
            return 0;
    return 1;
}

/* The error verdict with reason in --json, when it may be written
 * (json_may_write); the line on stderr is the caller's.  Returns 2, or
 * finish()'s status. */
static int error_verdict(struct run *r, const char *reason)
{
    return json_may_write(r) ? finish(r, "error", reason, NULL, NULL, 0, -1, 0, 0, 2) : 2;
}

/* An error once the options are read: one line "greenreplay: conform:
 * REASON" on stderr (with where the usage is when `usage`), and the error
 * verdict with that reason in --json when it may be written
 * (json_may_write), so that a CI job reading the JSON never finds none.
 * Returns 2 (the exit status), or finish()'s. */
static int fail(struct run *r, int usage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct run *r, int usage, const char *fmt, ...)
{
    char reason[2 * PATH_MAX + 300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    fprintf(stderr, "greenreplay: conform: %s%s\n", reason,
            usage ? " (`greenreplay conform --help` shows the usage)" : "");
    return error_verdict(r, reason);
}

static int conform_main(struct run *r, int argc, char **argv);

int gr_cmd_conform(int argc, char **argv)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.json_fd = -1;
    int status = conform_main(&r, argc, argv);
    for (int i = 0; i < r.nlaunch; i++)
        free(r.launch[i]);
    free(r.launch);
    if (r.json_fd >= 0) { /* stdout back where it was */
        fflush(stdout);
        dup2(r.json_fd, 1);
        close(r.json_fd);
    }
    return status;
}

/* What a step of conform_main returns to let the next one run (else the
 * exit status). */
enum { CONFORM_GO_ON = -1 };

/* The options, into r; --help printed. */
static int conform_options(struct run *r, int argc, char **argv, int *list)
{
    static const struct option opts[] = {
        {"profiler", required_argument, NULL, 'p'}, {"json", required_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},   {"keep", no_argument, NULL, 'k'},
        {"python", required_argument, NULL, 'P'},   {"list", no_argument, NULL, 'l'},
        {"results", required_argument, NULL, 'R'},  {"no-record", no_argument, NULL, 'N'},
        {"root", required_argument, NULL, 'r'},     {"switches", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    int help = 0, c;
    /* The first bad option is reported once all are read: --json may come
     * after it, and it gets the error verdict too. */
    char bad[PATH_MAX + 100] = "";
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': r->spec = optarg; break;
        case 'j': r->json_out = optarg; break;
        case 'o': r->trace_out = optarg; break;
        case 'k': r->keep = 1; break;
        case 'P': r->python = optarg; break;
        case 'l': *list = 1; break;
        case 'R': r->results_out = optarg; break;
        case 'N': r->no_record = 1; break;
        case 'r': r->root = optarg; break;
        case 'W':
            if (strcmp(optarg, "passive") != 0 && strcmp(optarg, "callback") != 0) {
                if (!bad[0])
                    snprintf(bad, sizeof bad, "--switches: '%s' is not passive or callback", optarg);
            } else
                r->switches = optarg;
            break;
        case 'h':
            help = !bad[0];
            break;
        case ':':
            if (!bad[0])
                snprintf(bad, sizeof bad, "option %s needs an argument", argv[optind - 1]);
            break;
        default:
            if (!bad[0])
                snprintf(bad, sizeof bad, "unknown option %s", argv[optind - 1]);
            break;
        }
        if (help) {
            fputs(gr_conform_usage, stdout);
            return 0;
        }
    }
    r->args = argv + optind;
    r->nargs = argc - optind;
    /* --list prints the adapters' table, never a verdict: with --json, a
     * CI job would find no verdict where it looks for one (or an old
     * one), so the combination is refused, the error verdict in --json. */
    if (*list && r->json_out && !bad[0])
        snprintf(bad, sizeof bad, "%s",
                 "--list prints the adapters' table, not a verdict: --json is refused with it (the table on "
                 "stdout is the machine-readable form: NAME, yes|no, version or reason, tab-separated)");
    if (bad[0])
        return fail(r, 1, "%s", bad);
    return CONFORM_GO_ON;
}

/* --list [--python PY | -- PY]: the adapters' table, never a verdict
 * (--json was refused). */
static int list_adapters(struct run *r, int argc, const char *old_pp)
{
    if (r->spec || argc - optind > 1 || (r->python && optind < argc))
        return usage_error("%s", "--list takes no --profiler and one interpreter at most "
                                 "(--list --python PY, or --list -- PY)");
    const char *py = r->python ? r->python : optind < argc ? r->args[0] : "python3";
    if (gr_record_find_program(py) != 0) {
        char why[PATH_MAX + 200];
        no_interpreter(py, 1, why, sizeof why);
        fprintf(stderr, "greenreplay: conform: %s\n", why);
        return 2;
    }
    set_pythonpath(r->pkg, old_pp);
    /* stdout is the adapters' table (machine-read); which interpreter
     * answered (its sys.executable and version) goes to stderr first, from
     * the interpreter itself (conform.py's --list) */
    gr_sb out;
    gr_sb_init(&out);
    int rc = probe(py, NULL, &out);
    fputs(gr_sb_str(&out), stdout);
    gr_sb_free(&out);
    if (rc != 0) {
        if (rc != 2)
            fprintf(stderr, "greenreplay: conform: %s could not list the adapters (status %d)\n", py, rc);
        return 2;
    }
    return 0;
}

/* The program, the interpreter, the outputs and the adapter's file: what
 * can be refused before anything runs. */
static int check_program(struct run *r, int argc, char **argv)
{
    if (!r->spec)
        return fail(r, 1, "%s", "--profiler NAME|PATH.py is required (or --list)");
    if (optind >= argc)
        return fail(r, 1, "%s", r->python ? "need, after --, SCRIPT [ARGS]" : "need, after --, PYTHON SCRIPT [ARGS]");
    int python_given = r->python != NULL;
    if (!r->python)
        r->python = argv[optind++];
    if (optind >= argc) {
        size_t n = strlen(r->python);
        if (!python_given && n > 3 && strcmp(r->python + n - 3, ".py") == 0)
            return fail(r, 1, "need PYTHON before the script, e.g. `-- python3 %s`", r->python);
        return fail(r, 1, "%s", "need, after PYTHON, the SCRIPT to run");
    }
    if (r->no_record && !r->results_out)
        return fail(r, 1, "%s", "--no-record needs --results FILE (it compares nothing)");
    if (r->no_record && (r->trace_out || r->json_out))
        return fail(r, 1, "%s", "--no-record writes no trace and no verdict (-o, --json)");
    char why[2 * PATH_MAX + 200];
    int co = check_outputs(r, argv[optind], why, sizeof why);
    if (co == -2) /* record's line is on stderr */
        return error_verdict(r, why);
    if (co < 0)
        return fail(r, 0, "%s", why);
    r->outputs_checked = 1;
    if (r->json_out && strcmp(r->json_out, "-") == 0) {
        /* stdout is the JSON document alone: what conform and the program
         * would print there goes to stderr */
        fflush(stdout);
        r->json_fd = dup(1);
        if (r->json_fd < 0 || dup2(2, 1) < 0)
            return fail(r, 0, "--json -: %s", strerror(errno));
    }
    if (gr_record_find_program(r->python) != 0) {
        no_interpreter(r->python, python_given, why, sizeof why);
        return fail(r, 0, "%s", why);
    }
    if (argv[optind][0] == '-')
        return fail(r, 1,
                    "the program must be a SCRIPT file (not %s: interpreter options, -m and -c are not "
                    "supported by conform)",
                    argv[optind]);
    if (access(argv[optind], R_OK) != 0)
        return fail(r, 0, "cannot read the script %s: %s", argv[optind], strerror(errno));
    r->prog = argv + optind;
    r->nprog = argc - optind;
    if (is_builtin(r->spec)) {
        snprintf(r->spec_abs, sizeof r->spec_abs, "%s", r->spec);
    } else if (absolute_path(r->spec, r->spec_abs, sizeof r->spec_abs) < 0 || access(r->spec_abs, R_OK) != 0) {
        return fail(r, 0, "--profiler %s: not a built-in adapter and not a readable file", r->spec);
    }
    return CONFORM_GO_ON;
}

/* A launcher profiler (scalene): the probe's second line, "launch" and the
 * words that go between PYTHON and SCRIPT, tab-separated; "{output}" in a
 * word stands for the file the profiler writes (in the temporary
 * directory), a word "{script}" for the script (program_words). */
static void launch_words(struct run *r, char *rest)
{
    if (strncmp(rest, "launch\t", 7) != 0)
        return;
    char *end = strchr(rest, '\n');
    if (end)
        *end = '\0';
    for (char *w = strtok(rest + 7, "\t"); w; w = strtok(NULL, "\t")) {
        r->launch = gr_xrealloc(r->launch, (size_t)(r->nlaunch + 1) * sizeof *r->launch);
        r->launch[r->nlaunch++] = gr_xstrdup(w);
    }
    /* A third line, "env" and NAME=VALUE words: the launcher's environment
     * (scalene starts the program in a new process unless its variables
     * are set already). */
    if (!end || strncmp(end + 1, "env\t", 4) != 0)
        return;
    char *e2 = strchr(end + 1, '\n');
    if (e2)
        *e2 = '\0';
    for (char *w = strtok(end + 5, "\t"); w; w = strtok(NULL, "\t")) {
        char *eq = strchr(w, '=');
        if (eq && eq != w) {
            *eq = '\0';
            setenv(w, eq + 1, 1);
        }
    }
}

/* 1. The adapter, as the interpreter sees it: a skip when it is not
 * available there. */
static int probe_adapter(struct run *r, char *saved_pp)
{
    gr_sb out;
    gr_sb_init(&out);
    int rc = probe(r->python, r->spec_abs, &out);
    if (rc != 0) {
        gr_sb_free(&out);
        free(saved_pp);
        if (rc != 2)
            fprintf(stderr, "greenreplay: conform: cannot run %s (status %d)\n", r->python, rc);
        return finish(r, "error", "the adapter could not be loaded", NULL, NULL, 0, -1, 0, 0, 2);
    }
    char *line = gr_sb_take(&out);
    char *f1 = strchr(line, '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
    char *nl = f2 ? strchr(f2 + 1, '\n') : NULL;
    if (nl) {
        *nl = '\0';
        launch_words(r, nl + 1);
    }
    if (!f2 || (strncmp(f1 + 1, "no\t", 3) != 0 && strncmp(f1 + 1, "yes\t", 4) != 0)) {
        free(line);
        free(saved_pp);
        return fail(r, 0, "unexpected probe output from %s", r->python);
    }
    if (strncmp(f1 + 1, "no\t", 3) == 0) {
        printf("skip: %s\n", f2 + 1);
        json_t *h = json_object();
        int st3 = finish(r, "skip", f2 + 1, h, NULL, 0, -1, 0, 0, 3);
        json_decref(h);
        free(line);
        free(saved_pp);
        return st3;
    }
    free(line);
    return CONFORM_GO_ON;
}

/* 2. Where the results and the trace go; root_abs (PATH_MAX bytes) holds
 * the default root. */
static int prepare_paths(struct run *r, char *saved_pp, char *root_abs)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(r->tmpdir, sizeof r->tmpdir, "%s/greenreplay-conform.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->tmpdir)) {
        int e = errno;
        free(saved_pp);
        r->tmpdir[0] = '\0';
        return fail(r, 0, "cannot create a temporary directory in %s: %s", tmp && *tmp ? tmp : "/tmp",
                    strerror(e));
    }
    if (r->results_out) {
        if (absolute_path(r->results_out, r->results, sizeof r->results) < 0) {
            free(saved_pp);
            rmdir(r->tmpdir);
            return fail(r, 1, "--results %s: path too long", r->results_out);
        }
        unlink(r->results);
    } else if ((size_t)snprintf(r->results, sizeof r->results, "%s/results.json", r->tmpdir) >=
               sizeof r->results) {
        free(saved_pp);
        rmdir(r->tmpdir);
        return fail(r, 0, "TMPDIR %s: path too long", r->tmpdir);
    }
    if (r->trace_out)
        snprintf(r->trace, sizeof r->trace, "%s", r->trace_out);
    else if ((size_t)snprintf(r->trace, sizeof r->trace, "%s/trace.grt", r->tmpdir) >= sizeof r->trace) {
        free(saved_pp);
        rmdir(r->tmpdir);
        return fail(r, 0, "TMPDIR %s: path too long", r->tmpdir);
    }
    setenv("GREENREPLAY_CONFORM", r->spec_abs, 1);
    setenv("GREENREPLAY_CONFORM_RESULTS", r->results, 1);
    if (!r->root) {
        if (absolute_path(r->prog[0], root_abs, PATH_MAX) == 0) {
            char *slash = strrchr(root_abs, '/');
            if (slash == root_abs)
                slash[1] = '\0';
            else
                *slash = '\0';
            r->root = root_abs;
        }
    }
    if (r->root)
        setenv("GREENREPLAY_ROOT", r->root, 1);
    if (r->nlaunch) {
        char script[PATH_MAX];
        snprintf(r->launch_out, sizeof r->launch_out, "%s/profiler-output.json", r->tmpdir);
        setenv("GREENREPLAY_CONFORM_OUTPUT", r->launch_out, 1);
        if (absolute_path(r->prog[0], script, sizeof script) == 0)
            setenv("GREENREPLAY_CONFORM_SCRIPT", script, 1);
        for (int i = 0; i < r->nlaunch; i++) {
            char *at = strstr(r->launch[i], "{output}");
            if (!at)
                continue;
            gr_sb sb;
            gr_sb_init(&sb);
            gr_sb_printf(&sb, "%.*s%s%s", (int)(at - r->launch[i]), r->launch[i], r->launch_out, at + 8);
            free(r->launch[i]);
            r->launch[i] = gr_sb_take(&sb);
        }
    }
    return CONFORM_GO_ON;
}

/* The words after PYTHON: a launcher profiler's words, then the script
 * and its arguments.  A launcher word "{script}" stands for the script:
 * the words after it go between the script and its arguments (scalene
 * takes the program's arguments after "---" only; without it, those that
 * look like its own options are its). */
static int program_words(const struct run *r, char **child, int k)
{
    int placed = 0;
    for (int i = 0; i < r->nlaunch; i++) {
        if (!placed && strcmp(r->launch[i], "{script}") == 0) {
            child[k++] = r->prog[0];
            placed = 1;
        } else {
            child[k++] = r->launch[i];
        }
    }
    for (int i = placed; i < r->nprog; i++)
        child[k++] = r->prog[i];
    return k;
}

/* 3. The run: recorded (record's own code), or not (--no-record).  The
 * program's exit status; *killed its signal. */
static int run_program(struct run *r, const char *saved_pp, int *killed)
{
    char **child = gr_xrealloc(NULL, (size_t)(r->nprog + r->nlaunch + 12) * sizeof *child);
    int k = 0, rc;
    if (r->no_record) {
        /* the boot takes its directory off the user's PYTHONPATH,
         * not the one the probe above ran with */
        if (!saved_pp || !*saved_pp)
            unsetenv("PYTHONPATH");
        else
            setenv("PYTHONPATH", saved_pp, 1);
        child[k++] = (char *)r->python;
        k = program_words(r, child, k);
        child[k] = NULL;
        rc = run_no_record(r, child, NULL, killed);
    } else {
        /* record puts the package on PYTHONPATH itself */
        if (!saved_pp || !*saved_pp)
            unsetenv("PYTHONPATH");
        else
            setenv("PYTHONPATH", saved_pp, 1);
        child[k++] = (char *)"record";
        child[k++] = (char *)"-o";
        child[k++] = r->trace;
        child[k++] = (char *)"--times"; /* time per function of sampling profilers */
        if (r->root) {
            child[k++] = (char *)"--root";
            child[k++] = (char *)r->root;
        }
        if (r->switches) {
            child[k++] = (char *)"--switches";
            child[k++] = (char *)r->switches;
        }
        child[k++] = (char *)"--";
        child[k++] = (char *)r->python;
        k = program_words(r, child, k);
        child[k] = NULL;
        /* record's line about a trace cut short (os._exit) must not name
         * a file that cleanup() deletes. */
        if (!r->keep && !r->trace_out)
            gr_record_set_trace_label("the temporary trace (conform deletes it; --keep keeps it)");
        rc = gr_cmd_record(k, child);
        *killed = gr_record_last_signal();
        gr_record_set_trace_label(NULL);
    }
    free(child);
    return rc;
}

/* The run's outcome: killed, no results, a skip or error of the adapter,
 * --no-record; else *resp is the adapter's results to compare. */
static int run_outcome(struct run *r, int rc, int killed, double t_run, char *reason, size_t n, json_t **resp)
{
    /* The signal as waitpid saw it: a program's own exit status 128+N
     * (sys.exit(130)) is no signal and goes on as any non-zero status. */
    if (killed) {
        char sname[32];
        signal_name(killed, sname, sizeof sname);
        snprintf(reason, n, "the program was killed by signal %d (%s, %s)", killed, sname,
                 strsignal(killed));
        fprintf(stderr, "greenreplay: conform: %s\n", reason);
        cleanup(r);
        return finish(r, "error", reason, NULL, NULL, 0, rc, t_run, 0, 2);
    }
    if (rc != 0)
        printf("note: the program exited with status %d\n", rc);
    json_t *res = load_results(r->results, reason, n);
    if (!res) {
        fprintf(stderr, "greenreplay: conform: %s\n", reason);
        cleanup(r);
        return finish(r, "error", reason, NULL, NULL, 0, rc, t_run, 0, 2);
    }
    const char *skip = json_string_value(json_object_get(res, "skip"));
    const char *err = json_string_value(json_object_get(res, "error"));
    if (skip || err) {
        int st2 = skip ? 3 : 2;
        if (skip)
            printf("skip: %s\n", skip);
        else
            fprintf(stderr, "greenreplay: conform: %s\n", err);
        snprintf(reason, n, "%s", skip ? skip : err);
        cleanup(r);
        st2 = finish(r, skip ? "skip" : "error", reason, res, NULL, 0, rc, t_run, 0, st2);
        json_decref(res);
        return st2;
    }
    if (r->no_record) {
        /* Nothing is compared: the program's failure is the outcome (2, as
         * with recording when no difference is found; never 0). */
        cleanup(r);
        json_decref(res);
        if (rc != 0) {
            fprintf(stderr, "greenreplay: conform: --no-record: the program exited with status %d (its results "
                            "are in %s)\n", rc, r->results);
            return 2;
        }
        return 0;
    }
    *resp = res;
    return CONFORM_GO_ON;
}

/* A sampling profiler's time per function against the side channel's
 * clock (conform_time.h): differences are added to diffs; the verdict v,
 * a pass turned into a fail by them. */
static int compare_times(const struct run *r, const gr_trace *t, json_t *res, json_t *diffs, int v)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s.times", r->trace);
    json_t *yes = json_object_get(res, "compared"), *no = json_object_get(res, "not_compared");
    if (!json_is_array(yes) || !json_is_array(no))
        return v;
    if (!json_is_true(json_object_get(res, "time_samples"))) {
        /* memray samples at allocations; a sampler thread under the GIL
         * samples where the program lets go of it: not at instants that do
         * not depend on what runs */
        json_array_append_new(no, json_string("time per function (the adapter does not take its samples by time)"));
        return v;
    }
    gr_times tm;
    if (gr_times_load(&tm, path) != GR_READ_OK) {
        json_array_append_new(no, json_string("time per function (the side channel cannot be read)"));
        gr_times_free(&tm);
        return v;
    }
    size_t nd = gr_conform_time(t, &tm, res, diffs, yes, no);
    gr_times_free(&tm);
    return nd && v == GR_CONFORM_PASS ? GR_CONFORM_FAIL : v;
}

/* 4. The comparison, its lines and the verdict. */
static int compare_run(struct run *r, json_t *res, int rc, double t_run, char *reason, size_t n)
{
    double t1 = now_s();
    gr_trace t;
    int ls = gr_trace_load(&t, r->trace);
    if (ls != GR_READ_OK) {
        snprintf(reason, n, "%s", t.err.msg);
        fprintf(stderr, "greenreplay: conform: %s\n", reason);
        gr_trace_free(&t);
        cleanup(r);
        int st2 = finish(r, "error", reason, res, NULL, 0, rc, t_run, 0, 2);
        json_decref(res);
        return st2;
    }
    gr_conform *truth = gr_conform_new();
    for (size_t i = 0; i < t.nrecs; i++)
        gr_conform_feed(truth, &t, &t.recs[i]);
    json_t *diffs = NULL, *notes = NULL;
    size_t checked = 0;
    int v = gr_conform_compare(truth, &t, res, &diffs, &notes, &checked, reason, n);
    if (v != GR_CONFORM_ERROR && json_is_array(json_object_get(res, "stacks")))
        v = compare_times(r, &t, res, diffs, v);
    double t_cmp = now_s() - t1;
    gr_conform_free(truth);
    gr_trace_free(&t);

    size_t i;
    json_t *d, *plines = json_object_get(res, "profiler_groups");
    if (json_is_array(plines)) {
        /* The program's own profilers: one line each, or per group alike
         * (every difference is in --json). */
        json_array_foreach(plines, i, d) printf("%s\n", json_string_value(json_object_get(d, "text")));
    } else {
        json_array_foreach(diffs, i, d) {
            printf("%s %s: %s\n", json_string_value(json_object_get(d, "kind")),
                   json_string_value(json_object_get(d, "function")),
                   json_string_value(json_object_get(d, "message")));
        }
    }
    json_array_foreach(notes, i, d) {
        printf("note: %s %s: %s\n", json_string_value(json_object_get(d, "kind")),
               json_string_value(json_object_get(d, "function")), json_string_value(json_object_get(d, "message")));
    }
    const char *pv = json_string_value(json_object_get(res, "profiler_version"));
    const char *py = json_string_value(json_object_get(res, "python"));
    const char *gl = json_string_value(json_object_get(res, "greenlet"));
    size_t nd = json_array_size(diffs);
    int crashed = v == GR_CONFORM_PASS && rc != 0;
    const char *verdict = v == GR_CONFORM_PASS && !crashed ? "pass" : v == GR_CONFORM_FAIL ? "fail" : "error";
    if (v != GR_CONFORM_ERROR) {
        printf("conform: %s %s on Python %s, greenlet %s: %s, %zu function%s checked, %zu difference%s", r->spec,
               pv ? pv : "?", py ? py : "?", gl ? gl : "?", verdict, checked, checked == 1 ? "" : "s", nd,
               nd == 1 ? "" : "s");
        if (nd && json_is_array(plines)) {
            /* the lines above are one per profiler (or group of alike
               ones), not one per difference: say what the count is */
            size_t nprof = 0, top = 0;
            json_array_foreach(diffs, i, d) {
                json_int_t id = json_integer_value(json_object_get(d, "profiler_id"));
                if (id > 0 && (size_t)id > top)
                    top = (size_t)id;
            }
            /* PROFILER ids count up from 1; a crafted trace's are bounded */
            unsigned char *seen = top < ((size_t)1 << 24) ? calloc(top + 1, 1) : NULL;
            json_array_foreach(diffs, i, d) {
                json_int_t id = json_integer_value(json_object_get(d, "profiler_id"));
                if (seen && id > 0 && !seen[id]++)
                    nprof++;
            }
            free(seen);
            if (nprof)
                printf(": functions miscounted by %zu profiler%s of the program (their lines "
                       "above; --json lists each function)", nprof, nprof == 1 ? "" : "s");
            else
                printf(": functions miscounted by the program's profilers (their lines above; "
                       "--json lists each function)");
        }
        printf("\n");
    }
    if (v != GR_CONFORM_ERROR) {
        /* What the verdict rests on, and what it does not. */
        const char *heads[] = {"compared", "not compared"}, *keys[] = {"compared", "not_compared"};
        for (int h = 0; h < 2; h++) {
            json_t *arr = json_object_get(res, keys[h]);
            printf("%s%s: ", h ? "; " : "", heads[h]);
            if (!json_array_size(arr))
                printf("nothing");
            json_array_foreach(arr, i, d) printf("%s%s", i ? ", " : "", json_string_value(d));
        }
        printf("\n");
    }
    if (v == GR_CONFORM_FAIL && !json_is_array(plines))
        snprintf(reason, n, "%zu difference%s", nd, nd == 1 ? "" : "s");
    if (v == GR_CONFORM_FAIL && json_is_array(plines))
        printf("why: %s\n", reason);
    if (crashed) {
        /* Never a pass for a run that failed: the profiler may have raised
         * into the program (the profile module does under greenlets). */
        v = GR_CONFORM_ERROR;
        snprintf(reason, n,
                 "the program exited with status %d (no difference in what ran; the profiler may have raised "
                 "into it: run the program without conform to tell)",
                 rc);
    }
    if (v == GR_CONFORM_ERROR)
        fprintf(stderr, "greenreplay: conform: %s\n", reason);
    cleanup(r);
    json_object_set(res, "notes", notes); /* finish copies it */
    int status = finish(r, verdict, reason, res, diffs, checked, rc, t_run, t_cmp, v);
    json_decref(diffs);
    json_decref(notes);
    json_decref(res);
    return status;
}

static int conform_main(struct run *r, int argc, char **argv)
{
    int list = 0;
    int status = conform_options(r, argc, argv, &list);
    if (status != CONFORM_GO_ON)
        return status;
    if (gr_record_package_dir(r->pkg, sizeof r->pkg) < 0)
        return fail(r, 0, "%s", "cannot find the greenreplay package (/proc/self/exe)");
    struct stat st;
    if (stat(r->pkg, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(r, 0, "recorder package not found at %s (run `make`)", r->pkg);
    const char *old_pp = getenv("PYTHONPATH");
    if (list) /* the adapters' table, never a verdict (--json was refused above) */
        return list_adapters(r, argc, old_pp);
    status = check_program(r, argc, argv);
    if (status != CONFORM_GO_ON)
        return status;

    /* 1. The adapter, as the interpreter sees it. */
    old_pp = getenv("PYTHONPATH");
    char *saved_pp = old_pp ? gr_xstrdup(old_pp) : NULL;
    set_pythonpath(r->pkg, saved_pp);
    status = probe_adapter(r, saved_pp);
    if (status != CONFORM_GO_ON)
        return status;
    char root_abs[PATH_MAX];
    status = prepare_paths(r, saved_pp, root_abs);
    if (status != CONFORM_GO_ON)
        return status;

    int killed = 0;
    double t0 = now_s();
    int rc = run_program(r, saved_pp, &killed);
    r->signal = killed;
    double t_run = now_s() - t0;
    free(saved_pp);
    char reason[PATH_MAX + 600];
    json_t *res = NULL;
    status = run_outcome(r, rc, killed, t_run, reason, sizeof reason, &res);
    if (status != CONFORM_GO_ON)
        return status;

    /* 3b. Executed lines: the reference line tracer's run gives the lines
     * that ran (docs/conform.md, "Executed lines"). */
    if (json_is_object(json_object_get(res, "lines")))
        reference_run(r, res, rc);

    return compare_run(r, res, rc, t_run, reason, sizeof reason);
}
