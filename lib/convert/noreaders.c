/* noreaders.c: what a build without the model readers (make READERS=0)
 * has in their place: qs_source_version finds no version (it is read by the
 * readers); qs_convert refuses the foreign formats (convert.c). */
#include "convert/convert.h"

int qs_source_version(const char *buf, size_t len, char *out, size_t cap)
{
    (void)buf;
    (void)len;
    if (out && cap)
        out[0] = '\0';
    return -1;
}
