/* CRC-32C: the check value, and the SSE4.2 path equal to the table path on
 * every length and alignment, whole or in pieces.  The table path is
 * forced by running this program with QS_DISABLE_CPU_FEATURES=sse42; the
 * program prints a digest of every CRC it computed, so the bats test can
 * compare the digests of the two runs. */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    static unsigned char b[4200];
    uint32_t seed = 12345;
    for (size_t i = 0; i < sizeof b; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (unsigned char)(seed >> 16);
    }
    int fails = 0, checks = 0;
    checks++;
    if (qs_crc32c(0, "123456789", 9) != 0xE3069283u) {
        printf("check value: %08x, want e3069283\n", qs_crc32c(0, "123456789", 9));
        fails++;
    }
    uint64_t digest = 0;
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof b; len += len < 80 ? 1 : 97) {
            uint32_t whole = qs_crc32c(0, b + off, len);
            /* In two pieces at every cut point of short buffers, a few of long ones. */
            for (size_t cut = 0; cut <= len; cut += len < 40 ? 1 : len / 5 + 1) {
                checks++;
                uint32_t two = qs_crc32c(qs_crc32c(0, b + off, cut), b + off + cut, len - cut);
                if (two != whole) {
                    printf("off %zu len %zu cut %zu: %08x != %08x\n", off, len, cut, two, whole);
                    fails++;
                }
            }
            digest = digest * 1000003u + whole;
        }
    printf("crc32c path: %s\n", qs_cpu_crc32() ? "sse4.2" : "table");
    printf("digest %016llx\n", (unsigned long long)digest);
    printf("%d checks, %d failures\n", checks, fails);
    return fails != 0;
}
