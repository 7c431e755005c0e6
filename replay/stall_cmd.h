/* stall_cmd.h - the `greenreplay stall` subcommand: does a sampler stall
 * greenlet switches?  A black-box check: the switch-timing workload
 * (tracer/greenreplay/stall.py) at N = 0 and N idle greenlets D frames
 * deep, with no sampler and with each sampler under test (the reference
 * sampler's modes in process, or an external command attached by pid),
 * verdicts from the measured distributions (docs/stall.md). */
#ifndef GR_STALL_CMD_H
#define GR_STALL_CMD_H

/* The usage text (`stall --help`, `help stall`). */
extern const char gr_stall_usage[];

/* Run `greenreplay stall ...`.  argv[0] is "stall".  Returns 0 when no
 * sampler under test was flagged, 1 when one was, 2 on usage errors or a
 * run that failed (one line on stderr naming it). */
int gr_cmd_stall(int argc, char **argv);

#endif
