/* dataurl — `data:[<mediatype>][;base64],<data>` URIs, the only way an OpenAI client (or a WebSocket
 * client that does not patch images itself) sends an image file. Strict base64 (standard alphabet, padding
 * optional, ASCII whitespace skipped); anything else is an error naming the byte. Bytes in, bytes out: the
 * image decoder (shared/img.h) sniffs the format from the bytes, never from the media type.
 *
 * Called on the prep thread. Must not allocate more than the caller's limit. */
#include <stdlib.h>
#include <string.h>

#include "server/srv.h"

/* Value of a base64 character, -1 for others. */
static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

int dataurl_decode(const char *uri, uint8_t **out, size_t *len, size_t max, char *err)
{
    const char *comma, *data;
    size_t n, cap, o = 0, pad = 0;
    uint32_t acc = 0;
    int bits = 0;
    uint8_t *buf;
    *out = NULL;
    *len = 0;
    if (strncmp(uri, "data:", 5)) return g4_errf(err, "not a data: URI");
    comma = strchr(uri + 5, ',');
    if (!comma) return g4_errf(err, "the data: URI has no ',' before its data");
    if ((size_t)(comma - uri) < 12 || strncmp(comma - 7, ";base64", 7))
        return g4_errf(err, "the data: URI must be base64 (data:image/png;base64,...)");
    data = comma + 1;
    n = strlen(data);
    cap = n / 4 * 3 + 3;
    if (cap > max + 3) cap = max + 3;
    buf = g4_malloc(cap ? cap : 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)data[i];
        int v;
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        v = b64_value(ch);
        if (v < 0 || pad) {
            free(buf);
            return g4_errf(err, "invalid base64 at byte %zu of the data", i);
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == max) {
                free(buf);
                return g4_errf(err, "the image file is over the limit of %zu bytes", max);
            }
            buf[o++] = (uint8_t)(acc >> bits);
        }
    }
    if (pad > 2 || bits >= 6 || (acc & ((1u << bits) - 1))) {
        free(buf);
        return g4_errf(err, "invalid base64: the data ends in the middle of a byte");
    }
    if (o == 0) {
        free(buf);
        return g4_errf(err, "the data: URI holds no data");
    }
    *out = buf;
    *len = o;
    return 0;
}
