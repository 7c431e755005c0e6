/* audit.h - the recorder's audit hook (audit.c). */
#ifndef GR_AUDIT_H
#define GR_AUDIT_H

#include "recorder.h"

/* Audit hook (installed once, at import): notices the program changing a
 * profile or trace function (events sys.setprofile / sys.settrace, raised
 * before the change, from C too, CPython 3.8+ PEP 578). */
int gr_audit_hook(const char *event, PyObject *args, void *userdata);

/* Owned, or NULL: called (no arguments) at sys.excepthook's audit event
 * while recording (audit.c); set by _greenreplay._on_uncaught. */
extern PyObject *gr_uncaught_cb;

#endif
