/* fuzz_common.h - shared by the libFuzzer harnesses (tests/fuzz/): make a
 * mutated input reach the decoder by recomputing the CRC of every chunk
 * whose length fits the input, so that mutations inside payloads are not
 * all rejected as checksum mismatches.  Header-only (static inline). */
#ifndef GR_FUZZ_COMMON_H
#define GR_FUZZ_COMMON_H

#include "format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A malloc'd copy of data[0..n) with each complete chunk's CRC fixed up
 * (chunks are walked from the 16-byte header on; the walk stops at the
 * first chunk that does not fit).  The header is left as it is.  Returns
 * NULL only when out of memory. */
static inline uint8_t *gr_fuzz_fix_crcs(const uint8_t *data, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, data, n);
    size_t pos = GR_HEADER_LEN;
    while (pos < n && n - pos >= GR_CHUNK_HEADER_LEN) {
        uint32_t len = gr_get_u32le(d + pos + 1);
        if (len > n - pos - GR_CHUNK_HEADER_LEN)
            break;
        uint32_t crc = (uint32_t)crc32(0L, d + pos + GR_CHUNK_HEADER_LEN, (uInt)len);
        gr_put_u32le(d + pos + 5, crc);
        pos += GR_CHUNK_HEADER_LEN + (size_t)len;
    }
    return d;
}

#endif
