/* record.c - `greenreplay record`: run a Python program under the recorder.
 *
 * The recorder is the greenreplay Python package with its C extension,
 * built by `make` into BUILD/python next to this executable, installed by
 * `make install` into PREFIX/lib/greenreplay/python, or named by
 * GREENREPLAY_PYTHONPATH (the `greenreplay` command of a pip install sets
 * it).  This command checks its options and the interpreter, prepares the
 * environment, runs the interpreter as a child, forwards signals to it and
 * passes its exit status through; it needs no Python itself.
 *
 * Both modes put greenreplay/boot first on PYTHONPATH.  Whole-program
 * mode (no --manual): its sitecustomize starts recording at the call of the
 * program's first frame, so that the interpreter runs the program as it
 * would without the recorder (tracer/greenreplay/boot/sitecustomize.py).
 * --manual: it takes the settings out of the environment and the package
 * off sys.path before the program runs; `import greenreplay` still works.
 */
#define _GNU_SOURCE 1 /* sigabbrev_np */
#include "record.h"

#include "format.h"
#include "seek.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage_record[] =
    "usage: greenreplay record -o FILE [--times] [--root DIR] [--manual] [--force]\n"
    "                          [--max-size SIZE | --ring N] [--flush-signal SIG]\n"
    "                          [--switches passive|callback]\n"
    "                          [--switch-stacks needed|every] [--no-compress]\n"
    "                          [--start-on SIG [--for SECONDS]]\n"
    "                          -- PYTHON [PYTHON OPTIONS]\n"
    "                             SCRIPT|-m MODULE|-c CODE|- [ARGS...]\n"
    "\n"
    "Run the program with PYTHON and record what a profiler sees (calls,\n"
    "returns, greenlet switches) with the real Python stack, into the trace\n"
    "FILE: from the program's first frame to its exit, or, with --manual,\n"
    "between its own greenreplay.start() and stop().  The program runs as\n"
    "without the recorder: its output, exit status and interpreter options\n"
    "(-u, -O, -X dev, ...) are its own; -E, -I (and, without --manual, -S) are\n"
    "refused, as they keep the recorder out.  `python -m greenreplay record -o\n"
    "FILE -- SCRIPT` runs SCRIPT with that interpreter.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  trace to write; an existing file that is not a trace is\n"
    "                     refused unless --force (it is emptied before the run)\n"
    "  --force            overwrite FILE (and FILE.times) even if it is not a trace\n"
    "  --times            also write timestamps to FILE.times (side channel)\n"
    "  --root DIR         file names are written relative to DIR (default: the\n"
    "                     script's directory; the current one for -m, -c and -)\n"
    "  --max-size SIZE    cap the trace at SIZE bytes (suffix k, M, G); records\n"
    "                     past it are dropped and counted\n"
    "  --ring N           keep only the last N records in memory, written at exit\n"
    "                     and on --flush-signal (not with --times or --max-size)\n"
    "  --flush-signal SIG flush the trace on signal SIG (USR1, SIGUSR2, a number)\n"
    "                     without stopping; the program's handler still runs\n"
    "  --switches MODE    how switches are found.  passive (the default): no\n"
    "                     greenlet trace callback is installed; the recorder asks\n"
    "                     greenlet which greenlet runs at each mark and profile\n"
    "                     event that may follow a switch.  callback: installs a\n"
    "                     greenlet trace callback (greenlet.settrace), which makes\n"
    "                     greenlet heal the greenlet issue 256 class it looks for\n"
    "  --switch-stacks WHEN  passive mode: needed (default): a switch back into a\n"
    "                     greenlet whose turns were all seen is written without its\n"
    "                     stack (flag continued); every: a stack at every switch\n"
    "  --no-compress      write the records chunks uncompressed (by default each\n"
    "                     is one zstd frame, readable on its own; FORMAT.md 2.1)\n"
    "  --manual           only make `import greenreplay` work: the program calls\n"
    "                     greenreplay.start()/stop() itself\n"
    "  --start-on SIG     record one window of a running service: the program\n"
    "                     runs unrecorded until record gets SIG (USR2, ...; the\n"
    "                     program's own handler of SIG is left as it is), then\n"
    "                     until the next SIG or --for SECONDS; at the main\n"
    "                     thread's next bytecode (docs/recorder-start.md)\n"
    "  --for SECONDS      end the window that many seconds after it opened\n"
    "  -h, --help         show this help\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP, SIGQUIT are forwarded to the program.  Hash\n"
    "randomization stays on: set PYTHONHASHSEED for runs that must repeat.\n"
    "A failed write (disk full) never reaches the program; the trace says so.\n"
    "docs/USAGE.md has the details (\"Using it\", \"Under faults\").\n"
    "\n"
    "exit status: the program's own; 128+N if it was killed by signal N (a line\n"
    "on stderr says how much of the trace was written); 2 bad usage, an\n"
    "interpreter the recorder is not built for, or a FILE that cannot or must\n"
    "not be written.\n"
    "\n"
    "EXAMPLES\n"
    "  greenreplay record -o run.grt -- python3 app.py --port 8000\n"
    "  greenreplay record --times -o run.grt -- python3 -m myservice\n"
    "  greenreplay record --manual -o run.grt -- python3 test_one.py\n"
    "  python3 -m greenreplay record -o run.grt -- app.py\n"
    "  greenreplay record --start-on USR2 --for 5 -o w.grt -- python3 server.py &\n"
    "  kill -USR2 $!                   # records 5 seconds of the running server\n";

/* One-line usage error naming the cause; exit status 2. */
static int usage_error(const char *fmt, const char *arg)
{
    fputs("greenreplay: record: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (`greenreplay record --help` shows the usage)\n", stderr);
    return 2;
}

/* Directory holding the greenreplay package: $GREENREPLAY_PYTHONPATH (set
 * by the console script of a pip install), else `python` beside this
 * executable (a `make` tree), else ../lib/greenreplay/python from it (a
 * `make install`; when neither exists, the former is named in the error).
 * Writes into buf (size n); 0 or -1. */
int gr_record_package_dir(char *buf, size_t n)
{
    const char *env = getenv("GREENREPLAY_PYTHONPATH");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k < 0)
        return -1;
    exe[k] = '\0';
    const char *dir = dirname(exe);
    struct stat st;
    snprintf(buf, n, "%s/../lib/greenreplay/python", dir);
    if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) {
        char beside[PATH_MAX];
        snprintf(beside, sizeof beside, "%s/python", dir);
        if (stat(beside, &st) != 0 || !S_ISDIR(st.st_mode))
            return 0;
    }
    snprintf(buf, n, "%s/python", dir);
    return 0;
}

/* record.h */
int gr_record_find_program(const char *prog)
{
    if (!*prog) { /* "" would find the first directory on PATH */
        errno = ENOENT;
        return -1;
    }
    if (strchr(prog, '/'))
        return access(prog, X_OK);
    const char *path = getenv("PATH");
    if (!path)
        return -1;
    char *copy = strdup(path), *save = NULL;
    int rc = -1;
    for (char *dir = strtok_r(copy, ":", &save); dir && rc; dir = strtok_r(NULL, ":", &save)) {
        char full[PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", *dir ? dir : ".", prog);
        rc = access(full, X_OK);
    }
    free(copy);
    return rc;
}

/* --max-size: a positive decimal number of bytes, optionally with a
 * fraction and a suffix k/K, m/M, g/G (KiB, MiB, GiB), e.g. 64k, 1.5M.
 * Returns the byte count, or 0 if s is not such a size. */
uint64_t gr_record_parse_size(const char *s)
{
    const char *p = s;
    uint64_t whole = 0, frac_num = 0, frac_den = 1;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (whole > UINT64_MAX / 10 - 10)
            return 0;
        whole = whole * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (frac_den < 1000000000u) {
                frac_num = frac_num * 10 + (uint64_t)(*p - '0');
                frac_den *= 10;
            }
            p++;
            digits++;
        }
    }
    if (!digits)
        return 0;
    uint64_t unit = 1;
    switch (*p) {
    case 'k': case 'K': unit = 1ull << 10; p++; break;
    case 'm': case 'M': unit = 1ull << 20; p++; break;
    case 'g': case 'G': unit = 1ull << 30; p++; break;
    default: break;
    }
    if (*p || whole > UINT64_MAX / unit / 2)
        return 0;
    return whole * unit + frac_num * unit / frac_den;
}

/* --ring: a positive decimal count of records.  0 if s is not one. */
uint64_t gr_record_parse_count(const char *s)
{
    if (*s < '0' || *s > '9')
        return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > (1ull << 40))
        return 0;
    return v;
}

/* --flush-signal: a signal name (USR1, SIGUSR1, usr1) or number that a
 * program can catch.  Returns the signal number, or 0 if s is none
 * (SIGKILL and SIGSTOP cannot be caught; SIGCHLD, SIGSEGV and friends are
 * not for flushing). */
int gr_record_parse_signal(const char *s)
{
    int sig = 0;
    if (*s >= '0' && *s <= '9') {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end || v <= 0 || v >= NSIG)
            return 0;
        sig = (int)v;
    } else {
        const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
        for (int i = 1; i < NSIG && !sig; i++) {
            const char *abbrev = sigabbrev_np(i);
            if (abbrev && strcasecmp(abbrev, name) == 0)
                sig = i;
        }
    }
    switch (sig) {
    case 0: case SIGKILL: case SIGSTOP: case SIGCHLD: case SIGSEGV: case SIGBUS:
    case SIGFPE: case SIGILL: case SIGABRT: case SIGTRAP: case SIGSYS:
        return 0;
    default:
        return sig;
    }
}

/* The program part of the command after `--`: PYTHON [OPTIONS] followed by
 * SCRIPT, -m MODULE, -c CODE or -. */
struct program {
    const char *python;
    const char *script;   /* SCRIPT, or NULL */
    char kind;            /* 's' script, 'm' module, 'c' code, '-' stdin */
    const char *refused;  /* an interpreter option that keeps the recorder out */
    int no_site;          /* -S (--manual only): no sitecustomize runs */
};

/* Parse argv[0..argc-1] = PYTHON ARGS... as CPython's command line does
 * (options before the program; -c and -m end them; -W and -X take an
 * argument, attached or next).  Returns 0, or -1 if there is no program. */
static int parse_program(int argc, char **argv, int manual, struct program *p)
{
    memset(p, 0, sizeof *p);
    p->python = argv[0];
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "-") == 0) {
            p->kind = '-';
            return 0;
        }
        if (a[0] != '-') {
            p->kind = 's';
            p->script = a;
            return 0;
        }
        if (strcmp(a, "--") == 0) {
            if (i + 1 >= argc)
                return -1;
            p->kind = strcmp(argv[i + 1], "-") == 0 ? '-' : 's';
            p->script = p->kind == 's' ? argv[i + 1] : NULL;
            return 0;
        }
        if (a[1] == '-') { /* long options */
            if (strcmp(a, "--check-hash-based-pycs") == 0)
                i++;
            i++;
            continue;
        }
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'c' || *c == 'm') {
                if (!c[1] && i + 1 >= argc)
                    return -1;
                p->kind = *c;
                return 0;
            }
            if (*c == 'W' || *c == 'X') {
                if (!c[1])
                    i++; /* argument is the next word */
                break;
            }
            if (*c == 'S')
                p->no_site = 1;
            if ((*c == 'E' || *c == 'I' || (*c == 'S' && !manual)) && !p->refused)
                p->refused = *c == 'E' ? "-E" : *c == 'I' ? "-I" : "-S";
        }
        i++;
    }
    return -1;
}

/* Make `path` absolute against the current directory into out (size n). */
static int absolute(const char *path, char *out, size_t n)
{
    if (path[0] == '/')
        return (size_t)snprintf(out, n, "%s", path) < n ? 0 : -1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    return (size_t)snprintf(out, n, "%s/%s", cwd, path) < n ? 0 : -1;
}

/* 1 if the regular file at fd starts with the trace magic (canonical trace
 * or side channel), 0 if not, -1 on a read error. */
static int has_magic(int fd)
{
    char m[GR_MAGIC_LEN];
    ssize_t k = pread(fd, m, sizeof m, 0);
    if (k < 0)
        return -1;
    return k == (ssize_t)sizeof m && memcmp(m, GR_MAGIC, GR_MAGIC_LEN) == 0;
}

/* Check that `path` may be written as a trace, and (unless dry) empty it
 * if it exists, so that a run that never starts recording leaves no old
 * trace behind.  A directory, an unwritable path, a file that is the
 * program's script, or a non-empty regular file without the trace magic
 * (unless force) is refused: one line "greenreplay: CMD: OPT PATH: why" on
 * stderr, -1.  `script` is the program's SCRIPT or NULL. */
static int check_output(const char *cmd, const char *opt, const char *path, const char *script, int force,
                        int dry)
{
    struct stat st, sst;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) {
            fprintf(stderr, "greenreplay: %s: %s %s: %s\n", cmd, opt, path, strerror(errno));
            return -1;
        }
        char *copy = strdup(path);
        const char *dir = copy ? dirname(copy) : ".";
        int rc = access(dir, W_OK | X_OK);
        int e = errno;
        if (rc != 0)
            fprintf(stderr, "greenreplay: %s: %s %s: cannot create it in %s: %s\n", cmd, opt, path, dir,
                    strerror(e));
        free(copy);
        return rc == 0 ? 0 : -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "greenreplay: %s: %s %s: is a directory\n", cmd, opt, path);
        return -1;
    }
    if (script && stat(script, &sst) == 0 && sst.st_dev == st.st_dev && sst.st_ino == st.st_ino) {
        fprintf(stderr, "greenreplay: %s: %s %s: is the program's script; refusing to overwrite it\n",
                cmd, opt, path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* /dev/null, a FIFO, ...: only writable */
        if (access(path, W_OK) != 0) {
            fprintf(stderr, "greenreplay: %s: %s %s: %s\n", cmd, opt, path, strerror(errno));
            return -1;
        }
        return 0;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "greenreplay: %s: %s %s: cannot write it: %s\n", cmd, opt, path, strerror(errno));
        return -1;
    }
    int magic = st.st_size ? has_magic(fd) : 1;
    if (magic <= 0 && !force) {
        fprintf(stderr,
                "greenreplay: %s: %s %s: exists and is not a greenreplay trace; refusing to "
                "overwrite it%s\n",
                cmd, opt, path, strcmp(cmd, "record") == 0 ? " (--force does)" : "");
        close(fd);
        return -1;
    }
    if (dry) {
        close(fd);
        return 0;
    }
    int rc = ftruncate(fd, 0);
    if (rc != 0)
        fprintf(stderr, "greenreplay: %s: %s %s: cannot empty it: %s\n", cmd, opt, path, strerror(errno));
    close(fd);
    return rc == 0 ? 0 : -1;
}

/* Two records writing one -o at once both exited 0 and left a corrupt
 * file.  record holds an exclusive flock(2) on the trace (created empty if
 * need be) from before it is emptied until the program ends; a second one
 * is refused.  Returns 0, or -1 with the message printed. */
static int lock_fd = -1;
static int lock_created; /* the lock created the file: removed if left empty */

static int lock_output(const char *path, const char *shown)
{
    if (lock_fd >= 0) {
        close(lock_fd);
        lock_fd = -1;
    }
    struct stat st;
    int existed = stat(path, &st) == 0;
    lock_created = 0;
    if (existed && !S_ISREG(st.st_mode))
        return 0; /* /dev/null, a FIFO: nothing to corrupt */
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0)
        return 0; /* prepare_output names the cause */
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK) {
            fprintf(stderr, "greenreplay: record: -o %s: another greenreplay record is writing it\n",
                    shown);
            close(fd);
            return -1;
        }
        break; /* a file system without flock: go on unlocked */
    }
    lock_fd = fd;
    lock_created = !existed;
    return 0;
}

/* After the program (or a failure before it): a file the lock created and
 * nothing wrote is removed, so that a run that never started recording
 * leaves no new file behind; then the lock is released. */
static void unlock_output(const char *path)
{
    struct stat st;
    if (lock_created && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(path);
    lock_created = 0;
    if (lock_fd >= 0) {
        close(lock_fd);
        lock_fd = -1;
    }
}

static int prepare_output(const char *opt, const char *path, const char *script, int force)
{
    return check_output("record", opt, path, script, force, 0);
}

/* record.h */
int gr_record_check_output(const char *cmd, const char *opt, const char *path, const char *script)
{
    return check_output(cmd, opt, path, script, 0, 1);
}

/* The side channel FILE.times of an earlier run: emptied if it is one (a
 * stale one would not match the new trace); with --times prepared like
 * FILE.  Returns 0 or -1 (message printed). */
static int prepare_side(const char *out_abs, int times, int force)
{
    char side[PATH_MAX];
    if ((size_t)snprintf(side, sizeof side, "%s.times", out_abs) >= sizeof side) {
        fprintf(stderr, "greenreplay: record: -o %s: path too long\n", out_abs);
        return -1;
    }
    if (times)
        return prepare_output("--times", side, NULL, force);
    struct stat st;
    if (stat(side, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return 0;
    int fd = open(side, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (has_magic(fd) == 1 && ftruncate(fd, 0) == 0)
        unlink(side);
    close(fd);
    return 0;
}

/* record.h */
int gr_record_probe_interpreter(const char *cmd, const char *python, const char *pkg)
{
    static const char probe[] =
        "import sys, os, importlib.machinery as m\n"
        "sys.stdout.write('%d.%d\\n' % sys.version_info[:2])\n"
        "ds = [os.path.join(p, 'greenreplay') for p in [sys.argv[1]] + sys.path if p]\n"
        "d = ds[0]\n"
        "if not any(os.path.exists(os.path.join(e, '_greenreplay' + s)) for e in ds for s in m.EXTENSION_SUFFIXES):\n"
        "    sys.stdout.write('no %s\\n' % os.path.join(d, '_greenreplay' + m.EXTENSION_SUFFIXES[0]))\n"
        "    sys.exit(3)\n";
    int fds[2];
    if (pipe(fds) < 0) {
        fprintf(stderr, "greenreplay: %s: pipe: %s\n", cmd, strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "greenreplay: %s: fork: %s\n", cmd, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 2);
        }
        execlp(python, python, "-S", "-c", probe, pkg, (char *)NULL);
        /* The cause, for the parent's message (a directory, a file without
         * an interpreter line, a missing loader...). */
        dprintf(1, "exec: %s\n", strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char buf[PATH_MAX + 64];
    size_t len = 0;
    ssize_t k;
    while (len < sizeof buf - 1 && ((k = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0 || (k < 0 && errno == EINTR)))
        if (k > 0)
            len += (size_t)k;
    buf[len] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int answered = buf[0] >= '0' && buf[0] <= '9' && strchr(buf, '.');
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && answered)
        return 0;
    char *nl = strchr(buf, '\n');
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3 && nl && answered) {
        *nl = '\0';
        char *why = nl + 1;
        why[strcspn(why, "\n")] = '\0';
        fprintf(stderr,
                "greenreplay: %s: the recorder is not built for %s (Python %s: %s); run "
                "`make PYTHON=%s`\n",
                cmd, python, buf, why, python);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && strncmp(buf, "exec: ", 6) == 0) {
        buf[strcspn(buf, "\n")] = '\0';
        fprintf(stderr, "greenreplay: %s: %s does not run as a Python interpreter (cannot execute it: %s)\n",
                cmd, python, buf + 6);
        return -1;
    }
    fprintf(stderr, "greenreplay: %s: %s does not run as a Python interpreter (%s %d)\n", cmd, python,
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return -1;
}

/* ---- signals ------------------------------------------------------------ */

static volatile sig_atomic_t child_pid;

static volatile sig_atomic_t child_own_group; /* the program runs in a group of its own */

/* Forward a signal to the program.  One the terminal sent (SI_KERNEL:
 * Ctrl-C, Ctrl-\, hangup) reached the program's process group already. */

static void forward(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    /* In record's group, the program already got what the terminal sent
     * (SI_KERNEL); in its own group, it gets only what record forwards. */
    if (child_pid > 0 && (child_own_group || !info || info->si_code != SI_KERNEL))
        kill((pid_t)child_pid, sig);
}

/* Whether record runs in the foreground of its controlling terminal: the
 * program then stays in record's process group, where job control (^C,
 * ^Z, terminal reads) reaches it as it would without record. */
static int terminal_foreground(void)
{
    int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int fg = tcgetpgrp(fd) == getpgrp();
    close(fd);
    return fg;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* --start-on SIG: the pipe to the program's boot (tracer/window.c): "S"
 * opens the window at the first SIG, "E" closes it at the next SIG or
 * after --for seconds (SIGALRM).  One window: later signals do nothing. */
static volatile sig_atomic_t window_fd = -1;
static volatile sig_atomic_t window_state; /* 0 waiting, 1 open, 2 closed */
static volatile sig_atomic_t window_seconds;

static void window_send(char c)
{
    int saved = errno;
    ssize_t n;
    do
        n = write(window_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    errno = saved;
}

static void window_signal(int sig)
{
    (void)sig;
    if (window_state == 0) {
        window_state = 1;
        window_send('S');
        if (window_seconds)
            alarm((unsigned)window_seconds);
    } else if (window_state == 1) {
        window_state = 2;
        alarm(0);
        window_send('E');
    }
}

static void window_alarm(int sig)
{
    (void)sig;
    if (window_state == 1) {
        window_state = 2;
        window_send('E');
    }
}

/* After the program ended: when the trace at out_abs lacks its trailer
 * (the program was killed, crashed, or left by os._exit(), which runs no
 * exit handler), say on stderr what `how` ended it and what the trace
 * still holds: the complete chunks written before (the recorder writes 64
 * KiB at a time, docs/FORMAT.md section 2) or none, so that a user knows
 * at once whether `check` has anything to read.  Ring mode writes the file
 * only at exit and on flush: a cut there keeps the previous snapshot.
 * Returns 1 when a line was written; 0 when the trace has its trailer
 * (the recording stopped before, e.g. at the KeyboardInterrupt that
 * SIGINT raised: Python then ends by that signal), 2 when it is empty or
 * missing (the caller says so), 3 when it cannot be read (`check` names
 * the cause). */
static int report_cut(const char *how, const char *output, const char *out_abs, uint64_t ring,
                      const char *max_size)
{
    struct stat st;
    if (stat(out_abs, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return 2;
    gr_trace t;
    uint64_t chunks = 0;
    int said = 3;
    if (gr_trace_open(&t, out_abs) == GR_READ_OK && gr_trace_skip_rest(&t, &chunks) == 0 &&
        t.has_trailer) {
        said = 0;
        if (t.trailer.reason == GR_STOP_SIGNAL) { /* tracer/crash.c wrote it */
            fprintf(stderr, "greenreplay: record: %s; %s holds the records up to the crash "
                            "(see check)\n", how, output);
            said = 1;
        }
        /* The size cap stops recording quietly inside the program (it must
         * not disturb it); say it here, where only `check` did before. */
        if (t.trailer.reason == GR_STOP_SIZE_CAP && t.trailer.dropped)
            fprintf(stderr,
                    "greenreplay: record: %s reached %s%s: the last %" PRIu64 " record%s %s dropped "
                    "(see check)\n",
                    output, max_size ? "--max-size " : "its size cap", max_size ? max_size : "",
                    t.trailer.dropped, t.trailer.dropped == 1 ? "" : "s",
                    t.trailer.dropped == 1 ? "was" : "were");
        if (t.trailer.replaced) /* a name or label too long, or not UTF-8 */
            fprintf(stderr,
                    "greenreplay: record: %s: %" PRIu64 " string%s written other than recorded "
                    "(cut to fit a chunk, or not UTF-8; see check)\n",
                    output, t.trailer.replaced, t.trailer.replaced == 1 ? "" : "s");
    } else if (!t.err.status && !t.has_trailer) {
        if (chunks == 0)
            fprintf(stderr,
                    "greenreplay: record: %s; %s holds no complete chunk (%s): nothing of this run "
                    "can be checked\n",
                    how, output,
                    ring ? "--ring writes the file at exit and on --flush-signal"
                         : "the recorder writes 64 KiB at a time");
        else
            fprintf(stderr,
                    "greenreplay: record: %s; %s holds the %" PRIu64 " complete chunk%s written "
                    "before (up to byte %" PRIu64 "), the records after %s are lost\n",
                    how, output, chunks, chunks == 1 ? "" : "s", t.truncated_at,
                    chunks == 1 ? "it" : "them");
        said = 1;
    }
    gr_trace_free(&t);
    return said;
}

static const char *trace_label; /* gr_record_set_trace_label */
static int last_signal;         /* gr_record_last_signal */

int gr_record_last_signal(void)
{
    return last_signal;
}

void gr_record_set_trace_label(const char *label)
{
    trace_label = label;
}

/* record's options. */
struct rec_opts {
    const char *output, *root, *switches, *stacks, *max_size_arg;
    int times, manual, force, flush_sig, start_sig, no_compress;
    long for_seconds;
    uint64_t max_size, ring;
    int wpipe[2]; /* --start-on: the pipe to the program's boot */
};

/* What a step of gr_cmd_record returns to let the next one run (else the
 * exit status). */
enum { REC_GO_ON = -1 };

/* The options, into o; --help printed. */
static int record_options(struct rec_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"times", no_argument, NULL, 't'},
        {"root", required_argument, NULL, 'r'},
        {"manual", no_argument, NULL, 'M'},
        {"force", no_argument, NULL, 'f'},
        {"max-size", required_argument, NULL, 'S'},
        {"ring", required_argument, NULL, 'R'},
        {"flush-signal", required_argument, NULL, 'F'},
        {"switches", required_argument, NULL, 'W'},
        {"switch-stacks", required_argument, NULL, 'K'},
        {"start-on", required_argument, NULL, 'O'},
        {"for", required_argument, NULL, 'D'},
        {"no-compress", no_argument, NULL, 'Z'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 't': o->times = 1; break;
        case 'r': o->root = optarg; break;
        case 'M': o->manual = 1; break;
        case 'O':
            if (!(o->start_sig = gr_record_parse_signal(optarg)))
                return usage_error("--start-on: '%s' is not a signal a program can catch (USR1, "
                                   "SIGUSR2, a number)",
                                   optarg);
            break;
        case 'D': {
            char *end;
            errno = 0;
            o->for_seconds = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || o->for_seconds <= 0 || o->for_seconds > 86400 * 365)
                return usage_error("--for: '%s' is not a number of seconds > 0", optarg);
            break;
        }
        case 'f': o->force = 1; break;
        case 'S':
            o->max_size_arg = optarg;
            if (!(o->max_size = gr_record_parse_size(optarg)))
                return usage_error("--max-size: '%s' is not a size (a number of bytes > 0, with an "
                                   "optional suffix k, M or G)",
                                   optarg);
            break;
        case 'R':
            if (!(o->ring = gr_record_parse_count(optarg)))
                return usage_error("--ring: '%s' is not a number of records > 0", optarg);
            break;
        case 'F':
            if (!(o->flush_sig = gr_record_parse_signal(optarg)))
                return usage_error("--flush-signal: '%s' is not a signal a program can catch (USR1, "
                                   "SIGUSR2, HUP, a number, ...)",
                                   optarg);
            break;
        case 'W':
            if (strcmp(optarg, "passive") != 0 && strcmp(optarg, "callback") != 0)
                return usage_error("--switches: '%s' is not passive or callback", optarg);
            o->switches = optarg;
            break;
        case 'K':
            if (strcmp(optarg, "needed") != 0 && strcmp(optarg, "every") != 0)
                return usage_error("--switch-stacks: '%s' is not needed or every", optarg);
            o->stacks = optarg;
            break;
        case 'Z': o->no_compress = 1; break;
        case 'h': fputs(usage_record, stdout); return 0;
        case ':': return usage_error("option %s needs an argument", argv[optind - 1]);
        default: return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (!o->output)
        return usage_error("%s", "-o FILE is required");
    if (!*o->output)
        return usage_error("%s", "-o: the file name is empty");
    if (o->for_seconds && !o->start_sig)
        return usage_error("%s", "--for needs --start-on SIG (the window it ends)");
    if (o->start_sig && o->manual)
        return usage_error("%s", "--start-on records a window of the whole program: not with --manual");
    if (o->start_sig && (o->start_sig == o->flush_sig || o->start_sig == SIGINT || o->start_sig == SIGTERM ||
                         o->start_sig == SIGHUP || o->start_sig == SIGQUIT))
        return usage_error("--start-on: signal %s is already forwarded to the program or used by "
                           "--flush-signal",
                           sigabbrev_np(o->start_sig) ? sigabbrev_np(o->start_sig) : "?");
    if (o->ring && (o->times || o->max_size))
        return usage_error("%s", "--ring keeps the trace in memory: not with --times or --max-size");
    if (optind >= argc)
        return usage_error("%s", "need, after --, PYTHON and the program (SCRIPT, -m MODULE, -c CODE or -)");
    return REC_GO_ON;
}

/* The program and interpreter after --, and the recorder package (pkg:
 * PATH_MAX bytes). */
static int record_program(const struct rec_opts *o, int argc, char **argv, struct program *prog, char *pkg)
{
    if (parse_program(argc - optind, argv + optind, o->manual, prog) < 0) {
        size_t n = strlen(argv[optind]);
        if (argc - optind == 1 && n > 3 && strcmp(argv[optind] + n - 3, ".py") == 0)
            /* `record -o F x.py`: the script was taken as the interpreter */
            return usage_error("need PYTHON before the script, e.g. `-- python3 %s`", argv[optind]);
        return usage_error("%s", "need, after PYTHON, the program: SCRIPT, -m MODULE, -c CODE or -");
    }
    if (prog->refused)
        return usage_error("PYTHON option %s keeps the recorder out (it ignores PYTHONPATH or site, "
                           "through which greenreplay loads); not supported",
                           prog->refused);
    const char *python = prog->python;
    if (!*python)
        return usage_error("%s", "the interpreter is empty (PYTHON, the first word after --, e.g. "
                                 "`-- python3 SCRIPT`)");
    if (gr_record_find_program(python) != 0) {
        fprintf(stderr, "greenreplay: record: interpreter not found or not executable: %s (%s)\n", python,
                strerror(errno));
        return 2;
    }
    struct stat st;
    if (gr_record_package_dir(pkg, PATH_MAX) < 0 || stat(pkg, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "greenreplay: record: recorder package not found at %s (run `make`, or `pip install .` and use its greenreplay command)\n", pkg);
        return 2;
    }
    if (prog->script && access(prog->script, R_OK) != 0) {
        fprintf(stderr, "greenreplay: record: cannot read the script %s: %s\n", prog->script, strerror(errno));
        return 2;
    }
    return REC_GO_ON;
}

/* The trace's absolute path and the default root (out_abs, root_abs:
 * PATH_MAX bytes each). */
static int record_paths(struct rec_opts *o, const struct program *prog, char *out_abs, char *root_abs)
{
    /* The trace path is handed to the child absolute: it may chdir. */
    if (absolute(o->output, out_abs, PATH_MAX) < 0) {
        fprintf(stderr, "greenreplay: record: -o %s: path too long\n", o->output);
        return 2;
    }
    /* Default root: the script's directory, whatever the working directory
     * (the same in both modes); else the current directory. */
    if (!o->root) {
        if (prog->script && absolute(prog->script, root_abs, PATH_MAX) == 0) {
            char *slash = strrchr(root_abs, '/');
            if (slash == root_abs)
                slash[1] = '\0';
            else
                *slash = '\0';
        } else if (!getcwd(root_abs, PATH_MAX)) {
            perror("greenreplay: record: getcwd");
            return 2;
        }
        o->root = root_abs;
    }
    return REC_GO_ON;
}

/* The interpreter probed, the output locked and emptied, and the
 * recorder's environment for the program. */
static int record_environment(struct rec_opts *o, const struct program *prog, const char *pkg,
                              const char *out_abs)
{
    const char *old = getenv("PYTHONPATH");
    char *pythonpath = malloc(2 * strlen(pkg) + (old ? strlen(old) : 0) + 32);
    if (!pythonpath)
        return 2;
    sprintf(pythonpath, "%s%s%s", pkg, old && *old ? ":" : "", old && *old ? old : "");
    setenv("PYTHONPATH", pythonpath, 1);
    if (gr_record_probe_interpreter("record", prog->python, pkg) < 0) {
        free(pythonpath);
        return 2;
    }
    /* Only now, after every check: empty the old trace. */
    if (lock_output(out_abs, o->output) < 0) {
        free(pythonpath);
        return 2;
    }
    if (prepare_output("-o", out_abs, prog->script, o->force) < 0 || prepare_side(out_abs, o->times, o->force) < 0) {
        unlock_output(out_abs);
        free(pythonpath);
        return 2;
    }
    /* Both modes boot through greenreplay/boot (its sitecustomize): with
     * --manual it only moves the settings below out of the environment and
     * the boot directory off sys.path, so that the program sees neither
     * until it imports greenreplay itself (docs/recorder-start.md).  The
     * package's directory is not put on PYTHONPATH: the boot imports from
     * it directly, and a site directory (a pip install's site-packages)
     * then keeps its own place on sys.path.  Only under -S (--manual),
     * where no sitecustomize runs, does the program find it there. */
    sprintf(pythonpath, "%s/greenreplay/boot%s%s%s%s", pkg, prog->no_site ? ":" : "", prog->no_site ? pkg : "",
            old && *old ? ":" : "", old && *old ? old : "");
    setenv("PYTHONPATH", pythonpath, 1);
    setenv("GREENREPLAY_PROGRAM", o->manual ? "manual" : "1", 1);
    free(pythonpath);
    char num[32];
    setenv("GREENREPLAY_OUTPUT", out_abs, 1);
    setenv("GREENREPLAY_TIMES", o->times ? "1" : "0", 1);
    setenv("GREENREPLAY_ROOT", o->root, 1);
    unsetenv("GREENREPLAY_MAX_SIZE");
    unsetenv("GREENREPLAY_RING");
    unsetenv("GREENREPLAY_FLUSH_SIGNAL");
    if (o->no_compress)
        setenv("GREENREPLAY_COMPRESS", "0", 1);
    else
        unsetenv("GREENREPLAY_COMPRESS");
    if (o->switches)
        setenv("GREENREPLAY_SWITCHES", o->switches, 1);
    if (o->stacks)
        setenv("GREENREPLAY_SWITCH_STACKS", o->stacks, 1);
    if (o->max_size) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)o->max_size);
        setenv("GREENREPLAY_MAX_SIZE", num, 1);
    }
    if (o->ring) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)o->ring);
        setenv("GREENREPLAY_RING", num, 1);
    }
    if (o->flush_sig) {
        const char *abbrev = sigabbrev_np(o->flush_sig); /* the name, as a program reading it expects */
        snprintf(num, sizeof num, "%d", o->flush_sig);
        setenv("GREENREPLAY_FLUSH_SIGNAL", abbrev ? abbrev : num, 1);
    }
    unsetenv("GREENREPLAY_WINDOW_FD");
    if (o->start_sig) {
        if (pipe2(o->wpipe, O_CLOEXEC) < 0) {
            perror("greenreplay: record: pipe");
            unlock_output(out_abs);
            return 2;
        }
        snprintf(num, sizeof num, "%d", o->wpipe[0]);
        setenv("GREENREPLAY_WINDOW_FD", num, 1);
    }
    return REC_GO_ON;
}

/* --start-on: record's end of the pipe, and the handlers that open and
 * close the window. */
static void window_arm(const struct rec_opts *o)
{
    close(o->wpipe[0]);
    window_fd = o->wpipe[1];
    window_state = 0;
    window_seconds = (sig_atomic_t)o->for_seconds;
    signal(SIGPIPE, SIG_IGN); /* a program that ended: nothing to tell */
    struct sigaction wa;
    memset(&wa, 0, sizeof wa);
    wa.sa_handler = window_signal;
    wa.sa_flags = SA_RESTART;
    sigfillset(&wa.sa_mask);
    sigaction(o->start_sig, &wa, NULL);
    wa.sa_handler = window_alarm;
    sigaction(SIGALRM, &wa, NULL);
}

/* The program started, with the forwarded signals in place. */
static int record_spawn(const struct rec_opts *o, const char *python, char **args, const char *out_abs,
                        pid_t *pidp)
{
    /* Block the forwarded signals until the child's pid is known. */
    sigset_t block, saved;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaddset(&block, forwarded[i]);
    if (o->flush_sig)
        sigaddset(&block, o->flush_sig);
    if (o->start_sig) {
        sigaddset(&block, o->start_sig);
        sigaddset(&block, SIGALRM);
    }
    sigprocmask(SIG_BLOCK, &block, &saved);
    fflush(NULL);
    /* Without a terminal in front (CI runners, supervisors, timeout(1)),
     * a signal usually goes to record's whole process group (kill --
     * -PGID): a program in that group got it once from the sender and once
     * more forwarded, and one that stops gracefully on its first SIGTERM
     * and forcibly on its second changed its exit status.  There the
     * program gets a group of its own, and only record's forwarding
     * reaches it; it dies with record (PR_SET_PDEATHSIG) when a SIGKILL
     * to the group leaves nothing to forward. */
    int own_group = !terminal_foreground();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("greenreplay: record: fork");
        unlock_output(out_abs);
        sigprocmask(SIG_SETMASK, &saved, NULL);
        return 2;
    }
    if (pid == 0) {
        if (own_group) {
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) /* record died before the line above */
                _exit(128 + SIGKILL);
        }
        sigprocmask(SIG_SETMASK, &saved, NULL);
        if (o->start_sig)
            fcntl(o->wpipe[0], F_SETFD, 0); /* the read end goes to the program */
        execvp(python, args);
        fprintf(stderr, "greenreplay: record: cannot run %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    if (own_group)
        setpgid(pid, pid); /* (either side may run first) */
    child_own_group = own_group;
    child_pid = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &sa, NULL);
    if (o->flush_sig)
        sigaction(o->flush_sig, &sa, NULL);
    if (o->start_sig)
        window_arm(o);
    sigprocmask(SIG_SETMASK, &saved, NULL);
    *pidp = pid;
    return REC_GO_ON;
}

/* The end-of-run lines: killed, no trace, a trace cut short; the exit
 * status. */
static int record_outcome(const struct rec_opts *o, int status, const char *shown, const char *out_abs)
{
    struct stat st;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        last_signal = sig;
        char how[96];
        snprintf(how, sizeof how, "the program was killed by signal %d (%s)", sig, strsignal(sig));
        int said = report_cut(how, shown, out_abs, o->ring, o->max_size_arg);
        if (said == 0) /* (a label names the trace itself: "the temporary trace (...)") */
            fprintf(stderr, "greenreplay: record: %s; %s%s is complete (recording stopped before)\n", how,
                    trace_label ? "" : "the trace ", shown);
        else if (said == 2)
            fprintf(stderr, "greenreplay: record: %s; no trace was written to %s\n", how, shown);
        else if (said == 3)
            fprintf(stderr, "greenreplay: record: %s\n", how);
        return 128 + sig;
    }
    int rc = WEXITSTATUS(status);
    /* An existing -o left empty and a new one never created have the same
     * causes: both lines give them. */
    int empty = stat(out_abs, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
    if (empty || stat(out_abs, &st) != 0)
        fprintf(stderr, "greenreplay: record: no trace was written to %s (the program %s)\n", shown,
                o->start_sig ? "ended before the window opened: record got no --start-on signal "
                               "while it ran, or recording could not start"
                : o->manual ? "did not call greenreplay.start(), or left without its stop(), e.g. by "
                         "os._exit()"
                : o->ring ? "ended before its first frame ran, recording could not start, or, --ring "
                         "writing the file at exit, it left without the recorder's stop, e.g. by "
                         "os._exit()"
                       : "ended before its first frame ran, or recording could not start");
    else {
        char how[96];
        snprintf(how, sizeof how, "the program exited (status %d) without the recorder's stop (os._exit?)",
                 rc);
        report_cut(how, shown, out_abs, o->ring, o->max_size_arg);
    }
    return rc;
}

int gr_cmd_record(int argc, char **argv)
{
    last_signal = 0;
    struct rec_opts opt = {0}, *o = &opt;
    int rc = record_options(o, argc, argv);
    if (rc != REC_GO_ON)
        return rc;
    struct program prog;
    char pkg[PATH_MAX];
    rc = record_program(o, argc, argv, &prog, pkg);
    if (rc != REC_GO_ON)
        return rc;
    const char *python = prog.python;
    char out_abs[PATH_MAX], root_abs[PATH_MAX];
    rc = record_paths(o, &prog, out_abs, root_abs);
    if (rc != REC_GO_ON)
        return rc;
    rc = record_environment(o, &prog, pkg, out_abs);
    if (rc != REC_GO_ON)
        return rc;
    pid_t pid;
    rc = record_spawn(o, python, argv + optind, out_abs, &pid);
    if (rc != REC_GO_ON)
        return rc;

    /* The trace as the end-of-run lines name it. */
    const char *shown = trace_label ? trace_label : o->output;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("greenreplay: record: waitpid");
            return 2;
        }
    }
    child_pid = 0;
    if (o->start_sig) {
        alarm(0);
        close(window_fd);
        window_fd = -1;
    }
    unlock_output(out_abs);
    return record_outcome(o, status, shown, out_abs);
}
