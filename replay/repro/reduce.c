/* reduce.c - delta debugging of a failing script (reduce.h). */
#include "record.h"
#include "reduce.h"

#include "check.h"
#include "idmap.h"
#include "reader.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- units --------------------------------------------------------------- */

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The tag at the end of line p[0..n): "#@" followed by non-space
 * characters, preceded by two spaces.  Returns its start (after "#@") and
 * length, or NULL. */
static const char *tag_of(const char *p, size_t n, size_t *tn)
{
    size_t e = n;
    while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\r'))
        e--;
    size_t s = e;
    while (s > 0 && p[s - 1] != ' ')
        s--;
    /* p[s..e) is the last word: "#@TAG", preceded by two spaces */
    if (e - s < 3 || p[s] != '#' || p[s + 1] != '@' || s < 2 || p[s - 2] != ' ')
        return NULL;
    *tn = e - s - 2;
    return p + s + 2;
}

size_t gr_units_parse(gr_units *u, const char *text, size_t n)
{
    memset(u, 0, sizeof *u);
    u->text = gr_xrealloc(NULL, n + 1);
    memcpy(u->text, text, n);
    u->text[n] = '\0';
    size_t cap = 0, cap_names = 0;
    gr_idmap units = {0}, defs = {0};
    size_t cur_def = GR_UNIT_NONE;
    int in_header = 1;
    const char *p = u->text, *end = u->text + n;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t len = e ? (size_t)(e - p) : (size_t)(end - p);
        u->lines = gr_xgrow(u->lines, &cap, u->nlines + 1, sizeof *u->lines);
        gr_uline *l = &u->lines[u->nlines++];
        l->text = p;
        l->len = len;
        l->unit = l->def = GR_UNIT_NONE;
        if (in_header && (len == 0 || p[0] != '#'))
            in_header = 0;
        if (in_header)
            u->header++;
        int indented = len > 0 && (p[0] == ' ' || p[0] == '\t');
        if (!indented)
            cur_def = GR_UNIT_NONE;
        size_t tn;
        const char *tag = in_header ? NULL : tag_of(p, len, &tn);
        uint64_t key = 1469598103934665603ull;
        if (tag) {
            for (size_t i = 0; i < tn; i++) {
                key ^= (uint8_t)tag[i];
                key *= 1099511628211ull;
            }
        }
        if (tag && tag[0] == 'd') {
            size_t d;
            if (!gr_idmap_get(&defs, key, tn, &d)) {
                d = u->ndefs++;
                gr_idmap_put(&defs, key, tn, d);
                u->def_names = gr_xgrow(u->def_names, &cap_names, u->ndefs, sizeof *u->def_names);
                u->def_names[d] = NULL;
            }
            l->def = d;
            if (!indented && len > 4 && memcmp(p, "def ", 4) == 0) {
                cur_def = d;
                size_t k = 4;
                while (k < len && is_ident(p[k]))
                    k++;
                free(u->def_names[d]);
                u->def_names[d] = gr_xrealloc(NULL, k - 4 + 1);
                memcpy(u->def_names[d], p + 4, k - 4);
                u->def_names[d][k - 4] = '\0';
            }
        } else {
            if (indented && cur_def != GR_UNIT_NONE)
                l->def = cur_def;
            if (tag) {
                size_t id;
                if (!gr_idmap_get(&units, key, tn, &id)) {
                    id = u->nunits++;
                    gr_idmap_put(&units, key, tn, id);
                }
                l->unit = id;
            }
        }
        p += len + (e ? 1 : 0);
    }
    for (size_t d = 0; d < u->ndefs; d++)
        if (!u->def_names[d])
            u->def_names[d] = gr_xstrdup("");
    gr_idmap_free(&units);
    gr_idmap_free(&defs);
    return u->nunits;
}

void gr_units_free(gr_units *u)
{
    free(u->text);
    free(u->lines);
    for (size_t d = 0; d < u->ndefs; d++)
        free(u->def_names[d]);
    free(u->def_names);
    memset(u, 0, sizeof *u);
}

static int line_kept(const gr_uline *l, const uint8_t *keep, const uint8_t *def_keep)
{
    if (l->def != GR_UNIT_NONE && def_keep && !def_keep[l->def])
        return 0;
    return l->unit == GR_UNIT_NONE || !keep || keep[l->unit];
}

char *gr_units_render(const gr_units *u, const uint8_t *keep, const uint8_t *def_keep,
                      int drop_header, size_t *len)
{
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t i = drop_header ? u->header : 0; i < u->nlines; i++) {
        const gr_uline *l = &u->lines[i];
        if (!line_kept(l, keep, def_keep))
            continue;
        gr_sb_put(&sb, l->text, l->len);
        gr_sb_putc(&sb, '\n');
    }
    *len = sb.len;
    return gr_sb_take(&sb);
}

/* ---- renumbering ---------------------------------------------------------- */

/* p[0..n) from *i on: a Python string literal ('...' or "...", with
 * backslash escapes).  Advances *i past it; 0 when there is none. */
static int skip_pystr(const char *p, size_t n, size_t *i)
{
    if (*i >= n || (p[*i] != '\'' && p[*i] != '"'))
        return 0;
    char q = p[(*i)++];
    while (*i < n && p[*i] != q) {
        if (p[*i] == '\\')
            (*i)++;
        (*i)++;
    }
    if (*i >= n)
        return 0;
    (*i)++;
    return 1;
}

/* At p + *i: ", DIGITS)".  Sets *ds, *de to the digits' bounds. */
static int line_arg(const char *p, size_t n, size_t i, size_t *ds, size_t *de, uint64_t *v)
{
    if (i + 2 > n || p[i] != ',' || p[i + 1] != ' ')
        return 0;
    i += 2;
    *ds = i;
    *v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9' && *v < UINT64_MAX / 10)
        *v = *v * 10 + (uint64_t)(p[i++] - '0');
    *de = i;
    return i > *ds && i < n && p[i] == ')';
}

/* In line p[0..n): `_fn(_vN, NAME, LINE)` at column 0: *v = N, *line =
 * LINE and the digits' bounds. */
static int fn_claim(const char *p, size_t n, uint64_t *v, uint64_t *line, size_t *ds, size_t *de)
{
    size_t i = 6;
    if (n < 8 || memcmp(p, "_fn(_v", 6) != 0)
        return 0;
    *v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9' && *v < UINT64_MAX / 10)
        *v = *v * 10 + (uint64_t)(p[i++] - '0');
    if (i == 6 || i + 2 > n || p[i] != ',' || p[i + 1] != ' ')
        return 0;
    i += 2;
    return skip_pystr(p, n, &i) && line_arg(p, n, i, ds, de, line);
}

/* In line p[0..n): `def _vN(` at column 0. */
static int def_of(const char *p, size_t n, uint64_t *v)
{
    size_t i = 6;
    if (n < 8 || memcmp(p, "def _v", 6) != 0)
        return 0;
    *v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9' && *v < UINT64_MAX / 10)
        *v = *v * 10 + (uint64_t)(p[i++] - '0');
    return i > 6 && i < n && p[i] == '(';
}

typedef struct {
    uint64_t from, to;
} line_map;

static uint64_t map_line(const line_map *m, size_t nm, uint64_t from)
{
    for (size_t i = 0; i < nm; i++)
        if (m[i].from == from)
            return m[i].to;
    return 0;
}

char *gr_units_renumber(const char *text, size_t n, size_t *len)
{
    /* Lines, and for each `def _vN(` its line number (1-based). */
    size_t nl = 0, cap = 64;
    size_t *start = gr_xrealloc(NULL, cap * sizeof *start);
    for (size_t i = 0; i < n;) {
        if (nl == cap)
            start = gr_xrealloc(start, (cap *= 2) * sizeof *start);
        start[nl++] = i;
        const char *e = memchr(text + i, '\n', n - i);
        i = e ? (size_t)(e - text) + 1 : n;
    }
#define LINE_END(k) ((k) + 1 < nl ? start[(k) + 1] - 1 : (n && text[n - 1] == '\n' ? n - 1 : n))
    line_map *m = NULL;
    size_t nm = 0;
    for (size_t k = 0; k < nl; k++) {
        const char *p = text + start[k];
        size_t ln = LINE_END(k) - start[k];
        uint64_t v, old, dv;
        size_t ds, de;
        if (!fn_claim(p, ln, &v, &old, &ds, &de) || old == 0 || map_line(m, nm, old))
            continue;
        /* the def of _vN: the nearest `def _vN(` above */
        for (size_t j = k; j-- > 0;) {
            if (def_of(text + start[j], LINE_END(j) - start[j], &dv) && dv == v) {
                m = gr_xrealloc(m, (nm + 1) * sizeof *m);
                m[nm].from = old;
                m[nm++].to = j + 1;
                break;
            }
        }
    }
    gr_sb sb;
    gr_sb_init(&sb);
    for (size_t k = 0; k < nl; k++) {
        const char *p = text + start[k];
        size_t ln = LINE_END(k) - start[k], done = 0;
        uint64_t v, old;
        size_t ds, de;
        if (fn_claim(p, ln, &v, &old, &ds, &de) && map_line(m, nm, old)) {
            gr_sb_put(&sb, p, ds);
            gr_sb_printf(&sb, "%" PRIu64, map_line(m, nm, old));
            done = de;
        } else {
            /* `_gen(NAME, LINE)` anywhere in the line */
            for (size_t i = 0; i + 5 <= ln; i++) {
                if (memcmp(p + i, "_gen(", 5) != 0 || (i && is_ident(p[i - 1])))
                    continue;
                size_t q = i + 5;
                if (skip_pystr(p, ln, &q) && line_arg(p, ln, q, &ds, &de, &old) && map_line(m, nm, old)) {
                    gr_sb_put(&sb, p + done, ds - done);
                    gr_sb_printf(&sb, "%" PRIu64, map_line(m, nm, old));
                    done = de;
                    i = de;
                }
            }
        }
        gr_sb_put(&sb, p + done, ln - done);
        if (start[k] + ln < n)
            gr_sb_putc(&sb, '\n');
    }
#undef LINE_END
    free(m);
    free(start);
    *len = sb.len;
    return gr_sb_take(&sb);
}

/* Does word w (n bytes) occur as a whole identifier in p[0..len)? */
static int has_word(const char *p, size_t len, const char *w, size_t n)
{
    if (n == 0 || n > len)
        return 0;
    for (size_t i = 0; i + n <= len; i++) {
        if (p[i] == w[0] && memcmp(p + i, w, n) == 0 && (i == 0 || !is_ident(p[i - 1])) &&
            (i + n == len || !is_ident(p[i + n])))
            return 1;
    }
    return 0;
}

/* The name a column-0 line defines, or 0 (name in w, length returned). */
static size_t defined_name(const gr_uline *l, const char **w)
{
    const char *p = l->text;
    size_t n = l->len, k = 0;
    if (n && (p[0] == ' ' || p[0] == '\t' || p[0] == '#'))
        return 0;
    if (n > 4 && memcmp(p, "def ", 4) == 0)
        k = 4;
    else if (n > 6 && memcmp(p, "class ", 6) == 0)
        k = 6;
    else if (n > 7 && memcmp(p, "import ", 7) == 0)
        k = 7;
    size_t s = k;
    while (k < n && is_ident(p[k]))
        k++;
    if (k == s)
        return 0;
    if (s == 0) { /* NAME = ... */
        size_t j = k;
        while (j < n && p[j] == ' ')
            j++;
        if (j + 1 >= n || p[j] != '=' || p[j + 1] == '=')
            return 0;
    }
    *w = p + s;
    return k - s;
}

/* Is name w mentioned by a kept line outside unit `unit` / def `def`? */
static int referenced(const gr_units *u, const uint8_t *keep, const uint8_t *def_keep,
                      const char *w, size_t n, size_t unit, size_t def)
{
    for (size_t i = u->header; i < u->nlines; i++) {
        const gr_uline *l = &u->lines[i];
        if (!line_kept(l, keep, def_keep))
            continue;
        if ((unit != GR_UNIT_NONE && l->unit == unit) || (def != GR_UNIT_NONE && l->def == def))
            continue;
        if (has_word(l->text, l->len, w, n))
            return 1;
    }
    return 0;
}

size_t gr_units_cleanup(const gr_units *u, uint8_t *keep, uint8_t *def_keep)
{
    size_t dropped = 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t d = 0; d < u->ndefs; d++) {
            const char *name = u->def_names[d];
            if (!def_keep[d] || !name[0])
                continue;
            if (!referenced(u, keep, def_keep, name, strlen(name), GR_UNIT_NONE, d)) {
                def_keep[d] = 0;
                dropped++;
                changed = 1;
            }
        }
        for (size_t i = u->header; i < u->nlines; i++) {
            const gr_uline *l = &u->lines[i];
            if (l->unit == GR_UNIT_NONE || !keep[l->unit] || !line_kept(l, keep, def_keep) ||
                (i > 0 && u->lines[i - 1].unit == l->unit))
                continue; /* only the first line of a kept unit */
            const char *w;
            size_t n = defined_name(l, &w);
            if (n && !referenced(u, keep, def_keep, w, n, l->unit, GR_UNIT_NONE)) {
                keep[l->unit] = 0;
                dropped++;
                changed = 1;
            }
        }
    }
    return dropped;
}

/* ---- ddmin --------------------------------------------------------------- */

typedef struct dd {
    size_t n;
    gr_ddmin_test test;
    gr_ddmin_progress progress;
    void *ctx;
    size_t tests, max_tests;
    gr_idmap seen; /* hash of a tested configuration -> result + 1 */
    uint8_t *cfg;
} dd;

static uint64_t cfg_hash(const uint8_t *keep, size_t n, uint64_t *count)
{
    uint64_t h = 1469598103934665603ull, k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        k++;
        uint64_t x = i + 0x9e3779b97f4a7c15ull;
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        h ^= x;
        h *= 1099511628211ull;
    }
    *count = k;
    return h;
}

/* Test configuration keep (cached).  Returns 1 fails, 0 passes, -1 out of
 * tests. */
static int dd_test(dd *d, const uint8_t *keep, size_t current)
{
    uint64_t count;
    uint64_t h = cfg_hash(keep, d->n, &count);
    size_t v;
    if (gr_idmap_get(&d->seen, h, count, &v))
        return (int)v - 1;
    if (d->max_tests && d->tests >= d->max_tests)
        return -1;
    d->tests++;
    int r = d->test(d->ctx, keep, d->n) ? 1 : 0;
    gr_idmap_put(&d->seen, h, count, (size_t)r + 1);
    if (d->progress)
        d->progress(d->ctx, (size_t)count, r, r ? (size_t)count : current);
    return r;
}

size_t gr_ddmin(size_t n, uint8_t *keep, gr_ddmin_test test, gr_ddmin_progress progress,
                void *ctx, size_t max_tests)
{
    dd d;
    memset(&d, 0, sizeof d);
    d.n = n;
    d.test = test;
    d.progress = progress;
    d.ctx = ctx;
    d.max_tests = max_tests;
    d.cfg = gr_xrealloc(NULL, n ? n : 1);
    size_t *items = gr_xrealloc(NULL, (n ? n : 1) * sizeof *items);
    size_t nitems = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            items[nitems++] = i;
    size_t parts = 2;
    int out_of_tests = 0;
    while (nitems >= 2 && !out_of_tests) {
        if (parts > nitems)
            parts = nitems;
        int reduced = 0;
        /* Try each chunk alone (only with two chunks), then each
         * complement. */
        for (int pass = 0; pass < 2 && !reduced && !out_of_tests; pass++) {
            if (pass == 0 && parts != 2)
                continue;
            for (size_t c = 0; c < parts && !reduced; c++) {
                size_t lo = nitems * c / parts, hi = nitems * (c + 1) / parts;
                memset(d.cfg, 0, n);
                for (size_t i = 0; i < nitems; i++) {
                    int in = i >= lo && i < hi;
                    if (pass == 0 ? in : !in)
                        d.cfg[items[i]] = 1;
                }
                int r = dd_test(&d, d.cfg, nitems);
                if (r < 0) {
                    out_of_tests = 1;
                    break;
                }
                if (r == 1) {
                    size_t k = 0;
                    for (size_t i = 0; i < nitems; i++) {
                        int in = i >= lo && i < hi;
                        if (pass == 0 ? in : !in)
                            items[k++] = items[i];
                    }
                    nitems = k;
                    parts = pass == 0 ? 2 : (parts > 2 ? parts - 1 : 2);
                    reduced = 1;
                }
            }
        }
        if (!reduced && !out_of_tests) {
            if (parts >= nitems)
                break; /* 1-minimal */
            parts = parts * 2 < nitems ? parts * 2 : nitems;
        }
    }
    memset(keep, 0, n);
    for (size_t i = 0; i < nitems; i++)
        keep[items[i]] = 1;
    free(items);
    free(d.cfg);
    gr_idmap_free(&d.seen);
    return d.tests;
}

/* ---- running a candidate ------------------------------------------------- */

typedef struct rctx {
    const gr_reduce_opts *o;
    const gr_units *u;
    int rule;
    int status;          /* exit status of the original's recording */
    char dir[4096];
    char py[4200], grt[4200], log[4200];
    size_t runs;
    double t0;
    double timeout;      /* seconds per run */
    uint8_t *def_keep;
} rctx;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_file(const char *path, const char *text, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    return close(fd);
}

/* ---- the scratch directory ---------------------------------------------- */

/* What a signal handler needs to clean up: the running candidate's process
 * group and the scratch paths (only async-signal-safe calls use them). */
static volatile sig_atomic_t scratch_child;
static char scratch_dir[4096], scratch_files[3][4200];
static volatile sig_atomic_t scratch_armed;

/* SIGINT/SIGTERM/SIGHUP while reducing: end the candidate, remove the
 * scratch directory, then die of the signal as if unhandled. */
static void scratch_signal(int sig)
{
    if (scratch_child > 0)
        kill(-(pid_t)scratch_child, SIGKILL);
    if (scratch_armed) {
        for (int i = 0; i < 3; i++)
            unlink(scratch_files[i]);
        rmdir(scratch_dir);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int scratch_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction scratch_saved[3]; /* restored by scratch_disarm */

static void scratch_arm(const rctx *c, int keep)
{
    snprintf(scratch_dir, sizeof scratch_dir, "%s", c->dir);
    snprintf(scratch_files[0], sizeof scratch_files[0], "%s", c->py);
    snprintf(scratch_files[1], sizeof scratch_files[1], "%s", c->grt);
    snprintf(scratch_files[2], sizeof scratch_files[2], "%s", c->log);
    scratch_armed = !keep;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = scratch_signal;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof scratch_signals / sizeof *scratch_signals; i++) {
        sigaction(scratch_signals[i], NULL, &scratch_saved[i]);
        if (scratch_saved[i].sa_handler != SIG_IGN) /* e.g. SIGHUP under nohup stays ignored */
            sigaction(scratch_signals[i], &sa, NULL);
    }
}

static void scratch_disarm(void)
{
    for (size_t i = 0; i < sizeof scratch_signals / sizeof *scratch_signals; i++)
        sigaction(scratch_signals[i], &scratch_saved[i], NULL);
    scratch_armed = 0;
}

/* Remove the scratch directory and whatever the runs left in it (it holds
 * only files). */
static void scratch_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4400];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The last non-empty line of file `path` (at most n-1 bytes of it) into
 * buf; "" when there is none. */
static void last_line(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t k = strcspn(line, "\r\n");
        line[k] = '\0';
        if (k) {
            if (k >= n)
                k = n - 1;
            memcpy(buf, line, k);
            buf[k] = '\0';
        }
    }
    fclose(f);
}

/* Record script c->py into c->grt.  Returns the exit status (128+N for a
 * signal, 124 on timeout), -1 if it could not start. */
static int record(rctx *c)
{
    unlink(c->grt);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (nul >= 0)
            dup2(nul, 0);
        execl(c->o->self, "greenreplay", "record", "--manual", "-o", c->grt, "--", c->o->python,
              c->py, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    scratch_child = pid;
    double deadline = now() + c->timeout;
    int st;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return scratch_child = 0, -1;
        if (now() > deadline) {
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            scratch_child = 0;
            return 124;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    scratch_child = 0;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

/* Violations of the rule in c->grt; -1 if the trace cannot be read. */
static long rule_count(rctx *c)
{
    gr_trace t;
    if (gr_trace_load(&t, c->grt) != GR_READ_OK) {
        gr_trace_free(&t);
        return -1;
    }
    gr_check_result res;
    gr_check_run(&t, &res);
    long k = (long)res.counts[c->rule];
    gr_check_result_free(&res);
    gr_trace_free(&t);
    return k;
}

/* Run text; *status and *count receive the outcome.  Returns 1 when it
 * fails the same way. */
static int try_text(rctx *c, const char *text, size_t n, int *status, long *count)
{
    c->runs++;
    *status = -1;
    *count = -1;
    if (write_file(c->py, text, n) < 0)
        return 0;
    *status = record(c);
    *count = *status < 0 ? -1 : rule_count(c);
    return *status == c->status && *count > 0;
}

static int test_cfg(void *ctx, const uint8_t *keep, size_t n)
{
    (void)n;
    rctx *c = ctx;
    size_t len;
    char *text = gr_units_render(c->u, keep, c->def_keep, 0, &len);
    int st;
    long k;
    int r = try_text(c, text, len, &st, &k);
    free(text);
    return r;
}

/* One line per run, with an estimate of what is left: if no more unit
 * goes, ddmin ends after at most 3 x (units left) + 2 more runs (the rest
 * of the current round, at most one per unit and the two halves alone,
 * then rounds of twice the chunks up to one per unit, together at most
 * twice the units), at the runs' mean time so far. */
static void progress(void *ctx, size_t tested, int fails, size_t current)
{
    rctx *c = ctx;
    if (!c->o->log)
        return;
    double spent = now() - c->t0;
    size_t left = 3 * current + 2;
    if (c->o->max_runs && c->runs + left > c->o->max_runs)
        left = c->o->max_runs > c->runs ? c->o->max_runs - c->runs : 0;
    fprintf(c->o->log, "reduce: run %zu: %zu units: %s; now %zu of %zu units [%.1f s; at most "
                       "%zu runs, ~%.0f s more if no more units go]\n",
            c->runs, tested, fails ? "still fails" : "no longer fails", current, c->u->nunits, spent,
            left, c->runs ? spent / (double)c->runs * (double)left : 0.0);
}

/* The result's definitions at their own line numbers (gr_units_renumber),
 * if it still fails the same way with them; else the result as it was. */
static void renumber_checked(rctx *c, gr_sb *res)
{
    size_t n;
    char *text = gr_units_renumber(res->s, res->len, &n);
    int st;
    long k;
    if (n != res->len || memcmp(text, res->s, n) != 0) {
        if (try_text(c, text, n, &st, &k)) {
            gr_sb_reset(res);
            gr_sb_put(res, text, n);
        } else if (c->o->log) {
            fprintf(c->o->log, "reduce: with its lines renumbered the script no longer fails: "
                               "the original line numbers are kept\n");
        }
    }
    free(text);
}

static int read_file(const char *path, char **text, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    gr_sb sb;
    gr_sb_init(&sb);
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        gr_sb_put(&sb, buf, k);
    int err = ferror(f);
    fclose(f);
    if (err) {
        gr_sb_free(&sb);
        return -1;
    }
    *n = sb.len;
    *text = gr_sb_take(&sb);
    return 0;
}

/* What a step of gr_reduce returns to let the next one run (else the exit
 * status). */
enum { REDUCE_GO_ON = -1 };

/* The rule's index, the interpreter found and able to run the recorder:
 * as record does before running anything.  -1 (said) when not. */
static int reduce_rule(const gr_reduce_opts *o)
{
    int rule = -1;
    for (int i = 0; i < GR_NRULES_CHECK; i++)
        if (strcmp(o->rule, gr_rule_name((enum gr_rule)i)) == 0)
            rule = i;
    if (rule < 0) {
        fprintf(stderr, "greenreplay: reduce: unknown rule '%s' (imbalance, blind_spot, "
                        "switch_consistency, propagation, callback_guard, displaced or unreached)\n",
                o->rule);
        return -1;
    }
    if (!*o->python) {
        fprintf(stderr, "greenreplay: reduce: --python: the interpreter is empty\n");
        return -1;
    }
    if (gr_record_find_program(o->python) != 0) {
        fprintf(stderr, "greenreplay: reduce: interpreter not found or not executable: %s (%s)\n",
                o->python, strerror(errno));
        return -1;
    }
    /* As record does before running anything: an interpreter that does not
     * run (or lacks the recorder) is named with its cause here, not taken
     * for a script that does not fail. */
    char pkg[PATH_MAX];
    if (gr_record_package_dir(pkg, sizeof pkg) < 0) {
        fprintf(stderr, "greenreplay: reduce: cannot find the recorder package beside this executable\n");
        return -1;
    }
    if (gr_record_probe_interpreter("reduce", o->python, pkg) < 0)
        return -1;
    return rule;
}

/* The original must fail that way: its run also sets the candidates'
 * timeout. */
static int reduce_original(rctx *c, const char *src, size_t nsrc)
{
    const gr_reduce_opts *o = c->o;
    FILE *log = c->o->log;
    c->status = -2; /* accept any status for the first run */
    int st;
    long k;
    c->runs++;
    if (write_file(c->py, src, nsrc) < 0) {
        fprintf(stderr, "greenreplay: reduce: %s: %s\n", c->py, strerror(errno));
        return 2;
    }
    c->timeout = o->timeout_s ? o->timeout_s : 600;
    double t_first = now();
    st = record(c);
    /* Without --timeout, a candidate that runs five times as long as the
     * original (at least 5 s) counts as not failing: a removed hand-over
     * between threads makes a script wait forever, and candidates are
     * never slower than the original otherwise (they do less). */
    if (!o->timeout_s) {
        c->timeout = 5 * (now() - t_first);
        if (c->timeout < 5)
            c->timeout = 5;
    }
    k = st < 0 ? -1 : rule_count(c);
    if (st < 0) {
        fprintf(stderr, "greenreplay: reduce: could not run %s\n", o->self);
        return 2;
    }
    if (log)
        fprintf(log, "reduce: original: record exit %d, %ld %s violation%s [%.1f s]\n", st,
                k < 0 ? 0 : k, o->rule, k == 1 ? "" : "s", now() - c->t0);
    if (k <= 0) {
        if (o->keep) {
            fprintf(stderr, "greenreplay: reduce: %s does not fail with %s under %s (record exit "
                            "%d%s; its output: %s): nothing to reduce\n",
                    o->script, o->rule, o->python, st, k < 0 ? ", no readable trace" : "", c->log);
        } else { /* the log goes with the scratch directory: quote its end */
            char tail[200];
            last_line(c->log, tail, sizeof tail);
            fprintf(stderr, "greenreplay: reduce: %s does not fail with %s under %s (record exit "
                            "%d%s; %s%s%s): nothing to reduce\n",
                    o->script, o->rule, o->python, st, k < 0 ? ", no readable trace" : "",
                    tail[0] ? "its last output line: " : "no output",
                    tail, tail[0] ? "; --keep keeps all of it" : "");
        }
        return 1;
    }
    c->status = st;
    return REDUCE_GO_ON;
}

/* Drop what nothing refers to any more, and the header; check again;
 * write the result.  The exit status. */
static int reduce_result(rctx *c, gr_units *u, uint8_t *keep, size_t nsrc)
{
    const gr_reduce_opts *o = c->o;
    FILE *log = c->o->log;
    int st;
    long k;
    int rc;
    /* Drop what nothing refers to any more, and the header; check again. */
    uint8_t *keep2 = gr_xrealloc(NULL, u->nunits);
    uint8_t *def2 = gr_xrealloc(NULL, u->ndefs + 1);
    memcpy(keep2, keep, u->nunits);
    memcpy(def2, c->def_keep, u->ndefs + 1);
    size_t dropped = gr_units_cleanup(u, keep2, def2);
    size_t blen;
    char *body = gr_units_render(u, keep2, def2, 1, &blen);
    if (!try_text(c, body, blen, &st, &k)) {
        free(body);
        body = gr_units_render(u, keep, c->def_keep, 1, &blen);
        dropped = 0;
        if (!try_text(c, body, blen, &st, &k)) {
            free(body);
            body = gr_units_render(u, keep, c->def_keep, 0, &blen);
        }
    } else {
        memcpy(keep, keep2, u->nunits);
    }
    free(keep2);
    free(def2);
    size_t kept = 0;
    for (size_t i = 0; i < u->nunits; i++)
        kept += keep[i];
    gr_sb res;
    gr_sb_init(&res);
    gr_sb_puts(&res, "#!/usr/bin/env python3\n");
    gr_sb_printf(&res, "# Reduced by `greenreplay reduce` (%zu of %zu units kept): recording it\n"
                       "# still gives %s violations.\n"
                       "# Record it:  greenreplay record --manual -o repro.grt -- %s THIS_FILE\n",
                 kept, u->nunits, o->rule, o->python);
    gr_sb_put(&res, body, blen);
    free(body);
    renumber_checked(c, &res);
    if (log)
        fprintf(log, "reduce: done: %zu of %zu units kept (%zu unreferenced definitions and "
                     "helpers dropped); %zu of %zu bytes (%.1f%%); %zu runs in %.1f s\n",
                kept, u->nunits, dropped, res.len, nsrc, nsrc ? 100.0 * (double)res.len / (double)nsrc : 0.0,
                c->runs, now() - c->t0);
    FILE *f = o->output ? fopen(o->output, "w") : stdout;
    if (!f || fwrite(res.s, 1, res.len, f) != res.len || fflush(f) != 0) {
        fprintf(stderr, "greenreplay: reduce: %s: %s\n", o->output ? o->output : "stdout",
                strerror(errno));
        rc = 2;
    } else {
        rc = 0;
    }
    if (f && o->output)
        fclose(f);
    gr_sb_free(&res);
    return rc;
}

int gr_reduce(const gr_reduce_opts *o)
{
    int rule = reduce_rule(o);
    if (rule < 0)
        return 2;
    char *src;
    size_t nsrc;
    if (read_file(o->script, &src, &nsrc) < 0) {
        fprintf(stderr, "greenreplay: %s: %s\n", o->script, strerror(errno));
        return 2;
    }
    gr_units u;
    if (gr_units_parse(&u, src, nsrc) == 0) {
        fprintf(stderr, "greenreplay: reduce: %s has no units (lines tagged #@N): reduce works on "
                        "scripts made by `greenreplay script`\n",
                o->script);
        gr_units_free(&u);
        free(src);
        return 2;
    }
    rctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.u = &u;
    c.rule = rule;
    c.t0 = now();
    const char *base = o->workdir ? o->workdir : getenv("TMPDIR");
    snprintf(c.dir, sizeof c.dir, "%s/greenreplay-reduce.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(c.dir)) {
        fprintf(stderr, "greenreplay: reduce: %s: %s\n", c.dir, strerror(errno));
        gr_units_free(&u);
        free(src);
        return 2;
    }
    snprintf(c.py, sizeof c.py, "%s/candidate.py", c.dir);
    snprintf(c.grt, sizeof c.grt, "%s/candidate.grt", c.dir);
    snprintf(c.log, sizeof c.log, "%s/candidate.log", c.dir);
    scratch_arm(&c, o->keep);
    c.def_keep = gr_xrealloc(NULL, u.ndefs + 1);
    memset(c.def_keep, 1, u.ndefs + 1);
    uint8_t *keep = gr_xrealloc(NULL, u.nunits);
    memset(keep, 1, u.nunits);
    int rc = 2;
    FILE *log = o->log;
    if (log)
        fprintf(log, "reduce: %s: %zu units, %zu definitions, %zu bytes; rule %s; python %s\n",
                o->script, u.nunits, u.ndefs, nsrc, o->rule, o->python);

    rc = reduce_original(&c, src, nsrc);
    if (rc != REDUCE_GO_ON)
        goto out;

    gr_ddmin(u.nunits, keep, test_cfg, log ? progress : NULL, &c, o->max_runs);
    rc = reduce_result(&c, &u, keep, nsrc);
out:
    if (o->keep)
        fprintf(stderr, "greenreplay: reduce: kept the scratch directory %s\n", c.dir);
    else
        scratch_remove(c.dir);
    scratch_disarm();
    free(keep);
    free(c.def_keep);
    gr_units_free(&u);
    free(src);
    return rc;
}
