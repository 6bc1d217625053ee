/* threads.c: how many threads a team may have before it starts.  libgomp
 * ends the process when it cannot start a thread of a team ("Thread creation
 * failed", exit 1), and the library never lets a library end the process:
 * each threaded step asks qs_team first and runs with what it gets (every
 * step gives the same result with any number of threads). */
#include "common/common.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#if QS_HAVE_OPENMP
#include <omp.h>
#endif

#if QS_HAVE_OPENMP
/* The team this thread last started through qs_team: libgomp keeps its
 * threads (less this one) for the next team and lets the surplus go when
 * a team is smaller, so only threads beyond it are started anew. */
static _Thread_local unsigned last_team;

typedef struct probe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
} probe;

static void *probe_wait(void *arg)
{
    probe *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->go)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}
#endif

unsigned qs_threads_startable(unsigned threads, int *why)
{
    if (why)
        *why = 0;
    if (threads <= 1)
        return 1;
#if QS_HAVE_OPENMP
    /* Inside a team, without nesting: the step runs on this thread alone. */
    if (omp_get_active_level() >= omp_get_max_active_levels())
        return threads;
    const unsigned have = last_team > 1 ? last_team : 1;
    if (threads <= have) {
        last_team = threads;
        return threads;
    }
    /* Start the threads the team needs beyond those libgomp keeps, all at
     * once (with the default attributes, as libgomp does without
     * OMP_STACKSIZE), then let them go: as many as started here will start
     * there. */
    const unsigned extra = threads - have;
    pthread_t *th = malloc(extra * sizeof *th);
    if (!th) {
        if (why)
            *why = ENOMEM;
        return have;
    }
    probe p = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    unsigned n = 0;
    int e = 0;
    while (n < extra && (e = pthread_create(&th[n], NULL, probe_wait, &p)) == 0)
        n++;
    pthread_mutex_lock(&p.mu);
    p.go = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    free(th);
    last_team = have + n;
    if (n < extra && why)
        *why = e;
    return have + n;
#else
    return 1;
#endif
}
