/* qsfault.c: fault injection for the tests (LD_PRELOAD=libqsfault.so), in
 * the manner of SQLite's out-of-memory and I/O-error tests: one fault at a
 * numbered point of a run, the run's outcome checked, then the next point
 * (tests/faults/sweep.sh, tests/66-faults.bats, make check-faults).
 *
 *   QS_FAULT_ALLOC=N    the Nth allocation (malloc, calloc, realloc,
 *                       posix_memalign, aligned_alloc, memalign) made by qs
 *                       (the program and libqs linked into it) or by the
 *                       libraries it calls for itself (libzstd, libexpat,
 *                       libprotobuf-c) returns NULL (ENOMEM); the others
 *                       succeed.  The C library's and libgomp's own
 *                       allocations are not counted.
 *   QS_FAULT_THREAD=N   the Nth pthread_create made by qs fails (EAGAIN).
 *   QS_FAULT_READ=K     fread fails (EIO, the stream's error flag set) once
 *                       K bytes have been read through it, counted over
 *                       every fread and pread of the program (pread: the
 *                       documents of a regular file read by several
 *                       threads, a range each) and pread fails so too
 *                       (-1, EIO, or the bytes before the point).
 *   QS_FAULT_REPORT=F   at exit, append "allocs A threads T bytes B" (the
 *                       points this run passed) to file F.
 *   QS_FAULT_OBJECT=P   fault a shared object instead of a program: in any
 *                       program (the Python interpreter), the calls made by
 *                       the objects whose file name starts with P (the
 *                       binding's _core.*.so, libqs linked into it) and by
 *                       the libraries above; the program's own calls, and
 *                       every other library's, are neither faulted nor
 *                       counted (nor their freads).  Counting starts when
 *                       the program calls qs_fault_arm() (a Python driver,
 *                       through ctypes, once its imports are done: the
 *                       static constructors of what the object links, the
 *                       CUDA runtime's, are not qs's to handle).
 *
 * Only a program named qs-* is faulted (not the shell or env that starts
 * it), unless QS_FAULT_OBJECT names what to fault.  The points are counted in one process; every count is deterministic for
 * a given run with one thread.  Built as a shared object
 * ($(BUILD)/tests/libqsfault.so); not part of libqs or the tools. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void (*real_free)(void *);
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static size_t (*real_fread)(void *, size_t, size_t, FILE *);
static ssize_t (*real_pread)(int, void *, size_t, off_t);

static long fail_alloc = -1, fail_thread = -1;
static long long fail_read = -1;
static long n_alloc, n_thread;
static long long n_bytes;
static int ready, in_init;
static const char *report;
static const char *object;   /* QS_FAULT_OBJECT */
static size_t object_len;
static int armed;            /* with object: qs_fault_arm() was called */

/* With QS_FAULT_OBJECT: count (and fault) from now on. */
void qs_fault_arm(void);
void qs_fault_arm(void)
{
    armed = 1;
}

/* dlsym may allocate before the real calloc is known: a few blocks from
 * here (never freed: free() of them is ignored). */
static char boot[4096] __attribute__((aligned(16)));
static size_t boot_used;
static void *boot_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof boot - boot_used)
        return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;
}
static int is_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static long env_num(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : -1;
}

/* (a destructor, not atexit: atexit from inside the first malloc would run
 * while AddressSanitizer initialises) */
__attribute__((destructor)) static void report_at_exit(void)
{
    if (!report)
        return;
    FILE *f = fopen(report, "a");
    if (f) {
        fprintf(f, "allocs %ld threads %ld bytes %lld\n", n_alloc, n_thread, n_bytes);
        fclose(f);
    }
}

static void init(void)
{
    if (ready || in_init)
        return;
    in_init = 1;
    real_free = dlsym(RTLD_NEXT, "free");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
    real_fread = dlsym(RTLD_NEXT, "fread");
    real_pread = dlsym(RTLD_NEXT, "pread");
    ready = 1;
    in_init = 0;
}

/* The main program's address range (the first object dl_iterate_phdr
 * reports). */
static uintptr_t main_lo, main_hi;
static int main_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!main_lo || lo < main_lo)
            main_lo = lo;
        if (hi > main_hi)
            main_hi = hi;
    }
    return 1; /* the first one only */
}

/* Whether the call came from qs: the program itself (libqs is linked into
 * it) or a library it calls to read models and documents. */
static int from_qs(const void *ret)
{
    if (!main_hi)
        dl_iterate_phdr(main_range, NULL);
    if ((uintptr_t)ret >= main_lo && (uintptr_t)ret < main_hi)
        return !object;
    Dl_info di;
    if (!dladdr(ret, &di) || !di.dli_fname)
        return 0;
    const char *n = strrchr(di.dli_fname, '/');
    n = n ? n + 1 : di.dli_fname;
    return strncmp(n, "libzstd", 7) == 0 || strncmp(n, "libexpat", 8) == 0 ||
           strncmp(n, "libprotobuf-c", 13) == 0 || strncmp(n, "libqs", 5) == 0 ||
           (object && strncmp(n, object, object_len) == 0);
}

/* Counting starts when main does: the static constructors before it (the
 * CUDA runtime's, linked into the program) are not qs's to handle. */
static int in_main;
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;
static int main_hook(int argc, char **argv, char **envp)
{
    /* Only in the qs tools (qs-*), not in a shell or env on the way; read
     * here, not at the first malloc, which may come before the C library
     * (or AddressSanitizer) has set things up. */
    const char *prog = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    prog = prog ? prog + 1 : argc > 0 && argv[0] ? argv[0] : "";
    const int tool = strncmp(prog, "qs-", 3) == 0;
    object = getenv("QS_FAULT_OBJECT");
    if (object && !*object)
        object = NULL;
    object_len = object ? strlen(object) : 0;
    if (tool || object) {
        fail_alloc = env_num("QS_FAULT_ALLOC");
        fail_thread = env_num("QS_FAULT_THREAD");
        fail_read = env_num("QS_FAULT_READ");
        report = getenv("QS_FAULT_REPORT");
        if (report && !*report)
            report = NULL;
    }
    in_main = 1;
    return real_main(argc, argv, envp);
}
int __libc_start_main(main_fn m, int argc, char **argv, void (*ini)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end);
int __libc_start_main(main_fn m, int argc, char **argv, void (*ini)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end)
{
    int (*real)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *) =
        (int (*)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
                 void *))dlsym(RTLD_NEXT, "__libc_start_main");
    real_main = m;
    return real(main_hook, argc, argv, ini, fini, rtld_fini, stack_end);
}

static int alloc_fails(const void *ret)
{
    if (!ready || in_init || !in_main || (fail_alloc < 0 && !report) || (object && !armed))
        return 0;
    if (!from_qs(ret))
        return 0;
    return ++n_alloc == fail_alloc;
}

void *malloc(size_t n)
{
    if (!ready)
        init();
    if (!real_malloc)
        return boot_alloc(n);
    if (alloc_fails(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    if (!ready)
        init();
    if (!real_calloc) {
        void *p = b && a > SIZE_MAX / b ? NULL : boot_alloc(a * b);
        if (p)
            memset(p, 0, a * b);
        return p;
    }
    if (alloc_fails(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    if (!ready)
        init();
    if (is_boot(p)) {
        void *q = malloc(n);
        if (q)
            memcpy(q, p, n < sizeof boot ? n : sizeof boot);
        return q;
    }
    if (alloc_fails(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_realloc(p, n);
}

void free(void *p)
{
    if (!p || is_boot(p))
        return;
    if (!real_free && !in_init)
        init();
    if (real_free)
        real_free(p); /* (else a block of dlsym's, freed while it runs: kept) */
}

int posix_memalign(void **out, size_t al, size_t n)
{
    if (!ready)
        init();
    if (alloc_fails(__builtin_return_address(0)))
        return ENOMEM;
    return real_posix_memalign(out, al, n);
}

void *aligned_alloc(size_t al, size_t n)
{
    if (!ready)
        init();
    if (alloc_fails(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_aligned_alloc(al, n);
}

void *memalign(size_t al, size_t n);
void *memalign(size_t al, size_t n)
{
    if (!ready)
        init();
    if (alloc_fails(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return real_memalign(al, n);
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    if (!ready)
        init();
    if ((fail_thread >= 0 || report) && in_main && (!object || armed) &&
        from_qs(__builtin_return_address(0)) &&
        ++n_thread == fail_thread)
        return EAGAIN;
    return real_pthread_create(t, a, fn, arg);
}

size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
    if (!ready)
        init();
    if (object && (!in_main || !armed || !from_qs(__builtin_return_address(0))))
        return real_fread(buf, size, n, f);
    if (fail_read < 0 || size == 0 || !real_fread) {
        size_t got = real_fread(buf, size, n, f);
        __atomic_add_fetch(&n_bytes, (long long)(got * size), __ATOMIC_RELAXED);
        return got;
    }
    /* read up to the fault point, then fail */
    long long left = fail_read - n_bytes;
    if (left <= 0) {
        f->_flags |= 0x20; /* _IO_ERR_SEEN */
        errno = EIO;
        return 0;
    }
    size_t want = n;
    if ((long long)(n * size) > left)
        want = (size_t)left / size;
    size_t got = want ? real_fread(buf, size, want, f) : 0;
    __atomic_add_fetch(&n_bytes, (long long)(got * size), __ATOMIC_RELAXED);
    if (got < n && !feof(f) && !ferror(f)) {
        f->_flags |= 0x20;
        errno = EIO;
    }
    return got;
}

/* The threads that read ranges call it at once: the count is atomic, and
 * which range meets the point is theirs to race for. */
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    if (!ready)
        init();
    if (!real_pread) {
        errno = ENOSYS;
        return -1;
    }
    if ((object && (!in_main || !armed || !from_qs(__builtin_return_address(0)))) ||
        fail_read < 0 || n == 0) {
        ssize_t got = real_pread(fd, buf, n, off);
        if (got > 0 && (fail_read >= 0 || report) && in_main)
            __atomic_add_fetch(&n_bytes, (long long)got, __ATOMIC_RELAXED);
        return got;
    }
    long long before = __atomic_load_n(&n_bytes, __ATOMIC_RELAXED);
    long long left = fail_read - before;
    if (left <= 0) {
        errno = EIO;
        return -1;
    }
    size_t want = (long long)n > left ? (size_t)left : n;
    ssize_t got = real_pread(fd, buf, want, off);
    if (got > 0)
        __atomic_add_fetch(&n_bytes, (long long)got, __ATOMIC_RELAXED);
    return got;
}
ssize_t pread64(int fd, void *buf, size_t n, off_t off) __attribute__((alias("pread")));
