/* module.c - the _greenreplay extension module: start, stop, mark.
 *
 * The public Python API is in greenreplay/__init__.py; these functions are
 * its C side.  start() and stop() are called deliberately by the user and
 * raise on bad arguments or an unwritable file; nothing called from inside
 * the recorded program's execution (profile function, greenlet callback,
 * mark) ever raises.
 */
#include "recorder.h"
#include "audit.h"
#include "beside.h"
#include "footholds.h"
#include "gl_load.h"
#include "profile.h"
#include "profile_slot.h"
#include "threads.h"
#include "boot.h"
#include "window.h"
#include "profiler_id.h"

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

static uint64_t next_gen;

/* ---- recorder lifetime ------------------------------------------------- */

static void recorder_free(gr_recorder *r)
{
    if (!r)
        return;
    gr_sampler_free(r->samp.sampler);
    gr_registry_free(r->samp.reg);
    PyMem_RawFree(r->samp.scratch);
    if (r->out.dw != r->w)
        gr_writer_abandon(r->out.dw);
    gr_writer_abandon(r->w);
    gr_writer_abandon(r->samp.ww); /* sub-writers of tw: before it */
    gr_writer_abandon(r->samp.pw);
    gr_writer_abandon(r->tw);
    free(r->out.path);
    gr_ptrmap_free(&r->codes);
    PyMem_Free(r->ours);
    gr_ptrmap_free(&r->ids.greenlets);
    gr_ptrmap_free(&r->ids.weakrefs);
    gr_ptrmap_free(&r->gls.preexisting);
    gr_keymap_free(&r->sw.susp);
    for (uint32_t i = 0; i < r->gls.gl_used; i++)
        Py_XDECREF(r->gls.gl[i].wr);
    PyMem_Free(r->gls.gl);
    PyMem_Free(r->gls.gl_free);
    PyMem_Free(r->code_gl);
    PyMem_Free(r->gls.freed_abandoned);
    r->gls.freed_abandoned = NULL;
    r->gls.nfreed_abandoned = r->gls.cap_freed_abandoned = 0;
    gr_ptrmap_free(&r->gls.gl_index);
    Py_XDECREF(r->ids.strings);
    Py_XDECREF(r->ids.identities);
    Py_XDECREF(r->ids.keep);
    Py_XDECREF(r->follow.threads);
    PyMem_Free(r->follow.adopt);
    Py_XDECREF(r->thread_start[0]);
    Py_XDECREF(r->thread_start[1]);
    PyMem_Free(r->follow.start_sites);
    gr_profiler_table_free(r->ids.profilers);
    PyMem_Free(r->follow.unfollowed);
    Py_XDECREF(r->gls.forget);
    for (size_t i = 0; i < r->out.nrules; i++) {
        free(r->out.rules[i].prefix);
        free(r->out.rules[i].replacement);
    }
    free(r->out.rules);
    Py_XDECREF(r->greenlet_mod);
    Py_XDECREF(r->gl_api.getcurrent);
    Py_XDECREF(r->gl_settrace);
    Py_XDECREF(r->gl_api.str_parent);
    Py_XDECREF(r->gl_api.str_dead);
    Py_XDECREF(r->gl_api.str_gr_frame);
    free(r);
}

/* Parse rules: a sequence of (prefix, replacement) str pairs. */
static int parse_rules(gr_recorder *r, PyObject *rules)
{
    PyObject *seq = PySequence_Fast(rules, "rules must be a sequence of (prefix, replacement) pairs");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    r->out.rules = calloc((size_t)n + 1, sizeof *r->out.rules);
    if (!r->out.rules) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *pre, *rep;
        int keep_line = 1;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss|p", &pre, &rep, &keep_line)) {
            Py_DECREF(seq);
            return -1;
        }
        gr_path_rule *rule = &r->out.rules[r->out.nrules++];
        rule->prefix = strdup(pre);
        rule->replacement = strdup(rep);
        rule->prefix_len = strlen(pre);
        rule->keep_line = keep_line;
        if (!rule->prefix || !rule->replacement) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static void emit_meta(gr_recorder *r, const char *key, const char *value)
{
    uint64_t f[2] = {gr_string_id(r, key), gr_string_id(r, value)};
    gr_emit(r, GR_META, 2, f);
}

/* The names in sys.modules now (a new reference to a list), or NULL. */
static PyObject *module_names(void)
{
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    return modules && PyDict_Check(modules) ? PyDict_Keys(modules) : NULL;
}

/* Take out of sys.modules the names that are not in before (the list
 * module_names gave earlier): modules imported for the recorder alone,
 * which the program would not have.  greenlet's own state is C state
 * (its types and thread states are static): a program that imports
 * greenlet later gets a new package module around the same types,
 * functions and C API. */
static void forget_new_modules(PyObject *before)
{
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *now = module_names();
    if (!before || !now || !modules) {
        Py_XDECREF(now);
        PyErr_Clear();
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(now); i++) {
        PyObject *name = PyList_GET_ITEM(now, i);
        int had = PySequence_Contains(before, name);
        if (had == 0 && PyDict_DelItem(modules, name) < 0)
            PyErr_Clear();
        else if (had < 0)
            PyErr_Clear();
    }
    Py_DECREF(now);
}

/* sys.path_importer_cache as a list of (path, finder, finder._path_mtime)
 * tuples (a new reference), or NULL. */
static PyObject *finder_states(void)
{
    PyObject *cache = PySys_GetObject("path_importer_cache"); /* borrowed */
    if (!cache || !PyDict_Check(cache))
        return NULL;
    PyObject *out = PyList_New(0);
    Py_ssize_t pos = 0;
    PyObject *key, *finder;
    while (out && PyDict_Next(cache, &pos, &key, &finder)) {
        PyObject *mtime = finder != Py_None ? PyObject_GetAttrString(finder, "_path_mtime") : NULL;
        if (!mtime)
            PyErr_Clear();
        PyObject *t = PyTuple_Pack(3, key, finder, mtime ? mtime : Py_None);
        Py_XDECREF(mtime);
        if (!t || PyList_Append(out, t) < 0)
            Py_CLEAR(out);
        Py_XDECREF(t);
    }
    return out;
}

/* Put the path finders back as before (finder_states): a finder made
 * since leaves sys.path_importer_cache, and one that has listed its
 * directory since forgets the listing (invalidate_caches), so the
 * program's own imports list and stat what they would have. */
static void forget_new_finders(PyObject *before)
{
    PyObject *cache = PySys_GetObject("path_importer_cache");
    if (!before || !cache || !PyDict_Check(cache))
        return;
    PyObject *keys = PyDict_Keys(cache);
    for (Py_ssize_t i = 0; keys && i < PyList_GET_SIZE(keys); i++) {
        PyObject *key = PyList_GET_ITEM(keys, i);
        PyObject *finder = PyDict_GetItemWithError(cache, key); /* borrowed */
        PyObject *old = NULL;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(before); j++) {
            PyObject *t = PyList_GET_ITEM(before, j);
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(t, 0), key, Py_EQ);
            if (eq > 0) {
                old = t;
                break;
            }
        }
        if (!old) {
            if (PyDict_DelItem(cache, key) < 0)
                PyErr_Clear();
            continue;
        }
        if (!finder || finder != PyTuple_GET_ITEM(old, 1) || finder == Py_None)
            continue;
        PyObject *mtime = PyObject_GetAttrString(finder, "_path_mtime");
        int same = mtime ? PyObject_RichCompareBool(mtime, PyTuple_GET_ITEM(old, 2), Py_EQ) : 1;
        Py_XDECREF(mtime);
        if (same == 0) {
            PyObject *r = PyObject_CallMethod(finder, "invalidate_caches", NULL);
            Py_XDECREF(r);
        }
        PyErr_Clear();
    }
    Py_XDECREF(keys);
    PyErr_Clear();
}

/* Import greenlet if it can be imported (start(profile=False): no profile
 * event could notice the program's own import later); r->greenlet_mod
 * stays NULL if not.  The program must not find greenlet (or what
 * greenlet's package imports, __future__) in sys.modules unless it
 * imported it itself (a --manual program's start() included): the
 * recorder keeps its references, sys.modules forgets them, and the path
 * finders forget what the import listed. */
static void import_greenlet(gr_recorder *r)
{
    PyObject *before = module_names();
    PyObject *finders = finder_states();
    PyErr_Clear();
    PyObject *mod = PyImport_ImportModule("greenlet");
    if (mod)
        (void)gr_greenlet_resolve(r);
    Py_XDECREF(mod);
    PyErr_Clear();
    if (before) {
        forget_new_modules(before);
        Py_DECREF(before);
    }
    if (finders) {
        forget_new_finders(finders);
        Py_DECREF(finders);
    }
}

/* Whether greenlet can be imported: its spec asked of the import system's
 * finders (importlib's own _find_spec: no audit event, no module loaded),
 * and the path finders put back as before.  Its version, read from its
 * files, goes into r->gl_api.version. */
static int greenlet_findable(gr_recorder *r)
{
    PyObject *finders = finder_states();
    PyErr_Clear();
    PyObject *name = PyUnicode_FromString("_frozen_importlib");
    PyObject *boot = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    PyObject *spec = boot ? PyObject_CallMethod(boot, "_find_spec", "sO", "greenlet", Py_None) : NULL;
    int found = spec && spec != Py_None;
    if (found)
        gr_greenlet_spec_version(r, spec);
    Py_XDECREF(spec);
    Py_XDECREF(boot);
    PyErr_Clear();
    if (finders) {
        forget_new_finders(finders);
        Py_DECREF(finders);
    }
    return found;
}

/* greenlet at start(): read from sys.modules if the program imported it;
 * else, with the profile function, waited for (gl_load.c) when it can be
 * imported; else imported now (import_greenlet). */
static void start_greenlet(gr_recorder *r, int profile)
{
    if (gr_greenlet_resolve(r))
        return;
    if (!profile)
        import_greenlet(r);
    else
        r->gl_api.lazy = greenlet_findable(r);
}

/* ---- sys.setprofile while recording (profile_slot.c) ---------------------- */

/* Put the recorder's sys.setprofile into the sys module (profile on only):
 * same name, module and docstring as the original, which it calls. */
static void wrap_sys_setprofile(gr_recorder *r)
{
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject *cur = sys ? PyObject_GetAttrString(sys, "setprofile") : NULL;
    if (!cur || (PyCFunction_Check(cur) &&
                 ((PyCFunctionObject *)cur)->m_ml == &gr_sys_setprofile_def)) {
        Py_XDECREF(cur);
        Py_XDECREF(sys);
        PyErr_Clear();
        return;
    }
    if (!gr_sys_setprofile_orig) {
        gr_sys_setprofile_orig = cur; /* kept for good: saved references to
                                         ours may call it after stop() */
        Py_INCREF(cur);
        PyObject *doc = PyObject_GetAttrString(cur, "__doc__");
        const char *d = doc && PyUnicode_Check(doc) ? PyUnicode_AsUTF8(doc) : NULL;
        gr_sys_setprofile_def.ml_doc = d ? strdup(d) : NULL;
        Py_XDECREF(doc);
        PyErr_Clear();
    }
    PyObject *name = PyUnicode_FromString("sys");
    PyObject *fn = name ? PyCFunction_NewEx(&gr_sys_setprofile_def, sys, name) : NULL;
    if (!fn || PyObject_SetAttrString(sys, "setprofile", fn) < 0)
        gr_swallow(r);
    Py_XDECREF(fn);
    Py_XDECREF(name);
    Py_DECREF(cur);
    Py_DECREF(sys);
}

/* Give the sys module its own sys.setprofile back if ours is there. */
static void unwrap_sys_setprofile(void)
{
    if (!gr_sys_setprofile_orig)
        return;
    GR_EXC_SAVE(saved);
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject *cur = sys ? PyObject_GetAttrString(sys, "setprofile") : NULL;
    if (cur && PyCFunction_Check(cur) && ((PyCFunctionObject *)cur)->m_ml == &gr_sys_setprofile_def)
        PyObject_SetAttrString(sys, "setprofile", gr_sys_setprofile_orig);
    Py_XDECREF(cur);
    Py_XDECREF(sys);
    PyErr_Clear();
    GR_EXC_RESTORE(saved);
}

/* ---- start ---------------------------------------------------------------- */

PyDoc_STRVAR(start_doc,
"start(path, rules=(), times=False, chunk=0, sampler=None, interval_us=5000,\n"
"      keep=64, max_greenlets=65536)\n--\n\n"
"Start recording this process to the trace file `path` (created or\n"
"truncated).  `rules` is a sequence of (prefix, replacement[, keep_line])\n"
"tuples that rewrite code file names (docs/FORMAT.md section 3); with\n"
"keep_line false, first line numbers under that prefix are recorded as 0.  With `times`, also\n"
"write monotonic timestamps to `path + '.times'`.  `chunk` is the chunk\n"
"size in bytes (0: 64 KiB).  `max_size` caps the trace file in bytes: the\n"
"records past it are dropped and counted (trailer reason 4).  `ring` keeps\n"
"only the last `ring` records (at least; whole chunks) in memory and writes\n"
"the file at stop() and flush(), with a GAP record counting the others;\n"
"the STOP and STACK records of stop() come after them, not in their place.\n"
"`compress` (default true) writes each records chunk as one zstd frame\n"
"(docs/FORMAT.md section 2.1); false writes them uncompressed.\n\n"
"`sampler` ('two-phase', 'hold-lock' or 'seqlock') also runs the reference\n"
"greenlet sampler every `interval_us` microseconds (>= 100), tracking up to\n"
"`max_greenlets` - 1 greenlets alive at once (2 <= max_greenlets <= 2**30; the\n"
"slot of a dead or freed greenlet is reused; greenlets that find every slot\n"
"taken are counted in the META record sampler_untracked_greenlets, never\n"
"sampled) and unwinding and storing `keep` stacks per sample (0 <= keep <=\n"
"8192: the sampler's memory grows with it, docs/PERFORMANCE.md)\n"
"(hold-lock: unwinding all under the lock, storing `keep`); its data go\n"
"to the side channel, which it turns on.  While the program records nothing\n"
"(idle or blocked in C) its samples wait in a ring and a buffer of fixed size\n"
"(1 MiB each, or GREENREPLAY_SAMPLER_RING bytes, 1024 to 64 MiB, read here, once,\n"
"ValueError outside); past them, the buffer is\n"
"thinned (every other sample kept, then a sample every 2, 4, 8... sampling\n"
"times) so that its samples span the whole stretch in the same memory; the\n"
"sampling times without a kept sample are counted in the META record\n"
"sampler_samples_thinned.\n"
"GREENREPLAY_SAMPLER_RING_MAX (bytes, 1024 to 64 MiB, the default; read here,\n"
"once, ValueError outside) caps the ring: a sample larger than the ring takes\n"
"is dropped and counted in the META record sampler_samples_lost_large.\n"
"In passive mode a switch back into\n"
"a greenlet whose every turn since its last real stack was seen is written\n"
"without a stack (flag continued, docs/FORMAT.md section 4); `every_stack`\n"
"true writes the real stack at every switch instead.  With the environment\n"
"variable GREENREPLAY_VERIFY_CONTINUED=1 (read here, once) greenlet is also\n"
"asked at every continued switch; stop() then writes META continued_verified\n"
"and continued_mismatch (counts) and, on a mismatch, continued_mismatch_first\n"
"(\"INDEX TID WRITTEN_GID GREENLET_GID\"), which check reports as a\n"
"switch_consistency violation.  With `profile` false no profile\n"
"function is installed: only the greenlet callback of this thread records\n"
"(for measuring the switch path alone).  Raises RuntimeError if already\n"
"recording, ValueError on bad arguments, OSError if a file cannot be written.\n\n"
"`entry` (a frame, for `greenreplay record`'s whole-program mode) is the\n"
"program's first frame, given from inside a profile function at its `call`\n"
"event: the seed stack is then the frames below it (none for a script) and\n"
"the first record after START is that CALL, so that the recorder's own\n"
"frames are not in the trace.  `entry_c` is the C function that called it\n"
"(exec, under runpy for -m), which then tops the seed stack.");

/* Read the environment variable `name` as a sampler ring size in bytes
 * into *out (unchanged when the variable is unset or empty).  Returns 0, or
 * -1 with ValueError set (naming the variable and its bounds) when it is not
 * a decimal number from GR_SAMPLER_RING_MAX_LEAST to GR_SAMPLER_RING_CAP. */
static int env_ring_bytes(const char *name, size_t *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || *s == '-' || v < GR_SAMPLER_RING_MAX_LEAST || v > GR_SAMPLER_RING_CAP) {
        PyErr_Format(PyExc_ValueError, "%s=%s: must be a number of bytes from %u to %u", name, s,
                     GR_SAMPLER_RING_MAX_LEAST, GR_SAMPLER_RING_CAP);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* start()'s arguments, checked (start_parse), and what they decide. */
typedef struct {
    PyObject *path_obj;           /* owned: the trace path, bytes */
    PyObject *rules;              /* borrowed, or NULL */
    int times;
    Py_ssize_t chunk;
    const char *sampler;
    unsigned long long interval_us;
    Py_ssize_t keep;
    unsigned int max_greenlets;
    int profile;
    unsigned long long max_size, ring;
    const char *switches;
    PyObject *entry, *entry_c;    /* borrowed, or NULL */
    int every_stack;
    int compress;                 /* zstd records chunks (FORMAT.md 2.1) */
    int callback_mode;            /* switches == "callback" */
    int mode;                     /* the sampler's gr_reg_mode, or -1 */
    size_t ring_max;              /* the sampler ring's cap: 0 for the default */
    size_t ring_bytes;            /* the sampler ring's capacity: 0 for the default */
} start_opts;

/* The sampler's arguments and environment (start(sampler=...)). */
static int start_parse_sampler(start_opts *o)
{
    o->mode = gr_sampler_mode(o->sampler);
    if (o->mode < 0 || o->interval_us < 100 || o->max_greenlets < 2 || o->max_greenlets > (1u << 30)) {
        PyErr_SetString(PyExc_ValueError,
                        "sampler must be 'two-phase', 'hold-lock' or 'seqlock', interval_us >= 100, "
                        "2 <= max_greenlets <= 2**30");
        return -1;
    }
    /* The sampler's buffers grow with keep (sampler.h,
     * GR_SAMPLER_KEEP_MAX): a huge one is refused, not allocated. */
    if (o->keep < 0 || o->keep > GR_SAMPLER_KEEP_MAX) {
        PyErr_Format(PyExc_ValueError, "keep=%zd: must be a number of stacks per sample from 0 to %u", o->keep,
                     GR_SAMPLER_KEEP_MAX);
        return -1;
    }
    o->times = 1;
    /* GREENREPLAY_SAMPLER_RING_MAX=BYTES: the cap of the sampler's
     * ring (sampler.h gr_sampler_start, ring_max), for tests that make
     * over-large samples.  GREENREPLAY_SAMPLER_RING=BYTES: the capacity
     * of the sampler's ring and own buffer (sampler.h), for tests that
     * fill them quickly.  Each read here, once; unset or empty: the
     * default; refused outside their bounds (env_ring_bytes). */
    if (env_ring_bytes("GREENREPLAY_SAMPLER_RING_MAX", &o->ring_max) < 0 ||
        env_ring_bytes("GREENREPLAY_SAMPLER_RING", &o->ring_bytes) < 0)
        return -1;
    return 0;
}

/* start()'s arguments into *o, checked.  0, or -1 with an exception set
 * (o->path_obj then released). */
static int start_parse(PyObject *args, PyObject *kwargs, start_opts *o)
{
    static char *kwlist[] = {"path", "rules", "times", "chunk", "sampler", "interval_us", "keep",
                             "max_greenlets", "profile", "max_size", "ring", "switches", "entry",
                             "entry_c", "every_stack", "compress", NULL};
    *o = (start_opts){.interval_us = 5000, .keep = 64, .max_greenlets = 65536, .profile = 1,
                      .switches = "passive", .mode = -1, .compress = 1};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|Opnz$KnIpKKsOOpp:start", kwlist,
                                     PyUnicode_FSConverter, &o->path_obj, &o->rules, &o->times, &o->chunk,
                                     &o->sampler, &o->interval_us, &o->keep, &o->max_greenlets, &o->profile,
                                     &o->max_size, &o->ring, &o->switches, &o->entry, &o->entry_c,
                                     &o->every_stack, &o->compress))
        return -1;
    o->callback_mode = strcmp(o->switches, "callback") == 0;
    if (!o->callback_mode && strcmp(o->switches, "passive") != 0) {
        PyErr_SetString(PyExc_ValueError, "switches must be 'passive' or 'callback'");
        goto fail;
    }
    if (o->entry == Py_None)
        o->entry = NULL;
    if (o->entry && !PyFrame_Check(o->entry)) {
        PyErr_SetString(PyExc_TypeError, "entry must be a frame or None");
        goto fail;
    }
    if (o->ring && (o->times || o->sampler || o->max_size)) {
        PyErr_SetString(PyExc_ValueError, "ring mode keeps the trace in memory: it cannot be combined "
                                          "with times, a sampler or max_size");
        goto fail;
    }
    if (o->sampler && start_parse_sampler(o) < 0)
        goto fail;
    if (gr_active) {
        PyErr_SetString(PyExc_RuntimeError, "greenreplay is already recording");
        goto fail;
    }
    if (o->chunk < 0 || (size_t)o->chunk > GR_CHUNK_MAX) {
        PyErr_Format(PyExc_ValueError, "chunk must be between 0 and %u bytes", GR_CHUNK_MAX);
        goto fail;
    }
    return 0;
fail:
    Py_CLEAR(o->path_obj);
    return -1;
}

/* A new recorder's maps, dictionaries and options (not active yet), or
 * NULL with an exception set (MemoryError; what was made is freed). */
static gr_recorder *start_recorder_new(PyObject *module, const start_opts *o)
{
    gr_recorder *r = calloc(1, sizeof *r);
    if (!r) {
        PyErr_NoMemory();
        return NULL;
    }
    gr_ptrmap_init(&r->codes);
    gr_ptrmap_init(&r->ids.greenlets);
    gr_ptrmap_init(&r->ids.weakrefs);
    gr_ptrmap_init(&r->gls.preexisting);
    r->sw.susp.keep = gr_susp_holds;
    r->sw.susp.ctx = r;
    r->sw.callback_mode = o->callback_mode;
    r->out.profile_on = o->profile;
    r->out.hide_ours = 1; /* both modes (recorder.h, gr_code_ours) */
    r->ids.strings = PyDict_New();
    r->ids.identities = PyDict_New();
    r->ids.keep = PyList_New(0);
    r->follow.threads = PyList_New(0);
    gr_ptrmap_init(&r->gls.gl_index);
    r->gls.forget = PyObject_GetAttrString(module, "_forget");
    r->gl_api.str_parent = PyUnicode_InternFromString("parent");
    r->gl_api.str_dead = PyUnicode_InternFromString("dead");
    r->gl_api.str_gr_frame = PyUnicode_InternFromString("gr_frame");
    if (!r->ids.strings || !r->ids.identities || !r->ids.keep || !r->follow.threads || !r->gls.forget ||
        !r->gl_api.str_parent || !r->gl_api.str_dead || !r->gl_api.str_gr_frame) {
        recorder_free(r);
        return NULL;
    }
    return r;
}

/* The trace's writers: the file (ring mode: memory writers, the file
 * checked now and written at stop) and the side channel.  0, or -1 with
 * an exception set. */
static int start_open_files(gr_recorder *r, start_opts *o, const char *path)
{
    if (o->ring) {
        /* Check now that the file can be written; it is written at stop. */
        gr_writer *probe = gr_writer_open(path, GR_STREAM_CANONICAL, (size_t)o->chunk);
        if (!probe) {
            PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
            return -1;
        }
        gr_writer_discard(probe);
        /* Smaller chunks keep the ring closer to `ring` records (it keeps
         * whole chunks): 4 KiB holds about a thousand. */
        r->w = gr_writer_open_memory(GR_STREAM_CANONICAL, o->chunk ? (size_t)o->chunk : 4096, o->ring);
        r->out.dw = gr_writer_open_memory(GR_STREAM_CANONICAL, (size_t)o->chunk, 0);
        if (!r->w || !r->out.dw) {
            PyErr_NoMemory();
            return -1;
        }
        /* Carried to the file each snapshot writes (gr_writer_copy_chunks). */
        gr_writer_set_compress(r->w, o->compress);
        gr_writer_set_compress(r->out.dw, o->compress);
    } else {
        /* Under a size cap, chunks of an eighth of it (1-64 KiB) lose
         * little at the cap: a chunk that does not fit is dropped whole. */
        unsigned long long max_size = o->max_size;
        if (max_size && !o->chunk)
            o->chunk = (Py_ssize_t)(max_size / 8 < 1024 ? 1024 : max_size / 8 > 65536 ? 65536 : max_size / 8);
        r->w = gr_writer_open(path, GR_STREAM_CANONICAL, (size_t)o->chunk);
        if (!r->w) {
            PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
            return -1;
        }
        r->out.dw = r->w;
        if (gr_writer_set_compress(r->w, o->compress) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        if (max_size)
            gr_writer_set_limit(r->w, max_size);
    }
    if (o->times) {
        PyObject *tp = PyBytes_FromFormat("%s.times", path);
        if (!tp)
            return -1;
        r->tw = gr_writer_open(PyBytes_AS_STRING(tp), GR_STREAM_SIDE, (size_t)o->chunk);
        if (!r->tw) {
            PyErr_SetFromErrnoWithFilename(PyExc_OSError, PyBytes_AS_STRING(tp));
            Py_DECREF(tp);
            return -1;
        }
        Py_DECREF(tp);
    }
    return 0;
}

/* Context.run's method, known by its PyMethodDef (switches.c,
 * context_step). */
static void note_context_run(gr_recorder *r)
{
    PyObject *ctx = PyContext_New();
    PyObject *run = ctx ? PyObject_GetAttrString(ctx, "run") : NULL;
    if (run && PyCFunction_Check(run))
        r->sw.ctx_run = ((PyCFunctionObject *)run)->m_ml;
    Py_XDECREF(run);
    Py_XDECREF(ctx);
    PyErr_Clear();
}

/* The META records of the environment and the options (they hold no
 * paths and no times), with the switch-detection options they name. */
static void start_emit_meta(gr_recorder *r, const start_opts *o)
{
    char version[32];
    snprintf(version, sizeof version, "%s", Py_GetVersion());
    version[strcspn(version, " ")] = '\0';
    emit_meta(r, "python", version);
    emit_meta(r, "implementation", "cpython");
    /* Loaded, or waited for (the version its files name, gl_load.c). */
    emit_meta(r, "greenlet", r->greenlet_mod || r->gl_api.lazy ? r->gl_api.version : "none");
    if (!o->profile)
        emit_meta(r, "profile", "off");
    emit_meta(r, "switches", o->callback_mode ? "callback" : "passive");
    const char *jit = gr_jit_state(); /* compat.h: what recording turns off */
    if (jit)
        emit_meta(r, "jit", jit);
    /* Continued switches (switches.c): passive mode without the sampler's
     * registry, outside ring mode, on 3.9-3.11 (compat.h,
     * GR_CONTINUED_SWITCHES), unless every switch must carry its real
     * stack. */
    r->sw.continued_ok = GR_CONTINUED_SWITCHES && !o->callback_mode && o->mode < 0 && !o->ring && !o->every_stack;
    /* The self-check of continued switches (switches.c, verify_continued). */
    {
        const char *v = getenv("GREENREPLAY_VERIFY_CONTINUED");
        r->sw.verify_continued = v && strcmp(v, "1") == 0;
    }
    gr_sw_refresh(r);
    if (o->every_stack)
        emit_meta(r, "switch_stacks", "every");
}

/* The sampler's registry and side-channel chunks (its META records
 * first); the sampler thread starts last (start_sampler).  0, or -1 with
 * MemoryError. */
static int start_sampler_registry(gr_recorder *r, const start_opts *o)
{
    char iv[32];
    snprintf(iv, sizeof iv, "%llu", o->interval_us);
    emit_meta(r, "sampler", gr_sampler_mode_name(o->mode));
    emit_meta(r, "sampler_interval_us", iv);
    r->samp.reg = gr_registry_new((enum gr_reg_mode)o->mode, o->max_greenlets);
    /* The side channel's 'W' and 'P' chunks, written into it during
     * the run (docs/FORMAT.md §5, format 1.3). */
    r->samp.ww = gr_writer_open_sub(r->tw, GR_CHUNK_SWITCHES, (size_t)o->chunk);
    r->samp.pw = gr_writer_open_sub(r->tw, GR_CHUNK_SAMPLES, (size_t)o->chunk);
    if (!r->samp.reg || !r->samp.ww || !r->samp.pw) {
        PyErr_NoMemory();
        return -1;
    }
    gr_unwind_init();
    return 0;
}

/* The code ids of the recorder's mark() and stop(), its generation, and
 * the C functions that start threads.  0, or -1 with an exception set. */
static int start_own_functions(gr_recorder *r, PyObject *module)
{
    const char *names[2] = {"mark", "stop"};
    uint32_t *ids[2] = {&r->ids.mark_code, &r->ids.stop_code};
    for (int i = 0; i < 2; i++) {
        PyObject *fn = PyObject_GetAttrString(module, names[i]);
        if (!fn)
            return -1;
        *ids[i] = gr_cfunc_id(r, fn);
        Py_DECREF(fn);
    }

    r->follow.thread_start_id[0] = r->follow.thread_start_id[1] = UINT32_MAX;
    r->gen = ++next_gen;
    r->tls_key = r->gen << 32;
    r->follow.threads_sweep_at = 64;
    /* The C functions that start threads (follow.c); _thread is
     * imported at interpreter start-up. */
    PyObject *thread_name = PyUnicode_FromString("_thread");
    PyObject *thread_mod = thread_name ? PyImport_GetModule(thread_name) : NULL;
    Py_XDECREF(thread_name);
    if (thread_mod) {
        r->thread_start[0] = PyObject_GetAttrString(thread_mod, "start_new_thread");
        if (!r->thread_start[0])
            PyErr_Clear();
        r->thread_start[1] = PyObject_GetAttrString(thread_mod, "start_joinable_thread");
        if (!r->thread_start[1])
            PyErr_Clear();
        Py_DECREF(thread_mod);
    }
    PyErr_Clear();
    return 0;
}

/* The code id of this C function, start, for the top of the starting
 * thread's seed when a profile function of the program is kept there
 * (profile_slot.c, gr_profile_keep): that function was given its c_call,
 * so its c_return comes (to the recorder, then to it).  0 inside a
 * profile or trace function, where neither is reported. */
static uint32_t start_seen_by_kept(gr_recorder *r, PyObject *module, PyThreadState *me)
{
    if (gr_tstate_tracing(me) > 0)
        return 0;
    PyObject *fn = PyObject_GetAttrString(module, "start");
    uint32_t id = fn ? gr_cfunc_id(r, fn) : 0;
    Py_XDECREF(fn);
    PyErr_Clear();
    return id;
}

/* The calling thread t (state me) at start: its Python stack now is its
 * seed, then START (and in whole-program mode the program's first CALL).
 * This C function is not in the seed: its c_call was not seen, and
 * CPython does not report the c_return of a call that began while
 * profiling was off; unless a profile function the program set before
 * start() is kept (returned: 1), which saw the c_call. */
static int start_this_thread(gr_recorder *r, gr_thread *t, PyObject *module, PyThreadState *me,
                             const start_opts *o)
{
    int kept = o->profile && gr_profile_keep(r, t, me);
    if (o->entry) { /* whole-program mode: the seed ends below the program's frame */
        PyFrameObject *below = PyFrame_GetBack((PyFrameObject *)o->entry);
        gr_thread_first_sight(r, t, below, o->entry_c && o->entry_c != Py_None ? gr_cfunc_id(r, o->entry_c) : 0,
                              0);
        Py_XDECREF(below);
    } else {
        /* --manual (or the program's own start()): the seed leaves out
         * greenreplay's start() it was called from (collect_stack), and
         * the C calls that frame still makes are not recorded either.  A
         * profile function kept from before start() saw the c_call of this
         * C function: when the program called it itself, its c_return is
         * the program's, so the seed ends with it. */
        PyFrameObject *cur = PyEval_GetFrame(); /* borrowed */
        int ours = cur && gr_code_ours(r, gr_code_id(r, gr_frame_code(cur)));
        gr_thread_first_sight(r, t, cur, kept && !ours ? start_seen_by_kept(r, module, me) : 0, 0);
        if (ours)
            t->ours_frame = cur;
    }
    uint64_t f[2] = {t->tid, t->cur_gid};
    gr_emit(r, GR_START, 2, f);
    gr_note_greenlet_callback(r, t, 1);
    if (kept)
        gr_profile_kept_hook(r, t);
    if (o->entry)
        gr_emit3(r, GR_CALL, t->tid, t->cur_gid, gr_code_id(r, gr_frame_code((PyFrameObject *)o->entry)));
    return kept;
}

/* The recorder's profile function into every thread's slot (with
 * profile=True): threads that already exist are each seen at their first
 * event; the calling thread t (state me) last, with sys.setprofile
 * wrapped. */
static void start_profiling(gr_recorder *r, gr_thread *t, PyThreadState *me, const start_opts *o, int kept)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(me->interp); ts && o->profile;
         ts = PyThreadState_Next(ts)) {
        if (ts == me)
            continue;
        gr_thread *other = gr_thread_new(r, ts);
        if (other) {
            other->at_start = 1; /* may be inside a greenlet already: ask at first sight */
            other->had_events = 1; /* the recorder's function is installed there */
            gr_own_change_begin(r);
            if (!gr_profile_keep(r, other, ts) && gr_own_set_profile(ts, gr_profile, NULL) < 0)
                gr_swallow(r);
            gr_own_change_end(r);
            Py_DECREF(other);
        }
    }
    if (o->profile) {
        wrap_sys_setprofile(r);
        /* No object: sys.getprofile() keeps returning None (threads.c finds
         * the thread's state itself), or the kept function's. */
        gr_own_change_begin(r);
        if (!kept && gr_own_set_profile(me, gr_profile, NULL) < 0)
            gr_swallow(r);
        gr_own_change_end(r);
        t->had_events = 1;
    }
}

/* The sampler thread, once everything it reads is in place; recording
 * goes on without samples if it cannot start. */
static void start_sampler(gr_recorder *r, const start_opts *o)
{
    if (!r->samp.reg)
        return;
    r->samp.sampler = gr_sampler_start(r->samp.reg, &r->nevents, o->interval_us * 1000u, (uint32_t)o->keep,
                                       o->ring_bytes, o->ring_max);
    if (!r->samp.sampler)
        gr_swallow(r); /* recording goes on without samples */
}

static PyObject *mod_start(PyObject *module, PyObject *args, PyObject *kwargs)
{
    start_opts o;
    if (start_parse(args, kwargs, &o) < 0)
        return NULL;
    const char *path = PyBytes_AS_STRING(o.path_obj);
    gr_recorder *r = start_recorder_new(module, &o);
    if (!r) {
        Py_DECREF(o.path_obj);
        return NULL;
    }
    if (o.rules && o.rules != Py_None && parse_rules(r, o.rules) < 0)
        goto fail;
    r->out.path = strdup(path);
    if (!r->out.path) {
        PyErr_NoMemory();
        goto fail;
    }
    if (start_open_files(r, &o, path) < 0)
        goto fail;
    Py_CLEAR(o.path_obj);
    start_greenlet(r, o.profile);
    note_context_run(r);
    start_emit_meta(r, &o);
    /* 3.12+: the tool that watches beside a program's profile function
     * (beside.c) is on from the start, like the recorder's own function:
     * turned on later, it would not reach the frames of greenlets
     * suspended then. */
    if (o.profile)
        (void)gr_beside_on(r);
    gr_note_preexisting(r);
    if (o.mode >= 0 && start_sampler_registry(r, &o) < 0)
        goto fail;
    if (start_own_functions(r, module) < 0)
        goto fail;
    gr_active = r;
    gr_crash_install();
    clock_gettime(CLOCK_MONOTONIC, &r->out.last);

    PyThreadState *me = PyThreadState_Get();
    gr_thread *t = gr_thread_current(r);
    if (!t) {
        gr_active = NULL;
        goto fail;
    }
    int kept = start_this_thread(r, t, module, me, &o);
    start_profiling(r, t, me, &o, kept);
    start_sampler(r, &o);
    Py_RETURN_NONE;

fail:
    Py_XDECREF(o.path_obj);
    recorder_free(r);
    return NULL;
}

/* ---- stop ------------------------------------------------------------------ */

/* Current frame of thread t if its thread state still exists (threads that
 * ended freed theirs), new reference or NULL. */
static PyFrameObject *live_thread_frame(gr_thread *t, int *alive)
{
    *alive = gr_thread_alive(t);
    return *alive ? gr_tstate_frame(t->tstate) : NULL;
}

/* The top of the stopping thread's stack for its STACK record, and the C
 * function to put on it (our stop).  Inside the recorder's tracing guard
 * (r->own.quiet: the uncaught exception's stop, audit.c) the frames above the
 * guard and the stop were never reported, so the stack ends at the frame
 * the guard was entered from. */
static PyFrameObject *stop_top(gr_recorder *r)
{
    return r->own.quiet ? r->own.quiet_top : PyEval_GetFrame();
}

static uint32_t stop_c(gr_recorder *r)
{
    return r->own.quiet ? 0 : r->ids.stop_code;
}

/* One STACK record per live greenlet seen, in gid order; with greenlet
 * missing, one per thread (gid 0). */
static int by_gid(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* emit_live_stacks without greenlet: each thread's running stack. */
static void live_stacks_threads(gr_recorder *r, gr_thread *me, Py_ssize_t nthreads)
{
    for (Py_ssize_t i = 0; i < nthreads; i++) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (!t->tid)
            continue;
        int alive = 1;
        PyFrameObject *top = t == me ? stop_top(r) : NULL;
        PyFrameObject *other = t == me ? NULL : live_thread_frame(t, &alive);
        if (!alive)
            continue;
        uint64_t f[3] = {t->tid, t->cur_gid, GR_STACK_RUNNING}; /* 0, or a main greenlet that waited */
        gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT, top ? top : other, t == me ? stop_c(r) : 0);
        Py_XDECREF(other);
    }
}

/* The greenlet gid (state e) is the main greenlet of a thread that never
 * used greenlet (passive mode did not ask): its STACK, running on its
 * thread.  1 if so, else 0 (nothing written). */
static int live_stack_pending(gr_recorder *r, gr_thread *me, Py_ssize_t nthreads, uint32_t gid, gr_gl *e)
{
    gr_thread *pend = NULL;
    for (Py_ssize_t i = 0; !e->addr && i < nthreads; i++) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (t->tid && t->gl_pending && t->cur_gid == gid)
            pend = t;
    }
    if (pend) {
        /* The main greenlet of a thread that never used greenlet
         * (passive mode did not ask): running on its thread. */
        int alive = 1;
        PyFrameObject *other = pend != me ? live_thread_frame(pend, &alive) : NULL;
        if (alive) {
            uint64_t f[3] = {pend->tid, gid, GR_STACK_RUNNING};
            gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT,
                          pend == me ? stop_top(r) : other, pend == me ? stop_c(r) : 0);
        }
        Py_XDECREF(other);
        return 1;
    }
    return 0;
}

/* The STACK (or DEAD) of greenlet gid (state e) at stop: running on a
 * thread, suspended, dead, or abandoned by a thread that ended. */
static void live_stack_greenlet(gr_recorder *r, gr_thread *me, Py_ssize_t nthreads, uint32_t gid, gr_gl *e)
{
    int is_main = (e->state & GR_GLS_MAIN) != 0;
    uint32_t gtid = e->tid;
    gr_thread *runner = NULL, *owner = NULL;
    PyObject *g = e->addr && e->wr ? gr_weakref_get(e->wr) : NULL;
    for (Py_ssize_t i = 0; i < nthreads; i++) {
        gr_thread *t = (gr_thread *)PyList_GET_ITEM(r->follow.threads, i);
        if (g && t->tid && t->cur_gid == gid && t->cur_g == g)
            runner = t;
        if (t->tid && t->tid == gtid)
            owner = t;
    }
    int owner_alive = 1;
    if (owner && owner != me) {
        PyFrameObject *of = live_thread_frame(owner, &owner_alive);
        Py_XDECREF(of);
    }
    /* A thread that ended before stop may have been dropped from
     * r->follow.threads (GR_GLS_GONE): its greenlets keep its tid. */
    int gone = !owner && (e->state & GR_GLS_GONE);
    if (gone)
        owner_alive = 0;
    uint64_t tid = owner ? owner->tid : gone ? gtid : me->tid;
    int dead = 1;
    if (g) {
        dead = gr_greenlet_dead(r, g) == 1;
        PyErr_Clear();
    }
    if (dead || !g) {
        /* Died unseen (no event of its own since), or freed.  A main
         * greenlet ends with its thread: nothing to report.  One whose
         * thread ended before it finished is abandoned: its frames are
         * gone with the thread (greenlet kills or drops them). */
        if (!is_main && owner_alive)
            gr_emit_dead(r, gid, tid);
        else if (!is_main && g) {
            uint64_t f[3] = {tid, gid, GR_STACK_THREAD_ENDED};
            gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT, NULL, 0);
        }
        Py_XDECREF(g);
        return;
    }
    int alive = 1;
    PyFrameObject *other = runner && runner != me ? live_thread_frame(runner, &alive) : NULL;
    if (runner && alive) {
        uint64_t f[3] = {runner->tid, gid, GR_STACK_RUNNING};
        gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT,
                      runner == me ? stop_top(r) : other, runner == me ? stop_c(r) : 0);
        Py_XDECREF(other);
    } else if ((runner || gone) && is_main) {
        /* The main greenlet of a thread that has ended. */
    } else if (!owner_alive || runner) {
        /* Abandoned: its thread ended before stop.  greenlet drops its
         * frames when it cleans up after that thread, at a moment that
         * varies from run to run, so none are written (the checker
         * lists the open ones from the profile events). */
        uint64_t f[3] = {tid, gid, GR_STACK_THREAD_ENDED};
        gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT, NULL, 0);
    } else {
        /* Suspended: its frames from gr_frame, under its own thread
         * (cut where greenlet cuts that chain). */
        PyObject *fr = PyObject_GetAttr(g, r->gl_api.str_gr_frame);
        if (!fr)
            PyErr_Clear();
        uint64_t f[3] = {tid, gid, r->gl_api.gl_chain_cut && fr && PyFrame_Check(fr) ? GR_STACK_CUT : 0};
        gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT,
                      fr && PyFrame_Check(fr) ? (PyFrameObject *)fr : NULL, 0);
        Py_XDECREF(fr);
    }
    Py_DECREF(g);
}

static void emit_live_stacks(gr_recorder *r, gr_thread *me)
{
    Py_ssize_t nthreads = PyList_GET_SIZE(r->follow.threads);
    if (!r->greenlet_mod) {
        live_stacks_threads(r, me, nthreads);
        return;
    }
    /* The greenlets still tracked (alive, or freed with their end not yet
     * written), in gid order so that the bytes repeat. */
    uint32_t *gids = PyMem_Malloc(((size_t)r->gls.gl_used + 1) * sizeof *gids);
    size_t ng = 0;
    for (uint32_t i = 0; gids && i < r->gls.gl_used; i++)
        if (gr_ptrmap_get(&r->gls.gl_index, GR_GL_KEY(r->gls.gl[i].gid), 0) == i + 1)
            gids[ng++] = r->gls.gl[i].gid;
    if (gids && ng > 1)
        qsort(gids, ng, sizeof *gids, by_gid);
    for (size_t k = 0; k < ng; k++) {
        uint32_t gid = gids[k];
        gr_gl *e = gr_gl_of(r, gid);
        if (!e || (e->state & GR_GLS_DEAD))
            continue;
        if (!live_stack_pending(r, me, nthreads, gid, e))
            live_stack_greenlet(r, me, nthreads, gid, e);
    }
    PyMem_Free(gids);
    /* Freed unfinished after their thread ended (recorder.c): abandoned
     * like those still alive, with no frames written. */
    for (size_t i = 0; i < r->gls.nfreed_abandoned; i++) {
        uint64_t f[3] = {r->gls.freed_abandoned[i] >> 32, r->gls.freed_abandoned[i] & 0xffffffffu,
                         GR_STACK_THREAD_ENDED};
        gr_emit_stack(r, GR_STACK, 3, f, 2, GR_STACK_CUT, NULL, 0);
    }
    r->gls.nfreed_abandoned = 0;
}

/* Ring mode: write the trace file from memory (a temporary file renamed
 * over it, so readers never see half of it): header, every definition, a
 * GAP record counting the records the ring dropped, the records it holds,
 * trailer.  Returns 0 or -1 (errno set). */
static int write_ring(gr_recorder *r, int reason)
{
    size_t n = strlen(r->out.path);
    char *tmp = malloc(n + 8);
    if (!tmp)
        return -1;
    snprintf(tmp, n + 8, "%s.tmp", r->out.path);
    gr_writer *f = gr_writer_open(tmp, GR_STREAM_CANONICAL, 0);
    if (!f) {
        free(tmp);
        return -1;
    }
    int rc = gr_writer_copy_chunks(f, r->out.dw);
    uint8_t gap[1 + GR_VARINT_MAX], *q = gap;
    *q++ = GR_GAP;
    q = gr_put_varint(q, r->w->evicted);
    if (rc == 0 && r->w->evicted)
        rc = gr_writer_append(f, gap, (size_t)(q - gap));
    if (rc == 0)
        rc = gr_writer_copy_chunks(f, r->w);
    uint64_t trailer[5] = {r->w->held + r->w->records, r->w->dropped + r->out.dw->dropped, r->errors,
                           (uint64_t)reason, r->out.replaced};
    if (gr_writer_finish(f, trailer, r->out.replaced ? 5 : 4) < 0)
        rc = -1;
    if (rc == 0 && rename(tmp, r->out.path) < 0)
        rc = -1;
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

PyDoc_STRVAR(flush_doc,
"flush()\n--\n\n"
"Make the trace file current without stopping: write the buffered chunk\n"
"(and the side channel's); in ring mode, write the whole file from memory\n"
"(trailer reason 5, snapshot).  Returns the number of indexed records\n"
"recorded so far, or None when not recording.  Never raises.");

static PyObject *mod_flush(PyObject *module, PyObject *unused)
{
    gr_recorder *r = gr_active;
    if (!r)
        Py_RETURN_NONE;
    if (r->out.dw != r->w) {
        if (write_ring(r, GR_STOP_SNAPSHOT) < 0)
            r->errors++;
    } else {
        gr_writer_flush(r->w);
        gr_side_drain(r);
        if (r->samp.ww) {
            gr_writer_flush(r->samp.ww);
            gr_writer_flush(r->samp.pw);
        }
        if (r->tw)
            gr_writer_flush(r->tw);
    }
    return PyLong_FromUnsignedLongLong(atomic_load(&r->nevents));
}

PyDoc_STRVAR(stop_doc,
"stop(reason=1)\n--\n\n"
"Stop recording: write STOP and the live greenlets' stacks, remove the\n"
"profile function from every thread where it is ours, put back the\n"
"greenlet trace callback this thread had, write the trailer and close the\n"
"file.  `reason` goes into the trailer (1 stop() called, 2 interpreter\n"
"exit).  Returns the number of indexed records written, or None when not\n"
"recording.  Raises OSError if the trace could not be written completely.");

/* The end of the calling thread's recording at stop(): the sampler
 * joined, this thread's switch and profile slot as at a mark, STOP, and
 * the live stacks.  Returns the calling thread's gr_thread, or NULL. */
static gr_thread *stop_this_thread(gr_recorder *r)
{
    gr_sampler_stop(r->samp.sampler); /* joins; the thread never takes the GIL */
    gr_thread *me = gr_thread_current(r);
    if (me && !me->tid) /* stop() on a thread never seen */
        gr_thread_first_sight(r, me, stop_top(r), stop_c(r), 1);
    if (r->gl_api.watch)
        gr_greenlet_watch(r, me);
    if (me && r->greenlet_mod && !me->gl_pending) {
        PyObject *g = gr_current_greenlet(r);
        if (g && g != me->cur_g)
            gr_switch_seen(r, me, g, stop_top(r), 1, 0);
        Py_XDECREF(g);
    }
    if (me) {
        gr_profile_slot_at_mark(r, me, PyThreadState_Get());
        /* Ring mode: the ring stops dropping here, so that STOP and a
         * STACK per live greenlet (greenlet's own tests leave over 100,000
         * of them) are written after the program's last records instead
         * of pushing every one of them out of the ring.  Their memory is
         * that of the greenlets the recorder tracks already. */
        if (r->w != r->out.dw)
            r->w->keep = 0;
        uint64_t f[2] = {me->tid, me->cur_gid};
        gr_emit(r, GR_STOP, 2, f);
        emit_live_stacks(r, me);
    }
    return me;
}

/* Uninstall at stop(): the program's own profile functions get their
 * slots back, ours is removed wherever it is, and this thread's greenlet
 * callback (me) is put back. */
static void stop_uninstall(gr_recorder *r, gr_thread *me)
{
    gr_slots_give_back(r);
    unwrap_sys_setprofile();
    PyThreadState *cur = PyThreadState_Get();
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(cur->interp); ts; ts = PyThreadState_Next(ts)) {
        if (ts->c_profilefunc != gr_profile)
            continue;
        gr_own_change_begin(r);
        if (gr_own_set_profile(ts, NULL, NULL) < 0)
            PyErr_Clear();
        gr_own_change_end(r);
    }
    /* Callback mode: the greenlet callback of this thread, if it is still
     * ours.  Other threads' callbacks see the generation change and put
     * theirs back at their next switch. */
    if (me)
        gr_put_back_callback(me);
}

/* META records of the sampler's losses (after its last drain). */
static void stop_meta_sampler(gr_recorder *r)
{
    if (r->samp.reg && r->samp.reg->overflow) {
        /* Greenlets that found every registry slot taken (more alive at
         * once than its capacity) were not tracked by the sampler: say so
         * (check --stall warns). */
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->samp.reg->overflow);
        emit_meta(r, "sampler_untracked_greenlets", n);
    }
    if (r->samp.sampler && r->samp.sampler->lost_full) {
        /* Sampling times skipped because the sampler's ring and own buffer
         * were full and the own buffer too small to thin (sampler.h
         * gr_sampler_drain).  A count (META records hold
         * no times: where the samples are missing, the 'P' entries' t_ns
         * say); check --stall warns. */
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->samp.sampler->lost_full);
        emit_meta(r, "sampler_samples_lost_full", n);
    }
    if (r->samp.sampler && r->samp.sampler->thinned) {
        /* Sampling times without a kept sample while the program recorded
         * nothing for longer than the ring and own buffer hold: the own
         * buffer was thinned to stay spread over the whole stretch
         * (sampler.h gr_sampler_drain); check --stall warns. */
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->samp.sampler->thinned);
        emit_meta(r, "sampler_samples_thinned", n);
    }
    if (r->samp.sampler && r->samp.sampler->lost_large) {
        /* Samples above the ring's greatest entry (half of it: only with
         * a GREENREPLAY_SAMPLER_RING_MAX below two of the largest
         * samples): dropped when taken, counted, never in the trailer's
         * sample count. */
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->samp.sampler->lost_large);
        emit_meta(r, "sampler_samples_lost_large", n);
    }
}

/* META records of switch detection: the self-check of continued switches
 * and the switches unseen inside the program's profile function. */
static void stop_meta_switches(gr_recorder *r)
{
    if (r->sw.verify_continued) {
        /* GREENREPLAY_VERIFY_CONTINUED=1: how many continued switches were
         * checked against greenlet, how many it contradicted, and the first
         * of those ("INDEX TID WRITTEN_GID GREENLET_GID"). */
        char n[96];
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->sw.cont_verified);
        emit_meta(r, "continued_verified", n);
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->sw.cont_mismatch);
        emit_meta(r, "continued_mismatch", n);
        if (r->sw.cont_mismatch) {
            snprintf(n, sizeof n, "%llu %llu %llu %llu", (unsigned long long)r->sw.cont_first[0],
                     (unsigned long long)r->sw.cont_first[1], (unsigned long long)r->sw.cont_first[2],
                     (unsigned long long)r->sw.cont_first[3]);
            emit_meta(r, "continued_mismatch_first", n);
        }
    }
    if (r->sw.prof_switches) {
        /* Passive mode: greenlets ran inside the program's own profile
         * function, unseen (profile.c, gr_profile_chain): how many of its
         * calls, and the first ("INDEX TID GID" of the event it was
         * called for). */
        char n[96];
        snprintf(n, sizeof n, "%llu", (unsigned long long)r->sw.prof_switches);
        emit_meta(r, "switches_in_profile_function", n);
        snprintf(n, sizeof n, "%llu %llu %llu", (unsigned long long)r->sw.prof_switch_first[0],
                 (unsigned long long)r->sw.prof_switch_first[1], (unsigned long long)r->sw.prof_switch_first[2]);
        emit_meta(r, "switches_in_profile_function_first", n);
    }
}

/* META records of the threads started while recording and never
 * reached. */
static void stop_meta_threads(gr_recorder *r)
{
    for (size_t i = 0; i < r->follow.nstart_sites; i++) {
        /* Threads started while recording that the recorder never went
         * into (follow.c): per call site,
         * "COUNT CODE LINE VIA" (docs/FORMAT.md section 3, META). */
        const gr_start_site *s = &r->follow.start_sites[i];
        if (s->started <= s->followed || s->handover)
            continue;
        char n[160];
        snprintf(n, sizeof n, "%llu %u %u %s", (unsigned long long)(s->started - s->followed), s->code, s->line,
                 s->via);
        emit_meta(r, "threads_unreached", n);
    }
}

/* The side channel's last chunks, the trace's last chunk and trailer
 * (ring mode: the whole file), then the side channel's trailer.  *nev:
 * the records in the trace; *werr: the trace writer's error.  Returns 0,
 * or -1 when a write failed. */
static int stop_finish_files(gr_recorder *r, int reason, uint64_t *nev_out, int *werr_out)
{
    if (r->samp.pw) { /* drained above (nothing is left), then the last chunks */
        /* A failed write is the side channel's error (its writer's, which
         * makes its gr_writer_finish below fail, and stop() raise). */
        gr_writer_finish(r->samp.ww, NULL, 0);
        gr_writer_finish(r->samp.pw, NULL, 0);
        r->samp.ww = r->samp.pw = NULL;
    }
    uint64_t nev = atomic_load(&r->nevents);
    int werr = r->w->error, rc;
    if (r->out.dw != r->w) {
        rc = write_ring(r, reason);
        nev = r->w->held + r->w->records;
    } else {
        /* The last chunk first: whether it fits decides the trailer. */
        gr_writer_flush(r->w);
        werr = r->w->error;
        if (r->w->capped)
            reason = GR_STOP_SIZE_CAP;
        if (werr) /* disk full or I/O error: the file says so, and how much is lost */
            reason = GR_STOP_WRITE_ERROR;
        if (r->w->capped || werr) /* the records in the file are fewer */
            nev = r->w->indexed_written;
        uint64_t trailer[5] = {nev, r->w->dropped, r->errors, (uint64_t)reason, r->out.replaced};
        rc = gr_writer_finish(r->w, trailer, r->out.replaced ? 5 : 4);
        r->w = r->out.dw = NULL;
    }
    if (r->tw) {
        uint64_t tt[3] = {nev, r->samp.nswitches, r->samp.sampler ? r->samp.sampler->nsamples : 0};
        if (gr_writer_finish(r->tw, tt, r->samp.reg ? 3 : 1) < 0)
            rc = -1;
        r->tw = NULL;
    }
    *nev_out = nev;
    *werr_out = werr;
    return rc;
}

static PyObject *mod_stop(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"reason", NULL};
    int reason = GR_STOP_CALLED;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|i:stop", kwlist, &reason))
        return NULL;
    gr_recorder *r = gr_active;
    if (!r)
        Py_RETURN_NONE;
    GR_EXC_SAVE(saved);
    gr_thread *me = stop_this_thread(r);
    stop_uninstall(r, me);
    gr_active = NULL;
    gr_crash_remove();
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);

    /* The sampler is joined: every sample left goes to the side channel
     * now, before the counts below, as the last drain may still thin the
     * ring's samples of an idle stretch (sampler.h gr_sampler_drain). */
    if (r->samp.pw)
        gr_side_drain(r);
    stop_meta_sampler(r);
    stop_meta_switches(r);
    stop_meta_threads(r);
    uint64_t nev;
    int werr;
    int rc = stop_finish_files(r, reason, &nev, &werr);
    uint64_t n = nev;
    recorder_free(r);
    if (rc < 0) {
        errno = werr ? werr : errno;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromUnsignedLongLong(n);
}

/* ---- mark ------------------------------------------------------------------ */

PyDoc_STRVAR(mark_doc,
"mark(label)\n--\n\n"
"Write a MARK record carrying `label` (any object; str() of it) and the\n"
"interpreter's real Python stack here, innermost 128 frames.  It is the\n"
"ground truth the checker compares the profile events with.  Does nothing\n"
"when not recording; never raises.");

static PyObject *mod_mark(PyObject *module, PyObject *label)
{
    gr_recorder *r = gr_active;
    if (!r)
        Py_RETURN_NONE;
    GR_EXC_SAVE(saved);
    PyThreadState *ts = PyThreadState_Get();
    gr_thread *t = gr_thread_current(r);
    if (t) {
        PyFrameObject *top = PyEval_GetFrame();
        if (!t->tid)
            gr_thread_first_sight(r, t, top, 0, 0);
        if (r->gl_api.watch)
            gr_greenlet_watch(r, t);
        if (t->gl_pending)
            gr_thread_touch(r, t); /* ground truth needs the greenlet */
        if (r->greenlet_mod) {
            /* A mark is a switch detection point too: the greenlet may have
             * resumed without delivering a single profile event. */
            PyObject *g = gr_current_greenlet(r);
            if (g && g != t->cur_g) {
                gr_witness_verify(r, t, g);
                gr_switch_seen(r, t, g, top, 1, 0);
            }
            Py_XDECREF(g);
        }
        PyObject *s = PyObject_Str(label);
        if (!s)
            gr_swallow(r);
        gr_profile_slot_at_mark(r, t, ts);
        int ours = gr_slot_observed(r, ts);
        uint64_t flags = ours && gr_tstate_tracing(ts) == 0 ? GR_MARK_PROFILE_OURS : 0;
        if (gr_tstate_tracing(ts) > 0)
            flags |= GR_MARK_IN_CALLBACK;
        int ut = gr_use_tracing_now(ts);
        if (ut >= 0) {
            /* The tracing state this greenlet really runs with, read
             * directly (3.9-3.11): off while the thread has a profile
             * function is the greenlet issue 256 class. */
            flags |= GR_MARK_STATE_KNOWN;
            if (ut == 0 && ts->c_profilefunc && gr_tstate_tracing(ts) == 0)
                flags |= GR_MARK_TRACING_OFF;
        }
        uint64_t f[5] = {t->tid, t->cur_gid, s ? gr_string_id_obj(r, s) : gr_string_id(r, "?"), r->ids.mark_code,
                         flags};
        gr_emit_stack(r, GR_MARK, 5, f, 4, GR_MARK_CUT, top, 0);
        Py_XDECREF(s);
    }
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
    Py_RETURN_NONE;
}

/* ---- helpers for the Python package --------------------------------------- */

static PyObject *mod_forget(PyObject *module, PyObject *wr)
{
    if (gr_active)
        gr_greenlet_forget(gr_active, wr);
    Py_RETURN_NONE;
}

/* The recording of the parent, in the child of a fork(), from the
 * pthread_atfork child handler until mod_forked tidies it away. */
static gr_recorder *forked_rec;

/* pthread_atfork child handler: runs in the child of every fork() (os.fork
 * from any thread, subprocess with preexec_fn), before CPython's own
 * after-fork code and every os.register_at_fork hook (threading's among
 * them).  From here on nothing reaches the parent's trace file: the
 * writers that exist are the parent's (gr_writer_forked), and the profile
 * function and greenlet callback find no recording (gr_active) and return
 * at once.  No Python API here: only plain stores. */
static void at_fork_child(void)
{
    gr_writer_forked();
    if (gr_active) {
        forked_rec = gr_active;
        gr_active = NULL;
    }
}

/* os.register_at_fork(after_in_child=...): the child must not write into
 * the parent's trace.  Recording ends in the child, silently: the
 * recording at_fork_child took away is taken down (hooks given back,
 * buffers dropped). */
static PyObject *mod_forked(PyObject *module, PyObject *unused)
{
    gr_recorder *r = forked_rec;
    forked_rec = NULL;
    if (!r)
        r = gr_active;
    if (!r)
        Py_RETURN_NONE;
    /* The hooks' teardown below names the recording; what it may still
     * buffer is dropped with the writers (they were made before the
     * fork and write nothing). */
    gr_active = r;
    /* Hooks first, while gr_active still names the recording: the
     * program's own profile function gets its slot back unchained. */
    gr_slots_give_back(r);
    unwrap_sys_setprofile();
    PyThreadState *ts = PyThreadState_Get();
    if (ts->c_profilefunc == gr_profile) {
        gr_own_change_begin(r);
        if (gr_own_set_profile(ts, NULL, NULL) < 0)
            PyErr_Clear();
        gr_own_change_end(r);
    }
    gr_active = NULL;
    if (r->out.dw != r->w)
        gr_writer_discard(r->out.dw);
    gr_writer_discard(r->w);
    gr_writer_discard(r->samp.ww);
    gr_writer_discard(r->samp.pw);
    gr_writer_discard(r->tw);
    r->w = r->out.dw = r->tw = r->samp.ww = r->samp.pw = NULL;
    /* The sampler's thread does not exist in the child, and its locks may
     * have been held by it at the fork: joining or destroying them could
     * block forever.  Their memory is left to the child's exit. */
    r->samp.sampler = NULL;
    r->samp.reg = NULL;
    recorder_free(r);
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyObject *mod_is_recording(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(gr_active != NULL);
}

/* _keep_profilers(): from now on, keep every cProfile object
 * the program installs alive until it is handed over, so that the conform
 * harness can read each one's results back at exit (docs/conform.md, "A
 * program with profilers of its own").  False when not recording.
 * _kept_profilers(): those objects, a list of (id, object), the id being
 * the trace's PROFILER id, handed over: the recorder keeps them (and any
 * more) no longer, so they are freed in the caller's code. */
static PyObject *mod_keep_profilers(PyObject *module, PyObject *unused)
{
    gr_recorder *r = gr_active;
    if (!r)
        Py_RETURN_FALSE;
    r->ids.keep_profilers = 1;
    Py_RETURN_TRUE;
}

static PyObject *mod_kept_profilers(PyObject *module, PyObject *unused)
{
    gr_recorder *r = gr_active;
    if (!r)
        return PyList_New(0);
    return gr_profiler_kept(r);
}

static PyObject *mod_on_uncaught(PyObject *module, PyObject *cb)
{
    if (cb != Py_None && !PyCallable_Check(cb)) {
        PyErr_SetString(PyExc_TypeError, "_on_uncaught() takes a callable or None");
        return NULL;
    }
    Py_XSETREF(gr_uncaught_cb, cb == Py_None ? NULL : Py_NewRef(cb));
    Py_RETURN_NONE;
}

/* For tests of unannounced takeovers (GR_HOOK_UNANNOUNCED): a profile
 * function that does nothing, swapped into the calling thread's slot the
 * way a C extension writing the thread state does (yappi's per-thread
 * start), without the audit event. */
static int raw_noop_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    return 0;
}

static PyObject *mod_test_swap_profile(PyObject *module, PyObject *unused)
{
    PyThreadState *ts = PyThreadState_Get();
    if (!ts->c_profilefunc) {
        PyErr_SetString(PyExc_RuntimeError, "_test_swap_profile(): the profile slot is empty");
        return NULL;
    }
    gr_swap_profile_func(ts, raw_noop_profile);
    Py_RETURN_NONE;
}

/* _footholds(): how many threads have the recorder's foothold in their
 * trace slot (an int), for tests: none after stop(). */
static PyObject *mod_footholds(PyObject *module, PyObject *unused)
{
    return PyLong_FromLong(gr_footholds(PyThreadState_Get()));
}

/* _tracked(): the recorder's per-thread and per-greenlet state in use,
 * for tests of bounded memory. */
static PyObject *mod_tracked(PyObject *module, PyObject *unused)
{
    gr_recorder *r = gr_active;
    if (!r)
        Py_RETURN_NONE;
    return Py_BuildValue("{s:n,s:I,s:I}", "threads", PyList_GET_SIZE(r->follow.threads),
                         "greenlet_slots", r->gls.gl_used - r->gls.gl_nfree, "greenlet_slots_allocated", r->gls.gl_cap);
}

/* _sampler_samples(): samples the reference sampler has kept so far in
 * the active recording (an int: taken, less those dropped when an idle
 * stretch was thinned, so it can go down then; sampler.h nsamples), or
 * None when no recording with a sampler is active.  Read without stopping the sampler thread (a relaxed atomic
 * load); used by fixtures/stall/stall.py to run until enough samples. */
static PyObject *mod_sampler_samples(PyObject *module, PyObject *unused)
{
    gr_recorder *r = gr_active;
    if (!r || !r->samp.sampler)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(
        __atomic_load_n(&r->samp.sampler->nsamples, __ATOMIC_RELAXED));
}

/* _sampler_registry(): the sampler registry's figures while recording
 * with a sampler, else None: a dict of ints `capacity` (live greenlets it
 * can track: max_greenlets - 1), `live` (slots taken now), `peak_live`,
 * `reused` (slots taken again after a greenlet released it), `untracked`
 * (greenlets that found every slot taken), `bytes` (allocated at start,
 * fixed), `recycled_stacks` (sampled stacks dropped: their greenlet's slot
 * was released while they were unwound), and the sampler's buffering
 * (sampler.h): `ring_bytes` and `buffer_bytes` (capacities of its handoff
 * ring and own buffer, fixed), `buffer_peak` (most bytes its own buffer
 * held so far), `samples_lost_full` (sampling times skipped, both full and
 * the buffer too small to thin), `samples_lost_large` (samples larger
 * than the ring takes, dropped), and its thinning (sampler.h):
 * `sampling_times` (so far), `samples_thinned` (sampling times without a
 * kept sample), `thin_stride` (now: 1 when not thinning) and
 * `thin_stride_peak`, `wakes` (sampling times its thread woke for) and
 * `dozed` (sampling times it slept through while thinning, also in
 * `samples_thinned`), and `start_ns` (the sampler's start on
 * CLOCK_MONOTONIC, ns: the origin of the samples' t_ns, so a program can
 * place them against time.monotonic_ns()).
 * Read under the GIL, which every writer of the registry figures holds;
 * the sampler thread's are read relaxed. */
static PyObject *mod_sampler_registry(PyObject *module, PyObject *unused)
{
    gr_recorder *r = gr_active;
    if (!r || !r->samp.reg)
        Py_RETURN_NONE;
    gr_registry *g = r->samp.reg;
    unsigned long long recycled =
        r->samp.sampler ? __atomic_load_n(&r->samp.sampler->recycled, __ATOMIC_RELAXED) : 0;
    gr_sampler *s = r->samp.sampler;
    unsigned long long lost = s ? __atomic_load_n(&s->lost_full, __ATOMIC_RELAXED) : 0;
    unsigned long long lost_large = s ? __atomic_load_n(&s->lost_large, __ATOMIC_RELAXED) : 0;
    Py_ssize_t peak = s ? (Py_ssize_t)__atomic_load_n(&s->out_peak, __ATOMIC_RELAXED) : 0;
    unsigned long long ticks = s ? __atomic_load_n(&s->ticks, __ATOMIC_RELAXED) : 0;
    unsigned long long thinned = s ? __atomic_load_n(&s->thinned, __ATOMIC_RELAXED) : 0;
    unsigned long long stride = s ? __atomic_load_n(&s->stride, __ATOMIC_RELAXED) : 1;
    unsigned long long stride_peak = s ? __atomic_load_n(&s->stride_peak, __ATOMIC_RELAXED) : 1;
    unsigned long long wakes = s ? __atomic_load_n(&s->doze.wakes, __ATOMIC_RELAXED) : 0;
    unsigned long long dozed = s ? __atomic_load_n(&s->doze.dozed, __ATOMIC_RELAXED) : 0;
    unsigned long long start_ns = s ? s->t0 : 0;
    return Py_BuildValue("{s:I,s:I,s:I,s:K,s:K,s:n,s:K,s:n,s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
                         "capacity", g->cap - 1,
                         "live", g->live, "peak_live", g->peak_live, "reused",
                         (unsigned long long)g->reused, "untracked", (unsigned long long)g->overflow,
                         "bytes", (Py_ssize_t)gr_registry_bytes(g), "recycled_stacks", recycled,
                         "ring_bytes", (Py_ssize_t)(s ? s->ho.cap : 0), "buffer_bytes",
                         (Py_ssize_t)(s ? s->out_cap : 0), "buffer_peak", peak,
                         "samples_lost_full", lost, "samples_lost_large", lost_large,
                         "sampling_times", ticks, "samples_thinned",
                         thinned, "thin_stride", stride, "thin_stride_peak", stride_peak, "wakes",
                         wakes, "dozed", dozed, "start_ns", start_ns);
}

static PyMethodDef methods[] = {
    {"start", (PyCFunction)(void (*)(void))mod_start, METH_VARARGS | METH_KEYWORDS, start_doc},
    {"stop", (PyCFunction)(void (*)(void))mod_stop, METH_VARARGS | METH_KEYWORDS, stop_doc},
    {"mark", mod_mark, METH_O, mark_doc},
    {"flush", mod_flush, METH_NOARGS, flush_doc},
    {"_forget", mod_forget, METH_O, "Weakref callback: a greenlet seen while recording was freed."},
    {"_forked", mod_forked, METH_NOARGS,
     "After fork, in the child: end recording without writing to the parent's trace; the\n"
     "child's profile slot gets back the program's own function (or none), the sampler's\n"
     "thread (absent in the child) is neither joined nor freed."},
    {"is_recording", mod_is_recording, METH_NOARGS, "True while a recording is active."},
    {"_keep_profilers", mod_keep_profilers, METH_NOARGS,
     "Keep the program's cProfile objects alive for conform to read back."},
    {"_kept_profilers", mod_kept_profilers, METH_NOARGS,
     "Hand over the kept profiler objects: a list of (PROFILER id, object)."},
    GR_BOOT_METHODS
    GR_WINDOW_METHODS
    {"_sampler_registry", mod_sampler_registry, METH_NOARGS,
     "_sampler_registry(): dict of the sampler registry's figures (capacity, live, peak_live,\n"
     "reused, untracked, bytes, recycled_stacks, ring_bytes, buffer_bytes, buffer_peak,\n"
     "samples_lost_full, sampling_times, samples_thinned, thin_stride, thin_stride_peak, wakes,\n"
     "dozed, start_ns)\n"
     "while recording with a sampler, else None."},
    {"_on_uncaught", mod_on_uncaught, METH_O,
     "_on_uncaught(callable or None): call it with no arguments when, while recording, an\n"
     "uncaught exception is about to reach sys.excepthook (its audit event, CPython 3.8+);\n"
     "its errors are ignored.  Whole-program mode stops recording there without replacing\n"
     "sys.excepthook."},
    {"_test_swap_profile", mod_test_swap_profile, METH_NOARGS,
     "For tests only: replace the function of the calling thread's (non-empty) profile slot\n"
     "with one that does nothing, writing the thread state directly, without the audit event\n"
     "sys.setprofile, as a C extension may (yappi's per-thread start)."},
    {"_footholds", mod_footholds, METH_NOARGS,
     "For tests only: how many threads have the recorder's foothold (its trace function that\n"
     "waits for the next event after a profile change) in their trace slot; 0 after stop()."},
    {"_tracked", mod_tracked, METH_NOARGS,
     "While recording: a dict of the recorder's state in use: 'threads' (per-thread entries:\n"
     "the live threads and ended ones not yet swept), 'greenlet_slots' (greenlets alive, or\n"
     "freed with their end not yet written) and 'greenlet_slots_allocated'; None otherwise.\n"
     "For tests of bounded memory."},
    {"_sampler_samples", mod_sampler_samples, METH_NOARGS,
     "Samples kept so far by the active recording's sampler (taken, less those an idle\n"
     "stretch's thinning dropped), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "greenreplay._greenreplay",
    .m_doc = "C side of the greenreplay recorder (see the greenreplay package).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__greenreplay(void)
{
    if (PyType_Ready(&gr_thread_type) < 0)
        return NULL;
    /* Once per process (audit hooks cannot be removed; it does nothing
     * while no recording is active). */
    static int audit_added;
    if (!audit_added) {
        if (PySys_AddAuditHook(gr_audit_hook, NULL) < 0)
            return NULL;
        audit_added = 1;
        if (pthread_atfork(NULL, NULL, at_fork_child) != 0) {
            PyErr_SetString(PyExc_RuntimeError, "greenreplay: pthread_atfork failed");
            return NULL;
        }
    }
    return PyModule_Create(&moduledef);
}
