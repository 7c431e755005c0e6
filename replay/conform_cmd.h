/* conform_cmd.h - the `greenreplay conform` subcommand: run a program
 * recorded with a profiler under test enabled inside it, and compare the
 * profiler's own results with the recording (conform.h, docs/conform.md).
 */
#ifndef GR_CONFORM_CMD_H
#define GR_CONFORM_CMD_H

/* The usage text (`conform --help`, `help conform`). */
extern const char gr_conform_usage[];

/* Run `greenreplay conform ...`.  argv[0] is "conform".  Returns the exit
 * status: 0 the profiler agrees with the recording, 1 differences, 2 usage,
 * recording or adapter error (one line on stderr naming the cause), 3 the
 * profiler is not available in this interpreter (one line "skip: REASON"). */
int gr_cmd_conform(int argc, char **argv);

#endif
