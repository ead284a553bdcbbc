/* qr — QR code encoder: byte mode, levels L and M, versions 1..10 (see qr.h).
 *
 * Steps, as the standard lays them out: data bits (mode 0100, count, bytes, terminator, pad bytes 0xEC 0x11),
 * split into blocks, Reed-Solomon error correction per block, interleaving, then the matrix: finder, timing and
 * alignment patterns, format and version words, data placed in the two-column zigzag from the bottom right,
 * one of eight masks over the data modules. No allocation: the matrix lives in struct qr. */
#include "qr.h"

#include <string.h>

/* Per version (index 1..10), per level (L, M): error-correction bytes per block, then two block groups:
 * (count, data bytes per block). Data: ISO/IEC 18004 table 9. */
static const struct {
    int ec, n1, d1, n2, d2;
} BLOCKS[QR_MAX_VERSION + 1][2] = {
    {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}},
    {{7, 1, 19, 0, 0}, {10, 1, 16, 0, 0}},
    {{10, 1, 34, 0, 0}, {16, 1, 28, 0, 0}},
    {{15, 1, 55, 0, 0}, {26, 1, 44, 0, 0}},
    {{20, 1, 80, 0, 0}, {18, 2, 32, 0, 0}},
    {{26, 1, 108, 0, 0}, {24, 2, 43, 0, 0}},
    {{18, 2, 68, 0, 0}, {16, 4, 27, 0, 0}},
    {{20, 2, 78, 0, 0}, {18, 4, 31, 0, 0}},
    {{24, 2, 97, 0, 0}, {22, 2, 38, 2, 39}},
    {{30, 2, 116, 0, 0}, {22, 3, 36, 2, 37}},
    {{18, 2, 68, 2, 69}, {26, 4, 43, 1, 44}},
};

/* Alignment pattern centres per version (beside 6, which every version >= 2 has). */
static const int ALIGN[QR_MAX_VERSION + 1] = {0, 0, 18, 22, 26, 30, 34, 22, 24, 26, 28};

/* ---- Reed-Solomon over GF(256) -------------------------------------------------------------------------- */

uint8_t qr_gf_mul(uint8_t a, uint8_t b)
{
    unsigned r = 0, x = a;
    for (; b; b >>= 1) { /* shift-and-add, reducing by x^8 + x^4 + x^3 + x^2 + 1 */
        if (b & 1) r ^= x;
        x <<= 1;
        if (x & 0x100) x ^= 0x11d;
    }
    return (uint8_t)r;
}

void qr_rs_ecc(const uint8_t *data, int n, int ec, uint8_t *out)
{
    uint8_t gen[32] = {0}; /* generator polynomial prod (x - 2^i), i < ec; gen[0] is the x^(ec-1) coefficient */
    uint8_t root = 1;
    gen[ec - 1] = 1;
    for (int i = 0; i < ec; i++) {
        for (int j = 0; j < ec; j++) gen[j] = (uint8_t)(qr_gf_mul(gen[j], root) ^ (j + 1 < ec ? gen[j + 1] : 0));
        root = qr_gf_mul(root, 2);
    }
    memset(out, 0, (size_t)ec);
    for (int i = 0; i < n; i++) { /* polynomial division: the remainder is the error-correction bytes */
        uint8_t f = data[i] ^ out[0];
        memmove(out, out + 1, (size_t)ec - 1);
        out[ec - 1] = 0;
        for (int j = 0; j < ec; j++) out[j] ^= qr_gf_mul(gen[j], f);
    }
}

/* ---- format and version words ---------------------------------------------------------------------------- */

/* The remainder of v * x^shift divided by poly (degree deg), appended: a BCH code word. */
static unsigned bch(unsigned v, unsigned poly, int deg)
{
    unsigned r = v << deg;
    for (int i = 31; i >= deg; i--)
        if (r >> i & 1) r ^= poly << (i - deg);
    return v << deg | r;
}

unsigned qr_format_bits(enum qr_ecl ecl, int mask)
{
    unsigned lv = ecl == QR_ECL_L ? 1 : 0; /* the standard's level indicators: L 01, M 00 */
    return bch(lv << 3 | (unsigned)mask, 0x537, 10) ^ 0x5412;
}

unsigned qr_version_bits(int version)
{
    return bch((unsigned)version, 0x1f25, 12);
}

int qr_capacity(int version, enum qr_ecl ecl)
{
    int d = BLOCKS[version][ecl].n1 * BLOCKS[version][ecl].d1 + BLOCKS[version][ecl].n2 * BLOCKS[version][ecl].d2;
    int header_bits = 4 + (version < 10 ? 8 : 16);
    return (d * 8 - header_bits) / 8;
}

/* ---- matrix ------------------------------------------------------------------------------------------- */

/* fn[r][c]: 1 for function modules (patterns, format, version), which data and masks skip. */
struct grid {
    struct qr *q;
    uint8_t fn[QR_MAX_SIZE][QR_MAX_SIZE];
};

static void set_fn(struct grid *g, int r, int c, int dark)
{
    g->q->m[r][c] = (uint8_t)(dark != 0);
    g->fn[r][c] = 1;
}

/* A finder pattern (7x7 with its light separator) centred at (r, c). */
static void finder(struct grid *g, int r, int c)
{
    for (int dr = -4; dr <= 4; dr++)
        for (int dc = -4; dc <= 4; dc++) {
            int rr = r + dr, cc = c + dc, d = dr < 0 ? -dr : dr, e = dc < 0 ? -dc : dc, m = d > e ? d : e;
            if (rr < 0 || cc < 0 || rr >= g->q->size || cc >= g->q->size) continue;
            set_fn(g, rr, cc, m != 2 && m != 4);
        }
}

static void alignment(struct grid *g, int r, int c)
{
    for (int dr = -2; dr <= 2; dr++)
        for (int dc = -2; dc <= 2; dc++) {
            int d = dr < 0 ? -dr : dr, e = dc < 0 ? -dc : dc, m = d > e ? d : e;
            set_fn(g, r + dr, c + dc, m != 1);
        }
}

/* Writes the format word for mask into both of its places. */
static void draw_format(struct grid *g, int mask)
{
    unsigned f = qr_format_bits(g->q->ecl, mask);
    int n = g->q->size;
    for (int i = 0; i < 15; i++) {
        int bit = f >> i & 1;
        /* beside the top-left finder: down column 8 (skipping the timing row), then left along row 8 */
        if (i < 6) set_fn(g, i, 8, bit);
        else if (i < 8) set_fn(g, i + 1, 8, bit);
        else if (i == 8) set_fn(g, 8, 7, bit);
        else set_fn(g, 8, 14 - i, bit);
        /* the copy: along row 8 under the top-right finder, then up column 8 beside the bottom-left one */
        if (i < 8) set_fn(g, 8, n - 1 - i, bit);
        else set_fn(g, n - 15 + i, 8, bit);
    }
    set_fn(g, n - 8, 8, 1); /* the dark module */
}

static void draw_patterns(struct grid *g)
{
    struct qr *q = g->q;
    int n = q->size, v = q->version;
    finder(g, 3, 3);
    finder(g, 3, n - 4);
    finder(g, n - 4, 3);
    for (int i = 8; i < n - 8; i++) {
        set_fn(g, 6, i, i % 2 == 0);
        set_fn(g, i, 6, i % 2 == 0);
    }
    if (v >= 2) {
        int pos[3] = {6, ALIGN[v], 2 * ALIGN[v] - 6}, k = v >= 7 ? 3 : 2; /* evenly spaced: 6, a, 2a - 6 */
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                if ((i == 0 && j == 0) || (i == 0 && j == k - 1) || (i == k - 1 && j == 0)) continue; /* finders */
                alignment(g, pos[i], pos[j]);
            }
    }
    draw_format(g, 0); /* reserves the format modules; rewritten with the chosen mask */
    if (v >= 7) {
        unsigned b = qr_version_bits(v);
        for (int i = 0; i < 18; i++) {
            int bit = b >> i & 1, a = n - 11 + i % 3, c = i / 3;
            set_fn(g, c, a, bit); /* left of the top-right finder... */
            set_fn(g, a, c, bit); /* ...and above the bottom-left one */
        }
    }
}

/* Places the codeword bits in the zigzag: two columns at a time from the right, up then down, skipping the
 * vertical timing column and function modules. Modules left over (remainder bits) stay light. */
static void place(struct grid *g, const uint8_t *cw, int n_cw)
{
    int n = g->q->size, bit = 0, total = n_cw * 8;
    for (int right = n - 1; right >= 1; right -= 2) {
        if (right == 6) right = 5;
        for (int k = 0; k < n; k++) {
            int upward = ((right + 1) & 2) == 0;
            int r = upward ? n - 1 - k : k;
            for (int j = 0; j < 2; j++) {
                int c = right - j;
                if (g->fn[r][c]) continue;
                int b = bit < total ? cw[bit >> 3] >> (7 - (bit & 7)) & 1 : 0;
                g->q->m[r][c] = (uint8_t)b;
                bit++;
            }
        }
    }
}

static int mask_bit(int mask, int r, int c)
{
    switch (mask) {
    case 0: return (r + c) % 2 == 0;
    case 1: return r % 2 == 0;
    case 2: return c % 3 == 0;
    case 3: return (r + c) % 3 == 0;
    case 4: return (r / 2 + c / 3) % 2 == 0;
    case 5: return (r * c) % 2 + (r * c) % 3 == 0;
    case 6: return ((r * c) % 2 + (r * c) % 3) % 2 == 0;
    default: return ((r + c) % 2 + (r * c) % 3) % 2 == 0;
    }
}

/* XORs mask over the data modules (applying it twice undoes it). */
static void apply_mask(struct grid *g, int mask)
{
    for (int r = 0; r < g->q->size; r++)
        for (int c = 0; c < g->q->size; c++)
            if (!g->fn[r][c] && mask_bit(mask, r, c)) g->q->m[r][c] ^= 1;
}

/* The standard's penalty score: runs of 5+ (N1), 2x2 blocks (N2), finder-like 1:1:3:1:1 runs with four light
 * modules on one side (N3), and the dark share's distance from 50 % (N4). */
static long penalty(const struct qr *q)
{
    int n = q->size, dark = 0;
    long p = 0;
    for (int pass = 0; pass < 2; pass++) { /* rows, then columns */
        for (int a = 0; a < n; a++) {
            int run = 0, prev = -1;
            unsigned hist = 0; /* the last 11 modules as bits, for N3 */
            for (int b = 0; b < n; b++) {
                int v = pass ? q->m[b][a] : q->m[a][b];
                if (v == prev) {
                    run++;
                    if (run == 5) p += 3;
                    else if (run > 5) p++;
                } else {
                    run = 1;
                    prev = v;
                }
                hist = (hist << 1 | (unsigned)v) & 0x7ff;
                if (b >= 10 && (hist == 0x5d || hist == 0x5d0)) p += 40; /* 0000 1011101, 1011101 0000 */
            }
        }
    }
    for (int r = 0; r + 1 < n; r++)
        for (int c = 0; c + 1 < n; c++) {
            int v = q->m[r][c];
            if (v == q->m[r][c + 1] && v == q->m[r + 1][c] && v == q->m[r + 1][c + 1]) p += 3;
        }
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) dark += q->m[r][c];
    long pct = (long)dark * 100 / ((long)n * n);
    long dev = pct >= 50 ? pct - 50 : 50 - pct;
    return p + dev / 5 * 10;
}

int qr_encode(const uint8_t *data, size_t n, enum qr_ecl ecl, int mask, int min_version, struct qr *q)
{
    static struct grid g; /* large; one encoder at a time (the client is single-threaded) */
    uint8_t buf[512] = {0}, cw[512], ecb[32];
    int v = min_version < 1 ? 1 : min_version;
    while (v <= QR_MAX_VERSION && (size_t)qr_capacity(v, ecl) < n) v++;
    if (v > QR_MAX_VERSION) return -1;

    /* data bits */
    int nd = BLOCKS[v][ecl].n1 * BLOCKS[v][ecl].d1 + BLOCKS[v][ecl].n2 * BLOCKS[v][ecl].d2, bits = 0;
    int count_bits = v < 10 ? 8 : 16;
#define PUT(val, len) for (int b_ = (len) - 1; b_ >= 0; b_--, bits++) buf[bits >> 3] |= (uint8_t)(((val) >> b_ & 1) << (7 - (bits & 7)))
    PUT(4u, 4);
    PUT((unsigned)n, count_bits);
    for (size_t i = 0; i < n; i++) PUT(data[i], 8);
    int term = nd * 8 - bits < 4 ? nd * 8 - bits : 4;
    bits += term;
    bits = (bits + 7) / 8 * 8;
    for (int i = bits / 8, k = 0; i < nd; i++, k++) buf[i] = k % 2 ? 0x11 : 0xec;
#undef PUT

    /* blocks, error correction, interleaving */
    int ec = BLOCKS[v][ecl].ec, nb = BLOCKS[v][ecl].n1 + BLOCKS[v][ecl].n2, maxd = 0, at = 0, o = 0;
    int off[8], len[8];
    uint8_t eccs[8][32];
    for (int b = 0; b < nb; b++) {
        len[b] = b < BLOCKS[v][ecl].n1 ? BLOCKS[v][ecl].d1 : BLOCKS[v][ecl].d2;
        off[b] = at;
        at += len[b];
        if (len[b] > maxd) maxd = len[b];
        qr_rs_ecc(buf + off[b], len[b], ec, ecb);
        memcpy(eccs[b], ecb, (size_t)ec);
    }
    for (int i = 0; i < maxd; i++)
        for (int b = 0; b < nb; b++)
            if (i < len[b]) cw[o++] = buf[off[b] + i];
    for (int i = 0; i < ec; i++)
        for (int b = 0; b < nb; b++) cw[o++] = eccs[b][i];

    /* matrix */
    memset(&g, 0, sizeof g);
    memset(q, 0, sizeof *q);
    g.q = q;
    q->version = v;
    q->size = 17 + 4 * v;
    q->ecl = ecl;
    draw_patterns(&g);
    place(&g, cw, o);
    if (mask < 0 || mask > 7) {
        long best = -1;
        for (int k = 0; k < 8; k++) {
            apply_mask(&g, k);
            draw_format(&g, k);
            long p = penalty(q);
            if (best < 0 || p < best) best = p, mask = k;
            apply_mask(&g, k);
        }
    }
    apply_mask(&g, mask);
    draw_format(&g, mask);
    q->mask = mask;
    return 0;
}
