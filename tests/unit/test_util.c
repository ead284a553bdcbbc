/* Unit tests for backend/util: bf16/f16 conversions and file helpers. */
#include "test.h"
#include "util/util.h"

static void test_bf16_round_trip(void)
{
    EXPECT(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
    EXPECT(bf16_to_f32(f32_to_bf16(61.9677f)) == 62.0f);     /* the 12B embedding scale */
    EXPECT(bf16_to_f32(f32_to_bf16(73.3212f)) == 73.5f);     /* the 31B one */
    /* ties go to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 */
    EXPECT(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)) == 1.0f);
    EXPECT(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
    EXPECT(isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

static void test_f16(void)
{
    EXPECT(f16_to_f32(0x3c00) == 1.0f);
    EXPECT(f16_to_f32(0xc000) == -2.0f);
    EXPECT(f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    EXPECT(isinf(f16_to_f32(0x7c00)));
}

static void test_read_file_limits(void)
{
    char err[G4_ERR_MAX], path[256];
    size_t n = 0;
    const char *dir = test_tmpdir();
    char *buf;
    snprintf(path, sizeof path, "%s/f", dir);
    EXPECT(util_write_file(path, "hello", 5, err) == 0);
    buf = util_read_file(path, 5, &n, err);
    EXPECT(buf && n == 5 && !strcmp(buf, "hello"));
    free(buf);
    EXPECT(util_read_file(path, 4, &n, err) == NULL);
    EXPECT_STR_HAS(err, "over the limit");
    snprintf(path, sizeof path, "%s/missing", dir);
    EXPECT(util_read_file(path, 100, &n, err) == NULL);
    EXPECT_STR_HAS(err, "missing");
}

int main(void)
{
    RUN_TEST(test_bf16_round_trip);
    RUN_TEST(test_f16);
    RUN_TEST(test_read_file_limits);
    return test_report();
}
