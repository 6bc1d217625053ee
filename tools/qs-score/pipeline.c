/* pipeline.c: qs-score's text path, one thread or many (pipeline.h).
 *
 * A chunk is about job->chunk_bytes of input cut after its last newline
 * (the rest starts the next chunk).  A worker parses its chunk's lines into
 * its workspace's slots, scores them a batch at a time and formats the
 * scores into the chunk's output buffer.  With threads, a ring of 3 chunks
 * per thread is in flight: a worker takes the reader lock, reads the next
 * chunk into the next free slot of the ring, processes it, and then, when
 * the writer lock is free, writes every finished chunk that is next in
 * input order.  Memory is bounded by the ring, whatever the input's size:
 * 3 x threads x (chunk_bytes + the longest line) of text and as much
 * output, plus one workspace per thread.
 *
 * A chunk whose processing fails (a bad line, a read error, a line over
 * the limit) stops the reading; every chunk before it is written, then its
 * own output (the documents before the bad line), then the error is
 * reported with its line number in the whole input: the same bytes and the
 * same message as one thread. */
#include "pipeline.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if QS_HAVE_NUMA
#include <numa.h>
#endif

enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_DONE = 2 };

typedef struct chunk {
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_cap;
    long lines;        /* lines processed */
    int too_long;      /* after these lines comes a line longer than PIPE_MAX_LINE */
    int read_errno;    /* a read failed after these lines (0: none) */
    int oom;           /* out of memory while reading or formatting */
    long bad_line;     /* first bad line, 1-based within the chunk; -1: a scoring error */
    long extra_line;   /* first line with a feature id beyond the model (0: none) */
    long long extra_id;
    qs_error err;
    int state;         /* SLOT_*, atomic */
    uint64_t seq;
} chunk;

typedef struct reader {
    FILE *f;
    size_t chunk_bytes;
    char *carry;       /* the start of a line that the last chunk did not end */
    size_t carry_len, carry_cap;
    int eof;
} reader;

typedef struct doc_meta {
    const char *label, *qid; /* point into the chunk's input */
    size_t label_len, qid_len;
    int has_qid;
} doc_meta;

typedef struct worker {
    const pipe_job *job;
    const qs_scorer *s;
    qs_workspace *w;
    uint32_t nslots, K, nfeatures;
    int digits;
    double *batch;
    doc_meta *meta;
    uint64_t ntrees;   /* --leaves: trees, and a batch of their exit leaves */
    uint32_t *leaves;
} worker;

static int chunk_failed(const chunk *c)
{
    return c->bad_line != 0 || c->too_long || c->read_errno || c->oom;
}

/* ------------------------------------------------------------ reading */

static int reserve(char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 4096;
    while (nc < need)
        nc *= 2;
    char *q = realloc(*p, nc);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* Read the next chunk into c: whole lines (the last one may lack its
 * newline at the end of the input).  Returns 0 when the input is done. */
static int read_chunk(reader *r, chunk *c)
{
    c->in_len = c->out_len = 0;
    c->lines = 0;
    c->too_long = c->read_errno = c->oom = 0;
    c->bad_line = 0;
    c->extra_line = 0;
    if (r->eof && r->carry_len == 0)
        return 0;
    size_t target = r->chunk_bytes > r->carry_len ? r->chunk_bytes : r->carry_len + 1;
    if (reserve(&c->in, &c->in_cap, target) != 0) {
        c->oom = 1;
        r->eof = 1;
        return 1;
    }
    if (r->carry_len)
        memcpy(c->in, r->carry, r->carry_len);
    c->in_len = r->carry_len;
    r->carry_len = 0;
    size_t scanned = 0; /* c->in[0 .. scanned) holds no newline */
    for (;;) {
        while (!r->eof && c->in_len < target) {
            size_t got = fread(c->in + c->in_len, 1, target - c->in_len, r->f);
            c->in_len += got;
            if (got == 0) {
                if (ferror(r->f)) {
                    c->read_errno = errno ? errno : EIO;
                    c->in_len = 0;
                }
                r->eof = 1;
            }
        }
        char *nl = c->in_len > scanned ? memrchr(c->in + scanned, '\n', c->in_len - scanned) : NULL;
        if (nl) {
            size_t keep = (size_t)(nl - c->in) + 1;
            if (reserve(&r->carry, &r->carry_cap, c->in_len - keep) != 0) {
                c->oom = 1;
                r->eof = 1;
                return 1;
            }
            if (c->in_len > keep)
                memcpy(r->carry, c->in + keep, c->in_len - keep);
            r->carry_len = c->in_len - keep;
            c->in_len = keep;
            return 1;
        }
        if (r->eof)
            return 1; /* the last line, without a newline (or a read error) */
        /* One line fills the buffer: it must end within the limit. */
        if (c->in_len >= PIPE_MAX_LINE) {
            c->in_len = 0;
            c->too_long = 1;
            r->eof = 1;
            return 1;
        }
        scanned = c->in_len;
        target = c->in_len * 2 < PIPE_MAX_LINE ? c->in_len * 2 : PIPE_MAX_LINE;
        if (reserve(&c->in, &c->in_cap, target) != 0) {
            c->oom = 1;
            r->eof = 1;
            return 1;
        }
    }
}

/* ------------------------------------------------------------ workers */

static int worker_init(worker *wk, const pipe_job *job, const qs_scorer *s, qs_error *err)
{
    memset(wk, 0, sizeof *wk);
    wk->job = job;
    wk->s = s;
    wk->w = qs_workspace_new(s, err);
    if (!wk->w)
        return -1;
    wk->K = job->info->num_classes;
    wk->nfeatures = job->info->num_features;
    wk->nslots = qs_workspace_slots(wk->w);
    wk->digits = qs_score_digits(s);
    wk->batch = malloc(sizeof(double) * wk->K * wk->nslots);
    wk->meta = calloc(wk->nslots, sizeof *wk->meta);
    wk->ntrees = job->info->num_trees;
    if (job->leaves)
        wk->leaves = wk->ntrees > SIZE_MAX / sizeof(uint32_t) / wk->nslots
                         ? NULL
                         : malloc(sizeof(uint32_t) * (size_t)(wk->ntrees ? wk->ntrees : 1) * wk->nslots);
    if (!wk->batch || !wk->meta || (job->leaves && !wk->leaves)) {
        qs_error_clear(err);
        err->code = QS_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory (a batch of %u documents)",
                 wk->nslots);
        return -1;
    }
    return 0;
}

static void worker_free(worker *wk)
{
    qs_workspace_free(wk->w);
    free(wk->batch);
    free(wk->meta);
    free(wk->leaves);
}

/* --leaves: slots 0 .. n-1's exit leaves, one line each, tab-separated. */
static int flush_leaves(worker *wk, chunk *c, uint32_t n)
{
    if (qs_score_leaves(wk->s, wk->w, wk->job->backend, n, wk->leaves, &c->err) != 0) {
        c->bad_line = -1;
        return -1;
    }
    const uint64_t T = wk->ntrees;
    for (uint32_t d = 0; d < n; d++) {
        if (T > (SIZE_MAX - 2) / 12 || reserve(&c->out, &c->out_cap, c->out_len + T * 12 + 2) != 0) {
            c->oom = 1;
            return -1;
        }
        const uint32_t *lf = wk->leaves + (size_t)d * T;
        for (uint64_t t = 0; t < T; t++)
            c->out_len += (size_t)snprintf(c->out + c->out_len, 12, "%s%u", t ? "\t" : "", lf[t]);
        c->out[c->out_len++] = '\n';
    }
    return 0;
}

static void put(chunk *c, const char *s, size_t n)
{
    if (n)
        memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
}

/* Score slots 0 .. n-1 and append their lines to c's output. */
static int flush_batch(worker *wk, chunk *c, uint32_t n)
{
    const pipe_job *job = wk->job;
    if (job->leaves)
        return flush_leaves(wk, c, n);
    if (qs_score_batch(wk->s, wk->w, job->backend, n, wk->batch, &c->err) != 0) {
        c->bad_line = -1;
        return -1;
    }
    for (uint32_t d = 0; d < n; d++) {
        double *sc = wk->batch + (size_t)d * wk->K;
        const doc_meta *dm = &wk->meta[d];
        size_t need = (size_t)wk->K * 32 + 2 + (job->annotate ? dm->label_len + dm->qid_len + 2 : 0);
        if (reserve(&c->out, &c->out_cap, c->out_len + need) != 0) {
            c->oom = 1;
            return -1;
        }
        if (job->transform)
            qs_transform(wk->s, sc);
        if (job->annotate) {
            put(c, dm->label, dm->label_len);
            put(c, "\t", 1);
            if (dm->has_qid)
                put(c, dm->qid, dm->qid_len);
            put(c, "\t", 1);
        }
        const uint32_t ncol = job->transform ? qs_transform_columns(wk->s) : wk->K;
        for (uint32_t k = 0; k < ncol; k++)
            c->out_len += (size_t)snprintf(c->out + c->out_len, 32, "%s%.*g", k ? "\t" : "",
                                           wk->digits, sc[k]);
        c->out[c->out_len++] = '\n';
    }
    return 0;
}

/* Parse, score and format every line of c; stop at the first bad line,
 * after scoring the documents before it. */
static void process(worker *wk, chunk *c)
{
    const pipe_job *job = wk->job;
    const char *p = c->in, *end = c->in + c->in_len;
    uint32_t n = 0;
    long line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        qs_letor_line lm;
        int is_doc;
        qs_workspace_select(wk->w, n);
        if (qs_letor_parse(wk->s, wk->w, job->absent, p, len, &lm, &is_doc, &c->err) != 0) {
            c->bad_line = line;
            break;
        }
        if (is_doc && lm.max_id >= (long long)wk->nfeatures && !c->extra_line) {
            /* LightGBM and XGBoost refuse such a mismatch; sparse LETOR
             * files often carry extra ids: a warning (emit), or an error. */
            c->extra_line = line;
            c->extra_id = lm.max_id;
            if (job->strict_features) {
                qs_error_clear(&c->err);
                c->err.code = QS_ERR_FORMAT;
                snprintf(c->err.msg, sizeof c->err.msg,
                         "feature id %lld is beyond the model's %u features (ids 0..%lld; "
                         "--strict-features)",
                         lm.max_id, wk->nfeatures, (long long)wk->nfeatures - 1);
                c->bad_line = line;
                break;
            }
        }
        p = nl ? nl + 1 : end;
        if (!is_doc)
            continue;
        doc_meta *dm = &wk->meta[n];
        dm->label = lm.label;
        dm->label_len = lm.label_len;
        dm->has_qid = lm.qid != NULL;
        dm->qid = lm.qid;
        dm->qid_len = lm.qid_len;
        if (++n == wk->nslots) {
            if (flush_batch(wk, c, n) != 0)
                return;
            n = 0;
        }
    }
    c->lines = c->bad_line > 0 ? c->bad_line - 1 : line;
    if (n > 0) {
        qs_error keep = c->err;
        long bad = c->bad_line;
        c->bad_line = 0;
        if (flush_batch(wk, c, n) != 0)
            return;
        c->err = keep;
        c->bad_line = bad;
    }
}

/* ------------------------------------------------------------ writing */

typedef struct writer {
    const pipe_job *job;
    long lines; /* lines of the chunks written so far */
    int extra_warned;
} writer;

static uint32_t model_features(const pipe_job *job) { return job->info->num_features; }

/* Whether the model's feature count is the training data's (LightGBM's
 * max_feature_idx + 1, XGBoost's num_feature), so that a larger id is a
 * mismatch worth a warning; QuickRank, RankLib and CatBoost models count
 * only the features their trees use. */
static int features_from_data(const pipe_job *job)
{
    return job->info->source == QS_SRC_LIGHTGBM || job->info->source == QS_SRC_XGBOOST;
}

/* Write chunk c, the next in input order; a failed chunk ends the process
 * after its output. */
static void emit(writer *wr, const chunk *c)
{
    const pipe_job *job = wr->job;
    if (c->extra_line && !wr->extra_warned && !job->strict_features &&
        features_from_data(job)) {
        uint32_t nf = model_features(job);
        tool_warn("%s:%ld: feature id %lld is beyond the model's %u features (ids 0..%lld): "
                  "ignored, here and on any later line (--strict-features refuses it)",
                  job->dname, wr->lines + c->extra_line, c->extra_id, nf, (long long)nf - 1);
        wr->extra_warned = 1;
    }
    tool_out_write(job->out, c->out, c->out_len);
    if (c->oom)
        tool_die(EXIT_SYSTEM, "%s: out of memory (reading or scoring near line %ld)", job->dname,
                 wr->lines + c->lines + 1);
    if (c->bad_line > 0) {
        qs_error e = c->err;
        e.line = wr->lines + c->bad_line;
        tool_die_err(job->dname, &e);
    }
    if (c->bad_line < 0)
        tool_die_err(NULL, &c->err);
    if (c->read_errno)
        tool_input_error(job->dname, c->read_errno);
    if (c->too_long)
        tool_die(EXIT_DATA, "%s:%ld: line longer than %zu MiB", job->dname,
                 wr->lines + c->lines + 1, PIPE_MAX_LINE >> 20);
    wr->lines += c->lines;
}

/* ------------------------------------------------------------ threads */

static cpu_set_t allowed;
static unsigned nallowed;

unsigned pipe_cpus(void)
{
    if (nallowed == 0) {
        CPU_ZERO(&allowed);
        if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
            CPU_ZERO(&allowed);
            CPU_SET(0, &allowed);
        }
        nallowed = (unsigned)CPU_COUNT(&allowed);
        if (nallowed == 0)
            nallowed = 1;
    }
    return nallowed;
}

#ifdef _OPENMP
/* Pin the calling thread to the i-th CPU it may run on. */
static void pin_thread(unsigned i)
{
    pipe_cpus();
    unsigned k = i % nallowed, seen = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed))
            continue;
        if (seen++ == k) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            (void)sched_setaffinity(0, sizeof one, &one); /* a hint: ignore failure */
            return;
        }
    }
}

static const qs_scorer *replica_for(const pipe_job *job, unsigned tid)
{
    unsigned r = tid % job->nreplicas;
#if QS_HAVE_NUMA
    if (job->replica_by_node) {
        int cpu = sched_getcpu();
        int node = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
        if (node >= 0)
            r = (unsigned)node % job->nreplicas;
    }
#endif
    return job->replicas[r];
}

static void pause_briefly(void)
{
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

static void run_threads(const pipe_job *job, reader *rd, writer *wr)
{
    const unsigned T = job->threads, R = 3 * T;
    chunk *ring = calloc(R, sizeof *ring);
    if (!ring)
        tool_die(EXIT_SYSTEM, "out of memory (%u chunks in flight)", R);
    uint64_t next_read = 0, next_write = 0;
    int stop = 0;        /* no more reading: the input ended or a chunk failed */
    int setup_failed = 0;
    qs_error setup_err;
    qs_error_clear(&setup_err);
    omp_lock_t rlock, wlock;
    omp_init_lock(&rlock);
    omp_init_lock(&wlock);
#pragma omp parallel num_threads(T)
    {
        const unsigned tid = (unsigned)omp_get_thread_num();
        if (job->pin)
            pin_thread(tid);
        worker wk;
        qs_error e;
        qs_error_clear(&e);
        if (worker_init(&wk, job, replica_for(job, tid), &e) != 0) {
#pragma omp critical(qs_pipe_setup)
            {
                setup_failed = 1;
                setup_err = e;
            }
            __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
        }
        for (;;) {
            chunk *c = NULL;
            int finished = 0;
            omp_set_lock(&rlock);
            if (__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
                finished = 1;
            } else {
                chunk *slot = &ring[next_read % R];
                if (__atomic_load_n(&slot->state, __ATOMIC_ACQUIRE) == SLOT_FREE) {
                    if (read_chunk(rd, slot)) {
                        slot->seq = next_read++;
                        __atomic_store_n(&slot->state, SLOT_BUSY, __ATOMIC_RELEASE);
                        c = slot;
                        if (chunk_failed(slot))
                            __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                    } else {
                        __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                        finished = 1;
                    }
                }
            }
            omp_unset_lock(&rlock);
            if (c) {
                if (!chunk_failed(c))
                    process(&wk, c);
                if (chunk_failed(c))
                    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                __atomic_store_n(&c->state, SLOT_DONE, __ATOMIC_RELEASE);
            }
            /* Write what is next in input order; a failed chunk waits for
             * the end of the parallel region. */
            if (omp_test_lock(&wlock)) {
                for (;;) {
                    chunk *x = &ring[next_write % R];
                    if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != SLOT_DONE ||
                        chunk_failed(x))
                        break;
                    emit(wr, x);
                    next_write++;
                    __atomic_store_n(&x->state, SLOT_FREE, __ATOMIC_RELEASE);
                }
                omp_unset_lock(&wlock);
            }
            if (finished)
                break;
            if (!c)
                pause_briefly();
        }
        worker_free(&wk);
    }
    omp_destroy_lock(&rlock);
    omp_destroy_lock(&wlock);
    /* Every chunk read is processed: write the rest in order (a failed one
     * ends the process after its output). */
    for (; next_write < next_read; next_write++)
        emit(wr, &ring[next_write % R]);
    if (setup_failed)
        tool_die_err(NULL, &setup_err);
    for (unsigned i = 0; i < R; i++) {
        free(ring[i].in);
        free(ring[i].out);
    }
    free(ring);
}
#endif

void pipe_run(const pipe_job *job)
{
    reader rd = { job->in, job->chunk_bytes, NULL, 0, 0, 0 };
    writer wr = { job, 0, 0 };
#ifdef _OPENMP
    if (job->threads > 1) {
        run_threads(job, &rd, &wr);
        free(rd.carry);
        return;
    }
#endif
    worker wk;
    qs_error e;
    qs_error_clear(&e);
    if (worker_init(&wk, job, job->replicas[0], &e) != 0)
        tool_die_err(NULL, &e);
    chunk c;
    memset(&c, 0, sizeof c);
    while (read_chunk(&rd, &c)) {
        if (!chunk_failed(&c))
            process(&wk, &c);
        emit(&wr, &c);
    }
    worker_free(&wk);
    free(c.in);
    free(c.out);
    free(rd.carry);
}
