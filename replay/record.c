/* record.c - placeholder for the `greenreplay record` subcommand; replaced by
 * the recorder's developer.  It keeps the CLI building until then. */
#include "record.h"

#include <stdio.h>

int gr_cmd_record(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "greenreplay: record: not built yet\n");
    return 2;
}
