/* cpu.c: what this machine offers the back ends: the SIMD levels CPUID
 * and XGETBV report (less those the environment disables), and cache sizes
 * from sysfs.  The one place that asks the CPU. */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static unsigned detect_simd(void)
{
    unsigned a, b, c, d, r = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (!(c & bit_OSXSAVE) || !(c & bit_AVX))
        return 0;
    const int fma = (c & bit_FMA) != 0;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* SSE and AVX state */
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    /* The kernels are built for AVX2 with FMA, BMI1 and BMI2 (and the
     * AVX-512 ones also LZCNT): a level counts only with all of them, as a
     * hypervisor may hide some of an AVX2 CPU's features. */
    if ((b & bit_AVX2) && fma && (b & bit_BMI) && (b & bit_BMI2))
        r |= QS_SIMD_AVX2;
    unsigned ea = 0, eb = 0, ec = 0, ed = 0;
    const int lzcnt = __get_cpuid(0x80000001u, &ea, &eb, &ec, &ed) && (ec & bit_LZCNT);
    /* opmask, upper ZMM0-15 and ZMM16-31 state */
    if ((r & QS_SIMD_AVX2) && lzcnt && (b & bit_AVX512F) && (b & bit_AVX512DQ) &&
        (b & bit_AVX512CD) && (b & bit_AVX512VL) && (b & bit_AVX512BW) && (xcr0 & 0xE6) == 0xE6)
        r |= QS_SIMD_AVX512;
    return r;
}

static int detect_crc32(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}

/* Vendor (leaf 0) and family (leaf 1: the base family, plus the extended
 * family where the base one is 0Fh). */
static unsigned detect_class(char *src, size_t cap)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return QS_CPU_GENERIC;
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return QS_CPU_GENERIC;
    unsigned family = (a >> 8) & 0xF;
    if (family == 0xF)
        family += (a >> 20) & 0xFF;
    snprintf(src, cap, "CPUID %s family %02Xh", vendor, family);
    if (strcmp(vendor, "GenuineIntel") == 0)
        return family == 6 ? QS_CPU_INTEL : QS_CPU_GENERIC;
    if (strcmp(vendor, "AuthenticAMD") != 0)
        return QS_CPU_GENERIC;
    return family >= 0x1A ? QS_CPU_ZEN5 : family == 0x19 ? QS_CPU_ZEN4 : QS_CPU_GENERIC;
}

#else /* not x86-64 with GCC or Clang: no SIMD kernels */
static unsigned detect_simd(void) { return 0; }
static int detect_crc32(void) { return 0; }
static unsigned detect_class(char *src, size_t cap)
{
    snprintf(src, cap, "not x86-64");
    return QS_CPU_GENERIC;
}
#endif

/* CPUID may trap to a hypervisor and getenv is not free: ask once.  Two
 * threads racing here compute the same value. */
static int cached_detected = -1, cached_enabled = -1;

unsigned qs_cpu_simd_detected(void)
{
    int v = __atomic_load_n(&cached_detected, __ATOMIC_RELAXED);
    if (v < 0) {
        v = (int)detect_simd();
        __atomic_store_n(&cached_detected, v, __ATOMIC_RELAXED);
    }
    return (unsigned)v;
}

/* The levels named in QS_DISABLE_CPU_FEATURES ("avx512,avx2", "all");
 * unknown names are ignored (qs-score --version -v shows the result). */
static unsigned disabled_levels(void)
{
    const char *e = getenv("QS_DISABLE_CPU_FEATURES");
    unsigned r = 0;
    while (e && *e) {
        size_t n = strcspn(e, ", ");
        if ((n == 6 && strncmp(e, "avx512", 6) == 0))
            r |= QS_SIMD_AVX512;
        else if (n == 4 && strncmp(e, "avx2", 4) == 0)
            r |= QS_SIMD_AVX2 | QS_SIMD_AVX512; /* AVX-512 kernels assume AVX2 */
        else if (n == 5 && strncmp(e, "sse42", 5) == 0)
            r |= QS_CPU_CRC32;
        else if (n == 3 && strncmp(e, "all", 3) == 0)
            r |= QS_SIMD_AVX2 | QS_SIMD_AVX512 | QS_CPU_CRC32;
        e += n;
        e += strspn(e, ", ");
    }
    return r;
}

unsigned qs_cpu_simd(void)
{
    int v = __atomic_load_n(&cached_enabled, __ATOMIC_RELAXED);
    if (v < 0) {
        v = (int)(qs_cpu_simd_detected() & ~disabled_levels());
        __atomic_store_n(&cached_enabled, v, __ATOMIC_RELAXED);
    }
    return (unsigned)v;
}

static int cached_crc32 = -1;

static const char *const class_names[] = { "generic", "amd-zen4", "amd-zen5", "intel" };

const char *qs_cpu_class_name(unsigned cls)
{
    return cls < sizeof class_names / sizeof class_names[0] ? class_names[cls] : "?";
}

int qs_cpu_class_find(const char *name)
{
    for (unsigned i = 0; i < sizeof class_names / sizeof class_names[0]; i++)
        if (strcmp(name, class_names[i]) == 0 ||
            (strncmp(class_names[i], "amd-", 4) == 0 && strcmp(name, class_names[i] + 4) == 0))
            return (int)i;
    return -1;
}

/* Asked once; two threads racing here compute the same values. */
static int cached_class = -1;
static char class_source[64];

unsigned qs_cpu_class(void)
{
    int v = __atomic_load_n(&cached_class, __ATOMIC_ACQUIRE);
    if (v >= 0)
        return (unsigned)v;
    const char *e = getenv("QS_CPU_CLASS");
    v = e && *e ? qs_cpu_class_find(e) : -1;
    if (v >= 0) {
        snprintf(class_source, sizeof class_source, "QS_CPU_CLASS");
    } else {
        char src[64] = "";
        v = (int)detect_class(src, sizeof src);
        memcpy(class_source, src, sizeof src);
    }
    __atomic_store_n(&cached_class, v, __ATOMIC_RELEASE);
    return (unsigned)v;
}

const char *qs_cpu_class_source(void)
{
    qs_cpu_class();
    return class_source;
}

int qs_cpu_crc32(void)
{
    int v = __atomic_load_n(&cached_crc32, __ATOMIC_RELAXED);
    if (v < 0) {
        v = detect_crc32() && !(disabled_levels() & QS_CPU_CRC32);
        __atomic_store_n(&cached_crc32, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* CPUID leaf 4 (deterministic cache parameters, Intel; AMD reports the
 * same at leaf 0x8000001D): the data or unified cache of `level`. */
static uint64_t cpuid_cache_size(int level)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    unsigned a, b, c, d;
    unsigned leaf = 4;
    if (__get_cpuid_max(0, NULL) < 4) {
        if (__get_cpuid_max(0x80000000u, NULL) < 0x8000001Du)
            return 0;
        leaf = 0x8000001Du;
    }
    for (unsigned i = 0; i < 16; i++) {
        __cpuid_count(leaf, i, a, b, c, d);
        unsigned type = a & 0x1f, lev = (a >> 5) & 7;
        if (type == 0)
            break;
        if (type == 2 || (int)lev != level) /* 2: instruction cache */
            continue;
        uint64_t ways = ((b >> 22) & 0x3ff) + 1, parts = ((b >> 12) & 0x3ff) + 1,
                 line = (b & 0xfff) + 1, sets = (uint64_t)c + 1;
        (void)d;
        return ways * parts * line * sets;
    }
#else
    (void)level;
#endif
    return 0;
}

uint64_t qs_cache_size(int level)
{
    uint64_t v = qs_cache_size_sysfs(level);
    return v ? v : cpuid_cache_size(level);
}

void qs_cpu_model(char *out, size_t cap)
{
    if (!cap)
        return;
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *p = strchr(line, ':');
        if (!p)
            continue;
        p += 1 + strspn(p + 1, " \t");
        p[strcspn(p, "\n")] = '\0';
        snprintf(out, cap, "%s", p);
        break;
    }
    if (f)
        fclose(f);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (!out[0] && __get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
        unsigned r[12];
        for (unsigned i = 0; i < 3; i++)
            __cpuid(0x80000002u + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
        char brand[49];
        memcpy(brand, r, 48);
        brand[48] = '\0';
        const char *p = brand + strspn(brand, " ");
        snprintf(out, cap, "%s", p);
    }
#endif
    if (!out[0])
        snprintf(out, cap, "unknown");
}

uint64_t qs_cache_size_sysfs(int level)
{
    char path[96], b[32];
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int lev = fgets(b, sizeof b, f) ? atoi(b) : 0;
        fclose(f);
        if (lev != level)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) {
            int instr = fgets(b, sizeof b, f) && strncmp(b, "Instruction", 11) == 0;
            fclose(f);
            if (instr)
                continue;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r")))
            continue;
        char *e;
        uint64_t v = fgets(b, sizeof b, f) ? strtoull(b, &e, 10) : 0;
        fclose(f);
        if (v && (*e == 'K' || *e == 'k'))
            v <<= 10;
        else if (v && (*e == 'M' || *e == 'm'))
            v <<= 20;
        return v;
    }
    return 0;
}

unsigned qs_cpu_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}
