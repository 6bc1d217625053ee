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
 * With a back end that takes whole batches (job->gpu_batch), a worker
 * parses its chunk's documents into a dense matrix of rows instead (the
 * values the slots would hold) and scores up to gpu_batch of them per call
 * of qs_score_matrix; the chunks grow to hold a batch.  The loops are the
 * same: parse_line and f32_doc put a document in its place, flush_batch
 * scores and formats a batch from wherever it is.
 *
 * A chunk whose processing fails (a bad line, a read error, a line over
 * the limit) stops the reading; every chunk before it is written, then its
 * own output (the documents before the bad line), then the error is
 * reported with its line number in the whole input: the same bytes and the
 * same message as one thread. */
#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if QS_HAVE_NUMA
#include <numa.h>
#endif

enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_DONE = 2, SLOT_PARSED = 3 };

typedef struct doc_meta {
    const char *label, *qid; /* point into the chunk's input */
    size_t label_len, qid_len;
    int has_qid;
} doc_meta;


typedef struct chunk {
    char *in;
    size_t in_len, in_cap;
    size_t in_skip;    /* the chunk's text: in[in_skip .. in_skip + in_len) */
    size_t range_len;  /* read by its thread (reader.fd): bytes of the range
                          in_off .. in_off + range_len whose lines are its;
                          0: read already */
    char *out;
    size_t out_len, out_cap;
    long lines;        /* lines processed */
    int too_long;      /* after these lines comes a line longer than PIPE_MAX_LINE */
    int read_errno;    /* a read failed after these lines (0: none) */
    int oom;           /* out of memory while reading or formatting */
    long bad_line;     /* first bad line, 1-based within the chunk; -1: a scoring error */
    long extra_line;   /* first line with a feature id beyond the model (0: none) */
    long long extra_id;
    size_t partial;    /* f32: bytes of a last, incomplete row (0: none) */
    unsigned long long in_off; /* byte offset of the chunk in the input (f32;
                                  text read by ranges: of its range) */
    qs_error err;
    int state;         /* SLOT_*, atomic */
    uint64_t seq;
    /* Read while the model loaded: its first nrows documents parsed ahead
     * into rows (job->ahead's features each) and rmeta; the rest of its
     * lines, from byte `resume` (line resume_line + 1), still to parse. */
    int ahead;
    double *rows;
    doc_meta *rmeta;
    size_t rows_cap;   /* documents rows and rmeta have room for */
    size_t nrows;
    size_t resume;
    long resume_line;
} chunk;

typedef struct reader {
    FILE *f;
    size_t chunk_bytes;
    char *carry;       /* the start of a line that the last chunk did not end */
    size_t carry_len, carry_cap;
    int eof;
    size_t row_bytes;  /* f32: bytes per row (0: text, cut at line ends) */
    unsigned long long consumed; /* f32: bytes handed out in chunks so far */
    long long left;    /* text from a regular file, with threads: bytes not yet
                          read (the last chunks shrink so that the threads end
                          together); -1: unknown, chunks stay chunk_bytes */
    unsigned threads;
    /* Text from a regular file, with threads: the workers read it
     * themselves, each its chunk's range with pread(2) (fill_range); the
     * reader only hands out ranges (claim_range).  -1: through f. */
    int fd;
    unsigned long long base;  /* the file offset where the input begins */
    unsigned long long pos;   /* the next range's start, from base */
    unsigned long long size;  /* the input's bytes, as last seen */
    size_t ramp;       /* with threads: the size of the next of the first
                          chunks, from PIPE_FIRST_CHUNK, doubling after one
                          chunk per thread, so that every thread has work
                          soon after the start; 0: past them */
    unsigned ramp_n;   /* chunks read at this ramp size */
    /* With a whole-batch back end: documents per batch, and the text
     * read so far, so that a chunk of text can hold a batch (chunk_bytes
     * grows from base_bytes to batch_docs lines of the average length). */
    size_t batch_docs;
    size_t base_bytes;
    unsigned long long seen_bytes, seen_lines;
} reader;

typedef struct worker {
    const pipe_job *job;
    const qs_scorer *s;
    qs_workspace *w;
    uint32_t nslots, K, nfeatures;
    uint32_t cap;      /* documents per batch: nslots, or a whole batch's */
    int digits;
    double *batch;     /* cap x K scores */
    doc_meta *meta;
    /* A whole-batch back end: cap rows of `stride` values, filled as the
     * workspace's slots would be (rowf); NULL: the slots. */
    double *rows;
    size_t stride;
    qs_row_format rowf;
    const double **rowp; /* a batch of rows parsed ahead */
    uint64_t ntrees;   /* --leaves: trees, and a batch of their exit leaves */
    uint32_t *leaves;
} worker;

/* Whether the chunk's input is to be processed: a failed chunk may still
 * hold whole rows before an incomplete last one (f32). */
static int chunk_usable(const chunk *c)
{
    /* (a chunk read by ranges may hold whole lines before a line over the
     * limit; read_text's holds none then) */
    return c->bad_line == 0 && !c->read_errno && !c->oom;
}

static int chunk_failed(const chunk *c)
{
    return c->bad_line != 0 || c->too_long || c->read_errno || c->oom || c->partial;
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

static void chunk_reset(chunk *c)
{
    c->in_len = c->out_len = c->in_skip = c->range_len = 0;
    c->lines = 0;
    c->too_long = c->read_errno = c->oom = 0;
    c->bad_line = 0;
    c->extra_line = 0;
}

/* f32: the bytes of a chunk, whole rows (about r->chunk_bytes, at least
 * one row). */
static size_t rows_want(const reader *r)
{
    const size_t want = r->chunk_bytes / r->row_bytes * r->row_bytes;
    return want ? want : r->row_bytes;
}

/* f32: the next chunk of whole rows (about r->chunk_bytes, at least one
 * row); a last, incomplete row is left out and recorded in c->partial.
 * Returns 0 when the input is done. */
static int read_rows(reader *r, chunk *c)
{
    chunk_reset(c);
    c->partial = 0;
    if (r->eof)
        return 0;
    const size_t rb = r->row_bytes;
    const size_t target = rows_want(r);
    if (reserve(&c->in, &c->in_cap, target) != 0) {
        c->oom = 1;
        r->eof = 1;
        return 1;
    }
    while (!r->eof && c->in_len < target) {
        size_t got = fread(c->in + c->in_len, 1, target - c->in_len, r->f);
        c->in_len += got;
        if (got == 0) {
            if (ferror(r->f)) {
                c->read_errno = errno ? errno : EIO;
                c->in_len -= c->in_len % rb;
            }
            r->eof = 1;
        }
    }
    c->in_off = r->consumed;
    c->partial = c->in_len % rb;
    c->in_len -= c->partial;
    r->consumed += c->in_len;
    return c->in_len > 0 || chunk_failed(c);
}

/* The size of the next chunk: chunk_bytes, smaller among the first ones
 * (ramp) and near the end (left). */
static size_t next_want(reader *r)
{
    size_t want = r->chunk_bytes;
    if (r->ramp) {
        if (r->ramp < want)
            want = r->ramp;
        if (++r->ramp_n >= r->threads) {
            r->ramp_n = 0;
            r->ramp = r->ramp >= r->chunk_bytes / 2 ? 0 : r->ramp * 2;
        }
    }
    if (r->left >= 0) {
        /* Near the end, about half of each thread's share of what is left,
         * down to 64 KiB (smaller chunks cost whole document batches). */
        unsigned long long share = (unsigned long long)r->left / (2ull * r->threads);
        if (share < want)
            want = share < PIPE_MIN_TAIL ? (want < PIPE_MIN_TAIL ? want : PIPE_MIN_TAIL) : (size_t)share;
    }
    return want;
}

/* The next chunk of text: whole lines (the last one may lack its newline
 * at the end of the input).  Returns 0 when the input is done. */
static int read_text(reader *r, chunk *c)
{
    chunk_reset(c);
    if (r->eof && r->carry_len == 0)
        return 0;
    size_t want = next_want(r);
    size_t target = want > r->carry_len ? want : r->carry_len + 1;
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
            if (r->left >= 0)
                r->left = (unsigned long long)r->left > got ? r->left - (long long)got : 0;
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

/* With a whole-batch back end: count c's lines, and size the next chunks
 * to hold a batch of lines of the average length so far (at least the
 * usual chunk, at most PIPE_BATCH_BYTES). */
static void grow_for_batch(reader *r, const chunk *c)
{
    const char *p = c->in + c->in_skip, *end = p + c->in_len;
    unsigned long long lines = 0;
    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        lines++;
        p++;
    }
    r->seen_bytes += c->in_len;
    r->seen_lines += lines;
    if (r->seen_lines == 0)
        return;
    unsigned long long per = (r->seen_bytes + r->seen_lines - 1) / r->seen_lines;
    unsigned long long want = per * r->batch_docs;
    if (want > PIPE_BATCH_BYTES)
        want = PIPE_BATCH_BYTES;
    r->chunk_bytes = want > r->base_bytes ? (size_t)want : r->base_bytes;
}

/* Read the next chunk into c (f32 rows, or lines of text).  Returns 0 when
 * the input is done. */
static int read_chunk(reader *r, chunk *c)
{
    c->ahead = 0;
    c->nrows = 0;
    if (r->row_bytes)
        return read_rows(r, c);
    int got = read_text(r, c);
    if (got && r->batch_docs)
        grow_for_batch(r, c);
    return got;
}

/* Text from a regular file, read by the threads (reader.fd): under the
 * reader's lock only the next range of bytes is handed out (its size as
 * read_text's chunks: ramp, tail); the thread that got it reads it
 * itself (fill_range), with no lock.  A chunk's lines are those that begin
 * in its range: it skips the end of a line begun before (it reads the byte
 * before its range to know) and reads on past its range to the end of its
 * last line.  Returns 0 when the input is done (a file that grew is read
 * on, as far as it has grown). */
static int claim_range(reader *r, chunk *c)
{
    chunk_reset(c);
    c->ahead = 0;
    c->nrows = 0;
    if (r->eof)
        return 0;
    if (r->pos >= r->size) {
        struct stat st;
        if (fstat(r->fd, &st) == 0 && (unsigned long long)st.st_size > r->base + r->pos)
            r->size = (unsigned long long)st.st_size - r->base;
        if (r->pos >= r->size) {
            r->eof = 1;
            return 0;
        }
    }
    r->left = (long long)(r->size - r->pos);
    size_t want;
    if (r->row_bytes) {
        want = rows_want(r); /* (f32: as read_rows reads them) */
    } else {
        want = next_want(r);
        if (want == 0)
            want = 1;
    }
    if (want > r->size - r->pos)
        want = (size_t)(r->size - r->pos);
    c->in_off = r->pos;
    c->range_len = want;
    r->pos += want;
    r->left = (long long)(r->size - r->pos);
    return 1;
}

/* pread(2) until n bytes, the end of the file, or an error (errno in *err). */
static size_t pread_full(int fd, char *buf, size_t n, unsigned long long off, int *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, buf + got, n - got, (off_t)(off + got));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            *err = errno ? errno : EIO;
            return got;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* f32: the range's rows; a last, incomplete one left out and recorded in
 * c->partial (whole rows read before a read error are kept). */
static void fill_rows(const reader *r, chunk *c)
{
    const size_t n = c->range_len, rb = r->row_bytes;
    c->range_len = 0;
    c->partial = 0;
    if (reserve(&c->in, &c->in_cap, n) != 0) {
        c->oom = 1;
        return;
    }
    int err = 0;
    size_t got = pread_full(r->fd, c->in, n, r->base + c->in_off, &err);
    if (err) {
        c->read_errno = err;
        got -= got % rb;
    }
    c->partial = got % rb;
    c->in_len = got - c->partial;
}

static void fill_range(const reader *r, chunk *c)
{
    if (r->row_bytes) {
        fill_rows(r, c);
        return;
    }
    const unsigned long long a = c->in_off;
    const size_t lead = a > 0, n = c->range_len + lead;
    const unsigned long long at = r->base + a - lead; /* file offset of c->in[0] */
    c->range_len = 0;
    if (reserve(&c->in, &c->in_cap, n) != 0) {
        c->oom = 1;
        return;
    }
    int err = 0;
    size_t len = pread_full(r->fd, c->in, n, at, &err);
    if (err) {
        c->read_errno = err;
        return;
    }
    int eof = len < n;
    /* The first line that begins in the range (none: nothing is ours). */
    size_t s = 0;
    if (lead) {
        if (len == 0)
            return;
        const char *nl = c->in[0] == '\n' ? c->in : memchr(c->in + 1, '\n', len - 1);
        s = nl ? (size_t)(nl - c->in) + 1 : len;
    }
    if (s >= len)
        return;
    /* The last one, read to its end (a newline, or the end of the input);
     * no further than PIPE_MAX_LINE. */
    if (!eof && c->in[len - 1] != '\n') {
        const char *lnl = memrchr(c->in + s, '\n', len - s);
        const size_t ls = lnl ? (size_t)(lnl - c->in) + 1 : s; /* where it begins */
        size_t step = (size_t)64 << 10;
        for (;;) {
            if (len - ls >= PIPE_MAX_LINE) {
                c->too_long = 1; /* after the lines before it */
                len = ls;
                break;
            }
            if (step > PIPE_MAX_LINE - (len - ls))
                step = PIPE_MAX_LINE - (len - ls);
            if (reserve(&c->in, &c->in_cap, len + step) != 0) {
                c->oom = 1;
                return;
            }
            size_t got = pread_full(r->fd, c->in + len, step, at + len, &err);
            if (err) {
                c->read_errno = err;
                return;
            }
            const char *nl = memchr(c->in + len, '\n', got);
            len += got;
            if (nl) {
                len = (size_t)(nl - c->in) + 1;
                break;
            }
            if (got < step)
                break; /* the end of the input: a last line without a newline */
            if (step < ((size_t)16 << 20))
                step *= 2;
        }
    }
    c->in_skip = s;
    c->in_len = len - s;
}

/* ------------------------------------------------------------ workers */

/* Documents per call of a whole-batch back end: job->gpu_batch, fewer where
 * their values (nf per row) and scores (K per row) would pass
 * PIPE_BATCH_BYTES; at least 1. */
static uint32_t batch_docs(const pipe_job *job, uint32_t nf, uint32_t K)
{
    const uint64_t per = sizeof(double) * ((uint64_t)(nf ? nf : 1) + K);
    uint64_t most = PIPE_BATCH_BYTES / per;
    if (most < 1)
        most = 1;
    return job->gpu_batch < most ? job->gpu_batch : (uint32_t)most;
}

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
    wk->cap = job->gpu_batch ? batch_docs(job, wk->nfeatures, wk->K) : wk->nslots;
    wk->digits = qs_score_digits(s);
    if (job->gpu_batch) {
        qs_scorer_get_row_format(s, job->absent, &wk->rowf);
        wk->stride = wk->nfeatures ? wk->nfeatures : 1;
        wk->rows = malloc(sizeof(double) * wk->stride * wk->cap);
    }
    wk->batch = malloc(sizeof(double) * wk->K * wk->cap);
    wk->meta = calloc(wk->cap, sizeof *wk->meta);
    wk->rowp = calloc(wk->nslots, sizeof *wk->rowp);
    wk->ntrees = job->info->num_trees;
    if (job->leaves)
        wk->leaves = wk->ntrees > SIZE_MAX / sizeof(uint32_t) / wk->nslots
                         ? NULL
                         : malloc(sizeof(uint32_t) * (size_t)(wk->ntrees ? wk->ntrees : 1) * wk->nslots);
    if (!wk->batch || !wk->meta || !wk->rowp || (job->leaves && !wk->leaves) ||
        (job->gpu_batch && !wk->rows)) {
        qs_error_clear(err);
        err->code = QS_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory (a batch of %u documents)",
                 wk->cap);
        return -1;
    }
    return 0;
}

static void worker_free(worker *wk)
{
    qs_workspace_free(wk->w);
    free(wk->batch);
    free(wk->meta);
    free(wk->rowp);
    free(wk->leaves);
    free(wk->rows);
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

/* Score a batch of n documents and append their lines (labels and qids
 * from meta[0 .. n)) to c's output.  The documents are x[0 .. n), rows
 * wk->stride values apart (a whole-batch back end, every row in one call),
 * or rows[0 .. n) (parsed ahead), else the workspace's slots 0 .. n-1. */
static int flush_batch(worker *wk, chunk *c, uint32_t n, const double *x,
                       const double *const *rows, const doc_meta *meta)
{
    const pipe_job *job = wk->job;
    if (job->leaves)
        return flush_leaves(wk, c, n);
    /* threads 1: the workers are this process's threads already */
    /* the rows hold each value as its input form reads it: as read */
    if ((x ? qs_score_matrix_as_read(wk->s, job->backend, x, n, wk->stride, wk->batch, 1,
                                     &c->err)
           : rows ? qs_score_rows(wk->s, wk->w, job->backend, n, rows, wk->batch, &c->err)
                  : qs_score_batch(wk->s, wk->w, job->backend, n, wk->batch, &c->err)) != 0) {
        c->bad_line = -1;
        return -1;
    }
    for (uint32_t d = 0; d < n; d++) {
        double *sc = wk->batch + (size_t)d * wk->K;
        const doc_meta *dm = &meta[d];
        size_t need = (size_t)wk->K * (QS_FORMAT_SCORE_MAX + 1) + 2 +
                      (job->annotate ? dm->label_len + dm->qid_len + 2 : 0);
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
        for (uint32_t k = 0; k < ncol; k++) {
            if (k)
                c->out[c->out_len++] = '\t';
            c->out_len += qs_format_score(c->out + c->out_len, sc[k], wk->digits);
        }
        c->out[c->out_len++] = '\n';
    }
    return 0;
}

/* f32: the row of `use` little-endian float32 values at b as document n
 * of the batch: the workspace's slot n, or row n of wk->rows (the absent
 * value first, as qs_doc_reset, then the values, as qs_doc_set). */
static void f32_doc(worker *wk, uint32_t n, const unsigned char *b, uint32_t use)
{
    double *row = wk->rows ? wk->rows + (size_t)n * wk->stride : NULL;
    if (row) {
        for (uint32_t j = 0; j < wk->nfeatures; j++)
            row[j] = wk->rowf.fill;
    } else {
        qs_workspace_select(wk->w, n);
        qs_doc_reset(wk->w, wk->job->absent);
    }
    for (uint32_t j = 0; j < use; j++) {
        const unsigned char *q = b + (size_t)j * 4;
        uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                     (uint32_t)q[3] << 24;
        float v;
        memcpy(&v, &u, sizeof v);
        if (row)
            row[j] = (double)v;
        else
            qs_doc_set(wk->w, j, (double)v);
    }
}

/* Document n of the batch read as LightGBM reads a dense matrix: its
 * values with |x| <= (double)1e-35f become +0.0 (row n of wk->rows, or the
 * workspace's slot n). */
static void doc_zero_band(worker *wk, uint32_t n)
{
    if (wk->rows) {
        qs_row_zero_band(wk->rows + (size_t)n * wk->stride, wk->nfeatures);
        return;
    }
    qs_workspace_select(wk->w, n);
    qs_doc_zero_band(wk->w);
}

/* f32: every row of c (whole rows, little-endian float32). */
static void process_rows(worker *wk, chunk *c)
{
    const pipe_job *job = wk->job;
    const uint32_t nf = job->f32_features;
    const uint32_t use = nf < wk->nfeatures ? nf : wk->nfeatures;
    const size_t rb = (size_t)nf * 4;
    const int zero_band = qs_scorer_zero_band(wk->s);
    uint32_t n = 0;
    long rows = 0;
    for (size_t off = 0; off + rb <= c->in_len; off += rb) {
        f32_doc(wk, n, (const unsigned char *)c->in + off, use);
        if (zero_band)
            doc_zero_band(wk, n); /* a float32 matrix: LightGBM's dense input */
        rows++;
        memset(&wk->meta[n], 0, sizeof wk->meta[n]);
        if (++n == wk->cap) {
            if (flush_batch(wk, c, n, wk->rows, NULL, wk->meta) != 0)
                return;
            n = 0;
        }
    }
    c->lines = rows;
    if (n > 0)
        flush_batch(wk, c, n, wk->rows, NULL, wk->meta);
}

/* A document line's feature ids against the model's nf features: the
 * first line with a larger id is remembered (a warning, when written), or
 * with --strict-features is c's bad line.  -1: that error. */
static int check_ids(const pipe_job *job, uint32_t nf, chunk *c, const qs_letor_line *lm,
                     int is_doc, long line)
{
    if (!is_doc || lm->max_id < (long long)nf || c->extra_line)
        return 0;
    /* LightGBM and XGBoost refuse such a mismatch; sparse LETOR files
     * often carry extra ids: a warning (emit), or an error. */
    c->extra_line = line;
    c->extra_id = lm->max_id;
    if (!job->strict_features)
        return 0;
    qs_error_clear(&c->err);
    c->err.code = QS_ERR_FORMAT;
    snprintf(c->err.msg, sizeof c->err.msg,
             "feature id %lld is beyond the model's %u features (ids 0..%lld; "
             "--strict-features)",
             lm->max_id, nf, (long long)nf - 1);
    c->bad_line = line;
    return -1;
}

static void meta_of(doc_meta *dm, const qs_letor_line *lm)
{
    dm->label = lm->label;
    dm->label_len = lm->label_len;
    dm->has_qid = lm->qid != NULL;
    dm->qid = lm->qid;
    dm->qid_len = lm->qid_len;
}

/* The values between one row parsed ahead and the next. */
static size_t row_stride(const qs_row_format *f) { return f->num_features ? f->num_features : 1; }

/* While the model loads: parse c's lines into its rows, as process would
 * parse them, up to as many bytes of values as a chunk has of text (at
 * least one row); the rest is left to process.  Stops at a bad line. */
static void preparse(const pipe_job *job, chunk *c)
{
    const qs_row_format *f = job->ahead;
    const size_t nf = row_stride(f);
    size_t most = job->chunk_bytes / (sizeof(double) * nf);
    if (most == 0)
        most = 1;
    const char *p = c->in + c->in_skip, *end = p + c->in_len;
    long line = 0;
    c->ahead = 1;
    c->nrows = 0;
    while (p < end && c->nrows < most) {
        if (c->nrows == c->rows_cap) {
            size_t cap = c->rows_cap ? c->rows_cap * 2 : 256;
            cap = cap < most ? cap : most;
            double *r = realloc(c->rows, sizeof(double) * nf * cap);
            if (r)
                c->rows = r;
            doc_meta *m = r ? realloc(c->rmeta, sizeof *m * cap) : NULL;
            if (!m)
                break; /* process reads the rest */
            c->rmeta = m;
            c->rows_cap = cap;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        qs_letor_line lm;
        int is_doc;
        if (qs_letor_parse_row(f, c->rows + c->nrows * nf, p, len, &lm, &is_doc, &c->err) != 0) {
            c->bad_line = line;
            return;
        }
        if (is_doc && job->lightgbm_dense)
            qs_row_zero_band(c->rows + c->nrows * nf, f->num_features);
        if (check_ids(job, f->num_features, c, &lm, is_doc, line) != 0)
            return;
        p = nl ? nl + 1 : end;
        if (is_doc)
            meta_of(&c->rmeta[c->nrows++], &lm);
    }
    c->resume = (size_t)(p - (c->in + c->in_skip));
    c->resume_line = line;
}

/* The rows c's documents were parsed into ahead, a batch at a time (a
 * whole-batch back end takes them where they are: their stride is the
 * worker's). */
static int score_ahead(worker *wk, chunk *c)
{
    const size_t nf = row_stride(wk->job->ahead);
    for (size_t i = 0; i < c->nrows;) {
        uint32_t n = c->nrows - i < wk->cap ? (uint32_t)(c->nrows - i) : wk->cap;
        const double *x = c->rows + i * nf;
        for (uint32_t j = 0; !wk->rows && j < n; j++)
            wk->rowp[j] = x + j * nf;
        if (flush_batch(wk, c, n, wk->rows ? x : NULL, wk->rowp, c->rmeta + i) != 0)
            return -1;
        i += n;
    }
    return 0;
}

/* One line of text as document n of the batch: into the workspace's slot
 * n, or row n of wk->rows (the same values: qs_letor_parse_row and
 * qs_dsv_parse_row fill a row as qs_letor_parse and qs_dsv_parse fill a
 * slot). */
static int parse_line(worker *wk, uint32_t n, const char *p, size_t len, qs_letor_line *lm,
                      int *is_doc, qs_error *err)
{
    const pipe_job *job = wk->job;
    if (wk->rows) {
        double *row = wk->rows + (size_t)n * wk->stride;
        if (job->input == PIPE_LETOR)
            return qs_letor_parse_row(&wk->rowf, row, p, len, lm, is_doc, err);
        int rc = qs_dsv_parse_row(&wk->rowf, row, &job->dsv, p, len, lm, is_doc, err);
        /* qs_dsv_parse drops LightGBM's zero band itself; a row, as written */
        if (rc == 0 && *is_doc && qs_scorer_zero_band(wk->s))
            qs_row_zero_band(row, wk->nfeatures);
        return rc;
    }
    qs_workspace_select(wk->w, n);
    return job->input == PIPE_LETOR
               ? qs_letor_parse(wk->s, wk->w, job->absent, p, len, lm, is_doc, err)
               : qs_dsv_parse(wk->s, wk->w, job->absent, &job->dsv, p, len, lm, is_doc, err);
}

/* Parse, score and format every line of c (after the documents parsed
 * ahead, if any); stop at the first bad line, after scoring the documents
 * before it. */
static void process(worker *wk, chunk *c)
{
    const pipe_job *job = wk->job;
    if (job->input == PIPE_F32) {
        process_rows(wk, c);
        return;
    }
    const char *p = c->in + c->in_skip, *end = p + c->in_len;
    uint32_t n = 0;
    long line = 0;
    if (c->ahead) {
        qs_error keep = c->err;
        long bad = c->bad_line;
        c->bad_line = 0;
        if (score_ahead(wk, c) != 0)
            return;
        c->err = keep;
        c->bad_line = bad;
        if (bad) {
            c->lines = bad - 1;
            return;
        }
        p += c->resume;
        line = c->resume_line;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        qs_letor_line lm;
        int is_doc;
        if (parse_line(wk, n, p, len, &lm, &is_doc, &c->err) != 0) {
            c->bad_line = line;
            break;
        }
        if (check_ids(job, wk->nfeatures, c, &lm, is_doc, line) != 0)
            break;
        p = nl ? nl + 1 : end;
        if (!is_doc)
            continue;
        if (job->lightgbm_dense)
            doc_zero_band(wk, n);
        meta_of(&wk->meta[n], &lm);
        if (++n == wk->cap) {
            if (flush_batch(wk, c, n, wk->rows, NULL, wk->meta) != 0)
                return;
            n = 0;
        }
    }
    c->lines = c->bad_line > 0 ? c->bad_line - 1 : line;
    if (n > 0) {
        qs_error keep = c->err;
        long bad = c->bad_line;
        c->bad_line = 0;
        if (flush_batch(wk, c, n, wk->rows, NULL, wk->meta) != 0)
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
    long first_row; /* CSV, TSV without --header: the first row's line */
} writer;

static uint32_t model_features(const pipe_job *job) { return job->info->num_features; }

/* Whether the model's feature count is the training data's (LightGBM's
 * max_feature_idx + 1, XGBoost's num_feature), so that a larger id is a
 * mismatch worth a warning; QuickRank, RankLib and CatBoost models count
 * only the features their trees use. */
static int features_from_data(const pipe_job *job)
{
    const qs_source_info *r = qs_source_get(job->info->source);
    return r && r->features == QS_FEATURES_DATA;
}

/* A LETOR line that fails as CSV or TSV would: say which --input reads it. */
static void letor_hint(qs_error *e)
{
    const char *hint = NULL;
    const char *q = strchr(e->msg, '\'');
    const char *q2 = q ? strchr(q + 1, '\'') : NULL;
    if (!q2)
        return;
    int comma = memchr(q, ',', (size_t)(q2 - q)) != NULL;
    if (strncmp(e->msg, "bad label ", 10) == 0 && comma)
        hint = "comma-separated values? (--input csv; --header when the first row names the "
               "columns)";
    else if (strncmp(e->msg, "bad label ", 10) == 0 && e->line == 1)
        hint = "a header row? (--input csv or tsv with --header)";
    else if (strncmp(e->msg, "bad feature token ", 18) == 0 && !memchr(q, ':', (size_t)(q2 - q)))
        hint = "columns without INDEX:? (--input tsv or csv)";
    if (hint) {
        size_t k = strlen(e->msg);
        snprintf(e->msg + k, sizeof e->msg - k, "; %s", hint);
    }
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
    tool_progress_add(c->out, c->out_len, c->in_len);
    if (c->oom)
        tool_die(EXIT_SYSTEM, "%s: out of memory (reading or scoring near line %ld)", job->dname,
                 wr->lines + c->lines + 1);
    if (c->bad_line > 0) {
        qs_error e = c->err;
        e.line = wr->lines + c->bad_line;
        if (e.line == wr->first_row && strncmp(e.msg, "bad cell", 8) == 0) {
            size_t k = strlen(e.msg);
            snprintf(e.msg + k, sizeof e.msg - k, "; a header row? (--header)");
        }
        if (job->input == PIPE_LETOR)
            letor_hint(&e);
        tool_die_err(job->dname, &e);
    }
    if (c->bad_line < 0)
        tool_die_err(NULL, &c->err);
    if (c->read_errno)
        tool_input_error(job->dname, c->read_errno);
    if (c->too_long)
        tool_die(EXIT_DATA, "%s:%ld: line longer than %zu MiB", job->dname,
                 wr->lines + c->lines + 1, PIPE_MAX_LINE >> 20);
    if (c->partial)
        tool_die(EXIT_DATA, "%s: byte %llu: incomplete last row (%zu of its %zu bytes; "
                            "--features %u makes rows of %zu bytes)",
                 job->dname, c->in_off + c->in_len, c->partial, (size_t)job->f32_features * 4,
                 job->f32_features, (size_t)job->f32_features * 4);
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

/* A chunk parsed ahead, the first in input order, now this thread's. */
static chunk *claim_parsed(chunk *ring, unsigned R)
{
    for (;;) {
        chunk *best = NULL;
        for (unsigned i = 0; i < R; i++)
            if (__atomic_load_n(&ring[i].state, __ATOMIC_ACQUIRE) == SLOT_PARSED &&
                (!best || ring[i].seq < best->seq))
                best = &ring[i];
        if (!best)
            return NULL;
        int expect = SLOT_PARSED;
        if (__atomic_compare_exchange_n(&best->state, &expect, SLOT_BUSY, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return best;
    }
}

static void chunk_release(chunk *c)
{
    free(c->in);
    free(c->out);
    free(c->rows);
    free(c->rmeta);
    c->in = c->out = NULL;
    c->rows = NULL;
    c->rmeta = NULL;
    c->in_cap = c->out_cap = c->rows_cap = 0;
}

/* The chunks live in R slots: 3 per thread, and with job->load
 * PIPE_AHEAD_SLOTS more while the model loads (on thread 0; the others
 * read and parse ahead meanwhile).  Once it is loaded at most 3 per thread
 * are in flight again, always in the lowest free slots, and the extra
 * slots' buffers are freed as they are written. */
typedef struct ring_held {
    chunk *ring;
    unsigned *at;
    unsigned n;
} ring_held;

static void ring_release(void *p)
{
    ring_held *h = p;
    for (unsigned i = 0; h->ring && i < h->n; i++)
        chunk_release(&h->ring[i]);
    free(h->ring);
    free(h->at);
}

static void run_threads(pipe_job *job, reader *rd, writer *wr)
{
    const unsigned T = job->threads, live = 3 * T;
    const unsigned R = live + (job->load ? PIPE_AHEAD_SLOTS : 0);
    chunk *ring = calloc(R, sizeof *ring);
    unsigned *at = calloc(R, sizeof *at); /* at[seq % R]: the slot of chunk seq */
    ring_held held = { ring, at, R }; /* freed by any exit (tool_hold) */
    tool_hold(&held, ring_release);
    if (!ring || !at)
        tool_die(EXIT_SYSTEM, "out of memory (%u chunks in flight)", R);
    uint64_t next_read = 0, next_write = 0; /* atomic */
    int stop = 0;        /* no more reading: the input ended or a chunk failed */
    int loaded = job->load == NULL;
    int setup_failed = 0;
    qs_error setup_err;
    qs_error_clear(&setup_err);
    omp_lock_t rlock, wlock;
    omp_init_lock(&rlock);
    omp_init_lock(&wlock);
    /* A death inside the threads (the model's load failing while others
     * read, a write error) must not tear stdio down under them. */
    tool_threads_running(1);
#pragma omp parallel num_threads(tool_threads(T))
    {
        const unsigned tid = (unsigned)omp_get_thread_num();
        if (job->pin)
            pin_thread(tid);
        if (tid == 0 && job->load) {
            while (job->ahead_wait) {
                int busy = 0;
                for (unsigned i = 0; i < R; i++)
                    busy |= __atomic_load_n(&ring[i].state, __ATOMIC_ACQUIRE) == SLOT_BUSY;
                if (!busy && (__atomic_load_n(&stop, __ATOMIC_SEQ_CST) ||
                              __atomic_load_n(&next_read, __ATOMIC_ACQUIRE) >= R))
                    break;
                pause_briefly();
            }
            job->load(job->load_ctx, 1, job);
            qs_row_format f;
            qs_scorer_get_row_format(job->replicas[0], job->absent, &f);
            if (f.num_features != job->ahead->num_features ||
                f.float_precision != job->ahead->float_precision ||
                isnan(f.fill) != isnan(job->ahead->fill))
                tool_die(EXIT_SYSTEM, "internal error: the loaded model reads documents "
                                      "otherwise than its INFO section says");
            __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
        }
        worker wk;
        int have_wk = 0;
        for (;;) {
            const int ready = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
            if (ready && !have_wk) {
                qs_error e;
                qs_error_clear(&e);
                have_wk = 1;
                if (worker_init(&wk, job, replica_for(job, tid), &e) != 0) {
#pragma omp critical(qs_pipe_setup)
                    {
                        setup_failed = 1;
                        setup_err = e;
                    }
                    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                    break;
                }
            }
            chunk *c = ready ? claim_parsed(ring, R) : NULL;
            int finished = 0;
            if (!c) {
                omp_set_lock(&rlock);
                const uint64_t nr = next_read;
                if (__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
                    finished = ready;
                } else if (nr - __atomic_load_n(&next_write, __ATOMIC_ACQUIRE) < (ready ? live : R)) {
                    unsigned i = 0;
                    while (i < R && __atomic_load_n(&ring[i].state, __ATOMIC_ACQUIRE) != SLOT_FREE)
                        i++;
                    if (i < R) {
                        chunk *slot = &ring[i];
                        if (rd->fd >= 0 ? claim_range(rd, slot) : read_chunk(rd, slot)) {
                            slot->seq = nr;
                            at[nr % R] = i;
                            __atomic_store_n(&slot->state, SLOT_BUSY, __ATOMIC_RELEASE);
                            __atomic_store_n(&next_read, nr + 1, __ATOMIC_RELEASE);
                            c = slot;
                            if (chunk_failed(slot))
                                __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                        } else {
                            __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                            finished = ready;
                        }
                    }
                }
                omp_unset_lock(&rlock);
                if (c && c->range_len) {
                    fill_range(rd, c);
                    if (chunk_failed(c))
                        __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                }
            }
            if (c) {
                /* A chunk read before the model was loaded is parsed now and
                 * scored later (by whichever thread claims it). */
                const int now = ready || c->ahead;
                /* (a chunk parsed ahead may have stopped at a bad line: its
                 * documents before it are still to be scored) */
                if (c->ahead || chunk_usable(c)) {
                    if (now)
                        process(&wk, c);
                    else
                        preparse(job, c);
                }
                if (chunk_failed(c))
                    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
                __atomic_store_n(&c->state, now ? SLOT_DONE : SLOT_PARSED, __ATOMIC_RELEASE);
            }
            /* Write what is next in input order; a failed chunk waits for
             * the end of the parallel region. */
            if (omp_test_lock(&wlock)) {
                for (;;) {
                    const uint64_t w = next_write;
                    if (w >= __atomic_load_n(&next_read, __ATOMIC_ACQUIRE))
                        break;
                    const unsigned i = at[w % R];
                    chunk *x = &ring[i];
                    if (__atomic_load_n(&x->state, __ATOMIC_ACQUIRE) != SLOT_DONE ||
                        x->seq != w || chunk_failed(x))
                        break;
                    emit(wr, x);
                    if (i >= live)
                        chunk_release(x);
                    __atomic_store_n(&next_write, w + 1, __ATOMIC_RELEASE);
                    __atomic_store_n(&x->state, SLOT_FREE, __ATOMIC_RELEASE);
                }
                omp_unset_lock(&wlock);
            }
            if (finished)
                break;
            if (!c)
                pause_briefly();
        }
        if (have_wk)
            worker_free(&wk);
    }
    tool_threads_running(0);
    omp_destroy_lock(&rlock);
    omp_destroy_lock(&wlock);
    /* Every chunk read is processed (unless a worker could not start):
     * write the rest in order (a failed one ends the process after its
     * output). */
    for (; next_write < next_read; next_write++) {
        const chunk *x = &ring[at[next_write % R]];
        if (x->state != SLOT_DONE)
            break;
        emit(wr, x);
    }
    if (setup_failed)
        tool_die_err(NULL, &setup_err);
    tool_release(&held);
}
#endif

/* ------------------------------------------------------------ CSV, TSV */

/* Make r->carry begin with a whole line, or hold the rest of the input:
 * *len is its length without the newline.  0 when the input is empty. */
static int peek_line(const pipe_job *job, reader *r, long lineno, size_t *len, int *nl)
{
    size_t scanned = 0;
    for (;;) {
        const char *p = r->carry_len > scanned
                            ? memchr(r->carry + scanned, '\n', r->carry_len - scanned)
                            : NULL;
        if (p) {
            *len = (size_t)(p - r->carry);
            *nl = 1;
            return 1;
        }
        if (r->eof) {
            *len = r->carry_len;
            *nl = 0;
            return r->carry_len > 0;
        }
        if (r->carry_len >= PIPE_MAX_LINE)
            tool_die(EXIT_DATA, "%s:%ld: line longer than %zu MiB", job->dname, lineno,
                     PIPE_MAX_LINE >> 20);
        scanned = r->carry_len;
        if (reserve(&r->carry, &r->carry_cap, r->carry_len + 65536) != 0)
            tool_die(EXIT_SYSTEM, "%s: out of memory (reading line %ld)", job->dname, lineno);
        size_t got = fread(r->carry + r->carry_len, 1, 65536, r->f);
        if (got == 0) {
            if (ferror(r->f))
                tool_input_error(job->dname, errno ? errno : EIO);
            r->eof = 1;
        }
        r->carry_len += got;
    }
}

static void drop_line(reader *r, size_t len, int nl)
{
    size_t n = len + (size_t)nl;
    memmove(r->carry, r->carry + n, r->carry_len - n);
    r->carry_len -= n;
}

/* Whether cell c (quotes removed, "" standing for ") reads `name`. */
static int cell_is(const qs_dsv_cell *c, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < c->len; i++, k++) {
        if (c->quoted && c->text[i] == '"')
            i++;
        if (name[k] != c->text[i])
            return 0;
    }
    return name[k] == '\0';
}

/* A header cell that names a label column (label, target, relevance, y, in
 * any case): the name into OUT (at most 15 bytes), or 0. */
static int label_like(const qs_dsv_cell *c, char *out)
{
    static const char *const names[] = { "label", "target", "relevance", "y" };
    if (c->quoted || c->len == 0 || c->len > 15)
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == c->len && strncasecmp(c->text, names[i], c->len) == 0) {
            memcpy(out, c->text, c->len);
            out[c->len] = 0;
            return 1;
        }
    return 0;
}

/* A column given as a 1-based number (0-based result), or -2 for a name. */
static long col_number(const char *spec)
{
    if (!spec)
        return -1;
    if (!*spec || strspn(spec, "0123456789") != strlen(spec))
        return -2;
    uint64_t v;
    return qs_parse_count(spec, 1, UINT32_MAX, &v) == 0 ? (long)(v - 1) : -3;
}

static const char *col_name(const char *spec)
{
    return strncmp(spec, "name:", 5) == 0 ? spec + 5 : spec;
}

/* Before any chunk: skip blank lines, read the header (or look at the first
 * row) to learn the number of columns, and find the label and qid columns.
 * Returns the lines consumed. */
static long dsv_setup(pipe_job *job, reader *r)
{
    const char sep = job->input == PIPE_TSV ? '\t' : ',';
    long lines = 0;
    size_t len;
    int nl;
    const char *l;
    for (;;) {
        if (!peek_line(job, r, lines + 1, &len, &nl)) {
            if (job->header)
                tool_die(EXIT_DATA, "%s: no header row (the input is empty; --header)",
                         job->dname);
            job->dsv = (qs_dsv_format){ sep, 0, -1, -1 };
            return lines;
        }
        l = r->carry;
        size_t i = 0;
        while (i < len && (l[i] == ' ' || l[i] == '\t' || l[i] == '\r'))
            i++;
        if (i < len)
            break;
        drop_line(r, len, nl);
        lines++;
    }
    size_t n = len && l[len - 1] == '\r' ? len - 1 : len;
    long label = col_number(job->label_col), qid = col_number(job->qid_col);
    const char *label_name = label == -2 ? col_name(job->label_col) : NULL;
    const char *qid_name = qid == -2 ? col_name(job->qid_col) : NULL;
    size_t pos = 0;
    uint64_t ncols = 0;
    qs_dsv_cell c;
    qs_error e;
    qs_error_clear(&e);
    int rc;
    char first[16] = "";
    while ((rc = qs_dsv_next_cell(sep, l, n, &pos, &c, &e)) == 1) {
        if (job->header && ncols == 0 && !job->label_col && !label_like(&c, first))
            first[0] = 0;
        if (job->header) {
            if (label_name && cell_is(&c, label_name)) {
                if (label >= 0)
                    tool_die(EXIT_DATA, "%s:%ld: two columns are named '%s' (--label-col)",
                             job->dname, lines + 1, label_name);
                label = (long)ncols;
            }
            if (qid_name && cell_is(&c, qid_name)) {
                if (qid >= 0)
                    tool_die(EXIT_DATA, "%s:%ld: two columns are named '%s' (--qid-col)",
                             job->dname, lines + 1, qid_name);
                qid = (long)ncols;
            }
        }
        ncols++;
    }
    if (rc < 0) {
        e.line = lines + 1;
        tool_die_err(job->dname, &e);
    }
    if (ncols > UINT32_MAX)
        tool_die(EXIT_DATA, "%s:%ld: more than %u columns", job->dname, lines + 1, UINT32_MAX);
    const char *what = job->header ? "the header" : "the first row";
    if (label == -2 || qid == -2)
        tool_die(EXIT_DATA, "%s:%ld: no column named '%s' in the header (%s)", job->dname,
                 lines + 1, label == -2 ? label_name : qid_name,
                 label == -2 ? "--label-col" : "--qid-col");
    if (label >= (long)ncols || label == -3)
        tool_die(EXIT_DATA, "%s:%ld: --label-col %s: %s has %llu columns", job->dname, lines + 1,
                 job->label_col, what, (unsigned long long)ncols);
    if (qid >= (long)ncols || qid == -3)
        tool_die(EXIT_DATA, "%s:%ld: --qid-col %s: %s has %llu columns", job->dname, lines + 1,
                 job->qid_col, what, (unsigned long long)ncols);
    if (label >= 0 && label == qid)
        tool_die(EXIT_USAGE, "--label-col and --qid-col name the same column (%ld)", label + 1);
    if (first[0])
        tool_warn("%s:%ld: warning: the first column is named '%s' but is read as feature 0 "
                  "(a label? --label-col %s, or --label-col 1)", job->dname, lines + 1, first, first);
    if (job->header) {
        drop_line(r, len, nl);
        lines++;
    }
    job->dsv = (qs_dsv_format){ sep, (uint32_t)ncols, label, qid };
    return lines;
}

/* Release functions for tool_hold: what pipe_run holds is freed on every
 * exit, error paths included. */
static void reader_release(void *p) { free(((reader *)p)->carry); }
static void worker_release(void *p) { worker_free(p); }
static void chunk_held_release(void *p) { chunk_release(p); }

void pipe_run(const pipe_job *job_in)
{
    pipe_job local = *job_in;
    const pipe_job *job = &local;
    int ahead = 0;
#ifdef _OPENMP
    ahead = job->load && job->ahead && job->threads > 1 && job->input == PIPE_LETOR && !job->leaves;
#endif
    if (job->load && !ahead) {
        job->load(job->load_ctx, job->threads, &local);
        local.load = NULL;
    }
    reader rd = { .f = job->in, .chunk_bytes = job->chunk_bytes, .left = -1,
                  .threads = job->threads, .fd = -1 };
    tool_hold(&rd, reader_release); /* (so is every buffer below: tool_hold) */
    writer wr = { job, 0, 0, 0 };
    if (job->input == PIPE_CSV || job->input == PIPE_TSV) {
        wr.lines = dsv_setup(&local, &rd);
        if (!job->header)
            wr.first_row = wr.lines + 1;
    }
    if (job->input == PIPE_F32)
        rd.row_bytes = (size_t)job->f32_features * 4;
    if (job->gpu_batch) {
        /* Chunks that hold a batch: f32 rows have their size; text grows
         * to it as lines are read (grow_for_batch). */
        const int loaded = job->load == NULL;
        rd.batch_docs = batch_docs(job, loaded ? job->info->num_features : job->ahead->num_features,
                                   loaded ? job->info->num_classes : 1);
        rd.base_bytes = rd.chunk_bytes;
        if (rd.row_bytes) {
            uint64_t want = (uint64_t)rd.batch_docs * rd.row_bytes;
            if (want > PIPE_BATCH_BYTES)
                want = PIPE_BATCH_BYTES;
            if (want > rd.chunk_bytes)
                rd.chunk_bytes = (size_t)want;
        }
    }
#ifdef _OPENMP
    if (job->threads > 1) {
        const long long size = tool_input_size(job->in);
        if (job->input != PIPE_F32) {
            rd.left = size;
            /* Parsed ahead, the first chunks are ready when the model is;
             * whole batches are wanted from the start. */
            rd.ramp = ahead || job->gpu_batch ? 0 : PIPE_FIRST_CHUNK;
        }
        /* LETOR text or f32 rows from a regular file: the threads read it,
         * by ranges (f32 whatever the back end: a chunk is whole rows;
         * text not for a whole-batch back end, which sizes its chunks by
         * the lines read so far) */
        int fd;
        long long base;
        if ((job->input == PIPE_F32 || (job->input == PIPE_LETOR && !job->gpu_batch)) &&
            size >= 0 && !job->read_stream && tool_input_file(job->in, &fd, &base)) {
            rd.fd = fd;
            rd.base = (unsigned long long)base;
            rd.size = (unsigned long long)size;
        }
        run_threads(&local, &rd, &wr);
        if (rd.fd >= 0)
            tool_input_file_read(job->in, (long long)rd.pos);
        tool_release(&rd);
        return;
    }
#endif
    worker wk;
    qs_error e;
    qs_error_clear(&e);
    if (worker_init(&wk, job, job->replicas[0], &e) != 0) {
        worker_free(&wk);
        tool_die_err(NULL, &e);
    }
    tool_hold(&wk, worker_release);
    chunk c;
    memset(&c, 0, sizeof c);
    tool_hold(&c, chunk_held_release);
    while (read_chunk(&rd, &c)) {
        if (chunk_usable(&c))
            process(&wk, &c);
        emit(&wr, &c);
    }
    tool_release(&c);
    tool_release(&wk);
    tool_release(&rd);
}
