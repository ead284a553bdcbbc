/* qr — a QR code encoder (ISO/IEC 18004) for the kiosk's "join from your phone" code: byte mode, error
 * correction level L or M, versions 1 to 10 (up to 271 bytes at L, 213 at M), mask chosen by the standard's
 * penalty rules or forced. Written for g4; checked by tests/unit/test_web_qr.c (structure, Reed-Solomon
 * syndromes, format and version words) and tests/scripts/test_web_qr.sh (an independent decoder and an
 * independent encoder from npm).
 *
 * What it must not do: allocate, or accept input it cannot encode (it returns an error instead). */
#ifndef G4_WEB_QR_H
#define G4_WEB_QR_H

#include <stddef.h>
#include <stdint.h>

#define QR_MAX_VERSION 10
#define QR_MAX_SIZE (17 + 4 * QR_MAX_VERSION) /* modules per side at version 10: 57 */

enum qr_ecl { QR_ECL_L = 0, QR_ECL_M = 1 };

struct qr {
    int version;                              /* 1..QR_MAX_VERSION */
    int size;                                 /* 17 + 4 * version modules per side */
    int mask;                                 /* 0..7 */
    enum qr_ecl ecl;
    uint8_t m[QR_MAX_SIZE][QR_MAX_SIZE];      /* [row][col], 1 = dark */
};

/* Encodes n bytes of data in byte mode, in the smallest version >= min_version that holds them at level ecl,
 * with mask (0..7) or the lowest-penalty mask (mask < 0). 0, or -1 when the data does not fit version 10. */
int qr_encode(const uint8_t *data, size_t n, enum qr_ecl ecl, int mask, int min_version, struct qr *q);

/* Data bytes version v holds at level ecl in byte mode (after mode and count bits). */
int qr_capacity(int version, enum qr_ecl ecl);

/* The 15-bit format word (level and mask, BCH-coded and masked with 0x5412) and the 18-bit version word. */
unsigned qr_format_bits(enum qr_ecl ecl, int mask);
unsigned qr_version_bits(int version);

/* Reed-Solomon: the ec error-correction bytes of data (n bytes) over GF(256) with polynomial 0x11d. */
void qr_rs_ecc(const uint8_t *data, int n, int ec, uint8_t *out);

/* GF(256) multiplication (polynomial 0x11d), for tests. */
uint8_t qr_gf_mul(uint8_t a, uint8_t b);

#endif
