/* format.c - names and header of the greenreplay trace format (docs/FORMAT.md). */
#include "format.h"

#include <string.h>

const char *gr_tag_name(int tag)
{
    switch (tag) {
    case GR_THREAD: return "THREAD";
    case GR_GREENLET: return "GREENLET";
    case GR_CALL: return "CALL";
    case GR_RETURN: return "RETURN";
    case GR_C_CALL: return "C_CALL";
    case GR_C_RETURN: return "C_RETURN";
    case GR_C_EXCEPTION: return "C_EXCEPTION";
    case GR_SWITCH: return "SWITCH";
    case GR_THROW: return "THROW";
    case GR_MARK: return "MARK";
    case GR_DEAD: return "DEAD";
    case GR_START: return "START";
    case GR_STOP: return "STOP";
    case GR_STACK: return "STACK";
    case GR_INSTR: return "INSTR";
    case GR_HOOK: return "HOOK";
    default: return NULL;
    }
}

void gr_format_header(uint8_t out[GR_HEADER_LEN], char stream)
{
    memset(out, 0, GR_HEADER_LEN);
    memcpy(out, GR_MAGIC, GR_MAGIC_LEN);
    gr_put_u16le(out + 8, GR_VERSION_MAJOR);
    gr_put_u16le(out + 10, stream == GR_STREAM_SIDE ? GR_SIDE_MINOR : GR_VERSION_MINOR);
    out[12] = (uint8_t)stream;
}

const char *gr_profiler_kind_name(uint64_t kind)
{
    static const char *const names[GR_PROF_KINDS] = {
        "c-function", "cprofile", "profile", "yappi", "coverage-ctracer", "coverage-pytracer",
        "line_profiler", "pyinstrument", "function", "callable",
    };
    return kind < GR_PROF_KINDS ? names[kind] : "?";
}
