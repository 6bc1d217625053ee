/* baselines.c: placeholder until the baselines land. */
#include "baselines.h"
qs_baselines *qs_baselines_build(const qs_model *m, qs_error *err) { (void)m; qs_fail(err, QS_ERR_UNSUPPORTED, 0, "not yet"); return NULL; }
void qs_baselines_free(qs_baselines *b) { (void)b; }
int qs_baselines_has_oblivious(const qs_baselines *b) { (void)b; return 0; }
void qs_struct_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out) { (void)b; (void)x; (void)n; (void)out; }
void qs_vpred_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out) { (void)b; (void)x; (void)n; (void)out; }
void qs_oblivious_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out) { (void)b; (void)x; (void)n; (void)out; }
