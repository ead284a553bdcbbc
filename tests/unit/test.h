/* test.h — the unit-test harness: one program per tests/unit/test_*.c, each test a function.
 *
 * A test passes when none of its EXPECTs failed. Each program prints `PASS name` / `FAIL name` lines and
 * a closing `N passed, N failed`, exits non-zero on any failure; tests/run.sh sums the closing lines.
 * A program that cannot run here says so with test_skip / test_skip_no_gpu (tests/README.md, "Skips"). */
#ifndef G4_TEST_H
#define G4_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int test_passed, test_failed, test_cur_failures;

#if defined(__GNUC__)
#define TEST_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TEST_PRINTF(a, b)
#endif

#define EXPECT(cond) \
    do { if (!(cond)) { test_cur_failures++; \
        fprintf(stderr, "  %s:%d: expected %s\n", __FILE__, __LINE__, #cond); } } while (0)

/* EXPECT with a printf-style explanation printed on failure. */
#define EXPECTF(cond, ...) \
    do { if (!(cond)) { test_cur_failures++; \
        fprintf(stderr, "  %s:%d: expected %s: ", __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static inline int test_str_has(const char *hay, const char *needle)
{
    return hay && needle && strstr(hay, needle) != NULL;
}
#define EXPECT_STR_HAS(hay, needle) \
    EXPECTF(test_str_has((hay), (needle)), "\"%s\" should contain \"%s\"", (hay), (needle))

#define RUN_TEST(fn) \
    do { test_cur_failures = 0; fn(); \
        if (test_cur_failures) { test_failed++; printf("FAIL %s\n", #fn); } \
        else { test_passed++; printf("PASS %s\n", #fn); } fflush(stdout); } while (0)

static inline int test_report(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}

/* Prints `TAG reason`; when the variable `require` is "1", counts one failure and says so (`FAIL what`). */
static inline int test_skip_v(const char *tag, const char *require, const char *what, const char *fmt, va_list ap)
{
    const char *req = getenv(require);
    printf("%s ", tag);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    if (req && !strcmp(req, "1")) {
        test_failed++;
        printf("FAIL %s\n", what);
    }
    return test_report();
}

/* A program that cannot run here (a tool or a file is missing) returns test_skip(...) from main: it prints
 * `SKIP reason` and, under G4_REQUIRE_ALL=1 (CI, where `make deps` installed everything), counts one failure. */
static inline int test_skip(const char *fmt, ...) TEST_PRINTF(1, 2);
static inline int test_skip(const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = test_skip_v("SKIP", "G4_REQUIRE_ALL", "skipped under G4_REQUIRE_ALL=1", fmt, ap);
    va_end(ap);
    return rc;
}

/* The one skip G4_REQUIRE_ALL leaves alone: no usable GPU (the CI machine has none). Prints `SKIP-NO-GPU
 * reason`; under G4_REQUIRE_GPU=1 (tests/gpu/run.sh, on the GPU machine) it is a failure instead. */
static inline int test_skip_no_gpu(const char *fmt, ...) TEST_PRINTF(1, 2);
static inline int test_skip_no_gpu(const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = test_skip_v("SKIP-NO-GPU", "G4_REQUIRE_GPU", "no GPU under G4_REQUIRE_GPU=1", fmt, ap);
    va_end(ap);
    return rc;
}

/* A fresh temporary directory for a test's files, removed by nobody (tests are short-lived; /tmp). */
static inline const char *test_tmpdir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/g4test.XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); exit(2); }
    return dir;
}

#endif
