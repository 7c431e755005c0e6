/* diff_ignore.c - normalizations for known version differences
 * (diff_ignore.h). */
#include "diff_ignore.h"

#include "idmap.h"
#include "script_shape.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct ignore_def {
    unsigned bit;
    const char *name;
    const char *ids[3]; /* issue numbers; an id containing one selects it */
} ignore_def;

static const ignore_def defs[GR_IGNORE_COUNT] = {
    {GR_IGNORE_GEN_FINALIZE, "gen-finalize", {"113728", "140373", NULL}},
    {GR_IGNORE_C_RETURN, "c-return-without-c-call", {"122029", NULL, NULL}},
};

const char *gr_ignore_name(int i)
{
    return i >= 0 && i < GR_IGNORE_COUNT ? defs[i].name : NULL;
}

/* Bits selected by text (an id or a value line), 0 if none. */
static unsigned select_bits(const char *s, size_t n, int exact_names)
{
    unsigned bits = 0;
    for (int i = 0; i < GR_IGNORE_COUNT; i++) {
        size_t k = strlen(defs[i].name);
        if (exact_names && n == k && memcmp(s, defs[i].name, k) == 0)
            bits |= defs[i].bit;
        for (int j = 0; j < 3 && defs[i].ids[j]; j++) {
            size_t m = strlen(defs[i].ids[j]);
            for (size_t p = 0; p + m <= n; p++) {
                /* the number, not part of a longer one */
                if (memcmp(s + p, defs[i].ids[j], m) == 0 && (p == 0 || !isdigit((unsigned char)s[p - 1])) &&
                    (p + m == n || !isdigit((unsigned char)s[p + m]))) {
                    bits |= defs[i].bit;
                    break;
                }
            }
        }
    }
    return bits;
}

static int parse_file(const char *path, unsigned *bits, gr_sb *skipped, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096];
    char section[256] = "";
    unsigned sec_bits = 0;
    int nsections = 0, have = 0;
    for (;;) {
        char *l = fgets(line, sizeof line, f);
        int sec_end = !l;
        char *p = l;
        if (l) {
            while (isspace((unsigned char)*p))
                p++;
            if (*p == '[')
                sec_end = 1;
        }
        if (sec_end && have) {
            if (sec_bits)
                *bits |= sec_bits;
            else if (skipped)
                gr_sb_printf(skipped, "%s\n", section);
            have = 0;
        }
        if (!l)
            break;
        if (*p == '#' || *p == ';' || *p == '\0')
            continue;
        if (*p == '[') {
            char *e = strchr(p, ']');
            size_t n = e ? (size_t)(e - p - 1) : strlen(p + 1);
            while (n && isspace((unsigned char)p[1 + n - 1]))
                n--;
            if (n >= sizeof section)
                n = sizeof section - 1;
            memcpy(section, p + 1, n);
            section[n] = '\0';
            sec_bits = select_bits(section, n, 1);
            have = 1;
            nsections++;
            continue;
        }
        if (have)
            sec_bits |= select_bits(p, strlen(p), 0);
    }
    fclose(f);
    if (nsections == 0) {
        snprintf(err, errlen, "%s: no [ID] section: not a known-issues file", path);
        return -1;
    }
    return 0;
}

int gr_ignore_parse(const char *arg, unsigned *bits, gr_sb *skipped, char *err, size_t errlen)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISREG(st.st_mode))
        return parse_file(arg, bits, skipped, err, errlen);
    const char *p = arg;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        unsigned b = select_bits(p, n, 1);
        if (!b) {
            gr_sb names;
            gr_sb_init(&names);
            for (int i = 0; i < GR_IGNORE_COUNT; i++)
                gr_sb_printf(&names, "%s%s (cpython-%s)", i ? ", " : "", defs[i].name, defs[i].ids[0]);
            snprintf(err, errlen, "unknown issue id '%.*s' and no such file (known: %s)", (int)n, p,
                     gr_sb_str(&names));
            gr_sb_free(&names);
            return -1;
        }
        *bits |= b;
        if (!e)
            return 0;
        p = e + 1;
    }
}

/* ---- normalization ------------------------------------------------------ */

/* A minimal shadow stack per (tid, gid): code ids, C flag, seed flag. */
typedef struct sh_entry {
    uint32_t code;
    uint8_t is_c, seed;
} sh_entry;

typedef struct sh_stack {
    sh_entry *e;
    size_t n, cap;
    int suspended;   /* first seen suspended: one unmatched c_return allowed */
    int tolerated;   /* it was used */
    int ran;         /* some frame was open once */
} sh_stack;

typedef struct shadow {
    gr_idmap map;
    sh_stack *s;
    size_t n, cap;
} shadow;

static sh_stack *stack_of(shadow *sh, uint64_t tid, uint64_t gid)
{
    size_t i;
    if (gr_idmap_get(&sh->map, tid, gid, &i))
        return &sh->s[i];
    sh->s = gr_xgrow(sh->s, &sh->cap, sh->n + 1, sizeof *sh->s);
    i = sh->n++;
    memset(&sh->s[i], 0, sizeof sh->s[i]);
    gr_idmap_put(&sh->map, tid, gid, i);
    return &sh->s[i];
}

static void sh_push(sh_stack *s, uint32_t code, int is_c, int seed)
{
    s->e = gr_xgrow(s->e, &s->cap, s->n + 1, sizeof *s->e);
    s->e[s->n].code = code;
    s->e[s->n].is_c = (uint8_t)is_c;
    s->e[s->n].seed = (uint8_t)seed;
    s->n++;
    s->ran = 1;
}

static int code_is_c(const gr_trace *t, uint32_t code)
{
    const gr_code *c = gr_trace_code(t, code);
    return c && c->kind == GR_CODE_C;
}

/* The previous kept record of the same thread before i, or GR_NONE. */
static size_t prev_in_thread(const gr_trace *t, const uint8_t *keep, size_t i)
{
    for (size_t j = i; j > 0; j--)
        if (keep[j - 1] && t->recs[j - 1].tid == t->recs[i].tid)
            return j - 1;
    return GR_NONE;
}

/* The next record of the same thread after i, or GR_NONE. */
static size_t next_in_thread(const gr_trace *t, size_t i)
{
    for (size_t j = i + 1; j < t->nrecs; j++)
        if (t->recs[j].tid == t->recs[i].tid)
            return j;
    return GR_NONE;
}

void gr_ignore_apply(const gr_trace *t, unsigned bits, uint8_t *keep, size_t *counts)
{
    if (counts)
        for (int i = 0; i < GR_IGNORE_COUNT; i++)
            counts[i] = 0;
    if (!bits)
        return;
    shadow sh;
    memset(&sh, 0, sizeof sh);
    gr_idmap gencode = {0};   /* code -> 1: ran as a generator */
    gr_idmap lastret = {0};   /* (tid, gid) -> 1 + index of a RETURN that was its last record */
    for (size_t i = 0; i < t->nrecs; i++) {
        const gr_record *r = &t->recs[i];
        if (!keep[i])
            continue;
        size_t prev_ret = 0;
        int after_return = gr_idmap_get(&lastret, r->tid, r->gid, &prev_ret) && prev_ret;
        if (r->tag != GR_THREAD)
            gr_idmap_put(&lastret, r->tid, r->gid, 0);
        switch (r->tag) {
        case GR_GREENLET: {
            sh_stack *s = stack_of(&sh, r->tid, r->gid);
            s->n = 0;
            const uint32_t *ids = gr_record_stack(t, r);
            for (uint32_t k = 0; k < r->depth; k++)
                sh_push(s, ids[k], code_is_c(t, ids[k]), 1);
            s->suspended = (r->flags & GR_GL_SUSPENDED) != 0;
            break;
        }
        case GR_CALL: {
            sh_stack *s = stack_of(&sh, r->tid, r->gid);
            size_t j = next_in_thread(t, i);
            if ((bits & GR_IGNORE_GEN_FINALIZE) && j != GR_NONE && keep[j] &&
                t->recs[j].tag == GR_RETURN && t->recs[j].gid == r->gid &&
                t->recs[j].code == r->code) {
                const sh_entry *top = s->n ? &s->e[s->n - 1] : NULL;
                size_t dummy;
                int in_close = top && top->is_c &&
                               (gr_shape_c_named(t, top->code, "generator.close", 0) ||
                                gr_shape_c_named(t, top->code, "coroutine.close", 0));
                int after_end = !top && s->ran;
                int is_gen = gr_idmap_get(&gencode, r->code, 0, &dummy);
                int genlike = after_return && is_gen;
                /* Finalized by the garbage collector: directly inside
                 * gc.collect (a cycle), or by a reference count dropping
                 * to zero in the middle of a frame (`del g`, a variable
                 * rebound) of code that ran as a generator. */
                int in_gc = top && top->is_c && gr_shape_c_named(t, top->code, "gc.collect", 0);
                int dropped = top && !top->is_c && is_gen;
                /* Finalized by a greenlet's death: right after its DEAD
                 * (its frames and what they held are released when the
                 * greenlet is) -- a Python call cannot follow a DEAD
                 * otherwise: the parent's next event is the C_RETURN of
                 * the switch it was in. */
                size_t pv = prev_in_thread(t, keep, i);
                int after_dead = pv != GR_NONE && t->recs[pv].tag == GR_DEAD;
                if (in_close || after_end || genlike || in_gc || dropped || after_dead) {
                    keep[i] = keep[j] = 0;
                    if (counts)
                        counts[0] += 2;
                    break;
                }
            }
            if (s->n && s->e[s->n - 1].is_c) {
                uint32_t cc = s->e[s->n - 1].code;
                if (gr_shape_c_named(t, cc, "builtins.next", 0) ||
                    gr_shape_c_named(t, cc, "generator.send", 0) ||
                    gr_shape_c_named(t, cc, "generator.throw", 0) ||
                    gr_shape_c_named(t, cc, "generator.close", 0))
                    gr_idmap_put(&gencode, r->code, 0, 1);
            }
            sh_push(s, r->code, 0, 0);
            break;
        }
        case GR_RETURN: {
            sh_stack *s = stack_of(&sh, r->tid, r->gid);
            size_t k = s->n;
            while (k > 0 && !(s->e[k - 1].code == r->code && !s->e[k - 1].is_c))
                k--;
            if (k > 0)
                s->n = k - 1;
            gr_idmap_put(&lastret, r->tid, r->gid, 1 + i);
            break;
        }
        case GR_C_CALL:
            sh_push(stack_of(&sh, r->tid, r->gid), r->code, 1, 0);
            break;
        case GR_C_RETURN:
        case GR_C_EXCEPTION: {
            sh_stack *s = stack_of(&sh, r->tid, r->gid);
            const sh_entry *top = s->n ? &s->e[s->n - 1] : NULL;
            if (top && top->is_c && top->code == r->code) {
                s->n--;
            } else if (top && top->seed && s->suspended && !s->tolerated) {
                s->tolerated = 1; /* the switch() a suspended greenlet was in */
            } else if (bits & GR_IGNORE_C_RETURN) {
                keep[i] = 0;
                if (counts)
                    counts[1]++;
            }
            break;
        }
        default: break;
        }
    }
    for (size_t i = 0; i < sh.n; i++)
        free(sh.s[i].e);
    free(sh.s);
    gr_idmap_free(&sh.map);
    gr_idmap_free(&gencode);
    gr_idmap_free(&lastret);
}
