/* registry.c: every back end, in the order `qs-score --list-backends`
 * prints them.  A new back end is one line of QS_BACKEND_LIST (its
 * definition lives in its own file or folder). */
#include "score/score.h"

#define QS_BACKEND_LIST(X)                                                                   \
    X(walk)                                                                                  \
    X(qs)                                                                                    \
    X(vqs)                                                                                   \
    X(vqs_avx2)                                                                              \
    X(vqs_avx512)                                                                            \
    X(struct)                                                                                \
    X(vpred)                                                                                 \
    X(oblivious)                                                                             \
    X(walk_batch)                                                                            \
    X(cuda)                                                                                  \
    X(cuda_emu)

#define DECLARE(n) extern const qs_backend_def qs_backend_##n;
QS_BACKEND_LIST(DECLARE)

#define ROW(n) &qs_backend_##n,
const qs_backend_def *const qs_backend_table[] = { QS_BACKEND_LIST(ROW) };
const unsigned qs_backend_table_len = sizeof qs_backend_table / sizeof qs_backend_table[0];

_Static_assert(sizeof qs_backend_table / sizeof qs_backend_table[0] <= QS_MAX_BACKENDS,
               "raise QS_MAX_BACKENDS");
