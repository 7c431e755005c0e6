/* record.h - the `greenreplay record` subcommand (run a Python program under
 * the recorder).  Implemented by the recorder's developer; main.c only
 * dispatches to it.
 */
#ifndef GR_RECORD_H
#define GR_RECORD_H

/* Run `greenreplay record ...`.  argv[0] is "record", argv[1..argc-1] its
 * arguments.  Returns the process exit status (0 ok, 2 bad usage/failure). */
int gr_cmd_record(int argc, char **argv);

/* The directory `record` puts on PYTHONPATH, holding the greenreplay
 * package: $GREENREPLAY_PYTHONPATH, else `python` beside this executable
 * (/proc/self/exe).  Writes it into buf (n bytes).  Returns 0, or -1 when
 * the executable cannot be resolved.  Also used by --version (version.h). */
#include <stddef.h>
int gr_record_package_dir(char *buf, size_t n);

#endif
