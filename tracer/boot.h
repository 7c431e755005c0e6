/* boot.h - the whole-program start of `greenreplay record` (boot.c). */
#ifndef GR_BOOT_H
#define GR_BOOT_H

#include "compat.h"

PyObject *gr_mod_arm(PyObject *module, PyObject *fire);
PyObject *gr_mod_tracing_state(PyObject *module, PyObject *unused);
PyObject *gr_mod_whole_program(PyObject *module, PyObject *args);
PyObject *gr_mod_atexit_leave(PyObject *module, PyObject *atexit_module);
void gr_atexit_import_event(PyObject *args);
PyObject *gr_mod_record_settings(PyObject *module, PyObject *args);

#define GR_BOOT_METHODS                                                                           \
    {"_arm", gr_mod_arm, METH_O, gr_arm_doc},                                                     \
    {"_tracing_state", gr_mod_tracing_state, METH_NOARGS, gr_tracing_state_doc},                  \
    {"_whole_program", gr_mod_whole_program, METH_VARARGS, gr_whole_program_doc},                \
    {"_atexit_leave", gr_mod_atexit_leave, METH_O, gr_atexit_leave_doc},                         \
    {"_record_settings", gr_mod_record_settings, METH_VARARGS, gr_record_settings_doc},

extern const char gr_arm_doc[], gr_tracing_state_doc[], gr_whole_program_doc[], gr_atexit_leave_doc[],
    gr_record_settings_doc[];

#endif
