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

/* Input formats. */
enum { PIPE_LETOR = 0, PIPE_CSV, PIPE_TSV, PIPE_F32 };

typedef struct pipe_job {
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
    int input;               /* PIPE_* */
    /* CSV, TSV: a header row; the label and qid columns as given (a 1-based
     * number, a name from the header, or "name:NAME"; NULL: none).
     * pipe_run reads the header (or the first row) and fills dsv. */
    int header;
    const char *label_col, *qid_col;
    qs_dsv_format dsv;
    uint32_t f32_features;   /* PIPE_F32: floats per row */
    FILE *in;
    const char *dname;       /* the documents' name for messages */
    tool_out *out;
} pipe_job;

/* Score every document of job->in into job->out.  Returns only on success:
 * errors are reported (the first bad line in input order, after everything
 * before it has been written) and end the process. */
void pipe_run(const pipe_job *job);

/* The CPUs this process may run on (sched_getaffinity), at least 1. */
unsigned pipe_cpus(void);

#endif
