/* pipeline.h: qs-score's text path.  Input is read in chunks cut at line
 * ends; each chunk is parsed, scored and formatted into its own buffer by
 * one worker (an OpenMP thread with its own workspace); one writer emits
 * the buffers in input order.  One thread runs the same code in a plain
 * loop, so every thread count writes the same bytes. */
#ifndef QS_SCORE_PIPELINE_H
#define QS_SCORE_PIPELINE_H

#include "tool.h"

/* One input line may be this long (the documented limit), its newline
 * included. */
#define PIPE_MAX_LINE ((size_t)256 << 20)
/* With threads, the chunks of a regular file shrink near its end, to no
 * less than this, so that the threads finish together. */
#define PIPE_MIN_TAIL ((size_t)64 << 10)
/* With threads, the first chunk of text; the next ones double up to the
 * chunk size, so that the threads start scoring soon. */
#define PIPE_FIRST_CHUNK ((size_t)128 << 10)

/* With threads, while the model loads, up to this many chunks more than
 * the 3 per thread are read and parsed ahead (LETOR text), each with at
 * most as many bytes of values as the chunk size. */
#define PIPE_AHEAD_SLOTS 12
/* ... with at most this many threads: with more, the load itself is
 * shared by every thread (measured only on 2 cores: there reading ahead
 * while one thread loads gains; with many threads the parallel load
 * gains more than what a few slots of text can hold). */
#define PIPE_AHEAD_MAX_THREADS 4

/* A back end that takes whole batches (QS_BACKEND_F_BATCH) gets up to
 * job->gpu_batch documents per call, fewer where their values and scores
 * (doubles) would pass this many bytes; with it, a chunk of input grows to
 * hold a batch, up to this many bytes (and the longest line). */
#define PIPE_BATCH_BYTES ((size_t)256 << 20)
/* --gpu-batch: the default, and the largest accepted. */
#define PIPE_GPU_BATCH 65536u
#define PIPE_GPU_BATCH_MAX (1u << 24)

/* Input formats. */
enum { PIPE_LETOR = 0, PIPE_CSV, PIPE_TSV, PIPE_F32 };

typedef struct pipe_job pipe_job;

/* Loads the model into job->info, replicas, nreplicas and replica_by_node
 * (ctx: the caller's), building it with build_threads threads; dies on an
 * error. */
typedef void (*pipe_loader)(void *ctx, unsigned build_threads, pipe_job *job);

struct pipe_job {
    const qs_model_info *info; /* the model's facts (qs_model_get_info scans every tree) */
    qs_scorer **replicas;    /* one scorer per NUMA node (or forced replica) */
    unsigned nreplicas;
    int replica_by_node;     /* 1: a thread uses its node's replica; 0: thread % nreplicas */
    qs_backend backend;
    qs_absent absent;
    int annotate, transform;
    int leaves;              /* print each tree's exit leaf instead of scores */
    int strict_features;     /* a feature id >= the model's count: error, not warning */
    unsigned threads;        /* >= 1 */
    int pin;                 /* pin thread i to the i-th CPU this process may use */
    size_t chunk_bytes;      /* input per chunk (cut at a line end) */
    uint32_t gpu_batch;      /* > 0: the back end takes whole batches; the documents
                                of a chunk are parsed into rows and scored up to this
                                many per call (qs_score_matrix); 0: a workspace's slots
                                at a time (qs_score_batch) */
    int input;               /* PIPE_* */
    /* CSV, TSV: a header row; the label and qid columns as given (a 1-based
     * number, a name from the header, or "name:NAME"; NULL: none).
     * pipe_run reads the header (or the first row) and fills dsv. */
    int header;
    const char *label_col, *qid_col;
    qs_dsv_format dsv;
    uint32_t f32_features;   /* PIPE_F32: floats per row */
    int lightgbm_dense;      /* LETOR read as LightGBM's dense readers (qs_doc_zero_band) */
    FILE *in;
    const char *dname;       /* the documents' name for messages */
    tool_out *out;
    /* NULL: the model is loaded (info, replicas set).  Else pipe_run loads
     * it with load(load_ctx, ...) on one thread while the others read and
     * parse LETOR text ahead with the row format `ahead` (which must be
     * the loaded model's: qs_qsm_get_row_format). */
    pipe_loader load;
    void *load_ctx;
    const qs_row_format *ahead;
    int ahead_wait;          /* tests: load only once the reading ahead has
                                stopped (the slots full, the input ended or
                                a chunk failed), so that it always happens */
    int read_stream;         /* LETOR text or f32 rows from a regular file, threads:
                                through one reader, as from a pipe, not by
                                ranges (QS_READ_STREAM=1) */
};

/* Score every document of job->in into job->out.  Returns only on success:
 * errors are reported (the first bad line in input order, after everything
 * before it has been written) and end the process. */
void pipe_run(const pipe_job *job);

/* The CPUs this process may run on (sched_getaffinity), at least 1. */
unsigned pipe_cpus(void);

#endif
