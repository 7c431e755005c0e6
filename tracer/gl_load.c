/* gl_load.c - greenlet's API, found where the program loaded greenlet.
 *
 * The recorder does not import greenlet: the program must load it itself,
 * at the time it would unrecorded (a tool that hooks the loading of
 * greenlet's shared object, memray's dlopen hook, sees it then; greenlet's
 * module code runs then).  start() reads greenlet's C module from
 * sys.modules if the program imported it before.  If not, and greenlet
 * can be imported, the recording waits for it (r->gl_api.lazy): each
 * thread gets a placeholder main greenlet (t->gl_pending, as passive mode
 * gives a thread that has not used greenlet yet), and the audit hook's
 * "import" event of greenlet starts a watch: the profile function's next
 * events look in sys.modules again until greenlet's C module is there.
 * No greenlet can switch before that module is loaded, so no switch is
 * missed.
 */
#include "gl_load.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

/* Give up a watch after this many events without greenlet's C module (an
 * import of greenlet that failed): the threads go back to their fast path. */
#define GR_WATCH_EVENTS 100000

/* The loaded module `name` from sys.modules (borrowed), or NULL. */
static PyObject *loaded(PyObject *modules, const char *name)
{
    PyObject *m = PyDict_GetItemString(modules, name); /* no exception */
    return m && PyModule_Check(m) ? m : NULL;
}

/* A value of module m's dict (borrowed), or NULL: no __getattr__ runs. */
static PyObject *module_value(PyObject *m, const char *name)
{
    PyObject *d = m ? PyModule_GetDict(m) : NULL;
    return d ? PyDict_GetItemString(d, name) : NULL;
}

/* greenlet's version as its package says, or "unknown". */
static void read_version(gr_recorder *r, PyObject *pkg, PyObject *cmod)
{
    PyObject *v = module_value(pkg, "__version__");
    if (!v)
        v = module_value(cmod, "__version__"); /* greenlet 0.4: one C module */
    const char *s = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    PyErr_Clear();
    snprintf(r->gl_api.version, sizeof r->gl_api.version, "%s", s ? s : "unknown");
}

/* The version in greenlet package's __init__.py (path), read as text:
 * its line `__version__ = '3.1.1'`.  1 if found (into out), else 0. */
static int version_in_source(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "__version__", 11) != 0)
            continue;
        char *q = strpbrk(line, "'\"");
        char *e = q ? strchr(q + 1, *q) : NULL;
        if (e && e - q - 1 > 0 && (size_t)(e - q - 1) < n) {
            snprintf(out, n, "%.*s", (int)(e - q - 1), q + 1);
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* The version in the name of greenlet's metadata directory in dir
 * (greenlet-0.4.17.egg-info, greenlet-3.1.1.dist-info,
 * greenlet-1.1.2-py3.9.egg-info).  1 if found (into out), else 0. */
static int version_in_dir(const char *dir, char *out, size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int found = 0;
    while (d && !found && (de = readdir(d))) {
        const char *v = de->d_name;
        if (strncmp(v, "greenlet-", 9) != 0 || !(strstr(v, ".egg-info") || strstr(v, ".dist-info")))
            continue;
        v += 9;
        size_t len = strcspn(v, "-");
        const char *suffix = strstr(v, ".egg-info") ? strstr(v, ".egg-info") : strstr(v, ".dist-info");
        if ((size_t)(suffix - v) < len)
            len = (size_t)(suffix - v);
        if (len > 0 && len < n) {
            snprintf(out, n, "%.*s", (int)len, v);
            found = 1;
        }
    }
    if (d)
        closedir(d);
    return found;
}

void gr_greenlet_spec_version(gr_recorder *r, PyObject *spec)
{
    char *v = r->gl_api.version;
    size_t n = sizeof r->gl_api.version;
    snprintf(v, n, "unknown");
    PyObject *origin = spec ? PyObject_GetAttrString(spec, "origin") : NULL;
    const char *o = origin && PyUnicode_Check(origin) ? PyUnicode_AsUTF8(origin) : NULL;
    size_t len = o ? strlen(o) : 0;
    if (o && len < 4096) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", o);
        char *slash = strrchr(dir, '/');
        int pkg = slash && strcmp(slash + 1, "__init__.py") == 0;
        if (!(pkg && version_in_source(o, v, n)) && slash) {
            *slash = '\0';                /* the module's directory ... */
            if (pkg && (slash = strrchr(dir, '/')))
                *slash = '\0';            /* ... or the package's */
            (void)version_in_dir(dir, v, n);
        }
    }
    Py_XDECREF(origin);
    PyErr_Clear();
}

int gr_greenlet_resolve(gr_recorder *r)
{
    if (r->greenlet_mod)
        return 1;
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    if (!modules || !PyDict_Check(modules))
        return 0;
    /* greenlet 1.0+: the package greenlet around the C module
     * greenlet._greenlet; greenlet 0.4: the C module greenlet. */
    PyObject *pkg = loaded(modules, "greenlet");
    PyObject *cmod = loaded(modules, "greenlet._greenlet");
    if (!cmod)
        cmod = pkg;
    PyObject *cap = module_value(cmod, "_C_API");
    PyObject *getcurrent = module_value(cmod, "getcurrent");
    /* The module's code sets _C_API first and the functions after: all
     * of them there, or greenlet is still loading. */
    if (!cap || !getcurrent || !PyCapsule_IsValid(cap, "greenlet._C_API"))
        return 0;
    r->greenlet_mod = Py_NewRef(cmod);
    r->gl_api.getcurrent = Py_NewRef(getcurrent);
    PyObject *settrace = module_value(cmod, "settrace");
    r->gl_settrace = settrace ? Py_NewRef(settrace) : NULL;
    gr_cf_forget(r); /* settrace's entry, if any, goes the general path */
    read_version(r, pkg, cmod);
    /* greenlet's C API (greenlet.h, the same table from 0.4 to 3.x): entry
     * 4 is PyGreenlet_GetCurrent, a cheap way to ask which greenlet runs. */
    void **api = PyCapsule_GetPointer(cap, "greenlet._C_API");
    if (api) {
        r->gl_api.gl_current = (PyObject * (*)(void)) api[4];
        r->gl_api.type = (PyTypeObject *)api[0]; /* PyGreenlet_Type */
    }
    /* greenlet 0.4.15+ changes the switch witness on every switch
     * (compat.h, gr_switch_witness); older ones are asked at every event. */
    int a = 0, b = 0, c = 0;
    if (sscanf(r->gl_api.version, "%d.%d.%d", &a, &b, &c) >= 2) {
        r->sw.witness_ok = a > 0 || (b == 4 && c >= 15) || b > 4;
        r->gl_api.gl_chain_cut = gr_greenlet_chain_cut(a, b, c);
    }
    gr_sw_refresh(r);
    /* greenlet 2.0 added PyGreenlet_GetParent (entry 11; the table had 8
     * entries before). */
    if (api && a >= 2)
        r->gl_api.gl_parent = (PyObject * (*)(PyObject *)) api[11];
    PyErr_Clear();
    return 1;
}

/* gr_thread_path for every thread of recording r. */
static void all_paths(gr_recorder *r)
{
    PyObject *threads = r->follow.threads;
    for (Py_ssize_t i = 0; threads && i < PyList_GET_SIZE(threads); i++)
        gr_thread_path(r, (gr_thread *)PyList_GET_ITEM(threads, i));
}

void gr_greenlet_import_event(gr_recorder *r, PyObject *args)
{
    PyObject *name = args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
    const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        PyErr_Clear();
        return;
    }
    if (strncmp(s, "greenlet", 8) != 0 || (s[8] != '\0' && s[8] != '.'))
        return;
    r->gl_api.watch = 1;
    r->gl_api.watch_events = 0;
    all_paths(r); /* every thread's events go the general way, which looks */
}

void gr_greenlet_watch(gr_recorder *r, gr_thread *t)
{
    GR_EXC_SAVE(saved);
    char before[sizeof r->gl_api.version];
    memcpy(before, r->gl_api.version, sizeof before);
    if (gr_greenlet_resolve(r)) {
        r->gl_api.lazy = 0;
        r->gl_api.watch = 0;
        if (strcmp(before, r->gl_api.version) != 0) {
            /* Not the greenlet its files named at start(). */
            uint64_t f[2] = {gr_string_id(r, "greenlet"), gr_string_id(r, r->gl_api.version)};
            gr_emit(r, GR_META, 2, f);
        }
        /* Callback mode: every thread that waits installs its callback at
         * its next event (gr_thread_path sends it the general way). */
        all_paths(r);
        if (t && t->tid && t->gl_pending)
            gr_thread_touch(r, t); /* the thread that imported greenlet */
    } else if (++r->gl_api.watch_events > GR_WATCH_EVENTS) {
        r->gl_api.watch = 0;
        all_paths(r);
    }
    if (PyErr_Occurred())
        gr_swallow(r);
    GR_EXC_RESTORE(saved);
}
