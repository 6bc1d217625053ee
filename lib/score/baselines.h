/* baselines.h: the comparison back ends of the QuickScorer papers, kept in
 * the same binary for honest measurements: STRUCT+ (naive pointer walk over
 * node structs), VPRED (branch-free traversal unrolled by depth, v documents
 * interleaved) and OBLIVIOUS (oblivious trees as index computations).  All of
 * them are exact: same comparisons, special values and summation as the
 * reference walk in model.h.  Internal to libqs. */
#ifndef QS_BASELINES_H
#define QS_BASELINES_H

#include "score/score.h"

typedef struct qs_baselines qs_baselines;

/* Prepare the baselines' data structures for a validated model.  Returns
 * NULL with err set on failure (out of memory, or a limit). */
qs_baselines *qs_baselines_build(const qs_model *m, qs_error *err);
void qs_baselines_free(qs_baselines *b);

/* Whether the OBLIVIOUS baseline can score this model (every tree oblivious). */
int qs_baselines_has_oblivious(const qs_baselines *b);

/* Score n >= 1 documents: x[i] is document i's dense vector (num_features
 * values, absent features already filled), out[i * num_classes + c] receives
 * the raw score of class c.  Bit-identical to qs_model_walk_score. */
void qs_struct_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out);
void qs_vpred_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out);
void qs_oblivious_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out);

#endif
