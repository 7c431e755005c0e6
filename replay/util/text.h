/* text.h - growable text buffers, string escaping and checked allocation for
 * the replayer's output (dump lines, checker messages, reports).
 *
 * Allocation here never returns NULL: on out-of-memory the process prints
 * "greenreplay: out of memory" and exits with status 2 (input unusable).
 * The trace reader does not use these helpers; it reports out-of-memory as
 * an error instead, since its allocations grow with untrusted input.
 */
#ifndef GR_TEXT_H
#define GR_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* A growable NUL-terminated string.  Zero-initialise (or gr_sb_init) before
 * use; s is NULL until something is appended.  The buffer owns s. */
typedef struct gr_sb {
    char *s;    /* owned; NUL-terminated when non-NULL */
    size_t len; /* bytes before the NUL */
    size_t cap; /* bytes allocated */
} gr_sb;

/* Resize p to n bytes (n > 0) like realloc; exits(2) on failure. */
void *gr_xrealloc(void *p, size_t n);

/* Resize an array p of *cap elements of `size` bytes so that it holds at
 * least `need` elements (doubling); updates *cap.  Exits(2) on overflow or
 * out of memory.  Returns the (possibly moved) array. */
void *gr_xgrow(void *p, size_t *cap, size_t need, size_t size);

/* strdup that exits(2) on failure.  The caller frees the result. */
char *gr_xstrdup(const char *s);

/* Set sb to the empty state without freeing (use on a fresh struct). */
void gr_sb_init(gr_sb *sb);

/* Free the buffer's memory and reset it to empty. */
void gr_sb_free(gr_sb *sb);

/* Forget the contents but keep the memory (len = 0). */
void gr_sb_reset(gr_sb *sb);

/* Append n bytes of s (may contain NUL bytes; they are kept verbatim). */
void gr_sb_put(gr_sb *sb, const char *s, size_t n);

/* Append the NUL-terminated string s. */
void gr_sb_puts(gr_sb *sb, const char *s);

/* Append one byte. */
void gr_sb_putc(gr_sb *sb, char c);

/* Append v in decimal (what "%" PRIu64 prints, without printf's cost:
 * renderers that write millions of numbers use it). */
void gr_sb_putu(gr_sb *sb, uint64_t v);

/* Append printf-formatted text. */
void gr_sb_printf(gr_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Same with a va_list. */
void gr_sb_vprintf(gr_sb *sb, const char *fmt, va_list ap);

/* The contents as a NUL-terminated string ("" when empty); owned by sb and
 * valid until the next append or free. */
const char *gr_sb_str(const gr_sb *sb);

/* Hand the contents over to the caller (who frees it; never NULL) and reset
 * sb to empty. */
char *gr_sb_take(gr_sb *sb);

/* Append n bytes of s escaped for one-line display: valid UTF-8 sequences
 * are copied, control bytes (< 0x20, 0x7f) and bytes that are not valid
 * UTF-8 become "\xHH", the characters gr_utf8_hidden names become
 * "\uHHHH", a backslash becomes "\\", and, when quote is non-zero, a
 * double quote becomes "\"".  The result is always valid UTF-8 without
 * control characters, so it is safe for JSON, XML and a terminal. */
void gr_sb_escape(gr_sb *sb, const void *s, size_t n, int quote);

/* Length (1-4) of the valid UTF-8 sequence starting at s (n bytes
 * available), or 0 if s[0] does not start one (invalid lead byte, bad or
 * missing continuation, overlong form, surrogate, above U+10FFFF).  ASCII
 * bytes, control bytes included, give 1. */
size_t gr_utf8_len(const uint8_t *s, size_t n);

/* Length (2 or 3) of the UTF-8 sequence at s if it encodes a character that
 * acts on a terminal or hides text rather than showing itself: a C1 control
 * (U+0080..U+009F, which some terminals take as ESC [), a bidi mark,
 * embedding, override or isolate (U+061C, U+200E/F, U+202A..E,
 * U+2066..9: "Trojan Source" reordering), a line or paragraph separator
 * (U+2028/9) or U+FEFF.  0 for anything else. */
size_t gr_utf8_hidden(const uint8_t *s, size_t n);

#endif
