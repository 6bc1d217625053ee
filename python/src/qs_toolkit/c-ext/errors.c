/* errors.c: the exceptions of qs_toolkit, and a libqs error raised as one. */
#include "core.h"

PyObject *qs_Error, *qs_FormatError, *qs_UnsupportedError, *qs_LimitError, *qs_DeviceError;

/* Raise the exception of a library error: its message, and the status,
 * line and offset as attributes. */
PyObject *raise_qs(const qs_error *err, const char *prefix)
{
    PyObject *type = qs_Error;
    switch (err->code) {
    case QS_ERR_FORMAT: type = qs_FormatError; break;
    case QS_ERR_UNSUPPORTED: type = qs_UnsupportedError; break;
    case QS_ERR_LIMIT: type = qs_LimitError; break;
    case QS_ERR_NOMEM: return PyErr_NoMemory();
    case QS_ERR_ARG: type = PyExc_ValueError; break;
    case QS_ERR_DEVICE: type = qs_DeviceError; break;
    default: break;
    }
    char where[64] = "";
    if (err->line > 0)
        snprintf(where, sizeof where, " (line %ld)", err->line);
    else if (err->offset >= 0 && err->code == QS_ERR_FORMAT)
        snprintf(where, sizeof where, " (byte %lld)", err->offset);
    PyObject *msg = PyUnicode_FromFormat("%s%s%s", prefix ? prefix : "",
                                         err->msg[0] ? err->msg : "unknown error", where);
    if (!msg)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(type, msg);
    Py_DECREF(msg);
    if (!exc)
        return NULL;
    if (type != PyExc_ValueError) {
        PyObject *v;
        if ((v = PyLong_FromLong((long)err->code))) {
            PyObject_SetAttrString(exc, "code", v);
            Py_DECREF(v);
        }
        if ((v = PyLong_FromLong(err->line))) {
            PyObject_SetAttrString(exc, "line", v);
            Py_DECREF(v);
        }
        if ((v = PyLong_FromLongLong(err->offset))) {
            PyObject_SetAttrString(exc, "offset", v);
            Py_DECREF(v);
        }
        PyErr_Clear();
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *new_exc(PyObject *m, const char *name, PyObject *base, const char *doc)
{
    char full[96];
    snprintf(full, sizeof full, "qs_toolkit.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!e || PyModule_AddObjectRef(m, name, e) < 0) {
        Py_XDECREF(e);
        return NULL;
    }
    return e;
}

int errors_init(PyObject *m)
{
    if (!(qs_Error = new_exc(m, "Error", NULL, "A libqs error: the library's message; .code, .line, "
                                              ".offset as in qs_error.")))
        return -1;
    PyObject *fb = PyTuple_Pack(2, qs_Error, PyExc_ValueError);
    if (!fb)
        return -1;
    qs_FormatError = new_exc(m, "FormatError", fb, "Malformed input: a model, a .qsm, documents.");
    Py_DECREF(fb);
    if (!qs_FormatError ||
        !(qs_UnsupportedError = new_exc(m, "UnsupportedError", qs_Error,
                                        "Well-formed, but cannot be scored exactly (refused), or "
                                        "this machine cannot run the back end.")) ||
        !(qs_LimitError = new_exc(m, "LimitError", qs_Error, "Beyond a documented limit.")) ||
        !(qs_DeviceError = new_exc(m, "DeviceError", qs_Error, "The accelerator failed or is absent.")))
        return -1;
    return 0;
}
