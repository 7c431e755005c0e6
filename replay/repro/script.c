/* script.c - render a trace's shape as a Python program (script.h). */
#include "script.h"

#include "outfile.h"
#include "script_builtins.h"
#include "script_shape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Statements of a body are kept as one string: each statement starts with
 * STMT, its lines are separated by '\n' and indented relative to the body
 * (4 spaces per level). */
#define STMT '\x01'

/* What the prelude must define. */
enum {
    U_X = 1u << 0,      /* _X = collections.deque: calls from C */
    U_Q = 1u << 1,      /* _Q: call a function object from C */
    U_D = 1u << 2,      /* _D: the neutral C call */
    U_SW = 1u << 3,     /* _SW = greenlet.greenlet.switch */
    U_TH = 1u << 4,     /* _TH = greenlet.greenlet.throw */
    U_THROWN = 1u << 5, /* class _Thrown */
    U_FAIL = 1u << 6,   /* class _Fail */
    U_GEN = 1u << 7,    /* _gen() */
    U_TRACE = 1u << 8,  /* _T, _A */
    U_PROF = 1u << 9,   /* _P */
    U_FUNCTOOLS = 1u << 10,
    U_OS = 1u << 11,
    U_THREADS = 1u << 12, /* _L, _PK */
    U_THREADING = 1u << 13, /* import threading */
    U_TYPES = 1u << 14,   /* import types */
};

/* A distinct function body (20 bytes): its text is in render.bodies.  The
 * bodies kept to share defs are a cache of at most VAR_CACHE variants and
 * BODY_CACHE bytes of text: when it is full it starts over (the variants
 * made since share defs; a body like one made before gets a def again), so
 * that scripting a long trace holds a bounded part of its program.
 *
 * A body is looked for among the callers of the variant it calls last
 * (the last "_vN" in its text, when N is in the cache): callers are made
 * right after what they call (children first), so that variant is most
 * often the one just made, in the processor's cache, where a hash table
 * of a million bodies costs a miss of main memory per lookup.  A variant
 * keeps at most KIDS_MAX callers so; the others, and the bodies that call
 * none of the cache's, go to the hash table (render.dedup). */
typedef struct variant {
    uint32_t off;   /* where its statements start in render.bodies (below
                       BODY_CACHE: cache_room) */
    uint32_t len;   /* their length */
    uint32_t code;
    uint32_t kids;  /* the last made of its callers kept so (index + 1), 0 */
    uint32_t next;  /* the caller made before it of the same variant (index
                       + 1), 0; IN_TABLE: it is in the hash table instead */
} variant;

#define KIDS_MAX 4
#define IN_TABLE UINT32_MAX

#define VAR_CACHE ((size_t)1 << 20)
#define BODY_CACHE ((size_t)32 << 20)

/* The defs as they are made (render.dbuf, then render.defs), before the
 * header and prelude above them are written: a record per def, in the
 * order of their numbers (_v0, _v1, ...), its code and the length of its
 * body (varints) then the body.  Their text, with unit tags and line
 * numbers counted from the first def, is made once those of the lines
 * above are known (write_defs): the records are about a sixth of it. */

typedef struct render {
    const gr_shape *s;
    gr_shape *ms;     /* the same, to bring spilled greenlets back */
    size_t cap_var_of; /* entries of var_of */
    uint32_t *run_var; /* [ngreens]: a spilled greenlet's run variant + 1 */
    const gr_trace *t;
    const gr_script_opts *o;
    uint32_t *var_of; /* [nframes]: variant index + 1, 0 not rendered */
    variant *vars;    /* the cache's variants: number vbase + index */
    size_t nvars, cap_vars, vbase;
    gr_sb dbuf;       /* the defs written so far (relative numbers) */
    FILE *defs;       /* streamed: dbuf goes to this temporary file */
    size_t dlines, dunits; /* lines and units of the defs */
    gr_sb bodies;     /* every variant's statements, one after another */
    struct {
        uint32_t *slot; /* [cap]: open addressing by (code, body), variant
                           index + 1, 0 empty; at most half full */
        size_t cap, n;
    } dedup;
    unsigned need;    /* gr_builtin_need bits */
    unsigned use;     /* U_* bits */
    uint64_t *code_line; /* [ncodes + 1]: line of the first def with that code
                            (relative to the defs until they are copied out) */
    size_t line;      /* lines written so far */
    size_t unit;      /* last unit tag given */
    size_t bad_utf8;  /* invalid bytes replaced in literals */
    FILE *file;       /* write the program here as it is made, or NULL: all
                         of it stays in the caller's buffer */
    int werr;         /* a write to file failed */
    int terr;         /* errno of a failed write or read of the defs'
                         temporary file (the program misses them), 0 */
    gr_sb names;      /* per code, once: "  # NAME" (escaped) then 'NAME' */
    struct name_form {
        uint64_t at;  /* where code's two forms start in names, + 1 (0: not
                         made yet) */
        uint32_t ncom, nlit; /* their lengths */
    } *name_of;       /* [ncodes + 1] */
    struct {
        gr_sb sb;     /* the body being made, kept for the next one */
        int busy;     /* in use (a body made while making another: its own) */
    } scratch;
} render;

/* The program is written to R->file in pieces of about this size: the
 * buffer holds one piece, not the whole program. */
#define FLUSH_AT (64 * 1024)

/* v in decimal at the end of buf[20]: where it starts (the digits run to
 * buf + 20). */
static char *utoa(char buf[20], uint64_t v)
{
    char *p = buf + 20;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

/* A tag (prefix and number) into buf; its length. */
static size_t tag_of(char buf[32], const char *prefix, uint64_t v)
{
    char d[20];
    const char *p = utoa(d, v);
    size_t k = strlen(prefix), n = (size_t)(d + 20 - p);
    memcpy(buf, prefix, k);
    memcpy(buf + k, p, n);
    buf[k + n] = '\0';
    return k + n;
}

/* Append prefix, v in decimal, then suffix. */
static void put_num(gr_sb *sb, const char *prefix, uint64_t v, const char *suffix)
{
    gr_sb_puts(sb, prefix);
    gr_sb_putu(sb, v);
    gr_sb_puts(sb, suffix);
}

static void flush(render *R, gr_sb *out)
{
    if (!R->file || !out->len)
        return;
    if (!R->werr && fwrite(out->s, 1, out->len, R->file) != out->len)
        R->werr = 1;
    gr_sb_reset(out);
}

/* ---- literals ----------------------------------------------------------- */

size_t gr_script_pystr(gr_sb *sb, const void *src, size_t n)
{
    const uint8_t *s = src;
    size_t bad = 0;
    gr_sb_putc(sb, '\'');
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c >= 0x20 && c < 0x7f) {
            if (c == '\\' || c == '\'')
                gr_sb_putc(sb, '\\');
            gr_sb_putc(sb, (char)c);
            i++;
            continue;
        }
        size_t k = gr_utf8_len(s + i, n - i);
        uint32_t cp;
        if (k == 0) {
            cp = 0xFFFD;
            bad++;
            k = 1;
        } else if (k == 1) {
            cp = c;
        } else if (k == 2) {
            cp = (uint32_t)(c & 0x1F) << 6 | (s[i + 1] & 0x3F);
        } else if (k == 3) {
            cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F);
        } else {
            cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 |
                 (uint32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
        }
        i += k;
        if (cp < 0x100)
            gr_sb_printf(sb, "\\x%02x", cp);
        else if (cp < 0x10000)
            gr_sb_printf(sb, "\\u%04x", cp);
        else
            gr_sb_printf(sb, "\\U%08x", cp);
    }
    gr_sb_putc(sb, '\'');
    return bad;
}

static void lit_code(render *R, gr_sb *sb, uint32_t code)
{
    gr_sb name;
    gr_sb_init(&name);
    gr_shape_name(R->s, &name, code);
    R->bad_utf8 += gr_script_pystr(sb, name.s ? name.s : "", name.len);
    gr_sb_free(&name);
}

static void lit_label(render *R, gr_sb *sb, uint64_t label)
{
    gr_sb name;
    gr_sb_init(&name);
    gr_shape_label(R->s, &name, label);
    R->bad_utf8 += gr_script_pystr(sb, name.s ? name.s : "", name.len);
    gr_sb_free(&name);
}

/* ---- statements --------------------------------------------------------- */

static const gr_green *green(const render *R, uint64_t tid, uint64_t gid)
{
    return gr_shape_green(R->s, tid, gid);
}

static const gr_sthread *thread(const render *R, uint64_t tid)
{
    return gr_shape_thread(R->s, tid);
}

/* The exception a throw into greenlet (tid, gid) carries: GreenletExit when
 * it kills a greenlet that had not started and that dies normally, else the
 * script's own exception (the target catches it where it resumes). */
static const char *throw_exc(render *R, uint64_t tid, uint64_t gid)
{
    const gr_green *g = green(R, tid, gid);
    if (g && g->thrown_unstarted && !g->dies_throw)
        return "greenlet.GreenletExit";
    R->use |= U_THROWN;
    return "_Thrown";
}

static size_t variant_of(render *R, size_t frame);
static size_t thread_entry(render *R, const gr_sthread *th, gr_sb *out);

/* Turn "a, b, " (k items, each followed by ", ") into a tuple "(a, b)" or
 * "(a,)", appended to dst. */
static void tuple_of(gr_sb *dst, const char *items, size_t len, size_t k)
{
    gr_sb_putc(dst, '(');
    if (k == 0) {
        gr_sb_putc(dst, ')');
        return;
    }
    gr_sb_put(dst, items, len >= 2 ? len - 2 : len);
    gr_sb_puts(dst, k == 1 ? ",)" : ")");
}

/* Wrap stmt (lines) in try/except BaseException. */
static void wrap_try(gr_sb *out, const char *stmt)
{
    gr_sb_puts(out, "try:\n");
    const char *p = stmt;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        gr_sb_puts(out, "    ");
        gr_sb_put(out, p, n);
        gr_sb_putc(out, '\n');
        p += n + (e ? 1 : 0);
    }
    gr_sb_puts(out, "except BaseException:\n    pass");
}

/* Wrap what out holds from mark on (a statement) in try/except
 * BaseException. */
static void wrap_from(gr_sb *out, size_t mark)
{
    size_t n = out->len - mark;
    char *stmt = gr_xrealloc(NULL, n + 1);
    if (n)
        memcpy(stmt, out->s + mark, n);
    stmt[n] = '\0';
    out->len = mark;
    if (out->s)
        out->s[mark] = '\0';
    wrap_try(out, stmt);
    free(stmt);
}

/* The callables of a HANDOVER act (each followed by ", "): let thread tid2
 * run (start it, for a late thread), then wait for this thread's turn.
 * Returns how many. */
static size_t handover_items(render *R, const gr_act *a, gr_sb *out)
{
    size_t k = 1;
    R->use |= U_THREADS;
    const gr_sthread *th = thread(R, a->tid2);
    if (a->start && th) {
        R->use |= U_FUNCTOOLS | U_X | U_Q;
        R->need |= GR_NEED_THREAD;
        gr_sb items;
        gr_sb_init(&items);
        put_num(&items, "_s", a->tid2, ", ");
        size_t n = 1 + thread_entry(R, th, &items);
        gr_sb_puts(out, "functools.partial(_thread.start_new_thread, _X, (map(_Q, ");
        tuple_of(out, items.s, items.len, n);
        gr_sb_puts(out, "), 0)), ");
        gr_sb_free(&items);
    } else {
        put_num(out, "_L[", a->tid2, "].release, ");
    }
    if (a->block) {
        put_num(out, "_L[", a->tid, "].acquire, ");
        k++;
    }
    return k;
}

/* The callables a neutral C call makes from C, for act a (appended to out,
 * each followed by ", "); returns how many (0: a cannot be made from C). */
static int callables(render *R, uint64_t tid, const gr_act *a, gr_sb *out)
{
    switch (a->kind) {
    case GR_ACT_CALL:
        put_num(out, "_v", variant_of(R, gr_act_frame(a)), ", ");
        return 1;
    case GR_ACT_MARK:
        R->use |= U_FUNCTOOLS;
        R->need |= GR_NEED_GREENREPLAY;
        gr_sb_puts(out, "functools.partial(greenreplay.mark, ");
        lit_label(R, out, a->label);
        gr_sb_puts(out, "), ");
        return 1;
    case GR_ACT_SWITCH:
        put_num(out, "G[", a->gid, "].switch, ");
        return 1;
    case GR_ACT_THROW:
        R->use |= U_FUNCTOOLS;
        gr_sb_printf(out, "functools.partial(G[%" PRIu64 "].throw, %s), ", a->gid,
                     throw_exc(R, tid, a->gid));
        return 1;
    case GR_ACT_PARENT:
        if (!a->gid2)
            return 1;
        R->use |= U_FUNCTOOLS;
        gr_sb_printf(out, "functools.partial(setattr, G[%" PRIu64 "], 'parent', G[%" PRIu64 "]), ",
                     a->gid, a->gid2);
        return 1;
    case GR_ACT_HANDOVER: return (int)handover_items(R, a, out);
    default: return 0;
    }
}

/* The statement for C frame f (an act CCALL). */
static void c_call_stmt(render *R, const gr_act *a, gr_sb *out)
{
    const gr_shape *s = R->s;
    const gr_frame *f = &s->frames[gr_act_frame(a)];
    size_t mark = out->len;
    if (f->hook) {
        /* The program changed the profile slot during this C call (HOOK):
         * the script does the same with sys.setprofile. */
        R->need |= GR_NEED_SYS;
        if (f->setprofile_clear) {
            gr_sb_puts(out, "sys.setprofile(None)  # the program cleared the profile slot here");
        } else {
            R->use |= U_PROF;
            gr_sb_puts(out, "sys.setprofile(_P)  # the program installed its own profile function here");
        }
    } else if (f->keep) {
        const gr_act *a0 = f->nacts ? &s->acts[gr_frame_acts(f)[0]] : NULL;
        const gr_code *c = gr_trace_code(R->t, f->code);
        size_t n;
        const uint8_t *q = gr_trace_string(R->t, c->qualname, &n);
        const gr_builtin *b = gr_builtin_find((const char *)q, n);
        if (f->bound && b && b->expr) {
            /* "name(first, rest)" -> "types.MethodType(name, first)(rest)" */
            const char *e = b->expr, *open = strchr(e, '(');
            const char *p = open + 1, *split = NULL;
            int depth = 0;
            for (; *p; p++) {
                if (*p == '(' || *p == '[' || *p == '{')
                    depth++;
                else if ((*p == ')' || *p == ']' || *p == '}') && depth-- == 0)
                    break;
                else if (*p == ',' && depth == 0 && !split)
                    split = p;
            }
            R->use |= U_TYPES;
            R->need |= b->need;
            gr_sb_puts(out, "types.MethodType(");
            gr_sb_put(out, e, (size_t)(open - e));
            gr_sb_puts(out, ", ");
            const char *first_end = split ? split : p;
            gr_sb_put(out, open + 1, (size_t)(first_end - open - 1));
            gr_sb_puts(out, ")(");
            if (split) {
                const char *rest = split + 1;
                while (*rest == ' ')
                    rest++;
                gr_sb_put(out, rest, (size_t)(p - rest));
            }
            gr_sb_puts(out, ")  # a bound method object wrapping a builtin");
        } else if (a0 && a0->kind == GR_ACT_MARK) {
            R->need |= GR_NEED_GREENREPLAY;
            gr_sb_puts(out, "greenreplay.mark(");
            lit_label(R, out, a0->label);
            gr_sb_putc(out, ')');
        } else if (a0 && a0->kind == GR_ACT_SWITCH) {
            put_num(out, "G[", a0->gid, "].switch()");
        } else if (a0 && a0->kind == GR_ACT_THROW) {
            gr_sb_printf(out, "G[%" PRIu64 "].throw(%s)", a0->gid, throw_exc(R, f->tid, a0->gid));
        } else if (f->gen != GR_NONE) {
            R->use |= U_GEN;
            put_num(out, "_GZ[", f->gen, "].close()");
        } else if (b && b->kind == GR_BUILTIN_SETTRACE) {
            R->need |= GR_NEED_SYS;
            if (f->settrace_on) {
                R->use |= U_TRACE;
                gr_sb_puts(out, "sys.settrace(_T)");
            } else {
                gr_sb_puts(out, "sys.settrace(None)");
            }
        } else if (b && b->kind == GR_BUILTIN_SETPROFILE && f->setprofile_clear) {
            R->need |= GR_NEED_SYS;
            gr_sb_puts(out, "sys.setprofile(None)");
        } else if (b && b->kind == GR_BUILTIN_SETPROFILE) {
            R->need |= GR_NEED_SYS;
            R->use |= U_PROF;
            gr_sb_puts(out, "sys.setprofile(_P)");
        } else if (b) {
            R->need |= b->need;
            gr_sb_puts(out, b->expr);
        } else {
            gr_sb_puts(out, "_D.extend(())");
            R->use |= U_D;
        }
    } else {
        R->use |= U_D;
        gr_sb items;
        gr_sb_init(&items);
        size_t k = 0;
        for (size_t i = 0; i < f->nacts; i++)
            k += (size_t)callables(R, f->tid, &s->acts[gr_frame_acts(f)[i]], &items);
        if (f->end == GR_END_EXCEPTION) {
            gr_sb_puts(&items, "{}.popitem, ");
            k++;
        }
        if (k == 0) {
            gr_sb_puts(out, "_D.extend(())");
        } else {
            R->use |= U_Q;
            gr_sb_puts(out, "_D.extend(map(_Q, ");
            tuple_of(out, items.s, items.len, k);
            gr_sb_puts(out, "))");
        }
        gr_sb_free(&items);
    }
    if (f->end == GR_END_EXCEPTION)
        wrap_from(out, mark);
}

/* Target of a SUSPEND act of greenlet (tid, gid). */
static void suspend_target(render *R, const gr_act *a, uint64_t tid, gr_sb *out)
{
    const gr_green *g = green(R, tid, a->gid);
    const gr_sthread *th = thread(R, tid);
    if (g && g->root && th && th->has_first && th->first != g->gid)
        put_num(out, "G[", th->first, "]");
    else
        put_num(out, "_R[", tid, "]");
}

/* Statement for act a of Python frame `frame`, appended to out (without the
 * leading STMT).  Returns 0 when the act makes no statement. */
static int act_stmt(render *R, size_t frame, const gr_act *a, gr_sb *out)
{
    const gr_shape *s = R->s;
    uint64_t tid = s->frames[frame].tid;
    size_t mark = out->len;
    int catch_ = a->catch_;
    switch (a->kind) {
    case GR_ACT_CALL: {
        size_t v = variant_of(R, gr_act_frame(a));
        if (gr_act_arm(a) != GR_NONE) {
            const gr_act *sw = &s->acts[gr_act_arm(a)];
            R->use |= U_TRACE;
            R->need |= GR_NEED_SYS;
            gr_sb_puts(out, "_A[0] = ");
            if (sw->kind == GR_ACT_THROW) {
                R->use |= U_FUNCTOOLS;
                gr_sb_printf(out, "functools.partial(G[%" PRIu64 "].throw, %s)", sw->gid,
                             throw_exc(R, tid, sw->gid));
            } else {
                put_num(out, "G[", sw->gid, "].switch");
            }
            gr_sb_puts(out, "  # made inside the trace function at the next call\n");
            if (a->hidden_install) {
                R->use |= U_X;
                gr_sb_puts(out, "_A[1] = 1\n_X(map(sys.settrace, (_T,)), 0)\n");
            }
        }
        put_num(out, "_v", v, "()");
        break;
    }
    case GR_ACT_CCALL: c_call_stmt(R, a, out); break;
    case GR_ACT_MARK:
        R->need |= GR_NEED_GREENREPLAY;
        gr_sb_puts(out, "greenreplay.mark(");
        lit_label(R, out, a->label);
        gr_sb_putc(out, ')');
        break;
    case GR_ACT_CSWITCH: /* a switch() call kept by name, as one act (script_shape.h) */
        put_num(out, "G[", a->gid, "].switch()");
        break;
    case GR_ACT_SWITCH:
        if (a->armed) {
            return 0;
        }
        R->use |= U_X | U_SW;
        put_num(out, "_X(map(_SW, (G[", a->gid, "],)), 0)");
        break;
    case GR_ACT_THROW:
        if (a->armed) {
            return 0;
        }
        R->use |= U_X | U_TH;
        gr_sb_printf(out, "_X(map(_TH, (G[%" PRIu64 "],), (%s,)), 0)", a->gid,
                     throw_exc(R, tid, a->gid));
        break;
    case GR_ACT_PARENT:
        if (!a->gid2) {
            return 0;
        }
        gr_sb_printf(out, "G[%" PRIu64 "].parent = G[%" PRIu64 "]", a->gid, a->gid2);
        break;
    case GR_ACT_START:
        R->need |= GR_NEED_GREENREPLAY;
        gr_sb_puts(out, "greenreplay.start()");
        break;
    case GR_ACT_STOP:
        R->need |= GR_NEED_GREENREPLAY;
        R->use |= U_OS;
        gr_sb_puts(out, "greenreplay.stop()\nos._exit(0)");
        break;
    case GR_ACT_SUSPEND:
        if (a->visible) {
            suspend_target(R, a, tid, out);
            gr_sb_puts(out, ".switch()");
        } else {
            R->use |= U_X | U_SW;
            gr_sb_puts(out, "_X(map(_SW, (");
            suspend_target(R, a, tid, out);
            gr_sb_puts(out, ",)), 0)");
        }
        break;
    case GR_ACT_PARK:
        R->use |= U_X | U_Q | U_THREADS;
        gr_sb_printf(out, "_X(map(_Q, (_PK[%" PRIu64 "].release, _L[%" PRIu64 "].acquire)), 0)",
                     a->tid, a->tid);
        break;
    case GR_ACT_HANDOVER: {
        R->use |= U_X | U_Q | U_THREADS;
        gr_sb items;
        gr_sb_init(&items);
        size_t k = handover_items(R, a, &items);
        gr_sb_puts(out, "_X(map(_Q, ");
        tuple_of(out, items.s, items.len, k);
        gr_sb_puts(out, "), 0)");
        if (a->start)
            gr_sb_printf(out, "  # start thread t%" PRIu64, a->tid2);
        gr_sb_free(&items);
        break;
    }
    case GR_ACT_HOOK:
        R->use |= U_THREADING;
        R->need |= GR_NEED_SYS;
        gr_sb_puts(out, "sys.setprofile(threading._profile_hook)  # as threading does in a new "
                        "thread");
        break;
    case GR_ACT_GENLOCAL:
        R->use |= U_GEN;
        gr_sb_printf(out, "_z%zu = _GZ[%zu]\n_GZ[%zu] = None", gr_act_gen(a), gr_act_gen(a),
                     gr_act_gen(a));
        break;
    case GR_ACT_RAISE:
        R->use |= U_FAIL;
        gr_sb_puts(out, "raise _Fail()");
        catch_ = 0;
        break;
    default:
        return 0;
    }
    if (catch_ && a->kind != GR_ACT_CCALL)
        wrap_from(out, mark);
    return 1;
}

/* Statements of frame f's acts. */
static void body_of(render *R, size_t frame, gr_sb *body)
{
    const gr_frame *f = &R->s->frames[frame];
    for (size_t i = 0; i < f->nacts; i++) {
        size_t mark = body->len;
        gr_sb_putc(body, STMT);
        if (!act_stmt(R, frame, &R->s->acts[gr_frame_acts(f)[i]], body)) {
            body->len = mark;
            if (body->s)
                body->s[mark] = '\0';
        }
    }
}

/* The dedup hash of (code, body): eight bytes at a time (bodies are most
 * of what script hashes; the table compares the bodies themselves). */
static uint64_t hash_key(uint32_t code, const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ code ^ ((uint64_t)n << 32);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static const char *var_body(const render *R, const variant *va)
{
    return R->bodies.s ? R->bodies.s + va->off : "";
}

/* The dedup slot of (code, body p[0..n)): the variant's, or the empty one
 * where it goes. */
static uint32_t *dedup_slot(render *R, uint64_t h, uint32_t code, const char *p, size_t n)
{
    size_t i = (size_t)h & (R->dedup.cap - 1);
    for (;; i = (i + 1) & (R->dedup.cap - 1)) {
        uint32_t *slot = &R->dedup.slot[i];
        if (!*slot)
            return slot;
        const variant *va = &R->vars[*slot - 1];
        if (va->code == code && va->len == n && memcmp(var_body(R, va), p, n) == 0)
            return slot;
    }
}


/* Room for one more variant in the dedup table (rehashing the bodies). */
static void dedup_room(render *R)
{
    if (2 * (R->dedup.n + 1) <= R->dedup.cap)
        return;
    free(R->dedup.slot);
    R->dedup.cap = R->dedup.cap ? 2 * R->dedup.cap : 1024;
    R->dedup.slot = gr_xrealloc(NULL, R->dedup.cap * sizeof *R->dedup.slot);
    memset(R->dedup.slot, 0, R->dedup.cap * sizeof *R->dedup.slot);
    for (size_t v = 0; v < R->nvars; v++) {
        const variant *va = &R->vars[v];
        if (va->next != IN_TABLE)
            continue;
        uint64_t h = hash_key(va->code, var_body(R, va), va->len);
        *dedup_slot(R, h, va->code, var_body(R, va), va->len) = (uint32_t)(v + 1);
    }
}

static void emit_def(render *R, size_t v, uint32_t code, const char *body, size_t n);

/* Room in the cache of bodies for one of n bytes: it starts over when
 * full. */
static void cache_room(render *R, size_t n)
{
    size_t max = R->o->cache ? R->o->cache : VAR_CACHE;
    if (R->nvars < max && R->bodies.len + n <= BODY_CACHE)
        return;
    R->vbase += R->nvars;
    R->nvars = 0;
    gr_sb_reset(&R->bodies);
    if (R->dedup.slot)
        memset(R->dedup.slot, 0, R->dedup.cap * sizeof *R->dedup.slot);
    R->dedup.n = 0;
}

/* The index of the cache's variant that body p (n bytes) calls last (the
 * last "_vN" in its text, N one of the cache's), or SIZE_MAX.  Any text
 * will do: this only says where the body is looked for, and it is the
 * same for the same text. */
static size_t last_callee(const render *R, const char *p, size_t n)
{
    for (size_t i = n; i-- > 1;) {
        if (p[i] != 'v' || p[i - 1] != '_')
            continue;
        uint64_t v = 0;
        size_t k = i + 1;
        while (k < n && k - i <= 10 && p[k] >= '0' && p[k] <= '9')
            v = v * 10 + (uint64_t)(p[k++] - '0');
        if (k == i + 1)
            continue;
        return v >= R->vbase && v - R->vbase < R->nvars ? (size_t)(v - R->vbase) : SIZE_MAX;
    }
    return SIZE_MAX;
}

/* The variant (index + 1) of (code, body p[0..n)) among the cache's, or 0
 * with where a new one goes: *callee (a variant index) when it is to be
 * kept among that variant's callers, else *slot in the dedup table. */
static uint32_t dedup_find(render *R, uint32_t code, const char *p, size_t n, size_t *callee,
                           uint32_t **slot)
{
    size_t c = last_callee(R, p, n), nkids = 0;
    *callee = SIZE_MAX;
    *slot = NULL;
    if (c != SIZE_MAX) {
        for (uint32_t k = R->vars[c].kids; k; k = R->vars[k - 1].next, nkids++) {
            const variant *va = &R->vars[k - 1];
            if (va->code == code && va->len == n && memcmp(var_body(R, va), p, n) == 0)
                return k;
        }
        if (nkids < KIDS_MAX) {
            *callee = c;
            return 0;
        }
    }
    dedup_room(R);
    *slot = dedup_slot(R, hash_key(code, p, n), code, p, n);
    return *slot ? **slot : 0;
}

/* The variant (a Python function) acting out frame: identical bodies of
 * the same code share one (among the cache's).  The frames it calls must
 * have theirs already (variant_of sees to it), so that rendering its body
 * recurses no deeper.  A new variant's def is written at once. */
static size_t variant_of_shallow(render *R, size_t frame)
{
    if (R->var_of[frame])
        return R->var_of[frame] - 1;
    /* the scratch buffer, unless a body being made asked for this one */
    gr_sb own, *bp = &own;
    gr_sb_init(&own);
    if (!R->scratch.busy) {
        bp = &R->scratch.sb;
        R->scratch.busy = 1;
        gr_sb_reset(bp);
    }
    body_of(R, frame, bp);
    gr_sb body = *bp;
    uint32_t code = R->s->frames[frame].code;
    if (body.len > UINT32_MAX || R->vbase + R->nvars >= UINT32_MAX - 1) {
        fputs("greenreplay: script: a function body or the number of them is too large\n",
              stderr);
        exit(2);
    }
    cache_room(R, body.len);
    const char *p = body.s ? body.s : "";
    size_t callee;
    uint32_t *slot, found = dedup_find(R, code, p, body.len, &callee, &slot);
    if (!found) {
        R->vars = gr_xgrow(R->vars, &R->cap_vars, R->nvars + 1, sizeof *R->vars);
        variant *va = &R->vars[R->nvars++];
        found = (uint32_t)R->nvars;
        va->off = (uint32_t)R->bodies.len;
        va->len = (uint32_t)body.len;
        va->code = code;
        va->kids = 0;
        if (slot) {
            *slot = found;
            va->next = IN_TABLE;
            R->dedup.n++;
        } else {
            va->next = R->vars[callee].kids;
            R->vars[callee].kids = found;
        }
        gr_sb_put(&R->bodies, p, body.len);
        emit_def(R, R->vbase + R->nvars - 1, code, p, body.len);
    }
    if (bp == &own)
        gr_sb_free(&own);
    else
        R->scratch.busy = 0;
    size_t v = R->vbase + found - 1;
    R->var_of[frame] = (uint32_t)(v + 1);
    return v;
}

/* The frame whose variant rendering frame's body asks for through act a
 * (a call, directly or from a neutral C call), or GR_NONE.  Mirrors
 * act_stmt, callables and c_call_stmt: a C frame that is reproduced by
 * name or changes the profile slot renders none of its acts. */
static size_t act_child(const render *R, const gr_act *a)
{
    size_t f = gr_act_frame(a);
    if (f == GR_NONE)
        return GR_NONE;
    if (a->kind == GR_ACT_CALL)
        return f;
    if (a->kind == GR_ACT_CCALL) {
        const gr_frame *c = &R->s->frames[f];
        return c->hook || c->keep ? GR_NONE : f;
    }
    return GR_NONE;
}

/* variant_of_shallow for frame and, first, every frame its body calls, in
 * the order rendering would reach them (children first, so the variant
 * numbers are the same), with a stack of its own: a 100,000-deep recursion
 * in the trace uses no more of the C stack than a shallow one. */
static size_t variant_of(render *R, size_t frame)
{
    if (R->var_of[frame])
        return R->var_of[frame] - 1;
    struct visit {
        size_t frame, next;
    } *stk = NULL;
    size_t n = 0, cap = 0;
    stk = gr_xgrow(stk, &cap, 1, sizeof *stk);
    stk[n++] = (struct visit){frame, 0};
    while (n) {
        struct visit *v = &stk[n - 1];
        const gr_frame *f = &R->s->frames[v->frame];
        size_t child = GR_NONE;
        while (v->next < f->nacts && child == GR_NONE) {
            child = act_child(R, &R->s->acts[gr_frame_acts(f)[v->next++]]);
            if (child != GR_NONE && !R->s->frames[child].is_c && R->var_of[child])
                child = GR_NONE; /* done already */
        }
        if (child != GR_NONE) {
            stk = gr_xgrow(stk, &cap, n + 1, sizeof *stk);
            stk[n++] = (struct visit){child, 0};
            continue;
        }
        size_t done = v->frame;
        n--;
        if (!R->s->frames[done].is_c)
            (void)variant_of_shallow(R, done);
    }
    free(stk);
    return R->var_of[frame] - 1;
}

/* ---- output ------------------------------------------------------------- */

static void line(render *R, gr_sb *out, int indent, const char *text, size_t n, const char *tag)
{
    for (int i = 0; i < indent; i++)
        gr_sb_put(out, "    ", 4);
    gr_sb_put(out, text, n);
    if (tag) {
        gr_sb_put(out, "  ", 2);
        gr_sb_puts(out, tag);
    }
    gr_sb_putc(out, '\n');
    R->line++;
    if (out->len >= FLUSH_AT)
        flush(R, out);
}

/* Write a statement (lines separated by '\n') as one unit. */
static void unit(render *R, gr_sb *out, int indent, const char *stmt, size_t n)
{
    char tag[32];
    (void)tag_of(tag, "#@", ++R->unit);
    const char *p = stmt, *end = stmt + n;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t k = e ? (size_t)(e - p) : (size_t)(end - p);
        line(R, out, indent, p, k, tag);
        p += k + (e ? 1 : 0);
    }
}

static void unit_str(render *R, gr_sb *out, int indent, const char *stmt)
{
    unit(R, out, indent, stmt, strlen(stmt));
}

/* Write a body's statements, each a unit. */
static void body_units(render *R, gr_sb *out, int indent, const char *body, size_t n)
{
    const char *p = body, *end = body + n;
    while (p < end) {
        if (*p == STMT)
            p++;
        const char *e = memchr(p, STMT, (size_t)(end - p));
        size_t k = e ? (size_t)(e - p) : (size_t)(end - p);
        unit(R, out, indent, p, k);
        p += k;
    }
}

/* The defs' buffer to their temporary file (streamed), if it is big. */
static void dflush(render *R, int force)
{
    if (!R->defs || !R->dbuf.len || (!force && R->dbuf.len < FLUSH_AT))
        return;
    if (!R->terr && fwrite(R->dbuf.s, 1, R->dbuf.len, R->defs) != R->dbuf.len)
        R->terr = errno ? errno : EIO;
    gr_sb_reset(&R->dbuf);
}

static void put_varint(gr_sb *b, uint64_t v)
{
    char d[10];
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        d[n++] = (char)(0x80 | (v & 0x7F));
    d[n++] = (char)v;
    gr_sb_put(b, d, n);
}

/* The varint at p[*i..n): 1 and *i past it, or 0 when p ends first. */
static int get_varint(const char *p, size_t n, size_t *i, uint64_t *v)
{
    uint64_t x = 0;
    for (size_t k = *i, sh = 0; k < n && sh < 64; k++, sh += 7) {
        x |= (uint64_t)((uint8_t)p[k] & 0x7F) << sh;
        if (!((uint8_t)p[k] & 0x80)) {
            *i = k + 1;
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* The statements of a def's body, one a unit, each line of them into out
 * (indented, with its unit tag, unit numbers from *unit + 1 on) when out
 * is not NULL; the lines counted into *lines. */
static void def_body(render *R, gr_sb *out, const char *body, size_t n, uint64_t *unit,
                     uint64_t *lines)
{
    const char *p = body, *end = body + n;
    while (p < end) {
        if (*p == STMT)
            p++;
        const char *e = memchr(p, STMT, (size_t)(end - p));
        size_t k = e ? (size_t)(e - p) : (size_t)(end - p);
        ++*unit;
        for (const char *q = p, *qe = p + k; q < qe;) {
            const char *nl = memchr(q, '\n', (size_t)(qe - q));
            size_t m = nl ? (size_t)(nl - q) : (size_t)(qe - q);
            ++*lines;
            if (out) {
                gr_sb_put(out, "    ", 4);
                gr_sb_put(out, q, m);
                gr_sb_put(out, "  #@", 4);
                gr_sb_putu(out, *unit);
                gr_sb_putc(out, '\n');
            }
            q += m + (nl ? 1 : 0);
        }
        p += k;
    }
}

/* The name of code as a def shows it: "  # NAME" (escaped, for the def
 * line; *ncom bytes) followed by 'NAME' (a literal, *nlit bytes), made
 * once per code in R->names.  Valid until names grows. */
static const char *name_forms(render *R, uint32_t code, size_t *ncom, size_t *nlit)
{
    int cached = code <= R->t->ncodes;
    struct name_form *nf = cached ? &R->name_of[code] : NULL;
    if (!nf || !nf->at) {
        gr_sb nm;
        gr_sb_init(&nm);
        gr_shape_name(R->s, &nm, code);
        size_t at = R->names.len;
        gr_sb_put(&R->names, "  # ", 4);
        gr_sb_escape(&R->names, nm.s ? nm.s : "", nm.len, 0);
        size_t mid = R->names.len;
        /* not counted in the notes' invalid bytes: the defs were written
         * after the notes were made (the same count as ever) */
        (void)gr_script_pystr(&R->names, nm.s ? nm.s : "", nm.len);
        gr_sb_free(&nm);
        if (!nf || R->names.len - at > UINT32_MAX) { /* uncached: the caller drops it */
            *ncom = mid - at;
            *nlit = R->names.len - mid;
            return R->names.s + at;
        }
        *nf = (struct name_form){at + 1, (uint32_t)(mid - at), (uint32_t)(R->names.len - mid)};
    }
    *ncom = nf->ncom;
    *nlit = nf->nlit;
    return R->names.s + nf->at - 1;
}

/* Write variant v's def (code, body n bytes) after the defs so far: its
 * record, its lines counted. */
static void emit_def(render *R, size_t v, uint32_t code, const char *body, size_t n)
{
    (void)v; /* the defs are numbered in order */
    uint64_t def_line = R->dlines + 1, units = R->dunits, lines = R->dlines + 1;
    def_body(R, NULL, body, n, &units, &lines);
    R->dunits = (size_t)units;
    R->dlines = (size_t)lines + 2; /* return, _fn(...) */
    if (code <= R->t->ncodes && !R->code_line[code])
        R->code_line[code] = def_line;
    put_varint(&R->dbuf, code);
    put_varint(&R->dbuf, n);
    gr_sb_put(&R->dbuf, body, n);
    dflush(R, 0);
}

/* The text of def v (code, body n bytes) into out; *unit: units of the
 * defs before it (and after it, on return); lbase: lines above the first
 * def. */
static void def_text(render *R, gr_sb *out, uint64_t v, uint32_t code, const char *body,
                     size_t n, uint64_t *unit, uint64_t lbase)
{
    char tag[32];
    size_t ntag = tag_of(tag, "  #@d", v), keep = R->names.len, ncom, nlit;
    const char *nm = name_forms(R, code, &ncom, &nlit);
    uint64_t lines = 0;
    put_num(out, "def _v", v, "():");
    if (!R->o->anonymize)
        gr_sb_put(out, nm, ncom);
    gr_sb_put(out, tag, ntag);
    gr_sb_putc(out, '\n');
    def_body(R, out, body, n, unit, &lines);
    gr_sb_put(out, "    return\n", 11);
    put_num(out, "_fn(_v", v, ", ");
    gr_sb_put(out, nm + ncom, nlit);
    if (code <= R->t->ncodes)
        put_num(out, ", ", lbase + R->code_line[code], ")");
    else
        gr_sb_puts(out, ", 0)");
    gr_sb_put(out, tag, ntag);
    gr_sb_putc(out, '\n');
    if (code > R->t->ncodes || !R->name_of[code].at) { /* not kept (name_forms) */
        R->names.len = keep;
        if (R->names.s)
            R->names.s[keep] = '\0';
    }
    if (out->len >= FLUSH_AT)
        flush(R, out);
}

/* The text of the whole records in p[*i..n) into out (*i: past them). */
static void defs_text(render *R, gr_sb *out, const char *p, size_t n, size_t *i, uint64_t *v,
                      uint64_t *unit, uint64_t lbase)
{
    for (;;) {
        size_t k = *i;
        uint64_t code, len;
        if (!get_varint(p, n, &k, &code) || !get_varint(p, n, &k, &len) || len > n - k)
            return;
        def_text(R, out, (*v)++, (uint32_t)code, p + k, (size_t)len, unit, lbase);
        *i = k + (size_t)len;
    }
}

/* The defs, after the lines and units written so far. */
static void write_defs(render *R, gr_sb *out)
{
    uint64_t lbase = R->line, unit = R->unit, v = 0;
    size_t i = 0;
    if (R->defs) {
        dflush(R, 1);
        gr_sb buf; /* what was read and not made text yet (a record at most) */
        gr_sb_init(&buf);
        if (!R->terr && (fflush(R->defs) != 0 || fseeko(R->defs, 0, SEEK_SET) != 0))
            R->terr = errno ? errno : EIO;
        while (!R->terr) {
            char chunk[FLUSH_AT];
            size_t n = fread(chunk, 1, sizeof chunk, R->defs);
            if (n == 0)
                break;
            gr_sb_put(&buf, chunk, n);
            i = 0;
            defs_text(R, out, buf.s, buf.len, &i, &v, &unit, lbase);
            memmove(buf.s, buf.s + i, buf.len - i);
            buf.len -= i;
        }
        if (!R->terr && (ferror(R->defs) || buf.len))
            R->terr = errno ? errno : EIO;
        gr_sb_free(&buf);
    }
    i = 0;
    defs_text(R, out, R->dbuf.s ? R->dbuf.s : "", R->dbuf.len, &i, &v, &unit, lbase);
    R->line += R->dlines;
    R->unit += R->dunits;
    for (size_t c = 0; c <= R->t->ncodes; c++)
        if (R->code_line[c])
            R->code_line[c] += lbase;
    if (out->len >= FLUSH_AT)
        flush(R, out);
}

/* The Python expression of greenlet g's run function. */
static void run_expr(render *R, const gr_green *g, gr_sb *out)
{
    size_t gi = (size_t)(g - R->s->greens);
    int ext = 0;
    if (gr_shape_spilled(R->s, gi, &ext) && !ext)
        put_num(out, "_v", (size_t)R->run_var[gi] - 1, "");
    else if (g->run != GR_NONE && !R->s->frames[g->run].external)
        put_num(out, "_v", variant_of(R, g->run), "");
    else if (g->dies_throw)
        gr_sb_puts(out, "{}.popitem");
    else
        gr_sb_puts(out, "int");
}

/* Statements creating thread tid's greenlets (besides its root) and
 * setting their parents, at indent. */
static void create_greenlets(render *R, gr_sb *out, int indent, uint64_t tid)
{
    const gr_shape *s = R->s;
    const gr_sthread *th = thread(R, tid);
    gr_sb st;
    gr_sb_init(&st);
    put_num(&st, "_R[", tid, "] = greenlet.getcurrent()");
    unit_str(R, out, indent, gr_sb_str(&st));
    if (th && th->root) {
        gr_sb_reset(&st);
        gr_sb_printf(&st, "G[%" PRIu64 "] = _R[%" PRIu64 "]", th->root, tid);
        unit_str(R, out, indent, gr_sb_str(&st));
    }
    /* Parent of each greenlet as the script sets it, to refuse cycles. */
    uint64_t *par = gr_xrealloc(NULL, (s->ngreens + 1) * sizeof *par);
    for (size_t i = 0; i < s->ngreens; i++) {
        const gr_green *g = &s->greens[i];
        par[i] = th ? th->root : 0;
        if (g->tid != tid || g->root || !g->gid)
            continue;
        gr_sb_reset(&st);
        put_num(&st, "G[", g->gid, "] = greenlet.greenlet(");
        run_expr(R, g, &st);
        gr_sb_putc(&st, ')');
        unit_str(R, out, indent, gr_sb_str(&st));
    }
    for (size_t i = 0; i < s->ngreens; i++) {
        const gr_green *g = &s->greens[i];
        if (g->tid != tid || g->root || !g->gid || !g->parent_first ||
            (th && g->parent_first == th->root))
            continue;
        /* Would g -> parent_first make a cycle? */
        int cycle = 0;
        uint64_t p = g->parent_first;
        for (size_t hops = 0; p && hops <= s->ngreens; hops++) {
            if (p == g->gid) {
                cycle = 1;
                break;
            }
            size_t j = 0;
            while (j < s->ngreens && !(s->greens[j].gid == p && s->greens[j].tid == tid))
                j++;
            if (j == s->ngreens || s->greens[j].root)
                break;
            p = par[j];
        }
        if (cycle)
            continue;
        par[i] = g->parent_first;
        gr_sb_reset(&st);
        gr_sb_printf(&st, "G[%" PRIu64 "].parent = G[%" PRIu64 "]", g->gid, g->parent_first);
        unit_str(R, out, indent, gr_sb_str(&st));
    }
    free(par);
    /* Seeded greenlets suspended at first sight: start them now, each stops
     * in its innermost seed frame and comes back. */
    for (size_t i = 0; i < s->ngreens; i++) {
        const gr_green *g = &s->greens[i];
        if (g->tid != tid || g->root || !g->idle_seed)
            continue;
        R->use |= U_X | U_SW;
        gr_sb_reset(&st);
        put_num(&st, "_X(map(_SW, (G[", g->gid, "],)), 0)");
        unit_str(R, out, indent, gr_sb_str(&st));
    }
    gr_sb_free(&st);
}

/* The callables of thread th's entry (what its script thread calls, from
 * C, after its setup function), each followed by ", ", appended to out.
 * Returns how many. */
static size_t thread_entry(render *R, const gr_sthread *th, gr_sb *out)
{
    size_t k = 0;
    const gr_green *root = th->root ? green(R, th->tid, th->root) : NULL;
    const gr_green *first = th->has_first ? green(R, th->tid, th->first) : NULL;
    if (th->park_first) {
        gr_sb_printf(out, "_PK[%" PRIu64 "].release, _L[%" PRIu64 "].acquire, ", th->tid, th->tid);
        k += 2;
    }
    if (root && root->run != GR_NONE && !R->s->frames[root->run].external) {
        put_num(out, "_v", variant_of(R, root->run), ", ");
        k++;
    } else if (first && first != root && first->gid) {
        put_num(out, "G[", first->gid, "].switch, ");
        k++;
    } else if (first && first->run != GR_NONE && !R->s->frames[first->run].external) {
        put_num(out, "_v", variant_of(R, first->run), ", ");
        k++;
    }
    if (th->next_tid) {
        put_num(out, "_L[", th->next_tid, "].release, ");
        k++;
    }
    return k;
}

static void write_prelude(render *R, gr_sb *out)
{
    const gr_shape *s = R->s;
    unsigned u = R->use, need = R->need;
    /* Dependencies between helpers. */
    if (u & U_THREADS)
        need |= GR_NEED_THREAD;
    if (u & (U_X | U_D))
        need |= GR_NEED_COLLECTIONS;
    if (u & (U_SW | U_TH))
        need |= GR_NEED_GREENLET;
    if (u & U_TRACE)
        need |= GR_NEED_SYS;
    if (s->uses_greenlet)
        need |= GR_NEED_GREENLET;
    if (need & GR_NEED_COLLECTIONS)
        unit_str(R, out, 0, "import collections");
    if (u & U_FUNCTOOLS)
        unit_str(R, out, 0, "import functools");
    if (u & U_Q)
        unit_str(R, out, 0, "import operator");
    if (u & U_OS)
        unit_str(R, out, 0, "import os");
    if (need & GR_NEED_SYS)
        unit_str(R, out, 0, "import sys");
    if (need & GR_NEED_TIME)
        unit_str(R, out, 0, "import time");
    if (need & GR_NEED_CPROFILE) {
        unit_str(R, out, 0, "import cProfile");
        unit_str(R, out, 0, "_CP = cProfile.Profile()  # every enable()/disable() of the trace");
    }
    if (need & GR_NEED_THREAD)
        unit_str(R, out, 0, "import _thread");
    if (u & U_THREADING)
        unit_str(R, out, 0, "import threading");
    if (u & U_TYPES)
        unit_str(R, out, 0, "import types");
    line(R, out, 0, "", 0, NULL);
    if (need & GR_NEED_GREENLET)
        line(R, out, 0, "import greenlet", 15, NULL);
    line(R, out, 0, "import greenreplay", 18, NULL);
    line(R, out, 0, "", 0, NULL);
    if (u & U_X)
        unit_str(R, out, 0, "_X = collections.deque  # _X(map(f, args), 0): f(*args) from C, no "
                            "profile event");
    if (u & U_Q)
        unit_str(R, out, 0, "_Q = operator.methodcaller('__call__')  # map(_Q, fs): call each f "
                            "from C");
    if (u & U_D)
        unit_str(R, out, 0, "_D = collections.deque(maxlen=0)  # _D.extend(...): the neutral C "
                            "call");
    if (u & U_SW)
        unit_str(R, out, 0, "_SW = greenlet.greenlet.switch");
    if (u & U_TH)
        unit_str(R, out, 0, "_TH = greenlet.greenlet.throw");
    if (u & U_THROWN)
        unit_str(R, out, 0, "class _Thrown(Exception):\n    pass");
    if (u & U_FAIL)
        unit_str(R, out, 0, "class _Fail(Exception):\n    pass");
    unit_str(R, out, 0,
             "def _fn(f, qual, line):\n"
             "    # give f's code the recorded name (co_qualname exists on 3.11+)\n"
             "    c = f.__code__\n"
             "    kw = {'co_name': qual.rpartition('.')[2]}\n"
             "    if hasattr(c, 'co_qualname'):\n"
             "        kw['co_qualname'] = qual\n"
             "    if line:\n"
             "        kw['co_firstlineno'] = line\n"
             "    f.__code__ = c.replace(**kw)");
    if (u & U_GEN)
        unit_str(R, out, 0,
                 "def _gen(qual, line):\n"
                 "    # a generator suspended at its first yield, to be finalized\n"
                 "    def g():\n"
                 "        yield\n"
                 "    _fn(g, qual, line)\n"
                 "    it = g()\n"
                 "    next(it)\n"
                 "    return it");
    if (u & U_TRACE) {
        unit_str(R, out, 0, "_A = [None, 0]  # what the trace function does at the next call");
        unit_str(R, out, 0,
                 "def _T(frame, event, arg):\n"
                 "    # trace function: what it does is invisible to profilers\n"
                 "    a = _A[0]\n"
                 "    if a is not None:\n"
                 "        _A[0] = None\n"
                 "        if _A[1]:\n"
                 "            _A[1] = 0\n"
                 "            sys.settrace(None)\n"
                 "        a()\n"
                 "    return None");
    }
    if (u & U_PROF)
        unit_str(R, out, 0, "def _P(frame, event, arg):\n"
                            "    # another profiler, which replaces greenreplay's\n"
                            "    return None");
    if (s->uses_greenlet) {
        unit_str(R, out, 0, "G = {}  # greenlets by the trace's gid");
        unit_str(R, out, 0, "_R = {}  # the root greenlet of each thread");
    }
    if (u & U_THREADS) {
        unit_str(R, out, 0, "_L = {}  # per thread: acquired while the thread waits for its turn");
        unit_str(R, out, 0, "_PK = {}  # per thread: released once it waits for its first turn");
    }
}

static void write_header(render *R, gr_sb *out, const gr_sb *notes, size_t nnotes)
{
    const gr_trace *t = R->t;
    gr_sb h;
    gr_sb_init(&h);
    line(R, out, 0, "#!/usr/bin/env python3", 22, NULL);
    /* Python reads an encoding declaration on lines 1-2 (PEP 263): a path
     * holding "coding=unicode_escape" there would decode the escapes of
     * every literal below back into quotes and newlines.  Line 2 declares
     * UTF-8 itself, and no string of the trace or of the command line
     * comes before line 3. */
    static const char cookie[] = "# -*- coding: utf-8 -*-";
    line(R, out, 0, cookie, sizeof cookie - 1, NULL);
    gr_sb_printf(&h, "# Made by `greenreplay script` from a trace of %" PRIu64 " records",
                 gr_trace_count(t));
    const char *py = NULL, *gl = NULL;
    size_t npy = 0, ngl = 0;
    for (size_t i = 0; i < t->nmetas; i++) {
        size_t kn, vn;
        const uint8_t *k = gr_trace_string(t, t->metas[i].key, &kn);
        const uint8_t *v = gr_trace_string(t, t->metas[i].value, &vn);
        if (k && v && kn == 6 && memcmp(k, "python", 6) == 0)
            py = (const char *)v, npy = vn;
        if (k && v && kn == 8 && memcmp(k, "greenlet", 8) == 0)
            gl = (const char *)v, ngl = vn;
    }
    if (R->o->source && !R->o->anonymize) {
        gr_sb_puts(&h, " (");
        gr_sb_escape(&h, R->o->source, strlen(R->o->source), 0);
        gr_sb_putc(&h, ')');
    }
    line(R, out, 0, h.s, h.len, NULL);
    gr_sb_reset(&h);
    if ((py || gl) && !R->o->anonymize) { /* anonymized: no string of the trace */
        gr_sb_puts(&h, "# recorded with");
        if (py) {
            gr_sb_puts(&h, " python ");
            gr_sb_escape(&h, py, npy, 0);
        }
        if (gl) {
            gr_sb_puts(&h, py ? ", greenlet " : " greenlet ");
            gr_sb_escape(&h, gl, ngl, 0);
        }
        gr_sb_putc(&h, '.');
        line(R, out, 0, h.s, h.len, NULL);
    }
    /* The interpreter to record it with: the trace holds no paths (no
     * executable), so the header names the original's version instead of a
     * `python3` that may be another interpreter, without greenlet. */
    line(R, out, 0, "#", 1, NULL);
    static const char rec[] = "# Record it:  greenreplay record --manual -o repro.grt -- PYTHON THIS_FILE";
    line(R, out, 0, rec, sizeof rec - 1, NULL);
    gr_sb_reset(&h);
    gr_sb_puts(&h, "#   PYTHON: the Python that ran the original");
    if (py && !R->o->anonymize) {
        gr_sb_puts(&h, " (");
        gr_sb_escape(&h, py, npy, 0);
        gr_sb_putc(&h, ')');
    }
    if (R->s->uses_greenlet)
        gr_sb_puts(&h, ", with greenlet");
    line(R, out, 0, h.s, h.len, NULL);
    /* Anonymized names match the original's only up to renaming. */
    static const char cmp[] = "# Compare:    greenreplay diff --c-names script ORIGINAL.grt repro.grt";
    static const char cmp_anon[] = "# Compare:    greenreplay diff --c-names script --rename ORIGINAL.grt repro.grt";
    if (R->o->anonymize)
        line(R, out, 0, cmp_anon, sizeof cmp_anon - 1, NULL);
    else
        line(R, out, 0, cmp, sizeof cmp - 1, NULL);
    static const char *const text[] = {
        "#",
        "# It acts out the greenlets of the trace (creation, parents, the order of",
        "# switches, throws and deaths; not the values they pass), the calls in",
        "# each greenlet with functions of the recorded names, C calls (the same",
        "# builtin where known, else a neutral C call), marks, and start()/stop()",
        "# where the trace has them.  Lines ending in #@N are units that",
        "# `greenreplay reduce` may remove.",
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        line(R, out, 0, text[i], strlen(text[i]), NULL);
    if (R->s->launched_m) {
        /* No module name; anonymized, not the frames' names either: such a
         * script holds no string of the trace. */
        static const char *const m[] = {
            "#",
            "# The program was launched with -m (python -m MODULE): runpy's launch",
            "# frames below its <module> (_run_module_as_main > _run_code > exec) are",
            "# left out, and this script is a file; diff compares both without them.",
        };
        static const char *const anon[] = {
            "#",
            "# The program was launched with -m (python -m MODULE): the interpreter's",
            "# launch frames below the program's are left out, and this script is a",
            "# file; diff compares both without them.",
        };
        const char *const *p = R->o->anonymize ? anon : m;
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
            line(R, out, 0, p[i], strlen(p[i]), NULL);
    }
    if (nnotes) {
        line(R, out, 0, "#", 1, NULL);
        line(R, out, 0, "# Not reproduced:", 17, NULL);
        const char *p = notes->s;
        for (size_t i = 0; i < nnotes && p; i++) {
            const char *e = strchr(p, '\n');
            gr_sb_reset(&h);
            gr_sb_puts(&h, "#   - ");
            gr_sb_put(&h, p, e ? (size_t)(e - p) : strlen(p));
            line(R, out, 0, h.s, h.len, NULL);
            p = e ? e + 1 : NULL;
        }
    }
    line(R, out, 0, "", 0, NULL);
    gr_sb_free(&h);
}

/* The module-level body: the module frame's, or a call of the first
 * greenlet's run, with start() and stop() where the trace has them
 * outside any frame.  The module frame, or GR_NONE. */
static size_t module_body(render *R, const gr_sthread *mt, gr_sb *body)
{
    const gr_shape *s = R->s;
    const gr_green *root = mt && mt->root ? green(R, mt->tid, mt->root) : NULL;
    const gr_green *first = mt && mt->has_first ? green(R, mt->tid, mt->first) : NULL;
    if (!root && first && first->gid == 0)
        root = first; /* no greenlet: the thread's only stack */
    size_t module_frame = GR_NONE;
    if (root && root->run != GR_NONE && !s->frames[root->run].external &&
        gr_shape_is_module_code(s->t, s->frames[root->run].code))
        module_frame = root->run;
    if (module_frame != GR_NONE) {
        body_of(R, module_frame, body);
    } else if (root && root->run != GR_NONE && !s->frames[root->run].external) {
        gr_sb_printf(body, "%c_v%zu()", STMT, variant_of(R, root->run));
    } else if (first && first->gid && (!root || first != root)) {
        R->use |= U_X | U_SW;
        gr_sb_printf(body, "%c_X(map(_SW, (G[%" PRIu64 "],)), 0)", STMT, first->gid);
    } else if (first && first->run != GR_NONE && !s->frames[first->run].external) {
        gr_sb_printf(body, "%c_v%zu()", STMT, variant_of(R, first->run));
    }
    if (!s->has_start || s->start_at_top) {
        gr_sb pre;
        gr_sb_init(&pre);
        R->need |= GR_NEED_GREENREPLAY;
        gr_sb_printf(&pre, "%cgreenreplay.start()", STMT);
        gr_sb_put(&pre, body->s ? body->s : "", body->len);
        gr_sb_free(body);
        *body = pre;
    }
    if (s->stop_at_end) {
        R->need |= GR_NEED_GREENREPLAY;
        R->use |= U_OS;
        gr_sb_printf(body, "%cgreenreplay.stop()\nos._exit(0)", STMT);
    }
    return module_frame;
}

/* Thread entries (variants they need are rendered now). */
static void render_thread_entries(render *R, gr_sb *entries)
{
    const gr_shape *s = R->s;
    for (size_t i = 0; i < s->nthreads; i++) {
        const gr_sthread *th = &s->threads[i];
        if (th->module)
            continue;
        R->use |= U_X | U_Q | U_THREADS;
        gr_sb items;
        gr_sb_init(&items);
        size_t k = thread_entry(R, th, &items);
        gr_sb_printf(entries, "%" PRIu64 " %zu ", th->tid, k + 1);
        gr_sb_puts(entries, gr_sb_str(&items));
        gr_sb_putc(entries, '\n');
        gr_sb_free(&items);
    }
}

/* The variant of spilled greenlet gi's run: its frames are brought back,
 * rendered, and freed again (their slots, and var_of entries, are reused
 * by the next one). */
static size_t render_spilled(render *R, size_t gi)
{
    size_t run = gr_shape_reload(R->ms, gi);
    if (R->ms->nframes + 1 > R->cap_var_of) {
        size_t old = R->cap_var_of;
        R->var_of = gr_xgrow(R->var_of, &R->cap_var_of, R->ms->nframes + 1, sizeof *R->var_of);
        memset(R->var_of + old, 0, (R->cap_var_of - old) * sizeof *R->var_of);
    }
    size_t v = variant_of(R, run);
    size_t n = 0;
    const uint32_t *fl = gr_shape_green_frames(R->s, gi, &n);
    for (size_t k = 0; k < n; k++)
        R->var_of[fl[k]] = 0;
    gr_shape_unload(R->ms, gi);
    return v;
}

/* Greenlet run functions (render their variants now), and what the
 * prelude must define for them. */
static void render_runs(render *R, const gr_sthread *mt, size_t module_frame)
{
    const gr_shape *s = R->s;
    for (size_t i = 0; i < s->ngreens; i++) {
        const gr_green *g = &s->greens[i];
        int ext = 0;
        if (gr_shape_spilled(s, i, &ext)) {
            if (!ext)
                R->run_var[i] = (uint32_t)(render_spilled(R, i) + 1);
        } else if (g->run != GR_NONE && !s->frames[g->run].external && g->run != module_frame) {
            (void)variant_of(R, g->run);
        }
    }
    if (s->nthreads > 1 || (mt && !mt->module))
        R->use |= U_THREADS;
    for (size_t i = 0; i < s->ngreens; i++)
        if (s->greens[i].idle_seed && !s->greens[i].root)
            R->use |= U_X | U_SW;
    if (s->ngens)
        R->use |= U_GEN;
}

/* The notes, one a line; their number. */
static size_t render_notes(render *R, gr_sb *notes)
{
    const gr_shape *s = R->s;
    const gr_script_opts *o = R->o;
    for (size_t i = 0; i < s->nnotes; i++) {
        gr_sb_puts(notes, s->notes[i].text);
        if (s->notes[i].count > 1)
            put_num(notes, " (", s->notes[i].count, " times)");
        if (s->notes[i].first_rec != GR_NONE && !o->anonymize)
            put_num(notes, " [record ", s->notes[i].first_rec, "]");
        gr_sb_putc(notes, '\n');
    }
    size_t nnotes = s->nnotes;
    if (R->bad_utf8) {
        gr_sb_printf(notes, "%zu bytes of names or labels that are not valid UTF-8: replaced "
                             "by U+FFFD\n",
                     R->bad_utf8);
        nnotes++;
    }
    return nnotes;
}

/* The generators the trace finalizes (_GZ). */
static void write_generators(render *R, gr_sb *out)
{
    const gr_shape *s = R->s;
    const gr_trace *t = R->t;
    gr_sb st;
    gr_sb_init(&st);
    gr_sb_puts(&st, "_GZ = [");
    for (size_t i = 0; i < s->ngens; i++) {
        uint32_t c = s->gens[i].code;
        if (i)
            gr_sb_puts(&st, ", ");
        gr_sb_puts(&st, "_gen(");
        if (c)
            lit_code(R, &st, c);
        else
            gr_sb_puts(&st, "'_g'");
        put_num(&st, ", ", c && c <= t->ncodes ? R->code_line[c] : 0, ")");
    }
    gr_sb_puts(&st, "]  # generators the trace finalizes");
    unit_str(R, out, 0, gr_sb_str(&st));
    gr_sb_free(&st);
}

/* Other threads: each created now, waits for its first turn. */
static void write_threads(render *R, gr_sb *out, const gr_sb *entries)
{
    const gr_shape *s = R->s;
    gr_sb st;
    gr_sb_init(&st);
    for (size_t i = 0; i < s->nthreads; i++) {
        const gr_sthread *th = &s->threads[i];
        gr_sb_reset(&st);
        gr_sb_printf(&st, "_L[%" PRIu64 "] = _thread.allocate_lock()\n_L[%" PRIu64
                          "].acquire()",
                     th->tid, th->tid);
        unit_str(R, out, 0, gr_sb_str(&st));
    }
    const char *p = entries->s;
    while (p && *p) {
        char *e;
        uint64_t tid = strtoull(p, &e, 10);
        size_t k = (size_t)strtoull(e, &e, 10);
        const char *nl = strchr(e, '\n');
        const char *calls = e + 1;
        size_t ncalls = (size_t)(nl - calls);
        /* the setup function of the thread */
        gr_sb_reset(&st);
        gr_sb_printf(&st, "def _s%" PRIu64 "():  # thread t%" PRIu64 ", before start()", tid,
                     tid);
        char tag[32];
        snprintf(tag, sizeof tag, "#@ds%" PRIu64, tid);
        line(R, out, 0, st.s, st.len, tag);
        if (s->uses_greenlet)
            create_greenlets(R, out, 1, tid);
        line(R, out, 1, "return", 6, NULL);
        const gr_sthread *tth = thread(R, tid);
        if (tth && tth->late) {
            p = nl + 1; /* started by the thread that hands over to it first */
            continue;
        }
        gr_sb_reset(&st);
        gr_sb_printf(&st, "_PK[%" PRIu64 "] = _thread.allocate_lock()\n_PK[%" PRIu64
                          "].acquire()\n_thread.start_new_thread(_X, (map(_Q, ",
                     tid, tid);
        gr_sb items;
        gr_sb_init(&items);
        put_num(&items, "_s", tid, ", ");
        gr_sb_put(&items, calls, ncalls);
        tuple_of(&st, items.s, items.len, k);
        gr_sb_free(&items);
        gr_sb_printf(&st, "), 0))\n_PK[%" PRIu64 "].acquire()  # until it waits for its turn",
                     tid);
        unit_str(R, out, 0, gr_sb_str(&st));
        p = nl + 1;
    }
    gr_sb_free(&st);
}

/* The program of a built shape into out, or, when file is not NULL, into
 * file (out is then only the buffer of the piece being written): 0, or -1
 * when a write to file failed. */
static int script_write(gr_shape *sh, const gr_script_opts *o, FILE *file, gr_sb *out,
                        gr_sb *notes_out, size_t *nnotes_out)
{
    const gr_trace *t = sh->t;
    render R;
    memset(&R, 0, sizeof R);
    R.s = sh;
    R.ms = sh;
    R.t = t;
    R.o = o;
    R.file = file;
    gr_sb_init(&R.bodies);
    gr_sb_init(&R.dbuf);
    if (file)
        R.defs = gr_tmpfile(); /* NULL: the defs stay in dbuf */
    R.cap_var_of = sh->nframes + 1;
    R.var_of = gr_xrealloc(NULL, R.cap_var_of * sizeof *R.var_of);
    memset(R.var_of, 0, R.cap_var_of * sizeof *R.var_of);
    R.run_var = gr_xrealloc(NULL, (sh->ngreens + 1) * sizeof *R.run_var);
    memset(R.run_var, 0, (sh->ngreens + 1) * sizeof *R.run_var);
    R.code_line = gr_xrealloc(NULL, (t->ncodes + 1) * sizeof *R.code_line);
    memset(R.code_line, 0, (t->ncodes + 1) * sizeof *R.code_line);
    R.name_of = gr_xrealloc(NULL, (t->ncodes + 1) * sizeof *R.name_of);
    memset(R.name_of, 0, (t->ncodes + 1) * sizeof *R.name_of);
    gr_sb_init(&R.names);

    /* Render the module-level body and the setup first (into `main`), so
     * that every variant they need exists; then write everything in
     * order: header, prelude, defs, setup, body.  Line numbers of defs are
     * only known while writing, so the parts are rendered into separate
     * buffers and concatenated. */
    const gr_sthread *mt = thread(&R, sh->module_tid);
    gr_sb body;
    gr_sb_init(&body);
    size_t module_frame = module_body(&R, mt, &body);
    gr_sb entries;
    gr_sb_init(&entries);
    render_thread_entries(&R, &entries);
    render_runs(&R, mt, module_frame);

    /* Notes. */
    gr_sb notes;
    gr_sb_init(&notes);
    size_t nnotes = render_notes(&R, &notes);

    /* Write. */
    write_header(&R, out, &notes, nnotes);
    write_prelude(&R, out);
    line(&R, out, 0, "", 0, NULL);
    write_defs(&R, out);
    line(&R, out, 0, "", 0, NULL);
    if (sh->ngens)
        write_generators(&R, out);
    if (sh->uses_greenlet && mt)
        create_greenlets(&R, out, 0, mt->tid);
    /* Other threads: each created now, waits for its first turn. */
    if (entries.len)
        write_threads(&R, out, &entries);
    if (sh->uses_greenlet || entries.len)
        line(&R, out, 0, "", 0, NULL);
    body_units(&R, out, 0, body.s ? body.s : "", body.len);
    flush(&R, out);
    if (file && !R.werr && fflush(file) != 0)
        R.werr = 1;

    if (notes_out)
        gr_sb_put(notes_out, notes.s ? notes.s : "", notes.len);
    gr_sb_free(&notes);
    gr_sb_free(&entries);
    gr_sb_free(&body);
    gr_sb_free(&R.bodies);
    gr_sb_free(&R.dbuf);
    if (R.defs)
        fclose(R.defs);
    free(R.dedup.slot);
    free(R.vars);
    free(R.var_of);
    free(R.run_var);
    free(R.code_line);
    free(R.name_of);
    gr_sb_free(&R.names);
    gr_sb_free(&R.scratch.sb);
    *nnotes_out = nnotes;
    if (R.terr) {
        errno = R.terr;
        return -2;
    }
    return R.werr ? -1 : 0;
}

size_t gr_script_write(const gr_trace *t, const gr_script_opts *o, gr_sb *out, gr_sb *notes)
{
    gr_shape shape;
    gr_shape_build(&shape, t, o->anonymize);
    size_t n = 0;
    (void)script_write(&shape, o, NULL, out, notes, &n);
    gr_shape_free(&shape);
    return n;
}

int gr_script_write_shape(gr_shape *s, const gr_script_opts *o, FILE *f, gr_sb *notes,
                          size_t *nnotes)
{
    gr_sb buf;
    gr_sb_init(&buf);
    size_t n = 0;
    int rc = script_write(s, o, f, &buf, notes, &n);
    gr_sb_free(&buf);
    if (nnotes)
        *nnotes = n;
    return rc;
}
