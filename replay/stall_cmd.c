/* stall_cmd.c - `greenreplay stall` (stall_cmd.h, docs/stall.md).
 *
 * For each repetition, each subject (the baseline "off", then every
 * sampler under test) runs the workload `PYTHON -m greenreplay.stall` at
 * N = 0 and N = --idle (the order alternating per repetition, so that a
 * drift of the machine's load favours neither N).  Each run prints one
 * JSON line: the switch time per switch less the time the switching
 * thread sat in the run queue (ready_ns_per_switch), and the round trips'
 * median, p99 and max.  A subject's ratio in a repetition is its
 * ready_ns_per_switch at N over the one at 0: the cost of the idle
 * greenlets, which a sampler that holds a lock while it unwinds every
 * greenlet's frames multiplies.  Verdict, from the distributions only (no
 * absolute times): flagged when every repetition's ratio of the subject
 * exceeds every repetition's ratio of the baseline by the margin (1.5x).
 */
#define _GNU_SOURCE 1
#include "stall_cmd.h"

#include "record.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char gr_stall_usage[] =
    "usage: greenreplay stall [--python PY] [--sampler MODE]... [--attach CMD]...\n"
    "                         [--idle N] [--depth D] [--reps R] [--seconds S]\n"
    "                         [--interval-us US] [--json FILE]\n"
    "\n"
    "Does a sampler stall greenlet switches?  Runs the switch-timing workload\n"
    "(20 workers switching to and from the main greenlet while N idle greenlets\n"
    "stay suspended D frames deep; the program recorded) at N = 0 and N = --idle,\n"
    "with no sampler (the baseline) and with each sampler under test, --reps\n"
    "times, and reports per sampler the switch time per switch (less run-queue\n"
    "wait), the round trips' median, p99 and max, and the ratio N/0 with its\n"
    "spread.  Flagged: every repetition's ratio above every baseline ratio times\n"
    "1.5.  No absolute time is judged.  Details: docs/stall.md.\n"
    "\n"
    "  --python PY       the interpreter (default python3)\n"
    "  --sampler MODE    the reference sampler in process: two-phase, hold-lock,\n"
    "                    seqlock (may repeat; default: all three when no\n"
    "                    --attach is given)\n"
    "  --attach CMD      an external sampler, started on the workload's process:\n"
    "                    {pid} in CMD is its pid (e.g. 'austin -i 5000 -p {pid}');\n"
    "                    ended by SIGINT after the measured phase (may repeat)\n"
    "  --idle N          idle greenlets (default 2000)\n"
    "  --depth D         their frames (default 50)\n"
    "  --reps R          repetitions (default 3)\n"
    "  --seconds S       measured phase of each run, at least (default 1)\n"
    "  --interval-us US  the reference sampler's interval (default 5000)\n"
    "  --json FILE       write the runs, figures and verdicts as JSON (- stdout)\n"
    "\n"
    "Exit status: 0 no sampler flagged; 1 a sampler flagged; 2 usage error or a\n"
    "run that failed.\n";

#define MARGIN 1.5
#define MAX_SUBJECTS 16

struct run {
    double ready, wall, p50, p99, max;
};

struct subject {
    const char *name;   /* off, a mode, or the attach command */
    const char *mode;   /* --sampler value given to the workload */
    const char *attach; /* NULL for in-process */
    struct run *at0, *atn; /* per repetition */
};

static int fail(const char *fmt, const char *a, const char *b)
{
    fputs("greenreplay: stall: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 2;
}

/* One workload run; fills *out.  0, or 2 with one line on stderr. */
static int run_once(const char *py, const char *pkg, const struct subject *s, long n, long depth, double seconds,
                    long interval, const char *trace, struct run *out)
{
    char nbuf[32], dbuf[32], sbuf[32], ibuf[32];
    snprintf(nbuf, sizeof nbuf, "%ld", n);
    snprintf(dbuf, sizeof dbuf, "%ld", depth);
    snprintf(sbuf, sizeof sbuf, "%g", seconds);
    snprintf(ibuf, sizeof ibuf, "%ld", interval);
    const char *argv[24];
    int k = 0;
    argv[k++] = py;
    argv[k++] = "-m";
    argv[k++] = "greenreplay.stall";
    argv[k++] = "--sampler";
    argv[k++] = s->mode;
    if (s->attach) {
        argv[k++] = "--attach";
        argv[k++] = s->attach;
    }
    argv[k++] = "--idle";
    argv[k++] = nbuf;
    argv[k++] = "--depth";
    argv[k++] = dbuf;
    argv[k++] = "--seconds";
    argv[k++] = sbuf;
    argv[k++] = "--interval-us";
    argv[k++] = ibuf;
    argv[k++] = "--output";
    argv[k++] = trace;
    argv[k] = NULL;
    int fd[2];
    if (pipe(fd) != 0)
        return fail("pipe: %s%s", strerror(errno), "");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork: %s%s", strerror(errno), "");
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        close(fd[1]);
        const char *old = getenv("PYTHONPATH");
        gr_sb pp;
        gr_sb_init(&pp);
        gr_sb_puts(&pp, pkg);
        if (old && *old) {
            gr_sb_putc(&pp, ':');
            gr_sb_puts(&pp, old);
        }
        setenv("PYTHONPATH", gr_sb_str(&pp), 1);
        execvp(py, (char *const *)argv);
        fprintf(stderr, "greenreplay: stall: cannot run %s: %s\n", py, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    gr_sb buf;
    gr_sb_init(&buf);
    char chunk[4096];
    ssize_t got;
    while ((got = read(fd[0], chunk, sizeof chunk)) > 0 || (got < 0 && errno == EINTR))
        if (got > 0)
            gr_sb_put(&buf, chunk, (size_t)got);
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    unlink(trace);
    char tbuf[PATH_MAX + 8];
    snprintf(tbuf, sizeof tbuf, "%s.times", trace);
    unlink(tbuf);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        gr_sb_free(&buf);
        char why[64];
        if (WIFSIGNALED(st))
            snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(st));
        else
            snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(st));
        return fail("the workload with sampler %s failed (%s)", s->name, why);
    }
    /* The last line of its output is the JSON line. */
    const char *text = gr_sb_str(&buf);
    const char *line = text, *p;
    for (p = text; *p; p++)
        if (*p == '\n' && p[1])
            line = p + 1;
    json_error_t err;
    json_t *d = json_loads(line, JSON_DISABLE_EOF_CHECK, &err);
    gr_sb_free(&buf);
    if (!json_is_object(d)) {
        json_decref(d);
        return fail("the workload with sampler %s printed no result line%s", s->name, "");
    }
    out->ready = json_number_value(json_object_get(d, "ready_ns_per_switch"));
    out->wall = json_number_value(json_object_get(d, "ns_per_switch"));
    out->p50 = json_number_value(json_object_get(d, "trip_median_ns"));
    out->p99 = json_number_value(json_object_get(d, "trip_p99_ns"));
    out->max = json_number_value(json_object_get(d, "trip_max_ns"));
    json_decref(d);
    if (!(out->ready > 0))
        return fail("the workload with sampler %s measured no switch%s", s->name, "");
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median over repetitions of one field of runs r[0..n). */
static double med_field(const struct run *r, size_t n, size_t off)
{
    double v[256];
    for (size_t i = 0; i < n && i < 256; i++)
        v[i] = *(const double *)((const char *)&r[i] + off);
    return median_of(v, n < 256 ? n : 256);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static void put_dist(json_t *o, const char *key, const struct run *r, size_t n)
{
    json_t *d = json_object();
    json_object_set_new(d, "ready_ns_per_switch", json_real(med_field(r, n, offsetof(struct run, ready))));
    json_object_set_new(d, "trip_median_ns", json_real(med_field(r, n, offsetof(struct run, p50))));
    json_object_set_new(d, "trip_p99_ns", json_real(med_field(r, n, offsetof(struct run, p99))));
    json_object_set_new(d, "trip_max_ns", json_real(med_field(r, n, offsetof(struct run, max))));
    json_object_set_new(o, key, d);
}

/* What `stall` was asked for. */
struct stall_opts {
    const char *py, *json_path;
    long idle, depth, reps, interval;
    double seconds;
    struct subject subj[MAX_SUBJECTS];
    size_t nsubj;
};

/* Parse the command line into o: 0, -1 after --help, else the exit status. */
static int stall_options(int argc, char **argv, struct stall_opts *o)
{
    static const struct option opts[] = {
        {"python", required_argument, NULL, 'P'},   {"sampler", required_argument, NULL, 's'},
        {"attach", required_argument, NULL, 'a'},   {"idle", required_argument, NULL, 'n'},
        {"depth", required_argument, NULL, 'd'},    {"reps", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 'S'},  {"interval-us", required_argument, NULL, 'i'},
        {"json", required_argument, NULL, 'j'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct subject *subj = o->subj;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'P':
            o->py = optarg;
            break;
        case 's':
            if (strcmp(optarg, "two-phase") && strcmp(optarg, "hold-lock") && strcmp(optarg, "seqlock"))
                return fail("--sampler %s: not a mode (two-phase, hold-lock, seqlock)%s", optarg, "");
            /* fall through */
        case 'a':
            if (o->nsubj == MAX_SUBJECTS)
                return fail("at most %s samplers%s", "15", "");
            subj[o->nsubj].name = optarg;
            subj[o->nsubj].mode = c == 's' ? optarg : "off";
            subj[o->nsubj].attach = c == 'a' ? optarg : NULL;
            o->nsubj++;
            break;
        case 'n':
            if (parse_long(optarg, 1, 100000, &o->idle))
                return fail("--idle %s: not a number from 1 to 100000%s", optarg, "");
            break;
        case 'd':
            if (parse_long(optarg, 1, 1000, &o->depth))
                return fail("--depth %s: not a number from 1 to 1000%s", optarg, "");
            break;
        case 'r':
            if (parse_long(optarg, 2, 100, &o->reps))
                return fail("--reps %s: not a number from 2 to 100%s", optarg, "");
            break;
        case 'i':
            if (parse_long(optarg, 100, 1000000, &o->interval))
                return fail("--interval-us %s: not a number from 100 to 1000000%s", optarg, "");
            break;
        case 'S': {
            char *end;
            o->seconds = strtod(optarg, &end);
            if (end == optarg || *end || !(o->seconds > 0 && o->seconds <= 600))
                return fail("--seconds %s: not a number of seconds from 0 to 600%s", optarg, "");
            break;
        }
        case 'j':
            o->json_path = optarg;
            break;
        case 'h':
            fputs(gr_stall_usage, stdout);
            return -1;
        case ':':
            return fail("option %s needs an argument%s", argv[optind - 1], "");
        default:
            return fail("unknown option %s%s", argv[optind - 1], "");
        }
    }
    if (optind < argc)
        return fail("unexpected argument %s%s", argv[optind], "");
    if (o->nsubj == 1) {
        static const char *const modes[] = {"two-phase", "hold-lock", "seqlock"};
        for (size_t i = 0; i < 3; i++) {
            subj[o->nsubj].name = subj[o->nsubj].mode = modes[i];
            o->nsubj++;
        }
    }
    return 0;
}

/* Every repetition of every sampler at N=0 and N=idle, in alternating
 * order: 0, else the exit status. */
static int stall_runs(struct stall_opts *o, const char *pkg)
{
    char dir[] = "/tmp/greenreplay-stall-XXXXXX";
    if (!mkdtemp(dir))
        return fail("cannot create a temporary directory: %s%s", strerror(errno), "");
    char trace[PATH_MAX];
    snprintf(trace, sizeof trace, "%s/run.grt", dir);
    fprintf(stderr, "stall: %s, N=0 and N=%ld idle greenlets %ld frames deep, %ld repetitions of %g s\n", o->py,
            o->idle, o->depth, o->reps, o->seconds);
    int rc = 0;
    for (long r = 0; r < o->reps && !rc; r++) {
        for (size_t i = 0; i < o->nsubj && !rc; i++) {
            struct subject *sj = &o->subj[i];
            for (int k = 0; k < 2 && !rc; k++) {
                int atn = (r % 2) ? (k == 0) : (k == 1);
                struct run *out = atn ? &sj->atn[r] : &sj->at0[r];
                rc = run_once(o->py, pkg, sj, atn ? o->idle : 0, o->depth, o->seconds, o->interval, trace, out);
                if (!rc)
                    fprintf(stderr, "  rep %ld  %-12s N=%-6ld %9.0f ns/switch (ready)  round trip p50 %.0f ns, "
                                    "p99 %.0f ns, max %.0f ns\n",
                            r + 1, sj->name, atn ? o->idle : 0, out->ready, out->p50, out->p99, out->max);
            }
        }
    }
    rmdir(dir);
    return rc;
}

/* One sampler's line of the table and its JSON object; *flagged when its
 * every repetition is above the baseline's highest ratio by the margin. */
static json_t *stall_verdict(const struct stall_opts *o, size_t i, double *ratio, double *base_max, int *flagged)
{
    const struct subject *s = &o->subj[i];
    size_t reps = (size_t)o->reps;
    double lo = 0, hi = 0;
    for (size_t r = 0; r < reps; r++) {
        ratio[r] = s->atn[r].ready / s->at0[r].ready;
        if (!r || ratio[r] < lo)
            lo = ratio[r];
        if (!r || ratio[r] > hi)
            hi = ratio[r];
    }
    json_t *o_ = json_object();
    json_t *rs = json_array();
    for (size_t r = 0; r < reps; r++)
        json_array_append_new(rs, json_real(ratio[r]));
    double med = median_of(ratio, reps);
    const char *verdict;
    if (i == 0) {
        *base_max = hi;
        verdict = "baseline";
    } else {
        verdict = lo > *base_max * MARGIN ? "flagged" : "pass";
        *flagged |= lo > *base_max * MARGIN;
    }
    printf("%-24.24s %8.2f %6.2f..%-6.2f %8s  %.0f %.0f %.0f %.0f / %.0f %.0f %.0f %.0f\n", s->name, med, lo, hi,
           verdict, med_field(s->at0, reps, offsetof(struct run, ready)),
           med_field(s->at0, reps, offsetof(struct run, p50)), med_field(s->at0, reps, offsetof(struct run, p99)),
           med_field(s->at0, reps, offsetof(struct run, max)), med_field(s->atn, reps, offsetof(struct run, ready)),
           med_field(s->atn, reps, offsetof(struct run, p50)), med_field(s->atn, reps, offsetof(struct run, p99)),
           med_field(s->atn, reps, offsetof(struct run, max)));
    json_object_set_new(o_, "sampler", json_string(s->name));
    json_object_set_new(o_, "external", json_boolean(s->attach != NULL));
    json_object_set_new(o_, "ratios", rs);
    json_object_set_new(o_, "ratio_median", json_real(med));
    json_object_set_new(o_, "verdict", json_string(verdict));
    put_dist(o_, "n0", s->at0, reps);
    put_dist(o_, "n_idle", s->atn, reps);
    return o_;
}

/* Ratios and verdicts, printed and (with --json) written: the exit status. */
static int stall_report(const struct stall_opts *o)
{
    double base_max = 0;
    json_t *doc = json_object(), *arr = json_array();
    double *ratio = calloc((size_t)o->reps, sizeof *ratio);
    int flagged_any = 0, rc = 0;
    printf("%-24s %8s %15s %8s  %s\n", "sampler", "ratio", "spread", "verdict",
           "N=0 / N=idle: ns/switch, round trip p50 p99 max (ns)");
    for (size_t i = 0; i < o->nsubj; i++)
        json_array_append_new(arr, stall_verdict(o, i, ratio, &base_max, &flagged_any));
    printf("ratio: switch time (less run-queue wait) at N=%ld over N=0, median of %ld repetitions; flagged: every "
           "repetition above %.1fx the baseline's highest (%.2f)\n",
           o->idle, o->reps, MARGIN, base_max);
    json_object_set_new(doc, "idle", json_integer(o->idle));
    json_object_set_new(doc, "depth", json_integer(o->depth));
    json_object_set_new(doc, "reps", json_integer(o->reps));
    json_object_set_new(doc, "margin", json_real(MARGIN));
    json_object_set_new(doc, "samplers", arr);
    if (o->json_path) {
        int bad = strcmp(o->json_path, "-") == 0 ? json_dumpf(doc, stdout, JSON_INDENT(1)) != 0
                                                 : json_dump_file(doc, o->json_path, JSON_INDENT(1)) != 0;
        if (bad)
            rc = fail("--json %s: cannot be written%s", o->json_path, "");
    }
    json_decref(doc);
    free(ratio);
    return rc ? rc : flagged_any ? 1 : 0;
}

int gr_cmd_stall(int argc, char **argv)
{
    static struct stall_opts o;
    memset(&o, 0, sizeof o);
    o.py = "python3";
    o.idle = 2000;
    o.depth = 50;
    o.reps = 3;
    o.interval = 5000;
    o.seconds = 1.0;
    o.nsubj = 1;
    o.subj[0].name = "off";
    o.subj[0].mode = "off";
    int rc = stall_options(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    char pkg[PATH_MAX];
    if (gr_record_package_dir(pkg, sizeof pkg) < 0)
        return fail("cannot find the recorder package beside this executable%s%s", "", "");
    if (gr_record_probe_interpreter("stall", o.py, pkg) < 0)
        return 2;
    for (size_t i = 0; i < o.nsubj; i++) {
        o.subj[i].at0 = calloc((size_t)o.reps, sizeof(struct run));
        o.subj[i].atn = calloc((size_t)o.reps, sizeof(struct run));
    }
    rc = stall_runs(&o, pkg);
    if (!rc)
        rc = stall_report(&o);
    for (size_t i = 0; i < o.nsubj; i++) {
        free(o.subj[i].at0);
        free(o.subj[i].atn);
    }
    return rc;
}
