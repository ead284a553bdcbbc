/* util — the two error classes, files, numbers: the few things every room of the backend needs.
 *
 * Bugs and device faults go through G4_CHECK, which prints the expression, file:line and a reason and
 * aborts. Anything a client or a file can cause is a negative return and a message written into an error
 * buffer of G4_ERR_MAX bytes (`char *err`), which the caller passes on or shows. Nothing here allocates
 * behind the caller's back except util_read_file, whose result the caller frees. */
#ifndef G4_UTIL_H
#define G4_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define G4_ERR_MAX 512

/* Aborts with the failed expression and a formatted reason. For broken invariants only. */
#define G4_CHECK(cond, ...) \
    do { if (!(cond)) g4_die(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)

#if defined(__GNUC__)
#define G4_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define G4_NORETURN __attribute__((noreturn))
#else
#define G4_PRINTF(a, b)
#define G4_NORETURN
#endif

G4_NORETURN void g4_die(const char *file, int line, const char *expr, const char *fmt, ...) G4_PRINTF(4, 5);

/* Writes a formatted message into err (G4_ERR_MAX bytes; err may be NULL) and returns -1. */
int g4_errf(char *err, const char *fmt, ...) G4_PRINTF(2, 3);

/* malloc/calloc/realloc that abort on exhaustion: for sizes the program chose, never for sizes a client
 * chose (those are checked against a named limit first). */
void *g4_malloc(size_t n);
void *g4_calloc(size_t count, size_t size);
void *g4_realloc(void *p, size_t n);
char *g4_strdup(const char *s);

/* Reads a whole file (at most max_bytes) into a NUL-terminated buffer; *len gets the size without the NUL.
 * Returns NULL and writes err on failure (missing, unreadable, too large). */
char *util_read_file(const char *path, size_t max_bytes, size_t *len, char *err);

/* Writes len bytes to path (created or truncated). 0 or -1 with err. */
int util_write_file(const char *path, const void *data, size_t len, char *err);

/* Joins dir and name with one '/', into out (cap bytes). -1 if it does not fit. */
int util_path_join(char *out, size_t cap, const char *dir, const char *name);

/* bfloat16 <-> float32. The conversion to bf16 rounds to nearest even, as torch does; NaN stays NaN. */
static inline float bf16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)h << 16;
    return v.f;
}

static inline uint16_t f32_to_bf16(float f)
{
    union { uint32_t u; float f; } v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40);
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

/* IEEE half -> float32 (exact). */
float f16_to_f32(uint16_t h);

/* The median of n values (sorts v in place). For benchmarks. */
double util_median(double *v, int n);

/* Monotonic seconds, for benchmarks and server timings (never in tests' assertions). */
double util_now(void);

/* A growable byte string, always NUL-terminated. Owner frees with sbuf_free. */
struct sbuf {
    char *p;    /* bytes, NUL-terminated (NULL until the first append) */
    size_t n;   /* length in bytes, without the NUL */
    size_t cap; /* allocated bytes */
};
void sbuf_append(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) G4_PRINTF(2, 3);
void sbuf_free(struct sbuf *b);
#endif
