/* record.h - the `greenreplay record` subcommand (run a Python program under
 * the recorder).  Implemented by the recorder's developer; main.c only
 * dispatches to it.
 */
#ifndef GR_RECORD_H
#define GR_RECORD_H

/* Run `greenreplay record ...`.  argv[0] is "record", argv[1..argc-1] its
 * arguments.  Returns the process exit status (0 ok, 2 bad usage/failure). */
int gr_cmd_record(int argc, char **argv);

#endif
