/* common.h: the bottom layer of libqs (internal): error records, number
 * parsing, score printing, token quoting for messages, CPU features and
 * cache sizes.
 * Depends on libc and the public header only. */
#ifndef QS_COMMON_H
#define QS_COMMON_H

#include "qs.h"

#include <stddef.h>
#include <stdint.h>

/* ---- the source libraries' table (source.c; qs_source_get in qs.h) */
#define QS_SRC_COUNT 6u   /* qs_source values 0 .. QS_SRC_ONNX: the table's rows */
/* Whether `transform` is among the row's picked_transforms. */
int qs_source_picks(const qs_source_info *r, const char *transform);

/* ---- errors: fill err (may be NULL) and return -1 */
int qs_fail(qs_error *err, qs_status code, long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int qs_fail_at(qs_error *err, qs_status code, long long offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Grow the vector *v of `size`-byte elements (capacity *cap, doubling from
 * 64) so that it holds at least n + 1 elements.  0, or -1 when out of
 * memory or the size would overflow (*v is then unchanged). */
int qs_vec_reserve(void **v, size_t *cap, size_t n, size_t size);

/* What the first bytes of a file say before the rest is read: -1 (err set)
 * stops the read there; 0 reads on, at most *most bytes in all (set lower
 * than the limit where the bytes give the size a valid file has). */
typedef int (*qs_read_head_fn)(void *ctx, const unsigned char *buf, size_t n, uint64_t *most,
                               qs_error *err);

/* Read the whole file at path into *out (malloc'd, free() it; a NUL byte
 * after the *len bytes).  With head (may be NULL), head(ctx, ...) sees the
 * first head_len bytes (fewer when the file is shorter) before more is
 * read, and may stop the read or bound it; *cut (may be NULL) is then 1
 * when the file holds more than that bound.  0, or -1 with err: QS_ERR_IO
 * (the system's reason, the path named), QS_ERR_LIMIT beyond `limit`
 * bytes, QS_ERR_NOMEM, or head's error. */
int qs_read_file(const char *path, size_t limit, size_t head_len, qs_read_head_fn head,
                 void *ctx, unsigned char **out, size_t *len, int *cut, qs_error *err);

/* Printable, bounded copy of a token for error messages (control and
 * non-ASCII bytes become '?', a long token ends in "..."); cap >= 5.
 * Returns dst. */
const char *qs_quote(char *dst, size_t cap, const char *t, size_t n);

/* Parse a decimal or hex value token with a model's precision (1: float32
 * via strtof, 0: double via strtod).  Returns 0, or -1 when the token is
 * not a whole number. */
int qs_parse_number(int float_precision, const char *tok, size_t len, double *out);

/* Score printing: qs_format_score (qs.h), in format.c. */

/* How many threads share n items of work, each at least min_each (>= 1)
 * of them: 1 below 2 * min_each, else up to threads and at most `most`
 * (the callers' fixed arrays); 1 in a build without OpenMP. */
static inline unsigned qs_work_parts(uint64_t n, uint64_t min_each, unsigned threads,
                                     unsigned most)
{
#if QS_HAVE_OPENMP
    if (threads <= 1 || n < 2 * min_each)
        return 1;
    const uint64_t fit = n / min_each;
    const unsigned p = threads < fit ? threads : (unsigned)fit;
    return p < most ? p : most;
#else
    (void)n;
    (void)min_each;
    (void)threads;
    (void)most;
    return 1;
#endif
}

/* The number of threads the next OpenMP team of `want` started from this
 * thread may have (qs_threads_startable, threads.c): want, or fewer when
 * no more can start now.  Every threaded step asks it first. */
static inline unsigned qs_team(unsigned want)
{
    return want > 1 ? qs_threads_startable(want, NULL) : 1;
}

/* ---- CPU features (CPUID and XGETBV, asked once).  The SIMD levels this
 * CPU and operating system support, less those named in the environment
 * variable QS_DISABLE_CPU_FEATURES (comma-separated: avx512, avx2, sse42;
 * "all" disables every one), so that tests can force every code path. */
enum { QS_SIMD_AVX2 = 1u, QS_SIMD_AVX512 = 2u, QS_CPU_CRC32 = 4u };
unsigned qs_cpu_simd(void);
/* What the CPU has, before QS_DISABLE_CPU_FEATURES. */
unsigned qs_cpu_simd_detected(void);
/* SSE4.2's CRC-32C instruction, unless QS_DISABLE_CPU_FEATURES names sse42. */
int qs_cpu_crc32(void);

/* The CPU's class where the kernels' speeds differ by class (the vQS
 * back ends choose AVX2 or AVX-512 by it): from CPUID's vendor and family,
 * or the environment variable QS_CPU_CLASS (generic, zen4, zen5, intel), so
 * that tests and comparisons can ask for any class's choice.  QS_CPU_ZEN4:
 * AMD family 19h (Zen 3 and 4; only Zen 4 has AVX-512, which it runs as
 * two 256-bit halves), QS_CPU_ZEN5: AMD family 1Ah and later (full-width
 * AVX-512), QS_CPU_INTEL: Intel family 6 (every Intel core with AVX-512),
 * QS_CPU_GENERIC: any other. */
enum { QS_CPU_GENERIC = 0, QS_CPU_ZEN4 = 1, QS_CPU_ZEN5 = 2, QS_CPU_INTEL = 3 };
unsigned qs_cpu_class(void);
/* "generic", "amd-zen4", "amd-zen5", "intel" (QS_CPU_CLASS takes these, or
 * zen4, zen5). */
const char *qs_cpu_class_name(unsigned cls);
/* The class a QS_CPU_CLASS value names (exactly, in lower case), or -1. */
int qs_cpu_class_find(const char *name);
/* How qs_cpu_class() was found: "CPUID AuthenticAMD family 1Ah", or
 * "QS_CPU_CLASS". */
const char *qs_cpu_class_source(void);

/* Size in bytes of this machine's level-`level` data (or unified) cache,
 * from sysfs, else CPUID leaf 4; 0 when unknown. */
uint64_t qs_cache_size(int level);
uint64_t qs_cache_size_sysfs(int level);
/* The CPU's model name (/proc/cpuinfo, else the CPUID brand string). */
void qs_cpu_model(char *out, size_t cap);
/* CPUs online. */
unsigned qs_cpu_cores(void);

#endif
