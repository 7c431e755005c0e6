/* window.c - a recording window of a running program, opened and closed
 * from outside.
 *
 *     _greenreplay._window(fd, callback)   # greenreplay/boot/sitecustomize.py
 *
 * `greenreplay record --start-on SIG` keeps the program unrecorded and
 * hands it the read end of a pipe.  When record gets SIG it writes "S"
 * there; at the next SIG, or when --for SECONDS have passed, "E".  A thread
 * of ours, started here, waits on the pipe and passes each byte to the
 * main thread as a pending call (Py_AddPendingCall: run between two
 * bytecodes, where CPython runs signal handlers), which calls
 * callback(byte) there: the boot starts and stops recording in it.
 *
 * So the program's own handler of SIG is never replaced (the signal goes
 * to record, not to the program), and nothing runs in the program until
 * the window opens: no profile function, no hook, no module.  The thread
 * is not a Python thread (threading does not list it), blocks every signal
 * (the program's signals reach the threads they reached before), and ends
 * at the pipe's end of file.  A fork child has no such thread.
 */
#include "window.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

static PyObject *window_callback; /* owned; called in the main thread */
static volatile long window_ran;   /* bytes the main thread has handled */

/* Pending call (main thread, GIL held): callback(byte).  Its errors stay
 * out of the program: a pending call that fails raises in the frame it
 * interrupted. */
static int window_pending(void *arg)
{
    window_ran++;
    if (!window_callback)
        return 0;
    PyObject *r = PyObject_CallFunction(window_callback, "i", (int)(intptr_t)arg);
    if (r)
        Py_DECREF(r);
    else
        PyErr_Clear();
    return 0;
}

static void *window_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    long queued = 0;
    for (;;) {
        unsigned char c;
        ssize_t n = read(fd, &c, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        /* The queue of pending calls may be full for a moment. */
        while (Py_AddPendingCall(window_pending, (void *)(intptr_t)c) < 0)
            usleep(1000);
        /* A pending call added by another thread does not wake the main
         * thread's eval loop (3.9-3.12: the eval breaker is computed by
         * the adding thread, which cannot handle pending calls, so it
         * stays unset): the main thread looks again when it takes the GIL
         * back after a drop request.  Asking for the GIL makes that
         * request while the main thread runs Python (nothing to ask while
         * it waits in C without the GIL: then again, a moment later). */
        long want = ++queued;
        while (window_ran < want && !gr_is_finalizing()) {
            PyGILState_STATE g = PyGILState_Ensure();
            PyGILState_Release(g);
            if (window_ran < want)
                usleep(2000);
        }
    }
    close(fd);
    return NULL;
}

const char gr_window_doc[] =
    "_window(fd, callback): start a thread (not a Python one) that reads bytes from fd and\n"
    "has the main thread call callback(byte) for each, between two bytecodes, as CPython\n"
    "runs signal handlers; its errors are ignored.  Once per process.  For `greenreplay\n"
    "record --start-on SIG` (greenreplay/boot).";

PyObject *gr_mod_window(PyObject *module, PyObject *args)
{
    (void)module;
    int fd;
    PyObject *callback;
    if (!PyArg_ParseTuple(args, "iO:_window", &fd, &callback))
        return NULL;
    if (!PyCallable_Check(callback)) {
        PyErr_SetString(PyExc_TypeError, "_window: callback must be callable");
        return NULL;
    }
    if (window_callback) {
        PyErr_SetString(PyExc_RuntimeError, "_window: already waiting for a window");
        return NULL;
    }
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved); /* inherited by the new thread */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t th;
    Py_INCREF(callback);
    window_callback = callback;
    int err = pthread_create(&th, &attr, window_thread, (void *)(intptr_t)fd);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (err) {
        Py_CLEAR(window_callback);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}
