/* record.h - the `greenreplay record` subcommand (run a Python program under
 * the recorder).  Implemented by the recorder's developer; main.c only
 * dispatches to it.
 */
#ifndef GR_RECORD_H
#define GR_RECORD_H

#include <stdint.h>

/* Run `greenreplay record ...`.  argv[0] is "record", argv[1..argc-1] its
 * arguments.  Returns the process exit status: the program's own, 128+N if
 * it was killed by signal N, 2 for bad usage, an unusable interpreter or
 * output file (one line on stderr naming the option or cause). */
int gr_cmd_record(int argc, char **argv);

/* How the lines gr_cmd_record prints after the program ended (a trace cut
 * short, none written, --max-size reached) name the trace: `label`
 * (borrowed, kept until the next call) instead of the -o path, e.g.
 * conform's "the temporary trace" that it deletes afterwards; NULL: the -o
 * path again. */
void gr_record_set_trace_label(const char *label);

/* The signal that killed the program of the last gr_cmd_record call (N, as
 * waitpid reported it), 0 when it exited (whatever its status: 130 from
 * sys.exit(130) is 0 here), did not run, or no call was made yet.  Lets a
 * caller tell 128+N from a signal; no errors. */
int gr_record_last_signal(void);

/* Option values of `record`, parsed as `record --help` documents them.
 * gr_record_parse_size: "64k", "1.5M", "100" -> bytes; 0 if not a size > 0.
 * gr_record_parse_count: decimal > 0 (at most 2^40); 0 if not one.
 * gr_record_parse_signal: "USR1", "SIGUSR1", "10" -> signal number; 0 if not
 * a signal a program can catch and flush on. */
uint64_t gr_record_parse_size(const char *s);
/* Whether the interpreter `prog`, a path or a name looked up on PATH, can
 * be executed: 0 yes, -1 no (errno from access(2); ENOENT for ""). */
int gr_record_find_program(const char *prog);
/* Whether `python` runs as a Python interpreter that finds the recorder in
 * `pkg` (gr_record_package_dir) or on its own sys.path (a wrapper such as
 * ci/envs.sh's may add its build's): runs `python -S -c PROBE pkg`, stdin
 * and stderr on /dev/null.  0 yes; otherwise one line "greenreplay: CMD:
 * ..." on stderr with the cause (the recorder not built for that Python
 * and the make command to run; or that it does not run, with the exec
 * error, exit status or signal) and -1.  Strings borrowed. */
int gr_record_probe_interpreter(const char *cmd, const char *python, const char *pkg);
/* Whether `path` may be written as record's -o trace, asked before
 * anything runs and changing nothing: refused are a directory, a path that
 * cannot be created or written, the program's `script` (NULL: none) and an
 * existing non-empty file that is not a greenreplay trace.  On refusal one
 * line "greenreplay: CMD: OPT PATH: why" goes to stderr.  All strings
 * borrowed.  Returns 0, or -1 when refused. */
int gr_record_check_output(const char *cmd, const char *opt, const char *path, const char *script);
uint64_t gr_record_parse_count(const char *s);
int gr_record_parse_signal(const char *s);
/* The directory `record` puts on PYTHONPATH, holding the greenreplay
 * package: $GREENREPLAY_PYTHONPATH, else `python` beside this executable
 * (/proc/self/exe).  Writes it into buf (n bytes).  Returns 0, or -1 when
 * the executable cannot be resolved.  Also used by --version (version.h). */
#include <stddef.h>
int gr_record_package_dir(char *buf, size_t n);

#endif
