/* frame — encoder and validating decoder of the image-patch frame (layout in frame.h).
 *
 * The decoder is what faces the network: it reads fixed-size little-endian fields byte by byte (no casts of
 * unaligned pointers), checks each against its limit before using it, and checks that the message length is
 * exactly what the header announces. Nothing here allocates or prints. */
#include <stdio.h>
#include <string.h>

#include "frame.h"

static int frame_fail(char *err, int code, const char *msg)
{
    if (err) snprintf(err, FRAME_ERR_MAX, "image frame: %s", msg);
    return code;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t frame_size(uint32_t count)
{
    return FRAME_HEADER_BYTES + (size_t)count * FRAME_ROW_BYTES;
}

int frame_check(const struct frame_header *h, char *err)
{
    char msg[160];
    if (h->grid_w < 1 || h->grid_w > FRAME_MAX_PATCHES || h->grid_h < 1 || h->grid_h > FRAME_MAX_PATCHES) {
        snprintf(msg, sizeof msg, "grid %u x %u: each side must be 1..%d", (unsigned)h->grid_w,
                 (unsigned)h->grid_h, FRAME_MAX_PATCHES);
        return frame_fail(err, FRAME_E_FIELD, msg);
    }
    const uint32_t total = (uint32_t)h->grid_w * h->grid_h;
    if (total > FRAME_MAX_PATCHES) {
        snprintf(msg, sizeof msg, "grid %u x %u has %u patches, more than the limit of %d", (unsigned)h->grid_w,
                 (unsigned)h->grid_h, (unsigned)total, FRAME_MAX_PATCHES);
        return frame_fail(err, FRAME_E_FIELD, msg);
    }
    if (h->first >= total) {
        snprintf(msg, sizeof msg, "first row %u is past the image's %u patches", (unsigned)h->first,
                 (unsigned)total);
        return frame_fail(err, FRAME_E_FIELD, msg);
    }
    if (h->count < 1 || h->count > total - h->first) {
        snprintf(msg, sizeof msg, "count %u: must be 1..%u for first row %u of %u", (unsigned)h->count,
                 (unsigned)(total - h->first), (unsigned)h->first, (unsigned)total);
        return frame_fail(err, FRAME_E_FIELD, msg);
    }
    return FRAME_OK;
}

long frame_encode(const struct frame_header *h, const uint8_t *rows, uint8_t *out, size_t cap, char *err)
{
    int rc = frame_check(h, err);
    if (rc != FRAME_OK) return rc;
    const size_t n = frame_size(h->count);
    if (!out || cap < n) return frame_fail(err, FRAME_E_SPACE, "output buffer too small");
    memcpy(out, FRAME_MAGIC, 4);
    put16(out + 4, FRAME_VERSION);
    put16(out + 6, 0);
    put32(out + 8, h->image_id);
    put16(out + 12, h->grid_w);
    put16(out + 14, h->grid_h);
    put32(out + 16, h->first);
    put32(out + 20, h->count);
    memcpy(out + FRAME_HEADER_BYTES, rows, (size_t)h->count * FRAME_ROW_BYTES);
    return (long)n;
}

int frame_decode(const uint8_t *buf, size_t len, struct frame_header *h, const uint8_t **rows, char *err)
{
    char msg[160];
    memset(h, 0, sizeof *h);
    if (rows) *rows = NULL;
    if (!buf || len < FRAME_HEADER_BYTES) {
        snprintf(msg, sizeof msg, "%zu bytes is shorter than the %d-byte header", buf ? len : 0,
                 FRAME_HEADER_BYTES);
        return frame_fail(err, FRAME_E_SHORT, msg);
    }
    if (memcmp(buf, FRAME_MAGIC, 4)) return frame_fail(err, FRAME_E_MAGIC, "bad magic (expected G4IP)");
    const uint16_t version = get16(buf + 4);
    if (version != FRAME_VERSION) {
        snprintf(msg, sizeof msg, "version %u is not supported (this server speaks %d)", (unsigned)version,
                 FRAME_VERSION);
        return frame_fail(err, FRAME_E_VERSION, msg);
    }
    if (get16(buf + 6) != 0) return frame_fail(err, FRAME_E_FIELD, "reserved flags must be 0");
    struct frame_header t;
    t.image_id = get32(buf + 8);
    t.grid_w = get16(buf + 12);
    t.grid_h = get16(buf + 14);
    t.first = get32(buf + 16);
    t.count = get32(buf + 20);
    int rc = frame_check(&t, err);
    if (rc != FRAME_OK) return rc;
    const size_t want = frame_size(t.count);
    if (len < want) {
        snprintf(msg, sizeof msg, "%zu bytes, but %u rows need %zu", len, (unsigned)t.count, want);
        return frame_fail(err, FRAME_E_SHORT, msg);
    }
    if (len > want) {
        snprintf(msg, sizeof msg, "%zu bytes, but %u rows need exactly %zu", len, (unsigned)t.count, want);
        return frame_fail(err, FRAME_E_LENGTH, msg);
    }
    *h = t;
    if (rows) *rows = buf + FRAME_HEADER_BYTES;
    return FRAME_OK;
}
