/* window.h - a recording window of a running program, opened and closed
 * from outside (`greenreplay record --start-on SIG`; window.c). */
#ifndef GR_WINDOW_H
#define GR_WINDOW_H

#include "compat.h"

PyObject *gr_mod_window(PyObject *module, PyObject *args);

#define GR_WINDOW_METHODS {"_window", gr_mod_window, METH_VARARGS, gr_window_doc},

extern const char gr_window_doc[];

#endif
