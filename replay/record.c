/* record.c - `greenreplay record`: run a Python program under the recorder.
 *
 * The recorder is the greenreplay Python package with its C extension,
 * built by `make` into BUILD/python next to this executable, installed by
 * `make install` into PREFIX/lib/greenreplay/python, or named by
 * GREENREPLAY_PYTHONPATH (the `greenreplay` command of a pip install sets
 * it).  This command only prepares the environment and
 * runs the interpreter; it needs no Python itself.
 */
#include "record.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void record_usage(FILE *out)
{
    fputs("usage: greenreplay record -o FILE [--times] [--root DIR] [--manual] -- PYTHON SCRIPT [ARGS...]\n"
          "       greenreplay record -o FILE [options] -- PYTHON -m MODULE [ARGS...]\n"
          "\n"
          "Run SCRIPT (or MODULE) with PYTHON, recording profile events and greenlet\n"
          "switches from its first line to its exit into the trace FILE.\n"
          "\n"
          "  -o, --output FILE  trace to write (created or truncated)\n"
          "  --times            also write timestamps to FILE.times (side channel)\n"
          "  --root DIR         code file names are written relative to DIR\n"
          "                     (default: the script's directory, or the current one)\n"
          "  --max-size SIZE    cap the trace at SIZE bytes (suffix k, M, G); records\n"
          "                     past it are dropped and counted (trailer: size-cap)\n"
          "  --ring N           keep only the last N records (at least; whole chunks)\n"
          "                     in memory; the file is written at exit and on flush\n"
          "  --flush-signal SIG flush the trace on signal SIG (USR1, USR2, ...) without\n"
          "                     stopping; in ring mode this writes the file\n"
          "  --manual           do not start recording; only make `import greenreplay`\n"
          "                     work, so the script calls greenreplay.start()/stop()\n"
          "                     itself (start() with no path writes FILE)\n"
          "\n"
          "PYTHONHASHSEED is set to 0 unless already set, so that runs repeat.\n"
          "Exit status: the program's own; 128+N if it was killed by signal N (the\n"
          "trace then holds every complete chunk written before); 2 for bad usage,\n"
          "a missing interpreter, or a recorder not built for that interpreter.\n",
          out);
}

/* Directory holding the greenreplay package: $GREENREPLAY_PYTHONPATH (set
 * by the console script of a pip install), else `python` beside this
 * executable (a `make` tree), else ../lib/greenreplay/python from it (a
 * `make install`; when neither exists, the former is named in the error).
 * Writes into buf (size n); 0 or -1. */
static int package_dir(char *buf, size_t n)
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

/* Resolve an interpreter given as a path or a name on PATH; 0 if it can be
 * executed. */
static int find_program(const char *prog)
{
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

int gr_cmd_record(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"times", no_argument, NULL, 't'},
        {"root", required_argument, NULL, 'r'},
        {"manual", no_argument, NULL, 'M'},
        {"max-size", required_argument, NULL, 'S'},
        {"ring", required_argument, NULL, 'R'},
        {"flush-signal", required_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL, *root = NULL, *max_size = NULL, *ring = NULL, *flush_signal = NULL;
    int times = 0, manual = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 't': times = 1; break;
        case 'r': root = optarg; break;
        case 'M': manual = 1; break;
        case 'S': max_size = optarg; break;
        case 'R': ring = optarg; break;
        case 'F': flush_signal = optarg; break;
        case 'h': record_usage(stdout); return 0;
        default: record_usage(stderr); return 2;
        }
    }
    if (!output || optind + 2 > argc) {
        fputs("greenreplay: record: need -o FILE and, after --, PYTHON and SCRIPT\n", stderr);
        record_usage(stderr);
        return 2;
    }
    const char *python = argv[optind];
    if (find_program(python) != 0) {
        fprintf(stderr, "greenreplay: record: interpreter not found or not executable: %s\n", python);
        return 2;
    }
    char pkg[PATH_MAX];
    struct stat st;
    if (package_dir(pkg, sizeof pkg) < 0 || stat(pkg, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "greenreplay: record: recorder package not found at %s (run `make`, or `pip install .` and use its greenreplay command)\n", pkg);
        return 2;
    }

    /* The trace path is handed to the child absolute: it may chdir. */
    char out_abs[PATH_MAX];
    if (output[0] == '/') {
        snprintf(out_abs, sizeof out_abs, "%s", output);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            perror("greenreplay: record: getcwd");
            return 2;
        }
        if ((size_t)snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, output) >= sizeof out_abs) {
            fprintf(stderr, "greenreplay: record: output path too long: %s\n", output);
            return 2;
        }
    }
    const char *old = getenv("PYTHONPATH");
    char *pythonpath = malloc(strlen(pkg) + (old ? strlen(old) : 0) + 2);
    if (!pythonpath)
        return 2;
    sprintf(pythonpath, "%s%s%s", pkg, old && *old ? ":" : "", old && *old ? old : "");
    setenv("PYTHONPATH", pythonpath, 1);
    free(pythonpath);
    setenv("GREENREPLAY_OUTPUT", out_abs, 1);
    setenv("GREENREPLAY_TIMES", times ? "1" : "0", 1);
    if (root)
        setenv("GREENREPLAY_ROOT", root, 1);
    if (max_size)
        setenv("GREENREPLAY_MAX_SIZE", max_size, 1);
    if (ring)
        setenv("GREENREPLAY_RING", ring, 1);
    if (flush_signal)
        setenv("GREENREPLAY_FLUSH_SIGNAL", flush_signal, 1);
    setenv("PYTHONHASHSEED", getenv("PYTHONHASHSEED") ? getenv("PYTHONHASHSEED") : "0", 1);

    /* argv for the child: PYTHON [-m greenreplay] PROGRAM... */
    int nprog = argc - optind - 1;
    char **cargv = calloc((size_t)nprog + 4, sizeof *cargv);
    if (!cargv)
        return 2;
    int k = 0;
    cargv[k++] = (char *)python;
    if (!manual) {
        cargv[k++] = "-m";
        cargv[k++] = "greenreplay";
    }
    for (int i = 0; i < nprog; i++)
        cargv[k++] = argv[optind + 1 + i];
    cargv[k] = NULL;
    fflush(NULL);

    pid_t pid = fork();
    if (pid < 0) {
        perror("greenreplay: record: fork");
        free(cargv);
        return 2;
    }
    if (pid == 0) {
        execvp(python, cargv);
        fprintf(stderr, "greenreplay: record: cannot run %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    free(cargv);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("greenreplay: record: waitpid");
            return 2;
        }
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, "greenreplay: record: %s was killed by signal %d (%s); %s holds the chunks written before\n",
                argv[optind + 1], sig, strsignal(sig), output);
        return 128 + sig;
    }
    int rc = WEXITSTATUS(status);
    if (access(out_abs, F_OK) != 0 && !manual)
        fprintf(stderr, "greenreplay: record: no trace was written to %s\n", output);
    return rc;
}
