/* diff_align.c - Myers' linear-space difference algorithm (diff_align.h). */
#include "diff_align.h"

#include "text.h"

#include <stdlib.h>
#include <string.h>

typedef struct aligner {
    const uint32_t *a, *b;
    gr_edit *runs;
    size_t nruns, cap;
    uint64_t budget, work;
    int exhausted;
    ptrdiff_t *v1, *v2; /* scratch diagonals, 2 * (na + nb) + 2 entries each */
} aligner;

/* Append n elements with op at (ia, ib), merging with the previous run. */
static void emit(aligner *al, char op, size_t ia, size_t ib, size_t n)
{
    if (n == 0)
        return;
    if (al->nruns && al->runs[al->nruns - 1].op == op) {
        al->runs[al->nruns - 1].n += n;
        return;
    }
    al->runs = gr_xgrow(al->runs, &al->cap, al->nruns + 1, sizeof *al->runs);
    gr_edit *e = &al->runs[al->nruns++];
    e->op = op;
    e->a = ia;
    e->b = ib;
    e->n = n;
}

static void diff_range(aligner *al, size_t a0, size_t a1, size_t b0, size_t b1);

/* Find the middle snake of a[a0..a1) x b[b0..b1) (both non-empty) and
 * recurse on both halves.  The forward search runs from the top left,
 * the backward one from the bottom right; they alternate, one D at a
 * time, until a forward path and a backward path overlap on a diagonal:
 * the point where they meet splits the problem into two with D/2 each. */
static void bisect(aligner *al, size_t a0, size_t a1, size_t b0, size_t b1)
{
    const uint32_t *A = al->a + a0, *B = al->b + b0;
    ptrdiff_t n = (ptrdiff_t)(a1 - a0), m = (ptrdiff_t)(b1 - b0);
    ptrdiff_t max_d = (n + m + 1) / 2;
    ptrdiff_t off = max_d, len = 2 * max_d + 2;
    ptrdiff_t *v1 = al->v1, *v2 = al->v2;
    for (ptrdiff_t i = 0; i < len; i++)
        v1[i] = v2[i] = -1;
    v1[off + 1] = 0;
    v2[off + 1] = 0;
    ptrdiff_t delta = n - m;
    int front = (delta & 1) != 0; /* odd: check for overlap in the forward pass */
    ptrdiff_t k1s = 0, k1e = 0, k2s = 0, k2e = 0;
    for (ptrdiff_t d = 0; d < max_d; d++) {
        if (al->budget && al->work > al->budget)
            break;
        for (ptrdiff_t k1 = -d + k1s; k1 <= d - k1e; k1 += 2) {
            ptrdiff_t ko = off + k1, x1;
            if (k1 == -d || (k1 != d && v1[ko - 1] < v1[ko + 1]))
                x1 = v1[ko + 1];
            else
                x1 = v1[ko - 1] + 1;
            ptrdiff_t y1 = x1 - k1;
            while (x1 < n && y1 < m && A[x1] == B[y1]) {
                x1++;
                y1++;
            }
            al->work += (uint64_t)d + 1;
            v1[ko] = x1;
            if (x1 > n) {
                k1e += 2; /* ran off the right */
            } else if (y1 > m) {
                k1s += 2; /* ran off the bottom */
            } else if (front) {
                ptrdiff_t k2o = off + delta - k1;
                if (k2o >= 0 && k2o < len && v2[k2o] != -1) {
                    ptrdiff_t x2 = n - v2[k2o]; /* mirror the backward x */
                    if (x1 >= x2) {
                        diff_range(al, a0, a0 + (size_t)x1, b0, b0 + (size_t)y1);
                        diff_range(al, a0 + (size_t)x1, a1, b0 + (size_t)y1, b1);
                        return;
                    }
                }
            }
        }
        for (ptrdiff_t k2 = -d + k2s; k2 <= d - k2e; k2 += 2) {
            ptrdiff_t ko = off + k2, x2;
            if (k2 == -d || (k2 != d && v2[ko - 1] < v2[ko + 1]))
                x2 = v2[ko + 1];
            else
                x2 = v2[ko - 1] + 1;
            ptrdiff_t y2 = x2 - k2;
            while (x2 < n && y2 < m && A[n - x2 - 1] == B[m - y2 - 1]) {
                x2++;
                y2++;
            }
            al->work += (uint64_t)d + 1;
            v2[ko] = x2;
            if (x2 > n) {
                k2e += 2;
            } else if (y2 > m) {
                k2s += 2;
            } else if (!front) {
                ptrdiff_t k1o = off + delta - k2;
                if (k1o >= 0 && k1o < len && v1[k1o] != -1) {
                    ptrdiff_t x1 = v1[k1o];
                    ptrdiff_t y1 = off + x1 - k1o;
                    if (x1 >= n - x2) {
                        diff_range(al, a0, a0 + (size_t)x1, b0, b0 + (size_t)y1);
                        diff_range(al, a0 + (size_t)x1, a1, b0 + (size_t)y1, b1);
                        return;
                    }
                }
            }
        }
    }
    /* No overlap within the budget (or nothing in common). */
    if (al->budget && al->work > al->budget)
        al->exhausted = 1;
    emit(al, '-', a0, b0, a1 - a0);
    emit(al, '+', a1, b0, b1 - b0);
}

static void diff_range(aligner *al, size_t a0, size_t a1, size_t b0, size_t b1)
{
    /* Common prefix and suffix. */
    size_t p = 0;
    while (a0 + p < a1 && b0 + p < b1 && al->a[a0 + p] == al->b[b0 + p])
        p++;
    emit(al, '=', a0, b0, p);
    a0 += p;
    b0 += p;
    size_t s = 0;
    while (a1 - s > a0 && b1 - s > b0 && al->a[a1 - s - 1] == al->b[b1 - s - 1])
        s++;
    a1 -= s;
    b1 -= s;
    if (a0 == a1)
        emit(al, '+', a0, b0, b1 - b0);
    else if (b0 == b1)
        emit(al, '-', a0, b0, a1 - a0);
    else if (al->budget && al->work > al->budget) {
        al->exhausted = 1;
        emit(al, '-', a0, b0, a1 - a0);
        emit(al, '+', a1, b0, b1 - b0);
    } else
        bisect(al, a0, a1, b0, b1);
    emit(al, '=', a1, b1, s);
}

size_t gr_align(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint64_t budget,
                gr_edit **out, int *exhausted)
{
    aligner al;
    memset(&al, 0, sizeof al);
    al.a = a;
    al.b = b;
    al.budget = budget;
    size_t vlen = 2 * ((na + nb + 1) / 2) + 2;
    al.v1 = gr_xrealloc(NULL, vlen * sizeof *al.v1);
    al.v2 = gr_xrealloc(NULL, vlen * sizeof *al.v2);
    diff_range(&al, 0, na, 0, nb);
    free(al.v1);
    free(al.v2);
    if (exhausted)
        *exhausted = al.exhausted;
    *out = al.runs;
    return al.nruns;
}
