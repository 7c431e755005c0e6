/* text.c - growable text buffers, escaping and checked allocation (text.h). */
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(void)
{
    fputs("greenreplay: out of memory\n", stderr);
    exit(2);
}

void *gr_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory();
    return q;
}

void *gr_xgrow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            out_of_memory();
        c *= 2;
    }
    if (size && c > SIZE_MAX / size)
        out_of_memory();
    p = gr_xrealloc(p, c * size);
    *cap = c;
    return p;
}

char *gr_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = gr_xrealloc(NULL, n);
    memcpy(d, s, n);
    return d;
}

void gr_sb_init(gr_sb *sb)
{
    sb->s = NULL;
    sb->len = sb->cap = 0;
}

void gr_sb_free(gr_sb *sb)
{
    free(sb->s);
    gr_sb_init(sb);
}

void gr_sb_reset(gr_sb *sb)
{
    sb->len = 0;
    if (sb->s)
        sb->s[0] = '\0';
}

/* Make room for n more bytes plus the NUL. */
static void reserve(gr_sb *sb, size_t n)
{
    if (sb->s && n < sb->cap - sb->len) /* room already (the common case) */
        return;
    if (n > SIZE_MAX - sb->len - 1)
        out_of_memory();
    sb->s = gr_xgrow(sb->s, &sb->cap, sb->len + n + 1, 1);
}

void gr_sb_put(gr_sb *sb, const char *s, size_t n)
{
    reserve(sb, n);
    if (n)
        memcpy(sb->s + sb->len, s, n);
    sb->len += n;
    sb->s[sb->len] = '\0';
}

void gr_sb_puts(gr_sb *sb, const char *s)
{
    gr_sb_put(sb, s, strlen(s));
}

void gr_sb_putc(gr_sb *sb, char c)
{
    reserve(sb, 1);
    sb->s[sb->len++] = c;
    sb->s[sb->len] = '\0';
}

void gr_sb_putu(gr_sb *sb, uint64_t v)
{
    static const char two[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
    char d[20], *p = d + sizeof d;
    while (v >= 100) { /* two digits at a time */
        unsigned k = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = two[k + 1];
        *--p = two[k];
    }
    if (v >= 10) {
        *--p = two[v * 2 + 1];
        *--p = two[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    gr_sb_put(sb, p, (size_t)(d + sizeof d - p));
}

void gr_sb_vprintf(gr_sb *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        gr_sb_put(sb, small, (size_t)n);
        return;
    }
    reserve(sb, (size_t)n);
    vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void gr_sb_printf(gr_sb *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gr_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

const char *gr_sb_str(const gr_sb *sb)
{
    return sb->s ? sb->s : "";
}

char *gr_sb_take(gr_sb *sb)
{
    char *s = sb->s ? sb->s : gr_xstrdup("");
    gr_sb_init(sb);
    return s;
}

size_t gr_utf8_len(const uint8_t *s, size_t n)
{
    if (n == 0)
        return 0;
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else
        return 0;
    if (n < need)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return need;
}

size_t gr_utf8_hidden(const uint8_t *s, size_t n)
{
    size_t k = gr_utf8_len(s, n);
    if (k == 2 && s[0] == 0xC2 && s[1] < 0xA0)
        return 2; /* C1 control U+0080..U+009F: ESC-like on many terminals */
    if (k == 2 && s[0] == 0xD8 && s[1] == 0x9C)
        return 2; /* U+061C ARABIC LETTER MARK */
    if (k == 3 && s[0] == 0xE2 && s[1] == 0x80 &&
        (s[2] == 0x8E || s[2] == 0x8F || (s[2] >= 0xA8 && s[2] <= 0xAE)))
        return 3; /* U+200E/F marks, U+2028/9 separators, U+202A..E embeddings */
    if (k == 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9)
        return 3; /* U+2066..9 isolates */
    if (k == 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF)
        return 3; /* U+FEFF byte order mark */
    return 0;
}

void gr_sb_escape(gr_sb *sb, const void *src, size_t n, int quote)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = src;
    size_t i = 0;
    while (i < n) {
        size_t run = i; /* copy plain runs in one go */
        for (;;) {
            if (run >= n)
                break;
            uint8_t c = s[run];
            if (c < 0x20 || c == 0x7f || c == '\\' || (quote && c == '"'))
                break;
            size_t k = gr_utf8_len(s + run, n - run);
            if (k == 0 || (k > 1 && gr_utf8_hidden(s + run, n - run)))
                break;
            run += k;
        }
        if (run > i) {
            gr_sb_put(sb, (const char *)s + i, run - i);
            i = run;
            continue;
        }
        size_t h = gr_utf8_hidden(s + i, n - i);
        if (h) {
            uint32_t cp = h == 2 ? (uint32_t)(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F)
                                 : (uint32_t)(s[i] & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 |
                                       (s[i + 2] & 0x3F);
            char e[6] = {'\\', 'u', hex[cp >> 12], hex[(cp >> 8) & 15], hex[(cp >> 4) & 15],
                         hex[cp & 15]};
            gr_sb_put(sb, e, 6);
            i += h;
            continue;
        }
        uint8_t c = s[i++];
        if (c == '\\' || (quote && c == '"')) {
            char e[2] = {'\\', (char)c};
            gr_sb_put(sb, e, 2);
        } else {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            gr_sb_put(sb, e, 4);
        }
    }
}
