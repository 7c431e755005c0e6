/* profiler_id.c - the identity, kind and type of the program's own
 * profilers, for the HOOK records of the profile slot (profiler_id.h;
 * docs/FORMAT.md §3 PROFILER, §4.2).
 *
 * Identity: the object that is the profiler - the profile object of the
 * slot (a cProfile.Profile, the callable given to sys.setprofile), the
 * object a bound method is bound to (profile.Profile's dispatcher is a new
 * method object every time), or, for a C profile function without an
 * object, the function itself.  An object seen again while a weak
 * reference to it is alive is the same profiler; once it is gone, another
 * object at the same address is a new one.  An object without weak
 * reference support is known by its address alone (docs/RECORDER.md,
 * "Hooks of the program": a limit).  Nothing here keeps a profiler alive
 * (but under `greenreplay conform`, gr_profiler_keep: below), and no code
 * of the program runs: types are named from their own fields and dicts,
 * never through getattr.
 */
#include "profiler_id.h"

#include "compat.h"
#include "recorder.h"

#include <string.h>

typedef struct {
    PyObject *wr; /* owned: weak reference to the identity object, or NULL */
    void *addr;   /* its address (the index key; compared only) */
    uint32_t id;
    int gone;     /* the object is gone: its weak reference let go (forget) */
} gr_prof_entry;

struct gr_profiler_table {
    PyObject *index;      /* owned dict: address (int) -> entry number (int) */
    gr_prof_entry *e;     /* PyMem */
    size_t n, cap;
    uint32_t next_id;     /* ids given so far */
    PyObject *kept;       /* owned list of (id, object), or NULL: the
                             profiler objects kept alive for conform
                             (gr_profiler_keep) */
};

void gr_profiler_table_free(gr_profiler_table *pt)
{
    if (!pt)
        return;
    for (size_t i = 0; i < pt->n; i++)
        Py_XDECREF(pt->e[i].wr);
    PyMem_Free(pt->e);
    Py_XDECREF(pt->index);
    Py_XDECREF(pt->kept);
    PyMem_Free(pt);
}

/* "module.qualname" of a class defined in Python (from its own dict and
 * heap type fields), tp_name of a static type.  New reference or NULL. */
static PyObject *type_name(PyTypeObject *tp)
{
    if ((tp->tp_flags & Py_TPFLAGS_HEAPTYPE) && tp->tp_dict) {
        PyObject *mod = PyDict_GetItemString(tp->tp_dict, "__module__"); /* borrowed */
        PyObject *qn = ((PyHeapTypeObject *)tp)->ht_qualname;
        if (mod && PyUnicode_Check(mod) && qn && PyUnicode_Check(qn))
            return PyUnicode_FromFormat("%U.%U", mod, qn);
    }
    return PyUnicode_FromString(tp->tp_name);
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The kind of a profiler object of type tp (its classes, most derived
 * first), GR_PROF_UNKNOWN when no known tool's class is among them. */
static int kind_of_type(PyTypeObject *tp)
{
    PyObject *mro = tp->tp_mro;
    Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = -1; i < n; i++) {
        PyTypeObject *c = i < 0 ? tp : (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!PyType_Check((PyObject *)c))
            continue;
        PyObject *nm = type_name(c);
        if (!nm) {
            PyErr_Clear();
            continue;
        }
        const char *s = PyUnicode_AsUTF8(nm);
        int k = GR_PROF_UNKNOWN;
        if (!s)
            PyErr_Clear();
        else if (strcmp(s, "_lsprof.Profiler") == 0 || strcmp(s, "cProfile.Profile") == 0)
            k = GR_PROF_CPROFILE;
        else if (strcmp(s, "profile.Profile") == 0)
            k = GR_PROF_PROFILE;
        else if (starts(s, "coverage.") && strstr(s, "CTracer"))
            k = GR_PROF_COVERAGE_C;
        else if (starts(s, "coverage.") && strstr(s, "PyTracer"))
            k = GR_PROF_COVERAGE_PY;
        else if (starts(s, "yappi") || starts(s, "_yappi"))
            k = GR_PROF_YAPPI;
        else if (starts(s, "line_profiler"))
            k = GR_PROF_LINE_PROFILER;
        else if (starts(s, "pyinstrument"))
            k = GR_PROF_PYINSTRUMENT;
        Py_DECREF(nm);
        if (k != GR_PROF_UNKNOWN)
            return k;
    }
    return GR_PROF_UNKNOWN;
}

/* Code id of a Python function's code, 0 for anything else. */
static uint32_t function_code(gr_recorder *r, PyObject *fn)
{
    if (!fn || !PyFunction_Check(fn))
        return 0;
    PyObject *co = PyFunction_GET_CODE(fn);
    return co && PyCode_Check(co) ? gr_code_id(r, (PyCodeObject *)co) : 0;
}

/* Kind, type name (new reference) and code id of the profiler (func, obj);
 * *key: the object that is its identity (borrowed; NULL: func is). */
static PyObject *describe(gr_recorder *r, Py_tracefunc func, PyObject *obj, int *kind,
                          uint32_t *code, PyObject **key)
{
    (void)func;
    *code = 0;
    *key = obj;
    if (!obj) {
        /* A C profile function without an object: yappi installs one so
         * (its module is then imported); others are named by nothing. */
        PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
        if (mods && PyDict_GetItemString(mods, "_yappi")) {
            *kind = GR_PROF_YAPPI;
            return PyUnicode_FromString("_yappi");
        }
        *kind = GR_PROF_UNKNOWN;
        return PyUnicode_FromString("C function");
    }
    if (PyFunction_Check(obj)) {
        *kind = GR_PROF_FUNCTION;
        *code = function_code(r, obj);
        return PyUnicode_FromString("function");
    }
    if (PyMethod_Check(obj)) {
        PyObject *self = PyMethod_GET_SELF(obj);
        *key = self;
        *code = function_code(r, PyMethod_GET_FUNCTION(obj));
        int k = kind_of_type(Py_TYPE(self));
        *kind = k != GR_PROF_UNKNOWN ? k : GR_PROF_CALLABLE;
        return type_name(Py_TYPE(self));
    }
    int k = kind_of_type(Py_TYPE(obj));
    if (k == GR_PROF_UNKNOWN && (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
        PyCallable_Check(obj))
        k = GR_PROF_CALLABLE;
    *kind = k;
    return type_name(Py_TYPE(obj));
}

/* The weak reference's callback: the profiler object is gone.  The
 * reference is let go at once, so no dead weak reference of the recorder
 * stays among the program's objects (greenlet's leak checks count them
 * around each test); the entry is marked, and sweep() removes it.  Only
 * the entry changes here: the callback may come in the middle of the
 * recorder's own work (a collection). */
static PyObject *forget(PyObject *self, PyObject *wr)
{
    (void)self;
    gr_recorder *r = gr_active;
    gr_profiler_table *pt = r ? r->ids.profilers : NULL;
    for (size_t i = 0; pt && i < pt->n; i++) {
        if (pt->e[i].wr == wr) {
            pt->e[i].gone = 1;
            pt->e[i].wr = NULL;
            Py_DECREF(wr); /* the table's: last use of wr */
            break;
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef forget_def = {"greenreplay_profiler_gone", forget, METH_O, NULL};
static PyObject *forget_cb; /* owned, made once */

/* Forget the profilers whose object is gone (a service making one per
 * request would otherwise keep an entry for each until stop): their
 * index entries go, the others move down.  Their ids are not reused. */
static void sweep(gr_profiler_table *pt)
{
    size_t k = 0;
    for (size_t i = 0; i < pt->n; i++) {
        gr_prof_entry *e = &pt->e[i];
        PyObject *o = e->wr ? gr_weakref_get(e->wr) : NULL;
        int dead = e->gone || (e->wr && !o);
        Py_XDECREF(o);
        PyObject *addr = PyLong_FromVoidPtr(e->addr);
        if (!addr) {
            PyErr_Clear();
            pt->e[k++] = *e; /* kept as it is */
            continue;
        }
        PyObject *at = PyDict_GetItemWithError(pt->index, addr); /* borrowed */
        int mine = at && PyLong_AsSsize_t(at) == (Py_ssize_t)i;
        if (PyErr_Occurred())
            PyErr_Clear();
        if (dead) {
            if (mine && PyDict_DelItem(pt->index, addr) < 0)
                PyErr_Clear();
            Py_CLEAR(e->wr);
        } else {
            if (mine && k != i) {
                PyObject *no = PyLong_FromSsize_t((Py_ssize_t)k);
                if (!no || PyDict_SetItem(pt->index, addr, no) < 0)
                    PyErr_Clear();
                Py_XDECREF(no);
            }
            pt->e[k++] = *e;
        }
        Py_DECREF(addr);
    }
    pt->n = k;
}

static gr_profiler_table *table(gr_recorder *r)
{
    if (r->ids.profilers)
        return r->ids.profilers;
    gr_profiler_table *pt = PyMem_Calloc(1, sizeof *pt);
    if (!pt)
        return NULL;
    pt->index = PyDict_New();
    if (!pt->index) {
        PyMem_Free(pt);
        return NULL;
    }
    r->ids.profilers = pt;
    return pt;
}

/* Keep profiler object obj (id) alive in pt->kept; a failure is dropped
 * (the object is then not read back: conform says so). */
static void keep(gr_profiler_table *pt, uint32_t id, PyObject *obj)
{
    if (!pt->kept && !(pt->kept = PyList_New(0))) {
        PyErr_Clear();
        return;
    }
    PyObject *item = Py_BuildValue("(IO)", (unsigned)id, obj);
    if (!item || PyList_Append(pt->kept, item) < 0)
        PyErr_Clear();
    Py_XDECREF(item);
}

PyObject *gr_profiler_kept(gr_recorder *r)
{
    gr_profiler_table *pt = r->ids.profilers;
    r->ids.keep_profilers = 0;
    if (!pt || !pt->kept)
        return PyList_New(0);
    /* Handed over: the caller's list is the last reference the recorder
     * added, so the objects are freed in the caller's code, not while
     * the recorder tears down. */
    PyObject *out = pt->kept;
    pt->kept = NULL;
    return out;
}

uint32_t gr_profiler_id(gr_recorder *r, Py_tracefunc func, PyObject *obj)
{
    if (!func)
        return 0;
    GR_EXC_SAVE(saved);
    uint32_t id = 0;
    int kind = GR_PROF_UNKNOWN;
    uint32_t code = 0;
    PyObject *key = NULL, *addr = NULL, *name = NULL;
    gr_profiler_table *pt = table(r);
    if (!pt)
        goto fail;
    name = describe(r, func, obj, &kind, &code, &key);
    if (!name)
        goto fail;
    addr = PyLong_FromVoidPtr(key ? (void *)key : (void *)func);
    if (!addr)
        goto fail;
    PyObject *at = PyDict_GetItemWithError(pt->index, addr); /* borrowed */
    if (at) {
        gr_prof_entry *e = &pt->e[PyLong_AsSsize_t(at)];
        PyObject *o = e->wr ? gr_weakref_get(e->wr) : NULL;
        int same = !e->gone && (!e->wr || o == key);
        Py_XDECREF(o);
        if (same) {
            id = e->id;
            goto done;
        }
    } else if (PyErr_Occurred())
        goto fail;
    /* First sight (or a new object where a freed one was). */
    /* Full: forget the freed ones first; grow unless that freed half. */
    if (pt->n == pt->cap) {
        sweep(pt);
        if (!pt->cap || pt->n > pt->cap / 2) {
            size_t cap = pt->cap ? 2 * pt->cap : 16;
            gr_prof_entry *more = PyMem_Realloc(pt->e, cap * sizeof *more);
            if (!more)
                goto fail;
            pt->e = more;
            pt->cap = cap;
        }
    }
    PyObject *wr = NULL;
    if (key) {
        if (!forget_cb && !(forget_cb = PyCFunction_New(&forget_def, NULL)))
            goto fail;
        wr = PyWeakref_NewRef(key, forget_cb);
        if (!wr)
            PyErr_Clear(); /* no weak references: known by address alone */
    }
    PyObject *no = PyLong_FromSsize_t((Py_ssize_t)pt->n);
    if (!no || PyDict_SetItem(pt->index, addr, no) < 0) {
        Py_XDECREF(no);
        Py_XDECREF(wr);
        goto fail;
    }
    Py_DECREF(no);
    id = ++pt->next_id;
    pt->e[pt->n++] = (gr_prof_entry){wr, key ? (void *)key : (void *)func, id, 0};
    if (r->ids.keep_profilers && key && kind == GR_PROF_CPROFILE)
        keep(pt, id, key);
    uint32_t sid = kind == GR_PROF_FUNCTION ? 0 : gr_string_id_obj(r, name);
    uint64_t f[3] = {(uint64_t)kind, sid, code};
    gr_emit(r, GR_PROFILER, 3, f);
    goto done;
fail:
    id = 0;
    if (PyErr_Occurred())
        PyErr_Clear();
    r->errors++;
done:
    Py_XDECREF(addr);
    Py_XDECREF(name);
    GR_EXC_RESTORE(saved);
    return id;
}

uint32_t gr_profiler_frame(gr_recorder *r, PyFrameObject *top)
{
    PyFrameObject *f = (PyFrameObject *)Py_XNewRef(top);
    uint32_t id = 0;
    while (f) {
        uint32_t c = gr_code_id(r, gr_frame_code(f));
        if (c && !gr_code_ours(r, c)) {
            id = c;
            Py_DECREF(f);
            break;
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    return id;
}
