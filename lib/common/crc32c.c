/* crc32c.c: CRC-32C (Castagnoli), the checksum of .qsm headers and sections.
 * Written here (a table-driven byte loop) because it is a dozen lines and
 * only guards files against corruption; it is not on the scoring path. */
#include "common/common.h"

static uint32_t table[256];
static int table_ready;

static void build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        table[i] = c;
    }
    table_ready = 1;
}

uint32_t qs_crc32c(uint32_t crc, const void *buf, size_t len)
{
    if (!table_ready)
        build_table();
    const unsigned char *p = buf;
    crc = ~crc;
    while (len--)
        crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
