/* fuzz_common.h - shared by the libFuzzer harnesses (tests/fuzz/): make a
 * mutated input reach the decoder by recomputing the CRC of every chunk
 * whose length fits the input, so that mutations inside payloads are not
 * all rejected as checksum mismatches; and the same input with its
 * records chunks compressed.  Header-only (static inline). */
#ifndef GR_FUZZ_COMMON_H
#define GR_FUZZ_COMMON_H

#include "format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

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

/* The bytes d[0..n) with each complete records chunk ('E', of a length
 * that fits) replaced by a compressed one holding the same records
 * (docs/FORMAT.md §2.1, zstd level 1, CRC computed); everything else
 * copied as it is.  A malloc'd buffer and its size in *out_n; NULL when out
 * of memory or when there is no 'E' chunk to compress. */
static inline uint8_t *gr_fuzz_compress_chunks(const uint8_t *d, size_t n, size_t *out_n)
{
    size_t cap = n + 64, len = 0, pos = GR_HEADER_LEN < n ? GR_HEADER_LEN : n, done = 0;
    uint8_t *o = malloc(cap);
    if (!o)
        return NULL;
    memcpy(o, d, pos);
    len = pos;
    while (pos < n && n - pos >= GR_CHUNK_HEADER_LEN) {
        uint32_t clen = gr_get_u32le(d + pos + 1);
        if (clen > n - pos - GR_CHUNK_HEADER_LEN)
            break;
        const uint8_t *p = d + pos + GR_CHUNK_HEADER_LEN;
        size_t bound = ZSTD_compressBound(clen);
        size_t need = len + GR_CHUNK_HEADER_LEN + GR_ZHEADER_LEN + bound + (n - pos);
        if (need > cap) {
            uint8_t *g = realloc(o, need);
            if (!g) {
                free(o);
                return NULL;
            }
            o = g;
            cap = need;
        }
        if (d[pos] == GR_CHUNK_RECORDS && clen > 0) {
            uint8_t *h = o + len, *z = h + GR_CHUNK_HEADER_LEN;
            size_t zl = ZSTD_compress(z + GR_ZHEADER_LEN, bound, p, clen, 1);
            if (ZSTD_isError(zl)) {
                free(o);
                return NULL;
            }
            gr_put_u32le(z, clen);
            zl += GR_ZHEADER_LEN;
            h[0] = (uint8_t)GR_CHUNK_RECORDS_Z;
            gr_put_u32le(h + 1, (uint32_t)zl);
            gr_put_u32le(h + 5, (uint32_t)crc32(0L, z, (uInt)zl));
            len += GR_CHUNK_HEADER_LEN + zl;
            done++;
        } else {
            memcpy(o + len, d + pos, GR_CHUNK_HEADER_LEN + clen);
            len += GR_CHUNK_HEADER_LEN + clen;
        }
        pos += GR_CHUNK_HEADER_LEN + (size_t)clen;
    }
    memcpy(o + len, d + pos, n - pos); /* what follows, as it is */
    len += n - pos;
    if (!done) {
        free(o);
        return NULL;
    }
    *out_n = len;
    return o;
}

#endif
