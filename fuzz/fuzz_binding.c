/* fuzz_binding.c: libFuzzer target for the Python binding's checks of a
 * caller's arrays and its copies of their rows (python/src/qs_toolkit/
 * args.h, the plain-C part of _core.c's argument handling).  The input
 * describes a dense matrix (rows, columns, float32 or float64, rounding,
 * any byte strides: zero, negative, odd; any byte offset) and a CSR matrix
 * (shape up to 2^64 - 1 rows, int32 or int64 indptr and indices of any
 * length and values, float32 or float64 data), each in a buffer of exactly
 * the bytes it spans, so a read outside is an AddressSanitizer report and a
 * misaligned load a UBSan one.  Oracles: the dense rows copied equal an
 * independent element-by-element copy, bit for bit, and a layout called
 * readable in place is (aligned rows of doubles, inside the buffer); the
 * CSR structure check accepts exactly what an independent check accepts,
 * and an accepted matrix's rows equal an independent copy (absent entries
 * the fill, the last of duplicate columns kept); then the arrays changed
 * after the check (as another Python thread may) are still copied without
 * a read outside them. */
#include "fuzz_common.h"

#include "../python/src/qs_toolkit/args.h"

typedef struct bytes_in {
    const uint8_t *p;
    size_t n, i;
} bytes_in;

static uint64_t take(bytes_in *b, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v = v << 8 | (b->i < b->n ? b->p[b->i++] : 0);
    return v;
}

/* ------------------------------------------------------------ dense */

static void check_dense(bytes_in *in)
{
    const uint8_t shape = (uint8_t)take(in, 1);
    const size_t rows = shape % 9;
    const uint32_t nf = (uint32_t)(shape / 9) % 7;
    const uint8_t kind = (uint8_t)take(in, 1);
    const int f32 = kind & 1, round_float = !f32 && (kind & 2);
    const size_t elem = f32 ? 4 : 8;
    /* strides: a multiple of the element (most arrays), or any byte count */
    ptrdiff_t s0 = (int8_t)take(in, 1), s1 = (int8_t)take(in, 1);
    if (kind & 4)
        s0 *= (ptrdiff_t)elem;
    if (kind & 8)
        s1 *= (ptrdiff_t)elem;
    if (kind & 16) { /* a C-contiguous matrix, or (32) a Fortran-ordered one */
        s1 = (ptrdiff_t)elem;
        s0 = (ptrdiff_t)(elem * nf);
    } else if (kind & 32) {
        s0 = (ptrdiff_t)elem;
        s1 = (ptrdiff_t)(elem * rows);
    }
    const size_t misalign = (size_t)(kind >> 6) * 3 % 8;
    if (rows == 0 || nf == 0)
        return;
    /* the bytes the elements span: from the least to the greatest address */
    ptrdiff_t lo = 0, hi = 0;
    const ptrdiff_t corners[4] = { 0, (ptrdiff_t)(rows - 1) * s0, (ptrdiff_t)(nf - 1) * s1,
                                   (ptrdiff_t)(rows - 1) * s0 + (ptrdiff_t)(nf - 1) * s1 };
    for (int c = 0; c < 4; c++) {
        lo = corners[c] < lo ? corners[c] : lo;
        hi = corners[c] > hi ? corners[c] : hi;
    }
    const size_t span = (size_t)(hi - lo) + elem;
    char *mem = malloc(span + misalign);
    double *got = malloc(rows * nf * sizeof *got), *want = malloc(rows * nf * sizeof *want);
    if (!mem || !got || !want)
        goto out;
    for (size_t k = 0; k < span + misalign; k++)
        mem[k] = (char)take(in, 1);
    /* the buffer ends where the span does: a read past it is reported */
    char *buf = mem + misalign;
    dense_src src = { buf - lo, s0, s1, f32, nf, round_float, 0 };
    /* independently: each element by itself */
    for (size_t i = 0; i < rows; i++)
        for (uint32_t j = 0; j < nf; j++) {
            const char *at = src.base + (ptrdiff_t)i * s0 + (ptrdiff_t)j * s1;
            if (at < buf || at + elem > buf + span)
                FUZZ_FAIL("the reference reads outside");
            double v;
            if (f32) {
                float f;
                memcpy(&f, at, 4);
                v = f;
            } else {
                memcpy(&v, at, 8);
                if (round_float)
                    v = (double)(float)v;
            }
            want[i * nf + j] = v;
        }
    /* copied in two chunks, as score_chunked does */
    const size_t cut = rows / 2;
    gather(&src, 0, cut, got);
    gather(&src, cut, rows, got + cut * nf);
    if (memcmp(got, want, rows * nf * sizeof *got) != 0)
        FUZZ_FAIL("dense rows differ from an element-by-element copy (rows %zu, nf %u, s0 %td, "
                  "s1 %td, f32 %d)", rows, nf, s0, s1, f32);
    if (dense_in_place(&src)) {
        /* read in place as rows of doubles, as qs_score_matrix reads them */
        if ((uintptr_t)src.base % sizeof(double))
            FUZZ_FAIL("read in place from a misaligned base");
        for (size_t i = 0; i < rows; i++) {
            const double *row = (const double *)(src.base + (ptrdiff_t)i * s0);
            for (uint32_t j = 0; j < nf; j++)
                if (memcmp(&row[j], &want[i * nf + j], sizeof(double)) != 0)
                    FUZZ_FAIL("row %zu read in place differs", i);
        }
    }
out:
    free(mem);
    free(got);
    free(want);
}

/* ------------------------------------------------------------ CSR */

/* An independent check of the structure. */
static int ref_structure(uint64_t n, uint64_t ncols, const int64_t *ip, int64_t n_ip,
                         const int64_t *ix, int64_t nnz, int64_t n_data)
{
    if (n_ip < 1 || (uint64_t)n_ip != n + 1 || n + 1 == 0)
        return 0;
    if (n_data != nnz || ip[0] != 0 || ip[n] != nnz)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        if (ip[i] > ip[i + 1])
            return 0;
    for (int64_t k = 0; k < nnz; k++)
        if (ix[k] < 0 || (uint64_t)ix[k] >= ncols)
            return 0;
    return 1;
}

static void check_csr(bytes_in *in)
{
    const uint8_t kind = (uint8_t)take(in, 1);
    const int ip64 = kind & 1, ix64 = kind & 2, f32 = kind & 4;
    const int round_float = !f32 && (kind & 8);
    uint64_t n = take(in, 1) % 7;
    if (kind & 16)
        n = take(in, 8);          /* any row count, 2^64 - 1 included */
    const uint64_t ncols = take(in, 1) % 9;
    const uint32_t nf = (uint32_t)take(in, 1) % 10;
    const int64_t nnz = (int64_t)(take(in, 1) % 13);
    /* the arrays' own lengths: right, or one off */
    const uint8_t off = (uint8_t)take(in, 1);
    const int64_t n_ip = (n < 64 ? (int64_t)n + 1 : (int64_t)(take(in, 1) % 8)) +
                         ((off & 3) == 3 ? -1 : (off & 3) == 2 ? 1 : 0);
    const int64_t n_data = nnz + ((off & 12) == 12 ? 1 : 0);
    if (n_ip < 0)
        return;
    const size_t ipw = ip64 ? 8 : 4, ixw = ix64 ? 8 : 4, dw = f32 ? 4 : 8;
    /* each array in a buffer of exactly its bytes (aligned: the binding
     * refuses an unaligned index or data array) */
    void *ipb = malloc(n_ip ? (size_t)n_ip * ipw : 1), *ixb = malloc(nnz ? (size_t)nnz * ixw : 1);
    void *db = malloc(n_data ? (size_t)n_data * dw : 1);
    int64_t *ipv = malloc((size_t)(n_ip + 1) * sizeof *ipv);
    int64_t *ixv = malloc((size_t)(nnz + 1) * sizeof *ixv);
    double *got = NULL, *want = NULL;
    if (!ipb || !ixb || !db || !ipv || !ixv)
        goto out;
    /* indptr mostly increasing from 0 to nnz (a valid one, nudged) */
    int64_t at = 0;
    for (int64_t i = 0; i < n_ip; i++) {
        const uint8_t b = (uint8_t)take(in, 1);
        int64_t v = i == 0 ? 0 : at + (b % 4);
        if (i == n_ip - 1)
            v = nnz;
        if (b >= 250)
            v = (int64_t)(int8_t)take(in, 1) * (b == 255 ? INT64_C(1) << 40 : 1);
        at = v;
        if (!ip64)
            v = (int32_t)v;
        ipv[i] = v;
        if (ip64)
            ((int64_t *)ipb)[i] = v;
        else
            ((int32_t *)ipb)[i] = (int32_t)v;
    }
    for (int64_t k = 0; k < nnz; k++) {
        int64_t v = (int64_t)(take(in, 1) % 12) - 2;
        if (!ix64)
            v = (int32_t)v;
        ixv[k] = v;
        if (ix64)
            ((int64_t *)ixb)[k] = v;
        else
            ((int32_t *)ixb)[k] = (int32_t)v;
    }
    for (int64_t k = 0; k < n_data; k++) {
        uint64_t bits = take(in, 8);
        if (f32)
            memcpy((char *)db + (size_t)k * 4, &bits, 4);
        else
            memcpy((char *)db + (size_t)k * 8, &bits, 8);
    }
    csr_src c = { (size_t)n, ipb, ixb, db, ip64 != 0, ix64 != 0, f32 != 0, ncols,
                  0.0, round_float, nf, nnz, 0 };
    memcpy(&c.fill, (const uint64_t[]){ take(in, 8) }, sizeof c.fill);
    char msg[160];
    const int ok = csr_structure(&c, n_ip, n_data, msg, sizeof msg) == NULL;
    const int ref = ref_structure(n, ncols, ipv, n_ip, ixv, nnz, n_data);
    if (ok != ref)
        FUZZ_FAIL("csr_structure %s what an independent check %s (n %llu, ncols %llu, indptr "
                  "%lld, nnz %lld, data %lld)%s%s", ok ? "accepts" : "refuses",
                  ref ? "accepts" : "refuses", (unsigned long long)n,
                  (unsigned long long)ncols, (long long)n_ip, (long long)nnz,
                  (long long)n_data, ok ? "" : ": ", ok ? "" : msg);
    if (!ok) {
        if (strncmp(msg, "malformed CSR matrix: ", 22) != 0)
            FUZZ_FAIL("a refusal without its message: %s", msg);
        goto out;
    }
    got = malloc(((size_t)n * nf + 1) * sizeof *got);
    want = malloc(((size_t)n * nf + 1) * sizeof *want);
    if (!got || !want)
        goto out;
    for (uint64_t i = 0; i < n; i++) {
        double *row = want + i * nf;
        for (uint32_t j = 0; j < nf; j++)
            row[j] = c.fill;
        for (int64_t k = ipv[i]; k < ipv[i + 1]; k++) {
            if ((uint64_t)ixv[k] >= nf)
                continue;
            double v;
            if (f32) {
                float f;
                memcpy(&f, (const char *)db + (size_t)k * 4, 4);
                v = f;
            } else {
                memcpy(&v, (const char *)db + (size_t)k * 8, 8);
                if (round_float)
                    v = (double)(float)v;
            }
            row[ixv[k]] = v;
        }
    }
    csr_gather(&c, 0, (size_t)n, got);
    if (n > 0 && nf > 0 && memcmp(got, want, (size_t)n * nf * sizeof *got) != 0)
        FUZZ_FAIL("CSR rows differ from an independent copy (n %llu, nf %u, nnz %lld)",
                  (unsigned long long)n, nf, (long long)nnz);
    /* the arrays changed after the check: still no read outside them */
    for (int64_t i = 0; i < n_ip; i++) {
        int64_t v = (int64_t)(int8_t)take(in, 1) * 3;
        if (ip64)
            ((int64_t *)ipb)[i] = v;
        else
            ((int32_t *)ipb)[i] = (int32_t)v;
    }
    for (int64_t k = 0; k < nnz; k++) {
        int64_t v = (int64_t)(int8_t)take(in, 1);
        if (ix64)
            ((int64_t *)ixb)[k] = v * (INT64_C(1) << 33);
        else
            ((int32_t *)ixb)[k] = (int32_t)v;
    }
    csr_gather(&c, 0, (size_t)n, got);
out:
    free(ipb);
    free(ixb);
    free(db);
    free(ipv);
    free(ixv);
    free(got);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    bytes_in in = { data, size, 0 };
    check_dense(&in);
    check_csr(&in);
    return 0;
}
