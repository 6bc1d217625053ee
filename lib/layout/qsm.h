/* qsm.h: reading and writing the .qsm container (internal to libqs). */
#ifndef QS_QSM_H
#define QS_QSM_H

#include "layout/layout.h"

int qsm_write(const qs_model *m, const qs_layout *L, unsigned char **out, size_t *out_len,
              qs_error *err);
/* Parse and fully validate a .qsm image; on success the caller owns *m, *L.
 * threads > 1: the TREE and QSLY sections are decompressed at once (two
 * OpenMP threads); the result and any error are those of one thread. */
int qsm_read(const unsigned char *buf, size_t len, unsigned threads, qs_model **m, qs_layout **L,
             qs_error *err);

/* The first QSM_HEADER_SIZE (64) bytes of a .qsm image checked as qsm_read
 * checks them first (magic, major version, header checksum, header size;
 * the same errors): 0 with the file size the header records, or -1 with
 * err (fewer than 64 bytes: the bad magic number).  A reader of a file
 * stops there, or bounds what it reads by the recorded size. */
int qsm_check_head(const unsigned char *buf, size_t len, uint64_t *file_size, qs_error *err);

/* The model's facts a document reader needs, from INFO alone (the header,
 * the section table and INFO checked as qsm_read checks them): its
 * feature count, precision (1: float32) and whether absent features are
 * missing.  0, or -1 with err; a file this accepts may still fail
 * qsm_read. */
int qsm_peek_info(const unsigned char *buf, size_t len, uint32_t *num_features,
                  int *float_precision, int *absent_missing, qs_error *err);

/* The TUNE record of a .qsm image as stored (qs_qsm_get_tuning without the
 * check of its back end's name, which the registry of score/ makes): 1 and
 * *t, 0 when there is none, -1 with err when it is malformed, out of range
 * or present twice. */
int qs_qsm_read_tuning(const unsigned char *buf, size_t len, qs_tuning *t, qs_error *err);

#endif
