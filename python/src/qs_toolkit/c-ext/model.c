/* model.c: the Model type: a model opened with qs_open (a path or bytes;
 * any format qs reads, compiled in memory, or a .qsm with its tuning
 * record), its scorers behind a read-write lock (core.h), its facts, the
 * names and categories its source recorded, info, the .qsm image, close. */
#include "core.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

unsigned qs_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    return 1;
}

/* Load a scorer from the model's image, with the tuning record applied
 * where it was measured here.  GIL released. */
static qs_scorer *load_scorer(ModelObject *self, qs_error *err)
{
    return qs_opened_load(&self->o, qs_cpus(), 0, 0, err);
}

/* The names, types and categories the model's source bytes record, kept
 * for the Python layer's data-frame checks (and pickled with the model). */
static void feature_cb(void *ctx, uint32_t feature, const char *name, size_t nlen,
                       const char *type, size_t tlen)
{
    PyObject *l = ctx, *t;
    if (PyErr_Occurred())
        return;
    t = Py_BuildValue("(s#s#)", name, (Py_ssize_t)nlen, type, (Py_ssize_t)tlen);
    if (!t || PyList_Append(l, t) != 0)
        PyErr_Clear(); /* not UTF-8 or no memory: the names are left out below */
    Py_XDECREF(t);
    (void)feature;
}

static void category_cb(void *ctx, uint32_t feature, uint32_t code, const char *text,
                        size_t len)
{
    PyObject *d = ctx;
    if (PyErr_Occurred())
        return;
    PyObject *k = PyLong_FromUnsignedLong(feature);
    PyObject *l = k ? PyDict_GetItemWithError(d, k) : NULL;
    if (k && !l && !PyErr_Occurred()) {
        l = PyList_New(0);
        if (l && PyDict_SetItem(d, k, l) != 0)
            Py_CLEAR(l);
        Py_XDECREF(l); /* the dict holds it */
    }
    PyObject *s = l ? PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace") : NULL;
    if (s)
        PyList_Append(l, s);
    Py_XDECREF(s);
    Py_XDECREF(k);
    (void)code;
}

/* LightGBM text: its last "pandas_categorical:" line's JSON, or NULL. */
static const char *pandas_categorical(const unsigned char *buf, size_t len, size_t *n)
{
    static const char key[] = "\npandas_categorical:";
    const size_t kl = sizeof key - 1;
    for (size_t i = len >= kl ? len - kl + 1 : 0; i-- > 0;) {
        if (buf[i] != '\n' || memcmp(buf + i, key, kl) != 0)
            continue;
        const unsigned char *p = buf + i + kl, *e = memchr(p, '\n', len - (i + kl));
        size_t m = e ? (size_t)(e - p) : len - (i + kl);
        while (m && (p[m - 1] == '\r' || p[m - 1] == ' '))
            m--;
        *n = m;
        return (const char *)p;
    }
    return NULL;
}

static int read_meta(ModelObject *self)
{
    self->features = PyList_New(0);
    self->categories = PyDict_New();
    Py_INCREF(Py_None);
    self->pandas_categorical = Py_None;
    if (!self->features || !self->categories)
        return -1;
    const char *src = (const char *)self->o.source;
    const size_t n = self->o.source_len;
    if (!src)
        return 0;
    qs_error err;
    qs_error_clear(&err);
    if (qs_source_list_features(src, n, feature_cb, self->features, &err) < 0 ||
        PyErr_Occurred()) {
        /* a malformed list the reader did not need: no names (positional) */
        PyErr_Clear();
        PyList_SetSlice(self->features, 0, PyList_GET_SIZE(self->features), NULL);
    }
    qs_error_clear(&err);
    if (qs_source_list_categories(src, n, category_cb, self->categories, &err) < 0) {
        PyErr_Clear();
        PyDict_Clear(self->categories);
    }
    if (PyErr_Occurred())
        return -1;
    size_t pl;
    const char *pc = self->o.format == QS_FMT_LIGHTGBM
                         ? pandas_categorical(self->o.source, n, &pl) : NULL;
    if (pc) {
        PyObject *s = PyUnicode_DecodeUTF8(pc, (Py_ssize_t)pl, "replace");
        if (!s)
            return -1;
        Py_SETREF(self->pandas_categorical, s);
    }
    return 0;
}

/* Model(source, format=None): source a path (str, bytes path through
 * os.fspath in the Python layer) or the model's bytes (any buffer). */
static int Model_init(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "source", "format", NULL };
    PyObject *source, *path = NULL;
    const char *fmt_name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|z:Model", kwlist, &source, &fmt_name))
        return -1;
    if (self->lock_ok || self->o.qsm) {
        PyErr_SetString(PyExc_RuntimeError, "Model.__init__ called twice");
        return -1;
    }
    qs_open_options opt = { QS_FMT_UNKNOWN, QS_OPEN_KEEP_SOURCE, qs_cpus(), 0, 0, 0 };
    if (fmt_name) {
        const qs_reader_info *r = qs_reader_by_name(fmt_name);
        if (!r) {
            /* the names the readers' table gives (lib/convert/convert.c) */
            char names[256];
            PyErr_Format(PyExc_ValueError, "unknown model format '%s' (expected %s)", fmt_name,
                         qs_reader_list(names, sizeof names, QS_READERS_EVERY_NAME));
            return -1;
        }
        opt.format = r->format;
    }
    Py_buffer view = { 0 };
    int have_view = 0;
    if (PyUnicode_Check(source)) {
        if (!PyUnicode_FSConverter(source, &path))
            return -1;
    } else if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) == 0) {
        have_view = 1;
    } else {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "source must be a path or bytes, not %s",
                     Py_TYPE(source)->tp_name);
        return -1;
    }
    qs_error err;
    qs_error_clear(&err);
    int rc, sys_errno;
    Py_BEGIN_ALLOW_THREADS
    rc = path ? qs_open(PyBytes_AS_STRING(path), NULL, 0, &opt, &self->o, &err)
              : qs_open(NULL, view.buf, (size_t)view.len, &opt, &self->o, &err);
    sys_errno = errno;
    Py_END_ALLOW_THREADS
    if (have_view)
        PyBuffer_Release(&view);
    Py_XDECREF(path);
    if (rc != 0) {
        if (err.code == QS_ERR_NOMEM)
            PyErr_NoMemory();
        else if (err.code == QS_ERR_IO) {
            /* OSError(errno, message): Python picks the subclass
             * (FileNotFoundError, ...) and sets .errno as open() would */
            PyObject *a = Py_BuildValue("(is)", sys_errno, err.msg);
            if (a) {
                PyErr_SetObject(PyExc_OSError, a);
                Py_DECREF(a);
            }
        }
        else
            raise_qs(&err, NULL);
        return -1;
    }
    self->d[0].s = self->o.scorer;
    self->d[0].trees = 0;
    self->d[0].tname[0] = 0;
    self->nd = 1;
    int meta = read_meta(self);
    free(self->o.source);
    self->o.source = NULL;
    self->o.source_len = 0;
    if (meta != 0)
        return -1;
    const qs_scorer *s = self->d[0].s;
    const qs_model *m = qs_scorer_model(s);
    qs_model_get_info(m, &self->info);
    snprintf(self->transform, sizeof self->transform, "%s", self->info.transform);
    qs_model_stats st;
    if (qs_model_get_stats(m, &st, &err) == 0) {
        snprintf(self->objective, sizeof self->objective, "%s", st.objective ? st.objective : "");
        qs_model_stats_free(&st);
    }
    self->num_features = self->info.num_features;
    /* the library's own numbering (the source table's first_column):
     * CatBoost's column j is qs's feature j + 1 (qs's LETOR numbering,
     * CatBoost's libsvm reader's) */
    const qs_source_info *src = qs_source_get(self->info.source);
    self->lead = src && self->num_features > 0 ? src->first_column : 0;
    self->num_classes = self->info.num_classes;
    self->num_trees = self->info.num_trees;
    self->iterations = qs_scorer_iterations(s);
    self->precision_float = self->info.float_precision;
    self->zero_band = qs_scorer_zero_band(s);
    static const qs_absent modes[3] = { QS_ABSENT_DEFAULT, QS_ABSENT_ZERO, QS_ABSENT_MISSING };
    for (int i = 0; i < 3; i++) {
        qs_row_format rf;
        qs_scorer_get_row_format(s, modes[i], &rf);
        self->fill[i] = rf.fill;
    }
    if (pthread_rwlock_init(&self->lock, NULL) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot create the model's lock");
        return -1;
    }
    self->lock_ok = 1;
    return 0;
}

static void free_scorers(ModelObject *self)
{
    for (size_t i = 0; i < self->nd; i++)
        qs_scorer_free(self->d[i].s);
    self->nd = 0;
    self->o.scorer = NULL; /* d[0].s, freed above */
    qs_opened_free(&self->o);
}

static void Model_dealloc(ModelObject *self)
{
    free_scorers(self);
    Py_CLEAR(self->features);
    Py_CLEAR(self->categories);
    Py_CLEAR(self->pandas_categorical);
    if (self->lock_ok)
        pthread_rwlock_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *closed_error(void)
{
    PyErr_SetString(PyExc_ValueError, "the model is closed");
    return NULL;
}

int check_open(ModelObject *self)
{
    if (!self->lock_ok) {
        PyErr_SetString(PyExc_ValueError, "the model was not loaded");
        return -1;
    }
    if (self->closed) {
        closed_error();
        return -1;
    }
    return 0;
}

static PyObject *Model_close(ModelObject *self, PyObject *unused)
{
    if (!self->lock_ok || self->closed)
        Py_RETURN_NONE;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_wrlock(&self->lock);
    self->closed = 1;
    free_scorers(self);
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* Find (or make and prepare) the scorer for w, and return it with the read
 * lock held.  GIL released by the caller.  NULL with err (lock not held);
 * *closed set when the model was closed meanwhile. */
static derived *find(ModelObject *self, const want *w)
{
    for (size_t i = 0; i < self->nd; i++)
        if (self->d[i].trees == w->trees && strcmp(self->d[i].tname, w->tname) == 0)
            return &self->d[i];
    return NULL;
}

qs_scorer *acquire(ModelObject *self, const want *w, int *closed, qs_error *err)
{
    pthread_rwlock_rdlock(&self->lock);
    if (self->closed) {
        pthread_rwlock_unlock(&self->lock);
        *closed = 1;
        return NULL;
    }
    derived *d = find(self, w);
    if (d && qs_scorer_prepared(d->s, w->b))
        return d->s;
    pthread_rwlock_unlock(&self->lock);
    pthread_rwlock_wrlock(&self->lock);
    if (self->closed) {
        pthread_rwlock_unlock(&self->lock);
        *closed = 1;
        return NULL;
    }
    d = find(self, w);
    if (!d) {
        if (self->nd == MAX_DERIVED) {
            /* keep the base, drop the oldest other (no one holds it: we
             * hold the write lock) */
            qs_scorer_free(self->d[1].s);
            memmove(&self->d[1], &self->d[2], (MAX_DERIVED - 2) * sizeof self->d[0]);
            self->nd--;
        }
        qs_scorer *s = load_scorer(self, err);
        if (s && w->trees && qs_scorer_truncate(s, w->trees, err) != 0) {
            qs_scorer_free(s);
            s = NULL;
        }
        if (s && w->tname[0] && qs_scorer_set_transform(s, w->tname, err) != 0) {
            qs_scorer_free(s);
            s = NULL;
        }
        if (!s) {
            pthread_rwlock_unlock(&self->lock);
            return NULL;
        }
        d = &self->d[self->nd++];
        d->s = s;
        d->trees = w->trees;
        snprintf(d->tname, sizeof d->tname, "%s", w->tname);
    }
    if (!qs_scorer_prepared(d->s, w->b) && qs_scorer_prepare(d->s, w->b, err) != 0) {
        pthread_rwlock_unlock(&self->lock);
        return NULL;
    }
    pthread_rwlock_unlock(&self->lock);
    /* again for reading; the scorer stays (only close frees scorers while
     * the model is open... and the eviction above, which a reader's lock
     * keeps away from the one it holds) */
    pthread_rwlock_rdlock(&self->lock);
    if (self->closed) {
        pthread_rwlock_unlock(&self->lock);
        *closed = 1;
        return NULL;
    }
    d = find(self, w);
    if (!d || !qs_scorer_prepared(d->s, w->b)) {
        /* evicted between the locks by another call: rare; ask again */
        pthread_rwlock_unlock(&self->lock);
        return acquire(self, w, closed, err);
    }
    return d->s;
}

/* Parse backend=, transform=, trees= into w.  -1 with an exception. */
int parse_want(ModelObject *self, PyObject *backend, PyObject *transform, PyObject *trees,
                      want *w)
{
    memset(w, 0, sizeof *w);
    w->b = QS_BACKEND_AUTO;
    if (backend && backend != Py_None) {
        const char *name = PyUnicode_Check(backend) ? PyUnicode_AsUTF8(backend) : NULL;
        if (!name) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "backend must be a string (a name of "
                                                 "qs_toolkit.backends())");
            return -1;
        }
        w->b = qs_backend_find(name);
        if (w->b == QS_BACKEND_UNKNOWN) {
            PyErr_Format(PyExc_ValueError, "unknown back end '%s' (qs_toolkit.backends() "
                         "lists them)", name);
            return -1;
        }
    }
    if (transform && transform != Py_None && transform != Py_False) {
        if (transform == Py_True) {
            w->transform = 1;
        } else if (PyUnicode_Check(transform)) {
            const char *name = PyUnicode_AsUTF8(transform);
            if (!name)
                return -1;
            if (strlen(name) == 0 || strlen(name) >= sizeof w->tname) {
                PyErr_Format(PyExc_ValueError, "unknown transform '%s'", name);
                return -1;
            }
            w->transform = 1;
            snprintf(w->tname, sizeof w->tname, "%s", name);
        } else {
            PyErr_SetString(PyExc_TypeError, "transform must be True, False or a transform's name");
            return -1;
        }
        if (!w->tname[0] && strcmp(self->transform, "unsupported") == 0) {
            PyErr_SetString(qs_UnsupportedError, "the model's output transform cannot be "
                                              "reproduced exactly; predict without transform");
            return -1;
        }
    }
    if (trees && trees != Py_None) {
        if (!PyIndex_Check(trees) || PyBool_Check(trees)) {
            PyErr_SetString(PyExc_TypeError, "trees must be an int (iterations) or None");
            return -1;
        }
        PyObject *ti = PyNumber_Index(trees);
        if (!ti)
            return -1;
        int over = 0;
        long long t = PyLong_AsLongLongAndOverflow(ti, &over);
        if (t == -1 && !over && PyErr_Occurred()) {
            Py_DECREF(ti);
            return -1;
        }
        if (over < 0 || (!over && t < 1)) {
            PyErr_Format(PyExc_ValueError, "trees must be at least 1, not %S", ti);
            Py_DECREF(ti);
            return -1;
        }
        Py_DECREF(ti);
        /* as qs-score: more iterations than the model has (any count, 2**64
         * too) score the whole model */
        if (!over && (uint64_t)t < self->iterations)
            w->trees = (uint64_t)t;
    }
    return 0;
}

int parse_threads(PyObject *threads, unsigned *out)
{
    if (!threads || threads == Py_None) {
        *out = qs_cpus();
        return 0;
    }
    if (!PyIndex_Check(threads) || PyBool_Check(threads)) {
        PyErr_SetString(PyExc_TypeError, "threads must be an int or None");
        return -1;
    }
    PyObject *ti = PyNumber_Index(threads);
    if (!ti)
        return -1;
    int over = 0;
    long long t = PyLong_AsLongLongAndOverflow(ti, &over);
    if (t == -1 && !over && PyErr_Occurred()) {
        Py_DECREF(ti);
        return -1;
    }
    if (over || t < 1 || t > 4096) {
        PyErr_Format(PyExc_ValueError, "threads must be 1 ... 4096, not %S", ti);
        Py_DECREF(ti);
        return -1;
    }
    Py_DECREF(ti);
    *out = (unsigned)t;
    return 0;
}

static int put(PyObject *d, const char *k, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return rc;
}

/* A histogram as a list of {key: value, "trees": count}, or NULL. */
static PyObject *hist_list(const char *key, const qs_hist_bin *h, size_t n)
{
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *e = Py_BuildValue("{s:K,s:K}", key, (unsigned long long)h[i].value, "trees",
                                    (unsigned long long)h[i].count);
        const int bad = !e || PyList_Append(l, e) != 0;
        Py_XDECREF(e);
        if (bad)
            Py_CLEAR(l);
    }
    return l;
}

static PyObject *str_or_none(const char *s)
{
    if (s && *s)
        return PyUnicode_FromString(s);
    Py_RETURN_NONE;
}

static const char *accumulate_name(int a)
{
    return a == 0 ? "double" : a == 1 ? "float" : "float-double";
}

/* The facts of qs-compile --info --json, as a dict (the same keys, less
 * "file" and "categories"). */
static PyObject *build_info(ModelObject *self, const qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    qs_model_stats st;
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_get_stats(m, &st, &err) != 0)
        return raise_qs(&err, NULL);
    qs_layout_info li;
    qs_scorer_get_layout_info(s, &li);
    PyObject *d = PyDict_New(), *l = NULL;
    if (!d)
        goto fail;
    if (put(d, "kind", PyUnicode_FromString(self->o.kind)) ||
        put(d, "source", PyUnicode_FromString(qs_source_name(mi.source))) ||
        put(d, "source_version", str_or_none(self->o.source_version)) ||
        put(d, "objective", PyUnicode_FromString(st.objective ? st.objective : "")) ||
        put(d, "transform", PyUnicode_FromString(mi.transform)) ||
        put(d, "precision", PyUnicode_FromString(mi.float_precision ? "float" : "double")) ||
        put(d, "accumulate", PyUnicode_FromString(accumulate_name(mi.float_accumulate))) ||
        put(d, "compare", PyUnicode_FromString(st.compare)) ||
        put(d, "absent", PyUnicode_FromString(mi.absent_is_missing ? "missing" : "zero")) ||
        put(d, "features", Py_BuildValue("{s:I,s:I,s:L}", "count", mi.num_features, "used",
                                         st.features_used, "max_used",
                                         (long long)st.max_feature_used)) ||
        put(d, "classes", PyLong_FromUnsignedLong(mi.num_classes)) ||
        put(d, "trees", PyLong_FromUnsignedLongLong(mi.num_trees)) ||
        put(d, "iterations", PyLong_FromUnsignedLongLong(qs_scorer_iterations(s))) ||
        put(d, "nodes", PyLong_FromUnsignedLongLong(st.nodes)) ||
        put(d, "leaves", PyLong_FromUnsignedLongLong(st.leaves)) ||
        put(d, "categorical_splits", PyLong_FromUnsignedLongLong(st.cat_nodes)) ||
        put(d, "max_leaves", PyLong_FromUnsignedLong(mi.max_leaves)) ||
        put(d, "max_depth", PyLong_FromUnsignedLong(mi.max_depth)))
        goto fail;
    if (put(d, "leaves_histogram", hist_list("leaves", st.leaves_hist, st.n_leaves_hist)) ||
        put(d, "depth_histogram", hist_list("depth", st.depth_hist, st.n_depth_hist)))
        goto fail;
    if (put(d, "oblivious", PyBool_FromLong(mi.oblivious)) ||
        put(d, "oblivious_trees", PyLong_FromUnsignedLongLong(st.oblivious_trees)))
        goto fail;
    if (!(l = PyList_New(0)))
        goto fail;
    for (uint32_t b = 0; b < li.nblocks; b++) {
        qs_block_info bi;
        qs_scorer_get_block(s, b, &bi);
        PyObject *e = Py_BuildValue("{s:K,s:K,s:s,s:I,s:I,s:K,s:K}", "first_tree",
                                    (unsigned long long)bi.first_tree, "trees",
                                    (unsigned long long)bi.num_trees, "kind",
                                    bi.oblivious ? "qs-omega" : "qs", "mask_bits", bi.width,
                                    "mask_words", bi.words, "entries",
                                    (unsigned long long)bi.entries, "reversed",
                                    (unsigned long long)bi.reversed_trees);
        if (!e || PyList_Append(l, e)) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }
    if (put(d, "layout",
            Py_BuildValue("{s:I,s:I,s:I,s:I,s:K,s:K,s:K,s:K,s:I,s:N}", "tree_block", li.tree_block,
                          "stored_tree_block", li.stored_tree_block, "doc_block", li.doc_block,
                          "delta", li.delta, "reversed_trees", (unsigned long long)li.reversed_trees,
                          "entries", (unsigned long long)li.entries, "special_entries",
                          (unsigned long long)li.special_entries, "leaf_values",
                          (unsigned long long)li.leaf_values, "categorical_nodes", li.cat_nodes,
                          "blocks", l)))
        goto fail_nol;
    l = NULL; /* the layout's dict holds it now */
    {
        /* what the GPU back end would run for the model, as qs-compile --info
         * says it (no device opened) */
        char gpu[640], plan[400];
        const qs_backend gb = qs_backend_find("cuda");
        qs_error gerr;
        qs_error_clear(&gerr);
        if (gb == QS_BACKEND_UNKNOWN)
            snprintf(gpu, sizeof gpu, "no GPU back end in this build");
        else if (qs_scorer_backend_plan(s, gb, plan, sizeof plan, &gerr) != 0) {
            if (gerr.code == QS_ERR_NOMEM) {
                PyErr_NoMemory();
                goto fail;
            }
            snprintf(gpu, sizeof gpu, "the cuda back end cannot plan for this model: %s",
                     gerr.msg);
        } else
            snprintf(gpu, sizeof gpu, "the cuda back end would run %s", plan);
        if (put(d, "gpu", PyUnicode_FromString(gpu)))
            goto fail;
    }
    {
        /* the back end auto runs here and why, and the one qs-score runs
         * (a tuning record measured here may name another), as qs-compile
         * --info says them */
        char why[200];
        const qs_backend a = qs_scorer_auto_backend(s, why, sizeof why);
        const qs_backend t = qs_tuning_backend(self->o.has_tuning ? &self->o.tuning : NULL);
        if (put(d, "auto", Py_BuildValue("{s:s,s:s,s:s}", "backend", qs_backend_name(a), "why", why,
                                         "qs_score_runs",
                                         qs_backend_name(t == QS_BACKEND_AUTO ? a : t))))
            goto fail;
    }
    if (self->o.has_tuning) {
        const qs_tuning *t = &self->o.tuning;
        const char *on = qs_order_name((qs_order)t->order);
        if (put(d, "tuning",
                Py_BuildValue("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:d,s:d,s:s,s:I,s:[KKK],s:s,"
                              "s:L,s:O}",
                              "order", on ? on : "?", "s", t->inner_s, "d", t->inner_d,
                              "tree_block", t->tree_block, "doc_block", t->doc_block, "delta",
                              t->delta, "threads", t->threads, "backend",
                              t->backend[0] ? t->backend : "auto", "default_ns", t->default_ns,
                              "tuned_ns", t->tuned_ns, "cpu_model", t->cpu_model, "cores",
                              t->cores, "cache", (unsigned long long)t->cache[0],
                              (unsigned long long)t->cache[1], (unsigned long long)t->cache[2],
                              "version", t->version, "date", (long long)t->date, "this_machine",
                              qs_tuning_matches(t) ? Py_True : Py_False)))
            goto fail;
    } else if (PyDict_SetItemString(d, "tuning", Py_None)) {
        goto fail;
    }
    if (self->o.is_qsm) {
        qs_qsm_file_info fi;
        if (qs_qsm_get_file_info(self->o.qsm, self->o.qsm_len, &fi, &err) != 0) {
            raise_qs(&err, NULL);
            goto fail;
        }
        if (!(l = PyList_New(0)))
            goto fail;
        for (uint32_t i = 0; i < fi.nsections; i++) {
            const qs_qsm_section *q = &fi.sections[i];
            char crc[9];
            snprintf(crc, sizeof crc, "%08x", q->crc);
            PyObject *e = Py_BuildValue("{s:s,s:O,s:O,s:K,s:K,s:K,s:s}", "id", q->id, "required",
                                        q->flags & 1 ? Py_True : Py_False, "zstd",
                                        q->flags & 2 ? Py_True : Py_False, "offset",
                                        (unsigned long long)q->offset, "stored_bytes",
                                        (unsigned long long)q->stored_size, "raw_bytes",
                                        (unsigned long long)q->raw_size, "crc32c", crc);
            if (!e || PyList_Append(l, e)) {
                Py_XDECREF(e);
                goto fail;
            }
            Py_DECREF(e);
        }
        char ver[32];
        snprintf(ver, sizeof ver, "%u.%u", fi.major, fi.minor);
        if (put(d, "qsm", Py_BuildValue("{s:s,s:N}", "version", ver, "sections", l)))
            goto fail_nol;
    } else if (PyDict_SetItemString(d, "qsm", Py_None)) {
        goto fail;
    }
    qs_model_stats_free(&st);
    return d;
fail:
    Py_XDECREF(l);
fail_nol:
    Py_XDECREF(d);
    qs_model_stats_free(&st);
    return NULL;
}

static PyObject *Model_info(ModelObject *self, PyObject *unused)
{
    if (check_open(self) != 0)
        return NULL;
    int closed = 0;
    qs_scorer *stored = NULL;
    qs_error err;
    qs_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->lock);
    closed = self->closed;
    if (closed)
        pthread_rwlock_unlock(&self->lock);
    else if (self->o.tuned)
        /* the facts of the file as qs-compile --info gives them: the stored
         * layout, not the one the tuning record makes for scoring */
        stored = qs_scorer_load_threads(self->o.qsm, self->o.qsm_len, qs_cpus(), &err);
    Py_END_ALLOW_THREADS
    if (closed)
        return closed_error();
    if (self->o.tuned && !stored) {
        pthread_rwlock_unlock(&self->lock);
        return raise_qs(&err, NULL);
    }
    PyObject *r = build_info(self, stored ? stored : self->d[0].s);
    qs_scorer_free(stored);
    pthread_rwlock_unlock(&self->lock);
    return r;
}

static PyObject *Model_qsm_bytes(ModelObject *self, PyObject *unused)
{
    if (check_open(self) != 0)
        return NULL;
    int closed = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->lock);
    closed = self->closed;
    if (closed)
        pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    if (closed)
        return closed_error();
    PyObject *r = PyBytes_FromStringAndSize((const char *)self->o.qsm, (Py_ssize_t)self->o.qsm_len);
    pthread_rwlock_unlock(&self->lock);
    return r;
}

static PyObject *get_num_features(ModelObject *self, void *c) { return PyLong_FromUnsignedLong(self->num_features - self->lead); }
static PyObject *get_lead(ModelObject *self, void *c) { return PyLong_FromUnsignedLong(self->lead); }
static PyObject *get_features(ModelObject *self, void *c) { return Py_NewRef(self->features ? self->features : Py_None); }
static PyObject *get_categories(ModelObject *self, void *c) { return Py_NewRef(self->categories ? self->categories : Py_None); }
static PyObject *get_pandas_categorical(ModelObject *self, void *c) { return Py_NewRef(self->pandas_categorical ? self->pandas_categorical : Py_None); }
static PyObject *get_num_classes(ModelObject *self, void *c) { return PyLong_FromUnsignedLong(self->num_classes); }
static PyObject *get_num_trees(ModelObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->num_trees); }
static PyObject *get_iterations(ModelObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->iterations); }
static PyObject *get_objective(ModelObject *self, void *c) { return PyUnicode_FromString(self->objective); }
static PyObject *get_transform(ModelObject *self, void *c) { return PyUnicode_FromString(self->transform); }
static PyObject *get_source(ModelObject *self, void *c) { return PyUnicode_FromString(qs_source_name(self->info.source)); }
static PyObject *get_closed(ModelObject *self, void *c) { return PyBool_FromLong(self->closed || !self->lock_ok); }
static PyObject *get_precision(ModelObject *self, void *c) { return PyUnicode_FromString(self->precision_float ? "float" : "double"); }
static PyObject *get_absent(ModelObject *self, void *c) { return PyUnicode_FromString(self->info.absent_is_missing ? "missing" : "zero"); }

static PyGetSetDef Model_getset[] = {
    { "num_features", (getter)get_num_features, NULL, "Columns of X: the features the model reads (CatBoost: its float features, numbered as CatBoost numbers them).", NULL },
    { "_lead", (getter)get_lead, NULL, NULL, NULL },
    { "_features", (getter)get_features, NULL, NULL, NULL },
    { "_categories", (getter)get_categories, NULL, NULL, NULL },
    { "_pandas_categorical", (getter)get_pandas_categorical, NULL, NULL, NULL },
    { "num_classes", (getter)get_num_classes, NULL, "Raw output columns (classes).", NULL },
    { "num_trees", (getter)get_num_trees, NULL, "Trees in the model.", NULL },
    { "num_iterations", (getter)get_iterations, NULL, "Iterations: trees / classes.", NULL },
    { "objective", (getter)get_objective, NULL, "The objective as the source library wrote it.", NULL },
    { "transform", (getter)get_transform, NULL, "The model's output function (sigmoid, softmax, ...).", NULL },
    { "source", (getter)get_source, NULL, "The library that trained the model (lightgbm, xgboost, ...).", NULL },
    { "closed", (getter)get_closed, NULL, "True once close() was called.", NULL },
    { "precision", (getter)get_precision, NULL, "How the model reads values: 'double' or 'float' (float32).", NULL },
    { "absent", (getter)get_absent, NULL, "What an absent CSR entry means by default: 'zero' or 'missing'.", NULL },
    { NULL }
};

static PyMethodDef Model_methods[] = {
    { "_predict_dense", (PyCFunction)(void (*)(void))Model_predict_dense, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_predict_csr", (PyCFunction)(void (*)(void))Model_predict_csr, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_leaves_dense", (PyCFunction)(void (*)(void))Model_leaves_dense, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_leaves_csr", (PyCFunction)(void (*)(void))Model_leaves_csr, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_info", (PyCFunction)Model_info, METH_NOARGS, NULL },
    { "to_qsm", (PyCFunction)Model_qsm_bytes, METH_NOARGS,
      "The model's .qsm image (bytes): what qs-compile writes for it." },
    { "close", (PyCFunction)Model_close, METH_NOARGS,
      "Free the model's memory; every later call raises ValueError. Waits for running predictions." },
    { NULL }
};

PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "qs_toolkit._core.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A loaded model (the C part of qs_toolkit.Model).",
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
    .tp_init = (initproc)Model_init,
    .tp_new = PyType_GenericNew,
};

/* --------------------------------------------------- module functions */
