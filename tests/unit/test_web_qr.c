/* test_web_qr — the kiosk's QR encoder (webui/qr.c) against the standard's own checks: GF(256) and
 * Reed-Solomon (every block's codeword polynomial vanishes at the generator's roots, evaluated here by
 * Horner's rule, not by the encoder's division), the format and version words against the standard's
 * published values, the fixed patterns, and the format word read back from the matrix.
 *
 *   test_web_qr --matrix L|M MASK TEXT    prints the matrix (rows of 0/1) for tests/scripts/test_web_qr.sh,
 *                                          which decodes it with an independent decoder (npm jsqr) and
 *                                          compares it with an independent encoder (npm qrcode). */
#include "qr.h"
#include "test.h"

static uint8_t gf_pow2(int e)
{
    uint8_t r = 1;
    for (int i = 0; i < e; i++) r = qr_gf_mul(r, 2);
    return r;
}

static void test_gf(void)
{
    EXPECT(qr_gf_mul(2, 0x80) == 0x1d); /* x * x^7 = x^8 = x^4 + x^3 + x^2 + 1 */
    EXPECT(gf_pow2(255) == 1);          /* 2 generates the multiplicative group */
    int seen[256] = {0}, distinct = 0;
    for (int e = 0; e < 255; e++) distinct += !seen[gf_pow2(e)]++;
    EXPECT(distinct == 255);
    for (int a = 1; a < 256; a += 7)
        for (int b = 1; b < 256; b += 11) EXPECT(qr_gf_mul((uint8_t)a, (uint8_t)b) == qr_gf_mul((uint8_t)b, (uint8_t)a));
}

/* Evaluates the polynomial with coefficients c[0] (highest degree) .. c[n-1] at x. */
static uint8_t poly_eval(const uint8_t *c, int n, uint8_t x)
{
    uint8_t r = 0;
    for (int i = 0; i < n; i++) r = (uint8_t)(qr_gf_mul(r, x) ^ c[i]);
    return r;
}

static void test_reed_solomon(void)
{
    uint8_t block[160];
    for (int ec = 7; ec <= 30; ec++) {
        int n = 16 + ec * 3;
        for (int i = 0; i < n; i++) block[i] = (uint8_t)(i * 37 + ec * 11 + 5);
        qr_rs_ecc(block, n, ec, block + n);
        for (int r = 0; r < ec; r++) EXPECTF(poly_eval(block, n + ec, gf_pow2(r)) == 0, "ec %d root %d", ec, r);
        block[3] ^= 1; /* one wrong byte: some syndrome is non-zero */
        int nz = 0;
        for (int r = 0; r < ec; r++) nz += poly_eval(block, n + ec, gf_pow2(r)) != 0;
        EXPECT(nz > 0);
    }
    /* the worked example of the standard's annex: "01234567" at 1-M, data 10 40 0C 56 61 80 EC 11 EC 11 EC 11
     * EC 11 EC 11 gives error correction A5 24 D4 C1 ED 36 C7 87 2C 55 */
    static const uint8_t data[16] = {0x10, 0x20, 0x0c, 0x56, 0x61, 0x80, 0xec, 0x11, 0xec, 0x11, 0xec, 0x11, 0xec, 0x11, 0xec, 0x11};
    static const uint8_t want[10] = {0xa5, 0x24, 0xd4, 0xc1, 0xed, 0x36, 0xc7, 0x87, 0x2c, 0x55};
    uint8_t got[10];
    qr_rs_ecc(data, 16, 10, got);
    EXPECT(memcmp(got, want, 10) == 0);
}

static void test_format_version_words(void)
{
    /* ISO/IEC 18004 table C.1 (after the 101010000010010 mask) and table D.1 */
    EXPECT(qr_format_bits(QR_ECL_M, 0) == 0x5412);  /* 101010000010010 */
    EXPECT(qr_format_bits(QR_ECL_M, 1) == 0x5125);  /* 101000100100101 */
    EXPECT(qr_format_bits(QR_ECL_L, 0) == 0x77c4);  /* 111011111000100 */
    EXPECT(qr_format_bits(QR_ECL_L, 7) == 0x6976);  /* 110100101110110 */
    EXPECT(qr_version_bits(7) == 0x07c94);          /* 000111110010010100 */
    EXPECT(qr_version_bits(10) == 0x0a4d3);         /* 001010010011010011 */
}

static void test_capacity(void)
{
    /* byte-mode capacities of the standard's table 7 */
    EXPECT(qr_capacity(1, QR_ECL_L) == 17 && qr_capacity(1, QR_ECL_M) == 14);
    EXPECT(qr_capacity(2, QR_ECL_M) == 26 && qr_capacity(4, QR_ECL_M) == 62);
    EXPECT(qr_capacity(7, QR_ECL_M) == 122 && qr_capacity(10, QR_ECL_M) == 213 && qr_capacity(10, QR_ECL_L) == 271);
    struct qr q;
    uint8_t big[300];
    memset(big, 'a', sizeof big);
    EXPECT(qr_encode(big, 213, QR_ECL_M, -1, 1, &q) == 0 && q.version == 10);
    EXPECT(qr_encode(big, 214, QR_ECL_M, -1, 1, &q) == -1);
    EXPECT(qr_encode(big, 14, QR_ECL_M, -1, 1, &q) == 0 && q.version == 1);
    EXPECT(qr_encode(big, 15, QR_ECL_M, -1, 1, &q) == 0 && q.version == 2);
}

/* The finder patterns, timing lines, dark module, and the format word read back from both copies. */
static void test_structure(void)
{
    static struct qr q;
    const char *url = "http://192.168.1.20:8080/";
    for (int mask = 0; mask < 8; mask++) {
        EXPECT(qr_encode((const uint8_t *)url, strlen(url), QR_ECL_M, mask, 1, &q) == 0);
        int n = q.size;
        EXPECT(q.version == 2 && n == 25 && q.mask == mask);
        for (int k = 0; k < 3; k++) {
            int r0 = k == 2 ? n - 7 : 0, c0 = k == 1 ? n - 7 : 0;
            for (int r = 0; r < 7; r++)
                for (int c = 0; c < 7; c++) {
                    int ring = r < c ? (r < 6 - c ? r : 6 - c) : (c < 6 - r ? c : 6 - r);
                    EXPECT(q.m[r0 + r][c0 + c] == (ring != 1));
                }
        }
        for (int i = 8; i < n - 8; i++) EXPECT(q.m[6][i] == (i % 2 == 0) && q.m[i][6] == (i % 2 == 0));
        EXPECT(q.m[n - 8][8] == 1);
        unsigned a = 0, b = 0;
        for (int i = 0; i < 15; i++) { /* read in the placement order the standard's figure 25 gives */
            int ra = i < 6 ? i : i < 8 ? i + 1 : 8, ca = i < 8 ? 8 : i == 8 ? 7 : 14 - i;
            int rb = i < 8 ? 8 : n - 15 + i, cb = i < 8 ? n - 1 - i : 8;
            a |= (unsigned)q.m[ra][ca] << i;
            b |= (unsigned)q.m[rb][cb] << i;
        }
        EXPECT(a == qr_format_bits(QR_ECL_M, mask) && b == a);
    }
    EXPECT(qr_encode((const uint8_t *)url, strlen(url), QR_ECL_M, -1, 7, &q) == 0 && q.version == 7 && q.size == 45);
    unsigned v = 0;
    for (int i = 0; i < 18; i++) v |= (unsigned)q.m[i / 3][q.size - 11 + i % 3] << i;
    EXPECT(v == qr_version_bits(7));
}

static int print_matrix(int argc, char **argv)
{
    static struct qr q;
    if (argc != 5) return 2;
    enum qr_ecl ecl = argv[2][0] == 'L' ? QR_ECL_L : QR_ECL_M;
    if (qr_encode((const uint8_t *)argv[4], strlen(argv[4]), ecl, atoi(argv[3]), 1, &q)) return 1;
    printf("%d %d\n", q.version, q.mask);
    for (int r = 0; r < q.size; r++) {
        for (int c = 0; c < q.size; c++) putchar('0' + q.m[r][c]);
        putchar('\n');
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--matrix")) return print_matrix(argc, argv);
    RUN_TEST(test_gf);
    RUN_TEST(test_reed_solomon);
    RUN_TEST(test_format_version_words);
    RUN_TEST(test_capacity);
    RUN_TEST(test_structure);
    return test_report();
}
