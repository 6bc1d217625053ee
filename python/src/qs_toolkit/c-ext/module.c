/* module.c: the module qs_toolkit._core: the back ends, this build's
 * facts, the ranking metrics (qs_eval), score printing, and the types and
 * exceptions of the other files. */
#define QS_TOOLKIT_MODULE_C
#include "core.h"

#include <string.h>

static PyObject *flag_list(unsigned flags, int is_auto)
{
    static const struct { unsigned f; const char *name; } names[] = {
        { QS_BACKEND_F_REFERENCE, "reference" }, { QS_BACKEND_F_BASELINE, "baseline" },
        { QS_BACKEND_F_OBLIVIOUS_ONLY, "oblivious-only" }, { QS_BACKEND_F_SIMD, "simd" },
        { QS_BACKEND_F_THREADS, "threads" }, { QS_BACKEND_F_DEVICE, "device" },
        { QS_BACKEND_F_ALIAS, "alias" }, { QS_BACKEND_F_BATCH, "batch" },
    };
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < sizeof names / sizeof names[0]; i++)
        if (flags & names[i].f) {
            PyObject *s = PyUnicode_FromString(names[i].name);
            if (!s || PyList_Append(l, s)) {
                Py_XDECREF(s);
                Py_CLEAR(l);
                break;
            }
            Py_DECREF(s);
        }
    /* predict(threads=) runs every back end on several threads, as
     * qs-score --threads does: "threads" for each, as --list-backends */
    if (l && !(flags & QS_BACKEND_F_THREADS)) {
        PyObject *s = PyUnicode_FromString("threads");
        if (!s || PyList_Append(l, s))
            Py_CLEAR(l);
        Py_XDECREF(s);
    }
    if (l && is_auto) {
        PyObject *s = PyUnicode_FromString("auto");
        if (!s || PyList_Append(l, s))
            Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}

static PyObject *mod_backends(PyObject *mod, PyObject *unused)
{
    PyObject *l = PyList_New(0);
    if (!l)
        return NULL;
    const qs_backend a = qs_backend_auto();
    for (int b = 0; b < qs_backend_count(); b++) {
        qs_backend_info bi;
        if (qs_backend_get_info(b, &bi) != 0)
            continue;
        PyObject *e = Py_BuildValue("{s:s,s:O,s:s,s:N,s:s,s:s}", "name", bi.name, "available",
                                    bi.available ? Py_True : Py_False, "why",
                                    bi.available ? "" : bi.why, "flags",
                                    flag_list(bi.flags, b == a), "summary", bi.summary, "note",
                                    bi.available ? bi.why : "");
        if (!e || PyList_Append(l, e)) {
            Py_XDECREF(e);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(e);
    }
    return l;
}

static PyObject *mod_build_info(PyObject *mod, PyObject *unused)
{
    qs_build_info bi;
    qs_build_get_info(&bi);
    return Py_BuildValue("{s:s,s:O,s:O,s:O,s:s,s:s,s:s,s:I}", "version", bi.version, "openmp",
                         bi.openmp ? Py_True : Py_False, "numa", bi.numa ? Py_True : Py_False,
                         "cuda", bi.cuda ? Py_True : Py_False, "cpu_detected", bi.cpu_detected,
                         "cpu_enabled", bi.cpu_enabled, "auto", qs_backend_name(qs_backend_auto()),
                         "cpus", qs_cpus());
}

/* ndcg: the metric over queries, as qs-eval computes it.
 * _eval(labels: list[str], qids: list[str] | None, scores: float64 array,
 *       metric, ks: list[int], conv: dict[str, str], preset: str | None)
 * -> (mean: list[float], per_query: list[(qid, [values], ndocs)]) */
static PyObject *mod_eval(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "labels", "qids", "scores", "metric", "ks", "preset", "knobs", NULL };
    PyObject *labels, *qids, *scores, *ks, *knobs;
    const char *metric, *preset;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OO!sO!zO!:_eval", kwlist, &PyList_Type, &labels,
                                     &qids, &PyArray_Type, &scores, &metric, &PyList_Type, &ks,
                                     &preset, &PyDict_Type, &knobs))
        return NULL;
    PyArrayObject *sc = (PyArrayObject *)scores;
    const Py_ssize_t n = PyList_GET_SIZE(labels);
    if (PyArray_NDIM(sc) != 1 || PyArray_TYPE(sc) != NPY_FLOAT64 ||
        !PyArray_IS_C_CONTIGUOUS(sc) || PyArray_DIM(sc, 0) != n ||
        (qids != Py_None && (!PyList_Check(qids) || PyList_GET_SIZE(qids) != n))) {
        PyErr_SetString(PyExc_ValueError, "labels, scores and qids must have one entry per "
                                          "document");
        return NULL;
    }
    qs_eval_options opt;
    memset(&opt, 0, sizeof opt);
    qs_error err;
    qs_error_clear(&err);
    int m = qs_metric_from_name(metric);
    if (m < 0) {
        PyErr_Format(PyExc_ValueError, "unknown metric '%s' (expected ndcg, err, map or p)",
                     metric);
        return NULL;
    }
    opt.metric = (qs_metric)m;
    Py_ssize_t nk = PyList_GET_SIZE(ks);
    if (nk < 1 || nk > 1024) {
        PyErr_SetString(PyExc_ValueError, "k: give 1 to 1024 cutoffs");
        return NULL;
    }
    unsigned kv[1024];
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *ko = PyList_GET_ITEM(ks, i);
        int over = 0;
        long long k = PyLong_Check(ko) ? PyLong_AsLongLongAndOverflow(ko, &over) : -1;
        if (k == -1 && !over && PyErr_Occurred())
            return NULL;
        if (!PyLong_Check(ko) || over || k < 0 || k > 1000000000L) {
            PyErr_Format(PyExc_ValueError, "bad cutoff %R (0 means the whole list)", ko);
            return NULL;
        }
        kv[i] = (unsigned)k;
    }
    opt.ks = kv;
    opt.nk = (size_t)nk;
    qs_eval_conv_default(&opt.conv);
    if (preset && qs_eval_conv_preset(&opt.conv, preset, &err) != 0)
        return raise_qs(&err, NULL);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(knobs, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key), *v = PyUnicode_AsUTF8(value);
        if (!k || !v)
            return NULL;
        if (qs_eval_conv_set(&opt.conv, k, v, &err) != 0)
            return raise_qs(&err, NULL);
    }
    if (qids == Py_None && opt.conv.group == QS_GROUP_QID) {
        /* one query: the same as block grouping */
    }
    qs_eval *e = qs_eval_new(&opt, &err);
    if (!e)
        return raise_qs(&err, NULL);
    const double *s = (const double *)PyArray_DATA(sc);
    for (Py_ssize_t i = 0; i < n; i++) {
        qs_eval_doc doc;
        Py_ssize_t ll = 0, ql = 0;
        doc.label = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(labels, i), &ll);
        doc.label_len = (size_t)ll;
        doc.qid = NULL;
        doc.qid_len = 0;
        if (qids != Py_None) {
            doc.qid = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(qids, i), &ql);
            doc.qid_len = (size_t)ql;
            if (!doc.qid) {
                qs_eval_free(e);
                return NULL;
            }
        }
        if (!doc.label) {
            qs_eval_free(e);
            return NULL;
        }
        doc.score = s[i];
        if (qs_eval_add(e, &doc, &err) < 0) {
            qs_eval_free(e);
            char pre[64];
            snprintf(pre, sizeof pre, "document %zd: ", i);
            return raise_qs(&err, pre);
        }
    }
    if (qs_eval_finish(e, &err) != 0) {
        qs_eval_free(e);
        return raise_qs(&err, NULL);
    }
    const double *mean = qs_eval_mean(e);
    PyObject *ml = PyList_New(nk), *ql = NULL;
    for (Py_ssize_t i = 0; ml && i < nk; i++)
        PyList_SET_ITEM(ml, i, PyFloat_FromDouble(mean[i]));
    const size_t nq = qs_eval_num_queries(e);
    ql = ml ? PyList_New((Py_ssize_t)nq) : NULL;
    for (size_t q = 0; ql && q < nq; q++) {
        size_t len;
        const char *qid = qs_eval_query_qid(e, q, &len);
        const double *v = qs_eval_query_values(e, q);
        PyObject *vl = PyList_New(nk);
        for (Py_ssize_t i = 0; vl && i < nk; i++)
            PyList_SET_ITEM(vl, i, PyFloat_FromDouble(v[i]));
        PyObject *t = vl ? Py_BuildValue("(s#Nn)", qid ? qid : "", (Py_ssize_t)(qid ? len : 0), vl,
                                         (Py_ssize_t)qs_eval_query_docs(e, q))
                         : NULL;
        if (!t) {
            Py_CLEAR(ql);
            break;
        }
        PyList_SET_ITEM(ql, (Py_ssize_t)q, t);
    }
    char desc[256];
    qs_eval_conv_describe(&opt.conv, desc, sizeof desc);
    qs_eval_free(e);
    if (!ml || !ql) {
        Py_XDECREF(ml);
        Py_XDECREF(ql);
        return NULL;
    }
    return Py_BuildValue("(NNs)", ml, ql, desc);
}


static PyObject *mod_format_score(PyObject *mod, PyObject *args)
{
    double v;
    PyObject *dobj;
    if (!PyArg_ParseTuple(args, "dO:format_score", &v, &dobj))
        return NULL;
    if (!PyIndex_Check(dobj) || PyBool_Check(dobj)) {
        PyErr_SetString(PyExc_TypeError, "digits must be an int (17 or 9)");
        return NULL;
    }
    PyObject *di = PyNumber_Index(dobj);
    if (!di)
        return NULL;
    int over = 0;
    long long digits = PyLong_AsLongLongAndOverflow(di, &over);
    Py_DECREF(di);
    if (digits == -1 && !over && PyErr_Occurred())
        return NULL;
    if (over || digits < 1 || digits > 17) {
        PyErr_SetString(PyExc_ValueError, "digits must be 1 ... 17");
        return NULL;
    }
    char buf[QS_FORMAT_SCORE_MAX];
    size_t n = qs_format_score(buf, v, (int)digits);
    return PyUnicode_FromStringAndSize(buf, (Py_ssize_t)n);
}

static PyMethodDef module_methods[] = {
    { "backends", mod_backends, METH_NOARGS, NULL },
    { "build_info", mod_build_info, METH_NOARGS, NULL },
    { "_eval", (PyCFunction)(void (*)(void))mod_eval, METH_VARARGS | METH_KEYWORDS, NULL },
    { "format_score", mod_format_score, METH_VARARGS, NULL },
    { NULL }
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_core", "libqs through the CPython and NumPy C APIs.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__core(void);
PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyType_Ready(&ModelType) < 0 || PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0)
        goto fail;
    if (errors_init(m) != 0)
        goto fail;
    if (PyModule_AddStringConstant(m, "LIBQS_VERSION", QS_VERSION_STRING) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
