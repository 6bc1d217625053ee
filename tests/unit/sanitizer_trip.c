/* sanitizer_trip.c: a deliberately broken program, to test the test harness.
 *
 *   sanitizer_trip ub      a signed integer overflow (UndefinedBehaviorSanitizer)
 *   sanitizer_trip heap    a read one byte past a heap block (AddressSanitizer)
 *   sanitizer_trip leak    exit(3) while a local still points at a heap block,
 *                          what a tool dying without freeing does (LeakSanitizer:
 *                          reported every time when stacks and registers are not
 *                          scanned, as scripts/check.sh sets it; with them
 *                          scanned, only when the pointer happens to be gone)
 *
 * Built with SANITIZE=address,undefined, each must be stopped by its
 * sanitizer with the exit code that scripts/check.sh gives it (UBSan 87, ASan
 * 86, LeakSanitizer too), distinct from every exit code of the tools, so that a sanitizer report
 * can never pass for an expected failure.  Built without sanitizers the
 * behaviour is undefined; tests/05-harness.bats runs it only in sanitizer
 * builds. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "ub") == 0) {
        volatile int big = INT_MAX;
        int sum = big + (argc - 1); /* INT_MAX + 1 */
        printf("%d\n", sum);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "heap") == 0) {
        char *volatile p = malloc(8);
        if (!p)
            return 4;
        memset(p, 1, 8);
        int past = p[argc + 6]; /* p[8] */
        free(p);
        printf("%d\n", past);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "leak") == 0) {
        char *volatile p = malloc(65537);
        if (!p)
            return 4;
        memset(p, 1, 65537);
        exit(3);
    }
    fprintf(stderr, "usage: sanitizer_trip ub|heap|leak\n");
    return 2;
}
